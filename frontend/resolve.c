/* resolve.c — see resolve.h. */
#include "resolve.h"

#include <string.h>

typedef struct Resolver {
    Arena *a;
    Diags *d;
    Program *prog;
    PtrVec locals;    /* Sym* scope stack */
    int locals_base;  /* lookups in a function body do not go below this */
    PtrVec filescope; /* Sym* file-scope bindings declared so far */
    FnDecl *cur_fn;   /* function whose body is being resolved (NULL: top-level code) */
    Unit *unit;       /* innermost code unit */
    Unit *top_unit;   /* U_MAIN or U_FN: owns the lambda/spawn counters */
    PtrVec *fnrefs;   /* where referenced functions are recorded (Expr* idents) */
    Sym *builtin_syms[B_COUNT];
    int errors;
    int next_sym;
    HandleArm *cur_arm; /* innermost arm whose `resume` is reachable here (NULL: none) */
    Expr *cur_handle;   /* its handle */
    bool in_arm; /* lexically inside an arm (assignments allowed), not behind a lambda/spawn */
} Resolver;

static void error(Resolver *r, Pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error(Resolver *r, Pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(r->d, pos, fmt, ap);
    va_end(ap);
    r->errors++;
}

static Sym *new_sym(Resolver *r, SymKind k, const char *name, Pos pos) {
    Sym *s = arena_alloc(r->a, sizeof *s);
    s->kind = k;
    s->name = name;
    s->pos = pos;
    s->id = ++r->next_sym;
    return s;
}

static Unit *new_unit(Resolver *r, UnitKind k, Unit *parent, FnDecl *fn) {
    Unit *u = arena_alloc(r->a, sizeof *u);
    u->kind = k;
    u->parent = parent;
    u->fn = fn;
    return u;
}

static FnDecl *find_fn(Resolver *r, const char *name) {
    for (int i = 0; i < r->prog->fns.len; i++) {
        FnDecl *f = r->prog->fns.items[i];
        if (strcmp(f->name, name) == 0) return f;
    }
    return NULL;
}

static Sym *find_ctor(Resolver *r, const char *name) {
    for (int i = 0; i < r->prog->tdecls.len; i++) {
        TypeDecl *td = r->prog->tdecls.items[i];
        if (td->kind != TD_UNION) continue;
        for (int k = 0; k < td->nvariants; k++)
            if (strcmp(td->variants[k]->name, name) == 0) return td->variants[k]->sym;
    }
    return NULL;
}

static TypeDecl *find_tdecl(Resolver *r, const char *name) {
    for (int i = 0; i < r->prog->tdecls.len; i++) {
        TypeDecl *td = r->prog->tdecls.items[i];
        if (strcmp(td->name, name) == 0) return td;
    }
    return NULL;
}

static EffectDecl *find_effect(Resolver *r, const char *name) {
    for (int i = 0; i < r->prog->edecls.len; i++) {
        EffectDecl *ed = r->prog->edecls.items[i];
        if (strcmp(ed->name, name) == 0) return ed;
    }
    return NULL;
}

static Sym *lookup(Resolver *r, const char *name) {
    for (int i = r->locals.len - 1; i >= r->locals_base; i--) {
        Sym *s = r->locals.items[i];
        if (strcmp(s->name, name) == 0) return s;
    }
    if (r->cur_fn) {
        /* file-scope bindings declared above the function */
        for (int i = r->filescope.len - 1; i >= 0; i--) {
            Sym *s = r->filescope.items[i];
            if (s->stmt_index < r->cur_fn->decl_index && strcmp(s->name, name) == 0) return s;
        }
    }
    FnDecl *f = find_fn(r, name);
    if (f) return f->sym;
    Sym *c = find_ctor(r, name);
    if (c) return c;
    Builtin b = builtin_lookup(name);
    return b != B_NONE ? r->builtin_syms[b] : NULL;
}

static void push_local(Resolver *r, Sym *s) {
    vec_push(r->a, &r->locals, s);
}

static Sym *bind_local(Resolver *r, const char *name, Pos pos) {
    Sym *s = new_sym(r, SYM_LOCAL, name, pos);
    s->owner = r->unit;
    push_local(r, s);
    return s;
}

static void resolve_expr(Resolver *r, Expr *e);
static void resolve_stmt(Resolver *r, Stmt *s, int top_index);
static void resolve_handle(Resolver *r, Expr *e);

static void note_fnref(Resolver *r, Expr *ident) {
    FnDecl *f = ident->u.ident.sym->fn;
    if (r->cur_fn) {
        for (int i = 0; i < r->cur_fn->callees.len; i++)
            if (r->cur_fn->callees.items[i] == f) return;
        vec_push(r->a, &r->cur_fn->callees, f);
    } else if (r->fnrefs) {
        vec_push(r->a, r->fnrefs, ident);
    }
}

/* A use of local `s` from the current unit: global storage for file-scope bindings read
 * by another unit, captures for every lambda / spawn / handle group in between. */
static void note_local_use(Resolver *r, Sym *s) {
    if (s->owner == r->unit) return;
    if (s->file_scope) {
        s->is_global = true;
        if (r->cur_fn) {
            for (int i = 0; i < r->cur_fn->globals_read.len; i++)
                if (r->cur_fn->globals_read.items[i] == s) return;
            vec_push(r->a, &r->cur_fn->globals_read, s);
        }
        return;
    }
    for (Unit *u = r->unit; u && u != s->owner; u = u->parent) {
        if (u->kind == U_LAMBDA || u->kind == U_SPAWN || u->kind == U_HANDLE) {
            bool have = false;
            for (int i = 0; i < u->captures.len; i++)
                if (u->captures.items[i] == s) have = true;
            if (!have) vec_push(r->a, &u->captures, s);
        }
    }
}

static void resolve_ident(Resolver *r, Expr *e) {
    const char *name = e->u.ident.name;
    Sym *s = lookup(r, name);
    if (!s) {
        if (strcmp(name, "Success") == 0 || strcmp(name, "Error") == 0) {
            error(r, e->pos, "`%s` is built with `%s { %s: ... }`", name, name,
                  name[0] == 'S' ? "value" : "message");
            return;
        }
        if (r->cur_fn) {
            for (int i = 0; i < r->prog->nstmts; i++) {
                Stmt *st = r->prog->stmts[i];
                if (st->kind == S_LET && i > r->cur_fn->decl_index &&
                    strcmp(st->u.let.name, name) == 0) {
                    error(r, e->pos,
                          "`%s` is declared at line %d, below `%s`; a function may read only "
                          "file-scope bindings declared above it",
                          name, st->u.let.name_pos.line, r->cur_fn->name);
                    return;
                }
            }
        }
        error(r, e->pos, "undefined name `%s`", name);
        return;
    }
    e->u.ident.sym = s;
    switch (s->kind) {
    case SYM_FN:
        if (s->fn->is_main) {
            error(r, e->pos,
                  "`main` is the program's entry point and cannot be called or used as a value");
            e->u.ident.sym = NULL;
            return;
        }
        note_fnref(r, e);
        return;
    case SYM_BUILTIN:
        if (builtin_is_testing(s->builtin)) r->prog->uses_testing = true;
        return;
    case SYM_CTOR: return;
    case SYM_LOCAL: note_local_use(r, s); return;
    }
}

static void resolve_pattern(Resolver *r, Pattern *p) {
    if (p->kind == PAT_STRUCT) {
        /* docs/spec/language.md §7.1: binders take their fields' names (never constructors) */
        for (int i = 0; i < p->nsubs; i++)
            if (p->subs[i]->kind == PAT_BIND)
                p->subs[i]->sym = bind_local(r, p->subs[i]->name, p->subs[i]->name_pos);
        return;
    }
    if (p->kind == PAT_BIND && !p->annot) {
        Sym *c = find_ctor(r, p->name);
        if (c) {
            /* an identifier is a constructor if one of that name is declared (§1.3) */
            p->kind = PAT_CTOR;
            p->variant = c->ctor;
            return;
        }
    }
    if ((p->kind == PAT_BIND || p->kind == PAT_SUCCESS || p->kind == PAT_ERROR) && p->name) {
        p->sym = bind_local(r, p->name, p->name_pos);
        return;
    }
    if (p->kind == PAT_CTOR) {
        Sym *c = find_ctor(r, p->name);
        if (!c) {
            error(r, p->name_pos, "unknown constructor `%s`", p->name);
            p->kind = PAT_UNSUPPORTED;
            return;
        }
        p->variant = c->ctor;
        for (int i = 0; i < p->nsubs; i++) {
            for (int j = 0; p->named && j < i; j++)
                if (strcmp(p->fields[i], p->fields[j]) == 0)
                    error(r, p->field_pos[i], "field `%s` is bound twice", p->fields[i]);
            resolve_pattern(r, p->subs[i]);
        }
        return;
    }
    if (p->kind == PAT_LIST) {
        for (int i = 0; i < p->nsubs; i++) resolve_pattern(r, p->subs[i]);
        if (p->rest_name) p->rest_sym = bind_local(r, p->rest_name, p->rest_pos);
    }
}

/* docs/spec/language.md §7.1: a pattern binds each name once (`(x, x)`, `T(y, y)`, `[a, a]`).
 * A field named twice in one braced constructor pattern is reported by resolve_pattern. */
static void note_binder(Resolver *r, PtrVec *seen, const char *name, Pos pos) {
    for (int i = 0; i < seen->len; i++)
        if (strcmp(seen->items[i], name) == 0) {
            error(r, pos, "`%s` is bound twice in this pattern; use a different name", name);
            return;
        }
    vec_push(r->a, seen, (void *)name);
}

static void check_binders(Resolver *r, Pattern *p, PtrVec *seen) {
    if ((p->kind == PAT_BIND || p->kind == PAT_SUCCESS || p->kind == PAT_ERROR) && p->name &&
        p->sym)
        note_binder(r, seen, p->name, p->name_pos);
    if (p->kind != PAT_CTOR && p->kind != PAT_LIST && p->kind != PAT_STRUCT) return;
    for (int i = 0; i < p->nsubs; i++) {
        bool reported = false;
        for (int j = 0; p->kind == PAT_CTOR && p->named && j < i; j++)
            if (strcmp(p->fields[i], p->fields[j]) == 0) reported = true;
        if (!reported) check_binders(r, p->subs[i], seen);
    }
    if (p->kind == PAT_LIST && p->rest_name && p->rest_sym)
        note_binder(r, seen, p->rest_name, p->rest_pos);
}

/* Does `e` contain a `resume` that belongs to the arm being scanned (not to a nested arm)? */
static bool mentions_resume(Expr *e);
static bool stmt_mentions_resume(Stmt *s) {
    switch (s->kind) {
    case S_LET: return mentions_resume(s->u.let.init);
    case S_EXPR: return mentions_resume(s->u.expr);
    case S_ASSIGN: return mentions_resume(s->u.assign.value);
    default: return false;
    }
}
static bool any_resume(Expr **es, int n) {
    for (int i = 0; i < n; i++)
        if (mentions_resume(es[i])) return true;
    return false;
}
static bool mentions_resume(Expr *e) {
    if (!e) return false;
    switch (e->kind) {
    case E_RESUME: return true;
    case E_INTERP: return any_resume(e->u.interp.parts, e->u.interp.nparts);
    case E_CALL:
        return mentions_resume(e->u.call.callee) || any_resume(e->u.call.args, e->u.call.nargs);
    case E_BINARY: return mentions_resume(e->u.bin.l) || mentions_resume(e->u.bin.r);
    case E_UNARY: return mentions_resume(e->u.un.e);
    case E_ELVIS: return mentions_resume(e->u.elvis.l) || mentions_resume(e->u.elvis.r);
    case E_MATCH:
        if (mentions_resume(e->u.match.scrut)) return true;
        for (int i = 0; i < e->u.match.narms; i++)
            if (mentions_resume(e->u.match.arms[i].body)) return true;
        return false;
    case E_BLOCK:
        for (int i = 0; i < e->u.block.nstmts; i++)
            if (stmt_mentions_resume(e->u.block.stmts[i])) return true;
        return false;
    case E_AWAIT: return mentions_resume(e->u.await.e);
    case E_YIELD: return mentions_resume(e->u.yield.e);
    case E_RESULT_CTOR: return mentions_resume(e->u.ctor.e);
    case E_LIST: return any_resume(e->u.list.elems, e->u.list.n);
    case E_IF:
        return mentions_resume(e->u.if_.cond) || mentions_resume(e->u.if_.then) ||
               mentions_resume(e->u.if_.els);
    case E_FIELD: return mentions_resume(e->u.field.e);
    case E_METHOD:
        return mentions_resume(e->u.method.recv) || any_resume(e->u.method.args, e->u.method.nargs);
    case E_RECORD:
        for (int i = 0; i < e->u.record.n; i++)
            if (mentions_resume(e->u.record.fields[i].value)) return true;
        return false;
    case E_UPDATE:
        if (mentions_resume(e->u.update.e)) return true;
        for (int i = 0; i < e->u.update.n; i++)
            if (mentions_resume(e->u.update.fields[i].value)) return true;
        return false;
    case E_INDEX: return mentions_resume(e->u.index.e) || mentions_resume(e->u.index.idx);
    case E_MAPLIT:
        return any_resume(e->u.maplit.keys, e->u.maplit.n) ||
               any_resume(e->u.maplit.vals, e->u.maplit.n);
    case E_PERFORM: return any_resume(e->u.perform.args, e->u.perform.nargs);
    case E_SEND: return mentions_resume(e->u.send.ch) || mentions_resume(e->u.send.v);
    case E_RECV: return mentions_resume(e->u.recv.ch);
    /* a lambda, a spawn, or a nested handle (its arms and its body) cannot resume this
     * arm: a `resume` there is reported where it is */
    default: return false;
    }
}

/* Mark `resume(...)` in tail position of an arm body (its value is the arm's value). */
static void mark_tail_resume(Expr *e, HandleArm *arm) {
    if (!e) return;
    switch (e->kind) {
    case E_RESUME:
        e->u.resume.tail = true;
        arm->tail_resume = true;
        return;
    case E_BLOCK:
        if (e->u.block.nstmts > 0) {
            Stmt *last = e->u.block.stmts[e->u.block.nstmts - 1];
            if (last->kind == S_EXPR) mark_tail_resume(last->u.expr, arm);
        }
        return;
    case E_IF:
        mark_tail_resume(e->u.if_.then, arm);
        mark_tail_resume(e->u.if_.els, arm);
        return;
    case E_MATCH:
        for (int i = 0; i < e->u.match.narms; i++) mark_tail_resume(e->u.match.arms[i].body, arm);
        return;
    default: return;
    }
}

static void resolve_expr(Resolver *r, Expr *e) {
    if (!e) return;
    switch (e->kind) {
    case E_INT:
    case E_FLOAT:
    case E_BOOL:
    case E_STRING: return;
    case E_INTERP:
        for (int i = 0; i < e->u.interp.nparts; i++) resolve_expr(r, e->u.interp.parts[i]);
        return;
    case E_IDENT: resolve_ident(r, e); return;
    case E_CALL:
        resolve_expr(r, e->u.call.callee);
        for (int i = 0; i < e->u.call.nargs; i++) resolve_expr(r, e->u.call.args[i]);
        return;
    case E_BINARY:
        resolve_expr(r, e->u.bin.l);
        resolve_expr(r, e->u.bin.r);
        return;
    case E_UNARY: resolve_expr(r, e->u.un.e); return;
    case E_ELVIS:
        resolve_expr(r, e->u.elvis.l);
        resolve_expr(r, e->u.elvis.r);
        return;
    case E_MATCH:
        resolve_expr(r, e->u.match.scrut);
        for (int i = 0; i < e->u.match.narms; i++) {
            int mark = r->locals.len;
            resolve_pattern(r, e->u.match.arms[i].pat);
            PtrVec seen = {0};
            check_binders(r, e->u.match.arms[i].pat, &seen);
            resolve_expr(r, e->u.match.arms[i].body);
            r->locals.len = mark;
        }
        return;
    case E_BLOCK: {
        int mark = r->locals.len;
        for (int i = 0; i < e->u.block.nstmts; i++) resolve_stmt(r, e->u.block.stmts[i], -1);
        r->locals.len = mark;
        return;
    }
    case E_LAMBDA: {
        HandleArm *save_arm = r->cur_arm;
        bool save_in = r->in_arm;
        r->cur_arm = NULL;
        r->in_arm = false;
        Unit *u = new_unit(r, U_LAMBDA, r->unit, r->cur_fn);
        u->index = ++r->top_unit->next_lambda;
        e->u.lambda.unit = u;
        Unit *save = r->unit;
        r->unit = u;
        int mark = r->locals.len;
        for (int i = 0; i < e->u.lambda.nparams; i++) {
            Param *p = &e->u.lambda.params[i];
            for (int j = 0; j < i; j++)
                if (p->name && e->u.lambda.params[j].name &&
                    strcmp(p->name, e->u.lambda.params[j].name) == 0)
                    error(r, p->pos, "duplicate parameter `%s`", p->name);
            if (p->name) {
                p->sym = bind_local(r, p->name, p->pos);
                p->sym->is_param = true;
            }
        }
        resolve_expr(r, e->u.lambda.body);
        r->locals.len = mark;
        r->unit = save;
        r->cur_arm = save_arm;
        r->in_arm = save_in;
        return;
    }
    case E_SPAWN: {
        HandleArm *save_arm = r->cur_arm;
        bool save_in = r->in_arm;
        r->cur_arm = NULL;
        r->in_arm = false;
        Unit *u = new_unit(r, U_SPAWN, r->unit, r->cur_fn);
        u->index = ++r->top_unit->next_spawn;
        e->u.spawn.unit = u;
        Unit *save = r->unit;
        r->unit = u;
        resolve_expr(r, e->u.spawn.e);
        r->unit = save;
        r->cur_arm = save_arm;
        r->in_arm = save_in;
        return;
    }
    case E_AWAIT: resolve_expr(r, e->u.await.e); return;
    case E_YIELD: resolve_expr(r, e->u.yield.e); return;
    case E_RESULT_CTOR: resolve_expr(r, e->u.ctor.e); return;
    case E_LIST:
        for (int i = 0; i < e->u.list.n; i++) resolve_expr(r, e->u.list.elems[i]);
        return;
    case E_UNSUPPORTED:
        for (int i = 0; i < e->u.unsup.nsubs; i++) resolve_expr(r, e->u.unsup.subs[i]);
        return;
    case E_ERASE: resolve_expr(r, e->u.erase.e); return; /* (made later, by the checker) */
    case E_IF:
        resolve_expr(r, e->u.if_.cond);
        resolve_expr(r, e->u.if_.then);
        resolve_expr(r, e->u.if_.els);
        return;
    case E_FIELD: resolve_expr(r, e->u.field.e); return;
    case E_METHOD: {
        resolve_expr(r, e->u.method.recv);
        for (int i = 0; i < e->u.method.nargs; i++) resolve_expr(r, e->u.method.args[i]);
        /* `x.f(a)` is `f(x, a)` unless x is a record with a field f: the checker decides;
         * resolve `f` quietly here in case it is the function form */
        Expr *id = expr_new(r->a, E_IDENT, e->u.method.npos);
        id->u.ident.name = e->u.method.name;
        e->u.method.fn = id;
        Sym *s = lookup(r, e->u.method.name);
        if (s && s->kind != SYM_CTOR && !(s->kind == SYM_FN && s->fn->is_main))
            resolve_ident(r, id);
        return;
    }
    case E_RECORD: {
        if (e->u.record.tname) {
            TypeDecl *td = find_tdecl(r, e->u.record.tname);
            Sym *c = find_ctor(r, e->u.record.tname);
            if (td && td->kind == TD_RECORD) {
                e->u.record.decl = td;
            } else if (c) {
                e->u.record.variant = c->ctor;
            } else if (td) {
                error(
                    r, e->u.record.tpos,
                    "`%s` is not a record type; only records are built with `%s { field: value }`",
                    td->name, td->name);
            } else {
                /* `p { x: 1 }`: an update of the value `p` */
                Expr *id = expr_new(r->a, E_IDENT, e->u.record.tpos);
                id->u.ident.name = e->u.record.tname;
                FieldInit *fields = e->u.record.fields;
                int n = e->u.record.n;
                e->kind = E_UPDATE;
                e->u.update.e = id;
                e->u.update.fields = fields;
                e->u.update.n = n;
                resolve_expr(r, e);
                return;
            }
        }
        for (int i = 0; i < e->u.record.n; i++) {
            for (int j = 0; j < i; j++)
                if (strcmp(e->u.record.fields[i].name, e->u.record.fields[j].name) == 0)
                    error(r, e->u.record.fields[i].pos, "field `%s` is given twice",
                          e->u.record.fields[i].name);
            resolve_expr(r, e->u.record.fields[i].value);
        }
        return;
    }
    case E_UPDATE:
        resolve_expr(r, e->u.update.e);
        for (int i = 0; i < e->u.update.n; i++) {
            for (int j = 0; j < i; j++)
                if (strcmp(e->u.update.fields[i].name, e->u.update.fields[j].name) == 0)
                    error(r, e->u.update.fields[i].pos, "field `%s` is given twice",
                          e->u.update.fields[i].name);
            resolve_expr(r, e->u.update.fields[i].value);
        }
        return;
    case E_INDEX:
        resolve_expr(r, e->u.index.e);
        resolve_expr(r, e->u.index.idx);
        return;
    case E_MAPLIT:
        for (int i = 0; i < e->u.maplit.n; i++) {
            resolve_expr(r, e->u.maplit.keys[i]);
            resolve_expr(r, e->u.maplit.vals[i]);
        }
        return;
    case E_PERFORM: {
        EffectDecl *ed = find_effect(r, e->u.perform.effect);
        if (!ed) {
            error(r, e->u.perform.epos, "unknown effect `%s`", e->u.perform.effect);
        } else {
            e->u.perform.decl = ed;
            e->u.perform.opi = -1;
            for (int i = 0; i < ed->nops; i++)
                if (strcmp(ed->ops[i].name, e->u.perform.op) == 0) e->u.perform.opi = i;
            if (e->u.perform.opi < 0) {
                error(r, e->u.perform.opos, "effect `%s` has no operation `%s`", ed->name,
                      e->u.perform.op);
                e->u.perform.decl = NULL;
            }
        }
        for (int i = 0; i < e->u.perform.nargs; i++) resolve_expr(r, e->u.perform.args[i]);
        return;
    }
    case E_HANDLE: resolve_handle(r, e); return;
    case E_RESUME:
        if (!r->cur_arm) {
            error(r, e->pos,
                  "`resume` is only allowed in an effect-handler arm (and not inside a lambda, "
                  "`spawn` or a nested `handle` body there)");
        } else {
            e->u.resume.arm = r->cur_arm;
            e->u.resume.handle = r->cur_handle;
        }
        resolve_expr(r, e->u.resume.e);
        return;
    case E_SEND:
        resolve_expr(r, e->u.send.ch);
        resolve_expr(r, e->u.send.v);
        return;
    case E_RECV: resolve_expr(r, e->u.recv.ch); return;
    }
}

/* docs/spec/language.md §12.5: a static effect is handled only by `handle static`, which handles
 * only static effects, covers every operation and never resumes. (What its arms perform is
 * checked with the other effects, effects.c.) */
static void check_static_handle(Resolver *r, Expr *e, EffectDecl *ed) {
    if (ed->is_static && !e->u.handle.is_static) {
        error(r, e->u.handle.epos,
              "effect `%s` is static; handle it with `handle static %s` so it is discharged at "
              "compile time",
              ed->name, ed->name);
        return;
    }
    if (!e->u.handle.is_static) return;
    if (!ed->is_static) {
        error(r, e->u.handle.epos,
              "effect `%s` is dynamic; a static handler requires `static effect %s`", ed->name,
              ed->name);
        return;
    }
    for (int k = 0; k < ed->nops; k++) {
        bool covered = false;
        for (int i = 0; i < e->u.handle.narms; i++)
            if (e->u.handle.arms[i].opi == k) covered = true;
        if (!covered)
            error(r, e->u.handle.epos, "static handler for `%s` does not cover operation `%s.%s`",
                  ed->name, ed->name, ed->ops[k].name);
    }
    for (int i = 0; i < e->u.handle.narms; i++) {
        HandleArm *arm = &e->u.handle.arms[i];
        if (arm->resuming)
            error(r, arm->pos,
                  "static handler arm `%s.%s` resumes; static handlers cannot capture a "
                  "continuation",
                  ed->name, arm->op);
    }
}

static void resolve_handle(Resolver *r, Expr *e) {
    EffectDecl *ed = find_effect(r, e->u.handle.effect);
    if (!ed) error(r, e->u.handle.epos, "unknown effect `%s`", e->u.handle.effect);
    e->u.handle.decl = ed;
    Unit *group = new_unit(r, U_HANDLE, r->unit, r->cur_fn);
    e->u.handle.group = group;
    int nres = 0;
    for (int i = 0; i < e->u.handle.narms; i++) {
        HandleArm *arm = &e->u.handle.arms[i];
        arm->opi = -1;
        if (ed) {
            for (int k = 0; k < ed->nops; k++)
                if (strcmp(ed->ops[k].name, arm->op) == 0) arm->opi = k;
            if (arm->opi < 0)
                error(r, arm->pos, "effect `%s` has no operation `%s`", ed->name, arm->op);
        }
        for (int j = 0; j < i; j++)
            if (strcmp(e->u.handle.arms[j].op, arm->op) == 0)
                error(r, arm->pos, "operation `%s` is handled twice in this `handle`", arm->op);
        arm->resuming = mentions_resume(arm->body);
        if (arm->resuming) {
            arm->table_index = nres++;
            mark_tail_resume(arm->body, arm);
        }
    }
    e->u.handle.resuming = nres > 0;
    e->u.handle.nresuming = nres;
    if (ed) check_static_handle(r, e, ed);
    /* arms, in source order */
    for (int i = 0; i < e->u.handle.narms; i++) {
        HandleArm *arm = &e->u.handle.arms[i];
        Unit *u = new_unit(r, U_ARM, group, r->cur_fn);
        u->index = arm->index = ++r->top_unit->next_arm;
        arm->unit = u;
        Unit *save = r->unit;
        HandleArm *save_arm = r->cur_arm;
        Expr *save_h = r->cur_handle;
        bool save_in = r->in_arm;
        r->unit = u;
        r->cur_arm = arm;
        r->cur_handle = e;
        r->in_arm = true;
        int mark = r->locals.len;
        for (int k = 0; k < arm->nbinders; k++) {
            Param *p = &arm->binders[k];
            for (int j = 0; j < k; j++)
                if (p->name && arm->binders[j].name && strcmp(p->name, arm->binders[j].name) == 0)
                    error(r, p->pos, "duplicate binder `%s`", p->name);
            if (p->name) {
                p->sym = bind_local(r, p->name, p->pos);
                p->sym->is_param = true;
            }
        }
        resolve_expr(r, arm->body);
        r->locals.len = mark;
        r->unit = save;
        r->cur_arm = save_arm;
        r->cur_handle = save_h;
        r->in_arm = save_in;
    }
    /* the body: on a continuation thread (its own unit) when an arm resumes */
    HandleArm *save_arm = r->cur_arm;
    bool save_in = r->in_arm;
    r->cur_arm = NULL;
    if (e->u.handle.resuming) {
        Unit *u = new_unit(r, U_HBODY, group, r->cur_fn);
        u->index = e->u.handle.index = ++r->top_unit->next_handle;
        e->u.handle.body_unit = u;
        Unit *save = r->unit;
        r->unit = u;
        resolve_expr(r, e->u.handle.body);
        r->unit = save;
    } else {
        resolve_expr(r, e->u.handle.body);
    }
    r->cur_arm = save_arm;
    r->in_arm = save_in;
}

static void resolve_fn(Resolver *r, FnDecl *f) {
    FnDecl *save_fn = r->cur_fn;
    Unit *save_unit = r->unit, *save_top = r->top_unit;
    int save_base = r->locals_base, mark = r->locals.len;
    r->cur_fn = f;
    if (f->is_main) {
        f->unit = r->prog->main_unit;
    } else {
        f->unit = new_unit(r, U_FN, NULL, f);
    }
    r->unit = r->top_unit = f->unit;
    r->locals_base = r->locals.len;
    for (int i = 0; i < f->nparams; i++) {
        Param *p = &f->params[i];
        for (int j = 0; j < i; j++)
            if (p->name && f->params[j].name && strcmp(p->name, f->params[j].name) == 0)
                error(r, p->pos, "duplicate parameter `%s`", p->name);
        if (p->name) {
            p->sym = bind_local(r, p->name, p->pos);
            p->sym->is_param = true;
        }
    }
    if (f->body) resolve_expr(r, f->body); /* an extern has none */
    r->locals.len = mark;
    r->locals_base = save_base;
    r->cur_fn = save_fn;
    r->unit = save_unit;
    r->top_unit = save_top;
}

static void resolve_stmt(Resolver *r, Stmt *s, int top_index) {
    switch (s->kind) {
    case S_LET: {
        resolve_expr(r, s->u.let.init);
        Sym *sym = bind_local(r, s->u.let.name, s->u.let.name_pos);
        sym->init = s->u.let.init;
        sym->is_mut = s->u.let.is_mut;
        if (top_index >= 0) {
            sym->file_scope = true;
            sym->stmt_index = top_index;
            if (sym->is_mut) sym->is_global = true; /* one shared cell: a global */
            vec_push(r->a, &r->filescope, sym);
        }
        s->u.let.sym = sym;
        return;
    }
    case S_ASSIGN: {
        resolve_expr(r, s->u.assign.value);
        Sym *sym = lookup(r, s->u.assign.name);
        if (!sym) {
            error(r, s->u.assign.name_pos, "undefined name `%s`", s->u.assign.name);
            return;
        }
        if (sym->kind != SYM_LOCAL || !sym->is_mut) {
            error(r, s->u.assign.name_pos,
                  "cannot assign to `%s`: only `mut` bindings can be assigned (it is %s)",
                  s->u.assign.name,
                  sym->kind == SYM_LOCAL ? "declared with `let`" : "not a variable");
            return;
        }
        if (!r->in_arm) {
            error(r, s->pos,
                  "`%s` can only be assigned inside an effect-handler arm (the only writers of a "
                  "`mut` binding, docs/spec/language.md §12.4)",
                  s->u.assign.name);
            return;
        }
        if (!sym->file_scope) {
            for (Unit *u = r->unit; u && u != sym->owner; u = u->parent)
                if (u->kind == U_LAMBDA || u->kind == U_SPAWN) {
                    error(r, s->pos,
                          "`%s` cannot be assigned here: this %s captured it by value; only the "
                          "arms of a `handle` in the scope of `%s` share its cell",
                          s->u.assign.name, u->kind == U_LAMBDA ? "lambda" : "`spawn`",
                          s->u.assign.name);
                    return;
                }
        }
        s->u.assign.sym = sym;
        note_local_use(r, sym);
        return;
    }
    case S_TYPE:
    case S_EFFECT: return;
    case S_EXPR: resolve_expr(r, s->u.expr); return;
    case S_FN: resolve_fn(r, s->u.fn); return;
    case S_UNSUPPORTED: return;
    }
}

static bool is_builtin_type_name(const char *n) {
    static const char *const names[] = {
        "int",   "float",    "bool", "string", "Unit",    "MathError", "Error", "Result",
        "Fiber", "Iterator", "List", "Map",    "Channel", "any",       "Ptr",   "HttpResponse"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(names[i], n) == 0) return true;
    return false;
}

/* Type and effect declarations: duplicates, `type A = B` (alias or one-variant union),
 * constructor symbols, effect rows of functions. */
static void resolve_decls(Resolver *r) {
    Program *prog = r->prog;
    for (int i = 0; i < prog->tdecls.len; i++) {
        TypeDecl *td = prog->tdecls.items[i];
        for (int j = 0; j < i; j++) {
            TypeDecl *o = prog->tdecls.items[j];
            if (!o->builtin && strcmp(o->name, td->name) == 0)
                error(r, td->pos, "type `%s` is already declared at line %d", td->name,
                      o->pos.line);
        }
        if (!td->builtin && is_builtin_type_name(td->name))
            error(r, td->pos, "`%s` is a built-in type and cannot be redeclared", td->name);
    }
    for (int i = 0; i < prog->tdecls.len; i++) {
        TypeDecl *td = prog->tdecls.items[i];
        if (td->kind != TD_NAME) continue;
        const char *n = td->alias->name;
        bool is_param = false;
        for (int k = 0; k < td->nparams; k++)
            if (strcmp(td->params[k], n) == 0) is_param = true;
        if (is_param || is_builtin_type_name(n) || find_tdecl(r, n)) {
            td->kind = TD_ALIAS;
        } else {
            Variant *v = arena_alloc(r->a, sizeof *v);
            v->name = n;
            v->pos = td->alias->pos;
            v->decl = td;
            td->kind = TD_UNION;
            td->variants = arena_alloc(r->a, sizeof(Variant *));
            td->variants[0] = v;
            td->nvariants = 1;
        }
    }
    for (int i = 0; i < prog->tdecls.len; i++) {
        TypeDecl *td = prog->tdecls.items[i];
        if (td->kind != TD_UNION) continue;
        for (int k = 0; k < td->nvariants; k++) {
            Variant *v = td->variants[k];
            if ((strcmp(v->name, "Success") == 0 || strcmp(v->name, "Error") == 0) &&
                v->nfields > 0) {
                /* docs/spec/language.md §3.3: only a nullary variant may take the name */
                error(r, v->pos,
                      "a variant named `%s` cannot have a payload (`%s { ... }` is the built-in "
                      "Result)",
                      v->name, v->name);
                continue;
            }
            Sym *prev = find_ctor(r, v->name);
            if (prev) {
                error(r, v->pos, "constructor `%s` is already declared at line %d", v->name,
                      prev->pos.line);
                continue;
            }
            FnDecl *f = find_fn(r, v->name);
            if (f)
                error(r, v->pos,
                      "constructor `%s` has the same name as the function declared at line %d",
                      v->name, f->pos.line);
            Sym *sym = new_sym(r, SYM_CTOR, v->name, v->pos);
            sym->ctor = v;
            v->sym = sym;
        }
    }
    for (int i = 0; i < prog->edecls.len; i++) {
        EffectDecl *ed = prog->edecls.items[i];
        for (int j = 0; j < i; j++) {
            EffectDecl *o = prog->edecls.items[j];
            if (strcmp(o->name, ed->name) == 0)
                error(r, ed->pos, "effect `%s` is already declared at line %d", ed->name,
                      o->pos.line);
        }
    }
    for (int i = 0; i < prog->fns.len; i++) {
        FnDecl *f = prog->fns.items[i];
        for (int k = 0; k < f->nrow; k++) {
            EffectRef *ref = &f->row[k];
            ref->decl = find_effect(r, ref->name);
            if (!ref->decl)
                error(r, ref->pos, "unknown effect `%s` in the effect row of `%s`", ref->name,
                      f->name);
        }
    }
}

/* Does any function reachable from `f` read a file-scope binding with index >= limit? */
static Sym *reads_uninitialised(FnDecl *f, int limit, int stamp, int *marks, Program *prog,
                                FnDecl **via) {
    int idx = -1;
    for (int i = 0; i < prog->fns.len; i++)
        if (prog->fns.items[i] == f) idx = i;
    if (idx < 0 || marks[idx] == stamp) return NULL;
    marks[idx] = stamp;
    for (int i = 0; i < f->globals_read.len; i++) {
        Sym *g = f->globals_read.items[i];
        if (g->stmt_index >= limit) {
            *via = f;
            return g;
        }
    }
    for (int i = 0; i < f->callees.len; i++) {
        Sym *g = reads_uninitialised(f->callees.items[i], limit, stamp, marks, prog, via);
        if (g) return g;
    }
    return NULL;
}

int resolve_program(Program *prog, Diags *d) {
    Resolver R = {.a = prog->arena, .d = d, .prog = prog};
    Resolver *r = &R;
    prog->main_unit = new_unit(r, U_MAIN, NULL, NULL);
    for (int b = 1; b < B_COUNT; b++) {
        Sym *s = new_sym(r, SYM_BUILTIN, builtin_name((Builtin)b), (Pos){0, 0});
        s->builtin = (Builtin)b;
        R.builtin_syms[b] = s;
    }
    /* hoist functions */
    for (int i = 0; i < prog->fns.len; i++) {
        FnDecl *f = prog->fns.items[i];
        for (int j = 0; j < i; j++) {
            FnDecl *g = prog->fns.items[j];
            if (strcmp(f->name, g->name) == 0) {
                error(r, f->pos, "`%s` is already declared at line %d", f->name, g->pos.line);
                f->name = arena_printf(r->a, "%s$dup%d", f->name, i); /* keep going */
                break;
            }
        }
        f->sym = new_sym(r, SYM_FN, f->name, f->pos);
        f->sym->fn = f;
        if (strcmp(f->name, "main") == 0) {
            f->is_main = true;
            if (f->nparams > 0) error(r, f->pos, "`fn main` takes no parameters");
            prog->main_fn = f;
        }
    }
    prog->main_line = prog->main_fn ? prog->main_fn->line : 1;
    resolve_decls(r);
    PtrVec *stmt_refs = arena_alloc(r->a, sizeof(PtrVec) * (size_t)(prog->nstmts + 1));
    r->unit = r->top_unit = prog->main_unit;
    for (int i = 0; i < prog->nstmts; i++) {
        Stmt *s = prog->stmts[i];
        if (s->kind == S_EXPR && prog->main_fn)
            error(r, s->pos,
                  "a program with `fn main` may not have other executable top-level statements "
                  "(move this into `main`)");
        r->fnrefs = &stmt_refs[i];
        resolve_stmt(r, s, i);
        r->fnrefs = NULL;
    }
    /* reading a file-scope binding before its initialiser has run */
    if (prog->fns.len > 0) {
        int *marks = arena_alloc(r->a, sizeof(int) * (size_t)prog->fns.len);
        int stamp = 0;
        for (int i = 0; i < prog->nstmts; i++) {
            Stmt *s = prog->stmts[i];
            if (s->kind == S_FN) continue;
            for (int k = 0; k < stmt_refs[i].len; k++) {
                Expr *id = stmt_refs[i].items[k];
                if (!id->u.ident.sym) continue;
                FnDecl *via = NULL;
                Sym *g = reads_uninitialised(id->u.ident.sym->fn, i, ++stamp, marks, prog, &via);
                if (g) {
                    error(r, id->pos,
                          "`%s` reads `%s` (declared at line %d) before its initialiser has "
                          "run%s%s%s",
                          id->u.ident.name, g->name, g->pos.line,
                          via != id->u.ident.sym->fn ? " (through `" : "",
                          via != id->u.ident.sym->fn ? via->name : "",
                          via != id->u.ident.sym->fn ? "`)" : "");
                    break;
                }
            }
        }
    }
    return r->errors;
}
