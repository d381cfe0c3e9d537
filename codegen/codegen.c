/* codegen.c — see codegen.h: function instances and jobs, emitting them, the entry point and
 * the module (osp_codegen). The parts share codegen_internal.h. */
#include "codegen_internal.h"

/* ---- functions and jobs ---- */

static void set_fp_attr(CG *g, LLVMValueRef fn) {
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, g->fp_attr);
    /* asynchronous unwind tables (.eh_frame), as C compilers emit by default */
    unsigned uw = LLVMGetEnumAttributeKindForName("uwtable", 7);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, uw, 2));
    unsigned nu = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, nu, 0));
}

static LLVMMetadataRef make_subprogram(CG *g, LLVMValueRef fn, const char *name, int line) {
    bool local = LLVMGetLinkage(fn) == LLVMInternalLinkage;
    LLVMMetadataRef sp = LLVMDIBuilderCreateFunction(
        g->dib, g->di_file, name, strlen(name), name, strlen(name), g->di_file,
        (unsigned)(line > 0 ? line : 1), g->di_fnty, local, 1, (unsigned)(line > 0 ? line : 1),
        LLVMDIFlagPrototyped, g->opts->opt_level > 0);
    LLVMSetSubprogram(fn, sp);
    return sp;
}

bool targs_eq(Type **a, Type **b, int n) {
    for (int i = 0; i < n; i++)
        if (!type_eq(a[i], b[i])) return false;
    return true;
}

const char *unique_name(CG *g, const char *base) {
    if (!LLVMGetNamedFunction(g->mod, base) && !LLVMGetNamedGlobal(g->mod, base)) return base;
    for (int k = 2;; k++) {
        const char *n = arena_printf(g->arena, "%s$%d", base, k);
        if (!LLVMGetNamedFunction(g->mod, n)) return n;
    }
}

/* The instance of user function `fn` for concrete `targs` (declared now, body queued). */
Job *fn_instance(CG *g, FnDecl *fn, Type **targs) {
    int count = 0;
    for (int i = 0; i < g->jobs.len; i++) {
        Job *j = g->jobs.items[i];
        if (j->kind != JOB_FN || j->fn != fn) continue;
        count++;
        if (targs_eq(j->targs, targs, fn->nqvars)) return j;
    }
    Job *j = arena_alloc(g->arena, sizeof *j);
    j->kind = JOB_FN;
    j->fn = fn;
    j->targs = targs;
    const char *name = count == 0 ? fn->name : arena_printf(g->arena, "%s$%d", fn->name, count + 1);
    j->name = name;
    Type *ft = subst(g, fn->type, j);
    LLVMTypeRef *ps = arena_alloc(g->arena, sizeof(LLVMTypeRef) * (size_t)(fn->nparams + 1));
    for (int i = 0; i < fn->nparams; i++) ps[i] = llty(g, ft->args[i]);
    j->llty = LLVMFunctionType(llty(g, ft->ret), ps, (unsigned)fn->nparams, 0);
    /* docs/spec/language.md §14: `osp_` names are the runtime's, and the generated code and
     * the inlined runtime bodies find its functions by name; a user function of such a name
     * (`fn osp_print_line(…)`) is emitted under another one, or it would take those calls */
    const char *llname = strncmp(name, "osp_", 4) == 0
                             ? unique_name(g, arena_printf(g->arena, "%s$user", name))
                             : name;
    j->llfn = LLVMAddFunction(g->mod, llname, j->llty);
    LLVMSetLinkage(j->llfn, LLVMInternalLinkage);
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].name)
            LLVMSetValueName2(LLVMGetParam(j->llfn, (unsigned)i), fn->params[i].name,
                              strlen(fn->params[i].name));
    vec_push(g->arena, &g->jobs, j);
    return j;
}

const char *encl_name(Job *encl) {
    return encl ? encl->name : "main";
}

/* The closure-calling LLVM type of a function value of (concrete) type `ft`:
 * `ret (ptr closure, params...)`. */
LLVMTypeRef closure_fn_type(CG *g, Type *ft) {
    ft = ty_rep(ft);
    LLVMTypeRef *ps = arena_alloc(g->arena, sizeof(LLVMTypeRef) * (size_t)(ft->nargs + 2));
    ps[0] = g->ptr;
    for (int i = 0; i < ft->nargs; i++) ps[i + 1] = llty(g, ft->args[i]);
    return LLVMFunctionType(llty(g, ft->ret), ps, (unsigned)ft->nargs + 1, 0);
}

Job *lambda_job(CG *g, Expr *lam, Job *encl) {
    for (int i = 0; i < g->jobs.len; i++) {
        Job *j = g->jobs.items[i];
        if (j->kind == JOB_LAMBDA && j->expr == lam && j->encl == encl) return j;
    }
    Job *j = arena_alloc(g->arena, sizeof *j);
    j->kind = JOB_LAMBDA;
    j->expr = lam;
    j->encl = encl;
    j->name = unique_name(
        g, arena_printf(g->arena, "%s$lambda%d", encl_name(encl), lam->u.lambda.unit->index));
    j->llty = closure_fn_type(g, subst(g, lam->type, encl));
    j->llfn = LLVMAddFunction(g->mod, j->name, j->llty);
    LLVMSetLinkage(j->llfn, LLVMInternalLinkage);
    LLVMSetValueName2(LLVMGetParam(j->llfn, 0), "env", 3);
    vec_push(g->arena, &g->jobs, j);
    return j;
}

/* ---- emitting jobs ---- */

static void begin_function(CG *g, FnState *fs, LLVMValueRef fn, const char *name, int line,
                           Job *job, Job *inst) {
    memset(fs, 0, sizeof *fs);
    fs->fn = fn;
    fs->job = job;
    fs->inst = inst;
    set_fp_attr(g, fn);
    fs->sp = make_subprogram(g, fn, name, line);
    fs->entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
    g->fs = fs;
    LLVMPositionBuilderAtEnd(g->b, fs->entry);
    set_loc_line(g, line, 1);
}

void begin_helper(CG *g, FnState *fs, LLVMValueRef fn, const char *name, int line) {
    begin_function(g, fs, fn, name, line, NULL, NULL);
}

static void emit_job(CG *g, Job *j) {
    FnState fs;
    j->emitted = true;
    switch (j->kind) {
    case JOB_FN: {
        FnDecl *f = j->fn;
        begin_function(g, &fs, j->llfn, j->name, f->line, j, j);
        fs.acc_state = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(f->nparams + 1));
        for (int i = 0; i < f->nparams; i++) {
            fs.acc_state[i] = NULL;
            Type *pt = ty_rep(sty(g, ty_rep(f->type)->args[i]));
            if (pt->kind != TY_STRING || !str_param_appendable(f, i)) continue;
            LLVMTypeRef st = LLVMArrayType2(g->i64, 3);
            fs.acc_state[i] = entry_alloca(g, st, "str.acc");
            LLVMBuildStore(g->b, LLVMConstNull(st), fs.acc_state[i]);
        }
        fs.loop_head = LLVMAppendBasicBlockInContext(g->ctx, j->llfn, "tailrecurse");
        LLVMBuildBr(g->b, fs.loop_head);
        LLVMPositionBuilderAtEnd(g->b, fs.loop_head);
        fs.loop_phis = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(f->nparams + 1));
        for (int i = 0; i < f->nparams; i++) {
            LLVMValueRef p = LLVMGetParam(j->llfn, (unsigned)i);
            fs.loop_phis[i] = LLVMBuildPhi(g->b, LLVMTypeOf(p), f->params[i].name);
            LLVMAddIncoming(fs.loop_phis[i], &p, &fs.entry, 1);
            if (f->params[i].sym) bind_sym(g, f->params[i].sym, BIND_VALUE)->v = fs.loop_phis[i];
        }
        fs.tail = true;
        LLVMValueRef v = gen(g, f->body);
        LLVMBuildRet(g->b, v);
        break;
    }
    case JOB_LAMBDA: {
        Expr *lam = j->expr;
        begin_function(g, &fs, j->llfn, j->name, lam->pos.line, j, j->encl);
        bind_captures(g, lam->u.lambda.unit, LLVMGetParam(j->llfn, 0), j->static_caps, false);
        for (int i = 0; i < lam->u.lambda.nparams; i++)
            if (lam->u.lambda.params[i].sym)
                bind_sym(g, lam->u.lambda.params[i].sym, BIND_VALUE)->v =
                    LLVMGetParam(j->llfn, (unsigned)i + 1);
        LLVMValueRef v = gen(g, lam->u.lambda.body);
        LLVMBuildRet(g->b, v);
        break;
    }
    case JOB_SPAWN: {
        Expr *e = j->expr;
        begin_function(g, &fs, j->llfn, j->name, e->pos.line, j, j->encl);
        bind_captures(g, e->u.spawn.unit, LLVMGetParam(j->llfn, 0), j->static_caps, false);
        LLVMValueRef v = gen(g, e->u.spawn.e);
        LLVMBuildRet(g->b, box(g, v, ety(g, e->u.spawn.e)));
        break;
    }
    case JOB_ARM: {
        Expr *h = j->expr;
        HandleArm *arm = j->arm;
        begin_function(g, &fs, j->llfn, j->name, arm->pos.line, j, j->encl);
        bind_captures(g, h->u.handle.group, LLVMGetParam(j->llfn, 0), j->static_caps, true);
        if (arm->resuming) {
            fs.cont_k = LLVMGetParam(j->llfn, 1);
            fs.handle_type = ety(g, h);
            for (int i = 0; i < arm->nbinders; i++) {
                Param *p = &arm->binders[i];
                if (!p->sym) continue;
                LLVMTypeRef pt[2] = {g->ptr, g->i64};
                LLVMValueRef a[2] = {fs.cont_k, ci64(g, i)};
                LLVMValueRef w = call_rt(g, "osp_cont_arg", g->i64, pt, a, 2);
                bind_sym(g, p->sym, BIND_VALUE)->v = unbox(g, w, sty(g, p->sym->type));
            }
            LLVMValueRef v = gen(g, arm->body);
            LLVMBuildRet(g->b, box(g, v, ety(g, arm->body)));
        } else {
            for (int i = 0; i < arm->nbinders; i++)
                if (arm->binders[i].sym)
                    bind_sym(g, arm->binders[i].sym, BIND_VALUE)->v =
                        LLVMGetParam(j->llfn, (unsigned)i + 1);
            LLVMValueRef v = gen(g, arm->body);
            Type **inst = concrete_inst(g, h->u.handle.decl, h->u.handle.inst);
            Type *opt = ty_rep(eff_op_type(g, h->u.handle.decl, arm->opi, inst));
            /* docs/spec/language.md §12.3: an arm of a Unit operation may have any type but a
             * Result; its value is discarded */
            if (ty_rep(opt->ret)->kind == TY_UNIT && ty_rep(ety(g, arm->body))->kind != TY_UNIT)
                v = unit_value(g);
            LLVMBuildRet(g->b, v);
        }
        break;
    }
    case JOB_HBODY: {
        Expr *h = j->expr;
        begin_function(g, &fs, j->llfn, j->name, h->u.handle.body->pos.line, j, j->encl);
        bind_captures(g, h->u.handle.group, LLVMGetParam(j->llfn, 0), j->static_caps, true);
        LLVMValueRef v = gen(g, h->u.handle.body);
        LLVMBuildRet(g->b, box(g, v, ety(g, h->u.handle.body)));
        break;
    }
    case JOB_WRAP: {
        begin_function(g, &fs, j->llfn, j->name, j->line, j, NULL);
        Type *ft = ty_rep(j->wtype);
        int n = ft->nargs;
        LLVMValueRef *args = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(n + 1));
        for (int i = 0; i < n; i++) args[i] = LLVMGetParam(j->llfn, (unsigned)i + 1);
        LLVMValueRef v = call_callee(g, &j->wrapped, args, ft->args, n);
        LLVMBuildRet(g->b, v);
        break;
    }
    case JOB_GPU:
        begin_function(g, &fs, j->llfn, j->name, j->line, j, NULL);
        gen_gpu_chunk(g, j);
        break;
    }
    g->fs = NULL;
}

static void emit_main(CG *g) {
    const Program *prog = g->prog;
    LLVMTypeRef p[2] = {g->i32, g->ptr};
    LLVMTypeRef ty = LLVMFunctionType(g->i32, p, 2, 0);
    LLVMValueRef fn = LLVMAddFunction(g->mod, "main", ty);
    FnState fs;
    begin_function(g, &fs, fn, "main", prog->main_line, NULL, NULL);
    LLVMValueRef a[2] = {LLVMGetParam(fn, 0), LLVMGetParam(fn, 1)};
    call_rt(g, "osp_rt_start", g->voidt, p, a, 2);
    LLVMValueRef value;
    for (int i = 0; i < prog->nstmts; i++) gen_stmt(g, prog->stmts[i], &value);
    if (prog->main_fn) gen(g, prog->main_fn->body);
    set_loc_line(g, prog->main_line, 1);
    if (prog->uses_testing)
        LLVMBuildRet(g->b, call_rt(g, "osp_tap_finish", g->i32, NULL, NULL, 0));
    else
        LLVMBuildRet(g->b, ci32(g, 0));
    g->fs = NULL;
}

LLVMModuleRef osp_codegen(LLVMContextRef ctx, const Program *prog, LLVMTargetMachineRef tm,
                          const osp_cg_options *opts, char **err) {
    CG G = {0}, *g = &G;
    g->ctx = ctx;
    g->prog = prog;
    g->opts = opts;
    g->arena = arena_new();
    /* the base types are the front end's; types built here (substituted instances) are
     * allocated in codegen's own arena */
    g->types = prog->types;
    g->types.arena = g->arena;
    g->tc = &g->types;
    g->mod = LLVMModuleCreateWithNameInContext(prog->abs_path, ctx);
    LLVMSetSourceFileName(g->mod, prog->abs_path, strlen(prog->abs_path));
    if (tm) {
        char *triple = LLVMGetTargetMachineTriple(tm);
        LLVMSetTarget(g->mod, triple);
        LLVMDisposeMessage(triple);
        LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
        char *dl = LLVMCopyStringRepOfTargetData(td);
        LLVMSetDataLayout(g->mod, dl);
        LLVMDisposeMessage(dl);
        LLVMDisposeTargetData(td);
    }
    g->b = LLVMCreateBuilderInContext(ctx);
    g->i1 = LLVMInt1TypeInContext(ctx);
    g->i8 = LLVMInt8TypeInContext(ctx);
    g->i32 = LLVMInt32TypeInContext(ctx);
    g->i64 = LLVMInt64TypeInContext(ctx);
    g->f64 = LLVMDoubleTypeInContext(ctx);
    g->ptr = LLVMPointerTypeInContext(ctx, 0);
    g->voidt = LLVMVoidTypeInContext(ctx);
    LLVMTypeRef rf[2] = {g->i64, g->i64};
    g->rest = LLVMStructTypeInContext(ctx, rf, 2, 0);
    LLVMTypeRef of[3] = {g->i64, g->i64, g->ptr}; /* osp_result: tag, value, message */
    g->osp_result_t = LLVMStructTypeInContext(ctx, of, 3, 0);
    /* osp_eff_entry: effect, op, fn, env, cont, arm, below, next */
    LLVMTypeRef ef[8] = {g->ptr, g->ptr, g->ptr, g->ptr, g->ptr, g->i64, g->ptr, g->ptr};
    g->eff_entry_t = LLVMStructTypeInContext(ctx, ef, 8, 0);
    g->fp_attr = LLVMCreateStringAttribute(ctx, "frame-pointer", 13, "all", 3);

    /* debug info: one compile unit naming the absolute source path */
    g->dib = LLVMCreateDIBuilder(g->mod);
    const char *path = prog->abs_path;
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) : 0;
    g->di_file = LLVMDIBuilderCreateFile(g->dib, path, strlen(path), path, dirlen ? dirlen : 1);
    if (!dirlen) g->di_file = LLVMDIBuilderCreateFile(g->dib, path, strlen(path), ".", 1);
    const char *producer = "osprey " OSPREY_VERSION_STRING;
    g->di_cu = LLVMDIBuilderCreateCompileUnit(
        g->dib, LLVMDWARFSourceLanguageC, g->di_file, producer, strlen(producer),
        opts->opt_level > 0, "", 0, 0, "", 0, LLVMDWARFEmissionFull, 0, 0, 0, "", 0, "", 0);
    LLVMMetadataRef no_types[1] = {NULL}; /* return type unspecified, like C's `void f()` */
    g->di_fnty = LLVMDIBuilderCreateSubroutineType(g->dib, g->di_file, no_types, 1, LLVMDIFlagZero);
    LLVMAddModuleFlag(g->mod, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                      LLVMValueAsMetadata(LLVMConstInt(g->i32, LLVMDebugMetadataVersion(), 0)));
    LLVMAddModuleFlag(g->mod, LLVMModuleFlagBehaviorWarning, "Dwarf Version", 13,
                      LLVMValueAsMetadata(LLVMConstInt(g->i32, 5, 0)));
    LLVMAddModuleFlag(g->mod, LLVMModuleFlagBehaviorWarning, "frame-pointer", 13,
                      LLVMValueAsMetadata(LLVMConstInt(g->i32, 2, 0)));

    g->str_integer_overflow = cstr(g, "integer overflow");
    g->str_division_by_zero = cstr(g, "division by zero");
    g->str_zero = cstr(g, "0");
    g->str_true = cstr(g, "true");
    g->str_false = cstr(g, "false");
    g->str_file = cstr(g, prog->path);

    /* every monomorphic function is emitted (in source order), polymorphic ones per use */
    for (int i = 0; i < prog->fns.len; i++) {
        FnDecl *f = prog->fns.items[i];
        if (!f->is_main && !f->is_extern && f->nqvars == 0 && f->type) fn_instance(g, f, NULL);
    }
    emit_main(g);
    for (int i = 0; i < g->jobs.len && !g->error; i++) {
        Job *j = g->jobs.items[i];
        if (!j->emitted) emit_job(g, j);
    }
    LLVMDIBuilderFinalize(g->dib);
    LLVMDisposeDIBuilder(g->dib);
    LLVMDisposeBuilder(g->b);
    if (!g->error) {
        char *msg = NULL;
        if (LLVMVerifyModule(g->mod, LLVMReturnStatusAction, &msg)) {
            size_t n = strlen(msg) + 64;
            g->error = malloc(n);
            if (g->error) snprintf(g->error, n, "generated invalid IR: %s", msg);
        }
        LLVMDisposeMessage(msg);
    }
    arena_free(g->arena);
    if (g->error) {
        *err = g->error;
        LLVMDisposeModule(g->mod);
        return NULL;
    }
    return g->mod;
}
