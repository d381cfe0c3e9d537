/* inline_rt.c — inlinable IR bodies of small runtime helpers (see inline_rt.h). */
#include "inline_rt.h"

#include <string.h>

#include "osprey_rt.h"

typedef struct Ir {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef i1, i32, i64, ptr;
    LLVMAttributeRef fp_attr;
} Ir;

static LLVMAttributeRef enum_attr(LLVMContextRef ctx, const char *name, uint64_t v) {
    return LLVMCreateEnumAttribute(ctx, LLVMGetEnumAttributeKindForName(name, strlen(name)), v);
}

static void fn_attr(LLVMValueRef fn, LLVMAttributeRef a) {
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, a);
}

/*
 * osp_gc_alloc(size) is GC_MALLOC (runtime/core/start.c): fresh, zeroed, 16-byte aligned
 * memory that aliases nothing; it touches only the collector's own state, which no Osprey
 * value can reach. Saying so lets LLVM keep values in registers across allocations, forward
 * a record's field stores to its loads and drop allocations whose contents nobody reads.
 * (LLVM encodings: allocsize packs (size arg << 32) | 0xFFFFFFFF for "no count argument";
 * allockind alloc|zeroed = 1|16; memory(inaccessiblemem: readwrite) = 3 << 2.)
 */
static void mark_allocator(LLVMContextRef ctx, LLVMValueRef fn) {
    fn_attr(fn, enum_attr(ctx, "allocsize", ((uint64_t)0 << 32) | 0xFFFFFFFFu));
    fn_attr(fn, enum_attr(ctx, "allockind", 1 | 16));
    fn_attr(fn, enum_attr(ctx, "memory", 3u << 2));
    fn_attr(fn, enum_attr(ctx, "nounwind", 0));
    fn_attr(fn, LLVMCreateStringAttribute(ctx, "alloc-family", 12, "osp_gc", 6));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeReturnIndex, enum_attr(ctx, "noalias", 0));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeReturnIndex, enum_attr(ctx, "nonnull", 0));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeReturnIndex, enum_attr(ctx, "align", 16));
}

static LLVMValueRef get_fn(Ir *ir, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int n) {
    LLVMValueRef f = LLVMGetNamedFunction(ir->mod, name);
    if (!f) f = LLVMAddFunction(ir->mod, name, LLVMFunctionType(ret, params, (unsigned)n, 0));
    return f;
}

static LLVMValueRef call(Ir *ir, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                         LLVMValueRef *args, int n) {
    LLVMValueRef f = get_fn(ir, name, ret, params, n);
    return LLVMBuildCall2(ir->b, LLVMGlobalGetValueType(f), f, args, (unsigned)n, "");
}

static LLVMValueRef gc_alloc(Ir *ir, int64_t bytes) {
    LLVMValueRef f = LLVMGetNamedFunction(ir->mod, "osp_gc_alloc");
    if (!f) {
        f = get_fn(ir, "osp_gc_alloc", ir->ptr, &ir->i64, 1);
        mark_allocator(ir->ctx, f);
    }
    LLVMValueRef a = LLVMConstInt(ir->i64, (unsigned long long)bytes, 0);
    return LLVMBuildCall2(ir->b, LLVMGlobalGetValueType(f), f, &a, 1, "view");
}

static LLVMValueRef ci(Ir *ir, int64_t v) {
    return LLVMConstInt(ir->i64, (unsigned long long)v, 1);
}

static LLVMValueRef field_ptr(Ir *ir, LLVMValueRef base, int64_t byte_offset) {
    LLVMValueRef off = LLVMConstInt(ir->i64, (unsigned long long)byte_offset, 0);
    return LLVMBuildInBoundsGEP2(ir->b, LLVMInt8TypeInContext(ir->ctx), base, &off, 1, "");
}

static LLVMValueRef load_i64(Ir *ir, LLVMValueRef base, int64_t byte_offset, const char *name) {
    return LLVMBuildLoad2(ir->b, ir->i64, field_ptr(ir, base, byte_offset), name);
}

static LLVMBasicBlockRef block(Ir *ir, LLVMValueRef fn, const char *name) {
    return LLVMAppendBasicBlockInContext(ir->ctx, fn, name);
}

/* A body for `fn`: available_externally (never emitted; the archive has the symbol). */
static void begin_body(Ir *ir, LLVMValueRef fn) {
    LLVMSetLinkage(fn, LLVMAvailableExternallyLinkage);
    fn_attr(fn, ir->fp_attr);
    fn_attr(fn, enum_attr(ir->ctx, "nounwind", 0));
    fn_attr(fn, enum_attr(ir->ctx, "inlinehint", 0));
    LLVMPositionBuilderAtEnd(ir->b, block(ir, fn, "entry"));
}

/*
 * `xs`, or a constant empty view when it is NULL (list.c treats a NULL list as empty). The
 * view's fields are then read without a branch, so in a loop over a list the optimiser can
 * hoist them (views never change).
 */
static LLVMValueRef empty_view(Ir *ir) {
    const char *name = "osp.empty_view";
    LLVMValueRef g = LLVMGetNamedGlobal(ir->mod, name);
    if (!g) {
        LLVMTypeRef ty = LLVMArrayType2(ir->i64, OSP_LIST_VIEW_BYTES / 8);
        g = LLVMAddGlobal(ir->mod, ty, name);
        LLVMSetInitializer(g, LLVMConstNull(ty));
        LLVMSetGlobalConstant(g, 1);
        LLVMSetLinkage(g, LLVMPrivateLinkage);
        LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
        LLVMSetAlignment(g, 8);
    }
    return g;
}

static LLVMValueRef view_or_empty(Ir *ir, LLVMValueRef xs) {
    return LLVMBuildSelect(ir->b, LLVMBuildIsNull(ir->b, xs, ""), empty_view(ir), xs, "view");
}

/* The list view's length, 0 for a NULL list (list.c: osp_list_length). */
static LLVMValueRef list_len(Ir *ir, LLVMValueRef xs) {
    return load_i64(ir, view_or_empty(ir, xs), OSP_LIST_LENGTH_OFFSET, "len");
}

/* &backing->w[off + i] of a non-empty list view. */
static LLVMValueRef elem_ptr(Ir *ir, LLVMValueRef xs, LLVMValueRef i) {
    LLVMValueRef b =
        LLVMBuildLoad2(ir->b, ir->ptr, field_ptr(ir, xs, OSP_LIST_BACKING_OFFSET), "b");
    LLVMValueRef off = load_i64(ir, xs, OSP_LIST_START_OFFSET, "off");
    LLVMValueRef idx = LLVMBuildAdd(ir->b, off, i, "");
    LLVMValueRef words = field_ptr(ir, b, OSP_BACKING_WORDS_OFFSET);
    return LLVMBuildInBoundsGEP2(ir->b, ir->i64, words, &idx, 1, "");
}

static void body_list_length(Ir *ir, LLVMValueRef fn) {
    begin_body(ir, fn);
    LLVMBuildRet(ir->b, list_len(ir, LLVMGetParam(fn, 0)));
}

static void body_list_at(Ir *ir, LLVMValueRef fn) {
    begin_body(ir, fn);
    LLVMValueRef p = elem_ptr(ir, LLVMGetParam(fn, 0), LLVMGetParam(fn, 1));
    LLVMBuildRet(ir->b, LLVMBuildLoad2(ir->b, ir->i64, p, "w"));
}

/* listGet / xs[i]: Success(word) or Error `index out of bounds` (list.c: osp_list_get). */
static void body_list_get(Ir *ir, LLVMValueRef fn) {
    begin_body(ir, fn);
    LLVMValueRef xs = view_or_empty(ir, LLVMGetParam(fn, 0)), i = LLVMGetParam(fn, 1);
    LLVMValueRef len = load_i64(ir, xs, OSP_LIST_LENGTH_OFFSET, "len");
    LLVMValueRef words = elem_ptr(ir, xs, ci(ir, 0)); /* read before the test: hoistable */
    LLVMBasicBlockRef ok = block(ir, fn, "ok"), bad = block(ir, fn, "bad");
    LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntULT, i, len, "inbounds"), ok, bad);
    LLVMTypeRef rt = LLVMGetReturnType(LLVMGlobalGetValueType(fn));
    LLVMPositionBuilderAtEnd(ir->b, ok);
    LLVMValueRef w =
        LLVMBuildLoad2(ir->b, ir->i64, LLVMBuildGEP2(ir->b, ir->i64, words, &i, 1, ""), "w");
    LLVMValueRef r = LLVMGetUndef(rt);
    r = LLVMBuildInsertValue(ir->b, r, LLVMConstInt(ir->i64, OSP_RESULT_SUCCESS, 0), 0, "");
    LLVMBuildRet(ir->b, LLVMBuildInsertValue(ir->b, r, w, 1, ""));
    LLVMPositionBuilderAtEnd(ir->b, bad);
    LLVMValueRef msg = LLVMBuildGlobalStringPtr(ir->b, "index out of bounds", "");
    r = LLVMGetUndef(rt);
    r = LLVMBuildInsertValue(ir->b, r, LLVMConstInt(ir->i64, OSP_RESULT_ERROR, 0), 0, "");
    LLVMBuildRet(ir->b,
                 LLVMBuildInsertValue(ir->b, r, LLVMBuildPtrToInt(ir->b, msg, ir->i64, ""), 1, ""));
}

/*
 * The view without its first k elements (list.c: osp_list_drop; 0 <= k <= length): the list
 * itself for k <= 0, a constant empty view (NULL, 0, 0; views are never written, so one
 * shared read-only view serves every empty rest) when nothing is left, else a new view of
 * the same backing. So the only allocation has plain stores, which in a loop over
 * `[h, ...t]` forward straight to the next iteration's loads.
 */
static void body_list_drop(Ir *ir, LLVMValueRef fn) {
    begin_body(ir, fn);
    LLVMValueRef xs = LLVMGetParam(fn, 0), k = LLVMGetParam(fn, 1);
    LLVMValueRef zero = LLVMConstInt(ir->i64, 0, 0);
    LLVMBasicBlockRef same = block(ir, fn, "same"), cut = block(ir, fn, "cut"),
                      empty = block(ir, fn, "empty"), rest = block(ir, fn, "rest");
    LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLE, k, zero, ""), same, cut);
    LLVMPositionBuilderAtEnd(ir->b, same);
    LLVMBuildRet(ir->b, xs);
    LLVMPositionBuilderAtEnd(ir->b, cut);
    LLVMValueRef len = load_i64(ir, xs, OSP_LIST_LENGTH_OFFSET, "len");
    LLVMValueRef left = LLVMBuildSub(ir->b, len, k, "");
    LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLE, left, zero, ""), empty, rest);
    LLVMPositionBuilderAtEnd(ir->b, empty);
    LLVMBuildRet(ir->b, empty_view(ir)); /* NULL, 0, 0: views are never written */
    LLVMPositionBuilderAtEnd(ir->b, rest);
    LLVMValueRef b =
        LLVMBuildLoad2(ir->b, ir->ptr, field_ptr(ir, xs, OSP_LIST_BACKING_OFFSET), "b");
    LLVMValueRef off = LLVMBuildAdd(ir->b, load_i64(ir, xs, OSP_LIST_START_OFFSET, "off"), k, "");
    LLVMValueRef v = gc_alloc(ir, OSP_LIST_VIEW_BYTES);
    LLVMBuildStore(ir->b, b, field_ptr(ir, v, OSP_LIST_BACKING_OFFSET));
    LLVMBuildStore(ir->b, off, field_ptr(ir, v, OSP_LIST_START_OFFSET));
    LLVMBuildStore(ir->b, left, field_ptr(ir, v, OSP_LIST_LENGTH_OFFSET));
    LLVMBuildRet(ir->b, v);
}

/* A NULL string reads as "" (strings.c: S()). */
static LLVMValueRef str_or_empty(Ir *ir, LLVMValueRef s) {
    LLVMValueRef empty = LLVMBuildGlobalStringPtr(ir->b, "", "");
    return LLVMBuildSelect(ir->b, LLVMBuildIsNull(ir->b, s, ""), empty, s, "");
}

/*
 * What the string helpers of runtime/core (strings.c, render.c) touch, as LLVM memory
 * effects: they read the strings they are given and write only memory they allocate
 * themselves (like strdup), plus the collector's and libc's own state, which no Osprey
 * value can reach. So a call of one clobbers nothing the program holds, and LLVM may keep
 * values in registers and forward stores to loads across it — in a `[w, ...t]` loop whose
 * body calls them, the tail's view then never needs to be allocated.
 * (LLVM encoding: two bits per location, argmem << 0, inaccessiblemem << 2, other << 4;
 * read 1, write 2.)
 */
enum {
    MEM_ARG_READ = 1,                             /* memory(argmem: read) */
    MEM_ARG_READ_ALLOC = 1 | 3 << 2,              /* + inaccessiblemem: readwrite */
    MEM_READ_ALLOC = MEM_ARG_READ_ALLOC | 1 << 4, /* + other: read (through lists) */
    MEM_ALLOC_ONLY = 3 << 2,                      /* inaccessiblemem: readwrite */
};

/*
 * strnlen(s, 256) inline; a string that long is measured by osp_str_length_long, which
 * remembers the last long string its thread measured (strings.c), so a loop that tests
 * `i < length(s)` on a long string is linear: the strlen was not hoisted out of such loops
 * (the allocations in their bodies write memory), and re-measuring made them quadratic.
 */
static void body_str_length(Ir *ir, LLVMValueRef fn) {
    begin_body(ir, fn);
    LLVMValueRef s = str_or_empty(ir, LLVMGetParam(fn, 0));
    LLVMTypeRef p2[2] = {ir->ptr, ir->i64};
    LLVMValueRef a2[2] = {s, ci(ir, 256)};
    LLVMValueRef n = call(ir, "strnlen", ir->i64, p2, a2, 2);
    LLVMBasicBlockRef shortb = block(ir, fn, "short"), longb = block(ir, fn, "long");
    LLVMValueRef is_long = LLVMBuildICmp(ir->b, LLVMIntEQ, n, ci(ir, 256), "");
    osp_ir_branch_rare(ir->ctx, LLVMBuildCondBr(ir->b, is_long, longb, shortb), true);
    LLVMPositionBuilderAtEnd(ir->b, shortb);
    LLVMBuildRet(ir->b, n);
    LLVMPositionBuilderAtEnd(ir->b, longb);
    LLVMValueRef f = LLVMGetNamedFunction(ir->mod, "osp_str_length_long");
    if (!f) {
        f = get_fn(ir, "osp_str_length_long", ir->i64, &ir->ptr, 1);
        fn_attr(f, enum_attr(ir->ctx, "memory", MEM_ARG_READ_ALLOC));
        fn_attr(f, enum_attr(ir->ctx, "nounwind", 0));
    }
    LLVMBuildRet(ir->b, LLVMBuildCall2(ir->b, LLVMGlobalGetValueType(f), f, &s, 1, ""));
}

/* -1, 0 or 1 by unsigned byte order (render.c: osp_str_cmp). */
static void body_str_cmp(Ir *ir, LLVMValueRef fn) {
    begin_body(ir, fn);
    LLVMValueRef a[2] = {str_or_empty(ir, LLVMGetParam(fn, 0)),
                         str_or_empty(ir, LLVMGetParam(fn, 1))};
    LLVMTypeRef p[2] = {ir->ptr, ir->ptr};
    LLVMValueRef c = call(ir, "strcmp", ir->i32, p, a, 2);
    LLVMValueRef zero = LLVMConstInt(ir->i32, 0, 0);
    LLVMValueRef gt =
        LLVMBuildZExt(ir->b, LLVMBuildICmp(ir->b, LLVMIntSGT, c, zero, ""), ir->i64, "");
    LLVMValueRef lt =
        LLVMBuildZExt(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLT, c, zero, ""), ir->i64, "");
    LLVMBuildRet(ir->b, LLVMBuildSub(ir->b, gt, lt, ""));
}

static const struct {
    const char *name;
    unsigned effects;
} string_helpers[] = {
    {"osp_str_contains", MEM_ARG_READ},
    {"osp_str_starts_with", MEM_ARG_READ},
    {"osp_str_ends_with", MEM_ARG_READ},
    {"osp_str_parse_int", MEM_ARG_READ},
    {"osp_str_parse_float", MEM_ARG_READ_ALLOC},
    {"osp_str_index_of", MEM_ARG_READ_ALLOC},
    {"osp_str_upper", MEM_ARG_READ_ALLOC},
    {"osp_str_lower", MEM_ARG_READ_ALLOC},
    {"osp_str_trim", MEM_ARG_READ_ALLOC},
    {"osp_str_trim_start", MEM_ARG_READ_ALLOC},
    {"osp_str_trim_end", MEM_ARG_READ_ALLOC},
    {"osp_str_take", MEM_ARG_READ_ALLOC},
    {"osp_str_drop", MEM_ARG_READ_ALLOC},
    {"osp_str_reverse", MEM_ARG_READ_ALLOC},
    {"osp_str_substring", MEM_ARG_READ_ALLOC},
    {"osp_str_words", MEM_ARG_READ_ALLOC},
    {"osp_str_lines", MEM_ARG_READ_ALLOC},
    {"osp_str_split", MEM_ARG_READ_ALLOC},
    {"osp_str_cat", MEM_ARG_READ_ALLOC},
    {"osp_str_concat", MEM_READ_ALLOC},
    {"osp_str_join", MEM_READ_ALLOC},
    {"osp_show_int", MEM_ALLOC_ONLY},
};

/*
 * Runtime functions that codegen hands a stack buffer of its own (entry_alloca: a list
 * literal's element words, an interpolation's parts, a Result shown by osp_show_result, a
 * GPU launch's context, a string accumulator) and that use it only during the call. Saying `nocapture` keeps the
 * buffer from escaping, and an escaped alloca stops tailcallelim from marking any later call
 * `tail`: a self-recursive call after `let xs = [n]` or `print("${x} ${y}")` stayed a real
 * call and a loop written as recursion overflowed the stack (tail-call-after-buffer.osp).
 */
static const struct {
    const char *name;
    unsigned param; /* 1-based, as LLVMAddAttributeAtIndex counts */
} stack_buffer_params[] = {
    {"osp_list_new", 2},    {"osp_list_new_scalar", 2}, {"osp_str_concat", 2},
    {"osp_show_result", 1}, {"osp_gpu_run", 3},         {"osp_str_append_owned", 3},
};

void osp_inline_rt_declared(LLVMContextRef ctx, LLVMModuleRef mod, const char *name,
                            LLVMValueRef fn, LLVMAttributeRef fp_attr, bool with_bodies) {
    for (size_t i = 0; i < sizeof stack_buffer_params / sizeof *stack_buffer_params; i++)
        if (strcmp(name, stack_buffer_params[i].name) == 0)
            LLVMAddAttributeAtIndex(fn, stack_buffer_params[i].param,
                                    enum_attr(ctx, "nocapture", 0));
    if (strcmp(name, "osp_gc_alloc") == 0) {
        mark_allocator(ctx, fn);
        return;
    }
    for (size_t i = 0; i < sizeof string_helpers / sizeof *string_helpers; i++) {
        if (strcmp(name, string_helpers[i].name) != 0) continue;
        fn_attr(fn, enum_attr(ctx, "memory", string_helpers[i].effects));
        fn_attr(fn, enum_attr(ctx, "nounwind", 0));
        return;
    }
    static const struct {
        const char *name;
        void (*body)(Ir *, LLVMValueRef);
    } bodies[] = {
        {"osp_list_length", body_list_length}, {"osp_list_at", body_list_at},
        {"osp_list_get", body_list_get},       {"osp_list_drop", body_list_drop},
        {"osp_str_length", body_str_length},   {"osp_str_cmp", body_str_cmp},
    };
    if (!with_bodies) return;
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        if (strcmp(name, bodies[i].name) != 0) continue;
        if (LLVMCountBasicBlocks(fn) != 0) return;
        Ir ir = {ctx,
                 mod,
                 LLVMCreateBuilderInContext(ctx),
                 LLVMInt1TypeInContext(ctx),
                 LLVMInt32TypeInContext(ctx),
                 LLVMInt64TypeInContext(ctx),
                 LLVMPointerTypeInContext(ctx, 0),
                 fp_attr};
        bodies[i].body(&ir, fn);
        LLVMDisposeBuilder(ir.b);
        return;
    }
}

void osp_ir_branch_rare(LLVMContextRef ctx, LLVMValueRef br, bool true_is_rare) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    LLVMMetadataRef ops[3] = {
        LLVMMDStringInContext2(ctx, "branch_weights", 14),
        LLVMValueAsMetadata(LLVMConstInt(i32, true_is_rare ? 1 : 2000, 0)),
        LLVMValueAsMetadata(LLVMConstInt(i32, true_is_rare ? 2000 : 1, 0)),
    };
    LLVMMetadataRef node = LLVMMDNodeInContext2(ctx, ops, 3);
    unsigned kind = LLVMGetMDKindIDInContext(ctx, "prof", 4);
    LLVMSetMetadata(br, kind, LLVMMetadataAsValue(ctx, node));
}
