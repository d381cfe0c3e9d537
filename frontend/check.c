/* check.c — see check.h: the call graph's components (Tarjan), each checked and generalised in
 * turn, then defaulting and the Iterator restrictions. The parts share check_internal.h. */
#include "check_internal.h"

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

void check_scc(Checker *c, int id) {
    PtrVec *members = &c->sccs[id];
    TypeCtx *tc = c->tc;
    for (int i = 0; i < members->len; i++)
        c->fn_state[((FnDecl *)members->items[i])->id] = FN_CHECKING;
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
    for (int i = 0; i < members->len; i++)
        c->fn_state[((FnDecl *)members->items[i])->id] = FN_CHECKED;
}

/* ---- strongly connected components (Tarjan) ---- */

typedef struct Tarjan {
    Checker *c;
    int index;
    PtrVec stack;
} Tarjan;

static void tarjan(Tarjan *t, FnDecl *f) {
    Checker *c = t->c;
    c->tj_index[f->id] = c->tj_low[f->id] = ++t->index;
    vec_push(c->scratch, &t->stack, f);
    c->tj_onstack[f->id] = true;
    for (int i = 0; i < f->callees.len; i++) {
        FnDecl *g = f->callees.items[i];
        if (!c->tj_index[g->id]) {
            tarjan(t, g);
            if (c->tj_low[g->id] < c->tj_low[f->id]) c->tj_low[f->id] = c->tj_low[g->id];
        } else if (c->tj_onstack[g->id] && c->tj_index[g->id] < c->tj_low[f->id]) {
            c->tj_low[f->id] = c->tj_index[g->id];
        }
    }
    if (c->tj_low[f->id] == c->tj_index[f->id]) {
        int id = c->nsccs++;
        FnDecl *g;
        do {
            g = t->stack.items[--t->stack.len];
            c->tj_onstack[g->id] = false;
            g->scc = id;
            vec_push(c->scratch, &c->sccs[id], g);
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
    size_t nfns = (size_t)prog->fns.len + 1;
    /* the scratch tables live in the checker's own arena, freed when it returns */
    c->scratch = arena_new();
    c->sccs = arena_alloc(c->scratch, sizeof(PtrVec) * nfns);
    c->fn_state = arena_alloc(c->scratch, nfns);
    c->tj_index = arena_alloc(c->scratch, sizeof(int) * nfns);
    c->tj_low = arena_alloc(c->scratch, sizeof(int) * nfns);
    c->tj_onstack = arena_alloc(c->scratch, sizeof(bool) * nfns);
    Tarjan T = {.c = c};
    for (int i = 0; i < prog->fns.len; i++) {
        FnDecl *f = prog->fns.items[i];
        if (!c->tj_index[f->id]) tarjan(&T, f);
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
    arena_free(c->scratch);
    return c->errors;
}
