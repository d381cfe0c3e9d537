/* codegen_effects.c — perform, handle and resume (see codegen_internal.h). */
#include "codegen_internal.h"

/* ---- effects (docs/spec/language.md §12, §14.6) ---- */

/* The interned key string of an effect instantiation: `Log`, `Stash<int>`. */
static LLVMValueRef intern_string(CG *g, const char *s) {
    for (int i = 0; i + 1 < g->keys.len; i += 2)
        if (strcmp(g->keys.items[i], s) == 0) return g->keys.items[i + 1];
    LLVMValueRef v = cstr(g, s);
    vec_push(g->arena, &g->keys, (void *)s);
    vec_push(g->arena, &g->keys, v);
    return v;
}

Type **concrete_inst(CG *g, EffectDecl *d, Type **inst) {
    Type **t = arena_alloc(g->arena, sizeof(Type *) * (size_t)(d->nparams + 1));
    for (int i = 0; i < d->nparams; i++) t[i] = sty(g, inst[i]);
    return t;
}

static LLVMValueRef effect_key(CG *g, EffectDecl *d, Type **inst) {
    const char *s = d->name;
    if (d->nparams > 0) {
        s = arena_printf(g->arena, "%s<", d->name);
        for (int i = 0; i < d->nparams; i++)
            s = arena_printf(g->arena, "%s%s%s", s, i ? ", " : "", ty_show(g->arena, inst[i]));
        s = arena_printf(g->arena, "%s>", s);
    }
    return intern_string(g, s);
}

/* The concrete type of operation `opi` of `d` with concrete arguments `inst`. */
Type *eff_op_type(CG *g, EffectDecl *d, int opi, Type **inst) {
    return ty_rep(subst_vars(g, d->ops[opi].type, d->pvars, inst, d->nparams));
}

LLVMValueRef gen_perform(CG *g, Expr *e) {
    EffectDecl *d = e->u.perform.decl;
    int n = e->u.perform.nargs;
    LLVMValueRef *args = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(n + 2));
    Type **argt = arena_alloc(g->arena, sizeof(Type *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        args[i + 1] = gen(g, e->u.perform.args[i]);
        argt[i] = ety(g, e->u.perform.args[i]);
    }
    Type **inst = concrete_inst(g, d, e->u.perform.inst);
    Type *ft = eff_op_type(g, d, e->u.perform.opi, inst);
    Type *rt = ft->ret;
    LLVMValueRef key = effect_key(g, d, inst), op = intern_string(g, e->u.perform.op);
    LLVMTypeRef fp[2] = {g->ptr, g->ptr};
    LLVMValueRef fa[2] = {key, op};
    LLVMValueRef first = call_rt(g, "osp_eff_find", g->ptr, fp, fa, 2);
    LLVMBasicBlockRef start = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef dispatch = new_block(g, "perform.dispatch"),
                      plain = new_block(g, "perform.plain"),
                      resuming = new_block(g, "perform.resuming"),
                      resumed = new_block(g, "perform.resumed"),
                      done = new_block(g, "perform.done");
    LLVMBuildBr(g->b, dispatch);
    LLVMPositionBuilderAtEnd(g->b, dispatch);
    LLVMValueRef cur = LLVMBuildPhi(g->b, g->ptr, "entry");
    LLVMValueRef fn =
        LLVMBuildLoad2(g->b, g->ptr, LLVMBuildStructGEP2(g->b, g->eff_entry_t, cur, 2, ""), "arm");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, fn, LLVMConstNull(g->ptr), ""), plain,
                    resuming);
    /* a plain arm: call it here, with the handler stack outside its handle */
    LLVMPositionBuilderAtEnd(g->b, plain);
    args[0] =
        LLVMBuildLoad2(g->b, g->ptr, LLVMBuildStructGEP2(g->b, g->eff_entry_t, cur, 3, ""), "env");
    LLVMTypeRef p1[1] = {g->ptr};
    LLVMValueRef a1[1] = {cur};
    LLVMValueRef saved = call_rt(g, "osp_eff_arm_enter", g->ptr, p1, a1, 1);
    LLVMValueRef r1 = LLVMBuildCall2(g->b, closure_fn_type(g, ft), fn, args, (unsigned)n + 1, "");
    LLVMValueRef a2[1] = {saved};
    call_rt(g, "osp_eff_arm_leave", g->voidt, p1, a2, 1);
    LLVMBasicBlockRef plain_end = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, done);
    /* a resuming arm: hand the arguments to its handle and wait to be resumed */
    LLVMPositionBuilderAtEnd(g->b, resuming);
    /* The arguments and the result slot live in one small collector block, not in this
     * frame: a stack buffer whose address reaches the runtime would keep LLVM from making
     * a tail call of this function, so a loop that performs could not run in constant stack.
     * The block stays reachable from this thread's stack while it is suspended. */
    LLVMValueRef arr = gc_alloc(g, 8 * (int64_t)(n + 1));
    LLVMValueRef out_idx[1] = {ci64(g, n)};
    LLVMValueRef out = LLVMBuildInBoundsGEP2(g->b, g->i64, arr, out_idx, 1, "perform.value");
    for (int i = 0; i < n; i++) {
        LLVMValueRef idx[1] = {ci64(g, i)};
        LLVMBuildStore(g->b, box(g, args[i + 1], argt[i]),
                       LLVMBuildInBoundsGEP2(g->b, g->i64, arr, idx, 1, ""));
    }
    LLVMTypeRef sp[4] = {g->ptr, g->ptr, g->i64, g->ptr};
    LLVMValueRef sa[4] = {cur, arr, ci64(g, n), out};
    LLVMValueRef retry = call_rt(g, "osp_cont_suspend", g->ptr, sp, sa, 4);
    LLVMBasicBlockRef resuming_end = LLVMGetInsertBlock(g->b);
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, retry, LLVMConstNull(g->ptr), ""), resumed,
                    dispatch);
    LLVMValueRef inc[2] = {first, retry};
    LLVMBasicBlockRef incb[2] = {start, resuming_end};
    LLVMAddIncoming(cur, inc, incb, 2);
    LLVMPositionBuilderAtEnd(g->b, resumed);
    LLVMValueRef r2 = unbox(g, LLVMBuildLoad2(g->b, g->i64, out, ""), rt);
    LLVMBasicBlockRef resumed_end = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
    LLVMValueRef phi = LLVMBuildPhi(g->b, llty(g, rt), "");
    LLVMValueRef vals[2] = {r1, r2};
    LLVMBasicBlockRef bbs[2] = {plain_end, resumed_end};
    LLVMAddIncoming(phi, vals, bbs, 2);
    return phi;
}

static Job *arm_job(CG *g, Expr *h, HandleArm *arm) {
    for (int i = 0; i < g->jobs.len; i++) {
        Job *j = g->jobs.items[i];
        if (j->kind == JOB_ARM && j->arm == arm && j->encl == g->fs->inst) return j;
    }
    Job *j = arena_alloc(g->arena, sizeof *j);
    j->kind = JOB_ARM;
    j->expr = h;
    j->arm = arm;
    j->encl = g->fs->inst;
    j->name = unique_name(g, arena_printf(g->arena, "%s$%s.%s%d", encl_name(j->encl),
                                          h->u.handle.decl->name, arm->op, arm->index));
    if (arm->resuming) {
        LLVMTypeRef p[2] = {g->ptr, g->ptr};
        j->llty = LLVMFunctionType(g->i64, p, 2, 0);
    } else {
        Type **inst = concrete_inst(g, h->u.handle.decl, h->u.handle.inst);
        j->llty = closure_fn_type(g, eff_op_type(g, h->u.handle.decl, arm->opi, inst));
    }
    j->llfn = LLVMAddFunction(g->mod, j->name, j->llty);
    LLVMSetLinkage(j->llfn, LLVMInternalLinkage);
    LLVMSetValueName2(LLVMGetParam(j->llfn, 0), "env", 3);
    vec_push(g->arena, &g->jobs, j);
    return j;
}

static Job *hbody_job(CG *g, Expr *h) {
    for (int i = 0; i < g->jobs.len; i++) {
        Job *j = g->jobs.items[i];
        if (j->kind == JOB_HBODY && j->expr == h && j->encl == g->fs->inst) return j;
    }
    Job *j = arena_alloc(g->arena, sizeof *j);
    j->kind = JOB_HBODY;
    j->expr = h;
    j->encl = g->fs->inst;
    j->name = unique_name(
        g, arena_printf(g->arena, "%s$handle%d", encl_name(j->encl), h->u.handle.index));
    LLVMTypeRef p[1] = {g->ptr};
    j->llty = LLVMFunctionType(g->i64, p, 1, 0);
    j->llfn = LLVMAddFunction(g->mod, j->name, j->llty);
    LLVMSetLinkage(j->llfn, LLVMInternalLinkage);
    LLVMSetValueName2(LLVMGetParam(j->llfn, 0), "env", 3);
    vec_push(g->arena, &g->jobs, j);
    return j;
}

LLVMValueRef gen_handle(CG *g, Expr *e) {
    EffectDecl *d = e->u.handle.decl;
    Type **inst = concrete_inst(g, d, e->u.handle.inst);
    LLVMValueRef key = effect_key(g, d, inst);
    Binding *statics = NULL;
    LLVMValueRef env = build_env(g, e->u.handle.group, NULL, true, &statics);
    int na = e->u.handle.narms;
    Job **jobs = arena_alloc(g->arena, sizeof(Job *) * (size_t)(na + 1));
    for (int i = 0; i < na; i++) {
        jobs[i] = arm_job(g, e, &e->u.handle.arms[i]);
        jobs[i]->static_caps = statics;
    }
    LLVMValueRef cont = LLVMConstNull(g->ptr);
    Job *body = NULL;
    if (e->u.handle.resuming) {
        int nr = e->u.handle.nresuming;
        LLVMValueRef *fns = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(nr + 1));
        for (int i = 0; i < na; i++)
            if (e->u.handle.arms[i].resuming) fns[e->u.handle.arms[i].table_index] = jobs[i]->llfn;
        LLVMValueRef init = LLVMConstArray2(g->ptr, fns, (uint64_t)nr);
        LLVMValueRef table = LLVMAddGlobal(
            g->mod, LLVMTypeOf(init),
            arena_printf(g->arena, "%s$handle%d.arms", encl_name(g->fs->inst), e->u.handle.index));
        LLVMSetInitializer(table, init);
        LLVMSetGlobalConstant(table, 1);
        LLVMSetLinkage(table, LLVMPrivateLinkage);
        LLVMTypeRef p[3] = {g->ptr, g->ptr, g->i64};
        LLVMValueRef a[3] = {env, table, ci64(g, nr)};
        cont = call_rt(g, "osp_cont_new", g->ptr, p, a, 3);
        body = hbody_job(g, e);
        body->static_caps = statics;
    }
    LLVMValueRef below = call_rt(g, "osp_eff_top", g->ptr, NULL, NULL, 0);
    for (int i = 0; i < na; i++) {
        HandleArm *arm = &e->u.handle.arms[i];
        LLVMTypeRef p[7] = {g->ptr, g->ptr, g->ptr, g->ptr, g->ptr, g->i64, g->ptr};
        LLVMValueRef a[7] = {key,
                             intern_string(g, arm->op),
                             arm->resuming ? LLVMConstNull(g->ptr) : jobs[i]->llfn,
                             env,
                             arm->resuming ? cont : LLVMConstNull(g->ptr),
                             ci64(g, arm->resuming ? arm->table_index : 0),
                             below};
        call_rt(g, "osp_eff_push", g->voidt, p, a, 7);
    }
    LLVMTypeRef p1[1] = {g->i64};
    LLVMValueRef a1[1] = {ci64(g, na)};
    if (!e->u.handle.resuming) {
        LLVMValueRef v = gen(g, e->u.handle.body);
        call_rt(g, "osp_eff_pop", g->voidt, p1, a1, 1);
        return v;
    }
    LLVMTypeRef pb[3] = {g->ptr, g->ptr, g->ptr};
    LLVMValueRef ab[3] = {cont, body->llfn, env};
    call_rt(g, "osp_cont_begin", g->voidt, pb, ab, 3);
    call_rt(g, "osp_eff_pop", g->voidt, p1, a1, 1);
    LLVMTypeRef pd[1] = {g->ptr};
    LLVMValueRef ad[1] = {cont};
    LLVMValueRef w = call_rt(g, "osp_cont_drive", g->i64, pd, ad, 1);
    return unbox(g, w, ety(g, e));
}

LLVMValueRef gen_resume(CG *g, Expr *e) {
    Type *ht = g->fs->handle_type;
    if (!g->fs->cont_k || !ht) {
        internal_error(g, "resume outside a resuming arm");
        return unit_value(g);
    }
    LLVMValueRef w =
        e->u.resume.e ? box(g, gen(g, e->u.resume.e), ety(g, e->u.resume.e)) : ci64(g, 0);
    LLVMTypeRef p[2] = {g->ptr, g->i64};
    LLVMValueRef a[2] = {g->fs->cont_k, w};
    if (e->u.resume.tail) {
        /* the arm's value is whatever the body does next: let the drive loop wait for it */
        LLVMValueRef r = call_rt(g, "osp_cont_resume_tail", g->i64, p, a, 2);
        LLVMBuildRet(g->b, r);
        LLVMPositionBuilderAtEnd(g->b, new_block(g, "after.resume"));
        return LLVMGetUndef(llty(g, ht));
    }
    return unbox(g, call_rt(g, "osp_cont_resume", g->i64, p, a, 2), ht);
}
