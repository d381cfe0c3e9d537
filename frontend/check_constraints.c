/* check_constraints.c — deferred constraints, generalisation and instantiation (see check_internal.h). */
#include "check_internal.h"

/* ---- deferred constraints ---- */

typedef enum Cls {
    CL_UNKNOWN,
    CL_INT,
    CL_FLOAT,
    CL_STRING,
    CL_LIST,
    CL_MAP,
    CL_OTHER,
    CL_POISON
} Cls;

static const char *via_prefix(Checker *c, Constraint *k) {
    return k->via ? arena_printf(c->a, "in this call to `%s`: ", k->via) : "";
}

static Cls classify(Checker *c, Constraint *k, Type *t, bool *is_result, bool *bad) {
    t = ty_find(t);
    *is_result = false;
    if (t->kind == TY_POISON) return CL_POISON;
    if (t->kind == TY_RESULT) {
        *is_result = true;
        if (!ty_unify(c->tc, t->args[1], c->tc->t_matherror)) {
            error(c, k->pos,
                  "%sonly `Result<_, MathError>` values chain through arithmetic, but this operand "
                  "has type `%s`; unwrap it with `?:` or `match` first",
                  via_prefix(c, k), show(c, t));
            *bad = true;
            return CL_POISON;
        }
        t = ty_find(t->args[0]);
    }
    switch (t->kind) {
    case TY_VAR: return CL_UNKNOWN;
    case TY_INT: return CL_INT;
    case TY_FLOAT: return CL_FLOAT;
    case TY_STRING: return CL_STRING;
    case TY_LIST: return *is_result ? CL_OTHER : CL_LIST;
    case TY_MAP: return *is_result ? CL_OTHER : CL_MAP;
    case TY_POISON: return CL_POISON;
    default: return CL_OTHER;
    }
}

/* Look up field `name` of record type `t` (declared or anonymous): its type, or NULL. */

static void unify_result(Checker *c, Constraint *k, Type *t) {
    if (ty_unify(c->tc, k->res, t)) return;
    if (k->kind == C_INDEX)
        error(c, k->pos, "%sthis index produces `%s`, but it is used as `%s`", via_prefix(c, k),
              show(c, t), show(c, k->res));
    else
        error(c, k->pos, "%sthis `%s` produces `%s`, but it is used as `%s`", via_prefix(c, k),
              k->kind == C_NEG ? "-" : binop_spelling(k->op), show(c, t), show(c, k->res));
}

/* Returns true when the constraint is settled (satisfied or reported). */
static const char *overload_name(int o) {
    switch (o) {
    case OVL_INT: return "integer arithmetic";
    case OVL_FLOAT: return "float arithmetic";
    case OVL_STRING: return "string concatenation";
    case OVL_LIST: return "list concatenation";
    case OVL_MAP: return "a map merge";
    default: return "?";
    }
}

/* docs/spec/language.md §16.1: an operator in a definition takes its overload from the use,
 * and one definition has one overload. `k` (solved as `o`) is a copy of a scheme's
 * constraint: the first copy solved fixes the definition's overload; a later one that
 * differs is an error at its call. */
static void same_overload(Checker *c, Constraint *k, int o) {
    Constraint *d = k->origin;
    if (!d) return;
    if (!d->overload) {
        d->overload = o;
        d->overload_pos = k->pos;
        return;
    }
    if (d->overload == o) return;
    error(c, k->pos,
          "%sthe `%s` of `%s` would be %s here, but it is %s for the use at %d:%d; one "
          "definition has one overload (write one function for each)",
          via_prefix(c, k), k->kind == C_NEG ? "-" : binop_spelling(k->op), k->origin_fn,
          overload_name(o), overload_name(d->overload), d->overload_pos.line, d->overload_pos.col);
}

/* docs/spec/language.md §4.1: operators, comparisons, indexing and field access do not apply
 * to an erased `any`. Reports and returns true when an operand is one. */
static bool erased_operand(Checker *c, Constraint *k) {
    bool a = k->a && ty_find(k->a)->kind == TY_ANY;
    bool b = k->b && ty_find(k->b)->kind == TY_ANY;
    if (k->kind == C_INDEX) b = false; /* the index */
    if (!a && !b) return false;
    switch (k->kind) {
    case C_FIELD:
        error(c, k->pos, "%scannot read field `%s` of an erased `any`: match its structure instead",
              via_prefix(c, k), k->name);
        break;
    case C_INDEX:
        error(c, k->pos, "%scannot index an erased `any`: match its structure instead",
              via_prefix(c, k));
        break;
    case C_SIZED:
        error(c, k->pos, "%scannot apply `%s` to an erased `any`: match its structure instead",
              via_prefix(c, k), k->name);
        break;
    case C_EQUATABLE:
        error(c, k->pos,
              "%scannot compare an erased `any` (`%s` compares elements with `==`): match its "
              "structure instead",
              via_prefix(c, k), k->name);
        break;
    default:
        error(c, k->pos, "%scannot apply `%s` to an erased `any`: match its structure instead",
              via_prefix(c, k), k->kind == C_NEG ? "-" : binop_spelling(k->op));
        break;
    }
    if (k->res) poison(c, k->res);
    return true;
}

/* docs/spec/language.md §9.4: `xs + ys` whose (known) element types differ is a `List<any>`. */
static bool mixed_lists(Type *a, Type *b) {
    a = ty_find(a);
    b = ty_find(b);
    if (a->kind != TY_LIST || b->kind != TY_LIST) return false;
    Type *ea = ty_find(a->args[0]), *eb = ty_find(b->args[0]);
    if (ea->kind == TY_VAR || eb->kind == TY_VAR || ea->kind == TY_RECORD || eb->kind == TY_RECORD)
        return false;
    /* different type constructors never unify, whatever their unknown parts (`[1] + [[]]`,
     * `[true] + [Success { value: 1 }]`) */
    if (ea->kind != eb->kind) return true;
    if (!ty_is_ground(ea) || !ty_is_ground(eb) || ea->kind == TY_ANY) return false;
    /* two ground types unify exactly when they are equal; trying binds nothing */
    TypeCtx scratch;
    Arena *tmp = arena_new();
    types_init(&scratch, tmp);
    bool differ = !ty_unify(&scratch, ea, eb);
    arena_free(tmp);
    return differ;
}

static bool try_solve(Checker *c, Constraint *k) {
    TypeCtx *tc = c->tc;
    bool ra = false, rb = false, bad = false;
    if (k->kind != C_SHOW && k->kind != C_SENDABLE && k->kind != C_GPU_ELEM &&
        k->kind != C_ERASABLE && erased_operand(c, k))
        return true;
    switch (k->kind) {
    case C_ARITH: {
        Type *fa = ty_find(k->a), *fb = ty_find(k->b);
        bool rig_a = fa->kind == TY_VAR && fa->rigid && !fa->generic,
             rig_b = fb->kind == TY_VAR && fb->rigid && !fb->generic;
        if ((rig_a && fb->kind != TY_VAR) || (rig_b && fa->kind != TY_VAR)) {
            error(c, k->pos,
                  "%soperator `%s` cannot be applied to `%s` and `%s` (`%s` is a type parameter: "
                  "it can be any type)",
                  via_prefix(c, k), binop_spelling(k->op), show(c, fa), show(c, fb),
                  show(c, rig_a ? fa : fb));
            poison(c, k->res);
            return true;
        }
        Cls ca = classify(c, k, k->a, &ra, &bad);
        Cls cb = classify(c, k, k->b, &rb, &bad);
        if (bad || ca == CL_POISON || cb == CL_POISON) {
            poison(c, k->res);
            return true;
        }
        if (ca == CL_LIST || cb == CL_LIST || ca == CL_MAP || cb == CL_MAP) {
            /* xs + ys concatenates lists; a + b merges maps (the right side wins) */
            Cls want = (ca == CL_LIST || cb == CL_LIST) ? CL_LIST : CL_MAP;
            if (k->op != OP_ADD || (ca != want && ca != CL_UNKNOWN) ||
                (cb != want && cb != CL_UNKNOWN)) {
                error(c, k->pos, "%soperator `%s` cannot be applied to `%s` and `%s`",
                      via_prefix(c, k), binop_spelling(k->op), show(c, k->a), show(c, k->b));
                poison(c, k->res);
                return true;
            }
            if (want == CL_LIST && !ra && !rb && mixed_lists(k->a, k->b)) {
                unify_result(c, k, ty_con1(tc, TY_LIST, tc->t_any));
                same_overload(c, k, OVL_LIST);
                return true;
            }
            if (!ty_unify(tc, k->a, k->b)) {
                error(c, k->pos, "%scannot concatenate `%s` and `%s`", via_prefix(c, k),
                      show(c, k->a), show(c, k->b));
                poison(c, k->res);
                return true;
            }
            unify_result(c, k, k->a);
            same_overload(c, k, want == CL_LIST ? OVL_LIST : OVL_MAP);
            return true;
        }
        if (ca == CL_STRING || cb == CL_STRING) {
            if (k->op != OP_ADD || ra || rb || (ca != CL_STRING && ca != CL_UNKNOWN) ||
                (cb != CL_STRING && cb != CL_UNKNOWN)) {
                error(c, k->pos, "%soperator `%s` cannot be applied to `%s` and `%s`",
                      via_prefix(c, k), binop_spelling(k->op), show(c, k->a), show(c, k->b));
                poison(c, k->res);
                return true;
            }
            ty_unify(tc, k->a, tc->t_string);
            ty_unify(tc, k->b, tc->t_string);
            unify_result(c, k, tc->t_string);
            same_overload(c, k, OVL_STRING);
            return true;
        }
        if (ca == CL_OTHER || cb == CL_OTHER) {
            error(c, k->pos, "%soperator `%s` cannot be applied to `%s` and `%s`", via_prefix(c, k),
                  binop_spelling(k->op), show(c, k->a), show(c, k->b));
            poison(c, k->res);
            return true;
        }
        if (ca == CL_UNKNOWN || cb == CL_UNKNOWN) return false;
        bool isfloat = ca == CL_FLOAT || cb == CL_FLOAT;
        Type *payload = (k->op == OP_DIV || isfloat) ? tc->t_float : tc->t_int;
        bool is_res = k->op == OP_DIV || k->op == OP_MOD || !isfloat || ra || rb;
        unify_result(c, k, is_res ? ty_result(tc, payload, tc->t_matherror) : payload);
        same_overload(c, k, isfloat ? OVL_FLOAT : OVL_INT);
        return true;
    }
    case C_NEG: {
        Cls ca = classify(c, k, k->a, &ra, &bad);
        if (bad || ca == CL_POISON) {
            poison(c, k->res);
            return true;
        }
        if (ca == CL_UNKNOWN) return false;
        if (ca != CL_INT && ca != CL_FLOAT) {
            error(c, k->pos, "%sunary `-` cannot be applied to `%s`", via_prefix(c, k),
                  show(c, k->a));
            poison(c, k->res);
            return true;
        }
        if (ca == CL_INT)
            unify_result(c, k, ty_result(tc, tc->t_int, tc->t_matherror));
        else
            unify_result(c, k, ra ? ty_result(tc, tc->t_float, tc->t_matherror) : tc->t_float);
        same_overload(c, k, ca == CL_INT ? OVL_INT : OVL_FLOAT);
        return true;
    }
    case C_CMP: {
        Type *a = ty_find(k->a), *b = ty_find(k->b);
        if (a->kind == TY_POISON || b->kind == TY_POISON) return true;
        if (a->kind == TY_RESULT || b->kind == TY_RESULT) {
            error(c, k->pos,
                  "%scannot compare `%s` with `%s`: a Result must be unwrapped with `?:` or "
                  "`match` before comparing",
                  via_prefix(c, k), show(c, a), show(c, b));
            return true;
        }
        bool eq = k->op == OP_EQ || k->op == OP_NE;
        bool an = a->kind == TY_INT || a->kind == TY_FLOAT,
             bn = b->kind == TY_INT || b->kind == TY_FLOAT;
        if (an && bn) return true;
        if (a->kind == TY_VAR && b->kind == TY_VAR) return false;
        if ((a->kind == TY_VAR && bn) || (b->kind == TY_VAR && an)) return false;
        if (a->kind == TY_VAR) ty_unify(tc, a, b), a = ty_find(a);
        if (b->kind == TY_VAR) ty_unify(tc, b, a), b = ty_find(b);
        bool ok = a->kind == b->kind && (a->kind == TY_STRING || (eq && a->kind == TY_BOOL));
        if (!ok) {
            if (a->kind == b->kind && a->kind == TY_BOOL)
                error(c, k->pos,
                      "%soperator `%s` cannot be applied to `bool` (only `==` and `!=` can)",
                      via_prefix(c, k), binop_spelling(k->op));
            else
                error(c, k->pos, "%scannot compare `%s` with `%s`", via_prefix(c, k), show(c, a),
                      show(c, b));
        }
        return true;
    }
    case C_SHOW:
        for (;;) {
            Type *t = ty_find(k->a);
            switch (t->kind) {
            case TY_VAR: return false;
            case TY_RESULT:
                /* a Result renders its Error message; a Success payload that has no
                 * rendering of its own shows as a placeholder (`<list>`) */
                k->a = t->args[0];
                k->b = t;
                continue;
            case TY_FN:
                if (k->b) return true;
                error(c, k->pos, "%sa function cannot be printed or rendered (it has type `%s`)",
                      via_prefix(c, k), show(c, t));
                return true;
            case TY_ITER:
                error(c, k->pos,
                      "%san Iterator cannot be printed; consume it with `forEach` or `fold`",
                      via_prefix(c, k));
                return true;
            case TY_PTR:
                /* docs/spec/language.md §3.5: no printing applies to a C pointer */
                error(c, k->pos, "%svalues of type `Ptr` cannot be printed (a C pointer is opaque)",
                      via_prefix(c, k));
                return true;
            case TY_LIST:
            case TY_MAP:
            case TY_NAMED:
            case TY_RECORD:
            case TY_GPU:
                if (k->b) return true;
                error(c, k->pos,
                      "%svalues of type `%s` cannot be printed or compared by rendering (only int, "
                      "float, bool, string, Unit, Results and handles can)",
                      via_prefix(c, k), show(c, t));
                return true;
            default: return true;
            }
        }
    case C_INDEX: {
        Type *t = ty_find(k->a);
        switch (t->kind) {
        case TY_VAR: return false;
        case TY_POISON: poison(c, k->res); return true;
        case TY_LIST:
            if (!ty_unify(tc, k->b, tc->t_int))
                error(c, k->pos, "%sa list index must be an `int`, found `%s`", via_prefix(c, k),
                      show(c, k->b));
            unify_result(c, k, ty_result(tc, t->args[0], tc->t_errort));
            return true;
        case TY_MAP:
            if (!ty_unify(tc, k->b, tc->t_string))
                error(c, k->pos, "%sa map key must be a `string`, found `%s`", via_prefix(c, k),
                      show(c, k->b));
            unify_result(c, k, ty_result(tc, t->args[1], tc->t_errort));
            return true;
        case TY_STRING:
            if (!ty_unify(tc, k->b, tc->t_int))
                error(c, k->pos, "%sa string index must be an `int`, found `%s`", via_prefix(c, k),
                      show(c, k->b));
            unify_result(c, k, ty_result(tc, tc->t_string, tc->t_errort));
            return true;
        default:
            error(c, k->pos,
                  "%svalues of type `%s` cannot be indexed (lists, maps and strings can)",
                  via_prefix(c, k), show(c, t));
            poison(c, k->res);
            return true;
        }
    }
    case C_SIZED: {
        Type *t = ty_find(k->a);
        if (t->kind == TY_VAR) return false;
        if (t->kind != TY_STRING && t->kind != TY_LIST && t->kind != TY_MAP && t->kind != TY_POISON)
            error(c, k->pos, "%s`%s` needs a string, a list or a map, found `%s`", via_prefix(c, k),
                  k->name, show(c, t));
        return true;
    }
    case C_FIELD: {
        Type *t = ty_find(k->a);
        if (t->kind == TY_VAR) return false;
        if (t->kind == TY_POISON) {
            poison(c, k->res);
            return true;
        }
        int slot;
        Type *ft = inst_field(c, t, k->name, &slot);
        if (!ft) {
            if (is_record_type(t))
                error(c, k->pos, "%srecord type `%s` has no field `%s`", via_prefix(c, k),
                      show(c, t), k->name);
            else if (positional_record(t))
                error(c, k->pos,
                      "%spositional record `%s` has no field `%s` (its fields are `0` to `%d`)",
                      via_prefix(c, k), show(c, t), k->name, positional_record(t)->nfields - 1);
            else
                error(c, k->pos, "%s`%s` has no fields (`.%s` needs a record)", via_prefix(c, k),
                      show(c, t), k->name);
            poison(c, k->res);
            return true;
        }
        Type *vt = ty_find(k->res);
        if (k->op == OP_UPDATE_FIELD && ty_find(ft)->kind == TY_ANY && vt->kind != TY_ANY &&
            vt->kind != TY_VAR && vt->kind != TY_POISON) {
            /* the new value of an `any` field is erased (§4.1; codegen erases it): what is
             * left to check is that it may be */
            k->kind = C_ERASABLE;
            k->a = k->res;
            k->res = NULL;
            return try_solve(c, k);
        }
        if (!ty_unify(tc, k->res, ft))
            error(c, k->pos, "%sfield `%s` has type `%s`, but it is used as `%s`", via_prefix(c, k),
                  k->name, show(c, ft), show(c, k->res));
        return true;
    }
    case C_SENDABLE: {
        Type *t = ty_find(k->a);
        if (t->kind == TY_VAR) return false;
        if (t->kind == TY_RESULT)
            error(c, k->pos,
                  "%sa Result cannot be sent over a channel (it has type `%s`); unwrap it with "
                  "`?:` or `match` first",
                  via_prefix(c, k), show(c, t));
        return true;
    }
    case C_GPU_ELEM: {
        /* docs/spec/language.md §9.9: buffers of int, float or bool; fold accumulators too */
        Type *t = ty_find(k->a);
        if (t->kind == TY_VAR) return false;
        if (t->kind == TY_INT || t->kind == TY_FLOAT || t->kind == TY_BOOL || t->kind == TY_POISON)
            return true;
        if (k->b)
            error(c, k->pos, "%sthe accumulator of `%s` must be int, float or bool, found `%s`",
                  via_prefix(c, k), k->name, show(c, t));
        else
            error(c, k->pos,
                  "%s`%s` would make a `GpuBuffer<%s>`: a GPU buffer holds int, float or bool",
                  via_prefix(c, k), k->name, show(c, t));
        return true;
    }
    case C_EQUATABLE:
        /* an erased `any` was reported above; anything else compares as it did */
        return ty_find(k->a)->kind != TY_VAR;
    case C_ERASABLE: {
        /* docs/spec/language.md §4.1, §8: what `any` may hold (it must render) */
        Type *t = ty_find(k->a);
        if (t->kind == TY_VAR) return false;
        if (t->kind == TY_RECORD) {
            error(c, k->pos,
                  "%scannot erase an anonymous record into `any`: declare its row as a named type "
                  "first",
                  via_prefix(c, k));
            return true;
        }
        if (t->kind != TY_RESULT) return true;
        Type *p = ty_find(t->args[0]);
        while (p->kind == TY_RESULT) p = ty_find(p->args[0]);
        switch (p->kind) {
        case TY_VAR: return false;
        case TY_LIST:
        case TY_MAP:
        case TY_NAMED:
        case TY_RECORD:
        case TY_FN:
        case TY_ITER:
        case TY_PTR:
            error(c, k->pos,
                  "%scannot erase `%s` into `any`: its Success payload has no rendering; match "
                  "the Result first",
                  via_prefix(c, k), show(c, t));
            return true;
        default: return true;
        }
    }
    }
    return true;
}

Constraint *add_constraint_named(Checker *c, CKind kind, BinOp op, Type *a, Type *b, Type *res,
                                 Pos pos, const char *via, const char *name) {
    Constraint *k = arena_alloc(c->a, sizeof *k);
    k->name = name;
    k->kind = kind;
    k->op = op;
    k->a = a;
    k->b = b;
    k->res = res;
    k->pos = pos;
    k->via = via;
    k->level = c->tc->level;
    if (!try_solve(c, k)) vec_push(c->a, &c->pending, k);
    return k;
}

Constraint *add_constraint(Checker *c, CKind kind, BinOp op, Type *a, Type *b, Type *res, Pos pos,
                           const char *via) {
    return add_constraint_named(c, kind, op, a, b, res, pos, via, NULL);
}

static void solve(Checker *c) {
    bool progress = true;
    while (progress) {
        progress = false;
        for (int i = 0; i < c->pending.len; i++) {
            Constraint *k = c->pending.items[i];
            if (k->dead) continue;
            if (try_solve(c, k)) {
                k->dead = true;
                progress = true;
            }
        }
    }
    int j = 0;
    for (int i = 0; i < c->pending.len; i++)
        if (!((Constraint *)c->pending.items[i])->dead) c->pending.items[j++] = c->pending.items[i];
    c->pending.len = j;
}

/* Default the first unbound variable found in `t`; true if one was found. */
static bool default_one(Checker *c, Type *t, int depth) {
    t = ty_find(t);
    if (depth > 200) return false;
    if (t->kind == TY_VAR) {
        if (t->generic || t->rigid) return false;
        ty_unify(c->tc, t, t->hint & HINT_ERROR ? c->tc->t_errort : c->tc->t_int);
        return true;
    }
    for (int i = 0; i < t->nargs; i++)
        if (default_one(c, t->args[i], depth + 1)) return true;
    return t->ret && default_one(c, t->ret, depth + 1);
}

/* Solve the pending constraints with level > min_level, defaulting stuck operands. */
void solve_forced(Checker *c, int min_level) {
    for (int guard = 0; guard < 100000; guard++) {
        solve(c);
        Constraint *stuck = NULL;
        for (int i = 0; i < c->pending.len && !stuck; i++) {
            Constraint *k = c->pending.items[i];
            if (!k->dead && k->level > min_level) stuck = k;
        }
        if (!stuck) return;
        Type *sa = ty_find(stuck->a);
        if (sa->kind == TY_VAR && !sa->generic && !sa->rigid && stuck->kind == C_SIZED) {
            ty_unify(c->tc, sa, c->tc->t_string);
            continue;
        }
        if (sa->kind == TY_VAR && !sa->generic && !sa->rigid &&
            (stuck->kind == C_FIELD || stuck->kind == C_INDEX)) {
            if (stuck->kind == C_FIELD)
                error(c, stuck->pos,
                      "%scannot tell which record type has the field `%s` here; annotate the "
                      "value's type",
                      via_prefix(c, stuck), stuck->name);
            else
                error(c, stuck->pos,
                      "%scannot tell what is being indexed here; annotate the value's type",
                      via_prefix(c, stuck));
            poison(c, sa);
            if (stuck->res) poison(c, stuck->res);
            continue;
        }
        if (!default_one(c, stuck->a, 0) && !(stuck->b && default_one(c, stuck->b, 0))) {
            stuck->dead = true; /* nothing left to default (generic): keep quiet */
        }
    }
}

/* ---- generalisation and instantiation ---- */

/* The stamp of the current collect_vars / mentions walk (Type.leaf_mark): a type is a DAG,
 * and a walk that visits a shared node once stays linear in its size. */
static unsigned leaf_walk;

static unsigned new_leaf_walk(void) {
    if (++leaf_walk == 0) leaf_walk = 1; /* 0: never visited */
    return leaf_walk;
}

static void collect_rec(Type *t, int min_level, PtrVec *out, Arena *a, int depth, unsigned mark) {
    t = ty_find(t);
    if (depth > 200) return;
    if (t->kind == TY_VAR) {
        if (t->generic || t->level <= min_level) return;
        for (int i = 0; i < out->len; i++)
            if (out->items[i] == t) return;
        vec_push(a, out, t);
        return;
    }
    if (t->leaf_mark == mark) return;
    t->leaf_mark = mark;
    for (int i = 0; i < t->nargs; i++) collect_rec(t->args[i], min_level, out, a, depth + 1, mark);
    if (t->ret) collect_rec(t->ret, min_level, out, a, depth + 1, mark);
}

static void collect_vars(Type *t, int min_level, PtrVec *out, Arena *a, int depth) {
    collect_rec(t, min_level, out, a, depth, new_leaf_walk());
}

static bool mentions_rec(Type *t, PtrVec *vars, int depth, unsigned mark) {
    t = ty_find(t);
    if (depth > 200) return false;
    if (t->kind == TY_VAR) {
        for (int i = 0; i < vars->len; i++)
            if (vars->items[i] == t) return true;
        return false;
    }
    if (t->leaf_mark == mark) return false; /* seen in this walk: it mentions none */
    t->leaf_mark = mark;
    for (int i = 0; i < t->nargs; i++)
        if (mentions_rec(t->args[i], vars, depth + 1, mark)) return true;
    return t->ret && mentions_rec(t->ret, vars, depth + 1, mark);
}

static bool mentions(Type *t, PtrVec *vars, int depth) {
    return mentions_rec(t, vars, depth, new_leaf_walk());
}

static bool cons_mentions(Constraint *k, PtrVec *vars) {
    return mentions(k->a, vars, 0) || (k->b && mentions(k->b, vars, 0)) ||
           (k->res && mentions(k->res, vars, 0));
}

void generalise(Checker *c, PtrVec *members, int outer) {
    solve(c);
    bool is_main = false;
    for (int i = 0; i < members->len; i++)
        if (((FnDecl *)members->items[i])->is_main) is_main = true;
    PtrVec S = {0};
    if (!is_main)
        for (int i = 0; i < members->len; i++)
            collect_vars(((FnDecl *)members->items[i])->type, outer, &S, c->a, 0);
    PtrVec kept = {0};
    bool changed = S.len > 0;
    while (changed) {
        changed = false;
        for (int i = 0; i < c->pending.len; i++) {
            Constraint *k = c->pending.items[i];
            if (k->dead || k->level <= outer) continue;
            bool in = false;
            for (int j = 0; j < kept.len; j++)
                if (kept.items[j] == k) in = true;
            if (in || !cons_mentions(k, &S)) continue;
            vec_push(c->a, &kept, k);
            collect_vars(k->a, outer, &S, c->a, 0);
            if (k->b) collect_vars(k->b, outer, &S, c->a, 0);
            if (k->res) collect_vars(k->res, outer, &S, c->a, 0);
            changed = true;
        }
    }
    /* take the scheme's constraints out of the pending list, default the rest */
    for (int j = 0; j < kept.len; j++) ((Constraint *)kept.items[j])->dead = true;
    solve_forced(c, outer);
    for (int j = 0; j < kept.len; j++) ((Constraint *)kept.items[j])->dead = false;
    for (int i = 0; i < S.len; i++) {
        Type *v = ty_find(S.items[i]);
        if (v->kind == TY_VAR) v->generic = true;
    }
    /* keep only still-unbound variables */
    PtrVec Q = {0};
    for (int i = 0; i < S.len; i++) {
        Type *v = ty_find(S.items[i]);
        if (v->kind != TY_VAR) continue;
        bool dup = false;
        for (int j = 0; j < Q.len; j++)
            if (Q.items[j] == v) dup = true;
        if (!dup) vec_push(c->a, &Q, v);
    }
    for (int i = 0; i < members->len; i++) {
        FnDecl *f = members->items[i];
        f->qvars = (Type **)Q.items;
        f->nqvars = Q.len;
        f->cons = kept;
    }
}

Type *inst_type(Checker *c, Type *t, InstMap *m, int depth) {
    t = ty_find(t);
    if (depth > 200) return t;
    if (t->kind == TY_VAR) {
        for (int i = 0; i < m->n; i++)
            if (m->from[i] == t) return m->to[i];
        return t;
    }
    if (t->nargs == 0 && !t->ret) return t;
    Type **args = t->nargs ? arena_alloc(c->a, sizeof(Type *) * (size_t)t->nargs) : NULL;
    for (int i = 0; i < t->nargs; i++) args[i] = inst_type(c, t->args[i], m, depth + 1);
    return ty_rebuild(c->tc, t, args, t->ret ? inst_type(c, t->ret, m, depth + 1) : NULL);
}

void ensure_checked(Checker *c, FnDecl *f) {
    if (c->fn_state[f->id] == CK_NEW) check_scc(c, f->scc);
}
