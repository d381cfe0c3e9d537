/* check.c — see check.h. */
#include "check.h"

#include <string.h>
#include <strings.h>

typedef enum CKind { C_ARITH, C_NEG, C_CMP, C_SHOW } CKind;

struct Constraint {
    CKind kind;
    BinOp op;
    Type *a, *b, *res;
    Pos pos;
    const char *via;   /* instantiated from the scheme of this function */
    int level;
    bool dead;
};

typedef struct Checker {
    Arena *a;
    Diags *d;
    Program *prog;
    TypeCtx *tc;
    PtrVec pending;        /* Constraint* */
    int errors;
    PtrVec *sccs;          /* per SCC id: FnDecl* members */
    int nsccs;
    FnDecl *cur_fn;
} Checker;

static void error(Checker *c, Pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error(Checker *c, Pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(c->d, pos, fmt, ap);
    va_end(ap);
    c->errors++;
}

static char *show(Checker *c, Type *t) { return ty_show(c->a, t); }

static void poison(Checker *c, Type *t) {
    t = ty_find(t);
    if (t->kind == TY_VAR && !t->generic) t->link = c->tc->t_poison;
}

/* ---- deferred constraints ---- */

typedef enum Cls { CL_UNKNOWN, CL_INT, CL_FLOAT, CL_STRING, CL_OTHER, CL_POISON } Cls;

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
                  "%sonly `Result<_, MathError>` values chain through arithmetic, but this operand has type `%s`; unwrap it with `?:` or `match` first",
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
    case TY_POISON: return CL_POISON;
    default: return CL_OTHER;
    }
}

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
        Cls ca = classify(c, k, k->a, &ra, &bad);
        Cls cb = classify(c, k, k->b, &rb, &bad);
        if (bad || ca == CL_POISON || cb == CL_POISON) {
            poison(c, k->res);
            return true;
        }
        if (ca == CL_STRING || cb == CL_STRING) {
            if (k->op != OP_ADD || ra || rb || (ca != CL_STRING && ca != CL_UNKNOWN) ||
                (cb != CL_STRING && cb != CL_UNKNOWN)) {
                error(c, k->pos, "%soperator `%s` cannot be applied to `%s` and `%s`", via_prefix(c, k),
                      binop_spelling(k->op), show(c, k->a), show(c, k->b));
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
            error(c, k->pos, "%sunary `-` cannot be applied to `%s`", via_prefix(c, k), show(c, k->a));
            poison(c, k->res);
            return true;
        }
        if (ca == CL_INT) unify_result(c, k, ty_result(tc, tc->t_int, tc->t_matherror));
        else unify_result(c, k, ra ? ty_result(tc, tc->t_float, tc->t_matherror) : tc->t_float);
        return true;
    }
    case C_CMP: {
        Type *a = ty_find(k->a), *b = ty_find(k->b);
        if (a->kind == TY_POISON || b->kind == TY_POISON) return true;
        if (a->kind == TY_RESULT || b->kind == TY_RESULT) {
            error(c, k->pos,
                  "%scannot compare `%s` with `%s`: a Result must be unwrapped with `?:` or `match` before comparing",
                  via_prefix(c, k), show(c, a), show(c, b));
            return true;
        }
        bool eq = k->op == OP_EQ || k->op == OP_NE;
        bool an = a->kind == TY_INT || a->kind == TY_FLOAT, bn = b->kind == TY_INT || b->kind == TY_FLOAT;
        if (an && bn) return true;
        if (a->kind == TY_VAR && b->kind == TY_VAR) return false;
        if ((a->kind == TY_VAR && bn) || (b->kind == TY_VAR && an)) return false;
        if (a->kind == TY_VAR) ty_unify(tc, a, b), a = ty_find(a);
        if (b->kind == TY_VAR) ty_unify(tc, b, a), b = ty_find(b);
        bool ok = a->kind == b->kind &&
                  (a->kind == TY_STRING || (eq && a->kind == TY_BOOL));
        if (!ok) {
            if (a->kind == b->kind && a->kind == TY_BOOL)
                error(c, k->pos, "%soperator `%s` cannot be applied to `bool` (only `==` and `!=` can)", via_prefix(c, k), binop_spelling(k->op));
            else
                error(c, k->pos, "%scannot compare `%s` with `%s`", via_prefix(c, k), show(c, a), show(c, b));
        }
        return true;
    }
    case C_SHOW:
        for (;;) {
            Type *t = ty_find(k->a);
            switch (t->kind) {
            case TY_VAR: return false;
            case TY_RESULT: k->a = t->args[0]; continue;
            case TY_FN:
                error(c, k->pos, "%sa function cannot be printed or rendered (it has type `%s`)", via_prefix(c, k), show(c, t));
                return true;
            case TY_ITER:
                error(c, k->pos, "%san Iterator cannot be printed; consume it with `forEach` or `fold`", via_prefix(c, k));
                return true;
            case TY_LIST: case TY_MAP: case TY_CHANNEL:
                error(c, k->pos, "%svalues of type `%s` cannot be printed", via_prefix(c, k), show(c, t));
                return true;
            default:
                return true;
            }
        }
    }
    return true;
}

static Constraint *add_constraint(Checker *c, CKind kind, BinOp op, Type *a, Type *b, Type *res, Pos pos, const char *via) {
    Constraint *k = arena_alloc(c->a, sizeof *k);
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
        if (t->generic) return false;
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
    return mentions(k->a, vars, 0) || (k->b && mentions(k->b, vars, 0)) || (k->res && mentions(k->res, vars, 0));
}

static void generalise(Checker *c, PtrVec *members, int outer) {
    solve(c);
    bool is_main = false;
    for (int i = 0; i < members->len; i++)
        if (((FnDecl *)members->items[i])->is_main) is_main = true;
    PtrVec S = {0};
    if (!is_main)
        for (int i = 0; i < members->len; i++) collect_vars(((FnDecl *)members->items[i])->type, outer, &S, c->a, 0);
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
    Type *n = ty_con(c->tc, t->kind, t->nargs, args);
    if (t->ret) n->ret = inst_type(c, t->ret, m, depth + 1);
    return n;
}

static void check_scc(Checker *c, int id);

static void ensure_checked(Checker *c, FnDecl *f) {
    if (f->check_state == 0) check_scc(c, f->scc);
}

/* ---- annotations ---- */

static Type *convert_type(Checker *c, TypeExpr *te) {
    TypeCtx *tc = c->tc;
    if (!te) return ty_var(tc);
    if (te->kind == TE_FN) {
        Type **ps = arena_alloc(c->a, sizeof(Type *) * (size_t)(te->nargs ? te->nargs : 1));
        for (int i = 0; i < te->nargs; i++) ps[i] = convert_type(c, te->args[i]);
        return ty_fn(tc, te->nargs, ps, convert_type(c, te->ret));
    }
    static const struct { const char *name; int nargs; TyKind kind; } names[] = {
        {"int", 0, TY_INT}, {"float", 0, TY_FLOAT}, {"bool", 0, TY_BOOL}, {"string", 0, TY_STRING},
        {"Unit", 0, TY_UNIT}, {"MathError", 0, TY_MATHERROR}, {"Error", 0, TY_ERRORT},
        {"Result", 2, TY_RESULT}, {"Fiber", 1, TY_FIBER}, {"Iterator", 1, TY_ITER},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strcmp(names[i].name, te->name) != 0) continue;
        if (te->nargs != names[i].nargs) {
            error(c, te->pos, "type `%s` takes %d type argument%s, got %d", te->name, names[i].nargs,
                  names[i].nargs == 1 ? "" : "s", te->nargs);
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
            return ty_con(tc, names[i].kind, te->nargs, args);
        }
        }
    }
    if (strcmp(te->name, "List") == 0 || strcmp(te->name, "Map") == 0 || strcmp(te->name, "Channel") == 0) {
        error(c, te->pos, "not supported yet: type `%s` (Tier 2)", te->name);
        return tc->t_poison;
    }
    if (strcmp(te->name, "any") == 0) {
        error(c, te->pos, "not supported yet: type `any` (Tier 3)");
        return tc->t_poison;
    }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcasecmp(names[i].name, te->name) == 0) {
            error(c, te->pos, "unknown type `%s` (type names are case-sensitive: did you mean `%s`?)", te->name, names[i].name);
            return tc->t_poison;
        }
    error(c, te->pos, "unknown type `%s`", te->name);
    return tc->t_poison;
}

/* ---- expressions ---- */

static Type *check_expr(Checker *c, Expr *e);
static void check_stmt(Checker *c, Stmt *s, Type **value);

static bool expect_type(Checker *c, Expr *e, Type *actual, Type *expected, const char *what) {
    if (ty_unify(c->tc, actual, expected)) return true;
    error(c, e->pos, "%s has type `%s`, expected `%s`", what, show(c, actual), show(c, expected));
    return false;
}

static Type *check_ident(Checker *c, Expr *e) {
    Sym *s = e->u.ident.sym;
    TypeCtx *tc = c->tc;
    if (!s) return tc->t_poison;
    switch (s->kind) {
    case SYM_LOCAL:
        return s->type ? s->type : tc->t_poison;
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
            add_constraint(c, k->kind, k->op, inst_type(c, k->a, &m, 0), k->b ? inst_type(c, k->b, &m, 0) : NULL,
                           k->res ? inst_type(c, k->res, &m, 0) : NULL, e->pos, f->name);
        }
        return inst_type(c, f->type, &m, 0);
    }
    case SYM_BUILTIN:
        if (s->builtin == B_PRINT || s->builtin == B_TOSTRING) {
            Type *a = ty_var(tc);
            add_constraint(c, C_SHOW, OP_ADD, a, NULL, NULL, e->pos, NULL);
            return ty_fn(tc, 1, &a, s->builtin == B_PRINT ? tc->t_unit : tc->t_string);
        }
        error(c, e->pos, "built-in `%s` can only be called here, not used as a value", s->name);
        return tc->t_poison;
    }
    return tc->t_poison;
}

static int builtin_arity(Builtin b) {
    switch (b) {
    case B_PRINT: case B_TOSTRING: case B_SLEEP: case B_FIBER_YIELD: case B_TOFLOAT:
    case B_EXPECT_TRUE: case B_EXPECT_FALSE: case B_EXPECT_ALL:
        return 1;
    case B_FOLD: case B_CHECK:
        return 3;
    default:
        return 2;
    }
}

static Type *check_list_of_bools(Checker *c, Expr *list, const char *fname) {
    if (list->kind != E_LIST) {
        check_expr(c, list);
        error(c, list->pos, "`%s` takes a list literal of assertions, e.g. `[a == 1, b]`", fname);
        return c->tc->t_poison;
    }
    if (list->u.list.n == 0) error(c, list->pos, "`%s` needs at least one assertion in its list", fname);
    for (int i = 0; i < list->u.list.n; i++) {
        Expr *el = list->u.list.elems[i];
        expect_type(c, el, check_expr(c, el), c->tc->t_bool, "this assertion");
    }
    list->type = c->tc->t_unit;
    return c->tc->t_unit;
}

static Type *check_builtin_call(Checker *c, Expr *e, Builtin b) {
    TypeCtx *tc = c->tc;
    Expr **args = e->u.call.args;
    int n = e->u.call.nargs;
    int want = builtin_arity(b);
    e->u.call.callee->type = tc->t_poison;
    if (n != want) {
        error(c, e->pos, "`%s` expects %d argument%s, got %d", builtin_name(b), want, want == 1 ? "" : "s", n);
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
    case B_INTDIV:
        expect_type(c, args[0], t[0], tc->t_int, "the dividend");
        expect_type(c, args[1], t[1], tc->t_int, "the divisor");
        return ty_result(tc, tc->t_int, tc->t_errort);
    case B_RANGE:
        expect_type(c, args[0], t[0], tc->t_int, "the start of `range`");
        expect_type(c, args[1], t[1], tc->t_int, "the end of `range`");
        return ty_con1(tc, TY_ITER, tc->t_int);
    case B_MAP: case B_FILTER: case B_FOREACH: case B_FOLD: {
        Type *elem = ty_var(tc);
        if (!ty_unify(tc, t[0], ty_con1(tc, TY_ITER, elem))) {
            error(c, args[0]->pos, "`%s` needs an Iterator (from `range`) as its first argument, found `%s`%s",
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
            error(c, cbe->pos, "the callback of `%s` has type `%s`, expected `%s`", builtin_name(b), show(c, cb), show(c, want_t));
        switch (b) {
        case B_MAP: return ty_con1(tc, TY_ITER, out);
        case B_FILTER: return ty_con1(tc, TY_ITER, elem);
        case B_FOREACH: return tc->t_unit;
        default: return t[1];
        }
    }
    case B_SLEEP:
        expect_type(c, args[0], t[0], tc->t_int, "the sleep time");
        return tc->t_unit;
    case B_FIBER_YIELD:
        expect_type(c, args[0], t[0], tc->t_int, "the argument of `fiber_yield`");
        return tc->t_int;
    case B_TOFLOAT:
        expect_type(c, args[0], t[0], tc->t_int, "the argument of `toFloat`");
        return tc->t_float;
    case B_TEST: {
        expect_type(c, args[0], t[0], tc->t_string, "the test name");
        Type *body = ty_fn(tc, 0, NULL, ty_var(tc));
        if (!ty_unify(tc, t[1], body))
            error(c, args[1]->pos, "the body of `test` must be a function with no parameters, found `%s`", show(c, t[1]));
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
    case B_EXPECT_TRUE: case B_EXPECT_FALSE:
        expect_type(c, args[0], t[0], tc->t_bool, "the assertion");
        return tc->t_unit;
    case B_CHECK_TRUE: case B_CHECK_FALSE:
        expect_type(c, args[0], t[0], tc->t_string, "the label");
        expect_type(c, args[1], t[1], tc->t_bool, "the assertion");
        return tc->t_unit;
    default:
        return tc->t_poison;
    }
}

static Type *check_call(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Expr *callee = e->u.call.callee;
    if (callee->kind == E_IDENT && callee->u.ident.sym && callee->u.ident.sym->kind == SYM_BUILTIN)
        return check_builtin_call(c, e, callee->u.ident.sym->builtin);
    Type *ft = ty_find(check_expr(c, callee));
    int n = e->u.call.nargs;
    Type **at = arena_alloc(c->a, sizeof(Type *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) at[i] = check_expr(c, e->u.call.args[i]);
    const char *fname = callee->kind == E_IDENT ? callee->u.ident.name : "the function";
    if (ft->kind == TY_POISON) return tc->t_poison;
    if (ft->kind == TY_FN) {
        if (ft->nargs != n) {
            error(c, e->pos, "`%s` expects %d argument%s, got %d", fname, ft->nargs, ft->nargs == 1 ? "" : "s", n);
            return ft->ret;
        }
        for (int i = 0; i < n; i++) {
            if (!ty_unify(tc, ft->args[i], at[i]))
                error(c, e->u.call.args[i]->pos, "argument %d of `%s` has type `%s`, expected `%s`", i + 1, fname,
                      show(c, at[i]), show(c, ft->args[i]));
        }
        return ft->ret;
    }
    if (ft->kind == TY_VAR) {
        Type *ret = ty_var(tc);
        ty_unify(tc, ft, ty_fn(tc, n, at, ret));
        return ret;
    }
    error(c, callee->pos, "`%s` is not a function (it has type `%s`)", fname, show(c, ft));
    return tc->t_poison;
}

static Type *check_match(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Type *st = check_expr(c, e->u.match.scrut);
    Type *result = ty_var(tc);
    bool catchall = false, seen_true = false, seen_false = false, seen_ok = false, seen_err = false;
    bool result_set = false;
    for (int i = 0; i < e->u.match.narms; i++) {
        MatchArm *arm = &e->u.match.arms[i];
        Pattern *p = arm->pat;
        if (catchall) error(c, p->pos, "unreachable arm: an earlier arm already matches every value");
        Type *pt = NULL;
        const char *pdesc = NULL;
        switch (p->kind) {
        case PAT_WILD:
            catchall = true;
            break;
        case PAT_BIND:
            if (p->annot) {
                Type *at = convert_type(c, p->annot);
                if (!ty_unify(tc, st, at))
                    error(c, p->pos, "the pattern's type `%s` does not match the value's type `%s`", show(c, at), show(c, st));
            }
            p->sym->type = st;
            catchall = true;
            break;
        case PAT_INT: pt = tc->t_int; pdesc = "an integer pattern"; break;
        case PAT_FLOAT: pt = tc->t_float; pdesc = "a float pattern"; break;
        case PAT_STRING: pt = tc->t_string; pdesc = "a string pattern"; break;
        case PAT_BOOL:
            pt = tc->t_bool;
            pdesc = "a bool pattern";
            if (p->bval) seen_true = true;
            else seen_false = true;
            break;
        case PAT_SUCCESS:
        case PAT_ERROR: {
            Type *s = ty_find(st);
            if (s->kind == TY_VAR) {
                Type *err = ty_var(tc);
                err->hint = HINT_ERROR;
                ty_unify(tc, s, ty_result(tc, ty_var(tc), err));
                s = ty_find(st);
            }
            Type *bt;
            if (s->kind == TY_RESULT) {
                bt = p->kind == PAT_SUCCESS ? s->args[0] : tc->t_string;
                if (p->kind == PAT_SUCCESS) seen_ok = true;
                else seen_err = true;
            } else if (s->kind == TY_POISON) {
                bt = tc->t_poison;
                seen_ok = seen_err = true;
            } else {
                /* a non-Result scrutinee is treated as Success */
                bt = p->kind == PAT_SUCCESS ? s : tc->t_string;
                if (p->kind == PAT_SUCCESS) {
                    if (!p->sym) catchall = true;
                    seen_ok = seen_err = true;
                }
            }
            if (p->sym) p->sym->type = bt;
            break;
        }
        case PAT_UNSUPPORTED:
            seen_true = seen_false = seen_ok = seen_err = true;
            break;
        }
        if (pt && !ty_unify(tc, st, pt))
            error(c, p->pos, "%s cannot match a value of type `%s`", pdesc, show(c, st));
        Type *bt = check_expr(c, arm->body);
        if (!result_set) {
            ty_unify(tc, result, bt);
            result_set = true;
        } else if (!ty_unify(tc, result, bt)) {
            error(c, arm->body->pos, "this arm has type `%s`, but the earlier arms have type `%s`", show(c, bt), show(c, result));
        }
    }
    if (!catchall) {
        Type *s = ty_find(st);
        if (s->kind == TY_BOOL) {
            if (!seen_true || !seen_false)
                error(c, e->pos, "this `match` on `bool` does not cover `%s` (add that arm or a catch-all `_`)", seen_true ? "false" : "true");
        } else if (s->kind == TY_RESULT) {
            if (!seen_ok || !seen_err)
                error(c, e->pos, "this `match` on a Result does not cover `%s` (add that arm or a catch-all `_`)", seen_ok ? "Error" : "Success");
        } else if (s->kind == TY_POISON || (seen_ok && seen_err)) {
            /* fine */
        } else {
            error(c, e->pos, "a `match` on `%s` needs a catch-all arm (`_` or a binder)", show(c, s));
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
    case E_IDENT:
        return check_ident(c, e);
    case E_CALL:
        return check_call(c, e);
    case E_BINARY: {
        Type *l = check_expr(c, e->u.bin.l);
        Type *r = check_expr(c, e->u.bin.r);
        switch (e->u.bin.op) {
        case OP_AND:
        case OP_OR:
            expect_type(c, e->u.bin.l, l, tc->t_bool, e->u.bin.op == OP_AND ? "the left operand of `&&`" : "the left operand of `||`");
            expect_type(c, e->u.bin.r, r, tc->t_bool, e->u.bin.op == OP_AND ? "the right operand of `&&`" : "the right operand of `||`");
            return tc->t_bool;
        case OP_EQ: case OP_NE: case OP_LT: case OP_GT: case OP_LE: case OP_GE:
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
            error(c, e->u.elvis.r->pos, "the default of `?:` has type `%s`, but the Result holds `%s`", show(c, r), show(c, payload));
        return payload;
    }
    case E_MATCH:
        return check_match(c, e);
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
        Type *bt = check_expr(c, e->u.lambda.body);
        if (e->u.lambda.ret) {
            Type *rt = convert_type(c, e->u.lambda.ret);
            if (!ty_unify(tc, rt, bt))
                error(c, e->u.lambda.body->pos, "the lambda is declared to return `%s`, but its body has type `%s`", show(c, rt), show(c, bt));
        }
        return ty_fn(tc, n, ps, bt);
    }
    case E_SPAWN:
        return ty_con1(tc, TY_FIBER, check_expr(c, e->u.spawn.e));
    case E_AWAIT: {
        Type *t = check_expr(c, e->u.await.e);
        Type *v = ty_var(tc);
        if (!ty_unify(tc, t, ty_con1(tc, TY_FIBER, v))) {
            error(c, e->u.await.e->pos, "`await` needs a Fiber (from `spawn`), found `%s`", show(c, t));
            return tc->t_poison;
        }
        return v;
    }
    case E_YIELD:
        return e->u.yield.e ? check_expr(c, e->u.yield.e) : tc->t_unit;
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
    case E_LIST:
        for (int i = 0; i < e->u.list.n; i++) check_expr(c, e->u.list.elems[i]);
        error(c, e->pos, "not supported yet: list literals (Tier 2); a list literal is only allowed as the argument of `expectAll`/`checkAll`");
        return tc->t_poison;
    case E_UNSUPPORTED:
        for (int i = 0; i < e->u.unsup.nsubs; i++) check_expr(c, e->u.unsup.subs[i]);
        return tc->t_poison;
    }
    return tc->t_poison;
}

static Type *check_expr(Checker *c, Expr *e) {
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
                error(c, s->u.let.init->pos, "`%s` is annotated `%s`, but its value has type `%s`", s->u.let.name, show(c, at), show(c, t));
            t = at;
        }
        s->u.let.sym->type = t;
        *value = c->tc->t_unit;
        return;
    }
    case S_EXPR:
        *value = check_expr(c, s->u.expr);
        return;
    case S_FN:
    case S_UNSUPPORTED:
        *value = c->tc->t_unit;
        return;
    }
}

static void check_scc(Checker *c, int id) {
    PtrVec *members = &c->sccs[id];
    TypeCtx *tc = c->tc;
    for (int i = 0; i < members->len; i++) ((FnDecl *)members->items[i])->check_state = 1;
    int outer = tc->level;
    tc->level = outer + 1;
    for (int i = 0; i < members->len; i++) {
        FnDecl *f = members->items[i];
        Type **ps = arena_alloc(c->a, sizeof(Type *) * (size_t)(f->nparams ? f->nparams : 1));
        for (int k = 0; k < f->nparams; k++) {
            ps[k] = f->params[k].annot ? convert_type(c, f->params[k].annot) : ty_var(tc);
            if (f->params[k].sym) f->params[k].sym->type = ps[k];
        }
        Type *ret = f->ret_annot ? convert_type(c, f->ret_annot) : ty_var(tc);
        f->type = ty_fn(tc, f->nparams, ps, ret);
    }
    for (int i = 0; i < members->len; i++) {
        FnDecl *f = members->items[i];
        FnDecl *save = c->cur_fn;
        c->cur_fn = f;
        Type *bt = check_expr(c, f->body);
        if (!ty_unify(tc, f->type->ret, bt)) {
            error(c, f->body->pos, "`%s` is declared to return `%s`, but its body has type `%s`", f->name,
                  show(c, f->type->ret), show(c, bt));
        }
        c->cur_fn = save;
    }
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

/* ---- defaulting and the Tier 1 restriction pass ---- */

static void default_type(Checker *c, Type *t, int depth) {
    if (!t || depth > 200) return;
    t = ty_find(t);
    if (t->kind == TY_VAR) {
        if (!t->generic) ty_unify(c->tc, t, t->hint & HINT_ERROR ? c->tc->t_errort : c->tc->t_int);
        return;
    }
    for (int i = 0; i < t->nargs; i++) default_type(c, t->args[i], depth + 1);
    if (t->ret) default_type(c, t->ret, depth + 1);
}

typedef enum RCtx { R_VALUE, R_CALLEE, R_CALLBACK, R_ITER_SRC, R_LET } RCtx;

static void restrict_expr(Checker *c, Expr *e, RCtx ctx);

static void restrict_stmt(Checker *c, Stmt *s, bool last, RCtx last_ctx) {
    switch (s->kind) {
    case S_LET: {
        Expr *init = s->u.let.init;
        restrict_expr(c, init, R_LET);
        Type *t = ty_find(init->type ? init->type : c->tc->t_poison);
        if (t->kind == TY_FN) s->u.let.sym->static_kind = STATIC_FN;
        if (t->kind == TY_ITER) s->u.let.sym->static_kind = STATIC_ITER;
        return;
    }
    case S_EXPR:
        restrict_expr(c, s->u.expr, last ? last_ctx : R_VALUE);
        return;
    case S_FN:
        default_type(c, s->u.fn->type, 0);
        for (int i = 0; i < s->u.fn->nparams; i++)
            if (s->u.fn->params[i].sym) default_type(c, s->u.fn->params[i].sym->type, 0);
        restrict_expr(c, s->u.fn->body, R_VALUE);
        return;
    case S_UNSUPPORTED:
        return;
    }
}

static bool is_static_fn(Expr *e) {
    if (e->kind == E_LAMBDA) return true;
    if (e->kind != E_IDENT || !e->u.ident.sym) return false;
    Sym *s = e->u.ident.sym;
    return s->kind == SYM_FN || s->kind == SYM_BUILTIN || (s->kind == SYM_LOCAL && s->static_kind == STATIC_FN);
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

static void restrict_expr(Checker *c, Expr *e, RCtx ctx) {
    if (!e) return;
    default_type(c, e->type, 0);
    Type *t = e->type ? ty_find(e->type) : c->tc->t_poison;
    if (e->kind == E_IDENT && e->u.ident.inst)
        for (int i = 0; i < e->u.ident.ninst; i++) default_type(c, e->u.ident.inst[i], 0);
    if (t->kind == TY_FN) {
        bool st = is_static_fn(e);
        if (!st && ctx == R_CALLEE)
            error(c, e->pos, "not supported yet: calling a function value that is not known at compile time (closures are Tier 2)");
        else if (!st || (ctx != R_CALLEE && ctx != R_CALLBACK && ctx != R_LET))
            error(c, e->pos,
                  "not supported yet: functions as first-class values (Tier 2); in Tier 1 a function can be called, bound with `let`, or passed to map/filter/forEach/fold/test");
    } else if (t->kind == TY_ITER) {
        bool st = is_static_iter(e);
        if (!st || (ctx != R_ITER_SRC && ctx != R_LET))
            error(c, e->pos,
                  "not supported yet: Iterator values that are passed, returned or stored (Tier 2); consume the pipeline with `forEach` or `fold` where it is built");
    }
    switch (e->kind) {
    case E_INT: case E_FLOAT: case E_BOOL: case E_STRING:
        return;
    case E_IDENT: {
        Sym *s = e->u.ident.sym;
        if (s && s->kind == SYM_LOCAL && s->is_global && s->static_kind == STATIC_ITER && ctx != R_LET)
            error(c, e->pos, "not supported yet: a file-scope Iterator used inside a function (Tier 2)");
        return;
    }
    case E_INTERP:
        for (int i = 0; i < e->u.interp.nparts; i++) restrict_expr(c, e->u.interp.parts[i], R_VALUE);
        return;
    case E_CALL: {
        Expr *f = e->u.call.callee;
        restrict_expr(c, f, R_CALLEE);
        Builtin b = (f->kind == E_IDENT && f->u.ident.sym && f->u.ident.sym->kind == SYM_BUILTIN) ? f->u.ident.sym->builtin : B_NONE;
        for (int i = 0; i < e->u.call.nargs; i++) {
            RCtx ac = R_VALUE;
            if (b == B_MAP || b == B_FILTER || b == B_FOREACH || b == B_FOLD) {
                if (i == 0) ac = R_ITER_SRC;
                else if ((b == B_FOLD && i == 2) || (b != B_FOLD && i == 1)) ac = R_CALLBACK;
            } else if (b == B_TEST && i == 1) {
                ac = R_CALLBACK;
            }
            Expr *a = e->u.call.args[i];
            if (a->kind == E_LIST && (b == B_EXPECT_ALL || b == B_CHECK_ALL)) {
                for (int k = 0; k < a->u.list.n; k++) restrict_expr(c, a->u.list.elems[k], R_VALUE);
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
    case E_UNARY:
        restrict_expr(c, e->u.un.e, R_VALUE);
        return;
    case E_ELVIS:
        restrict_expr(c, e->u.elvis.l, R_VALUE);
        restrict_expr(c, e->u.elvis.r, R_VALUE);
        return;
    case E_MATCH:
        restrict_expr(c, e->u.match.scrut, R_VALUE);
        for (int i = 0; i < e->u.match.narms; i++) {
            Pattern *p = e->u.match.arms[i].pat;
            if (p->sym) default_type(c, p->sym->type, 0);
            restrict_expr(c, e->u.match.arms[i].body, R_VALUE);
        }
        return;
    case E_BLOCK:
        for (int i = 0; i < e->u.block.nstmts; i++) restrict_stmt(c, e->u.block.stmts[i], i == e->u.block.nstmts - 1, R_VALUE);
        return;
    case E_LAMBDA:
        for (int i = 0; i < e->u.lambda.nparams; i++)
            if (e->u.lambda.params[i].sym) default_type(c, e->u.lambda.params[i].sym->type, 0);
        restrict_expr(c, e->u.lambda.body, R_VALUE);
        return;
    case E_SPAWN: {
        Unit *u = e->u.spawn.unit;
        for (int i = 0; u && i < u->captures.len; i++) {
            Sym *s = u->captures.items[i];
            if (s->static_kind == STATIC_ITER)
                error(c, e->pos, "not supported yet: `spawn` capturing the Iterator `%s` (Tier 2)", s->name);
        }
        restrict_expr(c, e->u.spawn.e, R_VALUE);
        return;
    }
    case E_AWAIT:
        restrict_expr(c, e->u.await.e, R_VALUE);
        return;
    case E_YIELD:
        restrict_expr(c, e->u.yield.e, R_VALUE);
        return;
    case E_RESULT_CTOR:
        restrict_expr(c, e->u.ctor.e, R_VALUE);
        return;
    case E_LIST:
        for (int i = 0; i < e->u.list.n; i++) restrict_expr(c, e->u.list.elems[i], R_VALUE);
        return;
    case E_UNSUPPORTED:
        for (int i = 0; i < e->u.unsup.nsubs; i++) restrict_expr(c, e->u.unsup.subs[i], R_VALUE);
        return;
    }
}

int check_program(Program *prog, Diags *d) {
    Checker C = {.a = prog->arena, .d = d, .prog = prog, .tc = &prog->types};
    Checker *c = &C;
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
    /* defaults and Tier 1 restrictions */
    for (int i = 0; i < prog->nstmts; i++) {
        Stmt *s = prog->stmts[i];
        if (s->kind == S_LET) default_type(c, s->u.let.sym->type, 0);
        restrict_stmt(c, s, false, R_VALUE);
    }
    solve_forced(c, 0);
    return c->errors;
}
