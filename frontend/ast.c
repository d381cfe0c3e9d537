/* ast.c — AST helpers (see ast.h). */
#include "ast.h"

#include <string.h>

Expr *expr_new(Arena *a, ExprKind k, Pos pos) {
    Expr *e = arena_alloc(a, sizeof *e);
    e->kind = k;
    e->pos = pos;
    return e;
}

Stmt *stmt_new(Arena *a, StmtKind k, Pos pos) {
    Stmt *s = arena_alloc(a, sizeof *s);
    s->kind = k;
    s->pos = pos;
    return s;
}

static const BuiltinInfo builtin_rows[B_COUNT] = {
    [B_NONE] = {"", 0, BF_NONE, NULL, NULL, NULL},
#define BUILTIN(ID, NAME, ARITY, FLAGS, TYPE, SYMBOL, ABI) \
    [B_##ID] = {NAME, ARITY, FLAGS, TYPE, SYMBOL, ABI},
#include "builtins.def"
};

const BuiltinInfo *builtin_info(Builtin b) {
    return &builtin_rows[(unsigned)b < B_COUNT ? b : B_NONE];
}

const char *builtin_name(Builtin b) {
    return builtin_info(b)->name;
}

bool builtin_is_testing(Builtin b) {
    return (builtin_info(b)->flags & BF_TEST) != 0;
}

Builtin builtin_lookup(const char *name) {
    for (int b = 1; b < B_COUNT; b++)
        if (strcmp(builtin_rows[b].name, name) == 0) return (Builtin)b;
    return B_NONE;
}

const char *binop_spelling(BinOp op) {
    static const char *const s[] = {
        "+", "-", "*", "/", "%", "==", "!=", "<", ">", "<=", ">=", "&&", "||"};
    return s[op];
}
