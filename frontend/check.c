/* check.c — see check.h. */
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Deferred constraints:
 *   C_ARITH   a op b = res (checked arithmetic, string `+`, list and map `+`)
 *   C_NEG     -a = res
 *   C_CMP     a op b (comparison)
 *   C_SHOW    a is printable (§8) / C_ASSERTABLE: and has a test rendering (§13.1)
 *   C_INDEX   a[b] = res (list, map, string)
 *   C_SIZED   a is a string, list or map (length, isEmpty)
 *   C_FIELD   a.name = res (a record)
 *   C_SENDABLE a may cross a channel (not a Result)
 */
typedef enum CKind { C_ARITH, C_NEG, C_CMP, C_SHOW, C_INDEX, C_SIZED, C_FIELD, C_SENDABLE } CKind;

struct Constraint {
    CKind kind;
    BinOp op;
    Type *a, *b, *res;
    Pos pos;
    const char *via;  /* instantiated from the scheme of this function */
    const char *name; /* C_FIELD: the field; C_SIZED: the built-in */
    int level;
    bool dead;
};

typedef struct Checker {
    Arena *a;
    Diags *d;
    Program *prog;
    TypeCtx *tc;
    PtrVec pending; /* Constraint* */
    int errors;
    PtrVec *sccs; /* per SCC id: FnDecl* members */
    int nsccs;
    FnDecl *cur_fn;
    /* type parameters in scope for annotations: names[i] stands for types[i] */
    const char **tnames;
    Type **ttypes;
    int ntenv;
    PtrVec handles; /* Expr* E_HANDLE whose body is being checked (innermost last) */
} Checker;

static void error(Checker *c, Pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error(Checker *c, Pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(c->d, pos, fmt, ap);
    va_end(ap);
    c->errors++;
}

static char *show(Checker *c, Type *t) {
    return ty_show(c->a, t);
}

static void poison(Checker *c, Type *t) {
    t = ty_find(t);
    if (t->kind == TY_VAR && !t->generic) t->link = c->tc->t_poison;
}

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
static Type *inst_field(Checker *c, Type *t, const char *name, int *slot);
static bool is_record_type(Type *t);

static void unify_result(Checker *c, Constraint *k, Type *t) {
    if (!ty_unify(c->tc, k->res, t))
        error(c, k->pos, "%sthis `%s` produces `%s`, but it is used as `%s`", via_prefix(c, k),
              k->kind == C_NEG ? "-" : binop_spelling(k->op), show(c, t), show(c, k->res));
}

/* Returns true when the constraint is settled (satisfied or reported). */
static bool try_solve(Checker *c, Constraint *k) {
    TypeCtx *tc = c->tc;
    bool ra = false, rb = false, bad = false;
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
            if (!ty_unify(tc, k->a, k->b)) {
                error(c, k->pos, "%scannot concatenate `%s` and `%s`", via_prefix(c, k),
                      show(c, k->a), show(c, k->b));
                poison(c, k->res);
                return true;
            }
            unify_result(c, k, k->a);
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
            else
                error(c, k->pos, "%s`%s` has no fields (`.%s` needs a record)", via_prefix(c, k),
                      show(c, t), k->name);
            poison(c, k->res);
            return true;
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
    }
    return true;
}

static Constraint *add_constraint_named(Checker *c, CKind kind, BinOp op, Type *a, Type *b,
                                        Type *res, Pos pos, const char *via, const char *name) {
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

static Constraint *add_constraint(Checker *c, CKind kind, BinOp op, Type *a, Type *b, Type *res,
                                  Pos pos, const char *via) {
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
static void solve_forced(Checker *c, int min_level) {
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

static void collect_vars(Type *t, int min_level, PtrVec *out, Arena *a, int depth) {
    t = ty_find(t);
    if (depth > 200) return;
    if (t->kind == TY_VAR) {
        if (t->generic || t->level <= min_level) return;
        for (int i = 0; i < out->len; i++)
            if (out->items[i] == t) return;
        vec_push(a, out, t);
        return;
    }
    for (int i = 0; i < t->nargs; i++) collect_vars(t->args[i], min_level, out, a, depth + 1);
    if (t->ret) collect_vars(t->ret, min_level, out, a, depth + 1);
}

static bool mentions(Type *t, PtrVec *vars, int depth) {
    t = ty_find(t);
    if (depth > 200) return false;
    if (t->kind == TY_VAR) {
        for (int i = 0; i < vars->len; i++)
            if (vars->items[i] == t) return true;
        return false;
    }
    for (int i = 0; i < t->nargs; i++)
        if (mentions(t->args[i], vars, depth + 1)) return true;
    return t->ret && mentions(t->ret, vars, depth + 1);
}

static bool cons_mentions(Constraint *k, PtrVec *vars) {
    return mentions(k->a, vars, 0) || (k->b && mentions(k->b, vars, 0)) ||
           (k->res && mentions(k->res, vars, 0));
}

static void generalise(Checker *c, PtrVec *members, int outer) {
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

typedef struct InstMap {
    Type **from, **to;
    int n;
} InstMap;

static Type *inst_type(Checker *c, Type *t, InstMap *m, int depth) {
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

static void check_scc(Checker *c, int id);

static void ensure_checked(Checker *c, FnDecl *f) {
    if (f->check_state == 0) check_scc(c, f->scc);
}

/* ---- annotations and declared types ---- */

static TypeDecl *find_tdecl(Checker *c, const char *name) {
    for (int i = 0; i < c->prog->tdecls.len; i++) {
        TypeDecl *td = c->prog->tdecls.items[i];
        if (strcmp(td->name, name) == 0) return td;
    }
    return NULL;
}

static const char *decl_name(void *decl) {
    return ((TypeDecl *)decl)->name;
}

static bool is_record_type(Type *t) {
    t = ty_find(t);
    return t->kind == TY_RECORD ||
           (t->kind == TY_NAMED && ((TypeDecl *)t->decl)->kind == TD_RECORD);
}

/* Substitute a declaration's parameter variables by `args`. */
static Type *inst_decl(Checker *c, Type **pvars, int n, Type **args, Type *t) {
    if (n == 0) return t;
    InstMap m = {.from = pvars, .to = args, .n = n};
    return inst_type(c, t, &m, 0);
}

static Type *inst_field(Checker *c, Type *t, const char *name, int *slot) {
    t = ty_find(t);
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
static Type *fresh_named(Checker *c, TypeDecl *td) {
    Type **args = arena_alloc(c->a, sizeof(Type *) * (size_t)(td->nparams + 1));
    for (int i = 0; i < td->nparams; i++) args[i] = ty_var(c->tc);
    Type *t = ty_con(c->tc, TY_NAMED, td->nparams, args);
    t->decl = td;
    return t;
}

static Type *convert_type(Checker *c, TypeExpr *te);
static void prepare_alias(Checker *c, TypeDecl *td);

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* An anonymous record type: fields sorted by name. */
static Type *make_anon_record(Checker *c, int n, const char **names, Type **types, int *slots) {
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

static Type *convert_type(Checker *c, TypeExpr *te) {
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
        {"Channel", 1, TY_CHANNEL}, {"Ptr", 0, TY_PTR},
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
        error(c, te->pos, "not supported yet: type `any` (Tier 3)");
        return tc->t_poison;
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
    if (td->state == 2) return;
    if (td->state == 1) {
        error(c, td->pos, "type alias `%s` refers to itself", td->name);
        td->alias_type = NULL;
        td->state = 2;
        return;
    }
    td->state = 1;
    if (!td->pvars) td->pvars = generic_vars(c, td->nparams);
    Type *t = convert_in(c, td->alias, td->params, td->pvars, td->nparams);
    if (td->state == 1) {
        td->alias_type = t;
        td->state = 2;
    }
}

/* Parameter variables and field types of every declared type; operation types of every
 * declared effect. */
static void prepare_decls(Checker *c) {
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
static Type *op_type(Checker *c, EffectDecl *ed, int opi, Type **inst) {
    return inst_decl(c, ed->pvars, ed->nparams, inst, ed->ops[opi].type);
}

static Type **fresh_inst(Checker *c, int n) {
    Type **v = arena_alloc(c->a, sizeof(Type *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) v[i] = ty_var(c->tc);
    return v;
}

/* ---- expressions ---- */

static Type *check_expr(Checker *c, Expr *e);
static void check_stmt(Checker *c, Stmt *s, Type **value);

static bool expect_type(Checker *c, Expr *e, Type *actual, Type *expected, const char *what) {
    if (ty_unify(c->tc, actual, expected)) return true;
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

/* ---- built-in signatures: a small notation ----
 *   i int  f float  b bool  s string  u Unit  P Ptr  H HttpResponse  a/c type variables
 *   L<x> List  M<x> Map<string, x>  C<x> Channel  F<x> Fiber  E<x> Result<x, Error>
 *   N<x> Result<x, MathError>  (x>y) function      "params>ret", params separated by ',' */
typedef struct SigParse {
    const char *p;
    Type *vars[2];
} SigParse;

/* The named type of a record the language declares (frontend/builtin_types.c). */
static Type *builtin_record(Checker *c, const char *name) {
    TypeDecl *td = find_tdecl(c, name);
    return td && td->builtin ? fresh_named(c, td) : c->tc->t_poison;
}

static Type *sig_type(Checker *c, SigParse *sp) {
    TypeCtx *tc = c->tc;
    char ch = *sp->p++;
    switch (ch) {
    case 'i': return tc->t_int;
    case 'f': return tc->t_float;
    case 'b': return tc->t_bool;
    case 's': return tc->t_string;
    case 'u': return tc->t_unit;
    case 'P': return tc->t_ptr;
    case 'H': return builtin_record(c, "HttpResponse");
    case 'a':
    case 'c': {
        int k = ch == 'a' ? 0 : 1;
        if (!sp->vars[k]) sp->vars[k] = ty_var(tc);
        return sp->vars[k];
    }
    case 'L': return ty_con1(tc, TY_LIST, sig_type(c, sp));
    case 'C': return ty_con1(tc, TY_CHANNEL, sig_type(c, sp));
    case 'F': return ty_con1(tc, TY_FIBER, sig_type(c, sp));
    case 'M': {
        Type *args[2] = {tc->t_string, sig_type(c, sp)};
        return ty_con(tc, TY_MAP, 2, args);
    }
    case 'E': return ty_result(tc, sig_type(c, sp), tc->t_errort);
    case 'N': return ty_result(tc, sig_type(c, sp), tc->t_matherror);
    case '(': {
        Type *ps[4];
        int n = 0;
        while (*sp->p != '>') {
            ps[n++] = sig_type(c, sp);
            if (*sp->p == ',') sp->p++;
        }
        sp->p++;
        Type *ret = sig_type(c, sp);
        sp->p++; /* ')' */
        return ty_fn(tc, n, ps, ret);
    }
    default: return tc->t_poison;
    }
}

/* The checker's signature of `b` in the notation above (builtins.def's TYPE column), or NULL
 * when the call is typed by hand in check_builtin_call. */
static const char *builtin_sig(Builtin b) {
    return builtin_info(b)->type;
}

/* The function type of a table-driven built-in (fresh variables). */
static Type *builtin_type(Checker *c, Builtin b) {
    const char *sig = builtin_sig(b);
    if (!sig) return NULL;
    SigParse sp = {.p = sig};
    Type *ps[4];
    int n = 0;
    while (*sp.p != '>') {
        ps[n++] = sig_type(c, &sp);
        if (*sp.p == ',') sp.p++;
    }
    sp.p++;
    return ty_fn(c->tc, n, ps, sig_type(c, &sp));
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
        if (f->check_state == 1 || f->nqvars == 0) return f->type ? f->type : tc->t_poison;
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
            add_constraint_named(c, k->kind, k->op, inst_type(c, k->a, &m, 0),
                                 k->b ? inst_type(c, k->b, &m, 0) : NULL,
                                 k->res ? inst_type(c, k->res, &m, 0) : NULL, e->pos, f->name,
                                 k->name);
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

static int builtin_arity(Builtin b) {
    return builtin_info(b)->arity;
}

static Type *check_list_of_bools(Checker *c, Expr *list, const char *fname) {
    if (list->kind != E_LIST) {
        check_expr(c, list);
        error(c, list->pos, "`%s` takes a list literal of assertions, e.g. `[a == 1, b]`", fname);
        return c->tc->t_poison;
    }
    if (list->u.list.n == 0)
        error(c, list->pos, "`%s` needs at least one assertion in its list", fname);
    for (int i = 0; i < list->u.list.n; i++) {
        Expr *el = list->u.list.elems[i];
        expect_type(c, el, check_expr(c, el), c->tc->t_bool, "this assertion");
    }
    list->type = c->tc->t_unit;
    return c->tc->t_unit;
}

/* Arguments against a function type: count and each type. */
/* `who` names the callee for messages, quoted already ("`f`", or "the called function"). */
static Type *apply_fn_type(Checker *c, Expr *e, Type *ft, Type **at, const char *who) {
    int n = e->u.call.nargs;
    if (ft->nargs != n) {
        error(c, e->pos, "%s expects %d argument%s, got %d", who, ft->nargs,
              ft->nargs == 1 ? "" : "s", n);
        return ft->ret;
    }
    for (int i = 0; i < n; i++) {
        if (!ty_unify(c->tc, ft->args[i], at[i]))
            error(c, e->u.call.args[i]->pos, "argument %d of %s has type `%s`, expected `%s`",
                  i + 1, who, show(c, at[i]), show(c, ft->args[i]));
    }
    return ft->ret;
}

/* docs/spec/language.md §9.7: the handler of `httpListen` names a top-level function. */
static void check_http_handler(Checker *c, Expr *cb) {
    if (!(cb->kind == E_IDENT && cb->u.ident.sym && cb->u.ident.sym->kind == SYM_FN &&
          !cb->u.ident.sym->fn->is_extern))
        error(c, cb->pos,
              "the handler of `httpListen` must name a top-level function of type "
              "`(string, string, string, string) -> HttpResponse`");
}

static Type *check_builtin_call(Checker *c, Expr *e, Builtin b) {
    TypeCtx *tc = c->tc;
    Expr **args = e->u.call.args;
    int n = e->u.call.nargs;
    e->u.call.callee->type = tc->t_poison;
    /* docs/spec/language.md §5.3: names given to a built-in are not checked; the arguments
     * bind by position in the order written (and are evaluated in that order) */
    e->u.call.names = NULL;
    e->u.call.name_pos = NULL;
    Type *sigt = builtin_type(c, b);
    if (b == B_SPAWN_PROCESS && n == 2) {
        /* docs/spec/language.md §9.6: the callback names a top-level function */
        Expr *cb = args[1];
        if (!(cb->kind == E_IDENT && cb->u.ident.sym && cb->u.ident.sym->kind == SYM_FN &&
              !cb->u.ident.sym->fn->is_extern))
            error(c, cb->pos,
                  "the callback of `spawnProcess` must name a top-level function of type "
                  "`(int, int, string) -> Unit`");
    }
    if (b == B_HTTP_LISTEN && n == 2) check_http_handler(c, args[1]);
    if (sigt) {
        Type **at = arena_alloc(c->a, sizeof(Type *) * (size_t)(n + 1));
        for (int i = 0; i < n; i++) at[i] = check_expr(c, args[i]);
        if (sigt->nargs != n) {
            error(c, e->pos, "`%s` expects %d argument%s, got %d", builtin_name(b), sigt->nargs,
                  sigt->nargs == 1 ? "" : "s", n);
            return sigt->ret;
        }
        for (int i = 0; i < n; i++) {
            if (ty_unify(tc, sigt->args[i], at[i])) continue;
            if (b == B_FOREACH_LIST && i == 1)
                error(c, args[i]->pos, "the callback of `forEachList` has type `%s`, expected `%s`",
                      show(c, at[i]), show(c, sigt->args[i]));
            else
                error(c, args[i]->pos, "argument %d of `%s` has type `%s`, expected `%s`", i + 1,
                      builtin_name(b), show(c, at[i]), show(c, sigt->args[i]));
        }
        return sigt->ret;
    }
    int want = builtin_arity(b);
    if (n != want) {
        error(c, e->pos, "`%s` expects %d argument%s, got %d", builtin_name(b), want,
              want == 1 ? "" : "s", n);
        for (int i = 0; i < n; i++) check_expr(c, args[i]);
        return tc->t_poison;
    }
    if (b == B_EXPECT_ALL) return check_list_of_bools(c, args[0], "expectAll");
    if (b == B_CHECK_ALL) {
        expect_type(c, args[0], check_expr(c, args[0]), tc->t_string, "the label");
        return check_list_of_bools(c, args[1], "checkAll");
    }
    Type *t[3];
    for (int i = 0; i < n; i++) t[i] = check_expr(c, args[i]);
    switch (b) {
    case B_PRINT:
    case B_TOSTRING:
        add_constraint(c, C_SHOW, OP_ADD, t[0], NULL, NULL, args[0]->pos, NULL);
        return b == B_PRINT ? tc->t_unit : tc->t_string;
    case B_LENGTH:
    case B_IS_EMPTY:
        add_constraint_named(c, C_SIZED, OP_ADD, t[0], NULL, NULL, args[0]->pos, NULL,
                             builtin_name(b));
        return b == B_LENGTH ? tc->t_int : tc->t_bool;
    case B_FIBER_DONE: {
        /* a fiber handle, or any id (an unknown id gives -1) */
        Type *a = ty_find(t[0]);
        if (a->kind == TY_VAR && !a->rigid) ty_unify(tc, a, ty_con1(tc, TY_FIBER, ty_var(tc)));
        a = ty_find(t[0]);
        if (a->kind != TY_FIBER && a->kind != TY_CHANNEL && a->kind != TY_INT &&
            a->kind != TY_POISON)
            error(c, args[0]->pos, "`fiberDone` needs a Fiber (or an id), found `%s`", show(c, a));
        return tc->t_int;
    }
    case B_RANGE:
        expect_type(c, args[0], t[0], tc->t_int, "the start of `range`");
        expect_type(c, args[1], t[1], tc->t_int, "the end of `range`");
        return ty_con1(tc, TY_ITER, tc->t_int);
    case B_MAP:
    case B_FILTER:
    case B_FOREACH:
    case B_FOLD: {
        Type *elem = ty_var(tc);
        if (!ty_unify(tc, t[0], ty_con1(tc, TY_ITER, elem))) {
            error(c, args[0]->pos,
                  "`%s` needs an Iterator (from `range`) as its first argument, found `%s`%s",
                  builtin_name(b), show(c, t[0]),
                  ty_find(t[0])->kind == TY_LIST ? " (lists use `forEachList` or recursion)" : "");
            return tc->t_poison;
        }
        Type *cb = b == B_FOLD ? t[2] : t[1];
        Expr *cbe = b == B_FOLD ? args[2] : args[1];
        Type *out = ty_var(tc);
        Type *want_t;
        if (b == B_FOLD) {
            Type *ps[2] = {t[1], elem};
            want_t = ty_fn(tc, 2, ps, t[1]);
        } else {
            want_t = ty_fn(tc, 1, &elem, b == B_FILTER ? tc->t_bool : out);
        }
        if (!ty_unify(tc, cb, want_t))
            error(c, cbe->pos, "the callback of `%s` has type `%s`, expected `%s`", builtin_name(b),
                  show(c, cb), show(c, want_t));
        switch (b) {
        case B_MAP: return ty_con1(tc, TY_ITER, out);
        case B_FILTER: return ty_con1(tc, TY_ITER, elem);
        case B_FOREACH: return tc->t_unit;
        default: return t[1];
        }
    }
    case B_TEST: {
        expect_type(c, args[0], t[0], tc->t_string, "the test name");
        Type *body = ty_fn(tc, 0, NULL, ty_var(tc));
        if (!ty_unify(tc, t[1], body))
            error(c, args[1]->pos,
                  "the body of `test` must be a function with no parameters, found `%s`",
                  show(c, t[1]));
        return tc->t_unit;
    }
    case B_EXPECT:
        add_constraint(c, C_SHOW, OP_ADD, t[0], NULL, NULL, args[0]->pos, NULL);
        add_constraint(c, C_SHOW, OP_ADD, t[1], NULL, NULL, args[1]->pos, NULL);
        return tc->t_unit;
    case B_CHECK:
        expect_type(c, args[0], t[0], tc->t_string, "the label");
        add_constraint(c, C_SHOW, OP_ADD, t[1], NULL, NULL, args[1]->pos, NULL);
        add_constraint(c, C_SHOW, OP_ADD, t[2], NULL, NULL, args[2]->pos, NULL);
        return tc->t_unit;
    case B_EXPECT_TRUE:
    case B_EXPECT_FALSE:
        expect_type(c, args[0], t[0], tc->t_bool, "the assertion");
        return tc->t_unit;
    case B_CHECK_TRUE:
    case B_CHECK_FALSE:
        expect_type(c, args[0], t[0], tc->t_string, "the label");
        expect_type(c, args[1], t[1], tc->t_bool, "the assertion");
        return tc->t_unit;
    default: return tc->t_poison;
    }
}

/* Put named arguments in declaration order (docs/spec/language.md §5.2: before evaluation). */
static bool reorder_named(Checker *c, Expr *e, const char **pnames, int np, const char *fname) {
    const char **names = e->u.call.names;
    Pos *npos = e->u.call.name_pos;
    int n = e->u.call.nargs;
    Expr **out = arena_alloc(c->a, sizeof(Expr *) * (size_t)(np + 1));
    bool ok = true;
    for (int i = 0; i < n; i++) {
        int j = -1;
        if (names[i] == NULL) {
            j = 0; /* the piped value fills the first parameter */
        } else {
            for (int k = 0; k < np; k++)
                if (pnames[k] && strcmp(pnames[k], names[i]) == 0) j = k;
            if (j < 0) {
                error(c, npos[i], "`%s` has no parameter named `%s`", fname, names[i]);
                ok = false;
                continue;
            }
        }
        if (out[j]) {
            error(c, npos[i], "parameter `%s` of `%s` is given twice", pnames[j] ? pnames[j] : "_",
                  fname);
            ok = false;
            continue;
        }
        out[j] = e->u.call.args[i];
    }
    for (int k = 0; k < np && ok; k++)
        if (!out[k]) {
            error(c, e->pos, "missing argument `%s` in the call to `%s`",
                  pnames[k] ? pnames[k] : "_", fname);
            ok = false;
        }
    if (!ok) {
        for (int i = 0; i < n; i++) check_expr(c, e->u.call.args[i]);
        return false;
    }
    e->u.call.args = out;
    e->u.call.nargs = np;
    e->u.call.names = NULL;
    return true;
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
    for (int i = 0; i < n; i++) at[i] = check_expr(c, e->u.call.args[i]);
    const char *fname = callee->kind == E_IDENT   ? callee->u.ident.name
                        : callee->kind == E_FIELD ? callee->u.field.name
                                                  : NULL;
    const char *who = fname ? arena_printf(c->a, "`%s`", fname) : "the called function";
    if (ft->kind == TY_POISON) return tc->t_poison;
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

/* The declared record types with a field of every name in `names`. */
static TypeDecl *unique_record_with(Checker *c, const char **names, int n, int *count) {
    TypeDecl *found = NULL;
    *count = 0;
    for (int i = 0; i < c->prog->tdecls.len; i++) {
        TypeDecl *td = c->prog->tdecls.items[i];
        if (td->kind != TD_RECORD) continue;
        bool all = true;
        for (int k = 0; k < n && all; k++) {
            bool has = false;
            for (int f = 0; f < td->nfields; f++)
                if (strcmp(td->fields[f], names[k]) == 0) has = true;
            all = has;
        }
        if (all) {
            found = td;
            (*count)++;
        }
    }
    return found;
}

static Type *check_field(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Type *t = ty_find(check_expr(c, e->u.field.e));
    const char *name = e->u.field.name;
    if (t->kind == TY_POISON) return tc->t_poison;
    if (t->kind == TY_VAR && !t->rigid) {
        int count;
        TypeDecl *td = unique_record_with(c, &name, 1, &count);
        if (count == 1) {
            ty_unify(tc, t, fresh_named(c, td));
            t = ty_find(t);
        } else {
            Type *res = ty_var(tc);
            add_constraint_named(c, C_FIELD, OP_ADD, t, NULL, res, e->u.field.npos, NULL, name);
            return res;
        }
    }
    int slot;
    Type *ft = inst_field(c, t, name, &slot);
    if (!ft) {
        if (is_record_type(t))
            error(c, e->u.field.npos, "record type `%s` has no field `%s`", show(c, t), name);
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
        int count;
        TypeDecl *td = unique_record_with(c, &name, 1, &count);
        if (count == 1) {
            ty_unify(tc, rt, fresh_named(c, td));
            field = true;
        }
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
        if (!ty_unify(tc, ft, vt))
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
        const char **names = arena_alloc(c->a, sizeof(char *) * (size_t)(n + 1));
        for (int i = 0; i < n; i++) names[i] = fs[i].name;
        int count;
        TypeDecl *td = unique_record_with(c, names, n, &count);
        if (count == 1) {
            ty_unify(tc, t, fresh_named(c, td));
            t = ty_find(t);
        } else {
            error(c, e->pos,
                  "cannot tell which record type is updated here; annotate the value's type");
            for (int i = 0; i < n; i++) check_expr(c, fs[i].value);
            return tc->t_poison;
        }
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
        if (!ty_unify(tc, ft, vt))
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
        if (!ty_unify(tc, ft->args[i], at[i]))
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

/* ---- patterns ---- */

static bool irrefutable(Pattern *p) {
    return p->kind == PAT_WILD || p->kind == PAT_BIND;
}

/* The variant that the annotation of a typed pattern `p: T` names, if T is a plain name of a
 * variant of the scrutinee's union (a scrutinee still unknown is unified with that union);
 * NULL when T is meant as a type. */
static Variant *typed_pattern_variant(Checker *c, TypeExpr *te, Type *st) {
    if (te->kind != TE_NAME || te->nargs != 0) return NULL;
    Type *s = ty_find(st);
    if (s->kind == TY_NAMED) {
        TypeDecl *td = s->decl;
        if (td->kind != TD_UNION || strcmp(td->name, te->name) == 0) return NULL;
        for (int k = 0; k < td->nvariants; k++)
            if (strcmp(td->variants[k]->name, te->name) == 0) return td->variants[k];
        return NULL;
    }
    if (s->kind != TY_VAR || s->rigid || find_tdecl(c, te->name)) return NULL;
    for (int i = 0; i < c->prog->tdecls.len; i++) {
        TypeDecl *td = c->prog->tdecls.items[i];
        if (td->kind != TD_UNION) continue;
        for (int k = 0; k < td->nvariants; k++)
            if (strcmp(td->variants[k]->name, te->name) == 0) {
                ty_unify(c->tc, s, fresh_named(c, td));
                return td->variants[k];
            }
    }
    return NULL;
}

/* Check pattern `p` against a value of type `st`, typing its binders. */
static void check_pattern(Checker *c, Pattern *p, Type *st) {
    TypeCtx *tc = c->tc;
    Type *pt = NULL;
    const char *pdesc = NULL;
    switch (p->kind) {
    case PAT_WILD:
    case PAT_UNSUPPORTED: return;
    case PAT_BIND:
        if (p->annot) {
            /* docs/spec/language.md §7: `p: T` binds the whole value; T is the value's type or
             * one of its union's variants (then the arm tests for that variant) */
            Variant *v = typed_pattern_variant(c, p->annot, st);
            if (v) {
                if (p->sym) p->sym->type = st;
                if (v->decl->nvariants > 1) {
                    p->kind = PAT_CTOR;
                    p->variant = v;
                    p->typed = true;
                }
                return;
            }
            Type *at = convert_type(c, p->annot);
            if (!ty_unify(tc, st, at))
                error(c, p->pos, "the pattern's type `%s` does not match the value's type `%s`",
                      show(c, at), show(c, st));
        }
        if (p->sym) p->sym->type = st;
        return;
    case PAT_INT:
        pt = tc->t_int;
        pdesc = "an integer pattern";
        break;
    case PAT_FLOAT:
        pt = tc->t_float;
        pdesc = "a float pattern";
        break;
    case PAT_STRING:
        pt = tc->t_string;
        pdesc = "a string pattern";
        break;
    case PAT_BOOL:
        pt = tc->t_bool;
        pdesc = "a bool pattern";
        break;
    case PAT_SUCCESS:
    case PAT_ERROR: {
        Type *s = ty_find(st);
        if (p->bare && s->kind == TY_NAMED && ((TypeDecl *)s->decl)->kind == TD_UNION) {
            /* docs/spec/language.md §3.3: a bare `Success`/`Error` over a union that declares
             * that nullary variant is the user's variant */
            TypeDecl *td = s->decl;
            for (int k = 0; k < td->nvariants; k++)
                if (strcmp(td->variants[k]->name, p->kind == PAT_SUCCESS ? "Success" : "Error") ==
                    0) {
                    p->kind = PAT_CTOR;
                    p->variant = td->variants[k];
                    return;
                }
        }
        if (s->kind == TY_VAR && !s->rigid) {
            Type *err = ty_var(tc);
            err->hint = HINT_ERROR;
            ty_unify(tc, s, ty_result(tc, ty_var(tc), err));
            s = ty_find(st);
        }
        Type *bt;
        if (s->kind == TY_RESULT)
            bt = p->kind == PAT_SUCCESS ? s->args[0] : tc->t_string;
        else if (s->kind == TY_POISON)
            bt = tc->t_poison;
        else
            bt = p->kind == PAT_SUCCESS ? s : tc->t_string; /* a non-Result is treated as Success */
        if (p->sym) p->sym->type = bt;
        return;
    }
    case PAT_CTOR: {
        Variant *v = p->variant;
        TypeDecl *td = v->decl;
        Type *s = ty_find(st);
        if (s->kind == TY_VAR && !s->rigid) {
            ty_unify(tc, s, fresh_named(c, td));
            s = ty_find(st);
        }
        if (s->kind == TY_POISON) {
            for (int i = 0; i < p->nsubs; i++) check_pattern(c, p->subs[i], tc->t_poison);
            return;
        }
        if (s->kind != TY_NAMED || s->decl != td) {
            error(c, p->pos, "constructor `%s` (of type `%s`) cannot match a value of type `%s`",
                  v->name, td->name, show(c, st));
            for (int i = 0; i < p->nsubs; i++) check_pattern(c, p->subs[i], tc->t_poison);
            return;
        }
        if (!p->has_args) return;
        p->slots = arena_alloc(c->a, sizeof(int) * (size_t)(p->nsubs + 1));
        if (p->named) {
            if (!v->named && v->nfields > 0) {
                error(c, p->pos,
                      "constructor `%s` has a positional payload; match it with `%s(...)`", v->name,
                      v->name);
                return;
            }
            for (int i = 0; i < p->nsubs; i++) {
                int k = -1;
                for (int f = 0; f < v->nfields; f++)
                    if (strcmp(v->fields[f], p->fields[i]) == 0) k = f;
                if (k < 0) {
                    error(c, p->field_pos[i], "constructor `%s` has no field `%s`", v->name,
                          p->fields[i]);
                    check_pattern(c, p->subs[i], tc->t_poison);
                    continue;
                }
                p->slots[i] = k;
                check_pattern(c, p->subs[i],
                              inst_decl(c, td->pvars, td->nparams, s->args, v->types[k]));
            }
            return;
        }
        if (p->nsubs != v->nfields) {
            error(c, p->pos, "constructor `%s` has %d payload value%s, but the pattern has %d",
                  v->name, v->nfields, v->nfields == 1 ? "" : "s", p->nsubs);
            for (int i = 0; i < p->nsubs; i++) check_pattern(c, p->subs[i], tc->t_poison);
            return;
        }
        for (int i = 0; i < p->nsubs; i++) {
            p->slots[i] = i;
            check_pattern(c, p->subs[i],
                          inst_decl(c, td->pvars, td->nparams, s->args, v->types[i]));
        }
        return;
    }
    case PAT_LIST: {
        Type *elem = ty_var(tc);
        Type *lt = ty_con1(tc, TY_LIST, elem);
        if (!ty_unify(tc, st, lt)) {
            error(c, p->pos, "a list pattern cannot match a value of type `%s`", show(c, st));
            elem = tc->t_poison;
            lt = tc->t_poison;
        }
        for (int i = 0; i < p->nsubs; i++) check_pattern(c, p->subs[i], elem);
        if (p->rest_sym) p->rest_sym->type = lt;
        return;
    }
    }
    if (pt && !ty_unify(tc, st, pt))
        error(c, p->pos, "%s cannot match a value of type `%s`", pdesc, show(c, st));
}

static Type *check_match(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Type *st = check_expr(c, e->u.match.scrut);
    Type *result = ty_var(tc);
    bool catchall = false, seen_true = false, seen_false = false, seen_ok = false, seen_err = false;
    bool catchall_typed = false;
    bool result_set = false;
    TypeDecl *covered_decl = NULL;
    bool *covered = NULL;
    bool poisoned = false;
    for (int i = 0; i < e->u.match.narms; i++) {
        MatchArm *arm = &e->u.match.arms[i];
        Pattern *p = arm->pat;
        if (catchall_typed && !catchall)
            diag_warning(c->d, p->pos, "unreachable match arm");
        else if (catchall)
            error(c, p->pos, "unreachable arm: an earlier arm already matches every value");
        check_pattern(c, p, st);
        switch (p->kind) {
        case PAT_WILD: catchall = true; break;
        case PAT_BIND:
            /* §7: after a typed catch-all `p: T` a later arm is only a warning */
            if (p->annot)
                catchall_typed = true;
            else
                catchall = true;
            break;
        case PAT_BOOL:
            if (p->bval)
                seen_true = true;
            else
                seen_false = true;
            break;
        case PAT_SUCCESS:
        case PAT_ERROR: {
            Type *s = ty_find(st);
            if (s->kind == TY_RESULT) {
                if (p->kind == PAT_SUCCESS)
                    seen_ok = true;
                else
                    seen_err = true;
            } else if (s->kind == TY_POISON) {
                seen_ok = seen_err = true;
            } else if (p->kind == PAT_SUCCESS) {
                if (!p->sym) catchall = true;
                seen_ok = seen_err = true;
            }
            break;
        }
        case PAT_CTOR: {
            bool full = true;
            for (int k = 0; k < p->nsubs; k++)
                if (!irrefutable(p->subs[k])) full = false;
            if (full && p->variant) {
                TypeDecl *td = p->variant->decl;
                if (!covered) {
                    covered_decl = td;
                    covered = arena_alloc(c->a, sizeof(bool) * (size_t)(td->nvariants + 1));
                }
                if (td == covered_decl) covered[p->variant->tag] = true;
            }
            break;
        }
        case PAT_UNSUPPORTED:
            poisoned = true; /* already reported: no exhaustiveness or reachability follow-ups */
            break;
        default: break;
        }
        Type *bt = check_expr(c, arm->body);
        if (!result_set) {
            ty_unify(tc, result, bt);
            result_set = true;
        } else if (!ty_unify(tc, result, bt)) {
            error(c, arm->body->pos, "this arm has type `%s`, but the earlier arms have type `%s`",
                  show(c, bt), show(c, result));
        }
    }
    if (!catchall && !catchall_typed && !poisoned) {
        Type *s = ty_find(st);
        if (s->kind == TY_BOOL) {
            if (!seen_true || !seen_false)
                error(
                    c, e->pos,
                    "this `match` on `bool` does not cover `%s` (add that arm or a catch-all `_`)",
                    seen_true ? "false" : "true");
        } else if (s->kind == TY_RESULT) {
            if (!seen_ok || !seen_err)
                error(c, e->pos,
                      "this `match` on a Result does not cover `%s` (add that arm or a catch-all "
                      "`_`)",
                      seen_ok ? "Error" : "Success");
        } else if (s->kind == TY_NAMED && ((TypeDecl *)s->decl)->kind == TD_UNION) {
            TypeDecl *td = s->decl;
            for (int v = 0; v < td->nvariants; v++)
                if (!covered || covered_decl != td || !covered[v]) {
                    error(c, e->pos,
                          "this `match` on `%s` does not cover `%s` (add that arm or a catch-all "
                          "`_`)",
                          td->name, td->variants[v]->name);
                    break;
                }
        } else if (s->kind == TY_POISON || s->kind == TY_LIST || (seen_ok && seen_err)) {
            /* fine: list matches need no catch-all; a non-matching value is a runtime failure */
        } else {
            error(c, e->pos, "a `match` on `%s` needs a catch-all arm (`_` or a binder)",
                  show(c, s));
        }
    }
    return result;
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
        if (e->u.un.op == UOP_PLUS) return t;
        Type *res = ty_var(tc);
        add_constraint(c, C_NEG, OP_SUB, t, NULL, res, e->pos, NULL);
        return res;
    }
    case E_ELVIS: {
        Type *l = check_expr(c, e->u.elvis.l);
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
            if (!ty_unify(tc, rt, bt))
                error(c, e->u.lambda.body->pos,
                      "the lambda is declared to return `%s`, but its body has type `%s`",
                      show(c, rt), show(c, bt));
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
        if (!ty_unify(tc, ct, tc->t_bool))
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

static Type *check_expr(Checker *c, Expr *e) {
    if (e->type) return e->type; /* already checked (a method call's receiver) */
    Type *t = check_expr_inner(c, e);
    e->type = t;
    return t;
}

static void check_stmt(Checker *c, Stmt *s, Type **value) {
    switch (s->kind) {
    case S_LET: {
        Type *t = check_expr(c, s->u.let.init);
        if (s->u.let.annot) {
            Type *at = convert_type(c, s->u.let.annot);
            if (!ty_unify(c->tc, at, t))
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
        if (sym && sym->type && !ty_unify(c->tc, sym->type, t))
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

/* docs/spec/language.md §3.5: an extern's parameters and result are int, float, bool, Ptr,
 * string, Unit (result only) or, for a parameter, a function type over those. */
static bool c_abi_type(Type *t, bool result, bool allow_fn) {
    t = ty_find(t);
    switch (t->kind) {
    case TY_INT:
    case TY_FLOAT:
    case TY_BOOL:
    case TY_PTR:
    case TY_STRING:
    case TY_POISON: return true;
    case TY_UNIT: return result;
    case TY_FN:
        if (!allow_fn) return false;
        for (int i = 0; i < t->nargs; i++)
            if (!c_abi_type(t->args[i], false, false)) return false;
        return c_abi_type(t->ret, true, false);
    default: return false;
    }
}

static void check_extern_signature(Checker *c, FnDecl *f) {
    for (int k = 0; k < f->nparams; k++) {
        Param *p = &f->params[k];
        if (!p->annot) {
            error(c, p->pos,
                  "parameter %d of extern `%s` needs a type (int, float, bool, Ptr, "
                  "string or a function type)",
                  k + 1, f->name);
            continue;
        }
        if (!c_abi_type(f->type->args[k], false, true))
            error(c, p->annot->pos,
                  "extern `%s` cannot take a `%s`: C functions take int, float, bool, Ptr, "
                  "string or a function type over those",
                  f->name, show(c, f->type->args[k]));
    }
    if (f->ret_annot && !c_abi_type(f->type->ret, true, false))
        error(c, f->ret_annot->pos,
              "extern `%s` cannot return a `%s`: C functions return int, float, bool, Ptr, "
              "string or nothing",
              f->name, show(c, f->type->ret));
}

static void check_scc(Checker *c, int id) {
    PtrVec *members = &c->sccs[id];
    TypeCtx *tc = c->tc;
    for (int i = 0; i < members->len; i++) ((FnDecl *)members->items[i])->check_state = 1;
    int outer = tc->level;
    tc->level = outer + 1;
    PtrVec save_handles = c->handles;
    c->handles = (PtrVec){0};
    const char **sn = c->tnames;
    Type **st = c->ttypes;
    int sc = c->ntenv;
    for (int i = 0; i < members->len; i++) {
        FnDecl *f = members->items[i];
        f->tvars = arena_alloc(c->a, sizeof(Type *) * (size_t)(f->ntparams + 1));
        for (int k = 0; k < f->ntparams; k++) f->tvars[k] = ty_rigid(tc, f->tparams[k]);
        c->tnames = f->tparams;
        c->ttypes = f->tvars;
        c->ntenv = f->ntparams;
        Type **ps = arena_alloc(c->a, sizeof(Type *) * (size_t)(f->nparams ? f->nparams : 1));
        for (int k = 0; k < f->nparams; k++) {
            ps[k] = f->params[k].annot ? convert_type(c, f->params[k].annot) : ty_var(tc);
            if (f->params[k].sym) f->params[k].sym->type = ps[k];
        }
        Type *ret = f->ret_annot   ? convert_type(c, f->ret_annot)
                    : f->is_extern ? tc->t_unit /* §3.5: no return type is C `void` */
                                   : ty_var(tc);
        f->type = ty_fn(tc, f->nparams, ps, ret);
        if (f->is_extern) check_extern_signature(c, f);
        for (int k = 0; k < f->nrow; k++) {
            EffectRef *r = &f->row[k];
            if (!r->decl) continue;
            r->types = arena_alloc(c->a, sizeof(Type *) * (size_t)(r->nargs + 1));
            for (int j = 0; j < r->nargs; j++) r->types[j] = convert_type(c, r->args[j]);
        }
    }
    for (int i = 0; i < members->len; i++) {
        FnDecl *f = members->items[i];
        FnDecl *save = c->cur_fn;
        c->cur_fn = f;
        c->tnames = f->tparams;
        c->ttypes = f->tvars;
        c->ntenv = f->ntparams;
        if (f->is_extern) {
            c->cur_fn = save;
            continue;
        }
        Type *bt = check_expr(c, f->body);
        if (!ty_unify(tc, f->type->ret, bt)) {
            error(c, f->body->pos, "`%s` is declared to return `%s`, but its body has type `%s`",
                  f->name, show(c, f->type->ret), show(c, bt));
        }
        c->cur_fn = save;
    }
    c->tnames = sn;
    c->ttypes = st;
    c->ntenv = sc;
    c->handles = save_handles;
    tc->level = outer;
    generalise(c, members, outer);
    for (int i = 0; i < members->len; i++) ((FnDecl *)members->items[i])->check_state = 2;
}

/* ---- strongly connected components (Tarjan) ---- */

typedef struct Tarjan {
    Checker *c;
    int index;
    PtrVec stack;
} Tarjan;

static void tarjan(Tarjan *t, FnDecl *f) {
    f->t_index = f->t_low = ++t->index;
    vec_push(t->c->a, &t->stack, f);
    f->t_onstack = true;
    for (int i = 0; i < f->callees.len; i++) {
        FnDecl *g = f->callees.items[i];
        if (!g->t_index) {
            tarjan(t, g);
            if (g->t_low < f->t_low) f->t_low = g->t_low;
        } else if (g->t_onstack && g->t_index < f->t_low) {
            f->t_low = g->t_index;
        }
    }
    if (f->t_low == f->t_index) {
        int id = t->c->nsccs++;
        FnDecl *g;
        do {
            g = t->stack.items[--t->stack.len];
            g->t_onstack = false;
            g->scc = id;
            vec_push(t->c->a, &t->c->sccs[id], g);
        } while (g != f);
    }
}

/* ---- defaulting, static function values, Iterator restrictions ---- */

static void default_type(Checker *c, Type *t, int depth) {
    if (!t || depth > 200) return;
    t = ty_find(t);
    if (t->kind == TY_VAR) {
        if (!t->generic && !t->rigid)
            ty_unify(c->tc, t, t->hint & HINT_ERROR ? c->tc->t_errort : c->tc->t_int);
        return;
    }
    for (int i = 0; i < t->nargs; i++) default_type(c, t->args[i], depth + 1);
    if (t->ret) default_type(c, t->ret, depth + 1);
}

typedef enum RCtx { R_VALUE, R_ITER_SRC, R_LET } RCtx;

static void restrict_expr(Checker *c, Expr *e, RCtx ctx);

/* A function value known at compile time (called directly, no closure needed). */
static bool is_static_fn(Expr *e) {
    if (e->kind == E_LAMBDA) return e->u.lambda.unit && e->u.lambda.unit->captures.len == 0;
    if (e->kind != E_IDENT || !e->u.ident.sym) return false;
    Sym *s = e->u.ident.sym;
    return s->kind == SYM_FN || s->kind == SYM_BUILTIN ||
           (s->kind == SYM_LOCAL && s->static_kind == STATIC_FN);
}

static bool is_static_iter(Expr *e) {
    if (e->kind == E_CALL) {
        Expr *f = e->u.call.callee;
        if (f->kind == E_IDENT && f->u.ident.sym && f->u.ident.sym->kind == SYM_BUILTIN) {
            Builtin b = f->u.ident.sym->builtin;
            return b == B_RANGE || b == B_MAP || b == B_FILTER;
        }
        return false;
    }
    return e->kind == E_IDENT && e->u.ident.sym && e->u.ident.sym->kind == SYM_LOCAL &&
           e->u.ident.sym->static_kind == STATIC_ITER;
}

static void restrict_stmt(Checker *c, Stmt *s) {
    switch (s->kind) {
    case S_LET: {
        Expr *init = s->u.let.init;
        restrict_expr(c, init, R_LET);
        default_type(c, s->u.let.sym->type, 0);
        Type *t = ty_find(init->type ? init->type : c->tc->t_poison);
        if (!s->u.let.is_mut && t->kind == TY_FN && is_static_fn(init))
            s->u.let.sym->static_kind = STATIC_FN;
        if (t->kind == TY_ITER) s->u.let.sym->static_kind = STATIC_ITER;
        if (s->u.let.is_mut && t->kind == TY_ITER)
            error(c, s->u.let.name_pos, "a `mut` binding cannot hold an Iterator");
        return;
    }
    case S_ASSIGN: restrict_expr(c, s->u.assign.value, R_VALUE); return;
    case S_EXPR: restrict_expr(c, s->u.expr, R_VALUE); return;
    case S_FN:
        default_type(c, s->u.fn->type, 0);
        for (int i = 0; i < s->u.fn->nparams; i++)
            if (s->u.fn->params[i].sym) default_type(c, s->u.fn->params[i].sym->type, 0);
        if (s->u.fn->body) restrict_expr(c, s->u.fn->body, R_VALUE);
        return;
    case S_UNSUPPORTED:
    case S_TYPE:
    case S_EFFECT: return;
    }
}

static void restrict_pattern(Checker *c, Pattern *p) {
    if (p->sym) default_type(c, p->sym->type, 0);
    if (p->rest_sym) default_type(c, p->rest_sym->type, 0);
    for (int i = 0; i < p->nsubs; i++) restrict_pattern(c, p->subs[i]);
}

static void restrict_captures(Checker *c, Unit *u, Pos pos, const char *what) {
    for (int i = 0; u && i < u->captures.len; i++) {
        Sym *s = u->captures.items[i];
        if (s->static_kind == STATIC_ITER)
            error(c, pos,
                  "%s cannot capture the Iterator `%s`; consume the pipeline where it is built",
                  what, s->name);
    }
}

static void restrict_list(Checker *c, Expr **es, int n) {
    for (int i = 0; i < n; i++) restrict_expr(c, es[i], R_VALUE);
}

static void restrict_expr(Checker *c, Expr *e, RCtx ctx) {
    if (!e) return;
    default_type(c, e->type, 0);
    Type *t = e->type ? ty_find(e->type) : c->tc->t_poison;
    if (e->kind == E_IDENT && e->u.ident.inst)
        for (int i = 0; i < e->u.ident.ninst; i++) default_type(c, e->u.ident.inst[i], 0);
    if (t->kind == TY_ITER && e->kind != E_METHOD) {
        bool st = is_static_iter(e);
        if (!st || (ctx != R_ITER_SRC && ctx != R_LET))
            error(c, e->pos,
                  "an Iterator cannot be passed, returned or stored; consume the pipeline with "
                  "`forEach` or `fold` where it is built");
    }
    switch (e->kind) {
    case E_INT:
    case E_FLOAT:
    case E_BOOL:
    case E_STRING: return;
    case E_IDENT: {
        Sym *s = e->u.ident.sym;
        if (s && s->kind == SYM_LOCAL && s->is_global && s->static_kind == STATIC_ITER &&
            ctx != R_LET)
            error(
                c, e->pos,
                "a file-scope Iterator cannot be used inside a function; build the pipeline there");
        return;
    }
    case E_INTERP: restrict_list(c, e->u.interp.parts, e->u.interp.nparts); return;
    case E_CALL: {
        Expr *f = e->u.call.callee;
        restrict_expr(c, f, R_VALUE);
        Builtin b = (f->kind == E_IDENT && f->u.ident.sym && f->u.ident.sym->kind == SYM_BUILTIN)
                        ? f->u.ident.sym->builtin
                        : B_NONE;
        for (int i = 0; i < e->u.call.nargs; i++) {
            RCtx ac = R_VALUE;
            if ((b == B_MAP || b == B_FILTER || b == B_FOREACH || b == B_FOLD) && i == 0)
                ac = R_ITER_SRC;
            Expr *a = e->u.call.args[i];
            if (a->kind == E_LIST && (b == B_EXPECT_ALL || b == B_CHECK_ALL)) {
                restrict_list(c, a->u.list.elems, a->u.list.n);
                continue;
            }
            restrict_expr(c, a, ac);
        }
        return;
    }
    case E_BINARY:
        restrict_expr(c, e->u.bin.l, R_VALUE);
        restrict_expr(c, e->u.bin.r, R_VALUE);
        return;
    case E_UNARY: restrict_expr(c, e->u.un.e, R_VALUE); return;
    case E_ELVIS:
        restrict_expr(c, e->u.elvis.l, R_VALUE);
        restrict_expr(c, e->u.elvis.r, R_VALUE);
        return;
    case E_MATCH:
        restrict_expr(c, e->u.match.scrut, R_VALUE);
        for (int i = 0; i < e->u.match.narms; i++) {
            restrict_pattern(c, e->u.match.arms[i].pat);
            restrict_expr(c, e->u.match.arms[i].body, R_VALUE);
        }
        return;
    case E_BLOCK:
        for (int i = 0; i < e->u.block.nstmts; i++) restrict_stmt(c, e->u.block.stmts[i]);
        return;
    case E_LAMBDA:
        for (int i = 0; i < e->u.lambda.nparams; i++)
            if (e->u.lambda.params[i].sym) default_type(c, e->u.lambda.params[i].sym->type, 0);
        restrict_captures(c, e->u.lambda.unit, e->pos, "a lambda");
        restrict_expr(c, e->u.lambda.body, R_VALUE);
        return;
    case E_SPAWN:
        restrict_captures(c, e->u.spawn.unit, e->pos, "`spawn`");
        restrict_expr(c, e->u.spawn.e, R_VALUE);
        return;
    case E_AWAIT: restrict_expr(c, e->u.await.e, R_VALUE); return;
    case E_YIELD: restrict_expr(c, e->u.yield.e, R_VALUE); return;
    case E_RESULT_CTOR: restrict_expr(c, e->u.ctor.e, R_VALUE); return;
    case E_LIST: restrict_list(c, e->u.list.elems, e->u.list.n); return;
    case E_UNSUPPORTED: restrict_list(c, e->u.unsup.subs, e->u.unsup.nsubs); return;
    case E_IF:
        restrict_expr(c, e->u.if_.cond, R_VALUE);
        restrict_expr(c, e->u.if_.then, R_VALUE);
        restrict_expr(c, e->u.if_.els, R_VALUE);
        return;
    case E_FIELD: restrict_expr(c, e->u.field.e, R_VALUE); return;
    case E_METHOD:
        if (e->u.method.call) restrict_expr(c, e->u.method.call, ctx);
        return;
    case E_RECORD:
        for (int i = 0; i < e->u.record.n; i++)
            restrict_expr(c, e->u.record.fields[i].value, R_VALUE);
        return;
    case E_UPDATE:
        restrict_expr(c, e->u.update.e, R_VALUE);
        for (int i = 0; i < e->u.update.n; i++)
            restrict_expr(c, e->u.update.fields[i].value, R_VALUE);
        return;
    case E_INDEX:
        restrict_expr(c, e->u.index.e, R_VALUE);
        restrict_expr(c, e->u.index.idx, R_VALUE);
        return;
    case E_MAPLIT:
        restrict_list(c, e->u.maplit.keys, e->u.maplit.n);
        restrict_list(c, e->u.maplit.vals, e->u.maplit.n);
        return;
    case E_PERFORM:
        if (e->u.perform.inst && e->u.perform.decl)
            for (int i = 0; i < e->u.perform.decl->nparams; i++)
                default_type(c, e->u.perform.inst[i], 0);
        restrict_list(c, e->u.perform.args, e->u.perform.nargs);
        return;
    case E_HANDLE:
        if (e->u.handle.inst && e->u.handle.decl)
            for (int i = 0; i < e->u.handle.decl->nparams; i++)
                default_type(c, e->u.handle.inst[i], 0);
        restrict_captures(c, e->u.handle.group, e->pos, "a `handle`");
        for (int i = 0; i < e->u.handle.narms; i++) {
            HandleArm *arm = &e->u.handle.arms[i];
            for (int k = 0; k < arm->nbinders; k++)
                if (arm->binders[k].sym) default_type(c, arm->binders[k].sym->type, 0);
            restrict_expr(c, arm->body, R_VALUE);
        }
        restrict_expr(c, e->u.handle.body, R_VALUE);
        return;
    case E_RESUME: restrict_expr(c, e->u.resume.e, R_VALUE); return;
    case E_SEND:
        restrict_expr(c, e->u.send.ch, R_VALUE);
        restrict_expr(c, e->u.send.v, R_VALUE);
        return;
    case E_RECV: restrict_expr(c, e->u.recv.ch, R_VALUE); return;
    }
}

int check_program(Program *prog, Diags *d) {
    Checker C = {.a = prog->arena, .d = d, .prog = prog, .tc = &prog->types};
    Checker *c = &C;
    ty_decl_name = decl_name;
    prepare_decls(c);
    c->sccs = arena_alloc(c->a, sizeof(PtrVec) * (size_t)(prog->fns.len + 1));
    Tarjan T = {.c = c};
    for (int i = 0; i < prog->fns.len; i++) {
        FnDecl *f = prog->fns.items[i];
        if (!f->t_index) tarjan(&T, f);
    }
    /* top-level statements, in order, at level 1 */
    Type *value = c->tc->t_unit;
    for (int i = 0; i < prog->nstmts; i++) {
        Stmt *s = prog->stmts[i];
        if (s->kind == S_FN) continue;
        check_stmt(c, s, &value);
    }
    for (int i = 0; i < prog->fns.len; i++) ensure_checked(c, prog->fns.items[i]);
    solve_forced(c, 0);
    /* defaults, static function values, Iterator restrictions */
    for (int i = 0; i < prog->nstmts; i++) {
        Stmt *s = prog->stmts[i];
        if (s->kind == S_LET) default_type(c, s->u.let.sym->type, 0);
        restrict_stmt(c, s);
    }
    solve_forced(c, 0);
    return c->errors;
}
