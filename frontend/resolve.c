/* resolve.c — see resolve.h. */
#include "resolve.h"

#include <string.h>

typedef struct Resolver {
    Arena *a;
    Diags *d;
    Program *prog;
    PtrVec locals;       /* Sym* scope stack */
    int locals_base;     /* lookups in a function body do not go below this */
    PtrVec filescope;    /* Sym* file-scope bindings declared so far */
    FnDecl *cur_fn;      /* function whose body is being resolved (NULL: top-level code) */
    Unit *unit;          /* innermost code unit */
    Unit *top_unit;      /* U_MAIN or U_FN: owns the lambda/spawn counters */
    PtrVec *fnrefs;      /* where referenced functions are recorded (Expr* idents) */
    Sym *builtin_syms[B_COUNT];
    int errors;
    int next_sym;
} Resolver;

static void error(Resolver *r, Pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error(Resolver *r, Pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(r->d, pos, fmt, ap);
    va_end(ap);
    r->errors++;
}

static const char *const tier2_builtins[] = {
    "abs", "checkedAdd", "checkedSub", "checkedMul", "input", "random", "randomBelow",
    "length", "isEmpty", "contains", "startsWith", "endsWith", "byteLength", "take", "drop",
    "join", "lines", "words", "toUpperCase", "toLowerCase", "trim", "trimStart", "trimEnd",
    "reverse", "indexOf", "substring", "split", "replace", "repeat", "padStart", "padEnd",
    "parseInt", "parseFloat", "byteAt", "codePointAt", "codePointWidth", "fromCodePoint",
    "List", "listLength", "listGet", "listAppend", "listPrepend", "listConcat", "listReverse",
    "listContains", "forEachList", "Map", "mapGet", "mapSet", "mapRemove", "mapMerge",
    "mapContains", "mapLength", "mapKeys", "mapValues", "Channel", "fiberDone",
};
static const char *const tier3_builtins[] = {
    "readFile", "writeFile", "spawnProcess", "awaitProcess", "cleanupProcess",
    "fiber_set_deterministic_mode",
};

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
    for (int b = 1; b < B_COUNT; b++)
        if (strcmp(builtin_name((Builtin)b), name) == 0) return r->builtin_syms[b];
    return NULL;
}

static void push_local(Resolver *r, Sym *s) { vec_push(r->a, &r->locals, s); }

static Sym *bind_local(Resolver *r, const char *name, Pos pos) {
    Sym *s = new_sym(r, SYM_LOCAL, name, pos);
    s->owner = r->unit;
    push_local(r, s);
    return s;
}

static void resolve_expr(Resolver *r, Expr *e);
static void resolve_stmt(Resolver *r, Stmt *s, int top_index);

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

static void resolve_ident(Resolver *r, Expr *e) {
    const char *name = e->u.ident.name;
    Sym *s = lookup(r, name);
    if (!s) {
        for (size_t i = 0; i < sizeof tier2_builtins / sizeof *tier2_builtins; i++)
            if (strcmp(tier2_builtins[i], name) == 0) {
                error(r, e->pos, "not supported yet: built-in `%s` (Tier 2)", name);
                return;
            }
        for (size_t i = 0; i < sizeof tier3_builtins / sizeof *tier3_builtins; i++)
            if (strcmp(tier3_builtins[i], name) == 0) {
                error(r, e->pos, "not supported yet: built-in `%s` (Tier 3)", name);
                return;
            }
        if (strcmp(name, "Success") == 0 || strcmp(name, "Error") == 0) {
            error(r, e->pos, "`%s` is built with `%s { %s: ... }`", name, name,
                  name[0] == 'S' ? "value" : "message");
            return;
        }
        if (r->cur_fn) {
            for (int i = 0; i < r->prog->nstmts; i++) {
                Stmt *st = r->prog->stmts[i];
                if (st->kind == S_LET && i > r->cur_fn->decl_index && strcmp(st->u.let.name, name) == 0) {
                    error(r, e->pos,
                          "`%s` is declared at line %d, below `%s`; a function may read only file-scope bindings declared above it",
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
            error(r, e->pos, "`main` is the program's entry point and cannot be called or used as a value");
            e->u.ident.sym = NULL;
            return;
        }
        note_fnref(r, e);
        return;
    case SYM_BUILTIN:
        if (builtin_is_testing(s->builtin)) r->prog->uses_testing = true;
        return;
    case SYM_LOCAL:
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
            if (u->kind == U_LAMBDA) {
                error(r, e->pos,
                      "not supported yet: a lambda that captures the local `%s` (closures are Tier 2; a Tier 1 lambda may use only its parameters, functions and file-scope bindings)",
                      name);
                return;
            }
            if (u->kind == U_SPAWN) {
                bool have = false;
                for (int i = 0; i < u->captures.len; i++)
                    if (u->captures.items[i] == s) have = true;
                if (!have) vec_push(r->a, &u->captures, s);
            }
        }
        return;
    }
}

static void resolve_pattern(Resolver *r, Pattern *p) {
    if ((p->kind == PAT_BIND || p->kind == PAT_SUCCESS || p->kind == PAT_ERROR) && p->name)
        p->sym = bind_local(r, p->name, p->name_pos);
}

static void resolve_expr(Resolver *r, Expr *e) {
    if (!e) return;
    switch (e->kind) {
    case E_INT: case E_FLOAT: case E_BOOL: case E_STRING:
        return;
    case E_INTERP:
        for (int i = 0; i < e->u.interp.nparts; i++) resolve_expr(r, e->u.interp.parts[i]);
        return;
    case E_IDENT:
        resolve_ident(r, e);
        return;
    case E_CALL:
        resolve_expr(r, e->u.call.callee);
        for (int i = 0; i < e->u.call.nargs; i++) resolve_expr(r, e->u.call.args[i]);
        return;
    case E_BINARY:
        resolve_expr(r, e->u.bin.l);
        resolve_expr(r, e->u.bin.r);
        return;
    case E_UNARY:
        resolve_expr(r, e->u.un.e);
        return;
    case E_ELVIS:
        resolve_expr(r, e->u.elvis.l);
        resolve_expr(r, e->u.elvis.r);
        return;
    case E_MATCH:
        resolve_expr(r, e->u.match.scrut);
        for (int i = 0; i < e->u.match.narms; i++) {
            int mark = r->locals.len;
            resolve_pattern(r, e->u.match.arms[i].pat);
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
        Unit *u = new_unit(r, U_LAMBDA, r->unit, r->cur_fn);
        u->index = ++r->top_unit->next_lambda;
        e->u.lambda.unit = u;
        Unit *save = r->unit;
        r->unit = u;
        int mark = r->locals.len;
        for (int i = 0; i < e->u.lambda.nparams; i++) {
            Param *p = &e->u.lambda.params[i];
            for (int j = 0; j < i; j++)
                if (p->name && e->u.lambda.params[j].name && strcmp(p->name, e->u.lambda.params[j].name) == 0)
                    error(r, p->pos, "duplicate parameter `%s`", p->name);
            if (p->name) {
                p->sym = bind_local(r, p->name, p->pos);
                p->sym->is_param = true;
            }
        }
        resolve_expr(r, e->u.lambda.body);
        r->locals.len = mark;
        r->unit = save;
        return;
    }
    case E_SPAWN: {
        Unit *u = new_unit(r, U_SPAWN, r->unit, r->cur_fn);
        u->index = ++r->top_unit->next_spawn;
        e->u.spawn.unit = u;
        Unit *save = r->unit;
        r->unit = u;
        resolve_expr(r, e->u.spawn.e);
        r->unit = save;
        return;
    }
    case E_AWAIT:
        resolve_expr(r, e->u.await.e);
        return;
    case E_YIELD:
        resolve_expr(r, e->u.yield.e);
        return;
    case E_RESULT_CTOR:
        resolve_expr(r, e->u.ctor.e);
        return;
    case E_LIST:
        for (int i = 0; i < e->u.list.n; i++) resolve_expr(r, e->u.list.elems[i]);
        return;
    case E_UNSUPPORTED:
        for (int i = 0; i < e->u.unsup.nsubs; i++) resolve_expr(r, e->u.unsup.subs[i]);
        return;
    }
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
    resolve_expr(r, f->body);
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
        if (top_index >= 0) {
            sym->file_scope = true;
            sym->stmt_index = top_index;
            vec_push(r->a, &r->filescope, sym);
        }
        s->u.let.sym = sym;
        return;
    }
    case S_EXPR:
        resolve_expr(r, s->u.expr);
        return;
    case S_FN:
        resolve_fn(r, s->u.fn);
        return;
    case S_UNSUPPORTED:
        return;
    }
}

/* Does any function reachable from `f` read a file-scope binding with index >= limit? */
static Sym *reads_uninitialised(FnDecl *f, int limit, int stamp, int *marks, Program *prog, FnDecl **via) {
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
    PtrVec *stmt_refs = arena_alloc(r->a, sizeof(PtrVec) * (size_t)(prog->nstmts + 1));
    r->unit = r->top_unit = prog->main_unit;
    for (int i = 0; i < prog->nstmts; i++) {
        Stmt *s = prog->stmts[i];
        if (s->kind == S_EXPR && prog->main_fn)
            error(r, s->pos, "a program with `fn main` may not have other executable top-level statements (move this into `main`)");
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
                    error(r, id->pos, "`%s` reads `%s` (declared at line %d) before its initialiser has run%s%s%s",
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
