/* codegen.c — lowering the typed AST to LLVM IR (see codegen.h). */
#include "codegen.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>
#include <stdlib.h>
#include <string.h>

#include "inline_rt.h"
#include "osprey_rt.h"

/* ---- compile-time values ---- */

typedef enum CalleeKind {
    CAL_NONE,
    CAL_FN,
    CAL_BUILTIN,
    CAL_LAMBDA,
    CAL_CTOR,
    CAL_VALUE
} CalleeKind;
typedef struct Job Job;

/*
 * What a call calls: a function known at compile time (called directly) or a closure
 * value (CAL_VALUE, called through its code pointer). A closure is a heap block whose
 * word 0 is the code pointer `ret code(ptr closure, params...)` and whose words 1.. are
 * the captured values, boxed.
 */
typedef struct Callee {
    CalleeKind kind;
    FnDecl *fn;      /* CAL_FN */
    Type **targs;    /* CAL_FN: concrete type arguments (fn->nqvars) */
    Builtin builtin; /* CAL_BUILTIN */
    Expr *lambda;    /* CAL_LAMBDA */
    Job *encl;       /* CAL_LAMBDA: enclosing function instance (NULL: main) */
    LLVMValueRef
        env; /* CAL_LAMBDA: its closure (NULL when it captures nothing); CAL_VALUE: the closure */
    Variant *ctor; /* CAL_CTOR */
    Type *type;    /* CAL_VALUE / CAL_CTOR: the function's concrete type */
} Callee;

typedef struct Stage {
    bool is_filter;
    Callee cb;
    Type *in, *out;
} Stage;

/* A range pipeline whose bounds have been evaluated (compiled to one counted loop). */
typedef struct IterDesc {
    LLVMValueRef start, end;
    Stage stages[32];
    int nstages;
} IterDesc;

/* BIND_CELL: a `mut` binding; v points to its storage (a heap cell or a global). */
typedef enum BindKind { BIND_VALUE, BIND_CALLEE, BIND_ITER, BIND_CELL } BindKind;
typedef struct Binding {
    Sym *sym;
    BindKind kind;
    LLVMValueRef v;
    Callee callee;
    IterDesc *iter;
    struct Binding *next;
} Binding;

/*
 * JOB_ARM: a handler arm (plain: `ret f(ptr env, params...)`; resuming:
 * `i64 f(ptr env, ptr k)`); JOB_HBODY: the body of a handle with a resuming arm
 * (`i64 f(ptr env)`, run on a continuation thread); JOB_WRAP: the closure code of a
 * named function, built-in or constructor used as a value.
 */
typedef enum JobKind { JOB_FN, JOB_LAMBDA, JOB_SPAWN, JOB_ARM, JOB_HBODY, JOB_WRAP } JobKind;

/* One machine function to emit: a function instance, a lambda or a spawn thunk. */
struct Job {
    JobKind kind;
    FnDecl *fn;           /* JOB_FN; JOB_WRAP of a function */
    Type **targs;         /* JOB_FN */
    Expr *expr;           /* JOB_LAMBDA / JOB_SPAWN; JOB_ARM / JOB_HBODY: the E_HANDLE */
    HandleArm *arm;       /* JOB_ARM */
    Job *encl;            /* lambda/spawn/arm/body: enclosing instance (NULL: main) */
    Binding *static_caps; /* compile-time bindings visible in the function */
    Callee wrapped;       /* JOB_WRAP */
    Type *wtype;          /* JOB_WRAP: the concrete function type */
    int line;             /* JOB_WRAP: line for its debug info */
    const char *name;
    LLVMValueRef llfn;
    LLVMTypeRef llty;
    bool emitted;
};

typedef struct FnState {
    LLVMValueRef fn;
    LLVMMetadataRef sp;
    Job *job;  /* NULL for the entry point */
    Job *inst; /* substitution context: the enclosing function instance (NULL: main) */
    Binding *env;
    LLVMBasicBlockRef entry;
    LLVMMetadataRef loc;
    LLVMValueRef cont_k; /* resuming arm: its continuation (ptr) */
    Type *handle_type;   /* resuming arm: the value type of its handle */
} FnState;

typedef struct CG {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMDIBuilderRef dib;
    LLVMMetadataRef di_file, di_cu, di_fnty;
    const Program *prog;
    Arena *arena;
    TypeCtx *tc;
    const osp_cg_options *opts;
    LLVMTypeRef i1, i8, i32, i64, f64, ptr, voidt, rest, osp_result_t, eff_entry_t;
    PtrVec keys; /* interned effect-key strings: const char* then LLVMValueRef */
    PtrVec jobs;
    FnState *fs;
    LLVMAttributeRef fp_attr;
    LLVMValueRef str_integer_overflow, str_division_by_zero, str_zero, str_true, str_false,
        str_file;
    Binding *globals; /* file-scope bindings stored in LLVM globals: sym -> global */
    char *error;
} CG;

/* ---- small helpers ---- */

static LLVMValueRef ci64(CG *g, int64_t v) {
    return LLVMConstInt(g->i64, (unsigned long long)v, 1);
}
static LLVMValueRef ci32(CG *g, int v) {
    return LLVMConstInt(g->i32, (unsigned long long)v, 1);
}

static void set_loc_line(CG *g, int line, int col) {
    if (!g->fs || !g->fs->sp) return;
    LLVMMetadataRef loc = LLVMDIBuilderCreateDebugLocation(
        g->ctx, (unsigned)(line > 0 ? line : 1), (unsigned)(col > 0 ? col : 0), g->fs->sp, NULL);
    g->fs->loc = loc;
    LLVMSetCurrentDebugLocation2(g->b, loc);
}

static void restore_loc(CG *g, LLVMMetadataRef loc) {
    if (!g->fs) return;
    g->fs->loc = loc;
    LLVMSetCurrentDebugLocation2(g->b, loc);
}

static LLVMValueRef const_string(CG *g, const char *s, size_t len) {
    LLVMValueRef init = LLVMConstStringInContext(g->ctx, s, (unsigned)len, 0);
    LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), ".str");
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(gv, 1);
    return gv;
}

static LLVMValueRef cstr(CG *g, const char *s) {
    return const_string(g, s, strlen(s));
}

/* Declare (once) a runtime function. */
static LLVMValueRef rt_fn(CG *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int n,
                          LLVMTypeRef *out_ty) {
    LLVMTypeRef ty = LLVMFunctionType(ret, params, (unsigned)n, 0);
    LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
    if (!f) {
        f = LLVMAddFunction(g->mod, name, ty);
        /* a C `bool` is an i1 that the caller and callee extend to a byte (x86-64 and
         * AArch64 psABI): say so on the declaration, as clang does for osprey_rt.h */
        unsigned kind = LLVMGetEnumAttributeKindForName("zeroext", 7);
        LLVMAttributeRef za = LLVMCreateEnumAttribute(g->ctx, kind, 0);
        if (ret == g->i1) LLVMAddAttributeAtIndex(f, LLVMAttributeReturnIndex, za);
        for (int i = 0; i < n; i++)
            if (params[i] == g->i1) LLVMAddAttributeAtIndex(f, (unsigned)i + 1, za);
        osp_inline_rt_declared(g->ctx, g->mod, name, f, g->fp_attr, g->opts->opt_level > 0);
    }
    *out_ty = ty;
    return f;
}

static LLVMValueRef call_rt(CG *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *pt,
                            LLVMValueRef *args, int n) {
    LLVMTypeRef ty;
    LLVMValueRef f = rt_fn(g, name, ret, pt, n, &ty);
    return LLVMBuildCall2(g->b, ty, f, args, (unsigned)n, "");
}

static void add_zeroext(CG *g, LLVMValueRef fn_or_call, unsigned idx, bool is_call) {
    unsigned kind = LLVMGetEnumAttributeKindForName("zeroext", 7);
    LLVMAttributeRef a = LLVMCreateEnumAttribute(g->ctx, kind, 0);
    if (is_call)
        LLVMAddCallSiteAttribute(fn_or_call, idx, a);
    else
        LLVMAddAttributeAtIndex(fn_or_call, idx, a);
}

static LLVMValueRef intrinsic(CG *g, const char *name, LLVMTypeRef *tys, int ntys,
                              LLVMTypeRef *fnty) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    *fnty = LLVMIntrinsicGetType(g->ctx, id, tys, (size_t)ntys);
    return LLVMGetIntrinsicDeclaration(g->mod, id, tys, (size_t)ntys);
}

static LLVMValueRef entry_alloca(CG *g, LLVMTypeRef ty, const char *name) {
    LLVMBuilderRef tmp = LLVMCreateBuilderInContext(g->ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(g->fs->entry);
    if (first)
        LLVMPositionBuilderBefore(tmp, first);
    else
        LLVMPositionBuilderAtEnd(tmp, g->fs->entry);
    LLVMValueRef a = LLVMBuildAlloca(tmp, ty, name);
    LLVMDisposeBuilder(tmp);
    return a;
}

static LLVMBasicBlockRef new_block(CG *g, const char *name) {
    return LLVMAppendBasicBlockInContext(g->ctx, g->fs->fn, name);
}

/* ---- types ---- */

static bool type_eq(Type *a, Type *b) {
    a = ty_find(a);
    b = ty_find(b);
    if (a == b) return true;
    if (a->kind != b->kind || a->nargs != b->nargs || a->decl != b->decl) return false;
    if (a->kind == TY_RECORD)
        for (int i = 0; i < a->nargs; i++)
            if (strcmp(a->fields[i], b->fields[i]) != 0) return false;
    for (int i = 0; i < a->nargs; i++)
        if (!type_eq(a->args[i], b->args[i])) return false;
    if (a->ret || b->ret) return a->ret && b->ret && type_eq(a->ret, b->ret);
    return true;
}

/* Substitute the generic variables of `inst`'s function by its type arguments. */
static Type *subst(CG *g, Type *t, Job *inst) {
    t = ty_find(t);
    if (t->kind == TY_VAR) {
        if (t->generic) {
            for (Job *j = inst; j; j = j->encl) {
                if (j->kind != JOB_FN) continue;
                for (int i = 0; i < j->fn->nqvars; i++)
                    if (ty_find(j->fn->qvars[i]) == t) return ty_find(j->targs[i]);
            }
        }
        return g->tc->t_int; /* unconstrained: defaulted */
    }
    if (t->nargs == 0 && !t->ret) return t;
    Type **args = t->nargs ? arena_alloc(g->arena, sizeof(Type *) * (size_t)t->nargs) : NULL;
    bool same = true;
    for (int i = 0; i < t->nargs; i++) {
        args[i] = subst(g, t->args[i], inst);
        if (args[i] != ty_find(t->args[i])) same = false;
    }
    Type *ret = t->ret ? subst(g, t->ret, inst) : NULL;
    if (ret && ret != ty_find(t->ret)) same = false;
    if (same) return t;
    return ty_rebuild(g->tc, t, args, ret);
}

static Type *ety(CG *g, Expr *e) {
    return subst(g, e->type, g->fs->inst);
}
static Type *sty(CG *g, Type *t) {
    return subst(g, t, g->fs->inst);
}

/* Values represented by a pointer: strings, error messages and heap aggregates. */
static bool is_ptr_kind(TyKind k) {
    switch (k) {
    case TY_STRING:
    case TY_MATHERROR:
    case TY_ERRORT:
    case TY_LIST:
    case TY_MAP:
    case TY_NAMED:
    case TY_RECORD:
    case TY_PTR:
    case TY_FN: return true;
    default: return false;
    }
}

static LLVMTypeRef llty(CG *g, Type *t) {
    t = ty_find(t);
    if (is_ptr_kind(t->kind)) return g->ptr;
    switch (t->kind) {
    case TY_BOOL: return g->i1;
    case TY_FLOAT: return g->f64;
    case TY_RESULT: return g->rest;
    default: return g->i64;
    }
}

static LLVMValueRef unit_value(CG *g) {
    return ci64(g, 0);
}

/* Box a value into one 64-bit word (docs/spec/language.md §14.3). */
static LLVMValueRef box(CG *g, LLVMValueRef v, Type *t) {
    t = ty_find(t);
    switch (t->kind) {
    case TY_BOOL: return LLVMBuildZExt(g->b, v, g->i64, "");
    case TY_FLOAT: return LLVMBuildBitCast(g->b, v, g->i64, "");
    case TY_STRING:
    case TY_MATHERROR:
    case TY_ERRORT:
    case TY_LIST:
    case TY_MAP:
    case TY_NAMED:
    case TY_RECORD:
    case TY_PTR:
    case TY_FN: return LLVMBuildPtrToInt(g->b, v, g->i64, "");
    case TY_RESULT: {
        LLVMValueRef tag = LLVMBuildExtractValue(g->b, v, 0, "tag");
        LLVMValueRef w = LLVMBuildExtractValue(g->b, v, 1, "w");
        LLVMValueRef is_err = LLVMBuildICmp(g->b, LLVMIntNE, tag, ci64(g, 0), "");
        LLVMBasicBlockRef okb = new_block(g, "box.ok"), errb = new_block(g, "box.err"),
                          join = new_block(g, "box.join");
        osp_ir_branch_rare(g->ctx, LLVMBuildCondBr(g->b, is_err, errb, okb), true);
        LLVMPositionBuilderAtEnd(g->b, okb);
        LLVMValueRef a1[1] = {w};
        LLVMTypeRef p1[1] = {g->i64};
        LLVMValueRef okp = call_rt(g, "osp_result_ok", g->ptr, p1, a1, 1);
        LLVMBuildBr(g->b, join);
        LLVMPositionBuilderAtEnd(g->b, errb);
        LLVMValueRef a2[1] = {LLVMBuildIntToPtr(g->b, w, g->ptr, "")};
        LLVMTypeRef p2[1] = {g->ptr};
        LLVMValueRef errp = call_rt(g, "osp_result_err", g->ptr, p2, a2, 1);
        LLVMBuildBr(g->b, join);
        LLVMPositionBuilderAtEnd(g->b, join);
        LLVMValueRef phi = LLVMBuildPhi(g->b, g->ptr, "boxed");
        LLVMValueRef vals[2] = {okp, errp};
        LLVMBasicBlockRef bbs[2] = {okb, errb};
        LLVMAddIncoming(phi, vals, bbs, 2);
        return LLVMBuildPtrToInt(g->b, phi, g->i64, "");
    }
    default: return v;
    }
}

static LLVMValueRef unbox(CG *g, LLVMValueRef w, Type *t) {
    t = ty_find(t);
    switch (t->kind) {
    case TY_BOOL: return LLVMBuildTrunc(g->b, w, g->i1, "");
    case TY_FLOAT: return LLVMBuildBitCast(g->b, w, g->f64, "");
    case TY_STRING:
    case TY_MATHERROR:
    case TY_ERRORT:
    case TY_LIST:
    case TY_MAP:
    case TY_NAMED:
    case TY_RECORD:
    case TY_PTR:
    case TY_FN: return LLVMBuildIntToPtr(g->b, w, g->ptr, "");
    case TY_RESULT: {
        LLVMValueRef p = LLVMBuildIntToPtr(g->b, w, g->ptr, "");
        LLVMValueRef tag = LLVMBuildLoad2(
            g->b, g->i64, LLVMBuildStructGEP2(g->b, g->osp_result_t, p, 0, ""), "tag");
        LLVMValueRef val = LLVMBuildLoad2(
            g->b, g->i64, LLVMBuildStructGEP2(g->b, g->osp_result_t, p, 1, ""), "val");
        LLVMValueRef msg = LLVMBuildLoad2(
            g->b, g->ptr, LLVMBuildStructGEP2(g->b, g->osp_result_t, p, 2, ""), "msg");
        LLVMValueRef is_err = LLVMBuildICmp(g->b, LLVMIntNE, tag, ci64(g, 0), "");
        LLVMValueRef word =
            LLVMBuildSelect(g->b, is_err, LLVMBuildPtrToInt(g->b, msg, g->i64, ""), val, "");
        LLVMValueRef r = LLVMGetUndef(g->rest);
        r = LLVMBuildInsertValue(g->b, r, LLVMBuildZExt(g->b, is_err, g->i64, ""), 0, "");
        return LLVMBuildInsertValue(g->b, r, word, 1, "");
    }
    default: return w;
    }
}

static LLVMValueRef make_result(CG *g, LLVMValueRef is_err_i1, LLVMValueRef word) {
    LLVMValueRef r = LLVMGetUndef(g->rest);
    r = LLVMBuildInsertValue(g->b, r, LLVMBuildZExt(g->b, is_err_i1, g->i64, ""), 0, "");
    return LLVMBuildInsertValue(g->b, r, word, 1, "");
}

/* intDiv(a, d) (docs/spec/language.md §6, §9): Success(a / d), or an Error for d = 0 (division by
 * zero) and for INT64_MIN / -1 (overflow), without a trapping division. */
static LLVMValueRef gen_intdiv(CG *g, LLVMValueRef a, LLVMValueRef d) {
    LLVMValueRef zero = LLVMBuildICmp(g->b, LLVMIntEQ, d, ci64(g, 0), "");
    LLVMValueRef ovf = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, a, ci64(g, INT64_MIN), ""),
                                    LLVMBuildICmp(g->b, LLVMIntEQ, d, ci64(g, -1), ""), "");
    LLVMValueRef bad = LLVMBuildOr(g->b, zero, ovf, "");
    LLVMValueRef safe = LLVMBuildSelect(g->b, bad, ci64(g, 1), d, "");
    LLVMValueRef q = LLVMBuildSDiv(g->b, a, safe, "");
    LLVMValueRef msg =
        LLVMBuildSelect(g->b, zero, g->str_division_by_zero, g->str_integer_overflow, "");
    LLVMValueRef w = LLVMBuildSelect(g->b, bad, LLVMBuildPtrToInt(g->b, msg, g->i64, ""), q, "");
    return make_result(g, bad, w);
}

/* ---- rendering (§8) ---- */

static LLVMValueRef render(CG *g, LLVMValueRef v, Type *t, bool bare) {
    t = ty_find(t);
    switch (t->kind) {
    case TY_STRING: return v;
    case TY_BOOL: {
        LLVMTypeRef p[1] = {g->i1};
        LLVMValueRef a[1] = {v};
        LLVMValueRef c = call_rt(g, "osp_show_bool", g->ptr, p, a, 1);
        add_zeroext(g, c, 1, true);
        return c;
    }
    case TY_FLOAT: {
        LLVMTypeRef p[1] = {g->f64};
        LLVMValueRef a[1] = {v};
        return call_rt(g, "osp_show_float", g->ptr, p, a, 1);
    }
    case TY_UNIT: return g->str_zero;
    case TY_LIST: return cstr(g, "<list>");
    case TY_MAP: return cstr(g, "<map>");
    case TY_FN: return cstr(g, "<function>");
    case TY_RECORD: return cstr(g, "<record>");
    case TY_NAMED: return cstr(g, arena_printf(g->arena, "<%s>", ((TypeDecl *)t->decl)->name));
    case TY_RESULT: {
        LLVMValueRef tag = LLVMBuildExtractValue(g->b, v, 0, "tag");
        LLVMValueRef w = LLVMBuildExtractValue(g->b, v, 1, "w");
        LLVMValueRef is_err = LLVMBuildICmp(g->b, LLVMIntNE, tag, ci64(g, 0), "");
        LLVMValueRef tmp = entry_alloca(g, g->osp_result_t, "result.tmp");
        LLVMBuildStore(g->b, tag, LLVMBuildStructGEP2(g->b, g->osp_result_t, tmp, 0, ""));
        LLVMBuildStore(g->b, LLVMBuildSelect(g->b, is_err, ci64(g, 0), w, ""),
                       LLVMBuildStructGEP2(g->b, g->osp_result_t, tmp, 1, ""));
        LLVMBuildStore(g->b,
                       LLVMBuildSelect(g->b, is_err, LLVMBuildIntToPtr(g->b, w, g->ptr, ""),
                                       LLVMConstNull(g->ptr), ""),
                       LLVMBuildStructGEP2(g->b, g->osp_result_t, tmp, 2, ""));
        LLVMBasicBlockRef cur = LLVMGetInsertBlock(g->b);
        LLVMBasicBlockRef okb = new_block(g, "show.ok"), join = new_block(g, "show.join");
        LLVMBuildCondBr(g->b, is_err, join, okb);
        LLVMPositionBuilderAtEnd(g->b, okb);
        LLVMValueRef payload = render(g, unbox(g, w, t->args[0]), t->args[0], false);
        LLVMBasicBlockRef okend = LLVMGetInsertBlock(g->b);
        LLVMBuildBr(g->b, join);
        LLVMPositionBuilderAtEnd(g->b, join);
        LLVMValueRef phi = LLVMBuildPhi(g->b, g->ptr, "payload");
        LLVMValueRef vals[2] = {LLVMConstNull(g->ptr), payload};
        LLVMBasicBlockRef bbs[2] = {cur, okend};
        LLVMAddIncoming(phi, vals, bbs, 2);
        LLVMTypeRef p[3] = {g->ptr, g->ptr, g->i1};
        LLVMValueRef a[3] = {tmp, phi, LLVMConstInt(g->i1, bare, 0)};
        LLVMValueRef c = call_rt(g, "osp_show_result", g->ptr, p, a, 3);
        add_zeroext(g, c, 3, true);
        return c;
    }
    default: {
        LLVMTypeRef p[1] = {g->i64};
        LLVMValueRef a[1] = {v};
        return call_rt(g, "osp_show_int", g->ptr, p, a, 1);
    }
    }
}

static void print_line(CG *g, LLVMValueRef s) {
    LLVMTypeRef p[1] = {g->ptr};
    LLVMValueRef a[1] = {s};
    call_rt(g, "osp_print_line", g->voidt, p, a, 1);
}

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

static bool targs_eq(Type **a, Type **b, int n) {
    for (int i = 0; i < n; i++)
        if (!type_eq(a[i], b[i])) return false;
    return true;
}

static const char *unique_name(CG *g, const char *base) {
    if (!LLVMGetNamedFunction(g->mod, base) && !LLVMGetNamedGlobal(g->mod, base)) return base;
    for (int k = 2;; k++) {
        const char *n = arena_printf(g->arena, "%s$%d", base, k);
        if (!LLVMGetNamedFunction(g->mod, n)) return n;
    }
}

/* The instance of user function `fn` for concrete `targs` (declared now, body queued). */
static Job *fn_instance(CG *g, FnDecl *fn, Type **targs) {
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
    j->llfn = LLVMAddFunction(g->mod, name, j->llty);
    LLVMSetLinkage(j->llfn, LLVMInternalLinkage);
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].name)
            LLVMSetValueName2(LLVMGetParam(j->llfn, (unsigned)i), fn->params[i].name,
                              strlen(fn->params[i].name));
    vec_push(g->arena, &g->jobs, j);
    return j;
}

static const char *encl_name(Job *encl) {
    return encl ? encl->name : "main";
}

/* The closure-calling LLVM type of a function value of (concrete) type `ft`:
 * `ret (ptr closure, params...)`. */
static LLVMTypeRef closure_fn_type(CG *g, Type *ft) {
    ft = ty_find(ft);
    LLVMTypeRef *ps = arena_alloc(g->arena, sizeof(LLVMTypeRef) * (size_t)(ft->nargs + 2));
    ps[0] = g->ptr;
    for (int i = 0; i < ft->nargs; i++) ps[i + 1] = llty(g, ft->args[i]);
    return LLVMFunctionType(llty(g, ft->ret), ps, (unsigned)ft->nargs + 1, 0);
}

static Job *lambda_job(CG *g, Expr *lam, Job *encl) {
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

/* ---- environment ---- */

static Binding *bind(CG *g, Sym *s, BindKind k) {
    Binding *b = arena_alloc(g->arena, sizeof *b);
    b->sym = s;
    b->kind = k;
    b->next = g->fs->env;
    g->fs->env = b;
    return b;
}

static Binding *lookup(CG *g, Sym *s) {
    for (Binding *b = g->fs->env; b; b = b->next)
        if (b->sym == s) return b;
    return NULL;
}

static LLVMValueRef global_of(CG *g, Sym *s) {
    for (Binding *b = g->globals; b; b = b->next)
        if (b->sym == s) return b->v;
    LLVMTypeRef t = llty(g, s->type);
    LLVMValueRef gv = LLVMAddGlobal(g->mod, t, arena_printf(g->arena, "osprey.global.%s", s->name));
    LLVMSetInitializer(gv, LLVMConstNull(t));
    LLVMSetLinkage(gv, LLVMInternalLinkage);
    Binding *b = arena_alloc(g->arena, sizeof *b);
    b->sym = s;
    b->v = gv;
    b->next = g->globals;
    g->globals = b;
    return gv;
}

static void internal_error(CG *g, const char *msg) {
    if (!g->error) g->error = strdup(msg);
}

/* ---- expressions ---- */

static LLVMValueRef gen(CG *g, Expr *e);
static void gen_stmt(CG *g, Stmt *s, LLVMValueRef *value);
static Callee callee_of(CG *g, Expr *e);
static LLVMValueRef call_callee(CG *g, Callee *c, LLVMValueRef *args, Type **argt, int n);
static LLVMValueRef callee_value(CG *g, Callee *c, Type *ft);

static LLVMValueRef gc_alloc(CG *g, int64_t bytes) {
    LLVMTypeRef p[1] = {g->i64};
    LLVMValueRef a[1] = {ci64(g, bytes > 0 ? bytes : 8)};
    return call_rt(g, "osp_gc_alloc", g->ptr, p, a, 1);
}

static LLVMValueRef word_slot(CG *g, LLVMValueRef block, int i) {
    LLVMValueRef idx[1] = {ci64(g, i)};
    return LLVMBuildInBoundsGEP2(g->b, g->i64, block, idx, 1, "");
}

static void store_word(CG *g, LLVMValueRef block, int i, LLVMValueRef w) {
    LLVMBuildStore(g->b, w, word_slot(g, block, i));
}

static LLVMValueRef load_word(CG *g, LLVMValueRef block, int i, const char *name) {
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
static LLVMValueRef build_env(CG *g, Unit *u, LLVMValueRef code, bool by_ref_muts,
                              Binding **statics) {
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
static void bind_captures(CG *g, Unit *u, LLVMValueRef env, Binding *statics, bool by_ref_muts) {
    g->fs->env = statics;
    for (int i = 0; u && i < u->captures.len; i++) {
        Sym *s = u->captures.items[i];
        bool is_static = false;
        for (Binding *b = statics; b; b = b->next)
            if (b->sym == s) is_static = true;
        if (is_static || s->static_kind == STATIC_ITER) continue;
        LLVMValueRef w = load_word(g, env, i + 1, s->name);
        if (by_ref_muts && s->is_mut)
            bind(g, s, BIND_CELL)->v = LLVMBuildIntToPtr(g->b, w, g->ptr, s->name);
        else
            bind(g, s, BIND_VALUE)->v = unbox(g, w, sty(g, s->type));
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
static LLVMValueRef callee_value(CG *g, Callee *c, Type *ft) {
    if (ft) ft = ty_find(ft);
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
static LLVMValueRef gen_closure(CG *g, Expr *lam) {
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

static Type **ident_targs(CG *g, Expr *id) {
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
            for (int i = 0; i < n; i++) t[i] = ty_find(j->targs[i]);
            return t;
        }
    for (int i = 0; i < n; i++) t[i] = g->tc->t_int;
    return t;
}

static Callee callee_of(CG *g, Expr *e) {
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

static LLVMValueRef build_variant(CG *g, Variant *v, LLVMValueRef *args, Type **argt, int n);
static LLVMValueRef builtin_values(CG *g, Builtin b, LLVMValueRef *v, Type **t);

/* ---- extern (docs/spec/language.md §3.5) ----
 * An extern is a direct call of the C symbol of exactly its name: int i64, float double,
 * bool i1 zeroext, Ptr and string ptr, a function type a C function pointer, no result
 * `void` (the call's value is Unit). A string result is copied at once (NULL gives ""). */
static LLVMTypeRef extern_llty(CG *g, Type *t, bool result) {
    t = ty_find(t);
    if (result && t->kind == TY_UNIT) return g->voidt;
    if (t->kind == TY_FN) return g->ptr;
    return llty(g, t);
}

static LLVMValueRef extern_decl(CG *g, FnDecl *f, LLVMTypeRef *out_ty) {
    Type *ft = ty_find(f->type);
    LLVMTypeRef *ps = arena_alloc(g->arena, sizeof(LLVMTypeRef) * (size_t)(f->nparams + 1));
    for (int i = 0; i < f->nparams; i++) ps[i] = extern_llty(g, ft->args[i], false);
    LLVMTypeRef ret = extern_llty(g, ft->ret, true);
    /* rt_fn declares once and marks C bools zeroext, as for the runtime's own functions */
    return rt_fn(g, f->name, ret, ps, f->nparams, out_ty);
}

static LLVMValueRef gen_extern_call(CG *g, FnDecl *f, LLVMValueRef *args) {
    LLVMTypeRef ty;
    LLVMValueRef fn = extern_decl(g, f, &ty);
    LLVMValueRef c = LLVMBuildCall2(g->b, ty, fn, args, (unsigned)f->nparams, "");
    Type *ft = ty_find(f->type);
    for (int i = 0; i < f->nparams; i++)
        if (ty_find(ft->args[i])->kind == TY_BOOL) add_zeroext(g, c, (unsigned)i + 1, true);
    Type *rt = ty_find(ft->ret);
    if (rt->kind == TY_BOOL) add_zeroext(g, c, LLVMAttributeReturnIndex, true);
    if (rt->kind == TY_UNIT) return unit_value(g);
    if (rt->kind == TY_STRING) {
        LLVMTypeRef p[1] = {g->ptr};
        LLVMValueRef a[1] = {c};
        return call_rt(g, "osp_str_from_c", g->ptr, p, a, 1);
    }
    return c;
}

static Job *lambda_job(CG *g, Expr *lam, Job *encl);

/* A C function pointer for argument `e` of an extern's function-typed parameter of type
 * `ft`: a top-level function's instance, or for a lambda that captures nothing a thunk
 * `ret thunk(params...)` that calls the lambda's code with a NULL closure. */
static LLVMValueRef extern_fn_pointer(CG *g, Expr *e, Type *ft) {
    if (e->kind == E_IDENT && e->u.ident.sym && e->u.ident.sym->kind == SYM_FN &&
        !e->u.ident.sym->fn->is_extern)
        return fn_instance(g, e->u.ident.sym->fn, ident_targs(g, e))->llfn;
    if (e->kind == E_IDENT && e->u.ident.sym && e->u.ident.sym->kind == SYM_FN) {
        LLVMTypeRef ty;
        return extern_decl(g, e->u.ident.sym->fn, &ty);
    }
    if (e->kind == E_LAMBDA && e->u.lambda.unit->captures.len == 0) {
        Job *j = lambda_job(g, e, g->fs->inst);
        ft = ty_find(ft);
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

/* Call a callee. `argt` are the (concrete) argument types. */
static LLVMValueRef call_callee(CG *g, Callee *c, LLVMValueRef *args, Type **argt, int n) {
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

static IterDesc *gen_iter(CG *g, Expr *e) {
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
    if (d->nstages >= 32) {
        internal_error(g, "iterator pipeline too long (at most 32 stages)");
        return d;
    }
    Stage *st = &d->stages[d->nstages++];
    st->is_filter = bi == B_FILTER;
    st->cb = callee_of(g, e->u.call.args[1]);
    st->in = ty_find(sty(g, e->u.call.args[0]->type))->args[0];
    st->out = ty_find(ety(g, e))->args[0];
    return d;
}

/* forEach / fold: one counted loop over the pipeline. */
static LLVMValueRef gen_loop(CG *g, Expr *e, bool is_fold) {
    Expr **args = e->u.call.args;
    IterDesc *d = gen_iter(g, args[0]);
    Type *elem = ty_find(sty(g, args[0]->type))->args[0];
    Type *acct = is_fold ? ety(g, e) : NULL;
    LLVMValueRef acc_slot = NULL;
    if (is_fold) {
        LLVMValueRef init = gen(g, args[1]);
        acc_slot = entry_alloca(g, llty(g, acct), "acc");
        LLVMBuildStore(g->b, init, acc_slot);
    }
    Callee cb = callee_of(g, is_fold ? args[2] : args[1]);
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
    for (int k = 0; k < d->nstages; k++) {
        Stage *st = &d->stages[k];
        LLVMValueRef a[1] = {x};
        Type *at[1] = {xt};
        LLVMValueRef r = call_callee(g, &st->cb, a, at, 1);
        if (st->is_filter) {
            LLVMBasicBlockRef pass = new_block(g, "filter.pass");
            LLVMBuildCondBr(g->b, r, pass, latch);
            LLVMPositionBuilderAtEnd(g->b, pass);
        } else {
            x = r;
            xt = st->out;
        }
    }
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
    return is_fold ? LLVMBuildLoad2(g->b, llty(g, acct), acc_slot, "acc") : unit_value(g);
}

static LLVMValueRef str_eq(CG *g, LLVMValueRef a, LLVMValueRef b) {
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
static LLVMValueRef call_sig(CG *g, const char *fn, const char *sig, LLVMValueRef *vals,
                             Type **types) {
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
    t = ty_find(t);
    return t->kind == TY_STRING ? OSP_EQ_STRING : t->kind == TY_FLOAT ? OSP_EQ_FLOAT : OSP_EQ_WORD;
}

/* length / isEmpty of a string, list or map. */
static LLVMValueRef gen_size(CG *g, LLVMValueRef v, Type *t) {
    t = ty_find(t);
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
    Type *elem = ty_find(ety(g, args[0]))->args[0];
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
    t = ty_find(t);
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
        if (var->nfields > 0 && ty_find(var->types[0])->kind == TY_STRING) {
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
static LLVMValueRef builtin_values(CG *g, Builtin b, LLVMValueRef *v, Type **t) {
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

static const char *list_new_fn(Type *list_t);

/* A call of built-in `b`: the ones that need their argument expressions (callbacks, test
 * bodies, assertion lists) here, every other one through builtin_values. */
static LLVMValueRef gen_builtin_call(CG *g, Expr *e, Builtin b) {
    Expr **args = e->u.call.args;
    switch (b) {
    case B_FOREACH_LIST: return gen_foreach_list(g, e);
    case B_LIST:
        return call_sig(g, list_new_fn(ety(g, e)), "p:ip",
                        (LLVMValueRef[]){ci64(g, 0), LLVMConstNull(g->ptr)}, NULL);
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
        tap_verdict(g, verdict, ty_find(ety(g, args[1]))->ret);
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
        return r ? r : unit_value(g);
    }
    }
}

static LLVMValueRef gen_call(CG *g, Expr *e) {
    Expr *callee = e->u.call.callee;
    if (callee->kind == E_IDENT && callee->u.ident.sym && callee->u.ident.sym->kind == SYM_BUILTIN)
        return gen_builtin_call(g, e, callee->u.ident.sym->builtin);
    if (callee->kind == E_IDENT && callee->u.ident.sym && callee->u.ident.sym->kind == SYM_FN &&
        callee->u.ident.sym->fn->is_extern) {
        FnDecl *f = callee->u.ident.sym->fn;
        Type *ft = ty_find(f->type);
        LLVMValueRef *args = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(f->nparams + 1));
        for (int i = 0; i < f->nparams && i < e->u.call.nargs; i++)
            args[i] = ty_find(ft->args[i])->kind == TY_FN
                          ? extern_fn_pointer(g, e->u.call.args[i], ft->args[i])
                          : gen(g, e->u.call.args[i]);
        return gen_extern_call(g, f, args);
    }
    int n = e->u.call.nargs;
    LLVMValueRef *args = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(n + 1));
    Type **at = arena_alloc(g->arena, sizeof(Type *) * (size_t)(n + 1));
    Callee c = callee_of(g, callee);
    for (int i = 0; i < n; i++) {
        args[i] = gen(g, e->u.call.args[i]);
        at[i] = ety(g, e->u.call.args[i]);
    }
    return call_callee(g, &c, args, at, n);
}

/* Split an arithmetic operand into (is_err, payload as base type, word). */
typedef struct Operand {
    LLVMValueRef is_err; /* i1 */
    LLVMValueRef word;   /* i64: boxed payload or message */
    LLVMValueRef val;    /* payload as i64 or double */
    bool is_float;
    bool is_result;
} Operand;

static Operand operand(CG *g, LLVMValueRef v, Type *t) {
    Operand o = {0};
    t = ty_find(t);
    if (t->kind == TY_RESULT) {
        o.is_result = true;
        o.is_err =
            LLVMBuildICmp(g->b, LLVMIntNE, LLVMBuildExtractValue(g->b, v, 0, ""), ci64(g, 0), "");
        o.word = LLVMBuildExtractValue(g->b, v, 1, "");
        Type *p = ty_find(t->args[0]);
        o.is_float = p->kind == TY_FLOAT;
        o.val = o.is_float ? LLVMBuildBitCast(g->b, o.word, g->f64, "") : o.word;
    } else {
        o.is_err = LLVMConstInt(g->i1, 0, 0);
        o.is_float = t->kind == TY_FLOAT;
        o.val = v;
        o.word = o.is_float ? NULL : v;
    }
    return o;
}

static LLVMValueRef overflow_op(CG *g, const char *name, LLVMValueRef a, LLVMValueRef b,
                                LLVMValueRef *ovf) {
    LLVMTypeRef fty;
    LLVMTypeRef tys[1] = {g->i64};
    LLVMValueRef f = intrinsic(g, name, tys, 1, &fty);
    LLVMValueRef args[2] = {a, b};
    LLVMValueRef r = LLVMBuildCall2(g->b, fty, f, args, 2, "");
    *ovf = LLVMBuildExtractValue(g->b, r, 1, "ovf");
    return LLVMBuildExtractValue(g->b, r, 0, "");
}

/* Combine operand errors (left wins), the operation's own error and its value. */
static LLVMValueRef finish_arith(CG *g, Type *rt, Operand *l, Operand *r, LLVMValueRef op_err,
                                 LLVMValueRef op_msg, LLVMValueRef val) {
    rt = ty_find(rt);
    if (rt->kind != TY_RESULT) return val;
    LLVMValueRef word =
        ty_find(rt->args[0])->kind == TY_FLOAT ? LLVMBuildBitCast(g->b, val, g->i64, "") : val;
    LLVMValueRef err = op_err ? op_err : LLVMConstInt(g->i1, 0, 0);
    if (op_err)
        word = LLVMBuildSelect(g->b, op_err, LLVMBuildPtrToInt(g->b, op_msg, g->i64, ""), word, "");
    if (r && r->is_result) {
        word = LLVMBuildSelect(g->b, r->is_err, r->word, word, "");
        err = LLVMBuildOr(g->b, err, r->is_err, "");
    }
    if (l->is_result) {
        word = LLVMBuildSelect(g->b, l->is_err, l->word, word, "");
        err = LLVMBuildOr(g->b, err, l->is_err, "");
    }
    return make_result(g, err, word);
}

static LLVMValueRef gen_arith(CG *g, Expr *e) {
    BinOp op = e->u.bin.op;
    LLVMValueRef lv = gen(g, e->u.bin.l), rv = gen(g, e->u.bin.r);
    Type *lt = ety(g, e->u.bin.l), *rtp = ety(g, e->u.bin.r), *res = ety(g, e);
    TyKind lk = ty_find(lt)->kind;
    if (lk == TY_STRING || lk == TY_LIST || lk == TY_MAP) {
        /* string `+`, list concatenation, map merge (the right side wins) */
        LLVMTypeRef p[2] = {g->ptr, g->ptr};
        LLVMValueRef a[2] = {lv, rv};
        return call_rt(g,
                       lk == TY_STRING ? "osp_str_cat"
                       : lk == TY_LIST ? "osp_list_concat"
                                       : "osp_map_merge",
                       g->ptr, p, a, 2);
    }
    Operand l = operand(g, lv, lt), r = operand(g, rv, rtp);
    bool fl = l.is_float || r.is_float || op == OP_DIV;
    LLVMValueRef a = l.val, b = r.val;
    if (fl) {
        if (!l.is_float) a = LLVMBuildSIToFP(g->b, a, g->f64, "");
        if (!r.is_float) b = LLVMBuildSIToFP(g->b, b, g->f64, "");
    }
    LLVMValueRef val = NULL, err = NULL, msg = NULL;
    if (fl) {
        switch (op) {
        case OP_ADD: val = LLVMBuildFAdd(g->b, a, b, ""); break;
        case OP_SUB: val = LLVMBuildFSub(g->b, a, b, ""); break;
        case OP_MUL: val = LLVMBuildFMul(g->b, a, b, ""); break;
        case OP_DIV:
        case OP_MOD:
            err = LLVMBuildFCmp(g->b, LLVMRealOEQ, b, LLVMConstReal(g->f64, 0.0), "divzero");
            msg = g->str_division_by_zero;
            val = op == OP_DIV ? LLVMBuildFDiv(g->b, a, b, "") : LLVMBuildFRem(g->b, a, b, "");
            break;
        default: break;
        }
    } else {
        switch (op) {
        case OP_ADD:
            val = overflow_op(g, "llvm.sadd.with.overflow", a, b, &err);
            msg = g->str_integer_overflow;
            break;
        case OP_SUB:
            val = overflow_op(g, "llvm.ssub.with.overflow", a, b, &err);
            msg = g->str_integer_overflow;
            break;
        case OP_MUL:
            val = overflow_op(g, "llvm.smul.with.overflow", a, b, &err);
            msg = g->str_integer_overflow;
            break;
        case OP_MOD: {
            err = LLVMBuildICmp(g->b, LLVMIntEQ, b, ci64(g, 0), "divzero");
            LLVMValueRef m1 = LLVMBuildICmp(g->b, LLVMIntEQ, b, ci64(g, -1), "");
            LLVMValueRef safe =
                LLVMBuildSelect(g->b, LLVMBuildOr(g->b, err, m1, ""), ci64(g, 1), b, "");
            val = LLVMBuildSRem(g->b, a, safe, "");
            msg = g->str_division_by_zero;
            break;
        }
        default: break;
        }
    }
    if (!val) {
        internal_error(g, "bad arithmetic operator");
        return LLVMGetUndef(llty(g, res));
    }
    return finish_arith(g, res, &l, &r, err, msg, val);
}

static LLVMValueRef gen_compare(CG *g, Expr *e) {
    BinOp op = e->u.bin.op;
    LLVMValueRef a = gen(g, e->u.bin.l), b = gen(g, e->u.bin.r);
    Type *lt = ty_find(ety(g, e->u.bin.l)), *rt = ty_find(ety(g, e->u.bin.r));
    if (lt->kind == TY_STRING) {
        LLVMTypeRef p[2] = {g->ptr, g->ptr};
        LLVMValueRef args[2] = {a, b};
        a = call_rt(g, "osp_str_cmp", g->i64, p, args, 2);
        b = ci64(g, 0);
        lt = rt = g->tc->t_int;
    }
    if (lt->kind == TY_FLOAT || rt->kind == TY_FLOAT) {
        if (lt->kind != TY_FLOAT) a = LLVMBuildSIToFP(g->b, a, g->f64, "");
        if (rt->kind != TY_FLOAT) b = LLVMBuildSIToFP(g->b, b, g->f64, "");
        LLVMRealPredicate p = op == OP_EQ   ? LLVMRealOEQ
                              : op == OP_NE ? LLVMRealUNE
                              : op == OP_LT ? LLVMRealOLT
                              : op == OP_GT ? LLVMRealOGT
                              : op == OP_LE ? LLVMRealOLE
                                            : LLVMRealOGE;
        return LLVMBuildFCmp(g->b, p, a, b, "");
    }
    LLVMIntPredicate p = op == OP_EQ   ? LLVMIntEQ
                         : op == OP_NE ? LLVMIntNE
                         : op == OP_LT ? LLVMIntSLT
                         : op == OP_GT ? LLVMIntSGT
                         : op == OP_LE ? LLVMIntSLE
                                       : LLVMIntSGE;
    return LLVMBuildICmp(g->b, p, a, b, "");
}

static LLVMValueRef gen_logic(CG *g, Expr *e) {
    bool is_and = e->u.bin.op == OP_AND;
    LLVMValueRef l = gen(g, e->u.bin.l);
    LLVMBasicBlockRef lend = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef rhs = new_block(g, is_and ? "and.rhs" : "or.rhs"),
                      join = new_block(g, is_and ? "and.end" : "or.end");
    if (is_and)
        LLVMBuildCondBr(g->b, l, rhs, join);
    else
        LLVMBuildCondBr(g->b, l, join, rhs);
    LLVMPositionBuilderAtEnd(g->b, rhs);
    LLVMValueRef r = gen(g, e->u.bin.r);
    LLVMBasicBlockRef rend = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, join);
    LLVMValueRef phi = LLVMBuildPhi(g->b, g->i1, "");
    LLVMValueRef vals[2] = {LLVMConstInt(g->i1, is_and ? 0 : 1, 0), r};
    LLVMBasicBlockRef bbs[2] = {lend, rend};
    LLVMAddIncoming(phi, vals, bbs, 2);
    return phi;
}

static LLVMValueRef gen_unary(CG *g, Expr *e) {
    LLVMValueRef v = gen(g, e->u.un.e);
    if (e->u.un.op == UOP_NOT) return LLVMBuildNot(g->b, v, "");
    if (e->u.un.op == UOP_PLUS) return v;
    Type *t = ety(g, e->u.un.e);
    Operand o = operand(g, v, t);
    if (o.is_float)
        return finish_arith(g, ety(g, e), &o, NULL, NULL, NULL, LLVMBuildFNeg(g->b, o.val, ""));
    LLVMValueRef ovf;
    LLVMValueRef r = overflow_op(g, "llvm.ssub.with.overflow", ci64(g, 0), o.val, &ovf);
    return finish_arith(g, ety(g, e), &o, NULL, ovf, g->str_integer_overflow, r);
}

static LLVMValueRef gen_elvis(CG *g, Expr *e) {
    LLVMValueRef r = gen(g, e->u.elvis.l);
    Type *rt = ty_find(ety(g, e->u.elvis.l));
    Type *pt = rt->kind == TY_RESULT ? rt->args[0] : g->tc->t_int;
    LLVMValueRef is_err =
        LLVMBuildICmp(g->b, LLVMIntNE, LLVMBuildExtractValue(g->b, r, 0, ""), ci64(g, 0), "");
    LLVMValueRef w = LLVMBuildExtractValue(g->b, r, 1, "");
    LLVMBasicBlockRef okb = new_block(g, "elvis.ok"), errb = new_block(g, "elvis.default"),
                      join = new_block(g, "elvis.end");
    osp_ir_branch_rare(g->ctx, LLVMBuildCondBr(g->b, is_err, errb, okb), true);
    LLVMPositionBuilderAtEnd(g->b, okb);
    LLVMValueRef okv = unbox(g, w, pt);
    LLVMBasicBlockRef okend = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, errb);
    LLVMValueRef dv = gen(g, e->u.elvis.r);
    LLVMBasicBlockRef dend = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, join);
    LLVMValueRef phi = LLVMBuildPhi(g->b, llty(g, pt), "");
    LLVMValueRef vals[2] = {okv, dv};
    LLVMBasicBlockRef bbs[2] = {okend, dend};
    LLVMAddIncoming(phi, vals, bbs, 2);
    return phi;
}

/* Replace the variables `from[i]` (a declaration's parameters) by `to[i]` in `t`. */
static Type *subst_vars(CG *g, Type *t, Type **from, Type **to, int n) {
    t = ty_find(t);
    if (t->kind == TY_VAR) {
        for (int i = 0; i < n; i++)
            if (ty_find(from[i]) == t) return ty_find(to[i]);
        return t;
    }
    if (t->nargs == 0 && !t->ret) return t;
    Type **args = t->nargs ? arena_alloc(g->arena, sizeof(Type *) * (size_t)t->nargs) : NULL;
    for (int i = 0; i < t->nargs; i++) args[i] = subst_vars(g, t->args[i], from, to, n);
    return ty_rebuild(g->tc, t, args, t->ret ? subst_vars(g, t->ret, from, to, n) : NULL);
}

/* Field `slot` type of record type `t` / payload slot type of variant `v` of union type `t`. */
static Type *record_field_type(CG *g, Type *t, int slot) {
    t = ty_find(t);
    if (t->kind == TY_RECORD) return t->args[slot];
    TypeDecl *td = t->decl;
    return subst_vars(g, td->types[slot], td->pvars, t->args, td->nparams);
}

static Type *variant_field_type(CG *g, Type *t, Variant *v, int slot) {
    t = ty_find(t);
    TypeDecl *td = v->decl;
    return subst_vars(g, v->types[slot], td->pvars, t->args, td->nparams);
}

static int record_nfields(Type *t) {
    t = ty_find(t);
    return t->kind == TY_RECORD ? t->nargs : ((TypeDecl *)t->decl)->nfields;
}

static int record_slot(Type *t, const char *name) {
    t = ty_find(t);
    if (t->kind == TY_RECORD) {
        for (int i = 0; i < t->nargs; i++)
            if (strcmp(t->fields[i], name) == 0) return i;
        return -1;
    }
    TypeDecl *td = t->decl;
    for (int i = 0; i < td->nfields; i++)
        if (strcmp(td->fields[i], name) == 0) return i;
    return -1;
}

/* A union value: word 0 the tag, words 1.. the payload (boxed). */
static LLVMValueRef build_variant(CG *g, Variant *v, LLVMValueRef *args, Type **argt, int n) {
    if (n == 0) {
        /* a nullary constructor is one constant tag word */
        const char *gname = arena_printf(g->arena, "osprey.ctor.%s.%s", v->decl->name, v->name);
        LLVMValueRef gv = LLVMGetNamedGlobal(g->mod, gname);
        if (!gv) {
            gv = LLVMAddGlobal(g->mod, g->i64, gname);
            LLVMSetInitializer(gv, ci64(g, v->tag));
            LLVMSetGlobalConstant(gv, 1);
            LLVMSetLinkage(gv, LLVMPrivateLinkage);
        }
        return gv;
    }
    LLVMValueRef blk = gc_alloc(g, 8 * (n + 1));
    store_word(g, blk, 0, ci64(g, v->tag));
    for (int i = 0; i < n; i++) store_word(g, blk, i + 1, box(g, args[i], argt[i]));
    return blk;
}

/*
 * Test pattern `p` against value `v` of (concrete) type `t`: branch to `fail` when it
 * does not match and fall through (in a new current block) when it does, binding its
 * variables. Returns true when the pattern always matches (no test emitted).
 */
static bool gen_pattern(CG *g, Pattern *p, LLVMValueRef v, Type *t, LLVMBasicBlockRef fail) {
    t = ty_find(t);
    LLVMValueRef cond = NULL;
    switch (p->kind) {
    case PAT_WILD:
    case PAT_UNSUPPORTED: return true;
    case PAT_BIND:
        if (p->sym) bind(g, p->sym, BIND_VALUE)->v = v;
        return true;
    case PAT_INT: cond = LLVMBuildICmp(g->b, LLVMIntEQ, v, ci64(g, p->ival), ""); break;
    case PAT_FLOAT:
        cond = LLVMBuildFCmp(g->b, LLVMRealOEQ, v, LLVMConstReal(g->f64, p->fval), "");
        break;
    case PAT_BOOL:
        cond = LLVMBuildICmp(g->b, LLVMIntEQ, v, LLVMConstInt(g->i1, p->bval, 0), "");
        break;
    case PAT_STRING: cond = str_eq(g, v, const_string(g, p->sval, p->slen)); break;
    case PAT_SUCCESS:
    case PAT_ERROR: {
        if (t->kind != TY_RESULT) {
            /* a non-Result value is a Success */
            if (p->kind == PAT_ERROR) {
                /* never matches; the arm's code is unreachable */
                LLVMBuildBr(g->b, fail);
                LLVMPositionBuilderAtEnd(g->b, new_block(g, "never"));
                if (p->sym) bind(g, p->sym, BIND_VALUE)->v = LLVMGetUndef(g->ptr);
                return false;
            }
            if (p->sym) bind(g, p->sym, BIND_VALUE)->v = v;
            return true;
        }
        LLVMValueRef tag = LLVMBuildExtractValue(g->b, v, 0, "");
        cond = LLVMBuildICmp(g->b, p->kind == PAT_SUCCESS ? LLVMIntEQ : LLVMIntNE, tag, ci64(g, 0),
                             "");
        LLVMBasicBlockRef ok = new_block(g, "pat.ok");
        LLVMBuildCondBr(g->b, cond, ok, fail);
        LLVMPositionBuilderAtEnd(g->b, ok);
        if (p->sym) {
            LLVMValueRef w = LLVMBuildExtractValue(g->b, v, 1, "");
            LLVMValueRef bv;
            if (p->kind == PAT_SUCCESS) {
                bv = unbox(g, w, t->args[0]);
            } else {
                /* docs/spec/language.md §7: an Error without a message binds the text `Error` */
                LLVMValueRef none = LLVMBuildICmp(g->b, LLVMIntEQ, w, ci64(g, 0), "");
                bv = LLVMBuildSelect(g->b, none, cstr(g, "Error"),
                                     LLVMBuildIntToPtr(g->b, w, g->ptr, ""), "message");
            }
            bind(g, p->sym, BIND_VALUE)->v = bv;
        }
        return false;
    }
    case PAT_CTOR: {
        Variant *var = p->variant;
        bool tested = false;
        if (var->decl->nvariants > 1) {
            LLVMValueRef tag = load_word(g, v, 0, "tag");
            LLVMBasicBlockRef ok = new_block(g, "pat.ctor");
            LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, tag, ci64(g, var->tag), ""), ok,
                            fail);
            LLVMPositionBuilderAtEnd(g->b, ok);
            tested = true;
        }
        bool always = !tested;
        for (int i = 0; i < p->nsubs; i++) {
            int slot = p->slots ? p->slots[i] : i;
            Type *ft = variant_field_type(g, t, var, slot);
            LLVMValueRef fv =
                unbox(g, load_word(g, v, slot + 1, var->named ? var->fields[slot] : "payload"), ft);
            if (!gen_pattern(g, p->subs[i], fv, ft, fail)) always = false;
        }
        if (p->typed && p->sym) bind(g, p->sym, BIND_VALUE)->v = v; /* `d: Variant` */
        return always;
    }
    case PAT_LIST: {
        Type *elem = t->args[0];
        LLVMValueRef len = gen_size(g, v, t);
        cond =
            LLVMBuildICmp(g->b, p->has_rest ? LLVMIntSGE : LLVMIntEQ, len, ci64(g, p->nsubs), "");
        LLVMBasicBlockRef ok = new_block(g, "pat.list");
        LLVMBuildCondBr(g->b, cond, ok, fail);
        LLVMPositionBuilderAtEnd(g->b, ok);
        for (int i = 0; i < p->nsubs; i++) {
            LLVMTypeRef pt[2] = {g->ptr, g->i64};
            LLVMValueRef a[2] = {v, ci64(g, i)};
            LLVMValueRef x = unbox(g, call_rt(g, "osp_list_at", g->i64, pt, a, 2), elem);
            gen_pattern(g, p->subs[i], x, elem, fail);
        }
        if (p->rest_sym) {
            LLVMTypeRef pt[2] = {g->ptr, g->i64};
            LLVMValueRef a[2] = {v, ci64(g, p->nsubs)};
            bind(g, p->rest_sym, BIND_VALUE)->v = call_rt(g, "osp_list_drop", g->ptr, pt, a, 2);
        }
        return false;
    }
    }
    LLVMBasicBlockRef ok = new_block(g, "pat.ok");
    LLVMBuildCondBr(g->b, cond, ok, fail);
    LLVMPositionBuilderAtEnd(g->b, ok);
    return false;
}

static LLVMValueRef gen_match(CG *g, Expr *e) {
    LLVMValueRef sv = gen(g, e->u.match.scrut);
    Type *st = ty_find(ety(g, e->u.match.scrut));
    Type *rt = ety(g, e);
    LLVMBasicBlockRef join = new_block(g, "match.end");
    LLVMValueRef *vals =
        arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(e->u.match.narms + 1));
    LLVMBasicBlockRef *bbs =
        arena_alloc(g->arena, sizeof(LLVMBasicBlockRef) * (size_t)(e->u.match.narms + 1));
    int nin = 0;
    bool exhausted = false;
    for (int i = 0; i < e->u.match.narms && !exhausted; i++) {
        MatchArm *arm = &e->u.match.arms[i];
        Pattern *p = arm->pat;
        set_loc_line(g, p->pos.line, p->pos.col);
        LLVMBasicBlockRef next = new_block(g, "match.next");
        Binding *save_env = g->fs->env;
        if (gen_pattern(g, p, sv, st, next)) exhausted = true;
        LLVMValueRef v = gen(g, arm->body);
        g->fs->env = save_env;
        vals[nin] = v;
        bbs[nin] = LLVMGetInsertBlock(g->b);
        nin++;
        LLVMBuildBr(g->b, join);
        LLVMPositionBuilderAtEnd(g->b, next);
    }
    if (exhausted) {
        LLVMBuildUnreachable(g->b); /* the last `match.next` has no predecessor */
    } else {
        set_loc_line(g, e->pos.line, e->pos.col);
        LLVMTypeRef p[2] = {g->ptr, g->i64};
        LLVMValueRef a[2] = {g->str_file, ci64(g, e->pos.line)};
        LLVMValueRef c = call_rt(g, "osp_fatal_no_match", g->voidt, p, a, 2);
        LLVMSetInstructionCallConv(c, LLVMCCallConv);
        LLVMBuildUnreachable(g->b);
    }
    LLVMPositionBuilderAtEnd(g->b, join);
    if (nin == 0) {
        LLVMBuildUnreachable(g->b);
        LLVMBasicBlockRef dead = new_block(g, "dead");
        LLVMPositionBuilderAtEnd(g->b, dead);
        return LLVMGetUndef(llty(g, rt));
    }
    LLVMValueRef phi = LLVMBuildPhi(g->b, llty(g, rt), "");
    LLVMAddIncoming(phi, vals, bbs, (unsigned)nin);
    return phi;
}

static LLVMValueRef gen_interp(CG *g, Expr *e) {
    int n = e->u.interp.nparts;
    LLVMValueRef *parts = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        Expr *p = e->u.interp.parts[i];
        LLVMValueRef v = gen(g, p);
        parts[i] = p->kind == E_STRING ? v : render(g, v, ety(g, p), false);
    }
    if (n == 1) return parts[0];
    if (n == 2) {
        LLVMTypeRef p[2] = {g->ptr, g->ptr};
        return call_rt(g, "osp_str_cat", g->ptr, p, parts, 2);
    }
    LLVMTypeRef arr_t = LLVMArrayType2(g->ptr, (uint64_t)n);
    LLVMValueRef arr = entry_alloca(g, arr_t, "parts");
    for (int i = 0; i < n; i++) {
        LLVMValueRef idx[2] = {ci64(g, 0), ci64(g, i)};
        LLVMBuildStore(g->b, parts[i], LLVMBuildInBoundsGEP2(g->b, arr_t, arr, idx, 2, ""));
    }
    LLVMTypeRef p[2] = {g->i64, g->ptr};
    LLVMValueRef a[2] = {ci64(g, n), arr};
    return call_rt(g, "osp_str_concat", g->ptr, p, a, 2);
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

static LLVMValueRef gen_spawn(CG *g, Expr *e) {
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

static Type **concrete_inst(CG *g, EffectDecl *d, Type **inst) {
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
static Type *op_type(CG *g, EffectDecl *d, int opi, Type **inst) {
    return ty_find(subst_vars(g, d->ops[opi].type, d->pvars, inst, d->nparams));
}

static LLVMValueRef gen_perform(CG *g, Expr *e) {
    EffectDecl *d = e->u.perform.decl;
    int n = e->u.perform.nargs;
    LLVMValueRef *args = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(n + 2));
    Type **argt = arena_alloc(g->arena, sizeof(Type *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        args[i + 1] = gen(g, e->u.perform.args[i]);
        argt[i] = ety(g, e->u.perform.args[i]);
    }
    Type **inst = concrete_inst(g, d, e->u.perform.inst);
    Type *ft = op_type(g, d, e->u.perform.opi, inst);
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
        j->llty = closure_fn_type(g, op_type(g, h->u.handle.decl, arm->opi, inst));
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

static LLVMValueRef gen_handle(CG *g, Expr *e) {
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

static LLVMValueRef gen_resume(CG *g, Expr *e) {
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

/* ---- records, lists, maps ---- */

static LLVMValueRef gen_record(CG *g, Expr *e) {
    Type *t = ety(g, e);
    int n = e->u.record.n;
    if (e->u.record.variant) {
        Variant *v = e->u.record.variant;
        LLVMValueRef blk = gc_alloc(g, 8 * (v->nfields + 1));
        store_word(g, blk, 0, ci64(g, v->tag));
        for (int i = 0; i < n; i++) {
            FieldInit *f = &e->u.record.fields[i];
            store_word(g, blk, f->slot + 1,
                       box(g, gen(g, f->value), variant_field_type(g, t, v, f->slot)));
        }
        return blk;
    }
    LLVMValueRef blk = gc_alloc(g, 8 * record_nfields(t));
    for (int i = 0; i < n; i++) {
        FieldInit *f = &e->u.record.fields[i];
        store_word(g, blk, f->slot, box(g, gen(g, f->value), record_field_type(g, t, f->slot)));
    }
    return blk;
}

static LLVMValueRef gen_update(CG *g, Expr *e) {
    LLVMValueRef old = gen(g, e->u.update.e);
    Type *t = ety(g, e->u.update.e);
    int nf = record_nfields(t);
    LLVMValueRef blk = gc_alloc(g, 8 * nf);
    for (int i = 0; i < nf; i++) store_word(g, blk, i, load_word(g, old, i, ""));
    for (int i = 0; i < e->u.update.n; i++) {
        FieldInit *f = &e->u.update.fields[i];
        int slot = record_slot(t, f->name);
        store_word(g, blk, slot, box(g, gen(g, f->value), record_field_type(g, t, slot)));
    }
    return blk;
}

/* The runtime's constructor for a list of type `list_t`: osp_list_new_scalar when its
 * elements are never pointers (its backings may then be pointer-free), else osp_list_new. */
static const char *list_new_fn(Type *list_t) {
    Type *t = ty_find(list_t);
    TyKind k = t->kind == TY_LIST && t->nargs == 1 ? ty_find(t->args[0])->kind : TY_VAR;
    return k == TY_INT || k == TY_FLOAT || k == TY_BOOL ? "osp_list_new_scalar" : "osp_list_new";
}

static LLVMValueRef gen_list(CG *g, Expr *e) {
    int n = e->u.list.n;
    const char *fn = list_new_fn(ety(g, e));
    if (n == 0)
        return call_sig(g, fn, "p:ip", (LLVMValueRef[]){ci64(g, 0), LLVMConstNull(g->ptr)}, NULL);
    LLVMTypeRef arr_t = LLVMArrayType2(g->i64, (uint64_t)n);
    LLVMValueRef arr = entry_alloca(g, arr_t, "list.elems");
    for (int i = 0; i < n; i++) {
        Expr *el = e->u.list.elems[i];
        LLVMValueRef w = box(g, gen(g, el), ety(g, el));
        LLVMValueRef idx[2] = {ci64(g, 0), ci64(g, i)};
        LLVMBuildStore(g->b, w, LLVMBuildInBoundsGEP2(g->b, arr_t, arr, idx, 2, ""));
    }
    return call_sig(g, fn, "p:ip", (LLVMValueRef[]){ci64(g, n), arr}, NULL);
}

static LLVMValueRef gen_maplit(CG *g, Expr *e) {
    LLVMValueRef m = call_rt(g, "osp_map_empty", g->ptr, NULL, NULL, 0);
    for (int i = 0; i < e->u.maplit.n; i++) {
        LLVMValueRef k = gen(g, e->u.maplit.keys[i]);
        Expr *x = e->u.maplit.vals[i];
        LLVMValueRef v = gen(g, x);
        m = call_sig(g, "osp_map_set", "p:ppw", (LLVMValueRef[]){m, k, v},
                     (Type *[]){NULL, NULL, ety(g, x)});
    }
    return m;
}

static LLVMValueRef gen_index(CG *g, Expr *e) {
    LLVMValueRef x = gen(g, e->u.index.e), i = gen(g, e->u.index.idx);
    Type *t = ty_find(ety(g, e->u.index.e));
    const char *fn = t->kind == TY_LIST  ? "osp_list_get"
                     : t->kind == TY_MAP ? "osp_map_get"
                                         : "osp_str_index";
    return call_sig(g, fn, t->kind == TY_MAP ? "r:pp" : "r:pi", (LLVMValueRef[]){x, i}, NULL);
}

static LLVMValueRef gen_if(CG *g, Expr *e) {
    LLVMValueRef c = gen(g, e->u.if_.cond);
    LLVMBasicBlockRef tb = new_block(g, "if.then"), eb = new_block(g, "if.else"),
                      join = new_block(g, "if.end");
    LLVMBuildCondBr(g->b, c, tb, eb);
    LLVMPositionBuilderAtEnd(g->b, tb);
    LLVMValueRef a = gen(g, e->u.if_.then);
    LLVMBasicBlockRef tend = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, eb);
    LLVMValueRef b = gen(g, e->u.if_.els);
    LLVMBasicBlockRef eend = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, join);
    LLVMValueRef phi = LLVMBuildPhi(g->b, llty(g, ety(g, e)), "");
    LLVMValueRef vals[2] = {a, b};
    LLVMBasicBlockRef bbs[2] = {tend, eend};
    LLVMAddIncoming(phi, vals, bbs, 2);
    return phi;
}

/* The value of an identifier used as a value (not called). */
static LLVMValueRef gen_ident(CG *g, Expr *e) {
    Sym *s = e->u.ident.sym;
    switch (s->kind) {
    case SYM_LOCAL: {
        Binding *b = lookup(g, s);
        if (b && b->kind == BIND_VALUE) return b->v;
        if (b && b->kind == BIND_CELL)
            return LLVMBuildLoad2(g->b, llty(g, sty(g, s->type)), b->v, s->name);
        if (b && b->kind == BIND_CALLEE) return callee_value(g, &b->callee, ety(g, e));
        if (s->static_kind == STATIC_FN && s->file_scope) {
            Callee c = callee_of(g, e);
            return callee_value(g, &c, ety(g, e));
        }
        if (s->is_global) return LLVMBuildLoad2(g->b, llty(g, s->type), global_of(g, s), s->name);
        break;
    }
    case SYM_FN:
    case SYM_BUILTIN: {
        Callee c = callee_of(g, e);
        return callee_value(g, &c, ety(g, e));
    }
    case SYM_CTOR:
        if (s->ctor->nfields == 0) return build_variant(g, s->ctor, NULL, NULL, 0);
        {
            Callee c = callee_of(g, e);
            return callee_value(g, &c, ety(g, e));
        }
    }
    internal_error(g, "value of an identifier is not available");
    return LLVMGetUndef(llty(g, ety(g, e)));
}

static LLVMValueRef gen_inner(CG *g, Expr *e) {
    switch (e->kind) {
    case E_INT: return ci64(g, e->u.ival);
    case E_FLOAT: return LLVMConstReal(g->f64, e->u.fval);
    case E_BOOL: return LLVMConstInt(g->i1, e->u.bval, 0);
    case E_STRING: return const_string(g, e->u.str.s, e->u.str.len);
    case E_INTERP: return gen_interp(g, e);
    case E_IDENT: return gen_ident(g, e);
    case E_CALL: return gen_call(g, e);
    case E_BINARY:
        switch (e->u.bin.op) {
        case OP_AND:
        case OP_OR: return gen_logic(g, e);
        case OP_EQ:
        case OP_NE:
        case OP_LT:
        case OP_GT:
        case OP_LE:
        case OP_GE: return gen_compare(g, e);
        default: return gen_arith(g, e);
        }
    case E_UNARY: return gen_unary(g, e);
    case E_ELVIS: return gen_elvis(g, e);
    case E_MATCH: return gen_match(g, e);
    case E_BLOCK: {
        Binding *save = g->fs->env;
        LLVMValueRef value = unit_value(g);
        for (int i = 0; i < e->u.block.nstmts; i++) gen_stmt(g, e->u.block.stmts[i], &value);
        g->fs->env = save;
        return value;
    }
    case E_LAMBDA: return gen_closure(g, e);
    case E_SPAWN: return gen_spawn(g, e);
    case E_AWAIT: {
        LLVMValueRef id = gen(g, e->u.await.e);
        LLVMTypeRef p[1] = {g->i64};
        LLVMValueRef a[1] = {id};
        LLVMValueRef w = call_rt(g, "osp_fiber_wait", g->i64, p, a, 1);
        return unbox(g, w, ety(g, e));
    }
    case E_YIELD: {
        LLVMValueRef v = e->u.yield.e ? gen(g, e->u.yield.e) : unit_value(g);
        call_rt(g, "osp_fiber_yield", g->voidt, NULL, NULL, 0);
        return v;
    }
    case E_RESULT_CTOR: {
        LLVMValueRef v = gen(g, e->u.ctor.e);
        if (e->u.ctor.is_error)
            return make_result(g, LLVMConstInt(g->i1, 1, 0),
                               LLVMBuildPtrToInt(g->b, v, g->i64, ""));
        return make_result(g, LLVMConstInt(g->i1, 0, 0), box(g, v, ety(g, e->u.ctor.e)));
    }
    case E_LIST: return gen_list(g, e);
    case E_IF: return gen_if(g, e);
    case E_FIELD: {
        LLVMValueRef r = gen(g, e->u.field.e);
        Type *t = ety(g, e->u.field.e);
        int slot = record_slot(t, e->u.field.name);
        if (slot < 0) {
            internal_error(g, "unknown record field");
            return LLVMGetUndef(llty(g, ety(g, e)));
        }
        return unbox(g, load_word(g, r, slot, e->u.field.name), ety(g, e));
    }
    case E_METHOD: return gen(g, e->u.method.call);
    case E_RECORD: return gen_record(g, e);
    case E_UPDATE: return gen_update(g, e);
    case E_INDEX: return gen_index(g, e);
    case E_MAPLIT: return gen_maplit(g, e);
    case E_PERFORM: return gen_perform(g, e);
    case E_HANDLE: return gen_handle(g, e);
    case E_RESUME: return gen_resume(g, e);
    case E_SEND: {
        LLVMValueRef ch = gen(g, e->u.send.ch), v = gen(g, e->u.send.v);
        call_sig(g, "osp_chan_put", "v:iw", (LLVMValueRef[]){ch, v},
                 (Type *[]){NULL, ety(g, e->u.send.v)});
        return unit_value(g);
    }
    case E_RECV: {
        LLVMValueRef ch = gen(g, e->u.recv.ch);
        return unbox(g, call_sig(g, "osp_chan_take", "i:i", (LLVMValueRef[]){ch}, NULL), ety(g, e));
    }
    case E_UNSUPPORTED:
        internal_error(g, "unsupported expression reached code generation");
        return unit_value(g);
    }
    return unit_value(g);
}

static LLVMValueRef gen(CG *g, Expr *e) {
    LLVMMetadataRef prev = g->fs->loc;
    set_loc_line(g, e->pos.line, e->pos.col);
    LLVMValueRef v = gen_inner(g, e);
    restore_loc(g, prev);
    return v;
}

static void gen_stmt(CG *g, Stmt *s, LLVMValueRef *value) {
    switch (s->kind) {
    case S_LET: {
        Sym *sym = s->u.let.sym;
        LLVMMetadataRef prev = g->fs->loc;
        set_loc_line(g, s->pos.line, s->pos.col);
        if (sym->static_kind == STATIC_FN) {
            Binding *b = bind(g, sym, BIND_CALLEE);
            b->callee = callee_of(g, s->u.let.init);
        } else if (sym->static_kind == STATIC_ITER) {
            IterDesc *d = gen_iter(g, s->u.let.init);
            Binding *b = bind(g, sym, BIND_ITER);
            b->iter = d;
        } else if (sym->is_mut) {
            LLVMValueRef v = gen(g, s->u.let.init);
            LLVMValueRef cell = sym->is_global ? global_of(g, sym) : gc_alloc(g, 16);
            LLVMBuildStore(g->b, v, cell);
            bind(g, sym, BIND_CELL)->v = cell;
        } else {
            LLVMValueRef v = gen(g, s->u.let.init);
            Binding *b = bind(g, sym, BIND_VALUE);
            b->v = v;
            if (sym->is_global) LLVMBuildStore(g->b, v, global_of(g, sym));
        }
        restore_loc(g, prev);
        *value = unit_value(g);
        return;
    }
    case S_ASSIGN: {
        Sym *sym = s->u.assign.sym;
        LLVMMetadataRef prev = g->fs->loc;
        set_loc_line(g, s->pos.line, s->pos.col);
        LLVMValueRef v = gen(g, s->u.assign.value);
        Binding *b = lookup(g, sym);
        if (b && b->kind == BIND_CELL)
            LLVMBuildStore(g->b, v, b->v);
        else if (sym->is_global)
            LLVMBuildStore(g->b, v, global_of(g, sym));
        else
            internal_error(g, "assignment to a binding without storage");
        restore_loc(g, prev);
        *value = unit_value(g);
        return;
    }
    case S_EXPR: *value = gen(g, s->u.expr); return;
    default: *value = unit_value(g); return;
    }
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

static void emit_job(CG *g, Job *j) {
    FnState fs;
    j->emitted = true;
    switch (j->kind) {
    case JOB_FN: {
        FnDecl *f = j->fn;
        begin_function(g, &fs, j->llfn, j->name, f->line, j, j);
        for (int i = 0; i < f->nparams; i++)
            if (f->params[i].sym)
                bind(g, f->params[i].sym, BIND_VALUE)->v = LLVMGetParam(j->llfn, (unsigned)i);
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
                bind(g, lam->u.lambda.params[i].sym, BIND_VALUE)->v =
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
                bind(g, p->sym, BIND_VALUE)->v = unbox(g, w, sty(g, p->sym->type));
            }
            LLVMValueRef v = gen(g, arm->body);
            LLVMBuildRet(g->b, box(g, v, ety(g, arm->body)));
        } else {
            for (int i = 0; i < arm->nbinders; i++)
                if (arm->binders[i].sym)
                    bind(g, arm->binders[i].sym, BIND_VALUE)->v =
                        LLVMGetParam(j->llfn, (unsigned)i + 1);
            LLVMValueRef v = gen(g, arm->body);
            Type **inst = concrete_inst(g, h->u.handle.decl, h->u.handle.inst);
            Type *opt = ty_find(op_type(g, h->u.handle.decl, arm->opi, inst));
            /* docs/spec/language.md §12.3: an arm of a Unit operation may have any type but a
             * Result; its value is discarded */
            if (ty_find(opt->ret)->kind == TY_UNIT && ty_find(ety(g, arm->body))->kind != TY_UNIT)
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
        Type *ft = ty_find(j->wtype);
        int n = ft->nargs;
        LLVMValueRef *args = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(n + 1));
        for (int i = 0; i < n; i++) args[i] = LLVMGetParam(j->llfn, (unsigned)i + 1);
        LLVMValueRef v = call_callee(g, &j->wrapped, args, ft->args, n);
        LLVMBuildRet(g->b, v);
        break;
    }
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
    g->arena = prog->arena;
    g->tc = (TypeCtx *)&prog->types;
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
    if (g->error) {
        *err = g->error;
        LLVMDisposeModule(g->mod);
        return NULL;
    }
    return g->mod;
}
