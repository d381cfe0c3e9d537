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
    [B_NONE] = "",
    [B_PRINT] = "print",
    [B_TOSTRING] = "toString",
    [B_INTDIV] = "intDiv",
    [B_RANGE] = "range",
    [B_MAP] = "map",
    [B_FILTER] = "filter",
    [B_FOREACH] = "forEach",
    [B_FOLD] = "fold",
    [B_SLEEP] = "sleep",
    [B_FIBER_YIELD] = "fiber_yield",
    [B_TOFLOAT] = "toFloat",
    [B_TEST] = "test",
    [B_EXPECT] = "expect",
    [B_CHECK] = "check",
    [B_EXPECT_TRUE] = "expectTrue",
    [B_EXPECT_FALSE] = "expectFalse",
    [B_CHECK_TRUE] = "checkTrue",
    [B_CHECK_FALSE] = "checkFalse",
    [B_EXPECT_ALL] = "expectAll",
    [B_CHECK_ALL] = "checkAll",
    [B_ABS] = "abs",
    [B_CHECKED_ADD] = "checkedAdd",
    [B_CHECKED_SUB] = "checkedSub",
    [B_CHECKED_MUL] = "checkedMul",
    [B_INPUT] = "input",
    [B_RANDOM] = "random",
    [B_RANDOM_BELOW] = "randomBelow",
    [B_LENGTH] = "length",
    [B_IS_EMPTY] = "isEmpty",
    [B_CONTAINS] = "contains",
    [B_STARTS_WITH] = "startsWith",
    [B_ENDS_WITH] = "endsWith",
    [B_BYTE_LENGTH] = "byteLength",
    [B_TAKE] = "take",
    [B_DROP] = "drop",
    [B_JOIN] = "join",
    [B_LINES] = "lines",
    [B_WORDS] = "words",
    [B_UPPER] = "toUpperCase",
    [B_LOWER] = "toLowerCase",
    [B_TRIM] = "trim",
    [B_TRIM_START] = "trimStart",
    [B_TRIM_END] = "trimEnd",
    [B_REVERSE] = "reverse",
    [B_INDEX_OF] = "indexOf",
    [B_SUBSTRING] = "substring",
    [B_SPLIT] = "split",
    [B_REPLACE] = "replace",
    [B_REPEAT] = "repeat",
    [B_PAD_START] = "padStart",
    [B_PAD_END] = "padEnd",
    [B_PARSE_INT] = "parseInt",
    [B_PARSE_FLOAT] = "parseFloat",
    [B_BYTE_AT] = "byteAt",
    [B_CODE_POINT_AT] = "codePointAt",
    [B_CODE_POINT_WIDTH] = "codePointWidth",
    [B_FROM_CODE_POINT] = "fromCodePoint",
    [B_LIST] = "List",
    [B_LIST_LENGTH] = "listLength",
    [B_LIST_GET] = "listGet",
    [B_LIST_APPEND] = "listAppend",
    [B_LIST_PREPEND] = "listPrepend",
    [B_LIST_CONCAT] = "listConcat",
    [B_LIST_REVERSE] = "listReverse",
    [B_LIST_CONTAINS] = "listContains",
    [B_FOREACH_LIST] = "forEachList",
    [B_MAP_NEW] = "Map",
    [B_MAP_GET] = "mapGet",
    [B_MAP_SET] = "mapSet",
    [B_MAP_REMOVE] = "mapRemove",
    [B_MAP_MERGE] = "mapMerge",
    [B_MAP_CONTAINS] = "mapContains",
    [B_MAP_LENGTH] = "mapLength",
    [B_MAP_KEYS] = "mapKeys",
    [B_MAP_VALUES] = "mapValues",
    [B_CHANNEL] = "Channel",
    [B_FIBER_DONE] = "fiberDone",
};

const char *builtin_name(Builtin b) {
    return b < B_COUNT ? builtin_names[b] : "";
}

bool builtin_is_testing(Builtin b) {
    return b >= B_TEST && b <= B_CHECK_ALL;
}

const char *binop_spelling(BinOp op) {
    static const char *const s[] = {
        "+", "-", "*", "/", "%", "==", "!=", "<", ">", "<=", ">=", "&&", "||"};
    return s[op];
}
