/* codegen_closures.c — closures and captured environments, callees, spawn thunks (see codegen_internal.h). */
#include "codegen_internal.h"

LLVMValueRef gc_alloc(CG *g, int64_t bytes) {
    LLVMTypeRef p[1] = {g->i64};
    LLVMValueRef a[1] = {ci64(g, bytes > 0 ? bytes : 8)};
    return call_rt(g, "osp_gc_alloc", g->ptr, p, a, 1);
}

static LLVMValueRef word_slot(CG *g, LLVMValueRef block, int i) {
    LLVMValueRef idx[1] = {ci64(g, i)};
    return LLVMBuildInBoundsGEP2(g->b, g->i64, block, idx, 1, "");
}

void store_word(CG *g, LLVMValueRef block, int i, LLVMValueRef w) {
    LLVMBuildStore(g->b, w, word_slot(g, block, i));
}

LLVMValueRef load_word(CG *g, LLVMValueRef block, int i, const char *name) {
    return LLVMBuildLoad2(g->b, g->i64, word_slot(g, block, i), name);
}

/* The value of local `s` as it is captured by value into an environment. */
static LLVMValueRef capture_value(CG *g, Sym *s, Binding *b) {
    Type *t = sty(g, s->type);
    if (b->kind == BIND_CELL) return box(g, LLVMBuildLoad2(g->b, llty(g, t), b->v, s->name), t);
    return box(g, b->v, t);
}

/*
 * Fill an environment block for the captures of unit `u`: word 0 is left for a code
 * pointer, captures go to words 1.. . Compile-time callees are passed as static
 * bindings (*statics); `by_ref_muts` stores `mut` cells themselves (handle groups).
 */
LLVMValueRef build_env(CG *g, Unit *u, LLVMValueRef code, bool by_ref_muts, Binding **statics) {
    int n = u ? u->captures.len : 0;
    if (n == 0 && !code) return LLVMConstNull(g->ptr);
    LLVMValueRef env = gc_alloc(g, 8 * (n + 1));
    if (code) LLVMBuildStore(g->b, code, env);
    Binding *caps = NULL;
    for (int i = 0; i < n; i++) {
        Sym *s = u->captures.items[i];
        Binding *b = lookup(g, s);
        if (!b) {
            internal_error(g, "captured variable not found");
            continue;
        }
        if (b->kind == BIND_CALLEE) {
            Binding *c = arena_alloc(g->arena, sizeof *c);
            *c = *b;
            c->next = caps;
            caps = c;
            continue;
        }
        if (b->kind == BIND_ITER) continue;
        LLVMValueRef w = (by_ref_muts && b->kind == BIND_CELL)
                             ? LLVMBuildPtrToInt(g->b, b->v, g->i64, "")
                             : capture_value(g, s, b);
        store_word(g, env, i + 1, w);
    }
    if (statics) *statics = caps;
    return env;
}

/* In a function made from unit `u`, bind its captures from environment `env`. */
void bind_captures(CG *g, Unit *u, LLVMValueRef env, Binding *statics, bool by_ref_muts) {
    g->fs->env = statics;
    for (int i = 0; u && i < u->captures.len; i++) {
        Sym *s = u->captures.items[i];
        bool is_static = false;
        for (Binding *b = statics; b; b = b->next)
            if (b->sym == s) is_static = true;
        if (is_static || s->static_kind == STATIC_ITER) continue;
        LLVMValueRef w = load_word(g, env, i + 1, s->name);
        if (by_ref_muts && s->is_mut)
            bind_sym(g, s, BIND_CELL)->v = LLVMBuildIntToPtr(g->b, w, g->ptr, s->name);
        else
            bind_sym(g, s, BIND_VALUE)->v = unbox(g, w, sty(g, s->type));
    }
}

/* ---- closure code for functions, built-ins and constructors used as values ---- */

static bool callee_eq(Callee *a, Callee *b) {
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case CAL_FN: return a->fn == b->fn && targs_eq(a->targs, b->targs, a->fn->nqvars);
    case CAL_BUILTIN: return a->builtin == b->builtin;
    case CAL_CTOR: return a->ctor == b->ctor;
    default: return false;
    }
}

static Job *wrap_job(CG *g, Callee *c, Type *ft, int line) {
    for (int i = 0; i < g->jobs.len; i++) {
        Job *j = g->jobs.items[i];
        if (j->kind == JOB_WRAP && callee_eq(&j->wrapped, c) && type_eq(j->wtype, ft)) return j;
    }
    Job *j = arena_alloc(g->arena, sizeof *j);
    j->kind = JOB_WRAP;
    j->wrapped = *c;
    j->wtype = ft;
    j->line = line;
    const char *base = c->kind == CAL_FN && c->fn->is_extern ? c->fn->name
                       : c->kind == CAL_FN                   ? fn_instance(g, c->fn, c->targs)->name
                       : c->kind == CAL_BUILTIN              ? builtin_name(c->builtin)
                                                             : c->ctor->name;
    j->name = unique_name(g, arena_printf(g->arena, "%s$closure", base));
    j->llty = closure_fn_type(g, ft);
    j->llfn = LLVMAddFunction(g->mod, j->name, j->llty);
    LLVMSetLinkage(j->llfn, LLVMInternalLinkage);
    vec_push(g->arena, &g->jobs, j);
    return j;
}

/* A closure for a static callee (a function value that is known at compile time). */
LLVMValueRef callee_value(CG *g, Callee *c, Type *ft) {
    if (ft) ft = ty_rep(ft);
    switch (c->kind) {
    case CAL_VALUE: return c->env;
    case CAL_LAMBDA: {
        Job *j = lambda_job(g, c->lambda, c->encl);
        if (c->env) return c->env;
        LLVMValueRef code[1] = {j->llfn};
        LLVMValueRef init = LLVMConstStructInContext(g->ctx, code, 1, 0);
        LLVMValueRef gv =
            LLVMAddGlobal(g->mod, LLVMTypeOf(init), arena_printf(g->arena, "%s.closure", j->name));
        LLVMSetInitializer(gv, init);
        LLVMSetGlobalConstant(gv, 1);
        LLVMSetLinkage(gv, LLVMPrivateLinkage);
        return gv;
    }
    case CAL_FN:
    case CAL_BUILTIN:
    case CAL_CTOR: {
        int line = c->kind == CAL_FN     ? c->fn->line
                   : g->fs && g->fs->loc ? (int)LLVMDILocationGetLine(g->fs->loc)
                                         : 1;
        Job *j = wrap_job(g, c, ft, line);
        LLVMValueRef code[1] = {j->llfn};
        LLVMValueRef init = LLVMConstStructInContext(g->ctx, code, 1, 0);
        const char *gname = arena_printf(g->arena, "%s.value", j->name);
        LLVMValueRef gv = LLVMGetNamedGlobal(g->mod, gname);
        if (!gv) {
            gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), gname);
            LLVMSetInitializer(gv, init);
            LLVMSetGlobalConstant(gv, 1);
            LLVMSetLinkage(gv, LLVMPrivateLinkage);
        }
        return gv;
    }
    default: internal_error(g, "function value has no closure"); return LLVMConstNull(g->ptr);
    }
}

/* The closure of lambda expression `lam` evaluated here. */
LLVMValueRef gen_closure(CG *g, Expr *lam) {
    Job *j = lambda_job(g, lam, g->fs->inst);
    Unit *u = lam->u.lambda.unit;
    if (u->captures.len == 0) {
        Callee c = {.kind = CAL_LAMBDA, .lambda = lam, .encl = g->fs->inst};
        return callee_value(g, &c, NULL);
    }
    Binding *statics = NULL;
    LLVMValueRef env = build_env(g, u, j->llfn, false, &statics);
    j->static_caps = statics;
    return env;
}

static Callee callee_from_sym(CG *g, Expr *e, Sym *s) {
    Callee c = {0};
    Binding *b = lookup(g, s);
    if (b && b->kind == BIND_CALLEE) return b->callee;
    if (s->static_kind == STATIC_FN && s->init && s->file_scope) {
        /* a file-scope alias read from another unit: resolve in main's context */
        FnState tmp = *g->fs;
        tmp.inst = NULL;
        tmp.env = NULL;
        FnState *save = g->fs;
        g->fs = &tmp;
        c = callee_of(g, s->init);
        g->fs = save;
        return c;
    }
    c.kind = CAL_VALUE;
    c.env = gen(g, e);
    c.type = ety(g, e);
    return c;
}

Type **ident_targs(CG *g, Expr *id) {
    FnDecl *fn = id->u.ident.sym->fn;
    int n = fn->nqvars;
    Type **t = arena_alloc(g->arena, sizeof(Type *) * (size_t)(n + 1));
    if (n == 0) return t;
    if (id->u.ident.inst) {
        for (int i = 0; i < n; i++) t[i] = subst(g, id->u.ident.inst[i], g->fs->inst);
        return t;
    }
    /* recursive reference inside its own component: same substitution */
    for (Job *j = g->fs->inst; j; j = j->encl)
        if (j->kind == JOB_FN && j->fn->scc == fn->scc) {
            for (int i = 0; i < n; i++) t[i] = ty_rep(j->targs[i]);
            return t;
        }
    for (int i = 0; i < n; i++) t[i] = g->tc->t_int;
    return t;
}

Callee callee_of(CG *g, Expr *e) {
    Callee c = {0};
    if (e->kind == E_LAMBDA) {
        c.kind = CAL_LAMBDA;
        c.lambda = e;
        c.encl = g->fs->inst;
        if (e->u.lambda.unit->captures.len > 0) c.env = gen_closure(g, e);
        return c;
    }
    if (e->kind == E_IDENT && e->u.ident.sym) {
        Sym *s = e->u.ident.sym;
        if (s->kind == SYM_FN) {
            c.kind = CAL_FN;
            c.fn = s->fn;
            c.targs = ident_targs(g, e);
            return c;
        }
        if (s->kind == SYM_BUILTIN) {
            c.kind = CAL_BUILTIN;
            c.builtin = s->builtin;
            return c;
        }
        if (s->kind == SYM_CTOR) {
            c.kind = CAL_CTOR;
            c.ctor = s->ctor;
            c.type = ety(g, e);
            return c;
        }
        return callee_from_sym(g, e, s);
    }
    c.kind = CAL_VALUE;
    c.env = gen(g, e);
    c.type = ety(g, e);
    return c;
}

/* Call a callee. `argt` are the (concrete) argument types. */
LLVMValueRef call_callee(CG *g, Callee *c, LLVMValueRef *args, Type **argt, int n) {
    switch (c->kind) {
    case CAL_FN: {
        if (c->fn->is_extern) return gen_extern_call(g, c->fn, args);
        Job *j = fn_instance(g, c->fn, c->targs);
        return LLVMBuildCall2(g->b, j->llty, j->llfn, args, (unsigned)n, "");
    }
    case CAL_LAMBDA: {
        Job *j = lambda_job(g, c->lambda, c->encl);
        LLVMValueRef *a = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(n + 2));
        a[0] = c->env ? c->env : LLVMConstNull(g->ptr);
        for (int i = 0; i < n; i++) a[i + 1] = args[i];
        return LLVMBuildCall2(g->b, j->llty, j->llfn, a, (unsigned)n + 1, "");
    }
    case CAL_VALUE: {
        LLVMTypeRef fty = closure_fn_type(g, c->type);
        LLVMValueRef code = LLVMBuildLoad2(g->b, g->ptr, c->env, "code");
        LLVMValueRef *a = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(n + 2));
        a[0] = c->env;
        for (int i = 0; i < n; i++) a[i + 1] = args[i];
        return LLVMBuildCall2(g->b, fty, code, a, (unsigned)n + 1, "");
    }
    case CAL_CTOR: return build_variant(g, c->ctor, args, argt, n);
    case CAL_BUILTIN: {
        LLVMValueRef r = builtin_values(g, c->builtin, args, argt);
        if (!r) {
            internal_error(g, "unsupported built-in callback");
            return unit_value(g);
        }
        return r;
    }
    default: internal_error(g, "bad callee"); return unit_value(g);
    }
}

static Job *spawn_job(CG *g, Expr *e) {
    Job *j = arena_alloc(g->arena, sizeof *j);
    j->kind = JOB_SPAWN;
    j->expr = e;
    j->encl = g->fs->inst;
    j->name = unique_name(
        g, arena_printf(g->arena, "%s$spawn%d", encl_name(j->encl), e->u.spawn.unit->index));
    LLVMTypeRef p[1] = {g->ptr};
    j->llty = LLVMFunctionType(g->i64, p, 1, 0);
    j->llfn = LLVMAddFunction(g->mod, j->name, j->llty);
    LLVMSetLinkage(j->llfn, LLVMInternalLinkage);
    vec_push(g->arena, &g->jobs, j);
    return j;
}

LLVMValueRef gen_spawn(CG *g, Expr *e) {
    Job *j = NULL;
    for (int i = 0; i < g->jobs.len; i++) {
        Job *k = g->jobs.items[i];
        if (k->kind == JOB_SPAWN && k->expr == e && k->encl == g->fs->inst) j = k;
    }
    if (!j) j = spawn_job(g, e);
    Binding *statics = NULL;
    LLVMValueRef env = build_env(g, e->u.spawn.unit, NULL, false, &statics);
    j->static_caps = statics;
    LLVMTypeRef p[2] = {g->ptr, g->ptr};
    LLVMValueRef a[2] = {j->llfn, env};
    return call_rt(g, "osp_fiber_spawn", g->i64, p, a, 2);
}
