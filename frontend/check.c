/* check.c — see check.h: the call graph's components (Tarjan), each checked and generalised in
 * turn, then defaulting and the Iterator restrictions. The parts share check_internal.h. */
#include "check_internal.h"

/* docs/spec/language.md §3.5: an extern's parameters and result are int, float, bool, Ptr,
 * string, Unit (result only) or, for a parameter, a function type over those. */
static bool c_abi_type(Type *t, bool result, bool allow_fn) {
    t = ty_find(t);
    switch (t->kind) {
    case TY_INT:
    case TY_FLOAT:
    case TY_BOOL:
    case TY_PTR:
    case TY_STRING:
    case TY_POISON: return true;
    case TY_UNIT: return result;
    case TY_FN:
        if (!allow_fn) return false;
        for (int i = 0; i < t->nargs; i++)
            if (!c_abi_type(t->args[i], false, false)) return false;
        return c_abi_type(t->ret, true, false);
    default: return false;
    }
}

static void check_extern_signature(Checker *c, FnDecl *f) {
    for (int k = 0; k < f->nparams; k++) {
        Param *p = &f->params[k];
        if (!p->annot) {
            error(c, p->pos,
                  "parameter %d of extern `%s` needs a type (int, float, bool, Ptr, "
                  "string or a function type)",
                  k + 1, f->name);
            continue;
        }
        if (!c_abi_type(f->type->args[k], false, true))
            error(c, p->annot->pos,
                  "extern `%s` cannot take a `%s`: C functions take int, float, bool, Ptr, "
                  "string or a function type over those",
                  f->name, show(c, f->type->args[k]));
    }
    if (f->ret_annot && !c_abi_type(f->type->ret, true, false))
        error(c, f->ret_annot->pos,
              "extern `%s` cannot return a `%s`: C functions return int, float, bool, Ptr, "
              "string or nothing",
              f->name, show(c, f->type->ret));
}

void check_scc(Checker *c, int id) {
    PtrVec *members = &c->sccs[id];
    TypeCtx *tc = c->tc;
    for (int i = 0; i < members->len; i++)
        c->fn_state[((FnDecl *)members->items[i])->id] = CK_IN_PROGRESS;
    int outer = tc->level;
    tc->level = outer + 1;
    PtrVec save_handles = c->handles;
    c->handles = (PtrVec){0};
    const char **sn = c->tnames;
    Type **st = c->ttypes;
    int sc = c->ntenv;
    for (int i = 0; i < members->len; i++) {
        FnDecl *f = members->items[i];
        f->tvars = arena_alloc(c->a, sizeof(Type *) * (size_t)(f->ntparams + 1));
        for (int k = 0; k < f->ntparams; k++) f->tvars[k] = ty_rigid(tc, f->tparams[k]);
        c->tnames = f->tparams;
        c->ttypes = f->tvars;
        c->ntenv = f->ntparams;
        Type **ps = arena_alloc(c->a, sizeof(Type *) * (size_t)(f->nparams ? f->nparams : 1));
        for (int k = 0; k < f->nparams; k++) {
            ps[k] = f->params[k].annot ? convert_type(c, f->params[k].annot) : ty_var(tc);
            if (f->params[k].sym) f->params[k].sym->type = ps[k];
        }
        Type *ret = f->ret_annot   ? convert_type(c, f->ret_annot)
                    : f->is_extern ? tc->t_unit /* §3.5: no return type is C `void` */
                                   : ty_var(tc);
        f->type = ty_fn(tc, f->nparams, ps, ret);
        if (f->is_extern) check_extern_signature(c, f);
        for (int k = 0; k < f->nrow; k++) {
            EffectRef *r = &f->row[k];
            if (!r->decl) continue;
            r->types = arena_alloc(c->a, sizeof(Type *) * (size_t)(r->nargs + 1));
            for (int j = 0; j < r->nargs; j++) r->types[j] = convert_type(c, r->args[j]);
        }
    }
    for (int i = 0; i < members->len; i++) {
        FnDecl *f = members->items[i];
        FnDecl *save = c->cur_fn;
        c->cur_fn = f;
        c->tnames = f->tparams;
        c->ttypes = f->tvars;
        c->ntenv = f->ntparams;
        if (f->is_extern) {
            c->cur_fn = save;
            continue;
        }
        Type *bt = check_expected(c, &f->body, f->type->ret);
        if (!coerce(c, &f->body, bt, f->type->ret) &&
            !recover_error(c, f->body->pos, bt, f->type->ret)) {
            error(c, f->body->pos, "`%s` is declared to return `%s`, but its body has type `%s`",
                  f->name, show(c, f->type->ret), show(c, bt));
        }
        c->cur_fn = save;
    }
    c->tnames = sn;
    c->ttypes = st;
    c->ntenv = sc;
    c->handles = save_handles;
    tc->level = outer;
    generalise(c, members, outer);
    for (int i = 0; i < members->len; i++) c->fn_state[((FnDecl *)members->items[i])->id] = CK_DONE;
}

/* ---- strongly connected components (Tarjan) ---- */

typedef struct Tarjan {
    Checker *c;
    int index;
    PtrVec stack;
} Tarjan;

static void tarjan(Tarjan *t, FnDecl *f) {
    Checker *c = t->c;
    c->tj_index[f->id] = c->tj_low[f->id] = ++t->index;
    vec_push(c->scratch, &t->stack, f);
    c->tj_onstack[f->id] = true;
    for (int i = 0; i < f->callees.len; i++) {
        FnDecl *g = f->callees.items[i];
        if (!c->tj_index[g->id]) {
            tarjan(t, g);
            if (c->tj_low[g->id] < c->tj_low[f->id]) c->tj_low[f->id] = c->tj_low[g->id];
        } else if (c->tj_onstack[g->id] && c->tj_index[g->id] < c->tj_low[f->id]) {
            c->tj_low[f->id] = c->tj_index[g->id];
        }
    }
    if (c->tj_low[f->id] == c->tj_index[f->id]) {
        int id = c->nsccs++;
        FnDecl *g;
        do {
            g = t->stack.items[--t->stack.len];
            c->tj_onstack[g->id] = false;
            g->scc = id;
            vec_push(c->scratch, &c->sccs[id], g);
        } while (g != f);
    }
}

/* ---- defaulting and resolving: the finished value handed to the next passes ---- */

static void default_type(Checker *c, Type *t, int depth, unsigned mark) {
    if (!t || depth > 200) return;
    t = ty_find(t);
    if (t->kind == TY_VAR) {
        if (!t->generic && !t->rigid)
            ty_unify(c->tc, t, t->hint & HINT_ERROR ? c->tc->t_errort : c->tc->t_int);
        return;
    }
    if (t->default_mark == mark) return; /* a shared node, done in this walk */
    t->default_mark = mark;
    for (int i = 0; i < t->nargs; i++) default_type(c, t->args[i], depth + 1, mark);
    if (t->ret) default_type(c, t->ret, depth + 1, mark);
}

/* `t` with every variable link followed, in the whole type: its representative, whose
 * arguments (and theirs) are representatives too, marked `resolved`. */
static Type *resolve_type(Type *t, int depth) {
    if (!t) return NULL;
    t = ty_find(t);
    if (t->resolved || depth > 10000) return t;
    for (int i = 0; i < t->nargs; i++) t->args[i] = resolve_type(t->args[i], depth + 1);
    if (t->ret) t->ret = resolve_type(t->ret, depth + 1);
    t->resolved = true;
    return t;
}

/* One walk over every type the syntax tree holds: `visit` gets each slot. */
typedef void (*SlotFn)(Checker *c, Type **slot);

static void slots_type(Checker *c, SlotFn visit, Type **slot) {
    if (*slot) visit(c, slot);
}

static void slots_array(Checker *c, SlotFn visit, Type **ts, int n) {
    for (int i = 0; ts && i < n; i++) slots_type(c, visit, &ts[i]);
}

static void slots_sym(Checker *c, SlotFn visit, Sym *s) {
    if (s) slots_type(c, visit, &s->type);
}

static void slots_params(Checker *c, SlotFn visit, Param *ps, int n) {
    for (int i = 0; i < n; i++) slots_sym(c, visit, ps[i].sym);
}

static void slots_expr(Checker *c, SlotFn visit, Expr *e);

static void slots_exprs(Checker *c, SlotFn visit, Expr **es, int n) {
    for (int i = 0; es && i < n; i++) slots_expr(c, visit, es[i]);
}

static void slots_pattern(Checker *c, SlotFn visit, Pattern *p) {
    if (!p) return;
    slots_sym(c, visit, p->sym);
    slots_sym(c, visit, p->rest_sym);
    for (int i = 0; i < p->nsubs; i++) slots_pattern(c, visit, p->subs[i]);
}

static void slots_stmt(Checker *c, SlotFn visit, Stmt *s) {
    switch (s->kind) {
    case S_LET:
        slots_sym(c, visit, s->u.let.sym);
        slots_expr(c, visit, s->u.let.init);
        return;
    case S_ASSIGN: slots_expr(c, visit, s->u.assign.value); return;
    case S_EXPR: slots_expr(c, visit, s->u.expr); return;
    case S_FN: {
        FnDecl *f = s->u.fn;
        slots_type(c, visit, &f->type);
        slots_params(c, visit, f->params, f->nparams);
        slots_array(c, visit, f->tvars, f->ntparams);
        slots_array(c, visit, f->qvars, f->nqvars);
        for (int k = 0; k < f->nrow; k++)
            if (f->row[k].decl) slots_array(c, visit, f->row[k].types, f->row[k].nargs);
        slots_expr(c, visit, f->body);
        return;
    }
    case S_UNSUPPORTED:
    case S_TYPE:
    case S_EFFECT: return;
    }
}

static void slots_expr(Checker *c, SlotFn visit, Expr *e) {
    if (!e) return;
    slots_type(c, visit, &e->type);
    switch (e->kind) {
    case E_INT:
    case E_FLOAT:
    case E_BOOL:
    case E_STRING: return;
    case E_IDENT: slots_array(c, visit, e->u.ident.inst, e->u.ident.ninst); return;
    case E_INTERP: slots_exprs(c, visit, e->u.interp.parts, e->u.interp.nparts); return;
    case E_CALL:
        slots_expr(c, visit, e->u.call.callee);
        slots_exprs(c, visit, e->u.call.args, e->u.call.nargs);
        return;
    case E_BINARY:
        slots_expr(c, visit, e->u.bin.l);
        slots_expr(c, visit, e->u.bin.r);
        return;
    case E_UNARY: slots_expr(c, visit, e->u.un.e); return;
    case E_ELVIS:
        slots_expr(c, visit, e->u.elvis.l);
        slots_expr(c, visit, e->u.elvis.r);
        return;
    case E_MATCH:
        slots_expr(c, visit, e->u.match.scrut);
        for (int i = 0; i < e->u.match.narms; i++) {
            slots_pattern(c, visit, e->u.match.arms[i].pat);
            slots_expr(c, visit, e->u.match.arms[i].body);
        }
        return;
    case E_BLOCK:
        for (int i = 0; i < e->u.block.nstmts; i++) slots_stmt(c, visit, e->u.block.stmts[i]);
        return;
    case E_LAMBDA:
        slots_params(c, visit, e->u.lambda.params, e->u.lambda.nparams);
        slots_expr(c, visit, e->u.lambda.body);
        return;
    case E_SPAWN: slots_expr(c, visit, e->u.spawn.e); return;
    case E_AWAIT: slots_expr(c, visit, e->u.await.e); return;
    case E_YIELD: slots_expr(c, visit, e->u.yield.e); return;
    case E_RESULT_CTOR: slots_expr(c, visit, e->u.ctor.e); return;
    case E_LIST: slots_exprs(c, visit, e->u.list.elems, e->u.list.n); return;
    case E_UNSUPPORTED: slots_exprs(c, visit, e->u.unsup.subs, e->u.unsup.nsubs); return;
    case E_ERASE: slots_expr(c, visit, e->u.erase.e); return;
    case E_IF:
        slots_expr(c, visit, e->u.if_.cond);
        slots_expr(c, visit, e->u.if_.then);
        slots_expr(c, visit, e->u.if_.els);
        return;
    case E_FIELD: slots_expr(c, visit, e->u.field.e); return;
    case E_METHOD:
        /* the chosen call holds the receiver and the arguments: walking them here too would
         * make a chain of n method calls cost 2^n */
        if (e->u.method.call) {
            slots_expr(c, visit, e->u.method.call);
            return;
        }
        slots_expr(c, visit, e->u.method.recv);
        slots_exprs(c, visit, e->u.method.args, e->u.method.nargs);
        slots_expr(c, visit, e->u.method.fn);
        return;
    case E_RECORD:
        for (int i = 0; i < e->u.record.n; i++) slots_expr(c, visit, e->u.record.fields[i].value);
        return;
    case E_UPDATE:
        slots_expr(c, visit, e->u.update.e);
        for (int i = 0; i < e->u.update.n; i++) slots_expr(c, visit, e->u.update.fields[i].value);
        return;
    case E_INDEX:
        slots_expr(c, visit, e->u.index.e);
        slots_expr(c, visit, e->u.index.idx);
        return;
    case E_MAPLIT:
        slots_exprs(c, visit, e->u.maplit.keys, e->u.maplit.n);
        slots_exprs(c, visit, e->u.maplit.vals, e->u.maplit.n);
        return;
    case E_PERFORM:
        if (e->u.perform.decl) slots_array(c, visit, e->u.perform.inst, e->u.perform.decl->nparams);
        slots_exprs(c, visit, e->u.perform.args, e->u.perform.nargs);
        return;
    case E_HANDLE:
        if (e->u.handle.decl) slots_array(c, visit, e->u.handle.inst, e->u.handle.decl->nparams);
        for (int i = 0; i < e->u.handle.narms; i++) {
            HandleArm *arm = &e->u.handle.arms[i];
            slots_params(c, visit, arm->binders, arm->nbinders);
            slots_expr(c, visit, arm->body);
        }
        slots_expr(c, visit, e->u.handle.body);
        return;
    case E_RESUME: slots_expr(c, visit, e->u.resume.e); return; /* .handle: an enclosing node */
    case E_SEND:
        slots_expr(c, visit, e->u.send.ch);
        slots_expr(c, visit, e->u.send.v);
        return;
    case E_RECV: slots_expr(c, visit, e->u.recv.ch); return;
    }
}

/* The declarations' types: records' and variants' fields, aliases, effects' operations. */
static void slots_decls(Checker *c, SlotFn visit) {
    for (int i = 0; i < c->prog->tdecls.len; i++) {
        TypeDecl *td = c->prog->tdecls.items[i];
        slots_array(c, visit, td->pvars, td->nparams);
        slots_array(c, visit, td->types, td->nfields);
        slots_type(c, visit, &td->alias_type);
        for (int k = 0; k < td->nvariants; k++)
            slots_array(c, visit, td->variants[k]->types, td->variants[k]->nfields);
    }
    for (int i = 0; i < c->prog->edecls.len; i++) {
        EffectDecl *ed = c->prog->edecls.items[i];
        slots_array(c, visit, ed->pvars, ed->nparams);
        for (int k = 0; k < ed->nops; k++) slots_type(c, visit, &ed->ops[k].type);
    }
}

static void slots_program(Checker *c, SlotFn visit) {
    TypeCtx *tc = c->tc;
    Type **base[] = {&tc->t_int,       &tc->t_float,  &tc->t_bool,   &tc->t_string, &tc->t_unit,
                     &tc->t_matherror, &tc->t_errort, &tc->t_poison, &tc->t_ptr,    &tc->t_any};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) slots_type(c, visit, base[i]);
    slots_decls(c, visit);
    for (int i = 0; i < c->prog->nstmts; i++) slots_stmt(c, visit, c->prog->stmts[i]);
}

static void default_slot(Checker *c, Type **slot) {
    static unsigned walks;
    if (++walks == 0) walks = 1; /* 0: never visited */
    default_type(c, *slot, 0, walks);
}

static void resolve_slot(Checker *c, Type **slot) {
    (void)c;
    *slot = resolve_type(*slot, 0);
}

int check_program(Program *prog, Diags *d) {
    Checker C = {.a = prog->arena, .d = d, .prog = prog, .tc = &prog->types};
    Checker *c = &C;
    ty_decl_name = decl_name;
    size_t nfns = (size_t)prog->fns.len + 1;
    /* the scratch tables live in the checker's own arena, freed when it returns */
    c->scratch = arena_new();
    c->alias_state = arena_alloc(c->scratch, (size_t)prog->tdecls.len + 1);
    prepare_decls(c);
    c->sccs = arena_alloc(c->scratch, sizeof(PtrVec) * nfns);
    c->fn_state = arena_alloc(c->scratch, nfns);
    c->tj_index = arena_alloc(c->scratch, sizeof(int) * nfns);
    c->tj_low = arena_alloc(c->scratch, sizeof(int) * nfns);
    c->tj_onstack = arena_alloc(c->scratch, sizeof(bool) * nfns);
    Tarjan T = {.c = c};
    for (int i = 0; i < prog->fns.len; i++) {
        FnDecl *f = prog->fns.items[i];
        if (!c->tj_index[f->id]) tarjan(&T, f);
    }
    /* top-level statements, in order, at level 1 */
    Type *value = c->tc->t_unit;
    for (int i = 0; i < prog->nstmts; i++) {
        Stmt *s = prog->stmts[i];
        if (s->kind == S_FN) continue;
        check_stmt(c, s, &value);
    }
    for (int i = 0; i < prog->fns.len; i++) ensure_checked(c, prog->fns.items[i]);
    solve_forced(c, 0);
    /* what nothing fixed is int (docs/spec/language.md §16.2), or Error in an error slot */
    slots_program(c, default_slot);
    solve_forced(c, 0);
    /* the finished value: no variable link is left anywhere in the tree (codegen asserts it) */
    slots_program(c, resolve_slot);
    arena_free(c->scratch);
    return c->errors;
}
