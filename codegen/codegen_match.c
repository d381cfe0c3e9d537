/* codegen_match.c — patterns and `match` (see codegen_internal.h). */
#include "codegen_internal.h"

/* Continue in a new block when `cond` holds, else branch to `fail`. */
static void test_or_fail(CG *g, LLVMValueRef cond, LLVMBasicBlockRef fail, const char *name) {
    LLVMBasicBlockRef ok = new_block(g, name);
    LLVMBuildCondBr(g->b, cond, ok, fail);
    LLVMPositionBuilderAtEnd(g->b, ok);
}

/*
 * docs/spec/language.md §7.1: a structural or tuple pattern. Over a record it always matches
 * and binds the fields; over `any` it tests, at run time, for an erased record whose field
 * names are exactly (closed) or at least (open) the pattern's, and binds the erased fields.
 */
static bool gen_struct_pattern(CG *g, Pattern *p, LLVMValueRef v, Type *t, LLVMBasicBlockRef fail) {
    if (t->kind == TY_ANY) {
        LLVMTypeRef p1[1] = {g->ptr};
        LLVMValueRef n = call_rt(g, "osp_any_row_size", g->i64, p1, &v, 1);
        test_or_fail(
            g, LLVMBuildICmp(g->b, p->open ? LLVMIntSGE : LLVMIntEQ, n, ci64(g, p->nsubs), ""),
            fail, "pat.row");
        for (int i = 0; i < p->nsubs; i++) {
            LLVMTypeRef p2[2] = {g->ptr, g->ptr};
            LLVMValueRef a2[2] = {v, cstr(g, p->fields[i])};
            LLVMValueRef f = call_rt(g, "osp_any_field", g->ptr, p2, a2, 2);
            test_or_fail(g, LLVMBuildIsNotNull(g->b, f, ""), fail, "pat.field");
            if (p->subs[i]->sym) bind_sym(g, p->subs[i]->sym, BIND_VALUE)->v = f;
        }
        return false;
    }
    for (int i = 0; i < p->nsubs; i++) {
        Sym *s = p->subs[i]->sym;
        if (!s) continue;
        int slot = record_slot(t, p->fields[i]);
        Type *ft = sty(g, s->type);
        bind_sym(g, s, BIND_VALUE)->v = unbox(g, load_word(g, v, slot, p->fields[i]), ft);
    }
    return true;
}

/*
 * Test pattern `p` against value `v` of (concrete) type `t`: branch to `fail` when it
 * does not match and fall through (in a new current block) when it does, binding its
 * variables. Returns true when the pattern always matches (no test emitted).
 */
static bool gen_pattern(CG *g, Pattern *p, LLVMValueRef v, Type *t, LLVMBasicBlockRef fail) {
    t = ty_rep(t);
    LLVMValueRef cond = NULL;
    switch (p->kind) {
    case PAT_WILD:
    case PAT_UNSUPPORTED: return true;
    case PAT_BIND:
        if (p->sym) bind_sym(g, p->sym, BIND_VALUE)->v = v;
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
                if (p->sym) bind_sym(g, p->sym, BIND_VALUE)->v = LLVMGetUndef(g->ptr);
                return false;
            }
            if (p->sym) bind_sym(g, p->sym, BIND_VALUE)->v = v;
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
            bind_sym(g, p->sym, BIND_VALUE)->v = bv;
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
        if (p->typed && p->sym) bind_sym(g, p->sym, BIND_VALUE)->v = v; /* `d: Variant` */
        return always;
    }
    case PAT_STRUCT: return gen_struct_pattern(g, p, v, t, fail);
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
            bind_sym(g, p->rest_sym, BIND_VALUE)->v = call_rt(g, "osp_list_drop", g->ptr, pt, a, 2);
        }
        return false;
    }
    }
    LLVMBasicBlockRef ok = new_block(g, "pat.ok");
    LLVMBuildCondBr(g->b, cond, ok, fail);
    LLVMPositionBuilderAtEnd(g->b, ok);
    return false;
}

LLVMValueRef gen_match(CG *g, Expr *e) {
    bool tail = g->fs->at_tail;
    LLVMValueRef sv = gen(g, e->u.match.scrut);
    Type *st = ty_rep(ety(g, e->u.match.scrut));
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
        g->fs->tail = tail;
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
