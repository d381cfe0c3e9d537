/*
 * ast.h — the Osprey abstract syntax tree, annotated in place by name resolution
 * (Sym links, captures, generated-function numbering) and type inference (Type
 * of every expression, instantiations of polymorphic functions).
 *
 * Everything lives in the compilation's arena.
 */
#ifndef OSP_FE_AST_H
#define OSP_FE_AST_H

#include "types.h"

typedef struct Expr Expr;
typedef struct Stmt Stmt;
typedef struct FnDecl FnDecl;
typedef struct Unit Unit;

/* Built-in functions (LANGUAGE.md §9.1, §10, §11, §13). */
typedef enum Builtin {
    B_NONE,
    B_PRINT, B_TOSTRING, B_INTDIV, B_RANGE, B_MAP, B_FILTER, B_FOREACH, B_FOLD,
    B_SLEEP, B_FIBER_YIELD, B_TOFLOAT,
    B_TEST, B_EXPECT, B_CHECK, B_EXPECT_TRUE, B_EXPECT_FALSE, B_CHECK_TRUE,
    B_CHECK_FALSE, B_EXPECT_ALL, B_CHECK_ALL,
    B_COUNT
} Builtin;

/* True for the testing built-ins (their use makes main return the TAP verdict). */
bool builtin_is_testing(Builtin b);
const char *builtin_name(Builtin b);

typedef enum SymKind { SYM_LOCAL, SYM_FN, SYM_BUILTIN } SymKind;

/* A named entity an identifier can refer to. */
typedef struct Sym {
    SymKind kind;
    const char *name;
    Pos pos;
    int id;
    Type *type;          /* SYM_LOCAL: monomorphic type */
    FnDecl *fn;          /* SYM_FN */
    Builtin builtin;     /* SYM_BUILTIN */
    Unit *owner;         /* SYM_LOCAL: the code unit that binds it */
    bool file_scope;     /* a top-level let: readable from functions (global storage) */
    bool is_global;      /* file-scope and read by another unit: lives in a global */
    int stmt_index;      /* file-scope: index of its top-level statement */
    Expr *init;          /* let initialiser (used to track static function/iterator values) */
    bool is_param;
    int static_kind;     /* STATIC_FN / STATIC_ITER: a let bound to a compile-time-known value */
} Sym;

enum { STATIC_NONE = 0, STATIC_FN = 1, STATIC_ITER = 2 };

/* A code unit: something emitted as one machine function. */
typedef enum UnitKind { U_MAIN, U_FN, U_LAMBDA, U_SPAWN } UnitKind;
struct Unit {
    UnitKind kind;
    Unit *parent;        /* lexically enclosing unit (NULL for main and functions) */
    FnDecl *fn;          /* U_FN: its declaration; lambdas/spawns: the enclosing user fn (NULL = main) */
    int index;           /* k of `<enclosing>$lambda<k>` / `$spawn<k>` */
    PtrVec captures;     /* U_SPAWN: Sym* captured by value, in first-use order */
    int next_lambda, next_spawn; /* counters (on U_MAIN / U_FN units) */
};

typedef enum ExprKind {
    E_INT, E_FLOAT, E_BOOL, E_STRING, E_INTERP, E_IDENT, E_CALL, E_BINARY, E_UNARY,
    E_ELVIS, E_MATCH, E_BLOCK, E_LAMBDA, E_SPAWN, E_AWAIT, E_YIELD, E_RESULT_CTOR,
    E_LIST, E_UNSUPPORTED
} ExprKind;

typedef enum BinOp {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_EQ, OP_NE, OP_LT, OP_GT, OP_LE, OP_GE,
    OP_AND, OP_OR
} BinOp;
typedef enum UnOp { UOP_NEG, UOP_PLUS, UOP_NOT } UnOp;

const char *binop_spelling(BinOp op);

typedef enum PatKind { PAT_WILD, PAT_BIND, PAT_INT, PAT_FLOAT, PAT_STRING, PAT_BOOL, PAT_SUCCESS, PAT_ERROR, PAT_UNSUPPORTED } PatKind;

typedef struct Pattern {
    PatKind kind;
    Pos pos;
    const char *name;     /* PAT_BIND name; PAT_SUCCESS/ERROR binder name (or NULL) */
    Pos name_pos;
    Sym *sym;             /* binder */
    int64_t ival;
    double fval;
    const char *sval;
    size_t slen;
    bool bval;
    struct TypeExpr *annot; /* `x: T` */
    const char *feature;  /* PAT_UNSUPPORTED */
} Pattern;

typedef struct MatchArm {
    Pattern *pat;
    Expr *body;
} MatchArm;

/* A written type (annotation). */
typedef enum TypeExprKind { TE_NAME, TE_FN } TypeExprKind;
typedef struct TypeExpr {
    TypeExprKind kind;
    Pos pos;
    const char *name;
    struct TypeExpr **args;  /* generic arguments / fn params */
    int nargs;
    struct TypeExpr *ret;    /* TE_FN */
} TypeExpr;

typedef struct Param {
    const char *name;        /* NULL for `_` */
    Pos pos;
    TypeExpr *annot;
    Sym *sym;
} Param;

struct Expr {
    ExprKind kind;
    Pos pos;
    Type *type;              /* inferred */
    union {
        int64_t ival;                                   /* E_INT */
        double fval;                                    /* E_FLOAT */
        bool bval;                                      /* E_BOOL */
        struct { const char *s; size_t len; } str;      /* E_STRING */
        struct { Expr **parts; int nparts; } interp;    /* E_INTERP: each part a string-typed or rendered expr */
        struct {
            const char *name;
            Sym *sym;
            Type **inst; int ninst;  /* instantiation of a polymorphic function's scheme */
        } ident;
        struct {
            Expr *callee;
            Expr **args; int nargs;
            bool piped;              /* written as `x |> f(...)` */
        } call;
        struct { BinOp op; Expr *l, *r; } bin;
        struct { UnOp op; Expr *e; } un;
        struct { Expr *l, *r; } elvis;
        struct { Expr *scrut; MatchArm *arms; int narms; } match;
        struct { Stmt **stmts; int nstmts; } block;     /* value: last stmt if it is an expression */
        struct {
            Param *params; int nparams;
            TypeExpr *ret;
            Expr *body;
            Unit *unit;
        } lambda;
        struct { Expr *e; Unit *unit; } spawn;
        struct { Expr *e; } await;
        struct { Expr *e; } yield;                      /* e may be NULL */
        struct { bool is_error; Expr *e; } ctor;        /* Success { value: e } / Error { message: e } */
        struct { Expr **elems; int n; } list;
        struct { const char *feature; Expr **subs; int nsubs; } unsup;
    } u;
};

typedef enum StmtKind { S_LET, S_EXPR, S_FN, S_UNSUPPORTED } StmtKind;

struct Stmt {
    StmtKind kind;
    Pos pos;
    union {
        struct {
            const char *name;
            Pos name_pos;
            bool is_mut;
            TypeExpr *annot;
            Expr *init;
            Sym *sym;
        } let;
        Expr *expr;
        FnDecl *fn;
        const char *feature;
    } u;
};

/* Constraint kinds deferred until their operand types are known (see check.c). */
typedef struct Constraint Constraint;

struct FnDecl {
    const char *name;
    Pos pos;                 /* of the name */
    int line;                /* line of the `fn` keyword (DISubprogram line) */
    Param *params;
    int nparams;
    TypeExpr *ret_annot;
    Expr *body;
    Sym *sym;
    Unit *unit;
    int decl_index;          /* position among top-level statements */
    bool is_main;
    /* inference */
    Type *type;              /* TY_FN, with generic vars when polymorphic */
    Type **qvars;            /* generalised variables, in a fixed order */
    int nqvars;
    PtrVec cons;             /* Constraint* kept in the scheme */
    int scc;                 /* strongly connected component id */
    int check_state;         /* 0 unchecked, 1 in progress, 2 done */
    PtrVec callees;          /* FnDecl* referenced from the body */
    PtrVec globals_read;     /* Sym* file-scope bindings read by the body (direct) */
    /* Tarjan */
    int t_index, t_low;
    bool t_onstack;
};

/* A whole checked program. */
typedef struct Program {
    Arena *arena;
    TypeCtx types;
    const char *path;        /* as given */
    const char *abs_path;    /* absolute path for debug info (may equal path) */
    Stmt **stmts;            /* top-level statements in source order */
    int nstmts;
    PtrVec fns;              /* FnDecl*, in declaration order */
    FnDecl *main_fn;         /* `fn main`, or NULL */
    Unit *main_unit;
    bool uses_testing;
    int main_line;           /* line for the entry point's DISubprogram */
} Program;

/* Constructors used by the parser. */
Expr *expr_new(Arena *a, ExprKind k, Pos pos);
Stmt *stmt_new(Arena *a, StmtKind k, Pos pos);

#endif
