/* check_expr.c — inference of expressions and statements (see check_internal.h). */
#include "check_internal.h"

/* ---- expressions ---- */

/* ---- `any` (docs/spec/language.md §4.1) ---- */

bool recover_error(Checker *c, Pos pos, Type *actual, Type *expected) {
    Type *a = ty_find(actual), *x = ty_find(expected);
    if (a->kind != TY_ANY || x->kind == TY_ANY || x->kind == TY_POISON ||
        (x->kind == TY_VAR && !x->rigid && !x->generic))
        return false;
    error(c, pos, "cannot recover `%s` from an erased `any`: match its structure instead",
          show(c, x));
    return true;
}

bool coerce(Checker *c, Expr **slot, Type *actual, Type *expected) {
    Type *a = ty_find(actual), *x = ty_find(expected);
    Expr *lit = *slot;
    if (lit->kind == E_LIST && x->kind == TY_LIST && ty_find(x->args[0])->kind == TY_ANY &&
        a->kind == TY_LIST && ty_find(a->args[0])->kind != TY_ANY &&
        ty_find(a->args[0])->kind != TY_VAR) {
        /* a list literal where a `List<any>` is expected: its elements are elements of a
         * `List<any>`, each erased */
        for (int i = 0; i < lit->u.list.n; i++)
            coerce(c, &lit->u.list.elems[i], lit->u.list.elems[i]->type, c->tc->t_any);
        lit->type = ty_con1(c->tc, TY_LIST, c->tc->t_any);
        return true;
    }
    if (x->kind != TY_ANY || a->kind == TY_ANY || a->kind == TY_POISON ||
        (a->kind == TY_VAR && !a->rigid && !a->generic))
        return ty_unify(c->tc, actual, expected);
    Expr *v = *slot;
    /* an anonymous record, or a Result without a rendering, is refused: now, or at each call
     * of a generic function when a type parameter decides it */
    add_constraint(c, C_ERASABLE, OP_ADD, actual, NULL, NULL, v->pos, NULL);
    Expr *w = expr_new(c->a, E_ERASE, v->pos);
    w->u.erase.e = v;
    w->type = c->tc->t_any;
    *slot = w;
    return true;
}

Type *check_expected(Checker *c, Expr **slot, Type *expected) {
    Expr *e = *slot;
    Type *x = expected ? ty_find(expected) : NULL;
    if (e->kind == E_MAPLIT && !e->type && x && x->kind == TY_MAP && x->nargs == 2 &&
        ty_find(x->args[1])->kind == TY_ANY) {
        /* likewise the values of a map literal where a `Map<string, any>` is expected */
        for (int i = 0; i < e->u.maplit.n; i++) {
            Expr *k = e->u.maplit.keys[i];
            Type *kt = check_expr(c, k);
            if (!ty_unify(c->tc, kt, c->tc->t_string))
                error(c, k->pos, "a map key must be a `string`, found `%s`", show(c, kt));
            coerce(c, &e->u.maplit.vals[i], check_expr(c, e->u.maplit.vals[i]), c->tc->t_any);
        }
        Type *args[2] = {c->tc->t_string, c->tc->t_any};
        e->type = ty_con(c->tc, TY_MAP, 2, args);
        return e->type;
    }
    if (e->kind != E_LIST || e->type || !x || x->kind != TY_LIST ||
        ty_find(x->args[0])->kind != TY_ANY)
        return check_expr(c, e);
    /* docs/spec/language.md §4.1: the elements of a `List<any>` are erased, whatever their
     * types */
    for (int i = 0; i < e->u.list.n; i++)
        coerce(c, &e->u.list.elems[i], check_expr(c, e->u.list.elems[i]), c->tc->t_any);
    e->type = ty_con1(c->tc, TY_LIST, c->tc->t_any);
    return e->type;
}

bool expect_type(Checker *c, Expr *e, Type *actual, Type *expected, const char *what) {
    if (ty_unify(c->tc, actual, expected)) return true;
    if (recover_error(c, e->pos, actual, expected)) return false;
    error(c, e->pos, "%s has type `%s`, expected `%s`", what, show(c, actual), show(c, expected));
    return false;
}

/* Could `a` and `b` be unified? (unbound variables match anything; nothing is bound) */
static bool compatible(Type *a, Type *b, int depth) {
    a = ty_find(a);
    b = ty_find(b);
    if (a == b || depth > 100) return true;
    if ((a->kind == TY_VAR && !a->generic && !a->rigid) ||
        (b->kind == TY_VAR && !b->generic && !b->rigid))
        return true;
    if (a->kind == TY_POISON || b->kind == TY_POISON) return true;
    if (a->kind != b->kind || a->nargs != b->nargs || a->decl != b->decl) return false;
    if (a->kind == TY_VAR) return false;
    for (int i = 0; i < a->nargs; i++)
        if (!compatible(a->args[i], b->args[i], depth + 1)) return false;
    if (a->ret && b->ret) return compatible(a->ret, b->ret, depth + 1);
    return true;
}

static Type *ctor_type(Checker *c, Variant *v, Type **out_named) {
    TypeDecl *td = v->decl;
    Type *named = fresh_named(c, td);
    if (out_named) *out_named = named;
    if (v->nfields == 0) return named;
    Type **ps = arena_alloc(c->a, sizeof(Type *) * (size_t)(v->nfields + 1));
    for (int i = 0; i < v->nfields; i++)
        ps[i] = inst_decl(c, td->pvars, td->nparams, named->args, v->types[i]);
    return ty_fn(c->tc, v->nfields, ps, named);
}

static Type *check_ident(Checker *c, Expr *e) {
    Sym *s = e->u.ident.sym;
    TypeCtx *tc = c->tc;
    if (!s) return tc->t_poison;
    switch (s->kind) {
    case SYM_LOCAL: return s->type ? s->type : tc->t_poison;
    case SYM_FN: {
        FnDecl *f = s->fn;
        ensure_checked(c, f);
        if (c->fn_state[f->id] == CK_IN_PROGRESS || f->nqvars == 0)
            return f->type ? f->type : tc->t_poison;
        InstMap m = {.from = f->qvars, .n = f->nqvars};
        m.to = arena_alloc(c->a, sizeof(Type *) * (size_t)f->nqvars);
        for (int i = 0; i < f->nqvars; i++) {
            m.to[i] = ty_var(tc);
            m.to[i]->hint = f->qvars[i]->hint;
        }
        e->u.ident.inst = m.to;
        e->u.ident.ninst = m.n;
        for (int i = 0; i < f->cons.len; i++) {
            Constraint *k = f->cons.items[i];
            Constraint *copy = add_constraint_named(c, k->kind, k->op, inst_type(c, k->a, &m, 0),
                                                    k->b ? inst_type(c, k->b, &m, 0) : NULL,
                                                    k->res ? inst_type(c, k->res, &m, 0) : NULL,
                                                    e->pos, f->name, k->name);
            copy->origin = k->origin ? k->origin : k;
            copy->origin_fn = k->origin ? k->origin_fn : f->name;
        }
        return inst_type(c, f->type, &m, 0);
    }
    case SYM_CTOR: return ctor_type(c, s->ctor, NULL);
    case SYM_BUILTIN:
        if (s->builtin == B_PRINT || s->builtin == B_TOSTRING) {
            Type *a = ty_var(tc);
            add_constraint(c, C_SHOW, OP_ADD, a, NULL, NULL, e->pos, NULL);
            return ty_fn(tc, 1, &a, s->builtin == B_PRINT ? tc->t_unit : tc->t_string);
        }
        if (s->builtin == B_LENGTH || s->builtin == B_IS_EMPTY) {
            /* docs/spec/language.md §16.3: overloaded built-ins are not values */
            error(c, e->pos, "`%s` cannot be used as a value; wrap it in a lambda", s->name);
            return tc->t_poison;
        }
        if ((builtin_info(s->builtin)->flags & BF_VALUE) && builtin_sig(s->builtin))
            return builtin_type(c, s->builtin);
        error(c, e->pos,
              "built-in `%s` can only be called here, not used as a value (wrap it in a lambda: "
              "`fn(x) => %s(x)`)",
              s->name, s->name);
        return tc->t_poison;
    }
    return tc->t_poison;
}

static Type *check_ctor_call(Checker *c, Expr *e, Variant *v) {
    TypeCtx *tc = c->tc;
    if (v->nfields == 0) {
        error(c, e->pos, "constructor `%s` has no payload; write `%s` without arguments", v->name,
              v->name);
        for (int i = 0; i < e->u.call.nargs; i++) check_expr(c, e->u.call.args[i]);
        return tc->t_poison;
    }
    if (e->u.call.names) {
        if (!v->named) {
            error(c, e->pos,
                  "constructor `%s` has a positional payload; named arguments need field names",
                  v->name);
            for (int i = 0; i < e->u.call.nargs; i++) check_expr(c, e->u.call.args[i]);
            return tc->t_poison;
        }
        if (!reorder_named(c, e, v->fields, v->nfields, v->name)) return tc->t_poison;
    }
    e->u.call.callee->type = tc->t_poison;
    Type *named;
    Type *ft = ctor_type(c, v, &named);
    e->u.call.callee->type = ft;
    int n = e->u.call.nargs;
    Type **at = arena_alloc(c->a, sizeof(Type *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) at[i] = check_expr(c, e->u.call.args[i]);
    return apply_fn_type(c, e, ft, at, arena_printf(c->a, "`%s`", v->name));
}

static Type *check_call(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Expr *callee = e->u.call.callee;
    if (callee->kind == E_IDENT && callee->u.ident.sym) {
        Sym *s = callee->u.ident.sym;
        if (s->kind == SYM_BUILTIN) return check_builtin_call(c, e, s->builtin);
        if (s->kind == SYM_CTOR) return check_ctor_call(c, e, s->ctor);
        if (s->kind == SYM_FN && e->u.call.names) {
            const char **pn = arena_alloc(c->a, sizeof(char *) * (size_t)(s->fn->nparams + 1));
            for (int i = 0; i < s->fn->nparams; i++) pn[i] = s->fn->params[i].name;
            if (!reorder_named(c, e, pn, s->fn->nparams, s->fn->name)) return tc->t_poison;
        }
    }
    if (e->u.call.names) {
        error(c, e->pos, "named arguments are only supported for functions declared with `fn`");
        for (int i = 0; i < e->u.call.nargs; i++) check_expr(c, e->u.call.args[i]);
        check_expr(c, callee);
        return tc->t_poison;
    }
    Type *ft = ty_find(check_expr(c, callee));
    int n = e->u.call.nargs;
    Type **at = arena_alloc(c->a, sizeof(Type *) * (size_t)(n ? n : 1));
    bool known = ft->kind == TY_FN && ft->nargs == n;
    for (int i = 0; i < n; i++)
        at[i] = check_expected(c, &e->u.call.args[i], known ? ft->args[i] : NULL);
    const char *fname = callee->kind == E_IDENT   ? callee->u.ident.name
                        : callee->kind == E_FIELD ? callee->u.field.name
                                                  : NULL;
    const char *who = fname ? arena_printf(c->a, "`%s`", fname) : "the called function";
    if (ft->kind == TY_POISON) return tc->t_poison;
    if (ft->kind == TY_ANY) {
        error(c, callee->pos, "cannot call an erased `any`: match its structure instead");
        return tc->t_poison;
    }
    if (ft->kind == TY_FN) return apply_fn_type(c, e, ft, at, who);
    if (ft->kind == TY_VAR && !ft->rigid) {
        Type *ret = ty_var(tc);
        Type *want = ty_fn(tc, n, at, ret);
        if (!ty_unify(tc, ft, want)) {
            /* Only the occurs check can fail here (`x(x)`): the type would contain itself. */
            error(c, callee->pos,
                  "%s has type `%s`, which cannot be called as `%s`: the type would contain itself",
                  who, show(c, ft), show(c, want));
            return tc->t_poison;
        }
        return ret;
    }
    error(c, callee->pos, "%s is not a function (it has type `%s`)", fname ? who : "this value",
          show(c, ft));
    return tc->t_poison;
}

static Type *check_field(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Type *t = ty_find(check_expr(c, e->u.field.e));
    const char *name = e->u.field.name;
    if (t->kind == TY_POISON) return tc->t_poison;
    if (t->kind == TY_ANY) {
        error(c, e->u.field.npos,
              "cannot read field `%s` of an erased `any`: match its structure instead", name);
        return tc->t_poison;
    }
    if (t->kind == TY_VAR && !t->rigid) {
        /* docs/spec/language.md §16.1: resolved against the concrete record type once it is
         * known (per specialisation when it is a parameter), never by searching the declared
         * records for one with this field */
        Type *res = ty_var(tc);
        add_constraint_named(c, C_FIELD, OP_ADD, t, NULL, res, e->u.field.npos, NULL, name);
        return res;
    }
    int slot;
    Type *ft = inst_field(c, t, name, &slot);
    if (!ft) {
        if (is_record_type(t))
            error(c, e->u.field.npos, "record type `%s` has no field `%s`", show(c, t), name);
        else if (positional_record(t))
            error(c, e->u.field.npos,
                  "positional record `%s` has no field `%s` (its fields are `0` to `%d`)",
                  show(c, t), name, positional_record(t)->nfields - 1);
        else
            error(c, e->u.field.npos, "`%s` has no fields (`.%s` needs a record)", show(c, t),
                  name);
        return tc->t_poison;
    }
    e->u.field.slot = slot;
    return ft;
}

/* `x.f(a)`: a call of record field `f`, or `f(x, a)` (docs/spec/language.md §5.3). */
static Type *check_method(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Expr *recv = e->u.method.recv;
    const char *name = e->u.method.name;
    Type *rt = ty_find(check_expr(c, recv));
    Sym *fs = e->u.method.fn->u.ident.sym;
    int slot;
    bool field = false;
    if (is_record_type(rt) && inst_field(c, rt, name, &slot)) {
        field = true;
    } else if (!fs && rt->kind == TY_VAR && !rt->rigid) {
        field = true; /* no such function: a field of a record known later (§16.1) */
    }
    int n = e->u.method.nargs;
    Expr *call = expr_new(c->a, E_CALL, e->pos);
    if (field) {
        Expr *f = expr_new(c->a, E_FIELD, e->u.method.npos);
        f->u.field.e = recv;
        f->u.field.name = name;
        f->u.field.npos = e->u.method.npos;
        call->u.call.callee = f;
        call->u.call.args = e->u.method.args;
        call->u.call.nargs = n;
    } else {
        if (!fs) {
            if (rt->kind == TY_POISON) {
                for (int i = 0; i < n; i++) check_expr(c, e->u.method.args[i]);
                return tc->t_poison;
            }
            error(c, e->u.method.npos,
                  "`%s` has no field `%s` and there is no function `%s` to call as a method",
                  show(c, rt), name, name);
            for (int i = 0; i < n; i++) check_expr(c, e->u.method.args[i]);
            return tc->t_poison;
        }
        Expr **args = arena_alloc(c->a, sizeof(Expr *) * (size_t)(n + 2));
        args[0] = recv;
        for (int i = 0; i < n; i++) args[i + 1] = e->u.method.args[i];
        call->u.call.callee = e->u.method.fn;
        call->u.call.args = args;
        call->u.call.nargs = n + 1;
    }
    e->u.method.call = call;
    return check_expr(c, call);
}

static Type *check_record(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    int n = e->u.record.n;
    FieldInit *fs = e->u.record.fields;
    if (!e->u.record.decl && !e->u.record.variant) {
        if (e->u.record.tname) {
            for (int i = 0; i < n; i++) check_expr(c, fs[i].value);
            return tc->t_poison;
        }
        /* anonymous record */
        const char **names = arena_alloc(c->a, sizeof(char *) * (size_t)(n + 1));
        Type **types = arena_alloc(c->a, sizeof(Type *) * (size_t)(n + 1));
        int *slots = arena_alloc(c->a, sizeof(int) * (size_t)(n + 1));
        for (int i = 0; i < n; i++) {
            names[i] = fs[i].name;
            types[i] = check_expr(c, fs[i].value);
        }
        Type *t = make_anon_record(c, n, names, types, slots);
        for (int i = 0; i < n; i++) fs[i].slot = slots[i];
        return t;
    }
    const char *what;
    const char **fnames;
    Type **ftypes;
    int nf;
    TypeDecl *td;
    if (e->u.record.decl) {
        td = e->u.record.decl;
        what = td->name;
        fnames = td->fields;
        ftypes = td->types;
        nf = td->nfields;
    } else {
        Variant *v = e->u.record.variant;
        td = v->decl;
        what = v->name;
        if (!v->named) {
            error(c, e->u.record.tpos, "constructor `%s` has %s; build it with `%s(...)`", v->name,
                  v->nfields ? "a positional payload" : "no payload", v->name);
            for (int i = 0; i < n; i++) check_expr(c, fs[i].value);
            return tc->t_poison;
        }
        fnames = v->fields;
        ftypes = v->types;
        nf = v->nfields;
    }
    Type *named = fresh_named(c, td);
    if (e->u.record.targs) {
        /* docs/spec/language.md §3.3: stated type arguments constrain the fields like an
         * annotation; their number must match the declaration */
        if (e->u.record.ntargs != td->nparams) {
            error(c, e->u.record.tpos, "`%s` takes %d type argument%s, got %d", td->name,
                  td->nparams, td->nparams == 1 ? "" : "s", e->u.record.ntargs);
        } else {
            for (int i = 0; i < td->nparams; i++) {
                Type *at = convert_type(c, e->u.record.targs[i]);
                if (!ty_unify(tc, named->args[i], at))
                    error(c, e->u.record.targs[i]->pos,
                          "type argument %d of `%s` is `%s`, which does not fit `%s`", i + 1,
                          td->name, show(c, at), show(c, named->args[i]));
            }
        }
    }
    bool *seen = arena_alloc(c->a, sizeof(bool) * (size_t)(nf + 1));
    for (int i = 0; i < n; i++) {
        Type *vt = check_expr(c, fs[i].value);
        int k = -1;
        for (int f = 0; f < nf; f++)
            if (strcmp(fnames[f], fs[i].name) == 0) k = f;
        if (k < 0) {
            error(c, fs[i].pos, "`%s` has no field `%s`", what, fs[i].name);
            continue;
        }
        seen[k] = true;
        fs[i].slot = k;
        Type *ft = inst_decl(c, td->pvars, td->nparams, named->args, ftypes[k]);
        if (!coerce(c, &fs[i].value, vt, ft) && !recover_error(c, fs[i].value->pos, vt, ft))
            error(c, fs[i].value->pos,
                  "field `%s` of `%s` has type `%s`, but the value has type `%s`", fs[i].name, what,
                  show(c, ft), show(c, vt));
    }
    for (int f = 0; f < nf; f++)
        if (!seen[f]) error(c, e->pos, "missing field `%s` in `%s { ... }`", fnames[f], what);
    return named;
}

static Type *check_update(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Type *t = ty_find(check_expr(c, e->u.update.e));
    int n = e->u.update.n;
    FieldInit *fs = e->u.update.fields;
    if (t->kind == TY_VAR && !t->rigid) {
        /* docs/spec/language.md §16.1: like a field access, each field is resolved against
         * the concrete record type once it is known (per specialisation when it is a
         * parameter), never by searching the declared records for one with these fields */
        for (int i = 0; i < n; i++) {
            Type *vt = check_expr(c, fs[i].value);
            add_constraint_named(c, C_FIELD, OP_UPDATE_FIELD, t, NULL, vt, fs[i].pos, NULL,
                                 fs[i].name);
        }
        return t;
    }
    if (t->kind == TY_POISON) {
        for (int i = 0; i < n; i++) check_expr(c, fs[i].value);
        return tc->t_poison;
    }
    if (!is_record_type(t)) {
        error(c, e->pos, "`%s` is not a record; `value { field: new }` updates records",
              show(c, t));
        for (int i = 0; i < n; i++) check_expr(c, fs[i].value);
        return tc->t_poison;
    }
    for (int i = 0; i < n; i++) {
        Type *vt = check_expr(c, fs[i].value);
        int slot;
        Type *ft = inst_field(c, t, fs[i].name, &slot);
        if (!ft) {
            error(c, fs[i].pos, "record type `%s` has no field `%s`", show(c, t), fs[i].name);
            continue;
        }
        fs[i].slot = slot;
        if (!coerce(c, &fs[i].value, vt, ft) && !recover_error(c, fs[i].value->pos, vt, ft))
            error(c, fs[i].value->pos, "field `%s` has type `%s`, but the new value has type `%s`",
                  fs[i].name, show(c, ft), show(c, vt));
    }
    return t;
}

static Type *check_perform(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    EffectDecl *ed = e->u.perform.decl;
    int n = e->u.perform.nargs;
    Type **at = arena_alloc(c->a, sizeof(Type *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) at[i] = check_expr(c, e->u.perform.args[i]);
    if (!ed) return tc->t_poison;
    int opi = e->u.perform.opi;
    Type **inst = fresh_inst(c, ed->nparams);
    if (ed->nparams > 0) {
        /* A generic effect performed directly inside a handle body takes that handle's
         * instantiation when it fits (generic effects are keyed by instantiation). */
        for (int h = c->handles.len - 1; h >= 0; h--) {
            Expr *he = c->handles.items[h];
            if (he->u.handle.decl != ed || !he->u.handle.inst) continue;
            bool handles_op = false;
            for (int k = 0; k < he->u.handle.narms; k++)
                if (he->u.handle.arms[k].opi == opi) handles_op = true;
            if (!handles_op) continue;
            bool fits = true;
            for (int k = 0; k < ed->nparams; k++)
                if (!compatible(inst[k], he->u.handle.inst[k], 0)) fits = false;
            Type *ft = op_type(c, ed, opi, he->u.handle.inst);
            for (int k = 0; k < n && k < ft->nargs && fits; k++)
                if (!compatible(ft->args[k], at[k], 0)) fits = false;
            if (fits) {
                for (int k = 0; k < ed->nparams; k++) ty_unify(tc, inst[k], he->u.handle.inst[k]);
                break;
            }
        }
    }
    if (ed->nparams > 0 && c->cur_fn && c->cur_fn->has_row) {
        /* ... or, in a function whose effect row names an instantiation, that one */
        for (int r = 0; r < c->cur_fn->nrow; r++) {
            EffectRef *ref = &c->cur_fn->row[r];
            if (ref->decl != ed || !ref->types) continue;
            bool fits = true;
            for (int k = 0; k < ed->nparams; k++)
                if (!compatible(inst[k], ref->types[k], 0)) fits = false;
            /* a row may name several instantiations (`![Stash<int>, Stash<string>]`):
             * take the one whose operation accepts these arguments */
            Type *ft = op_type(c, ed, opi, ref->types);
            for (int k = 0; k < n && k < ft->nargs && fits; k++)
                if (!compatible(ft->args[k], at[k], 0)) fits = false;
            if (fits) {
                for (int k = 0; k < ed->nparams; k++) ty_unify(tc, inst[k], ref->types[k]);
                break;
            }
        }
    }
    e->u.perform.inst = inst;
    Type *ft = ty_find(op_type(c, ed, opi, inst));
    if (ft->nargs != n) {
        error(c, e->pos, "`%s.%s` expects %d argument%s, got %d", ed->name, e->u.perform.op,
              ft->nargs, ft->nargs == 1 ? "" : "s", n);
        return ft->ret;
    }
    for (int i = 0; i < n; i++)
        if (!coerce(c, &e->u.perform.args[i], at[i], ft->args[i]) &&
            !recover_error(c, e->u.perform.args[i]->pos, at[i], ft->args[i]))
            error(c, e->u.perform.args[i]->pos,
                  "argument %d of `%s.%s` has type `%s`, expected `%s`", i + 1, ed->name,
                  e->u.perform.op, show(c, at[i]), show(c, ft->args[i]));
    return ft->ret;
}

static Type *check_handle(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    EffectDecl *ed = e->u.handle.decl;
    if (ed) e->u.handle.inst = fresh_inst(c, ed->nparams);
    /* The arms are checked before the body: their binders fix a generic effect's
     * instantiation (`handle Stash put v => print(v + 1 ?: 0)` is Stash<int>) before the
     * body's performs choose among the enclosing handles by instantiation. A `resume` in
     * an arm has the body's type, a variable until the body is checked. */
    Type *bt = ty_var(tc);
    e->u.handle.body->type = bt;
    Type **arm_types =
        arena_alloc(c->a, sizeof(Type *) * (size_t)(e->u.handle.narms ? e->u.handle.narms : 1));
    for (int i = 0; i < e->u.handle.narms; i++) {
        HandleArm *arm = &e->u.handle.arms[i];
        Type *ft = NULL;
        if (ed && arm->opi >= 0) {
            ft = ty_find(op_type(c, ed, arm->opi, e->u.handle.inst));
            if (ft->nargs != arm->nbinders)
                error(c, arm->pos, "`%s.%s` takes %d argument%s, but this arm binds %d", ed->name,
                      arm->op, ft->nargs, ft->nargs == 1 ? "" : "s", arm->nbinders);
        }
        for (int k = 0; k < arm->nbinders; k++)
            if (arm->binders[k].sym)
                arm->binders[k].sym->type =
                    ft && k < ft->nargs && ft->nargs == arm->nbinders ? ft->args[k] : tc->t_poison;
        arm_types[i] = check_expr(c, arm->body);
    }
    e->u.handle.body->type = NULL; /* check_expr skips an expression that has a type */
    vec_push(c->a, &c->handles, e);
    Type *body_t = check_expr(c, e->u.handle.body);
    c->handles.len--;
    if (!ty_unify(tc, bt, body_t))
        error(c, e->u.handle.body->pos,
              "the handled body has type `%s`, but a `resume` in an arm uses it as `%s`",
              show(c, body_t), show(c, bt));
    e->u.handle.body->type = body_t;
    for (int i = 0; i < e->u.handle.narms; i++) {
        HandleArm *arm = &e->u.handle.arms[i];
        Type *at = arm_types[i];
        Type *ft = ed && arm->opi >= 0 ? ty_find(op_type(c, ed, arm->opi, e->u.handle.inst)) : NULL;
        if (!ft) continue;
        if (arm->resuming) {
            if (!ty_unify(tc, at, bt))
                error(c, arm->body->pos,
                      "this arm resumes, so its value becomes the value of the whole `handle`: it "
                      "has type `%s`, but the handled body has type `%s`",
                      show(c, at), show(c, bt));
        } else if (ty_find(ft->ret)->kind == TY_UNIT) {
            /* docs/spec/language.md §12.3: the arm of a Unit operation may have any type but a
             * Result; its value is discarded */
            if (ty_find(at)->kind == TY_RESULT)
                error(c, arm->body->pos,
                      "an unhandled `Result` cannot be discarded by a Unit effect operation arm; "
                      "use `match` or `?:`");
        } else if (!ty_unify(tc, at, ft->ret)) {
            error(c, arm->body->pos,
                  "the arm for `%s.%s` has type `%s`, but the operation returns `%s`", ed->name,
                  arm->op, show(c, at), show(c, ft->ret));
        }
    }
    return bt;
}

static Type *check_resume(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Type *vt = e->u.resume.e ? check_expr(c, e->u.resume.e) : tc->t_unit;
    HandleArm *arm = e->u.resume.arm;
    Expr *h = e->u.resume.handle;
    if (!arm || !h || !h->u.handle.decl || arm->opi < 0 || !h->u.handle.inst) return tc->t_poison;
    EffectDecl *ed = h->u.handle.decl;
    Type *ft = ty_find(op_type(c, ed, arm->opi, h->u.handle.inst));
    if (!ty_unify(tc, vt, ft->ret))
        error(c, e->u.resume.e ? e->u.resume.e->pos : e->pos,
              "`resume` passes `%s`, but `%s.%s` returns `%s`", show(c, vt), ed->name, arm->op,
              show(c, ft->ret));
    return h->u.handle.body->type ? h->u.handle.body->type : tc->t_poison;
}

static Type *check_expr_inner(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    switch (e->kind) {
    case E_INT: return tc->t_int;
    case E_FLOAT: return tc->t_float;
    case E_BOOL: return tc->t_bool;
    case E_STRING: return tc->t_string;
    case E_INTERP:
        for (int i = 0; i < e->u.interp.nparts; i++) {
            Expr *p = e->u.interp.parts[i];
            Type *t = check_expr(c, p);
            if (p->kind != E_STRING) add_constraint(c, C_SHOW, OP_ADD, t, NULL, NULL, p->pos, NULL);
        }
        return tc->t_string;
    case E_IDENT: return check_ident(c, e);
    case E_CALL: return check_call(c, e);
    case E_BINARY: {
        Type *l = check_expr(c, e->u.bin.l);
        Type *r = check_expr(c, e->u.bin.r);
        switch (e->u.bin.op) {
        case OP_AND:
        case OP_OR:
            expect_type(c, e->u.bin.l, l, tc->t_bool,
                        e->u.bin.op == OP_AND ? "the left operand of `&&`"
                                              : "the left operand of `||`");
            expect_type(c, e->u.bin.r, r, tc->t_bool,
                        e->u.bin.op == OP_AND ? "the right operand of `&&`"
                                              : "the right operand of `||`");
            return tc->t_bool;
        case OP_EQ:
        case OP_NE:
        case OP_LT:
        case OP_GT:
        case OP_LE:
        case OP_GE:
            add_constraint(c, C_CMP, e->u.bin.op, l, r, NULL, e->pos, NULL);
            return tc->t_bool;
        default: {
            Type *res = ty_var(tc);
            add_constraint(c, C_ARITH, e->u.bin.op, l, r, res, e->pos, NULL);
            return res;
        }
        }
    }
    case E_UNARY: {
        Type *t = check_expr(c, e->u.un.e);
        if (e->u.un.op == UOP_NOT) {
            expect_type(c, e->u.un.e, t, tc->t_bool, "the operand of `!`");
            return tc->t_bool;
        }
        if (e->u.un.op == UOP_PLUS) {
            /* docs/spec/language.md §4.1: no operator applies to an erased `any` */
            if (ty_find(t)->kind == TY_ANY) {
                error(c, e->pos,
                      "cannot apply `+` to an erased `any`: match its structure instead");
                return tc->t_poison;
            }
            return t;
        }
        Type *res = ty_var(tc);
        add_constraint(c, C_NEG, OP_SUB, t, NULL, res, e->pos, NULL);
        return res;
    }
    case E_ELVIS: {
        Type *l = check_expr(c, e->u.elvis.l);
        if (ty_find(l)->kind == TY_ANY) {
            error(c, e->pos, "cannot apply `?:` to an erased `any`: match its structure instead");
            check_expr(c, e->u.elvis.r);
            return tc->t_poison;
        }
        Type *payload = ty_var(tc), *err = ty_var(tc);
        err->hint = HINT_ERROR;
        if (!ty_unify(tc, l, ty_result(tc, payload, err))) {
            error(c, e->pos, "`?:` needs a Result on its left, but this has type `%s`", show(c, l));
            check_expr(c, e->u.elvis.r);
            return tc->t_poison;
        }
        Type *r = check_expr(c, e->u.elvis.r);
        if (!ty_unify(tc, payload, r))
            error(c, e->u.elvis.r->pos,
                  "the default of `?:` has type `%s`, but the Result holds `%s`", show(c, r),
                  show(c, payload));
        return payload;
    }
    case E_MATCH: return check_match(c, e);
    case E_BLOCK: {
        Type *value = tc->t_unit;
        for (int i = 0; i < e->u.block.nstmts; i++) check_stmt(c, e->u.block.stmts[i], &value);
        return value;
    }
    case E_LAMBDA: {
        int n = e->u.lambda.nparams;
        Type **ps = arena_alloc(c->a, sizeof(Type *) * (size_t)(n ? n : 1));
        for (int i = 0; i < n; i++) {
            Param *p = &e->u.lambda.params[i];
            ps[i] = p->annot ? convert_type(c, p->annot) : ty_var(tc);
            if (p->sym) p->sym->type = ps[i];
        }
        /* a lambda's body is not inside the handles around it: it runs where it is called */
        PtrVec save = c->handles;
        c->handles = (PtrVec){0};
        Type *bt = check_expr(c, e->u.lambda.body);
        c->handles = save;
        if (e->u.lambda.ret) {
            Type *rt = convert_type(c, e->u.lambda.ret);
            if (!coerce(c, &e->u.lambda.body, bt, rt) &&
                !recover_error(c, e->u.lambda.body->pos, bt, rt))
                error(c, e->u.lambda.body->pos,
                      "the lambda is declared to return `%s`, but its body has type `%s`",
                      show(c, rt), show(c, bt));
            bt = rt;
        }
        return ty_fn(tc, n, ps, bt);
    }
    case E_SPAWN: return ty_con1(tc, TY_FIBER, check_expr(c, e->u.spawn.e));
    case E_AWAIT: {
        Type *t = check_expr(c, e->u.await.e);
        Type *v = ty_var(tc);
        if (!ty_unify(tc, t, ty_con1(tc, TY_FIBER, v))) {
            error(c, e->u.await.e->pos, "`await` needs a Fiber (from `spawn`), found `%s`",
                  show(c, t));
            return tc->t_poison;
        }
        return v;
    }
    case E_YIELD: return e->u.yield.e ? check_expr(c, e->u.yield.e) : tc->t_unit;
    case E_RESULT_CTOR: {
        Type *t = check_expr(c, e->u.ctor.e);
        Type *err = ty_var(tc);
        err->hint = HINT_ERROR;
        if (e->u.ctor.is_error) {
            expect_type(c, e->u.ctor.e, t, tc->t_string, "the error message");
            return ty_result(tc, ty_var(tc), err);
        }
        return ty_result(tc, t, err);
    }
    case E_LIST: {
        Type *elem = ty_var(tc);
        /* docs/spec/language.md §4.1: a list literal with an `any` element is a `List<any>`;
         * its other elements are erased */
        bool erased = false;
        for (int i = 0; i < e->u.list.n; i++)
            if (ty_find(check_expr(c, e->u.list.elems[i]))->kind == TY_ANY) erased = true;
        if (erased) {
            for (int i = 0; i < e->u.list.n; i++)
                coerce(c, &e->u.list.elems[i], e->u.list.elems[i]->type, tc->t_any);
            return ty_con1(tc, TY_LIST, tc->t_any);
        }
        for (int i = 0; i < e->u.list.n; i++) {
            Expr *el = e->u.list.elems[i];
            Type *t = check_expr(c, el);
            if (!ty_unify(tc, elem, t))
                error(c, el->pos,
                      "this list element has type `%s`, but the earlier elements have type `%s`",
                      show(c, t), show(c, elem));
        }
        return ty_con1(tc, TY_LIST, elem);
    }
    case E_UNSUPPORTED:
        for (int i = 0; i < e->u.unsup.nsubs; i++) check_expr(c, e->u.unsup.subs[i]);
        return tc->t_poison;
    case E_IF: {
        Type *ct = check_expr(c, e->u.if_.cond);
        if (!ty_unify(tc, ct, tc->t_bool) && !recover_error(c, e->u.if_.cond->pos, ct, tc->t_bool))
            error(c, e->u.if_.cond->pos, "the condition has type `%s`, expected `bool`",
                  show(c, ct));
        Type *a = check_expr(c, e->u.if_.then);
        Type *b = check_expr(c, e->u.if_.els);
        if (!ty_unify(tc, a, b)) {
            error(c, e->u.if_.els->pos,
                  "the branches of this conditional have different types: `%s` and `%s`",
                  show(c, a), show(c, b));
            return tc->t_poison;
        }
        return a;
    }
    case E_FIELD: return check_field(c, e);
    case E_METHOD: return check_method(c, e);
    case E_RECORD: return check_record(c, e);
    case E_UPDATE: return check_update(c, e);
    case E_INDEX: {
        Type *t = check_expr(c, e->u.index.e);
        Type *i = check_expr(c, e->u.index.idx);
        Type *res = ty_var(tc);
        add_constraint(c, C_INDEX, OP_ADD, t, i, res, e->pos, NULL);
        return res;
    }
    case E_MAPLIT: {
        Type *v = ty_var(tc);
        for (int i = 0; i < e->u.maplit.n; i++) {
            Expr *k = e->u.maplit.keys[i], *x = e->u.maplit.vals[i];
            Type *kt = check_expr(c, k);
            if (!ty_unify(tc, kt, tc->t_string))
                error(c, k->pos, "a map key must be a `string`, found `%s`", show(c, kt));
            Type *xt = check_expr(c, x);
            if (!ty_unify(tc, v, xt))
                error(c, x->pos,
                      "this map value has type `%s`, but the earlier values have type `%s`",
                      show(c, xt), show(c, v));
        }
        Type *args[2] = {tc->t_string, v};
        return ty_con(tc, TY_MAP, 2, args);
    }
    case E_PERFORM: return check_perform(c, e);
    case E_HANDLE: return check_handle(c, e);
    case E_RESUME: return check_resume(c, e);
    case E_SEND: {
        Type *ct = check_expr(c, e->u.send.ch);
        Type *vt = check_expr(c, e->u.send.v);
        if (!ty_unify(tc, ct, ty_con1(tc, TY_CHANNEL, vt))) {
            Type *f = ty_find(ct);
            if (f->kind == TY_CHANNEL)
                error(c, e->u.send.v->pos,
                      "this channel carries `%s`, but the value sent has type `%s`",
                      show(c, f->args[0]), show(c, vt));
            else
                error(c, e->u.send.ch->pos, "`send` needs a Channel, found `%s`", show(c, ct));
        }
        add_constraint(c, C_SENDABLE, OP_ADD, vt, NULL, NULL, e->u.send.v->pos, NULL);
        return tc->t_unit;
    }
    case E_ERASE: return tc->t_any; /* made here, already checked */
    case E_RECV: {
        Type *ct = check_expr(c, e->u.recv.ch);
        Type *v = ty_var(tc);
        if (!ty_unify(tc, ct, ty_con1(tc, TY_CHANNEL, v))) {
            error(c, e->u.recv.ch->pos, "`recv` needs a Channel, found `%s`", show(c, ct));
            return tc->t_poison;
        }
        return v;
    }
    }
    return tc->t_poison;
}

Type *check_expr(Checker *c, Expr *e) {
    if (e->type) return e->type; /* already checked (a method call's receiver) */
    Type *t = check_expr_inner(c, e);
    e->type = t;
    return t;
}

void check_stmt(Checker *c, Stmt *s, Type **value) {
    switch (s->kind) {
    case S_LET: {
        Type *at = s->u.let.annot ? convert_type(c, s->u.let.annot) : NULL;
        Type *t = check_expected(c, &s->u.let.init, at);
        if (s->u.let.annot) {
            if (!coerce(c, &s->u.let.init, t, at) && !recover_error(c, s->u.let.init->pos, t, at))
                error(c, s->u.let.init->pos, "`%s` is annotated `%s`, but its value has type `%s`",
                      s->u.let.name, show(c, at), show(c, t));
            t = at;
        }
        s->u.let.sym->type = t;
        *value = c->tc->t_unit;
        return;
    }
    case S_ASSIGN: {
        Type *t = check_expr(c, s->u.assign.value);
        Sym *sym = s->u.assign.sym;
        if (sym && sym->type && !coerce(c, &s->u.assign.value, t, sym->type) &&
            !recover_error(c, s->u.assign.value->pos, t, sym->type))
            error(c, s->u.assign.value->pos,
                  "`%s` has type `%s`, but the assigned value has type `%s`", sym->name,
                  show(c, sym->type), show(c, t));
        *value = c->tc->t_unit;
        return;
    }
    case S_EXPR: *value = check_expr(c, s->u.expr); return;
    case S_FN:
    case S_UNSUPPORTED:
    case S_TYPE:
    case S_EFFECT: *value = c->tc->t_unit; return;
    }
}
