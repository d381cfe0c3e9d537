/* codegen_data.c — records, unions' payloads, lists and maps (see codegen_internal.h). */
#include "codegen_internal.h"

/* Replace the variables `from[i]` (a declaration's parameters) by `to[i]` in `t`. */
Type *subst_vars(CG *g, Type *t, Type **from, Type **to, int n) {
    t = ty_rep(t);
    if (t->kind == TY_VAR) {
        for (int i = 0; i < n; i++)
            if (ty_rep(from[i]) == t) return ty_rep(to[i]);
        return t;
    }
    if (t->nargs == 0 && !t->ret) return t;
    Type **args = t->nargs ? arena_alloc(g->arena, sizeof(Type *) * (size_t)t->nargs) : NULL;
    for (int i = 0; i < t->nargs; i++) args[i] = subst_vars(g, t->args[i], from, to, n);
    return rebuild_type(g, t, args, t->ret ? subst_vars(g, t->ret, from, to, n) : NULL);
}

/* Field `slot` type of record type `t` / payload slot type of variant `v` of union type `t`. */
static Type *record_field_type(CG *g, Type *t, int slot) {
    t = ty_rep(t);
    if (t->kind == TY_RECORD) return t->args[slot];
    TypeDecl *td = t->decl;
    return subst_vars(g, td->types[slot], td->pvars, t->args, td->nparams);
}

Type *variant_field_type(CG *g, Type *t, Variant *v, int slot) {
    t = ty_rep(t);
    TypeDecl *td = v->decl;
    return subst_vars(g, v->types[slot], td->pvars, t->args, td->nparams);
}

static int record_nfields(Type *t) {
    t = ty_rep(t);
    return t->kind == TY_RECORD ? t->nargs : ((TypeDecl *)t->decl)->nfields;
}

int record_slot(Type *t, const char *name) {
    t = ty_rep(t);
    if (t->kind == TY_RECORD) {
        for (int i = 0; i < t->nargs; i++)
            if (strcmp(t->fields[i], name) == 0) return i;
        return -1;
    }
    TypeDecl *td = t->decl;
    if (td->kind == TD_UNION) {
        /* a positional record (docs/spec/language.md §3.3): field `k` is payload word k + 1,
         * after the tag; the checker accepted only `0` … `nfields - 1` */
        if (td->nvariants != 1) return -1;
        char *end;
        long k = strtol(name, &end, 10);
        if (*end || k < 0 || k >= td->variants[0]->nfields) return -1;
        return (int)k + 1;
    }
    for (int i = 0; i < td->nfields; i++)
        if (strcmp(td->fields[i], name) == 0) return i;
    return -1;
}

/* A union value: word 0 the tag, words 1.. the payload (boxed). */
LLVMValueRef build_variant(CG *g, Variant *v, LLVMValueRef *args, Type **argt, int n) {
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

/* ---- records, lists, maps ---- */

LLVMValueRef gen_record(CG *g, Expr *e) {
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

LLVMValueRef gen_update(CG *g, Expr *e) {
    LLVMValueRef old = gen(g, e->u.update.e);
    Type *t = ety(g, e->u.update.e);
    int nf = record_nfields(t);
    LLVMValueRef blk = gc_alloc(g, 8 * nf);
    for (int i = 0; i < nf; i++) store_word(g, blk, i, load_word(g, old, i, ""));
    for (int i = 0; i < e->u.update.n; i++) {
        FieldInit *f = &e->u.update.fields[i];
        int slot = record_slot(t, f->name);
        Type *ft = record_field_type(g, t, slot), *vt = ety(g, f->value);
        LLVMValueRef v = gen(g, f->value);
        /* an `any` field updated in a function checked before its record type was known
         * (docs/spec/language.md §16.1): the value is erased here, per specialisation */
        if (ty_rep(ft)->kind == TY_ANY && ty_rep(vt)->kind != TY_ANY) v = erase_value(g, v, vt);
        store_word(g, blk, slot, box(g, v, ft));
    }
    return blk;
}

/* The runtime's constructor for a list of type `list_t`: osp_list_new_scalar when its
 * elements are never pointers (its backings may then be pointer-free), else osp_list_new. */
const char *list_new_fn(Type *list_t) {
    Type *t = ty_rep(list_t);
    TyKind k = t->kind == TY_LIST && t->nargs == 1 ? ty_rep(t->args[0])->kind : TY_VAR;
    return k == TY_INT || k == TY_FLOAT || k == TY_BOOL ? "osp_list_new_scalar" : "osp_list_new";
}

LLVMValueRef gen_list(CG *g, Expr *e) {
    int n = e->u.list.n;
    const char *fn = list_new_fn(ety(g, e));
    if (n == 0)
        return call_sig(g, fn, "p:ip", (LLVMValueRef[]){ci64(g, 0), LLVMConstNull(g->ptr)}, NULL);
    LLVMTypeRef arr_t = LLVMArrayType2(g->i64, (uint64_t)n);
    /* The element words, evaluated left to right. The words that are constants (literals)
     * go into a private constant array, so a long literal table is not thousands of stores
     * (which made the optimiser's alias queries quadratic: 5000 elements took seconds); a
     * list with other elements too copies it and stores only those, when it has 8 or more. */
    LLVMValueRef *w = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)n);
    LLVMValueRef *init = arena_alloc(g->arena, sizeof(LLVMValueRef) * (size_t)n);
    int nconst = 0;
    for (int i = 0; i < n; i++) {
        Expr *el = e->u.list.elems[i];
        w[i] = box(g, gen(g, el), ety(g, el));
        bool c = LLVMIsConstant(w[i]);
        init[i] = c ? w[i] : ci64(g, 0);
        nconst += c;
    }
    LLVMValueRef table = NULL;
    if (nconst == n || nconst >= 8) {
        LLVMValueRef ci = LLVMConstArray2(g->i64, init, (uint64_t)n);
        table = LLVMAddGlobal(g->mod, arr_t, "list.const");
        LLVMSetInitializer(table, ci);
        LLVMSetGlobalConstant(table, 1);
        LLVMSetLinkage(table, LLVMPrivateLinkage);
        LLVMSetUnnamedAddress(table, LLVMGlobalUnnamedAddr);
        if (nconst == n) return call_sig(g, fn, "p:ip", (LLVMValueRef[]){ci64(g, n), table}, NULL);
    }
    LLVMValueRef arr = entry_alloca(g, arr_t, "list.elems");
    if (table) LLVMBuildMemCpy(g->b, arr, 8, table, 8, ci64(g, 8 * (int64_t)n));
    for (int i = 0; i < n; i++) {
        if (table && LLVMIsConstant(w[i])) continue;
        LLVMValueRef idx[2] = {ci64(g, 0), ci64(g, i)};
        LLVMBuildStore(g->b, w[i], LLVMBuildInBoundsGEP2(g->b, arr_t, arr, idx, 2, ""));
    }
    return call_sig(g, fn, "p:ip", (LLVMValueRef[]){ci64(g, n), arr}, NULL);
}

LLVMValueRef gen_maplit(CG *g, Expr *e) {
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

LLVMValueRef gen_index(CG *g, Expr *e) {
    LLVMValueRef x = gen(g, e->u.index.e), i = gen(g, e->u.index.idx);
    Type *t = ty_rep(ety(g, e->u.index.e));
    const char *fn = t->kind == TY_LIST  ? "osp_list_get"
                     : t->kind == TY_MAP ? "osp_map_get"
                                         : "osp_str_index";
    return call_sig(g, fn, t->kind == TY_MAP ? "r:pp" : "r:pi", (LLVMValueRef[]){x, i}, NULL);
}
