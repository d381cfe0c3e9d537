/* codegen_gpu.c — the GPU built-ins, run on the host (docs/spec/language.md §9.9; see
 * codegen_internal.h).
 *
 * A buffer is a runtime object (osp_gpu, opaque: its words are reached through
 * osp_gpu_data). gpuMap, gpuZipWith and gpuFilter run their kernel through a chunk function
 * (a JOB_GPU: `void f(ptr ctx, i64 lo, i64 hi)`) that osp_gpu_run calls over [0, n), on the
 * runtime's worker threads too when the kernel is parallel-safe (below); the context is
 * an alloca of the caller { closure, input words, second input words, output words }.
 * gpuFold and gpuScan are left folds (their kernel need not be associative): one loop in
 * the caller, which calls a known kernel directly. toGpu of a pipeline is one loop too. */
#include "codegen_internal.h"

/* ---- which kernels may run in parallel -------------------------------------------------
 * The results of a combinator are the same in any order, but a kernel that does I/O, waits,
 * performs an effect (a static effect's arm may write a `mut`) or calls a function value
 * it cannot see would show the order: those run sequentially, in index order, on the
 * calling thread (§9.9). The walk follows named functions and compile-time-known `let`s. */

typedef struct Pure {
    PtrVec seen; /* FnDecl* already walked (a cycle is assumed pure) */
    Arena *a;
} Pure;

static bool pure_expr(Pure *p, Expr *e);

/* Built-ins with no observable side effect and no wait (safe on any thread, any order). */
static bool builtin_pure(Builtin b) {
    switch (b) {
    case B_TOSTRING:
    case B_INTDIV:
    case B_RANGE:
    case B_MAP:
    case B_FILTER:
    case B_FOREACH:
    case B_FOLD:
    case B_TOFLOAT:
    case B_ABS:
    case B_CHECKED_ADD:
    case B_CHECKED_SUB:
    case B_CHECKED_MUL:
    case B_LENGTH:
    case B_IS_EMPTY:
    case B_CONTAINS:
    case B_STARTS_WITH:
    case B_ENDS_WITH:
    case B_BYTE_LENGTH:
    case B_TAKE:
    case B_DROP:
    case B_JOIN:
    case B_LINES:
    case B_WORDS:
    case B_UPPER:
    case B_LOWER:
    case B_TRIM:
    case B_TRIM_START:
    case B_TRIM_END:
    case B_REVERSE:
    case B_INDEX_OF:
    case B_SUBSTRING:
    case B_SPLIT:
    case B_REPLACE:
    case B_REPEAT:
    case B_PAD_START:
    case B_PAD_END:
    case B_PARSE_INT:
    case B_PARSE_FLOAT:
    case B_BYTE_AT:
    case B_CODE_POINT_AT:
    case B_CODE_POINT_WIDTH:
    case B_FROM_CODE_POINT:
    case B_LIST:
    case B_LIST_LENGTH:
    case B_LIST_GET:
    case B_LIST_APPEND:
    case B_LIST_PREPEND:
    case B_LIST_CONCAT:
    case B_LIST_REVERSE:
    case B_LIST_CONTAINS:
    case B_FOREACH_LIST:
    case B_MAP_NEW:
    case B_MAP_GET:
    case B_MAP_SET:
    case B_MAP_REMOVE:
    case B_MAP_MERGE:
    case B_MAP_CONTAINS:
    case B_MAP_LENGTH:
    case B_MAP_KEYS:
    case B_MAP_VALUES:
    case B_TO_GPU:
    case B_FROM_GPU:
    case B_GPU_LENGTH:
    case B_GPU_GET:
    case B_GPU_IOTA:
    case B_GPU_MAP:
    case B_GPU_ZIP_WITH:
    case B_GPU_FOLD:
    case B_GPU_SCAN:
    case B_GPU_FILTER:
    case B_GPU_DEVICE: return true;
    default: return false;
    }
}

static bool pure_fn(Pure *p, FnDecl *f) {
    if (f->is_extern || !f->body) return false;
    for (int i = 0; i < p->seen.len; i++)
        if (p->seen.items[i] == f) return true;
    vec_push(p->a, &p->seen, f);
    return pure_expr(p, f->body);
}

/* A function value that is called: pure when it is known and its body is. */
static bool pure_callee(Pure *p, Expr *f) {
    if (f->kind == E_LAMBDA) return pure_expr(p, f->u.lambda.body);
    if (f->kind != E_IDENT || !f->u.ident.sym) return false;
    Sym *s = f->u.ident.sym;
    switch (s->kind) {
    case SYM_FN: return pure_fn(p, s->fn);
    case SYM_BUILTIN: return builtin_pure(s->builtin);
    case SYM_CTOR: return true;
    case SYM_LOCAL: return s->static_kind == STATIC_FN && s->init && pure_callee(p, s->init);
    }
    return false;
}

static bool pure_list(Pure *p, Expr **es, int n) {
    for (int i = 0; i < n; i++)
        if (!pure_expr(p, es[i])) return false;
    return true;
}

static bool pure_expr(Pure *p, Expr *e) {
    if (!e) return true;
    switch (e->kind) {
    case E_INT:
    case E_FLOAT:
    case E_BOOL:
    case E_STRING: return true;
    case E_IDENT: {
        Sym *s = e->u.ident.sym;
        /* a named function or built-in used as a value may be called by what receives it */
        if (s && (s->kind == SYM_FN || s->kind == SYM_BUILTIN)) return pure_callee(p, e);
        return true;
    }
    case E_INTERP: return pure_list(p, e->u.interp.parts, e->u.interp.nparts);
    case E_CALL: {
        Expr *f = e->u.call.callee;
        if (!pure_list(p, e->u.call.args, e->u.call.nargs)) return false;
        return pure_callee(p, f);
    }
    case E_BINARY: return pure_expr(p, e->u.bin.l) && pure_expr(p, e->u.bin.r);
    case E_UNARY: return pure_expr(p, e->u.un.e);
    case E_ELVIS: return pure_expr(p, e->u.elvis.l) && pure_expr(p, e->u.elvis.r);
    case E_MATCH:
        if (!pure_expr(p, e->u.match.scrut)) return false;
        for (int i = 0; i < e->u.match.narms; i++)
            if (!pure_expr(p, e->u.match.arms[i].body)) return false;
        return true;
    case E_BLOCK:
        for (int i = 0; i < e->u.block.nstmts; i++) {
            Stmt *s = e->u.block.stmts[i];
            if (s->kind == S_LET && !pure_expr(p, s->u.let.init)) return false;
            if (s->kind == S_EXPR && !pure_expr(p, s->u.expr)) return false;
            if (s->kind == S_ASSIGN) return false;
        }
        return true;
    case E_LAMBDA: return pure_expr(p, e->u.lambda.body);
    case E_RESULT_CTOR: return pure_expr(p, e->u.ctor.e);
    case E_LIST: return pure_list(p, e->u.list.elems, e->u.list.n);
    case E_IF:
        return pure_expr(p, e->u.if_.cond) && pure_expr(p, e->u.if_.then) &&
               pure_expr(p, e->u.if_.els);
    case E_FIELD: return pure_expr(p, e->u.field.e);
    case E_METHOD: return e->u.method.call && pure_expr(p, e->u.method.call);
    case E_RECORD:
        for (int i = 0; i < e->u.record.n; i++)
            if (!pure_expr(p, e->u.record.fields[i].value)) return false;
        return true;
    case E_UPDATE:
        if (!pure_expr(p, e->u.update.e)) return false;
        for (int i = 0; i < e->u.update.n; i++)
            if (!pure_expr(p, e->u.update.fields[i].value)) return false;
        return true;
    case E_INDEX: return pure_expr(p, e->u.index.e) && pure_expr(p, e->u.index.idx);
    case E_MAPLIT:
        return pure_list(p, e->u.maplit.keys, e->u.maplit.n) &&
               pure_list(p, e->u.maplit.vals, e->u.maplit.n);
    default: return false; /* spawn, await, yield, channels, perform, handle, resume, ... */
    }
}

/* Whether the kernel `k` (a call argument) may run on several threads at once. */
static bool kernel_parallel(CG *g, Expr *k) {
    Pure p = {.a = g->arena};
    return pure_callee(&p, k);
}

/* ---- chunk functions -------------------------------------------------------------------- */

enum { CTX_CLOSURE, CTX_IN_A, CTX_IN_B, CTX_OUT, CTX_WORDS };

static LLVMTypeRef ctx_type(CG *g) {
    LLVMTypeRef f[CTX_WORDS] = {g->ptr, g->ptr, g->ptr, g->ptr};
    return LLVMStructTypeInContext(g->ctx, f, CTX_WORDS, 0);
}

/* A closure that is a constant (a lambda capturing nothing, a function's wrapper): the chunk
 * function names it itself, so LLVM sees the code it calls and may inline it. */
static LLVMValueRef constant_closure(LLVMValueRef closure) {
    return LLVMIsAGlobalVariable(closure) && LLVMIsGlobalConstant(closure) ? closure : NULL;
}

static Job *gpu_job(CG *g, Builtin op, Type *kernel_t, LLVMValueRef closure, int line) {
    Job *j = arena_alloc(g->arena, sizeof *j);
    j->kind = JOB_GPU;
    j->gpu_op = op;
    j->wtype = kernel_t;
    j->gpu_closure = constant_closure(closure);
    j->line = line;
    j->name =
        unique_name(g, arena_printf(g->arena, "%s$%s", encl_name(g->fs->inst), builtin_name(op)));
    LLVMTypeRef ps[3] = {g->ptr, g->i64, g->i64};
    j->llty = LLVMFunctionType(g->voidt, ps, 3, 0);
    j->llfn = LLVMAddFunction(g->mod, j->name, j->llty);
    LLVMSetLinkage(j->llfn, LLVMInternalLinkage);
    vec_push(g->arena, &g->jobs, j);
    return j;
}

static LLVMValueRef ctx_field(CG *g, LLVMValueRef ctx, int i, const char *name) {
    return LLVMBuildLoad2(g->b, g->ptr,
                          LLVMBuildStructGEP2(g->b, ctx_type(g), ctx, (unsigned)i, ""), name);
}

static LLVMValueRef word_at(CG *g, LLVMValueRef base, LLVMValueRef i, const char *name) {
    LLVMValueRef idx[1] = {i};
    return LLVMBuildLoad2(g->b, g->i64, LLVMBuildGEP2(g->b, g->i64, base, idx, 1, ""), name);
}

static void store_at(CG *g, LLVMValueRef base, LLVMValueRef i, LLVMValueRef w) {
    LLVMValueRef idx[1] = {i};
    LLVMBuildStore(g->b, w, LLVMBuildGEP2(g->b, g->i64, base, idx, 1, ""));
}

/* The body of a JOB_GPU: out[i] = kernel(a[i]) (gpuMap; gpuFilter's flags), or
 * kernel(a[i], b[i]) (gpuZipWith), for i in [lo, hi). The builder is in its entry block. */
void gen_gpu_chunk(CG *g, Job *j) {
    LLVMValueRef ctx = LLVMGetParam(j->llfn, 0), lo = LLVMGetParam(j->llfn, 1),
                 hi = LLVMGetParam(j->llfn, 2);
    Type *ft = ty_rep(j->wtype);
    Callee cb = {.kind = CAL_VALUE, .type = ft};
    cb.env = j->gpu_closure ? j->gpu_closure : ctx_field(g, ctx, CTX_CLOSURE, "closure");
    LLVMValueRef a = ctx_field(g, ctx, CTX_IN_A, "a");
    LLVMValueRef b = j->gpu_op == B_GPU_ZIP_WITH ? ctx_field(g, ctx, CTX_IN_B, "b") : NULL;
    LLVMValueRef out = ctx_field(g, ctx, CTX_OUT, "out");
    LLVMBasicBlockRef head = LLVMGetInsertBlock(g->b), body = new_block(g, "gpu.body"),
                      done = new_block(g, "gpu.done");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, lo, hi, ""), body, done);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef i = LLVMBuildPhi(g->b, g->i64, "i");
    LLVMValueRef args[2];
    args[0] = unbox(g, word_at(g, a, i, "x"), ft->args[0]);
    if (b) args[1] = unbox(g, word_at(g, b, i, "y"), ft->args[1]);
    LLVMValueRef r = call_callee(g, &cb, args, ft->args, b ? 2 : 1);
    store_at(g, out, i, box(g, r, ft->ret));
    LLVMValueRef next = LLVMBuildNSWAdd(g->b, i, ci64(g, 1), "i.next");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
    LLVMValueRef inc[2] = {lo, next};
    LLVMBasicBlockRef from[2] = {head, latch};
    LLVMAddIncoming(i, inc, from, 2);
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, next, hi, ""), body, done);
    LLVMPositionBuilderAtEnd(g->b, done);
    LLVMBuildRetVoid(g->b);
}

/* ---- calls ------------------------------------------------------------------------------ */

static LLVMValueRef gpu_len(CG *g, LLVMValueRef buf) {
    return call_sig(g, "osp_gpu_length", "i:p", (LLVMValueRef[]){buf}, NULL);
}

static LLVMValueRef gpu_alloc(CG *g, LLVMValueRef n) {
    return call_sig(g, "osp_gpu_alloc", "p:i", (LLVMValueRef[]){n}, NULL);
}

static LLVMValueRef gpu_data(CG *g, LLVMValueRef buf) {
    return call_sig(g, "osp_gpu_data", "p:p", (LLVMValueRef[]){buf}, NULL);
}

/* gpuMap / gpuZipWith / gpuFilter: the kernel over every element through osp_gpu_run. */
static LLVMValueRef gen_gpu_kernel_run(CG *g, Expr *e, Builtin b) {
    Expr **args = e->u.call.args;
    bool zip = b == B_GPU_ZIP_WITH;
    Expr *kexpr = args[zip ? 2 : 1];
    LLVMValueRef a = gen(g, args[0]);
    LLVMValueRef bb = zip ? gen(g, args[1]) : NULL;
    Type *kt = ety(g, kexpr);
    Callee cb = callee_of(g, kexpr);
    LLVMValueRef closure = callee_value(g, &cb, kt);
    LLVMValueRef n = gpu_len(g, a);
    if (zip) {
        LLVMValueRef m = gpu_len(g, bb);
        n = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, m, n, ""), m, n, "n");
    }
    LLVMValueRef out = gpu_alloc(g, n);
    LLVMValueRef ctx = entry_alloca(g, ctx_type(g), "gpu.ctx");
    LLVMValueRef fields[CTX_WORDS] = {
        closure, gpu_data(g, a), zip ? gpu_data(g, bb) : LLVMConstNull(g->ptr), gpu_data(g, out)};
    for (int i = 0; i < CTX_WORDS; i++)
        LLVMBuildStore(g->b, fields[i],
                       LLVMBuildStructGEP2(g->b, ctx_type(g), ctx, (unsigned)i, ""));
    Job *j = gpu_job(g, b, kt, closure, e->pos.line);
    LLVMTypeRef pt[4] = {g->i64, g->ptr, g->ptr, g->i64};
    LLVMValueRef av[4] = {n, j->llfn, ctx, ci64(g, kernel_parallel(g, kexpr) ? 1 : 0)};
    call_rt(g, "osp_gpu_run", g->voidt, pt, av, 4);
    if (b != B_GPU_FILTER) return out;
    /* out holds the predicate's flags: keep the accepted elements */
    return call_sig(g, "osp_gpu_compact", "p:pp", (LLVMValueRef[]){a, gpu_data(g, out)}, NULL);
}

/* gpuFold (acc = f(acc, x)) and gpuScan (out[i] = acc = f(acc, x)): left to right. */
static LLVMValueRef gen_gpu_fold(CG *g, Expr *e, bool scan) {
    Expr **args = e->u.call.args;
    LLVMValueRef buf = gen(g, args[0]);
    Type *elem = ty_rep(ety(g, args[0]))->args[0];
    Type *acct = ety(g, args[1]);
    LLVMValueRef init = gen(g, args[1]);
    Callee cb = callee_of(g, args[2]);
    LLVMValueRef n = gpu_len(g, buf);
    LLVMValueRef in = gpu_data(g, buf);
    LLVMValueRef out = scan ? gpu_alloc(g, n) : NULL;
    LLVMValueRef outw = scan ? gpu_data(g, out) : NULL;
    LLVMValueRef acc_slot = entry_alloca(g, llty(g, acct), "acc");
    LLVMBuildStore(g->b, init, acc_slot);
    LLVMValueRef i_slot = entry_alloca(g, g->i64, "i");
    LLVMBuildStore(g->b, ci64(g, 0), i_slot);
    LLVMBasicBlockRef cond = new_block(g, "gpu.fold.cond"), body = new_block(g, "gpu.fold.body"),
                      done = new_block(g, "gpu.fold.done");
    LLVMBuildBr(g->b, cond);
    LLVMPositionBuilderAtEnd(g->b, cond);
    LLVMValueRef i = LLVMBuildLoad2(g->b, g->i64, i_slot, "i");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, i, n, ""), body, done);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef a[2] = {LLVMBuildLoad2(g->b, llty(g, acct), acc_slot, "acc"),
                         unbox(g, word_at(g, in, i, "x"), elem)};
    Type *at[2] = {acct, elem};
    LLVMValueRef r = call_callee(g, &cb, a, at, 2);
    LLVMBuildStore(g->b, r, acc_slot);
    if (scan) store_at(g, outw, i, box(g, r, acct));
    LLVMBuildStore(g->b, LLVMBuildNSWAdd(g->b, i, ci64(g, 1), "i.next"), i_slot);
    LLVMBuildBr(g->b, cond);
    LLVMPositionBuilderAtEnd(g->b, done);
    return scan ? out : LLVMBuildLoad2(g->b, llty(g, acct), acc_slot, "acc");
}

/* toGpu(pipeline): one counted loop over the pipeline, its survivors written in order. */
static LLVMValueRef gen_to_gpu_iter(CG *g, Expr *src) {
    IterDesc *d = gen_iter(g, src);
    LLVMValueRef span = LLVMBuildSub(g->b, d->end, d->start, "span");
    LLVMValueRef empty = LLVMBuildICmp(g->b, LLVMIntSLE, d->end, d->start, "");
    LLVMValueRef cap = LLVMBuildSelect(g->b, empty, ci64(g, 0), span, "cap");
    LLVMValueRef out = gpu_alloc(g, cap);
    LLVMValueRef words = gpu_data(g, out);
    LLVMValueRef i_slot = entry_alloca(g, g->i64, "i");
    LLVMValueRef k_slot = entry_alloca(g, g->i64, "k");
    LLVMBuildStore(g->b, d->start, i_slot);
    LLVMBuildStore(g->b, ci64(g, 0), k_slot);
    LLVMBasicBlockRef cond = new_block(g, "togpu.cond"), body = new_block(g, "togpu.body"),
                      latch = new_block(g, "togpu.next"), done = new_block(g, "togpu.done");
    LLVMBuildBr(g->b, cond);
    LLVMPositionBuilderAtEnd(g->b, cond);
    LLVMValueRef i = LLVMBuildLoad2(g->b, g->i64, i_slot, "i");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, i, d->end, ""), body, done);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef x = i;
    Type *xt = g->tc->t_int;
    emit_stages(g, d, &x, &xt, latch);
    LLVMValueRef k = LLVMBuildLoad2(g->b, g->i64, k_slot, "k");
    store_at(g, words, k, box(g, x, xt));
    LLVMBuildStore(g->b, LLVMBuildNSWAdd(g->b, k, ci64(g, 1), ""), k_slot);
    LLVMBuildBr(g->b, latch);
    LLVMPositionBuilderAtEnd(g->b, latch);
    LLVMValueRef i2 = LLVMBuildLoad2(g->b, g->i64, i_slot, "i");
    LLVMBuildStore(g->b, LLVMBuildNSWAdd(g->b, i2, ci64(g, 1), "i.next"), i_slot);
    LLVMBuildBr(g->b, cond);
    LLVMPositionBuilderAtEnd(g->b, done);
    LLVMTypeRef pt[2] = {g->ptr, g->i64};
    LLVMValueRef av[2] = {out, LLVMBuildLoad2(g->b, g->i64, k_slot, "count")};
    call_rt(g, "osp_gpu_truncate", g->voidt, pt, av, 2);
    return out;
}

LLVMValueRef gen_gpu_call(CG *g, Expr *e, Builtin b) {
    switch (b) {
    case B_TO_GPU: {
        Expr *src = e->u.call.args[0];
        if (ty_rep(ety(g, src))->kind == TY_ITER) return gen_to_gpu_iter(g, src);
        return call_sig(g, "osp_gpu_from_list", "p:p", (LLVMValueRef[]){gen(g, src)}, NULL);
    }
    case B_GPU_FOLD: return gen_gpu_fold(g, e, false);
    case B_GPU_SCAN: return gen_gpu_fold(g, e, true);
    default: return gen_gpu_kernel_run(g, e, b);
    }
}
