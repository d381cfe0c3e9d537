/* check_types.c — annotations and declared types: records, unions, aliases, effects (see check_internal.h). */
#include "check_internal.h"

/* ---- annotations and declared types ---- */

TypeDecl *find_tdecl(Checker *c, const char *name) {
    for (int i = 0; i < c->prog->tdecls.len; i++) {
        TypeDecl *td = c->prog->tdecls.items[i];
        if (strcmp(td->name, name) == 0) return td;
    }
    return NULL;
}

const char *decl_name(void *decl) {
    return ((TypeDecl *)decl)->name;
}

bool is_record_type(Type *t) {
    t = ty_find(t);
    return t->kind == TY_RECORD ||
           (t->kind == TY_NAMED && ((TypeDecl *)t->decl)->kind == TD_RECORD);
}

/* Substitute a declaration's parameter variables by `args`. */
Type *inst_decl(Checker *c, Type **pvars, int n, Type **args, Type *t) {
    if (n == 0) return t;
    InstMap m = {.from = pvars, .to = args, .n = n};
    return inst_type(c, t, &m, 0);
}

/* The variant of a positional record type (docs/spec/language.md §3.3: `type Pair =
 * Pair(int, string)`, fields `0`, `1`, …), or NULL when `t` is not one. */
Variant *positional_record(Type *t) {
    t = ty_find(t);
    if (t->kind != TY_NAMED) return NULL;
    TypeDecl *td = t->decl;
    if (td->kind != TD_UNION || td->nvariants != 1) return NULL;
    Variant *v = td->variants[0];
    if (v->named || v->nfields == 0 || strcmp(v->name, td->name) != 0) return NULL;
    return v;
}

/* The position `name` spells as a positional field (`0`, `1`, … without leading zeros), or -1. */
static int positional_index(const char *name) {
    if (!name[0] || (name[0] == '0' && name[1])) return -1;
    long k = 0;
    for (const char *s = name; *s; s++) {
        if (*s < '0' || *s > '9' || k > 100000000) return -1;
        k = k * 10 + (*s - '0');
    }
    return (int)k;
}

Type *inst_field(Checker *c, Type *t, const char *name, int *slot) {
    t = ty_find(t);
    Variant *pv = positional_record(t);
    if (pv) {
        int k = positional_index(name);
        if (k < 0 || k >= pv->nfields) return NULL;
        *slot = k;
        return inst_decl(c, pv->decl->pvars, pv->decl->nparams, t->args, pv->types[k]);
    }
    if (t->kind == TY_RECORD) {
        for (int i = 0; i < t->nargs; i++)
            if (strcmp(t->fields[i], name) == 0) {
                *slot = i;
                return t->args[i];
            }
        return NULL;
    }
    if (t->kind == TY_NAMED) {
        TypeDecl *td = t->decl;
        if (td->kind != TD_RECORD) return NULL;
        for (int i = 0; i < td->nfields; i++)
            if (strcmp(td->fields[i], name) == 0) {
                *slot = i;
                return inst_decl(c, td->pvars, td->nparams, t->args, td->types[i]);
            }
    }
    return NULL;
}

/* A fresh instance `T<'a, 'b>` of a declared type. */
Type *fresh_named(Checker *c, TypeDecl *td) {
    Type **args = arena_alloc(c->a, sizeof(Type *) * (size_t)(td->nparams + 1));
    for (int i = 0; i < td->nparams; i++) args[i] = ty_var(c->tc);
    Type *t = ty_con(c->tc, TY_NAMED, td->nparams, args);
    t->decl = td;
    return t;
}

static void prepare_alias(Checker *c, TypeDecl *td);

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* An anonymous record type: fields sorted by name. */
Type *make_anon_record(Checker *c, int n, const char **names, Type **types, int *slots) {
    const char **sorted = arena_alloc(c->a, sizeof(char *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) sorted[i] = names[i];
    qsort(sorted, (size_t)n, sizeof(char *), cmp_str);
    Type **args = arena_alloc(c->a, sizeof(Type *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (strcmp(sorted[j], names[i]) == 0) {
                args[j] = types[i];
                if (slots) slots[i] = j;
            }
    Type *t = ty_con(c->tc, TY_RECORD, n, args);
    t->fields = sorted;
    return t;
}

Type *convert_type(Checker *c, TypeExpr *te) {
    TypeCtx *tc = c->tc;
    if (!te) return ty_var(tc);
    if (te->kind == TE_FN) {
        Type **ps = arena_alloc(c->a, sizeof(Type *) * (size_t)(te->nargs ? te->nargs : 1));
        for (int i = 0; i < te->nargs; i++) ps[i] = convert_type(c, te->args[i]);
        return ty_fn(tc, te->nargs, ps, convert_type(c, te->ret));
    }
    if (te->kind == TE_RECORD) {
        for (int i = 0; i < te->nargs; i++)
            for (int j = 0; j < i; j++)
                if (strcmp(te->fields[i], te->fields[j]) == 0) {
                    error(c, te->args[i]->pos, "duplicate field `%s` in a record type",
                          te->fields[i]);
                    return tc->t_poison;
                }
        Type **ts = arena_alloc(c->a, sizeof(Type *) * (size_t)(te->nargs + 1));
        for (int i = 0; i < te->nargs; i++) ts[i] = convert_type(c, te->args[i]);
        return make_anon_record(c, te->nargs, te->fields, ts, NULL);
    }
    for (int i = c->ntenv - 1; i >= 0; i--)
        if (strcmp(c->tnames[i], te->name) == 0) {
            if (te->nargs) {
                error(c, te->pos, "type parameter `%s` takes no type arguments", te->name);
                return tc->t_poison;
            }
            return c->ttypes[i];
        }
    static const struct {
        const char *name;
        int nargs;
        TyKind kind;
    } names[] = {
        {"int", 0, TY_INT},         {"float", 0, TY_FLOAT},   {"bool", 0, TY_BOOL},
        {"string", 0, TY_STRING},   {"Unit", 0, TY_UNIT},     {"MathError", 0, TY_MATHERROR},
        {"Error", 0, TY_ERRORT},    {"Result", 2, TY_RESULT}, {"Fiber", 1, TY_FIBER},
        {"Iterator", 1, TY_ITER},   {"List", 1, TY_LIST},     {"Map", 2, TY_MAP},
        {"Channel", 1, TY_CHANNEL}, {"Ptr", 0, TY_PTR},       {"GpuBuffer", 1, TY_GPU},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strcmp(names[i].name, te->name) != 0) continue;
        if (te->nargs != names[i].nargs) {
            error(c, te->pos, "type `%s` takes %d type argument%s, got %d", te->name,
                  names[i].nargs, names[i].nargs == 1 ? "" : "s", te->nargs);
            return tc->t_poison;
        }
        switch (names[i].kind) {
        case TY_INT: return tc->t_int;
        case TY_FLOAT: return tc->t_float;
        case TY_BOOL: return tc->t_bool;
        case TY_STRING: return tc->t_string;
        case TY_UNIT: return tc->t_unit;
        case TY_MATHERROR: return tc->t_matherror;
        case TY_ERRORT: return tc->t_errort;
        default: {
            Type *args[2];
            for (int k = 0; k < te->nargs; k++) args[k] = convert_type(c, te->args[k]);
            if (names[i].kind == TY_MAP && !ty_unify(tc, args[0], tc->t_string)) {
                error(c, te->args[0]->pos, "map keys are strings: write `Map<string, %s>`",
                      show(c, args[1]));
                return tc->t_poison;
            }
            return ty_con(tc, names[i].kind, te->nargs, args);
        }
        }
    }
    TypeDecl *td = find_tdecl(c, te->name);
    if (td) {
        if (te->nargs != td->nparams) {
            error(c, te->pos, "type `%s` takes %d type argument%s, got %d", te->name, td->nparams,
                  td->nparams == 1 ? "" : "s", te->nargs);
            return tc->t_poison;
        }
        Type **args = arena_alloc(c->a, sizeof(Type *) * (size_t)(td->nparams + 1));
        for (int k = 0; k < te->nargs; k++) args[k] = convert_type(c, te->args[k]);
        if (td->kind == TD_ALIAS) {
            prepare_alias(c, td);
            if (!td->alias_type) return tc->t_poison;
            return inst_decl(c, td->pvars, td->nparams, args, td->alias_type);
        }
        Type *t = ty_con(tc, TY_NAMED, td->nparams, args);
        t->decl = td;
        return t;
    }
    if (strcmp(te->name, "any") == 0) {
        if (te->nargs) {
            error(c, te->pos, "type `any` takes no type arguments");
            return tc->t_poison;
        }
        return tc->t_any; /* docs/spec/language.md §4.1 */
    }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcasecmp(names[i].name, te->name) == 0) {
            error(c, te->pos,
                  "unknown type `%s` (type names are case-sensitive: did you mean `%s`?)", te->name,
                  names[i].name);
            return tc->t_poison;
        }
    error(c, te->pos, "unknown type `%s`", te->name);
    return tc->t_poison;
}

/* Convert with the declaration's own parameters in scope. */
static Type *convert_in(Checker *c, TypeExpr *te, const char **params, Type **pvars, int n) {
    const char **sn = c->tnames;
    Type **st = c->ttypes;
    int sc = c->ntenv;
    c->tnames = params;
    c->ttypes = pvars;
    c->ntenv = n;
    Type *t = convert_type(c, te);
    c->tnames = sn;
    c->ttypes = st;
    c->ntenv = sc;
    return t;
}

static Type **generic_vars(Checker *c, int n) {
    Type **v = arena_alloc(c->a, sizeof(Type *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        v[i] = ty_var(c->tc);
        v[i]->generic = true;
    }
    return v;
}

static void prepare_alias(Checker *c, TypeDecl *td) {
    unsigned char *state = &c->alias_state[td->id];
    if (*state == CK_DONE) return;
    if (*state == CK_IN_PROGRESS) {
        error(c, td->pos, "type alias `%s` refers to itself", td->name);
        td->alias_type = NULL;
        *state = CK_DONE;
        return;
    }
    *state = CK_IN_PROGRESS;
    if (!td->pvars) td->pvars = generic_vars(c, td->nparams);
    Type *t = convert_in(c, td->alias, td->params, td->pvars, td->nparams);
    if (*state == CK_IN_PROGRESS) {
        td->alias_type = t;
        *state = CK_DONE;
    }
}

/* Parameter variables and field types of every declared type; operation types of every
 * declared effect. */
void prepare_decls(Checker *c) {
    for (int i = 0; i < c->prog->tdecls.len; i++) {
        TypeDecl *td = c->prog->tdecls.items[i];
        if (!td->pvars) td->pvars = generic_vars(c, td->nparams);
    }
    for (int i = 0; i < c->prog->tdecls.len; i++) {
        TypeDecl *td = c->prog->tdecls.items[i];
        switch (td->kind) {
        case TD_RECORD:
            td->types = arena_alloc(c->a, sizeof(Type *) * (size_t)(td->nfields + 1));
            for (int k = 0; k < td->nfields; k++)
                td->types[k] = convert_in(c, td->ftypes[k], td->params, td->pvars, td->nparams);
            break;
        case TD_UNION:
            for (int v = 0; v < td->nvariants; v++) {
                Variant *var = td->variants[v];
                var->types = arena_alloc(c->a, sizeof(Type *) * (size_t)(var->nfields + 1));
                for (int k = 0; k < var->nfields; k++)
                    var->types[k] =
                        convert_in(c, var->ftypes[k], td->params, td->pvars, td->nparams);
            }
            break;
        case TD_ALIAS:
        case TD_NAME: prepare_alias(c, td); break;
        }
    }
    for (int i = 0; i < c->prog->edecls.len; i++) {
        EffectDecl *ed = c->prog->edecls.items[i];
        ed->pvars = generic_vars(c, ed->nparams);
        for (int k = 0; k < ed->nops; k++)
            ed->ops[k].type = convert_in(c, ed->ops[k].sig, ed->params, ed->pvars, ed->nparams);
    }
    for (int i = 0; i < c->prog->fns.len; i++) {
        FnDecl *f = c->prog->fns.items[i];
        for (int k = 0; k < f->nrow; k++) {
            EffectRef *r = &f->row[k];
            if (!r->decl) continue;
            if (r->nargs != r->decl->nparams) {
                error(c, r->pos, "effect `%s` takes %d type argument%s, got %d", r->name,
                      r->decl->nparams, r->decl->nparams == 1 ? "" : "s", r->nargs);
                r->decl = NULL;
            }
        }
    }
}

/* The type of operation `opi` of effect `ed` instantiated with `inst`. */
Type *op_type(Checker *c, EffectDecl *ed, int opi, Type **inst) {
    return inst_decl(c, ed->pvars, ed->nparams, inst, ed->ops[opi].type);
}

Type **fresh_inst(Checker *c, int n) {
    Type **v = arena_alloc(c->a, sizeof(Type *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) v[i] = ty_var(c->tc);
    return v;
}
