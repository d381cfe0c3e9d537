/* codegen_builtins.c — iteration pipelines and built-ins that are runtime calls, from builtins.def (see codegen_internal.h). */
#include "codegen_internal.h"

IterDesc *gen_iter(CG *g, Expr *e) {
    if (e->kind == E_IDENT) {
        Binding *b = lookup(g, e->u.ident.sym);
        if (b && b->kind == BIND_ITER) return b->iter;
        internal_error(g, "unknown iterator");
        IterDesc *d = arena_alloc(g->arena, sizeof *d);
        d->start = d->end = ci64(g, 0);
        return d;
    }
    Builtin bi = e->u.call.callee->u.ident.sym->builtin;
    if (bi == B_RANGE) {
        IterDesc *d = arena_alloc(g->arena, sizeof *d);
        d->start = gen(g, e->u.call.args[0]);
        d->end = gen(g, e->u.call.args[1]);
        return d;
    }
    IterDesc *src = gen_iter(g, e->u.call.args[0]);
    IterDesc *d = arena_alloc(g->arena, sizeof *d);
    *d = *src;
    Stage *st = arena_alloc(g->arena, sizeof *st);
    st->prev = src->last;
    d->last = st;
    d->nstages++;
    st->is_filter = bi == B_FILTER;
    st->cb = callee_of(g, e->u.call.args[1]);
    st->in = ty_rep(sty(g, e->u.call.args[0]->type))->args[0];
    st->out = ty_rep(ety(g, e))->args[0];
    return d;
}
void emit_stages(CG *g, IterDesc *d, LLVMValueRef *x, Type **xt, LLVMBasicBlockRef skip) {
    Stage **order = arena_alloc(g->arena, sizeof *order * (size_t)(d->nstages + 1));
    int k = d->nstages;
    for (Stage *st = d->last; st && k > 0; st = st->prev) order[--k] = st;
    for (k = 0; k < d->nstages; k++) {
        Stage *st = order[k];
        LLVMValueRef a[1] = {*x};
        Type *at[1] = {*xt};
        LLVMValueRef r = call_callee(g, &st->cb, a, at, 1);
        if (st->is_filter) {
            LLVMBasicBlockRef pass = new_block(g, "filter.pass");
            LLVMBuildCondBr(g->b, r, pass, skip);
            LLVMPositionBuilderAtEnd(g->b, pass);
        } else {
            *x = r;
            *xt = st->out;
        }
    }
}

/* forEach / fold: one counted loop over the pipeline. */
static LLVMValueRef gen_loop(CG *g, Expr *e, bool is_fold) {
    Expr **args = e->u.call.args;
    IterDesc *d = gen_iter(g, args[0]);
    Type *elem = ty_rep(sty(g, args[0]->type))->args[0];
    Type *acct = is_fold ? ety(g, e) : NULL;
    LLVMValueRef acc_slot = NULL;
    if (is_fold) {
        LLVMValueRef init = gen(g, args[1]);
        acc_slot = entry_alloca(g, llty(g, acct), "acc");
        LLVMBuildStore(g->b, init, acc_slot);
    }
    Callee cb = callee_of(g, is_fold ? args[2] : args[1]);
    /* A map accumulator that the step uses linearly is updated in place (codegen_own.c):
     * a transient of the initial map for the loop, sealed when it ends. */
    bool transient = is_fold && ty_rep(acct)->kind == TY_MAP && fold_step_linear(&cb);
    if (transient) {
        LLVMValueRef a[1] = {LLVMBuildLoad2(g->b, g->ptr, acc_slot, "acc")};
        LLVMBuildStore(g->b, call_sig(g, "osp_map_transient", "p:p", a, NULL), acc_slot);
    }
    LLVMValueRef i_slot = entry_alloca(g, g->i64, "i");
    LLVMBuildStore(g->b, d->start, i_slot);
    LLVMBasicBlockRef cond = new_block(g, "loop.cond"), body = new_block(g, "loop.body"),
                      latch = new_block(g, "loop.next"), done = new_block(g, "loop.done");
    LLVMBuildBr(g->b, cond);
    LLVMPositionBuilderAtEnd(g->b, cond);
    LLVMValueRef i = LLVMBuildLoad2(g->b, g->i64, i_slot, "i");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, i, d->end, ""), body, done);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef x = i;
    Type *xt = g->tc->t_int;
    emit_stages(g, d, &x, &xt, latch);
    (void)elem;
    if (is_fold) {
        LLVMValueRef a[2] = {LLVMBuildLoad2(g->b, llty(g, acct), acc_slot, "acc"), x};
        Type *at[2] = {acct, xt};
        LLVMBuildStore(g->b, call_callee(g, &cb, a, at, 2), acc_slot);
    } else {
        LLVMValueRef a[1] = {x};
        Type *at[1] = {xt};
        call_callee(g, &cb, a, at, 1);
    }
    LLVMBuildBr(g->b, latch);
    LLVMPositionBuilderAtEnd(g->b, latch);
    LLVMValueRef i2 = LLVMBuildLoad2(g->b, g->i64, i_slot, "i");
    LLVMBuildStore(g->b, LLVMBuildNSWAdd(g->b, i2, ci64(g, 1), "i.next"), i_slot);
    LLVMBuildBr(g->b, cond);
    LLVMPositionBuilderAtEnd(g->b, done);
    if (!is_fold) return unit_value(g);
    LLVMValueRef result = LLVMBuildLoad2(g->b, llty(g, acct), acc_slot, "acc");
    if (transient) result = call_sig(g, "osp_map_seal", "p:p", (LLVMValueRef[]){result}, NULL);
    return result;
}

void release_list(CG *g, LLVMValueRef xs) {
    if (LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(g->b))) return; /* unreachable here */
    LLVMTypeRef p[1] = {g->ptr};
    call_rt(g, "osp_list_release", g->voidt, p, &xs, 1);
}

LLVMValueRef str_eq(CG *g, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef p[2] = {g->ptr, g->ptr};
    LLVMValueRef args[2] = {a, b};
    LLVMValueRef c = call_rt(g, "osp_str_cmp", g->i64, p, args, 2);
    return LLVMBuildICmp(g->b, LLVMIntEQ, c, ci64(g, 0), "");
}

static void tap_check(CG *g, LLVMValueRef label, LLVMValueRef ok, LLVMValueRef expected,
                      LLVMValueRef actual) {
    LLVMTypeRef p[4] = {g->ptr, g->i1, g->ptr, g->ptr};
    LLVMValueRef a[4] = {label ? label : LLVMConstNull(g->ptr), ok, expected, actual};
    LLVMValueRef c = call_rt(g, "osp_tap_check", g->voidt, p, a, 4);
    add_zeroext(g, c, 2, true);
}

/* ---- built-ins that are direct runtime calls ----
 * builtins.def gives each one's runtime symbol and C ABI ("ret:args"; i i64, f double,
 * p ptr, b i1 (C bool, zeroext), r a Result in two words (osp_rres), w a boxed word (the
 * argument's value boxed), v void). */
static LLVMTypeRef sig_llty(CG *g, char ch) {
    switch (ch) {
    case 'f': return g->f64;
    case 'p': return g->ptr;
    case 'b': return g->i1;
    case 'r': return g->rest;
    case 'v': return g->voidt;
    default: return g->i64;
    }
}

/* Call runtime function `fn` with signature `sig` on already evaluated arguments. */
LLVMValueRef call_sig(CG *g, const char *fn, const char *sig, LLVMValueRef *vals, Type **types) {
    LLVMTypeRef pt[8];
    LLVMValueRef a[8];
    int n = 0;
    for (const char *p = sig + 2; *p; p++, n++) {
        pt[n] = *p == 'w' ? g->i64 : sig_llty(g, *p);
        a[n] = *p == 'w' ? box(g, vals[n], types[n]) : vals[n];
    }
    LLVMValueRef c = call_rt(g, fn, sig_llty(g, sig[0]), pt, a, n);
    if (sig[0] == 'b') add_zeroext(g, c, 0, true);
    return c;
}

/* The table row of `b` when it lowers to a direct runtime call, else NULL. */
static const BuiltinInfo *rt_builtin(Builtin b) {
    const BuiltinInfo *bi = builtin_info(b);
    return bi->symbol && bi->abi ? bi : NULL;
}

static int64_t eq_kind(Type *t) {
    t = ty_rep(t);
    return t->kind == TY_STRING ? OSP_EQ_STRING : t->kind == TY_FLOAT ? OSP_EQ_FLOAT : OSP_EQ_WORD;
}

/* length / isEmpty of a string, list or map. */
LLVMValueRef gen_size(CG *g, LLVMValueRef v, Type *t) {
    t = ty_rep(t);
    const char *fn = t->kind == TY_LIST  ? "osp_list_length"
                     : t->kind == TY_MAP ? "osp_map_length"
                                         : "osp_str_length";
    LLVMTypeRef p[1] = {g->ptr};
    LLVMValueRef a[1] = {v};
    return call_rt(g, fn, g->i64, p, a, 1);
}

/* forEachList(xs, f): one counted loop over the list. */
static LLVMValueRef gen_foreach_list(CG *g, Expr *e) {
    Expr **args = e->u.call.args;
    LLVMValueRef xs = gen(g, args[0]);
    Type *elem = ty_rep(ety(g, args[0]))->args[0];
    Callee cb = callee_of(g, args[1]);
    LLVMValueRef len = gen_size(g, xs, ety(g, args[0]));
    LLVMValueRef i_slot = entry_alloca(g, g->i64, "i");
    LLVMBuildStore(g->b, ci64(g, 0), i_slot);
    LLVMBasicBlockRef cond = new_block(g, "each.cond"), body = new_block(g, "each.body"),
                      done = new_block(g, "each.done");
    LLVMBuildBr(g->b, cond);
    LLVMPositionBuilderAtEnd(g->b, cond);
    LLVMValueRef i = LLVMBuildLoad2(g->b, g->i64, i_slot, "i");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, i, len, ""), body, done);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMTypeRef p[2] = {g->ptr, g->i64};
    LLVMValueRef a[2] = {xs, i};
    LLVMValueRef x[1] = {unbox(g, call_rt(g, "osp_list_at", g->i64, p, a, 2), elem)};
    Type *xt[1] = {elem};
    call_callee(g, &cb, x, xt, 1);
    LLVMBuildStore(g->b, LLVMBuildNSWAdd(g->b, i, ci64(g, 1), ""), i_slot);
    LLVMBuildBr(g->b, cond);
    LLVMPositionBuilderAtEnd(g->b, done);
    return unit_value(g);
}

/* The Verdict a test body returned (docs/spec/language.md §13.1): report it. */
static void tap_verdict(CG *g, LLVMValueRef v, Type *t) {
    t = ty_rep(t);
    if (t->kind != TY_NAMED) return;
    TypeDecl *td = t->decl;
    if (strcmp(td->name, "Verdict") != 0 || td->kind != TD_UNION) return;
    LLVMValueRef tag = load_word(g, v, 0, "verdict");
    LLVMValueRef kind = ci64(g, OSP_VERDICT_PASS), reason = LLVMConstNull(g->ptr);
    for (int i = 0; i < td->nvariants; i++) {
        Variant *var = td->variants[i];
        int64_t k = strcmp(var->name, "Fail") == 0   ? OSP_VERDICT_FAIL
                    : strcmp(var->name, "Skip") == 0 ? OSP_VERDICT_SKIP
                                                     : OSP_VERDICT_PASS;
        LLVMValueRef is = LLVMBuildICmp(g->b, LLVMIntEQ, tag, ci64(g, var->tag), "");
        kind = LLVMBuildSelect(g->b, is, ci64(g, k), kind, "");
        if (var->nfields > 0 && ty_rep(var->types[0])->kind == TY_STRING) {
            /* only read the payload of a variant that has one */
            LLVMBasicBlockRef cur = LLVMGetInsertBlock(g->b), rd = new_block(g, "verdict.reason"),
                              join = new_block(g, "verdict.join");
            LLVMBuildCondBr(g->b, is, rd, join);
            LLVMPositionBuilderAtEnd(g->b, rd);
            LLVMValueRef r = LLVMBuildIntToPtr(g->b, load_word(g, v, 1, "reason"), g->ptr, "");
            LLVMBuildBr(g->b, join);
            LLVMPositionBuilderAtEnd(g->b, join);
            LLVMValueRef phi = LLVMBuildPhi(g->b, g->ptr, "");
            LLVMValueRef vals[2] = {reason, r};
            LLVMBasicBlockRef bbs[2] = {cur, rd};
            LLVMAddIncoming(phi, vals, bbs, 2);
            reason = phi;
        }
    }
    LLVMTypeRef p[2] = {g->i64, g->ptr};
    LLVMValueRef a[2] = {kind, reason};
    call_rt(g, "osp_tap_verdict", g->voidt, p, a, 2);
}

/* A built-in applied to evaluated arguments (direct calls and built-ins used as values).
 * Returns NULL for built-ins that need their argument expressions. */
LLVMValueRef builtin_values(CG *g, Builtin b, LLVMValueRef *v, Type **t) {
    const BuiltinInfo *rb = rt_builtin(b);
    if (rb) {
        LLVMValueRef c = call_sig(g, rb->symbol, rb->abi, v, t);
        return rb->abi[0] == 'v' ? unit_value(g) : c;
    }
    switch (b) {
    case B_PRINT: print_line(g, render(g, v[0], t[0], false)); return unit_value(g);
    case B_TOSTRING: return render(g, v[0], t[0], false);
    case B_LENGTH:
    case B_IS_EMPTY: {
        LLVMValueRef n = gen_size(g, v[0], t[0]);
        return b == B_LENGTH ? n : LLVMBuildICmp(g->b, LLVMIntEQ, n, ci64(g, 0), "");
    }
    case B_LIST:
        return call_sig(g, "osp_list_new", "p:ip",
                        (LLVMValueRef[]){ci64(g, 0), LLVMConstNull(g->ptr)}, NULL);
    case B_LIST_CONTAINS:
        return call_sig(g, "osp_list_contains", "b:pwi",
                        (LLVMValueRef[]){v[0], v[1], ci64(g, eq_kind(t[1]))},
                        (Type *[]){NULL, t[1], NULL});
    case B_INTDIV: return gen_intdiv(g, v[0], v[1]);
    case B_FIBER_YIELD: call_rt(g, "osp_fiber_yield", g->voidt, NULL, NULL, 0); return v[0];
    case B_TOFLOAT: return LLVMBuildSIToFP(g->b, v[0], g->f64, "");
    default: return NULL;
    }
}

/* A call of built-in `b`: the ones that need their argument expressions (callbacks, test
 * bodies, assertion lists) here, every other one through builtin_values. */
LLVMValueRef gen_builtin_call(CG *g, Expr *e, Builtin b) {
    Expr **args = e->u.call.args;
    switch (b) {
    case B_FOREACH_LIST: return gen_foreach_list(g, e);
    case B_LIST:
        return call_sig(g, list_new_fn(ety(g, e)), "p:ip",
                        (LLVMValueRef[]){ci64(g, 0), LLVMConstNull(g->ptr)}, NULL);
    case B_TO_GPU:
    case B_GPU_MAP:
    case B_GPU_ZIP_WITH:
    case B_GPU_FOLD:
    case B_GPU_SCAN:
    case B_GPU_FILTER: return gen_gpu_call(g, e, b);
    case B_FOREACH: return gen_loop(g, e, false);
    case B_FOLD: return gen_loop(g, e, true);
    case B_TEST: {
        LLVMValueRef name = gen(g, args[0]);
        Callee body = callee_of(g, args[1]);
        LLVMTypeRef p[1] = {g->ptr};
        LLVMValueRef a[1] = {name};
        LLVMValueRef run = call_rt(g, "osp_tap_case_begin", g->i32, p, a, 1);
        LLVMBasicBlockRef yes = new_block(g, "test.run"), after = new_block(g, "test.after");
        LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, run, ci32(g, 0), ""), yes, after);
        LLVMPositionBuilderAtEnd(g->b, yes);
        LLVMValueRef verdict = call_callee(g, &body, NULL, NULL, 0);
        tap_verdict(g, verdict, ty_rep(ety(g, args[1]))->ret);
        call_rt(g, "osp_tap_case_end", g->voidt, NULL, NULL, 0);
        LLVMBuildBr(g->b, after);
        LLVMPositionBuilderAtEnd(g->b, after);
        return unit_value(g);
    }
    case B_EXPECT:
    case B_CHECK: {
        int off = b == B_CHECK ? 1 : 0;
        LLVMValueRef label = off ? gen(g, args[0]) : NULL;
        LLVMValueRef x = gen(g, args[off]), y = gen(g, args[off + 1]);
        /* expect(actual, expected); check(label, expected, actual) */
        LLVMValueRef sx = render(g, x, ety(g, args[off]), true);
        LLVMValueRef sy = render(g, y, ety(g, args[off + 1]), true);
        LLVMValueRef expected = b == B_CHECK ? sx : sy, actual = b == B_CHECK ? sy : sx;
        tap_check(g, label, str_eq(g, sx, sy), expected, actual);
        return unit_value(g);
    }
    case B_EXPECT_TRUE:
    case B_EXPECT_FALSE:
    case B_CHECK_TRUE:
    case B_CHECK_FALSE: {
        bool labelled = b == B_CHECK_TRUE || b == B_CHECK_FALSE;
        bool want_true = b == B_EXPECT_TRUE || b == B_CHECK_TRUE;
        LLVMValueRef label = labelled ? gen(g, args[0]) : NULL;
        LLVMValueRef v = gen(g, args[labelled ? 1 : 0]);
        LLVMValueRef ok = want_true ? v : LLVMBuildNot(g->b, v, "");
        tap_check(g, label, ok, want_true ? g->str_true : g->str_false,
                  want_true ? g->str_false : g->str_true);
        return unit_value(g);
    }
    case B_EXPECT_ALL:
    case B_CHECK_ALL: {
        bool labelled = b == B_CHECK_ALL;
        LLVMValueRef label = labelled ? gen(g, args[0]) : NULL;
        Expr *list = args[labelled ? 1 : 0];
        for (int i = 0; i < list->u.list.n; i++) {
            LLVMValueRef v = gen(g, list->u.list.elems[i]);
            tap_check(g, label, v, g->str_true, g->str_false);
        }
        return unit_value(g);
    }
    default: {
        int n = e->u.call.nargs;
        LLVMValueRef vals[8];
        Type *types[8];
        if (n > 8) internal_error(g, "built-in with more than 8 arguments");
        for (int i = 0; i < n && i < 8; i++) {
            vals[i] = gen(g, args[i]);
            types[i] = ety(g, args[i]);
        }
        LLVMValueRef r = builtin_values(g, b, vals, types);
        if (!r) internal_error(g, "built-in used outside a pipeline");
        /* lists only this call could read (codegen_own.c) */
        for (int i = 0; i < n && i < 8; i++) {
            if (!list_taking_arg(b, i)) continue;
            Binding *var = args[i]->kind == E_IDENT ? lookup(g, args[i]->u.ident.sym) : NULL;
            if (owned_list_temp(args[i]) || (var && var->kind == BIND_VALUE && var->release_at_use))
                release_list(g, vals[i]);
        }
        return r ? r : unit_value(g);
    }
    }
}
