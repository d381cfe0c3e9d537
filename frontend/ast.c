/* ast.c — AST helpers (see ast.h). */
#include "ast.h"

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

static const char *const builtin_names[B_COUNT] = {
    [B_NONE] = "", [B_PRINT] = "print", [B_TOSTRING] = "toString", [B_INTDIV] = "intDiv",
    [B_RANGE] = "range", [B_MAP] = "map", [B_FILTER] = "filter", [B_FOREACH] = "forEach",
    [B_FOLD] = "fold", [B_SLEEP] = "sleep", [B_FIBER_YIELD] = "fiber_yield",
    [B_TOFLOAT] = "toFloat", [B_TEST] = "test", [B_EXPECT] = "expect", [B_CHECK] = "check",
    [B_EXPECT_TRUE] = "expectTrue", [B_EXPECT_FALSE] = "expectFalse",
    [B_CHECK_TRUE] = "checkTrue", [B_CHECK_FALSE] = "checkFalse",
    [B_EXPECT_ALL] = "expectAll", [B_CHECK_ALL] = "checkAll",
};

const char *builtin_name(Builtin b) { return b < B_COUNT ? builtin_names[b] : ""; }

bool builtin_is_testing(Builtin b) { return b >= B_TEST && b <= B_CHECK_ALL; }

const char *binop_spelling(BinOp op) {
    static const char *const s[] = {"+", "-", "*", "/", "%", "==", "!=", "<", ">", "<=", ">=", "&&", "||"};
    return s[op];
}
