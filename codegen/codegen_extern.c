/* codegen_extern.c — calls of C functions declared `extern` (see codegen_internal.h). */
#include "codegen_internal.h"

/* ---- extern (docs/spec/language.md §3.5) ----
 * An extern is a direct call of the C symbol of exactly its name: int i64, float double,
 * bool i1 zeroext, Ptr and string ptr, a function type a C function pointer, no result
 * `void` (the call's value is Unit). A string result is copied at once (NULL gives ""). */
static LLVMTypeRef extern_llty(CG *g, Type *t, bool result) {
    t = ty_rep(t);
    if (result && t->kind == TY_UNIT) return g->voidt;
    if (t->kind == TY_FN) return g->ptr;
    return llty(g, t);
}

static LLVMValueRef extern_decl(CG *g, FnDecl *f, LLVMTypeRef *out_ty) {
    Type *ft = ty_rep(f->type);
    LLVMTypeRef *ps = arena_alloc(g->arena, sizeof(LLVMTypeRef) * (size_t)(f->nparams + 1));
    for (int i = 0; i < f->nparams; i++) ps[i] = extern_llty(g, ft->args[i], false);
    LLVMTypeRef ret = extern_llty(g, ft->ret, true);
    /* rt_fn declares once and marks C bools zeroext, as for the runtime's own functions */
    return rt_fn(g, f->name, ret, ps, f->nparams, out_ty);
}

LLVMValueRef gen_extern_call(CG *g, FnDecl *f, LLVMValueRef *args) {
    LLVMTypeRef ty;
    LLVMValueRef fn = extern_decl(g, f, &ty);
    LLVMValueRef c = LLVMBuildCall2(g->b, ty, fn, args, (unsigned)f->nparams, "");
    Type *ft = ty_rep(f->type);
    for (int i = 0; i < f->nparams; i++)
        if (ty_rep(ft->args[i])->kind == TY_BOOL) add_zeroext(g, c, (unsigned)i + 1, true);
    Type *rt = ty_rep(ft->ret);
    if (rt->kind == TY_BOOL) add_zeroext(g, c, LLVMAttributeReturnIndex, true);
    if (rt->kind == TY_UNIT) return unit_value(g);
    if (rt->kind == TY_STRING) {
        LLVMTypeRef p[1] = {g->ptr};
        LLVMValueRef a[1] = {c};
        return call_rt(g, "osp_str_from_c", g->ptr, p, a, 1);
    }
    return c;
}

/* A C function pointer for argument `e` of an extern's function-typed parameter of type
 * `ft`: a top-level function's instance, or for a lambda that captures nothing a thunk
 * `ret thunk(params...)` that calls the lambda's code with a NULL closure. */
LLVMValueRef extern_fn_pointer(CG *g, Expr *e, Type *ft) {
    if (e->kind == E_IDENT && e->u.ident.sym && e->u.ident.sym->kind == SYM_FN &&
        !e->u.ident.sym->fn->is_extern)
        return fn_instance(g, e->u.ident.sym->fn, ident_targs(g, e))->llfn;
    if (e->kind == E_IDENT && e->u.ident.sym && e->u.ident.sym->kind == SYM_FN) {
        LLVMTypeRef ty;
        return extern_decl(g, e->u.ident.sym->fn, &ty);
    }
    if (e->kind == E_LAMBDA && e->u.lambda.unit->captures.len == 0) {
        Job *j = lambda_job(g, e, g->fs->inst);
        ft = ty_rep(ft);
        LLVMTypeRef *ps = arena_alloc(g->arena, sizeof(LLVMTypeRef) * (size_t)(ft->nargs + 1));
        for (int i = 0; i < ft->nargs; i++) ps[i] = llty(g, ft->args[i]);
        LLVMTypeRef tty = LLVMFunctionType(llty(g, ft->ret), ps, (unsigned)ft->nargs, 0);
        const char *name = unique_name(g, arena_printf(g->arena, "%s$cfn", j->name));
        LLVMValueRef thunk = LLVMAddFunction(g->mod, name, tty);
        LLVMSetLinkage(thunk, LLVMInternalLinkage);
        LLVMAddTargetDependentFunctionAttr(thunk, "frame-pointer", "all");
        LLVMBasicBlockRef save = LLVMGetInsertBlock(g->b);
        LLVMMetadataRef save_loc = LLVMGetCurrentDebugLocation2(g->b);
        LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(g->ctx, thunk, "entry");
        LLVMPositionBuilderAtEnd(g->b, bb);
        LLVMSetCurrentDebugLocation2(g->b, NULL);
        LLVMValueRef *a = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(ft->nargs + 2));
        a[0] = LLVMConstNull(g->ptr);
        for (int i = 0; i < ft->nargs; i++) a[i + 1] = LLVMGetParam(thunk, (unsigned)i);
        LLVMValueRef r = LLVMBuildCall2(g->b, j->llty, j->llfn, a, (unsigned)ft->nargs + 1, "");
        LLVMBuildRet(g->b, r);
        LLVMPositionBuilderAtEnd(g->b, save);
        LLVMSetCurrentDebugLocation2(g->b, save_loc);
        return thunk;
    }
    internal_error(g, "an extern's function argument is not a top-level function or a lambda "
                      "without captures");
    return LLVMConstNull(g->ptr);
}
