/* codegen_values.c — small IR helpers, types and value representation (boxing, Results), rendering (see codegen_internal.h). */
#include "codegen_internal.h"

/* ---- small helpers ---- */

LLVMValueRef ci64(CG *g, int64_t v) {
    return LLVMConstInt(g->i64, (unsigned long long)v, 1);
}
LLVMValueRef ci32(CG *g, int v) {
    return LLVMConstInt(g->i32, (unsigned long long)v, 1);
}

void set_loc_line(CG *g, int line, int col) {
    if (!g->fs || !g->fs->sp) return;
    LLVMMetadataRef loc = LLVMDIBuilderCreateDebugLocation(
        g->ctx, (unsigned)(line > 0 ? line : 1), (unsigned)(col > 0 ? col : 0), g->fs->sp, NULL);
    g->fs->loc = loc;
    LLVMSetCurrentDebugLocation2(g->b, loc);
}

void restore_loc(CG *g, LLVMMetadataRef loc) {
    if (!g->fs) return;
    g->fs->loc = loc;
    LLVMSetCurrentDebugLocation2(g->b, loc);
}

LLVMValueRef const_string(CG *g, const char *s, size_t len) {
    LLVMValueRef init = LLVMConstStringInContext(g->ctx, s, (unsigned)len, 0);
    LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), ".str");
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(gv, 1);
    return gv;
}

LLVMValueRef cstr(CG *g, const char *s) {
    return const_string(g, s, strlen(s));
}

/* Declare (once) a runtime function. */
LLVMValueRef rt_fn(CG *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int n,
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

LLVMValueRef call_rt(CG *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *pt, LLVMValueRef *args,
                     int n) {
    LLVMTypeRef ty;
    LLVMValueRef f = rt_fn(g, name, ret, pt, n, &ty);
    return LLVMBuildCall2(g->b, ty, f, args, (unsigned)n, "");
}

void add_zeroext(CG *g, LLVMValueRef fn_or_call, unsigned idx, bool is_call) {
    unsigned kind = LLVMGetEnumAttributeKindForName("zeroext", 7);
    LLVMAttributeRef a = LLVMCreateEnumAttribute(g->ctx, kind, 0);
    if (is_call)
        LLVMAddCallSiteAttribute(fn_or_call, idx, a);
    else
        LLVMAddAttributeAtIndex(fn_or_call, idx, a);
}

LLVMValueRef intrinsic(CG *g, const char *name, LLVMTypeRef *tys, int ntys, LLVMTypeRef *fnty) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    *fnty = LLVMIntrinsicGetType(g->ctx, id, tys, (size_t)ntys);
    return LLVMGetIntrinsicDeclaration(g->mod, id, tys, (size_t)ntys);
}

LLVMValueRef entry_alloca(CG *g, LLVMTypeRef ty, const char *name) {
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

LLVMBasicBlockRef new_block(CG *g, const char *name) {
    return LLVMAppendBasicBlockInContext(g->ctx, g->fs->fn, name);
}

/* ---- types ---- */

bool type_eq(Type *a, Type *b) {
    a = ty_rep(a);
    b = ty_rep(b);
    if (a == b) return true;
    /* resolved types never change, so an equality found once holds: remembered, a pair of
     * equal DAGs (`Pair<Pair<…>, Pair<…>>`, n nodes, 2^n paths) is compared in n steps */
    if (a->eq_partner == b || b->eq_partner == a) return true;
    if (a->kind != b->kind || a->nargs != b->nargs || a->decl != b->decl) return false;
    if (a->kind == TY_RECORD)
        for (int i = 0; i < a->nargs; i++)
            if (strcmp(a->fields[i], b->fields[i]) != 0) return false;
    for (int i = 0; i < a->nargs; i++)
        if (!type_eq(a->args[i], b->args[i])) return false;
    if ((a->ret || b->ret) && !(a->ret && b->ret && type_eq(a->ret, b->ret))) return false;
    a->eq_partner = b;
    return true;
}

/* `t`'s constructor over new, resolved arguments: a new type in codegen's arena, resolved. */
Type *rebuild_type(CG *g, Type *t, Type **args, Type *ret) {
    Type *n = ty_rebuild(g->tc, t, args, ret);
    n->resolved = true;
    return n;
}

/* No type variable occurs in resolved type `t` (memoised on the node: types are DAGs, and
 * `Pair<Pair<…>, Pair<…>>` nested n deep is n nodes but 2^n paths). */
static bool var_free(Type *t) {
    if (t->var_free) return t->var_free == 1;
    bool free = t->kind != TY_VAR;
    for (int i = 0; free && i < t->nargs; i++) free = var_free(ty_rep(t->args[i]));
    if (free && t->ret) free = var_free(ty_rep(t->ret));
    t->var_free = free ? 1 : 2;
    return free;
}

/* Substitute the generic variables of `inst`'s function by its type arguments. */
Type *subst(CG *g, Type *t, Job *inst) {
    t = ty_rep(t);
    if (var_free(t)) return t;
    if (t->kind == TY_VAR) {
        if (t->generic) {
            for (Job *j = inst; j; j = j->encl) {
                if (j->kind != JOB_FN) continue;
                for (int i = 0; i < j->fn->nqvars; i++)
                    if (ty_rep(j->fn->qvars[i]) == t) return ty_rep(j->targs[i]);
            }
        }
        return g->tc->t_int; /* unconstrained: defaulted */
    }
    if (t->nargs == 0 && !t->ret) return t;
    Type **args = t->nargs ? arena_alloc(g->arena, sizeof(Type *) * (size_t)t->nargs) : NULL;
    bool same = true;
    for (int i = 0; i < t->nargs; i++) {
        args[i] = subst(g, t->args[i], inst);
        if (args[i] != ty_rep(t->args[i])) same = false;
    }
    Type *ret = t->ret ? subst(g, t->ret, inst) : NULL;
    if (ret && ret != ty_rep(t->ret)) same = false;
    if (same) return t;
    return rebuild_type(g, t, args, ret);
}

Type *ety(CG *g, Expr *e) {
    return subst(g, e->type, g->fs->inst);
}
Type *sty(CG *g, Type *t) {
    return subst(g, t, g->fs->inst);
}

/* Values represented by a pointer: strings, error messages and heap aggregates. */
static bool is_ptr_kind(TyKind k) {
    switch (k) {
    case TY_STRING:
    case TY_ANY:
    case TY_MATHERROR:
    case TY_ERRORT:
    case TY_LIST:
    case TY_MAP:
    case TY_NAMED:
    case TY_RECORD:
    case TY_PTR:
    case TY_GPU:
    case TY_FN: return true;
    default: return false;
    }
}

LLVMTypeRef llty(CG *g, Type *t) {
    t = ty_rep(t);
    if (is_ptr_kind(t->kind)) return g->ptr;
    switch (t->kind) {
    case TY_BOOL: return g->i1;
    case TY_FLOAT: return g->f64;
    case TY_RESULT: return g->rest;
    default: return g->i64;
    }
}

LLVMValueRef unit_value(CG *g) {
    return ci64(g, 0);
}

/* Box a value into one 64-bit word (docs/spec/language.md §14.3). */
LLVMValueRef box(CG *g, LLVMValueRef v, Type *t) {
    t = ty_rep(t);
    switch (t->kind) {
    case TY_BOOL: return LLVMBuildZExt(g->b, v, g->i64, "");
    case TY_FLOAT: return LLVMBuildBitCast(g->b, v, g->i64, "");
    case TY_STRING:
    case TY_ANY:
    case TY_MATHERROR:
    case TY_ERRORT:
    case TY_LIST:
    case TY_MAP:
    case TY_NAMED:
    case TY_RECORD:
    case TY_PTR:
    case TY_GPU:
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

LLVMValueRef unbox(CG *g, LLVMValueRef w, Type *t) {
    t = ty_rep(t);
    switch (t->kind) {
    case TY_BOOL: return LLVMBuildTrunc(g->b, w, g->i1, "");
    case TY_FLOAT: return LLVMBuildBitCast(g->b, w, g->f64, "");
    case TY_STRING:
    case TY_ANY:
    case TY_MATHERROR:
    case TY_ERRORT:
    case TY_LIST:
    case TY_MAP:
    case TY_NAMED:
    case TY_RECORD:
    case TY_PTR:
    case TY_GPU:
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

LLVMValueRef make_result(CG *g, LLVMValueRef is_err_i1, LLVMValueRef word) {
    LLVMValueRef r = LLVMGetUndef(g->rest);
    r = LLVMBuildInsertValue(g->b, r, LLVMBuildZExt(g->b, is_err_i1, g->i64, ""), 0, "");
    return LLVMBuildInsertValue(g->b, r, word, 1, "");
}

/* intDiv(a, d) (docs/spec/language.md §6, §9): Success(a / d), or an Error for d = 0 (division by
 * zero) and for INT64_MIN / -1 (overflow), without a trapping division. */
LLVMValueRef gen_intdiv(CG *g, LLVMValueRef a, LLVMValueRef d) {
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

LLVMValueRef render(CG *g, LLVMValueRef v, Type *t, bool bare) {
    t = ty_rep(t);
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
    case TY_ANY: {
        LLVMTypeRef p[1] = {g->ptr};
        LLVMValueRef a[1] = {v};
        /* the test rendering (§13.1) of an erased Success is its bare payload */
        return call_rt(g, bare ? "osp_any_show_test" : "osp_any_show", g->ptr, p, a, 1);
    }
    case TY_LIST: return cstr(g, "<list>");
    case TY_MAP: return cstr(g, "<map>");
    case TY_GPU: return cstr(g, "<gpu>");
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

void print_line(CG *g, LLVMValueRef s) {
    LLVMTypeRef p[1] = {g->ptr};
    LLVMValueRef a[1] = {s};
    call_rt(g, "osp_print_line", g->voidt, p, a, 1);
}

/* ---- erasure into `any` (docs/spec/language.md §4.1, §8) ---- */

/* The shape descriptor (osprey_rt.h osp_shape) of `kind`, one constant per distinct shape:
 * records with the same field names share one. `fields` NULL: none or positional. */
static LLVMValueRef shape_global(CG *g, int kind, const char *name, const char **fields,
                                 int nfields) {
    static const char *const kinds[] = {"int",     "float", "bool",   "string",  "unit",
                                        "success", "error", "record", "variant", "list",
                                        "map",     "gpu",   "handle"};
    const char *key = arena_printf(g->arena, "osprey.shape.%s%s%s", kinds[kind], name ? "." : "",
                                   name ? name : "");
    for (int i = 0; fields && i < nfields; i++)
        key = arena_printf(g->arena, "%s%s%s", key, i ? "," : ":", fields[i]);
    if (!fields && nfields) key = arena_printf(g->arena, "%s/%d", key, nfields);
    LLVMValueRef gv = LLVMGetNamedGlobal(g->mod, key);
    if (gv) return gv;
    LLVMValueRef names = LLVMConstNull(g->ptr);
    if (fields && nfields) {
        LLVMValueRef *elems = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)nfields);
        for (int i = 0; i < nfields; i++) elems[i] = cstr(g, fields[i]);
        LLVMValueRef arr = LLVMConstArray2(g->ptr, elems, (uint64_t)nfields);
        names = LLVMAddGlobal(g->mod, LLVMTypeOf(arr), ".shape.fields");
        LLVMSetInitializer(names, arr);
        LLVMSetGlobalConstant(names, 1);
        LLVMSetLinkage(names, LLVMPrivateLinkage);
    }
    LLVMTypeRef ft[4] = {g->i64, g->i64, g->ptr, g->ptr};
    LLVMTypeRef st = LLVMStructTypeInContext(g->ctx, ft, 4, 0);
    LLVMValueRef vals[4] = {ci64(g, kind), ci64(g, nfields),
                            name ? cstr(g, name) : LLVMConstNull(g->ptr), names};
    LLVMValueRef init = LLVMConstNamedStruct(st, vals, 4);
    gv = LLVMAddGlobal(g->mod, st, key);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    return gv;
}

static LLVMValueRef any_new(CG *g, LLVMValueRef shape, LLVMValueRef word) {
    LLVMTypeRef p[2] = {g->ptr, g->i64};
    LLVMValueRef a[2] = {shape, word};
    return call_rt(g, "osp_any_new", g->ptr, p, a, 2);
}

/* A new block of the erased words `v[0..n)` (of types `ts`), each loaded from `blk` at word
 * `first + i`. */
static LLVMValueRef erase_fields(CG *g, LLVMValueRef blk, int first, Type **ts, int n) {
    LLVMValueRef arr = gc_alloc(g, 8 * n);
    for (int i = 0; i < n; i++) {
        LLVMValueRef x = unbox(g, load_word(g, blk, first + i, "field"), ts[i]);
        store_word(g, arr, i, LLVMBuildPtrToInt(g->b, erase_value(g, x, ts[i]), g->i64, ""));
    }
    return LLVMBuildPtrToInt(g->b, arr, g->i64, "");
}

/* The body of the eraser of record or union type `t`: parameter 0 is the value. */
static void eraser_body(CG *g, Type *t, LLVMValueRef v) {
    if (t->kind == TY_RECORD) {
        LLVMValueRef w = erase_fields(g, v, 0, t->args, t->nargs);
        LLVMBuildRet(g->b,
                     any_new(g, shape_global(g, OSP_SHAPE_RECORD, NULL, t->fields, t->nargs), w));
        return;
    }
    TypeDecl *td = t->decl;
    if (td->kind == TD_RECORD) {
        Type **ts = arena_alloc(g->arena, sizeof(Type *) * (size_t)(td->nfields + 1));
        for (int i = 0; i < td->nfields; i++)
            ts[i] = subst_vars(g, td->types[i], td->pvars, t->args, td->nparams);
        LLVMValueRef w = erase_fields(g, v, 0, ts, td->nfields);
        LLVMBuildRet(
            g->b, any_new(g, shape_global(g, OSP_SHAPE_RECORD, NULL, td->fields, td->nfields), w));
        return;
    }
    /* a union: word 0 is the tag, words 1.. the payload. A positional record (§3.3: the only
     * variant has the type's name) erases as the record `{ 0: …, 1: … }` */
    bool positional = td->nvariants == 1 && !td->variants[0]->named &&
                      td->variants[0]->nfields > 0 && strcmp(td->variants[0]->name, td->name) == 0;
    LLVMValueRef tag = load_word(g, v, 0, "tag");
    LLVMBasicBlockRef bad = new_block(g, "erase.bad");
    LLVMValueRef sw = LLVMBuildSwitch(g->b, tag, bad, (unsigned)td->nvariants);
    for (int k = 0; k < td->nvariants; k++) {
        Variant *var = td->variants[k];
        LLVMBasicBlockRef bb = new_block(g, "erase.variant");
        LLVMAddCase(sw, ci64(g, var->tag), bb);
        LLVMPositionBuilderAtEnd(g->b, bb);
        int n = var->nfields;
        Type **ts = arena_alloc(g->arena, sizeof(Type *) * (size_t)(n + 1));
        for (int i = 0; i < n; i++) ts[i] = variant_field_type(g, t, var, i);
        LLVMValueRef w = n ? erase_fields(g, v, 1, ts, n) : ci64(g, 0);
        LLVMValueRef shape;
        if (positional) {
            const char **names = arena_alloc(g->arena, sizeof(char *) * (size_t)n);
            for (int i = 0; i < n; i++) names[i] = arena_printf(g->arena, "%d", i);
            shape = shape_global(g, OSP_SHAPE_RECORD, NULL, names, n);
        } else {
            shape =
                shape_global(g, OSP_SHAPE_VARIANT, var->name, var->named ? var->fields : NULL, n);
        }
        LLVMBuildRet(g->b, any_new(g, shape, w));
    }
    LLVMPositionBuilderAtEnd(g->b, bad);
    LLVMBuildUnreachable(g->b);
}

/* The function `ptr osprey.erase.<T>(ptr)` that erases a value of record or union type `t`,
 * made once per type (it may call itself: recursive types). */
static LLVMValueRef eraser(CG *g, Type *t) {
    for (int i = 0; i + 1 < g->erasers.len; i += 2)
        if (type_eq(g->erasers.items[i], t)) return g->erasers.items[i + 1];
    const char *tname = t->kind == TY_RECORD ? "record" : ((TypeDecl *)t->decl)->name;
    const char *name = unique_name(g, arena_printf(g->arena, "osprey.erase.%s", tname));
    LLVMTypeRef p[1] = {g->ptr};
    LLVMTypeRef fty = LLVMFunctionType(g->ptr, p, 1, 0);
    LLVMValueRef fn = LLVMAddFunction(g->mod, name, fty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    vec_push(g->arena, &g->erasers, t);
    vec_push(g->arena, &g->erasers, fn);
    FnState *saved_fs = g->fs;
    LLVMMetadataRef saved_loc = saved_fs ? saved_fs->loc : NULL;
    LLVMBasicBlockRef saved_bb = LLVMGetInsertBlock(g->b);
    FnState fs;
    int line = t->kind == TY_RECORD ? 1 : ((TypeDecl *)t->decl)->pos.line;
    begin_helper(g, &fs, fn, name, line);
    eraser_body(g, t, LLVMGetParam(fn, 0));
    g->fs = saved_fs;
    if (saved_bb) LLVMPositionBuilderAtEnd(g->b, saved_bb);
    LLVMSetCurrentDebugLocation2(g->b, saved_loc);
    return fn;
}

LLVMValueRef erase_value(CG *g, LLVMValueRef v, Type *t) {
    t = ty_rep(t);
    switch (t->kind) {
    case TY_ANY: return v;
    case TY_INT:
    case TY_FIBER:
    case TY_CHANNEL: return any_new(g, shape_global(g, OSP_SHAPE_INT, NULL, NULL, 0), v);
    case TY_FLOAT: return any_new(g, shape_global(g, OSP_SHAPE_FLOAT, NULL, NULL, 0), box(g, v, t));
    case TY_BOOL: return any_new(g, shape_global(g, OSP_SHAPE_BOOL, NULL, NULL, 0), box(g, v, t));
    case TY_STRING:
    case TY_MATHERROR:
    case TY_ERRORT:
        return any_new(g, shape_global(g, OSP_SHAPE_STRING, NULL, NULL, 0), box(g, v, t));
    case TY_UNIT: return any_new(g, shape_global(g, OSP_SHAPE_UNIT, NULL, NULL, 0), ci64(g, 0));
    case TY_LIST: return any_new(g, shape_global(g, OSP_SHAPE_LIST, NULL, NULL, 0), box(g, v, t));
    case TY_MAP: return any_new(g, shape_global(g, OSP_SHAPE_MAP, NULL, NULL, 0), box(g, v, t));
    case TY_RESULT: {
        LLVMValueRef tag = LLVMBuildExtractValue(g->b, v, 0, "tag");
        LLVMValueRef w = LLVMBuildExtractValue(g->b, v, 1, "w");
        LLVMValueRef is_err = LLVMBuildICmp(g->b, LLVMIntNE, tag, ci64(g, 0), "");
        LLVMBasicBlockRef okb = new_block(g, "erase.ok"), errb = new_block(g, "erase.err"),
                          join = new_block(g, "erase.join");
        LLVMBuildCondBr(g->b, is_err, errb, okb);
        LLVMPositionBuilderAtEnd(g->b, okb);
        LLVMValueRef inner = erase_value(g, unbox(g, w, t->args[0]), t->args[0]);
        LLVMValueRef okv = any_new(g, shape_global(g, OSP_SHAPE_SUCCESS, NULL, NULL, 0),
                                   LLVMBuildPtrToInt(g->b, inner, g->i64, ""));
        LLVMBasicBlockRef okend = LLVMGetInsertBlock(g->b);
        LLVMBuildBr(g->b, join);
        LLVMPositionBuilderAtEnd(g->b, errb);
        LLVMValueRef errv = any_new(g, shape_global(g, OSP_SHAPE_ERROR, NULL, NULL, 0), w);
        LLVMBuildBr(g->b, join);
        LLVMPositionBuilderAtEnd(g->b, join);
        LLVMValueRef phi = LLVMBuildPhi(g->b, g->ptr, "erased");
        LLVMValueRef vals[2] = {okv, errv};
        LLVMBasicBlockRef bbs[2] = {okend, errb};
        LLVMAddIncoming(phi, vals, bbs, 2);
        return phi;
    }
    case TY_NAMED:
        /* a record the language declares itself (HttpResponse) is a handle (§8) */
        if (((TypeDecl *)t->decl)->builtin) break;
        /* fall through */
    case TY_RECORD: {
        LLVMValueRef fn = eraser(g, t);
        LLVMTypeRef p[1] = {g->ptr};
        LLVMValueRef a[1] = {v};
        return LLVMBuildCall2(g->b, LLVMFunctionType(g->ptr, p, 1, 0), fn, a, 1, "");
    }
    case TY_GPU: return any_new(g, shape_global(g, OSP_SHAPE_GPU, NULL, NULL, 0), box(g, v, t));
    default: break;
    }
    return any_new(g, shape_global(g, OSP_SHAPE_HANDLE, NULL, NULL, 0), box(g, v, t));
}

LLVMValueRef erase_list(CG *g, LLVMValueRef xs, Type *elem) {
    LLVMTypeRef p1[1] = {g->ptr};
    LLVMValueRef n = call_rt(g, "osp_list_length", g->i64, p1, &xs, 1);
    LLVMTypeRef pa[1] = {g->i64};
    LLVMValueRef bytes = LLVMBuildMul(g->b, LLVMBuildAdd(g->b, n, ci64(g, 1), ""), ci64(g, 8), "");
    LLVMValueRef buf = call_rt(g, "osp_gc_alloc", g->ptr, pa, &bytes, 1);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef head = new_block(g, "erase.loop"), body = new_block(g, "erase.elem"),
                      done = new_block(g, "erase.done");
    LLVMBuildBr(g->b, head);
    LLVMPositionBuilderAtEnd(g->b, head);
    LLVMValueRef i = LLVMBuildPhi(g->b, g->i64, "i");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, i, n, ""), body, done);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMTypeRef p2[2] = {g->ptr, g->i64};
    LLVMValueRef a2[2] = {xs, i};
    LLVMValueRef x = unbox(g, call_rt(g, "osp_list_at", g->i64, p2, a2, 2), elem);
    LLVMValueRef e = erase_value(g, x, elem);
    LLVMValueRef idx[1] = {i};
    LLVMBuildStore(g->b, LLVMBuildPtrToInt(g->b, e, g->i64, ""),
                   LLVMBuildInBoundsGEP2(g->b, g->i64, buf, idx, 1, ""));
    LLVMValueRef next = LLVMBuildAdd(g->b, i, ci64(g, 1), "");
    LLVMBasicBlockRef bend = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, head);
    LLVMValueRef vals[2] = {ci64(g, 0), next};
    LLVMBasicBlockRef bbs[2] = {pre, bend};
    LLVMAddIncoming(i, vals, bbs, 2);
    LLVMPositionBuilderAtEnd(g->b, done);
    LLVMTypeRef p3[2] = {g->i64, g->ptr};
    LLVMValueRef a3[2] = {n, buf};
    return call_rt(g, "osp_list_new", g->ptr, p3, a3, 2);
}
