/* effects.c — see effects.h. */
#include "effects.h"

#include <stdlib.h>
#include <string.h>

/* One operation of one instantiation of an effect. */
typedef struct EffKey {
    EffectDecl *decl;
    int opi;
    Type **args;
} EffKey;

typedef struct EWalk {
    Arena *a;
    Diags *d;
    Program *prog;
    int errors;
    bool report; /* the final pass: report instead of collecting */
    bool changed;
    EffSet *sink;   /* where escaping keys go; NULL: program entry (must be handled) */
    FnDecl *fn;     /* the function whose body is walked (row checks), else NULL */
    PtrVec handles; /* Expr* E_HANDLE whose body encloses the current point */
    PtrVec order;   /* functions, callees before callers (ascending SCC id) */
} EWalk;

static bool same_type(Type *a, Type *b, int depth) {
    a = ty_find(a);
    b = ty_find(b);
    if (a == b) return true;
    if (depth > 100 || a->kind != b->kind || a->nargs != b->nargs || a->decl != b->decl ||
        a->kind == TY_VAR)
        return false;
    for (int i = 0; i < a->nargs; i++)
        if (!same_type(a->args[i], b->args[i], depth + 1)) return false;
    if (a->ret || b->ret) return a->ret && b->ret && same_type(a->ret, b->ret, depth + 1);
    return true;
}

/* Instantiations match when equal, a type variable matching anything. */
static bool match_type(Type *a, Type *b, int depth) {
    a = ty_find(a);
    b = ty_find(b);
    if (a == b || depth > 100) return true;
    if (a->kind == TY_VAR || b->kind == TY_VAR || a->kind == TY_POISON || b->kind == TY_POISON)
        return true;
    if (a->kind != b->kind || a->nargs != b->nargs || a->decl != b->decl) return false;
    for (int i = 0; i < a->nargs; i++)
        if (!match_type(a->args[i], b->args[i], depth + 1)) return false;
    if (a->ret && b->ret) return match_type(a->ret, b->ret, depth + 1);
    return true;
}

static bool args_match(EffectDecl *d, Type **a, Type **b, bool exact) {
    for (int i = 0; i < d->nparams; i++) {
        if (!a || !b) return true;
        if (exact ? !same_type(a[i], b[i], 0) : !match_type(a[i], b[i], 0)) return false;
    }
    return true;
}

static const char *key_name(EWalk *w, EffKey *k) {
    EffectDecl *d = k->decl;
    if (d->nparams == 0 || !k->args)
        return arena_printf(w->a, "%s.%s", d->name, d->ops[k->opi].name);
    const char *s = arena_printf(w->a, "%s<", d->name);
    for (int i = 0; i < d->nparams; i++)
        s = arena_printf(w->a, "%s%s%s", s, i ? ", " : "", ty_show(w->a, k->args[i]));
    return arena_printf(w->a, "%s>.%s", s, d->ops[k->opi].name);
}

static const char *effect_display(EWalk *w, EffKey *k) {
    const char *full = key_name(w, k);
    const char *dot = strrchr(full, '.');
    return arena_strndup(w->a, full, (size_t)(dot - full));
}

static EffSet *set_of(Type *t) {
    t = ty_find(t);
    return t->kind == TY_FN ? eff_find(t->eff) : NULL;
}

/* Add `k` to set `s`; true if it was new. */
static bool set_add(EWalk *w, EffSet *s, EffKey *k) {
    s = eff_find(s);
    if (!s) return false;
    for (int i = 0; i < s->items.len; i++) {
        EffKey *o = s->items.items[i];
        if (o->decl == k->decl && o->opi == k->opi && args_match(k->decl, o->args, k->args, true))
            return false;
    }
    vec_push(w->a, &s->items, k);
    return true;
}

static bool handled_here(EWalk *w, EffKey *k) {
    for (int i = w->handles.len - 1; i >= 0; i--) {
        Expr *h = w->handles.items[i];
        if (h->u.handle.decl != k->decl) continue;
        bool has = false;
        for (int a = 0; a < h->u.handle.narms; a++)
            if (h->u.handle.arms[a].opi == k->opi) has = true;
        if (has && args_match(k->decl, h->u.handle.inst, k->args, false)) return true;
    }
    return false;
}

static bool row_covers(FnDecl *f, EffKey *k) {
    for (int i = 0; i < f->nrow; i++) {
        EffectRef *r = &f->row[i];
        if (r->decl == k->decl && (!r->types || args_match(k->decl, r->types, k->args, false)))
            return true;
    }
    return false;
}

/* Effect `k` reaches this point (performed here, or by a call made here). */
static void escape(EWalk *w, EffKey *k, Pos pos, const char *via) {
    if (handled_here(w, k)) return;
    if (w->sink) {
        if (set_add(w, w->sink, k)) w->changed = true;
    }
    if (!w->report) return;
    if (w->fn && w->fn->has_row && !row_covers(w->fn, k)) {
        if (via)
            diag_error(w->d, pos,
                       "`%s` performs `%s` (through `%s`), but its effect row does not list `%s`",
                       w->fn->name, key_name(w, k), via, effect_display(w, k));
        else
            diag_error(w->d, pos, "`%s` performs `%s`, but its effect row does not list `%s`",
                       w->fn->name, key_name(w, k), effect_display(w, k));
        w->errors++;
    }
    if (!w->sink) {
        /* a static effect is handled only by `handle static E` (§12.5) */
        const char *kw = k->decl->is_static ? "handle static" : "handle";
        const char *why =
            k->decl->nparams > 0
                ? arena_printf(w->a, "no enclosing `%s %s` handles `%s` at this instantiation", kw,
                               k->decl->name, k->decl->ops[k->opi].name)
                : arena_printf(w->a, "no enclosing `%s %s` handles `%s`", kw, k->decl->name,
                               k->decl->ops[k->opi].name);
        if (via)
            diag_error(w->d, pos, "unhandled effect `%s` (performed by `%s`): %s", key_name(w, k),
                       via, why);
        else
            diag_error(w->d, pos, "unhandled effect `%s`: %s", key_name(w, k), why);
        w->errors++;
    }
}

static void escape_set(EWalk *w, EffSet *s, Pos pos, const char *via) {
    s = eff_find(s);
    if (!s) return;
    for (int i = 0; i < s->items.len; i++) escape(w, s->items.items[i], pos, via);
}

static void walk_expr(EWalk *w, Expr *e);

/* Add to `vs` (a function value's set) everything a call of `f` with unknown arguments does. */
static void fn_into_value(EWalk *w, FnDecl *f, EffSet *vs) {
    if (!vs) return;
    EffSet *esc = eff_find(f->esc);
    for (int i = 0; esc && i < esc->items.len; i++)
        if (set_add(w, vs, esc->items.items[i])) w->changed = true;
    for (int i = 0; f->calls_param && i < f->nparams; i++) {
        if (!f->calls_param[i] || !f->params[i].sym) continue;
        EffSet *ps = set_of(f->params[i].sym->type);
        if (!ps || eff_find(ps) == eff_find(vs)) continue;
        for (int k = 0; k < ps->items.len; k++)
            if (set_add(w, vs, ps->items.items[k])) w->changed = true;
    }
}

static void walk_list(EWalk *w, Expr **es, int n) {
    for (int i = 0; i < n; i++) walk_expr(w, es[i]);
}

static void walk_stmt(EWalk *w, Stmt *s) {
    switch (s->kind) {
    case S_LET: walk_expr(w, s->u.let.init); return;
    case S_EXPR: walk_expr(w, s->u.expr); return;
    case S_ASSIGN: walk_expr(w, s->u.assign.value); return;
    default: return;
    }
}

static const char *callee_name(Expr *f) {
    if (f->kind == E_IDENT) return f->u.ident.name;
    if (f->kind == E_FIELD) return f->u.field.name;
    return "a function value";
}

/* The index of `s` among the parameters of the function being walked (not inside a lambda or
 * a `handle`), or -1. */
static int param_index(EWalk *w, Sym *s) {
    /* inside a `handle` of the body the call is checked here, against those handlers */
    if (!w->fn || !s || s->kind != SYM_LOCAL || w->handles.len > 0) return -1;
    for (int i = 0; i < w->fn->nparams; i++)
        if (w->fn->params[i].sym == s) return i;
    return -1;
}

/* docs/spec/language.md §12.2: a function's calls of its own parameters are not its effects;
 * each call of the function performs what the value passed there performs. */
static void mark_param_call(EWalk *w, int i) {
    if (!w->fn->calls_param[i]) {
        w->fn->calls_param[i] = true;
        w->changed = true;
    }
}

/* Everything a call of named function `f` with unknown arguments may perform: its own effects
 * and, for each parameter it calls, whatever any value of that parameter's type may. */
static void escape_fn_value(EWalk *w, FnDecl *f, Pos pos) {
    escape_set(w, f->esc, pos, f->name);
    for (int i = 0; f->calls_param && i < f->nparams; i++)
        if (f->calls_param[i] && f->params[i].sym)
            escape_set(w, set_of(f->params[i].sym->type), pos, f->name);
}

/* The effects of calling the function value `a` at this point. */
static void escape_value(EWalk *w, Expr *a, Pos pos, const char *via) {
    if (a->kind == E_IDENT && a->u.ident.sym) {
        Sym *s = a->u.ident.sym;
        if (s->kind == SYM_FN) {
            escape_fn_value(w, s->fn, pos);
            return;
        }
        int pi = param_index(w, s);
        if (pi >= 0) {
            mark_param_call(w, pi);
            return;
        }
    }
    if (a->kind == E_LAMBDA && a->u.lambda.own_eff) {
        escape_set(w, a->u.lambda.own_eff, pos, via);
        return;
    }
    if (a->type) escape_set(w, set_of(a->type), pos, via);
}

/* The operations calling function value `a` may perform, collected in a new set (the walk's
 * handlers and sink are not consulted). */
static EffSet *value_effects(EWalk *w, Expr *a) {
    EWalk tmp = *w;
    tmp.report = false;
    tmp.fn = NULL;
    tmp.handles = (PtrVec){0};
    tmp.sink = arena_alloc(w->a, sizeof(EffSet));
    escape_value(&tmp, a, a->pos, NULL);
    return tmp.sink;
}

/* "A.op, B.op": the operations of `s` that are not of a static effect, or NULL if none. */
static const char *dynamic_ops(EWalk *w, EffSet *s) {
    s = eff_find(s);
    const char *list = NULL;
    for (int i = 0; s && i < s->items.len; i++) {
        EffKey *k = s->items.items[i];
        if (k->decl->is_static) continue;
        list = list ? arena_printf(w->a, "%s, %s", list, key_name(w, k)) : key_name(w, k);
    }
    return list;
}

static bool is_gpu_kernel_arg(Builtin b, int i) {
    switch (b) {
    case B_GPU_MAP:
    case B_GPU_FILTER: return i == 1;
    case B_GPU_ZIP_WITH:
    case B_GPU_FOLD:
    case B_GPU_SCAN: return i == 2;
    default: return false;
    }
}

/* docs/spec/language.md §9.9: a GPU kernel performs no effect but operations of static effects. */
static void check_gpu_kernel(EWalk *w, Expr *a) {
    const char *ops = dynamic_ops(w, value_effects(w, a));
    if (!ops) return;
    diag_error(w->d, a->pos, "GPU kernel must be pure; it performs: %s", ops);
    w->errors++;
}

/* docs/spec/language.md §12.5: the arms of a static handler perform only static effects. */
static void check_static_arms(EWalk *w, Expr *h) {
    for (int i = 0; i < h->u.handle.narms; i++) {
        HandleArm *arm = &h->u.handle.arms[i];
        EWalk tmp = *w;
        tmp.report = false;
        tmp.fn = NULL;
        tmp.handles = (PtrVec){0};
        tmp.sink = arena_alloc(w->a, sizeof(EffSet));
        walk_expr(&tmp, arm->body);
        const char *ops = dynamic_ops(w, tmp.sink);
        if (!ops) continue;
        diag_error(w->d, arm->pos,
                   "static handler arm `%s.%s` must perform only static effects; it performs: %s",
                   h->u.handle.decl->name, arm->op, ops);
        w->errors++;
    }
}

static void walk_call(EWalk *w, Expr *e) {
    Expr *f = e->u.call.callee;
    walk_list(w, e->u.call.args, e->u.call.nargs);
    if (f->kind == E_IDENT && f->u.ident.sym) {
        Sym *s = f->u.ident.sym;
        if (s->kind == SYM_FN) {
            escape_set(w, s->fn->esc, e->pos, s->fn->name);
            for (int i = 0; s->fn->calls_param && i < s->fn->nparams && i < e->u.call.nargs; i++)
                if (s->fn->calls_param[i]) escape_value(w, e->u.call.args[i], e->pos, s->fn->name);
            return;
        }
        if (s->kind == SYM_BUILTIN && s->builtin == B_SPAWN_PROCESS && e->u.call.nargs == 2) {
            /* docs/spec/language.md §9.6: process callbacks run on the monitor thread with no
             * handlers, so they must not perform */
            Expr *a = e->u.call.args[1];
            if (w->report && a->kind == E_IDENT && a->u.ident.sym &&
                a->u.ident.sym->kind == SYM_FN) {
                EffSet *es = eff_find(a->u.ident.sym->fn->esc);
                if (es && es->items.len > 0) {
                    diag_error(w->d, a->pos,
                               "the callback of `spawnProcess` performs `%s`; process callbacks "
                               "run with no effect handlers",
                               key_name(w, es->items.items[0]));
                    w->errors++;
                }
            }
            return;
        }
        if (s->kind == SYM_BUILTIN) {
            /* a built-in calls the function values it is given (callbacks, test bodies) */
            for (int i = 0; i < e->u.call.nargs; i++) {
                Expr *a = e->u.call.args[i];
                if (w->report && is_gpu_kernel_arg(s->builtin, i)) check_gpu_kernel(w, a);
                if (a->type && ty_find(a->type)->kind == TY_FN)
                    escape_value(w, a, a->pos, a->kind == E_IDENT ? a->u.ident.name : "a callback");
            }
            return;
        }
        if (s->kind == SYM_CTOR) return;
        int pi = param_index(w, s);
        if (pi >= 0) {
            mark_param_call(w, pi);
            return;
        }
    }
    walk_expr(w, f);
    if (f->type) escape_set(w, set_of(f->type), e->pos, callee_name(f));
}

static void walk_expr(EWalk *w, Expr *e) {
    if (!e) return;
    switch (e->kind) {
    case E_INT:
    case E_FLOAT:
    case E_BOOL:
    case E_STRING:
    case E_UNSUPPORTED: return;
    case E_IDENT: {
        /* a named function used as a value brings its effects into the value's type */
        Sym *s = e->u.ident.sym;
        if (s && s->kind == SYM_FN && e->type) fn_into_value(w, s->fn, set_of(e->type));
        return;
    }
    case E_INTERP: walk_list(w, e->u.interp.parts, e->u.interp.nparts); return;
    case E_CALL: walk_call(w, e); return;
    case E_BINARY:
        walk_expr(w, e->u.bin.l);
        walk_expr(w, e->u.bin.r);
        return;
    case E_UNARY: walk_expr(w, e->u.un.e); return;
    case E_ELVIS:
        walk_expr(w, e->u.elvis.l);
        walk_expr(w, e->u.elvis.r);
        return;
    case E_MATCH:
        walk_expr(w, e->u.match.scrut);
        for (int i = 0; i < e->u.match.narms; i++) walk_expr(w, e->u.match.arms[i].body);
        return;
    case E_BLOCK:
        for (int i = 0; i < e->u.block.nstmts; i++) walk_stmt(w, e->u.block.stmts[i]);
        return;
    case E_LAMBDA: {
        /* the body's effects belong to the function value, performed where it is called */
        if (!e->u.lambda.own_eff) e->u.lambda.own_eff = arena_alloc(w->a, sizeof(EffSet));
        EWalk inner = *w;
        inner.sink = e->u.lambda.own_eff;
        inner.fn = NULL;
        inner.handles = (PtrVec){0};
        inner.changed = false;
        inner.errors = 0;
        walk_expr(&inner, e->u.lambda.body);
        w->changed |= inner.changed;
        w->errors += inner.errors;
        /* ... and to its function type, for calls that cannot see which lambda it is */
        EffSet *own = eff_find(e->u.lambda.own_eff), *vs = set_of(e->type);
        for (int i = 0; vs && i < own->items.len; i++)
            if (set_add(w, vs, own->items.items[i])) w->changed = true;
        return;
    }
    case E_SPAWN: walk_expr(w, e->u.spawn.e); return; /* the fiber inherits the handlers */
    case E_AWAIT: walk_expr(w, e->u.await.e); return;
    case E_YIELD: walk_expr(w, e->u.yield.e); return;
    case E_RESULT_CTOR: walk_expr(w, e->u.ctor.e); return;
    case E_ERASE: walk_expr(w, e->u.erase.e); return;
    case E_LIST: walk_list(w, e->u.list.elems, e->u.list.n); return;
    case E_IF:
        walk_expr(w, e->u.if_.cond);
        walk_expr(w, e->u.if_.then);
        walk_expr(w, e->u.if_.els);
        return;
    case E_FIELD: walk_expr(w, e->u.field.e); return;
    case E_METHOD: walk_expr(w, e->u.method.call); return;
    case E_RECORD:
        for (int i = 0; i < e->u.record.n; i++) walk_expr(w, e->u.record.fields[i].value);
        return;
    case E_UPDATE:
        walk_expr(w, e->u.update.e);
        for (int i = 0; i < e->u.update.n; i++) walk_expr(w, e->u.update.fields[i].value);
        return;
    case E_INDEX:
        walk_expr(w, e->u.index.e);
        walk_expr(w, e->u.index.idx);
        return;
    case E_MAPLIT:
        walk_list(w, e->u.maplit.keys, e->u.maplit.n);
        walk_list(w, e->u.maplit.vals, e->u.maplit.n);
        return;
    case E_PERFORM: {
        walk_list(w, e->u.perform.args, e->u.perform.nargs);
        if (!e->u.perform.decl) return;
        EffKey *k = arena_alloc(w->a, sizeof *k);
        k->decl = e->u.perform.decl;
        k->opi = e->u.perform.opi;
        k->args = e->u.perform.inst;
        escape(w, k, e->pos, NULL);
        return;
    }
    case E_HANDLE: {
        /* arms run outside their own handle (in the enclosing handler context) */
        for (int i = 0; i < e->u.handle.narms; i++) walk_expr(w, e->u.handle.arms[i].body);
        if (w->report && e->u.handle.is_static && e->u.handle.decl && e->u.handle.decl->is_static)
            check_static_arms(w, e);
        if (e->u.handle.decl) vec_push(w->a, &w->handles, e);
        walk_expr(w, e->u.handle.body);
        if (e->u.handle.decl) w->handles.len--;
        return;
    }
    case E_RESUME: walk_expr(w, e->u.resume.e); return;
    case E_SEND:
        walk_expr(w, e->u.send.ch);
        walk_expr(w, e->u.send.v);
        return;
    case E_RECV: walk_expr(w, e->u.recv.ch); return;
    }
}

static int by_scc(const void *a, const void *b) {
    const FnDecl *x = *(FnDecl *const *)a, *y = *(FnDecl *const *)b;
    return (x->scc > y->scc) - (x->scc < y->scc);
}

static void walk_program(EWalk *w) {
    for (int i = 0; i < w->order.len; i++) {
        FnDecl *f = w->order.items[i];
        if (f->is_main || !f->body) continue;
        w->sink = f->esc;
        w->fn = f;
        w->handles.len = 0;
        walk_expr(w, f->body);
        /* the function as a value performs what its calls do */
        if (f->type) fn_into_value(w, f, set_of(f->type));
    }
    /* program entry: the top-level statements and `fn main` */
    w->sink = NULL;
    w->fn = NULL;
    w->handles.len = 0;
    for (int i = 0; i < w->prog->nstmts; i++) {
        Stmt *s = w->prog->stmts[i];
        if (s->kind != S_FN) walk_stmt(w, s);
    }
    if (w->prog->main_fn) walk_expr(w, w->prog->main_fn->body);
}

int effects_program(Program *prog, Diags *d) {
    if (prog->edecls.len == 0) return 0;
    EWalk W = {.a = prog->arena, .d = d, .prog = prog};
    for (int i = 0; i < prog->fns.len; i++) {
        FnDecl *f = prog->fns.items[i];
        f->esc = arena_alloc(prog->arena, sizeof(EffSet));
        f->calls_param = arena_alloc(prog->arena, sizeof(bool) * (size_t)(f->nparams + 1));
    }
    /* Tarjan numbered the call graph's components callees first, so walking in that
     * order settles direct calls in one pass; function values may need a few more. */
    for (int i = 0; i < prog->fns.len; i++) vec_push(prog->arena, &W.order, prog->fns.items[i]);
    if (W.order.len > 1) qsort(W.order.items, (size_t)W.order.len, sizeof(void *), by_scc);
    for (;;) {
        W.changed = false;
        walk_program(&W);
        if (!W.changed) break;
    }
    W.report = true;
    walk_program(&W);
    return W.errors;
}
