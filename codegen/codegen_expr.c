/* codegen_expr.c — the environment, expressions, calls, operators and statements (see codegen_internal.h). */
#include "codegen_internal.h"

/* ---- environment ---- */

Binding *bind_sym(CG *g, Sym *s, BindKind k) {
    Binding *b = arena_alloc(g->arena, sizeof *b);
    b->sym = s;
    b->kind = k;
    b->next = g->fs->env;
    g->fs->env = b;
    return b;
}

Binding *lookup(CG *g, Sym *s) {
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

void internal_error(CG *g, const char *msg) {
    if (!g->error) g->error = strdup(msg);
}

/* ---- expressions ---- */

static LLVMValueRef gen_owned_append(CG *g, Expr *a, LLVMValueRef acc);

/* A call of the function being emitted, in tail position: a jump back to its start with
 * the arguments as the new parameters (FnState.loop_head). */
static bool self_tail_call(CG *g, const Callee *c, bool tail) {
    return tail && g->fs->loop_head && c->kind == CAL_FN && !c->fn->is_extern &&
           fn_instance(g, c->fn, c->targs) == g->fs->job;
}

static LLVMValueRef gen_call(CG *g, Expr *e) {
    bool tail = g->fs->at_tail;
    Expr *callee = e->u.call.callee;
    if (callee->kind == E_IDENT && callee->u.ident.sym && callee->u.ident.sym->kind == SYM_BUILTIN)
        return gen_builtin_call(g, e, callee->u.ident.sym->builtin);
    if (callee->kind == E_IDENT && callee->u.ident.sym && callee->u.ident.sym->kind == SYM_FN &&
        callee->u.ident.sym->fn->is_extern) {
        FnDecl *f = callee->u.ident.sym->fn;
        Type *ft = ty_rep(f->type);
        LLVMValueRef *args = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(f->nparams + 1));
        for (int i = 0; i < f->nparams && i < e->u.call.nargs; i++)
            args[i] = ty_rep(ft->args[i])->kind == TY_FN
                          ? extern_fn_pointer(g, e->u.call.args[i], ft->args[i])
                          : gen(g, e->u.call.args[i]);
        return gen_extern_call(g, f, args);
    }
    int n = e->u.call.nargs;
    LLVMValueRef *args = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)(n + 1));
    Type **at = arena_alloc(g->arena, sizeof(Type *) * (size_t)(n + 1));
    Callee c = callee_of(g, callee);
    bool self = self_tail_call(g, &c, tail) && n == c.fn->nparams;
    for (int i = 0; i < n; i++) {
        Expr *a = e->u.call.args[i];
        at[i] = ety(g, a);
        if (self && g->fs->acc_state[i] && str_append_arg(e, i, c.fn->params[i].sym)) {
            /* `p + s` passed on as `p`: appended in place (codegen_own.c) */
            args[i] = gen_owned_append(g, a, g->fs->acc_state[i]);
            continue;
        }
        args[i] = gen(g, a);
    }
    if (self) {
        LLVMBasicBlockRef here = LLVMGetInsertBlock(g->b);
        for (int i = 0; i < n; i++) LLVMAddIncoming(g->fs->loop_phis[i], &args[i], &here, 1);
        LLVMBuildBr(g->b, g->fs->loop_head);
        /* the call's value is never used: the join after it is reached from other paths */
        LLVMPositionBuilderAtEnd(g->b, new_block(g, "tailcall.dead"));
        return LLVMGetPoison(llty(g, ety(g, e)));
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
    t = ty_rep(t);
    if (t->kind == TY_RESULT) {
        o.is_result = true;
        o.is_err =
            LLVMBuildICmp(g->b, LLVMIntNE, LLVMBuildExtractValue(g->b, v, 0, ""), ci64(g, 0), "");
        o.word = LLVMBuildExtractValue(g->b, v, 1, "");
        Type *p = ty_rep(t->args[0]);
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
    rt = ty_rep(rt);
    if (rt->kind != TY_RESULT) return val;
    LLVMValueRef word =
        ty_rep(rt->args[0])->kind == TY_FLOAT ? LLVMBuildBitCast(g->b, val, g->i64, "") : val;
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
    TyKind lk = ty_rep(lt)->kind;
    if (lk == TY_LIST && ty_rep(ty_rep(res)->args[0])->kind == TY_ANY) {
        /* docs/spec/language.md §9.4: lists of differing element types concatenate into a
         * List<any>, every element erased */
        Type *le = ty_rep(ty_rep(lt)->args[0]), *re = ty_rep(ty_rep(rtp)->args[0]);
        if (le->kind != TY_ANY) lv = erase_list(g, lv, le);
        if (re->kind != TY_ANY) rv = erase_list(g, rv, re);
    }
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
    Type *lt = ty_rep(ety(g, e->u.bin.l)), *rt = ty_rep(ety(g, e->u.bin.r));
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
    Type *rt = ty_rep(ety(g, e->u.elvis.l));
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

/* A part of an interpolation as a string. */
static LLVMValueRef interp_part(CG *g, Expr *p) {
    LLVMValueRef v = gen(g, p);
    return p->kind == E_STRING ? v : render(g, v, ety(g, p), false);
}

/* An argument str_append_arg accepted, appended in place to the string of `acc`: the parts
 * are evaluated left to right as the copying forms do, each appended as soon as it is known. */
static LLVMValueRef gen_owned_append(CG *g, Expr *a, LLVMValueRef acc) {
    LLVMValueRef s;
    if (a->kind == E_INTERP) {
        int first = interp_first_part(a);
        s = interp_part(g, a->u.interp.parts[first]);
        for (int i = first + 1; i < a->u.interp.nparts; i++)
            s = call_sig(g, "osp_str_append_owned", "p:ppp",
                         (LLVMValueRef[]){s, interp_part(g, a->u.interp.parts[i]), acc}, NULL);
        return s;
    }
    s = a->u.bin.l->kind == E_IDENT ? gen(g, a->u.bin.l) : gen_owned_append(g, a->u.bin.l, acc);
    return call_sig(g, "osp_str_append_owned", "p:ppp",
                    (LLVMValueRef[]){s, gen(g, a->u.bin.r), acc}, NULL);
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

static LLVMValueRef gen_if(CG *g, Expr *e) {
    bool tail = g->fs->at_tail;
    LLVMValueRef c = gen(g, e->u.if_.cond);
    LLVMBasicBlockRef tb = new_block(g, "if.then"), eb = new_block(g, "if.else"),
                      join = new_block(g, "if.end");
    LLVMBuildCondBr(g->b, c, tb, eb);
    LLVMPositionBuilderAtEnd(g->b, tb);
    g->fs->tail = tail;
    LLVMValueRef a = gen(g, e->u.if_.then);
    LLVMBasicBlockRef tend = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, eb);
    g->fs->tail = tail;
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
        bool tail = g->fs->at_tail;
        Binding *save = g->fs->env;
        LLVMValueRef value = unit_value(g);
        LLVMValueRef at_end[16]; /* lists released when the block's value is computed */
        int nend = 0;
        for (int i = 0; i < e->u.block.nstmts; i++) {
            Stmt *st = e->u.block.stmts[i];
            /* releases at the end of the block come after its value (own_let_plan makes
             * none when the value may end in a call) */
            g->fs->tail = tail && i == e->u.block.nstmts - 1 && st->kind == S_EXPR;
            gen_stmt(g, st, &value);
            g->fs->tail = false;
            OwnPlan plan = own_let_plan(e, i);
            Binding *b = plan != OWN_NONE ? lookup(g, st->u.let.sym) : NULL;
            if (b == NULL || b->kind != BIND_VALUE) continue;
            if (plan == OWN_AT_USE)
                b->release_at_use = true;
            else if (nend < 16)
                at_end[nend++] = b->v;
        }
        for (int i = 0; i < nend; i++) release_list(g, at_end[i]);
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
    case E_METHOD: g->fs->tail = g->fs->at_tail; return gen(g, e->u.method.call);
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
    case E_ERASE: return erase_value(g, gen(g, e->u.erase.e), ety(g, e->u.erase.e));
    }
    return unit_value(g);
}

LLVMValueRef gen(CG *g, Expr *e) {
    g->fs->at_tail = g->fs->tail;
    g->fs->tail = false;
    LLVMMetadataRef prev = g->fs->loc;
    set_loc_line(g, e->pos.line, e->pos.col);
    LLVMValueRef v = gen_inner(g, e);
    restore_loc(g, prev);
    return v;
}

void gen_stmt(CG *g, Stmt *s, LLVMValueRef *value) {
    switch (s->kind) {
    case S_LET: {
        Sym *sym = s->u.let.sym;
        LLVMMetadataRef prev = g->fs->loc;
        set_loc_line(g, s->pos.line, s->pos.col);
        if (sym->static_kind == STATIC_FN) {
            Binding *b = bind_sym(g, sym, BIND_CALLEE);
            b->callee = callee_of(g, s->u.let.init);
        } else if (sym->static_kind == STATIC_ITER) {
            IterDesc *d = gen_iter(g, s->u.let.init);
            Binding *b = bind_sym(g, sym, BIND_ITER);
            b->iter = d;
        } else if (sym->is_mut) {
            LLVMValueRef v = gen(g, s->u.let.init);
            LLVMValueRef cell = sym->is_global ? global_of(g, sym) : gc_alloc(g, 16);
            LLVMBuildStore(g->b, v, cell);
            bind_sym(g, sym, BIND_CELL)->v = cell;
        } else {
            LLVMValueRef v = gen(g, s->u.let.init);
            Binding *b = bind_sym(g, sym, BIND_VALUE);
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
