/*
 * codegen_own.c — where a value's old version cannot be observed (see codegen_internal.h).
 *
 * Osprey's maps and lists are values: an update makes a new version and every old one stays
 * as it was. Where codegen can prove that nothing can ever read a version again after it is
 * updated, the runtime may update it in place instead (docs/compiler.md, "Updates in place").
 * This file holds that proof, a syntactic one on the typed tree:
 *
 *   A fold's step `fn(acc, x) => body` uses `acc` linearly when every use of `acc` in `body`
 *   is either a read through a borrowing built-in (`m[k]`, mapGet, mapContains, mapLength,
 *   length, isEmpty, mapKeys, mapValues), made before the update, or the one update (mapSet,
 *   mapRemove) whose result is the step's value — never stored, captured, passed to another
 *   function or returned beside another use.
 *
 * Reads count only when they run before the update: in the statements before the block's
 * value, in the condition of an `if` or the scrutinee of a `match` around it, or in the other
 * arguments of the update itself (arguments are evaluated before the call). Anything inside a
 * lambda, `spawn`, `handle` or nested function counts as a capture. Expressions this file
 * does not know are taken as uses it cannot prove anything about.
 *
 *   A list that a list built-in just made (listReverse, listPrepend, listConcat, listAppend:
 *   each returns a view object nobody else holds) is released (osp_list_release) when it is
 *   an argument the built-in only reads, and a `let` bound to one is released after its one
 *   use, or at the end of its block, when every use of it is such an argument (or `xs[i]`).
 *   The runtime then frees the backing array only if that view is still its only view.
 */
#include "codegen_internal.h"

/* The built-ins that read their first argument (a map) and return nothing that shares it. */
static bool map_borrow(Builtin b, int argi) {
    if (argi != 0) return false;
    switch (b) {
    case B_MAP_GET:
    case B_MAP_CONTAINS:
    case B_MAP_LENGTH:
    case B_MAP_KEYS:
    case B_MAP_VALUES:
    case B_LENGTH:
    case B_IS_EMPTY: return true;
    default: return false;
    }
}

static bool map_update(Builtin b) {
    return b == B_MAP_SET || b == B_MAP_REMOVE;
}

/* The built-in `e` calls directly, or B_NONE. */
static Builtin called_builtin(const Expr *e) {
    if (e->kind != E_CALL) return B_NONE;
    const Expr *c = e->u.call.callee;
    if (c->kind != E_IDENT || c->u.ident.sym == NULL || c->u.ident.sym->kind != SYM_BUILTIN)
        return B_NONE;
    return c->u.ident.sym->builtin;
}

static bool is_sym(const Expr *e, const Sym *s) {
    return e->kind == E_IDENT && e->u.ident.sym == s;
}

/* A count that no proof accepts: an expression this file does not walk. */
enum { UNKNOWN_USES = 1 << 20 };

/* What is being followed: the variable, and which built-in arguments only read it. */
typedef struct Own {
    const Sym *sym;
    bool (*reads)(Builtin b, int argi);
    /* a string: an operand of a comparison or of `+`, and a part of an interpolation of
     * two or more parts, are reads too (each copies or only compares its bytes) */
    bool str_ops;
} Own;

static int uses(const Expr *e, const Own *s, bool captured);

static int uses_all(Expr *const *es, int n, const Own *s, bool captured) {
    int k = 0;
    for (int i = 0; i < n; i++) k += es[i] ? uses(es[i], s, captured) : 0;
    return k;
}

static int uses_stmt(const Stmt *st, const Own *s, bool captured) {
    switch (st->kind) {
    case S_LET: return uses(st->u.let.init, s, captured);
    case S_EXPR: return uses(st->u.expr, s, captured);
    case S_ASSIGN: return uses(st->u.assign.value, s, captured);
    case S_FN: return st->u.fn->body ? uses(st->u.fn->body, s, true) : 0;
    default: return 0; /* type and effect declarations hold no expressions */
    }
}

/*
 * The uses of `s` in `e` that are not borrowing reads (every use when `captured`: inside a
 * closure a read may run at any later time). UNKNOWN_USES or more for an expression kind that
 * is not walked here.
 */
static int uses(const Expr *e, const Own *s, bool captured) {
    switch (e->kind) {
    case E_INT:
    case E_FLOAT:
    case E_BOOL:
    case E_STRING: return 0;
    case E_IDENT: return e->u.ident.sym == s->sym ? 1 : 0;
    case E_INTERP: {
        int k = 0;
        for (int i = 0; i < e->u.interp.nparts; i++) {
            const Expr *part = e->u.interp.parts[i];
            if (!captured && s->str_ops && e->u.interp.nparts >= 2 && is_sym(part, s->sym))
                continue; /* copied into the new string */
            k += uses(part, s, captured);
        }
        return k;
    }
    case E_CALL: {
        int k = uses(e->u.call.callee, s, captured);
        Builtin b = called_builtin(e);
        for (int i = 0; i < e->u.call.nargs; i++) {
            const Expr *a = e->u.call.args[i];
            if (!captured && b != B_NONE && s->reads(b, i) && is_sym(a, s->sym))
                continue; /* a read */
            k += uses(a, s, captured);
        }
        return k;
    }
    case E_BINARY: {
        BinOp op = e->u.bin.op;
        bool reads = !captured && s->str_ops && op != OP_SUB && op != OP_MUL && op != OP_DIV &&
                     op != OP_MOD && op != OP_AND && op != OP_OR;
        return (reads && is_sym(e->u.bin.l, s->sym) ? 0 : uses(e->u.bin.l, s, captured)) +
               (reads && is_sym(e->u.bin.r, s->sym) ? 0 : uses(e->u.bin.r, s, captured));
    }
    case E_UNARY: return uses(e->u.un.e, s, captured);
    case E_ELVIS: return uses(e->u.elvis.l, s, captured) + uses(e->u.elvis.r, s, captured);
    case E_MATCH: {
        int k = uses(e->u.match.scrut, s, captured);
        for (int i = 0; i < e->u.match.narms; i++) k += uses(e->u.match.arms[i].body, s, captured);
        return k;
    }
    case E_BLOCK: {
        int k = 0;
        for (int i = 0; i < e->u.block.nstmts; i++)
            k += uses_stmt(e->u.block.stmts[i], s, captured);
        return k;
    }
    case E_LAMBDA: return uses(e->u.lambda.body, s, true);
    case E_SPAWN: return uses(e->u.spawn.e, s, true);
    case E_AWAIT: return uses(e->u.await.e, s, captured);
    case E_YIELD: return e->u.yield.e ? uses(e->u.yield.e, s, captured) : 0;
    case E_RESULT_CTOR: return e->u.ctor.e ? uses(e->u.ctor.e, s, captured) : 0;
    case E_LIST: return uses_all(e->u.list.elems, e->u.list.n, s, captured);
    case E_IF:
        return uses(e->u.if_.cond, s, captured) + uses(e->u.if_.then, s, captured) +
               (e->u.if_.els ? uses(e->u.if_.els, s, captured) : 0);
    case E_FIELD: return uses(e->u.field.e, s, captured);
    case E_METHOD: return e->u.method.call ? uses(e->u.method.call, s, captured) : UNKNOWN_USES;
    case E_RECORD: {
        int k = 0;
        for (int i = 0; i < e->u.record.n; i++) k += uses(e->u.record.fields[i].value, s, captured);
        return k;
    }
    case E_UPDATE: {
        int k = uses(e->u.update.e, s, captured);
        for (int i = 0; i < e->u.update.n; i++) k += uses(e->u.update.fields[i].value, s, captured);
        return k;
    }
    case E_INDEX:
        /* m[k] reads m */
        return (!captured && is_sym(e->u.index.e, s->sym) ? 0 : uses(e->u.index.e, s, captured)) +
               uses(e->u.index.idx, s, captured);
    case E_MAPLIT:
        return uses_all(e->u.maplit.keys, e->u.maplit.n, s, captured) +
               uses_all(e->u.maplit.vals, e->u.maplit.n, s, captured);
    case E_PERFORM: return uses_all(e->u.perform.args, e->u.perform.nargs, s, captured);
    case E_SEND: return uses(e->u.send.ch, s, captured) + uses(e->u.send.v, s, captured);
    case E_RECV: return uses(e->u.recv.ch, s, captured);
    default: return UNKNOWN_USES; /* handle, resume, unsupported forms */
    }
}

/* Whether the value of `r` is `p` updated in place at most once, with every other use of `p`
 * a read made before that update (see the top of the file). */
static bool linear_result(const Expr *r, const Own *p) {
    if (uses(r, p, false) == 0) return true; /* reads only: the step's value is another map */
    switch (r->kind) {
    case E_IDENT: return r->u.ident.sym == p->sym;
    case E_CALL: {
        if (!map_update(called_builtin(r)) || r->u.call.nargs < 1) return false;
        const Expr *target = r->u.call.args[0];
        Expr *const *rest = r->u.call.args + 1;
        int nrest = r->u.call.nargs - 1;
        if (uses(r->u.call.callee, p, true) != 0) return false;
        if (is_sym(target, p->sym)) return uses_all(rest, nrest, p, false) == 0;
        /* an update of an update: its other arguments run after the inner one, so they may
         * not read `p` at all */
        return linear_result(target, p) && uses_all(rest, nrest, p, true) == 0;
    }
    case E_BLOCK: {
        int n = r->u.block.nstmts;
        if (n == 0 || r->u.block.stmts[n - 1]->kind != S_EXPR) return false;
        for (int i = 0; i < n - 1; i++)
            if (uses_stmt(r->u.block.stmts[i], p, false) != 0) return false;
        return linear_result(r->u.block.stmts[n - 1]->u.expr, p);
    }
    case E_IF:
        return r->u.if_.els && uses(r->u.if_.cond, p, false) == 0 &&
               linear_result(r->u.if_.then, p) && linear_result(r->u.if_.els, p);
    case E_MATCH:
        if (uses(r->u.match.scrut, p, false) != 0) return false;
        for (int i = 0; i < r->u.match.narms; i++)
            if (!linear_result(r->u.match.arms[i].body, p)) return false;
        return true;
    case E_METHOD: return r->u.method.call && linear_result(r->u.method.call, p);
    default: return false;
    }
}

bool fold_step_linear(const Callee *cb) {
    const Param *params;
    int nparams;
    const Expr *body;
    if (cb->kind == CAL_FN) {
        params = cb->fn->params;
        nparams = cb->fn->nparams;
        body = cb->fn->body;
    } else if (cb->kind == CAL_LAMBDA) {
        params = cb->lambda->u.lambda.params;
        nparams = cb->lambda->u.lambda.nparams;
        body = cb->lambda->u.lambda.body;
    } else {
        return false; /* a closure value or a built-in: its body is not known here */
    }
    if (nparams < 1 || body == NULL) return false;
    if (params[0].sym == NULL) return true; /* `_`: the step never sees the accumulator */
    Own acc = {params[0].sym, map_borrow, false};
    return linear_result(body, &acc);
}

/* ---- lists -------------------------------------------------------------------------------- */

bool owned_list_temp(const Expr *e) {
    switch (called_builtin(e)) {
    case B_LIST_REVERSE:
    case B_LIST_PREPEND:
    case B_LIST_CONCAT:
    case B_LIST_APPEND: return true;
    default: return false;
    }
}

bool list_taking_arg(Builtin b, int argi) {
    switch (b) {
    case B_LIST_CONCAT: return argi == 0 || argi == 1;
    case B_LIST_LENGTH:
    case B_LIST_GET:
    case B_LIST_CONTAINS:
    case B_LENGTH:
    case B_IS_EMPTY:
    case B_LIST_APPEND:
    case B_LIST_PREPEND:
    case B_LIST_REVERSE: return argi == 0;
    default: return false;
    }
}

/* Whether a call in tail position of `e` may be a call of Osprey code (a tail call that a
 * release after `e` would turn into an ordinary call, deepening a tail-recursive loop). */
static bool tail_may_call(const Expr *e) {
    switch (e->kind) {
    case E_CALL: return called_builtin(e) == B_NONE;
    case E_IF: return tail_may_call(e->u.if_.then) || (e->u.if_.els && tail_may_call(e->u.if_.els));
    case E_MATCH:
        for (int i = 0; i < e->u.match.narms; i++)
            if (tail_may_call(e->u.match.arms[i].body)) return true;
        return false;
    case E_BLOCK: {
        int n = e->u.block.nstmts;
        return n > 0 && e->u.block.stmts[n - 1]->kind == S_EXPR &&
               tail_may_call(e->u.block.stmts[n - 1]->u.expr);
    }
    case E_ELVIS: return tail_may_call(e->u.elvis.l) || tail_may_call(e->u.elvis.r);
    case E_METHOD:
    case E_PERFORM:
    case E_HANDLE:
    case E_RESUME: return true;
    default: return false;
    }
}

OwnPlan own_let_plan(const Expr *block, int i) {
    Stmt *const *st = block->u.block.stmts;
    int n = block->u.block.nstmts;
    if (st[i]->kind != S_LET) return OWN_NONE;
    const Sym *x = st[i]->u.let.sym;
    if (x == NULL || x->file_scope || x->is_mut || x->static_kind != STATIC_NONE ||
        !owned_list_temp(st[i]->u.let.init))
        return OWN_NONE;
    Own own = {x, list_taking_arg, false};
    int all = 0, other = 0;
    for (int k = i + 1; k < n; k++) {
        all += uses_stmt(st[k], &own, true);
        other += uses_stmt(st[k], &own, false);
    }
    if (all == 0 || other != 0) return OWN_NONE;
    if (all == 1) return OWN_AT_USE;
    if (st[n - 1]->kind != S_EXPR || tail_may_call(st[n - 1]->u.expr)) return OWN_NONE;
    return OWN_AT_END;
}

/* ---- strings ------------------------------------------------------------------------------ */

/* The built-ins that only read a string argument and return nothing that shares it. */
static bool str_read(Builtin b, int argi) {
    (void)argi;
    switch (b) {
    case B_PRINT:
    case B_LENGTH:
    case B_BYTE_LENGTH:
    case B_IS_EMPTY:
    case B_CONTAINS:
    case B_STARTS_WITH:
    case B_ENDS_WITH:
    case B_INDEX_OF: return true;
    default: return false;
    }
}

/* The uses of `s` (parameter `i` of `f`) in `e`, the value of `f`, that are not reads;
 * `s` itself as that value is none (the function returns it and the activation that appends
 * to it ends), nor is `s` passed on unchanged as argument `i` of a call of `f` there (the
 * loop keeps it, or the activation ends). */
static int uses_but_result(const Expr *e, const Own *s, const FnDecl *f, int i) {
    switch (e->kind) {
    case E_IDENT: return 0;
    case E_IF:
        return uses(e->u.if_.cond, s, false) + uses_but_result(e->u.if_.then, s, f, i) +
               (e->u.if_.els ? uses_but_result(e->u.if_.els, s, f, i) : 0);
    case E_MATCH: {
        int k = uses(e->u.match.scrut, s, false);
        for (int a = 0; a < e->u.match.narms; a++)
            k += uses_but_result(e->u.match.arms[a].body, s, f, i);
        return k;
    }
    case E_BLOCK: {
        int n = e->u.block.nstmts, k = 0;
        for (int a = 0; a < n; a++) {
            const Stmt *st = e->u.block.stmts[a];
            k += a == n - 1 && st->kind == S_EXPR ? uses_but_result(st->u.expr, s, f, i)
                                                  : uses_stmt(st, s, false);
        }
        return k;
    }
    case E_METHOD:
        return e->u.method.call ? uses_but_result(e->u.method.call, s, f, i) : UNKNOWN_USES;
    case E_CALL: {
        const Expr *c = e->u.call.callee;
        if (c->kind != E_IDENT || c->u.ident.sym == NULL || c->u.ident.sym->kind != SYM_FN ||
            c->u.ident.sym->fn != f)
            return uses(e, s, false);
        int k = 0;
        for (int a = 0; a < e->u.call.nargs; a++)
            if (a != i || !is_sym(e->u.call.args[a], s->sym))
                k += uses(e->u.call.args[a], s, false);
        return k;
    }
    default: return uses(e, s, false);
    }
}

bool str_param_appendable(const FnDecl *f, int i) {
    const Sym *p = f->params[i].sym;
    if (p == NULL || f->body == NULL) return false;
    Own own = {p, str_read, true};
    return uses_but_result(f->body, &own, f, i) == 0;
}

int interp_first_part(const Expr *e) {
    int k = 0;
    while (k + 1 < e->u.interp.nparts && e->u.interp.parts[k]->kind == E_STRING &&
           e->u.interp.parts[k]->u.str.len == 0)
        k++;
    return k;
}

/* `p + e`, `p + e1 + e2 + …` or `"${p}…"` (two or more parts) with no other mention of `p`. */
static bool append_chain(const Expr *a, const Own *own) {
    if (a->kind == E_INTERP) {
        int first = interp_first_part(a);
        if (a->u.interp.nparts < 2 || !is_sym(a->u.interp.parts[first], own->sym)) return false;
        for (int k = first + 1; k < a->u.interp.nparts; k++)
            if (uses(a->u.interp.parts[k], own, true) != 0) return false;
        return true;
    }
    if (a->kind != E_BINARY || a->u.bin.op != OP_ADD) return false;
    if (!is_sym(a->u.bin.l, own->sym) && !append_chain(a->u.bin.l, own)) return false;
    return uses(a->u.bin.r, own, true) == 0;
}

bool str_append_arg(const Expr *call, int i, const Sym *p) {
    const Expr *a = call->u.call.args[i];
    Own own = {p, str_read, true};
    if (!append_chain(a, &own) || uses(call->u.call.callee, &own, true) != 0) return false;
    for (int j = 0; j < call->u.call.nargs; j++)
        if (j != i && uses(call->u.call.args[j], &own, true) != 0) return false;
    return true;
}
