/* restrict.c — see restrict.h. */
#include "restrict.h"

#include <stdarg.h>

typedef struct Restrictor {
    Program *prog;
    Diags *d;
    int errors;
} Restrictor;

static void error(Restrictor *c, Pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void error(Restrictor *c, Pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(c->d, pos, fmt, ap);
    va_end(ap);
    c->errors++;
}

typedef enum RCtx { R_VALUE, R_ITER_SRC, R_LET } RCtx;

static void restrict_expr(Restrictor *c, Expr *e, RCtx ctx);

/* A function value known at compile time (called directly, no closure needed). */
static bool is_static_fn(Expr *e) {
    if (e->kind == E_LAMBDA) return e->u.lambda.unit && e->u.lambda.unit->captures.len == 0;
    if (e->kind != E_IDENT || !e->u.ident.sym) return false;
    Sym *s = e->u.ident.sym;
    return s->kind == SYM_FN || s->kind == SYM_BUILTIN ||
           (s->kind == SYM_LOCAL && s->static_kind == STATIC_FN);
}

static bool is_static_iter(Expr *e) {
    if (e->kind == E_CALL) {
        Expr *f = e->u.call.callee;
        if (f->kind == E_IDENT && f->u.ident.sym && f->u.ident.sym->kind == SYM_BUILTIN) {
            Builtin b = f->u.ident.sym->builtin;
            return b == B_RANGE || b == B_MAP || b == B_FILTER;
        }
        return false;
    }
    return e->kind == E_IDENT && e->u.ident.sym && e->u.ident.sym->kind == SYM_LOCAL &&
           e->u.ident.sym->static_kind == STATIC_ITER;
}

static void restrict_stmt(Restrictor *c, Stmt *s) {
    switch (s->kind) {
    case S_LET: {
        Expr *init = s->u.let.init;
        restrict_expr(c, init, R_LET);
        Type *t = ty_find(init->type ? init->type : c->prog->types.t_poison);
        if (!s->u.let.is_mut && t->kind == TY_FN && is_static_fn(init))
            s->u.let.sym->static_kind = STATIC_FN;
        if (t->kind == TY_ITER) s->u.let.sym->static_kind = STATIC_ITER;
        if (s->u.let.is_mut && t->kind == TY_ITER)
            error(c, s->u.let.name_pos, "a `mut` binding cannot hold an Iterator");
        return;
    }
    case S_ASSIGN: restrict_expr(c, s->u.assign.value, R_VALUE); return;
    case S_EXPR: restrict_expr(c, s->u.expr, R_VALUE); return;
    case S_FN:
        if (s->u.fn->body) restrict_expr(c, s->u.fn->body, R_VALUE);
        return;
    case S_UNSUPPORTED:
    case S_TYPE:
    case S_EFFECT: return;
    }
}

static void restrict_captures(Restrictor *c, Unit *u, Pos pos, const char *what) {
    for (int i = 0; u && i < u->captures.len; i++) {
        Sym *s = u->captures.items[i];
        if (s->static_kind == STATIC_ITER)
            error(c, pos,
                  "%s cannot capture the Iterator `%s`; consume the pipeline where it is built",
                  what, s->name);
    }
}

/* docs/spec/language.md §3.5: an extern's function-typed parameter takes a C function
 * pointer, so its argument must be a top-level function's name or a lambda that captures
 * nothing ("a capturing lambda is a compile error"). */
static void restrict_extern_fn_args(Restrictor *c, Expr *e, FnDecl *f) {
    Type *ft = f->type ? ty_find(f->type) : NULL;
    if (!ft || ft->kind != TY_FN) return;
    for (int i = 0; i < e->u.call.nargs && i < ft->nargs; i++) {
        if (ty_find(ft->args[i])->kind != TY_FN) continue;
        Expr *a = e->u.call.args[i];
        if (a->kind == E_IDENT && a->u.ident.sym && a->u.ident.sym->kind == SYM_FN) continue;
        if (a->kind == E_LAMBDA && a->u.lambda.unit) {
            PtrVec *caps = &a->u.lambda.unit->captures;
            if (caps->len == 0) continue;
            error(c, a->pos,
                  "argument %d of extern `%s` becomes a C function pointer, so the lambda may "
                  "not capture anything; it captures `%s`",
                  i + 1, f->name, ((Sym *)caps->items[0])->name);
            continue;
        }
        error(c, a->pos,
              "argument %d of extern `%s` becomes a C function pointer: pass a top-level "
              "function's name or a lambda that captures nothing",
              i + 1, f->name);
    }
}

/* An extern with a function-typed parameter, whose argument there must be checked where it
 * is called (restrict_extern_fn_args). */
static bool extern_takes_fn(FnDecl *f) {
    Type *ft = f->is_extern && f->type ? ty_find(f->type) : NULL;
    if (!ft || ft->kind != TY_FN) return false;
    for (int i = 0; i < ft->nargs; i++)
        if (ty_find(ft->args[i])->kind == TY_FN) return true;
    return false;
}

static void restrict_list(Restrictor *c, Expr **es, int n) {
    for (int i = 0; i < n; i++) restrict_expr(c, es[i], R_VALUE);
}

static void restrict_expr(Restrictor *c, Expr *e, RCtx ctx) {
    if (!e) return;
    Type *t = e->type ? ty_find(e->type) : c->prog->types.t_poison;
    if (t->kind == TY_ITER && e->kind != E_METHOD) {
        bool st = is_static_iter(e);
        if (!st || (ctx != R_ITER_SRC && ctx != R_LET))
            error(c, e->pos,
                  "an Iterator cannot be passed, returned or stored; consume the pipeline with "
                  "`forEach` or `fold` where it is built");
    }
    switch (e->kind) {
    case E_INT:
    case E_FLOAT:
    case E_BOOL:
    case E_STRING: return;
    case E_IDENT: {
        Sym *s = e->u.ident.sym;
        if (s && s->kind == SYM_FN && extern_takes_fn(s->fn))
            error(c, e->pos,
                  "extern `%s` takes a C function pointer, so it can only be called directly "
                  "(its function argument must be checked there), not used as a value",
                  s->name);
        if (s && s->kind == SYM_LOCAL && s->is_global && s->static_kind == STATIC_ITER &&
            ctx != R_LET)
            error(
                c, e->pos,
                "a file-scope Iterator cannot be used inside a function; build the pipeline there");
        return;
    }
    case E_INTERP: restrict_list(c, e->u.interp.parts, e->u.interp.nparts); return;
    case E_CALL: {
        Expr *f = e->u.call.callee;
        if (!(f->kind == E_IDENT && f->u.ident.sym && f->u.ident.sym->kind == SYM_FN))
            restrict_expr(c, f, R_VALUE); /* a named function called directly is no value */
        Builtin b = (f->kind == E_IDENT && f->u.ident.sym && f->u.ident.sym->kind == SYM_BUILTIN)
                        ? f->u.ident.sym->builtin
                        : B_NONE;
        if (f->kind == E_IDENT && f->u.ident.sym && f->u.ident.sym->kind == SYM_FN &&
            f->u.ident.sym->fn->is_extern)
            restrict_extern_fn_args(c, e, f->u.ident.sym->fn);
        for (int i = 0; i < e->u.call.nargs; i++) {
            RCtx ac = R_VALUE;
            if ((b == B_MAP || b == B_FILTER || b == B_FOREACH || b == B_FOLD || b == B_TO_GPU) &&
                i == 0)
                ac = R_ITER_SRC;
            Expr *a = e->u.call.args[i];
            if (a->kind == E_LIST && (b == B_EXPECT_ALL || b == B_CHECK_ALL)) {
                restrict_list(c, a->u.list.elems, a->u.list.n);
                continue;
            }
            restrict_expr(c, a, ac);
        }
        return;
    }
    case E_BINARY:
        restrict_expr(c, e->u.bin.l, R_VALUE);
        restrict_expr(c, e->u.bin.r, R_VALUE);
        return;
    case E_UNARY: restrict_expr(c, e->u.un.e, R_VALUE); return;
    case E_ELVIS:
        restrict_expr(c, e->u.elvis.l, R_VALUE);
        restrict_expr(c, e->u.elvis.r, R_VALUE);
        return;
    case E_MATCH:
        restrict_expr(c, e->u.match.scrut, R_VALUE);
        for (int i = 0; i < e->u.match.narms; i++) {
            restrict_expr(c, e->u.match.arms[i].body, R_VALUE);
        }
        return;
    case E_BLOCK:
        for (int i = 0; i < e->u.block.nstmts; i++) restrict_stmt(c, e->u.block.stmts[i]);
        return;
    case E_LAMBDA:
        restrict_captures(c, e->u.lambda.unit, e->pos, "a lambda");
        restrict_expr(c, e->u.lambda.body, R_VALUE);
        return;
    case E_SPAWN:
        restrict_captures(c, e->u.spawn.unit, e->pos, "`spawn`");
        restrict_expr(c, e->u.spawn.e, R_VALUE);
        return;
    case E_AWAIT: restrict_expr(c, e->u.await.e, R_VALUE); return;
    case E_YIELD: restrict_expr(c, e->u.yield.e, R_VALUE); return;
    case E_RESULT_CTOR: restrict_expr(c, e->u.ctor.e, R_VALUE); return;
    case E_LIST: restrict_list(c, e->u.list.elems, e->u.list.n); return;
    case E_UNSUPPORTED: restrict_list(c, e->u.unsup.subs, e->u.unsup.nsubs); return;
    case E_ERASE: restrict_expr(c, e->u.erase.e, R_VALUE); return;
    case E_IF:
        restrict_expr(c, e->u.if_.cond, R_VALUE);
        restrict_expr(c, e->u.if_.then, R_VALUE);
        restrict_expr(c, e->u.if_.els, R_VALUE);
        return;
    case E_FIELD: restrict_expr(c, e->u.field.e, R_VALUE); return;
    case E_METHOD:
        if (e->u.method.call) restrict_expr(c, e->u.method.call, ctx);
        return;
    case E_RECORD:
        for (int i = 0; i < e->u.record.n; i++)
            restrict_expr(c, e->u.record.fields[i].value, R_VALUE);
        return;
    case E_UPDATE:
        restrict_expr(c, e->u.update.e, R_VALUE);
        for (int i = 0; i < e->u.update.n; i++)
            restrict_expr(c, e->u.update.fields[i].value, R_VALUE);
        return;
    case E_INDEX:
        restrict_expr(c, e->u.index.e, R_VALUE);
        restrict_expr(c, e->u.index.idx, R_VALUE);
        return;
    case E_MAPLIT:
        restrict_list(c, e->u.maplit.keys, e->u.maplit.n);
        restrict_list(c, e->u.maplit.vals, e->u.maplit.n);
        return;
    case E_PERFORM: restrict_list(c, e->u.perform.args, e->u.perform.nargs); return;
    case E_HANDLE:
        restrict_captures(c, e->u.handle.group, e->pos, "a `handle`");
        for (int i = 0; i < e->u.handle.narms; i++) {
            HandleArm *arm = &e->u.handle.arms[i];
            restrict_expr(c, arm->body, R_VALUE);
        }
        restrict_expr(c, e->u.handle.body, R_VALUE);
        return;
    case E_RESUME: restrict_expr(c, e->u.resume.e, R_VALUE); return;
    case E_SEND:
        restrict_expr(c, e->u.send.ch, R_VALUE);
        restrict_expr(c, e->u.send.v, R_VALUE);
        return;
    case E_RECV: restrict_expr(c, e->u.recv.ch, R_VALUE); return;
    }
}

int restrict_program(Program *prog, Diags *d) {
    Restrictor R = {.prog = prog, .d = d};
    for (int i = 0; i < prog->nstmts; i++) restrict_stmt(&R, prog->stmts[i]);
    return R.errors;
}
