/* check_builtins.c — the types of built-ins and their calls, from builtins.def (see check_internal.h). */
#include "check_internal.h"

/* ---- built-in signatures: a small notation ----
 *   i int  f float  b bool  s string  u Unit  P Ptr  H HttpResponse  a/c/d type variables
 *   L<x> List  M<x> Map<string, x>  C<x> Channel  F<x> Fiber  G<x> GpuBuffer  E<x> Result<x, Error>
 *   N<x> Result<x, MathError>  (x>y) function      "params>ret", params separated by ',' */
typedef struct SigParse {
    const char *p;
    Type *vars[3];
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
    case 'c':
    case 'd': {
        int k = ch == 'a' ? 0 : ch == 'c' ? 1 : 2;
        if (!sp->vars[k]) sp->vars[k] = ty_var(tc);
        return sp->vars[k];
    }
    case 'L': return ty_con1(tc, TY_LIST, sig_type(c, sp));
    case 'C': return ty_con1(tc, TY_CHANNEL, sig_type(c, sp));
    case 'F': return ty_con1(tc, TY_FIBER, sig_type(c, sp));
    case 'G': return ty_con1(tc, TY_GPU, sig_type(c, sp));
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
const char *builtin_sig(Builtin b) {
    return builtin_info(b)->type;
}

/* The function type of a table-driven built-in (fresh variables). */
Type *builtin_type(Checker *c, Builtin b) {
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
Type *apply_fn_type(Checker *c, Expr *e, Type *ft, Type **at, const char *who) {
    int n = e->u.call.nargs;
    if (ft->nargs != n) {
        error(c, e->pos, "%s expects %d argument%s, got %d", who, ft->nargs,
              ft->nargs == 1 ? "" : "s", n);
        return ft->ret;
    }
    for (int i = 0; i < n; i++) {
        if (!coerce(c, &e->u.call.args[i], at[i], ft->args[i]) &&
            !recover_error(c, e->u.call.args[i]->pos, at[i], ft->args[i]))
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

/* docs/spec/language.md §9.9: what a GPU built-in creates holds int, float or bool, and so does
 * gpuFold's accumulator (checked once the types are known: a deferred constraint). */
static void gpu_elements(Checker *c, Expr *e, Builtin b, Type *sigt) {
    Type *r = ty_find(sigt->ret);
    bool creates = b == B_GPU_MAP || b == B_GPU_ZIP_WITH || b == B_GPU_SCAN || b == B_GPU_FILTER ||
                   b == B_TO_GPU;
    if (creates && r->kind == TY_GPU)
        add_constraint_named(c, C_GPU_ELEM, OP_ADD, r->args[0], NULL, NULL, e->pos, NULL,
                             builtin_name(b));
    if (b == B_GPU_FOLD)
        add_constraint_named(c, C_GPU_ELEM, OP_ADD, r, r, NULL, e->pos, NULL, builtin_name(b));
}

/* toGpu(source): from a List<T> or an iterator pipeline (docs/spec/language.md §9.9). */
static Type *check_to_gpu(Checker *c, Expr *e, Type *src) {
    TypeCtx *tc = c->tc;
    Type *elem = ty_var(tc);
    Type *s = ty_find(src);
    if (s->kind == TY_ITER) {
        ty_unify(tc, elem, s->args[0]);
    } else if (!ty_unify(tc, src, ty_con1(tc, TY_LIST, elem))) {
        error(c, e->u.call.args[0]->pos,
              "`toGpu` needs a List or an Iterator (from `range`), found `%s`", show(c, src));
        return tc->t_poison;
    }
    Type *out = ty_con1(tc, TY_GPU, elem);
    add_constraint_named(c, C_GPU_ELEM, OP_ADD, elem, NULL, NULL, e->pos, NULL, "toGpu");
    return out;
}

Type *check_builtin_call(Checker *c, Expr *e, Builtin b) {
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
    if (sigt) gpu_elements(c, e, b, sigt);
    /* docs/spec/language.md §4.1: `any` values are not compared, and listContains compares */
    if (sigt && b == B_LIST_CONTAINS && sigt->nargs == 2)
        add_constraint_named(c, C_EQUATABLE, OP_EQ, sigt->args[1], NULL, NULL, e->pos, NULL,
                             builtin_name(b));
    if (sigt) {
        Type **at = arena_alloc(c->a, sizeof(Type *) * (size_t)(n + 1));
        for (int i = 0; i < n; i++) at[i] = check_expr(c, args[i]);
        if (sigt->nargs != n) {
            error(c, e->pos, "`%s` expects %d argument%s, got %d", builtin_name(b), sigt->nargs,
                  sigt->nargs == 1 ? "" : "s", n);
            return sigt->ret;
        }
        for (int i = 0; i < n; i++) {
            if (coerce(c, &args[i], at[i], sigt->args[i])) continue;
            if (recover_error(c, args[i]->pos, at[i], sigt->args[i])) continue;
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
    case B_TO_GPU: return check_to_gpu(c, e, t[0]);
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
bool reorder_named(Checker *c, Expr *e, const char **pnames, int np, const char *fname) {
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
