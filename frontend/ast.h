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

/* Built-in functions (docs/spec/language.md §9–§13), one row each in builtins.def. */
typedef enum Builtin {
    B_NONE,
#define BUILTIN(ID, NAME, ARITY, FLAGS, TYPE, SYMBOL, ABI) B_##ID,
#include "builtins.def"
    B_COUNT
} Builtin;

/* Flags of a built-in (builtins.def's FLAGS column). */
enum { BF_NONE = 0, BF_TEST = 1, BF_VALUE = 2 };

/* One row of builtins.def. Strings are static; `type`, `symbol` and `abi` may be NULL (see
 * builtins.def for the notation and what NULL means). */
typedef struct BuiltinInfo {
    const char *name;
    int arity;
    int flags;
    const char *type;
    const char *symbol;
    const char *abi;
} BuiltinInfo;

/* The row of `b`; B_NONE and out-of-range values give a row with name "" and no columns.
 * Never NULL. */
const BuiltinInfo *builtin_info(Builtin b);
/* True for the testing built-ins (docs/spec/language.md §13: their use makes main return the
 * TAP verdict). */
bool builtin_is_testing(Builtin b);
/* The Osprey spelling of `b` ("" for B_NONE). Static storage. */
const char *builtin_name(Builtin b);
/* The built-in spelled `name`, or B_NONE. */
Builtin builtin_lookup(const char *name);

typedef enum SymKind { SYM_LOCAL, SYM_FN, SYM_BUILTIN, SYM_CTOR } SymKind;

typedef struct TypeDecl TypeDecl;
typedef struct Variant Variant;
typedef struct EffectDecl EffectDecl;
typedef struct HandleArm HandleArm;

/* A named entity an identifier can refer to. */
typedef struct Sym {
    SymKind kind;
    const char *name;
    Pos pos;
    int id;
    Type *type;      /* SYM_LOCAL: monomorphic type */
    FnDecl *fn;      /* SYM_FN */
    Builtin builtin; /* SYM_BUILTIN */
    Unit *owner;     /* SYM_LOCAL: the code unit that binds it */
    bool file_scope; /* a top-level let: readable from functions (global storage) */
    bool is_global;  /* file-scope and read by another unit: lives in a global */
    int stmt_index;  /* file-scope: index of its top-level statement */
    Expr *init;      /* let initialiser (used to track static function/iterator values) */
    bool is_param;
    bool is_mut;     /* `mut`: a cell written only by handler arms (§12.4) */
    int static_kind; /* STATIC_FN / STATIC_ITER: a let bound to a compile-time-known value */
    Variant *ctor;   /* SYM_CTOR */
} Sym;

enum { STATIC_NONE = 0, STATIC_FN = 1, STATIC_ITER = 2 };

/*
 * A code unit: something emitted as one machine function, or (U_HANDLE) the group of
 * the arms and body of one `handle`, which share one environment.
 *   U_LAMBDA, U_SPAWN, U_HANDLE capture free variables (Sym*, first-use order): lambdas
 *   and spawns by value; a handle group captures `mut` cells by reference (§12.4).
 *   U_ARM (an arm) and U_HBODY (the body of a handle with a resuming arm, run on a
 *   continuation thread) are children of their U_HANDLE group.
 */
typedef enum UnitKind { U_MAIN, U_FN, U_LAMBDA, U_SPAWN, U_HANDLE, U_ARM, U_HBODY } UnitKind;
struct Unit {
    UnitKind kind;
    Unit *parent;    /* lexically enclosing unit (NULL for main and functions) */
    FnDecl *fn;      /* U_FN: its declaration; others: the enclosing user fn (NULL = main) */
    int index;       /* k of `<enclosing>$lambda<k>` / `$spawn<k>` / arm / `$handle<k>` */
    PtrVec captures; /* U_LAMBDA / U_SPAWN / U_HANDLE: Sym* captured, in first-use order */
    int next_lambda, next_spawn, next_arm, next_handle; /* counters (on U_MAIN / U_FN units) */
};

typedef enum ExprKind {
    E_INT,
    E_FLOAT,
    E_BOOL,
    E_STRING,
    E_INTERP,
    E_IDENT,
    E_CALL,
    E_BINARY,
    E_UNARY,
    E_ELVIS,
    E_MATCH,
    E_BLOCK,
    E_LAMBDA,
    E_SPAWN,
    E_AWAIT,
    E_YIELD,
    E_RESULT_CTOR,
    E_LIST,
    E_UNSUPPORTED,
    /* Tier 2 */
    E_IF,
    E_FIELD,
    E_METHOD,
    E_RECORD,
    E_UPDATE,
    E_INDEX,
    E_MAPLIT,
    E_PERFORM,
    E_HANDLE,
    E_RESUME,
    E_SEND,
    E_RECV,
    /* Tier 3 */
    E_ERASE /* made by the checker: the value of u.erase.e, erased into `any` (§4.1) */
} ExprKind;

typedef enum BinOp {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_GT,
    OP_LE,
    OP_GE,
    OP_AND,
    OP_OR
} BinOp;
typedef enum UnOp { UOP_NEG, UOP_PLUS, UOP_NOT } UnOp;

const char *binop_spelling(BinOp op);

typedef enum PatKind {
    PAT_WILD,
    PAT_BIND,
    PAT_INT,
    PAT_FLOAT,
    PAT_STRING,
    PAT_BOOL,
    PAT_SUCCESS,
    PAT_ERROR,
    PAT_UNSUPPORTED,
    PAT_CTOR,
    PAT_LIST,
    PAT_STRUCT /* Tier 3: `{ f, g }`, `{ f, .. }`, `(a, _)` (docs/spec/language.md §7.1) */
} PatKind;

typedef struct Pattern Pattern;
struct Pattern {
    PatKind kind;
    Pos pos;
    const char
        *name; /* PAT_BIND name; PAT_SUCCESS/ERROR binder name (or NULL); PAT_CTOR constructor */
    Pos name_pos;
    Sym *sym; /* binder */
    int64_t ival;
    double fval;
    const char *sval;
    size_t slen;
    bool bval;
    struct TypeExpr *annot; /* `x: T` */
    const char *feature;    /* PAT_UNSUPPORTED */
    /* PAT_CTOR: sub-patterns by payload slot (`Node(l, r)`) or by field name
     * (`Circle { radius }`, `fields` set; each sub-pattern binds the field's name).
     * PAT_LIST: the element patterns, then `...rest` (rest_name, rest_sym) if has_rest. */
    Pattern **subs;
    int nsubs;
    const char **fields;
    Pos *field_pos;
    int *slots;       /* PAT_CTOR: payload slot of each sub-pattern (set by the checker) */
    bool named;       /* PAT_CTOR written with braces */
    bool bare;        /* PAT_SUCCESS/ERROR written without braces or parentheses */
    bool typed;       /* PAT_CTOR from a typed pattern `p: Variant` (binds the whole value) */
    bool has_args;    /* PAT_CTOR written with `(...)` or `{...}` */
    Variant *variant; /* PAT_CTOR: resolved constructor */
    /* PAT_STRUCT: field names in `fields` (`0`, `1`, … for a tuple), each binder in subs[i]
     * (PAT_BIND, or PAT_WILD for a tuple's `_`); `open` when written with `..` */
    bool open;
    bool tuple;
    bool has_rest;
    const char *rest_name;
    Pos rest_pos;
    Sym *rest_sym;
};

typedef struct MatchArm {
    Pattern *pat;
    Expr *body;
} MatchArm;

/* A written type (annotation). */
typedef enum TypeExprKind { TE_NAME, TE_FN, TE_RECORD } TypeExprKind;
typedef struct TypeExpr {
    TypeExprKind kind;
    Pos pos;
    const char *name;
    struct TypeExpr **args; /* generic arguments / fn params */
    int nargs;
    struct TypeExpr *ret; /* TE_FN */
    const char **fields;  /* TE_RECORD: `{ x: int, y: int }` field names (types in args) */
} TypeExpr;

typedef struct Param {
    const char *name; /* NULL for `_` */
    Pos pos;
    TypeExpr *annot;
    Sym *sym;
} Param;

/* `name: value` in a record construction or update. */
typedef struct FieldInit {
    const char *name;
    Pos pos;
    Expr *value;
    int slot; /* field index in the record / payload (set by the checker) */
} FieldInit;

/* `type` declarations (§3.3). */
typedef enum TypeDeclKind { TD_RECORD, TD_UNION, TD_ALIAS, TD_NAME } TypeDeclKind;

struct Variant {
    const char *name;
    Pos pos;
    TypeDecl *decl;
    int tag;             /* index among the union's variants */
    bool named;          /* `Circle { radius: float }` */
    const char **fields; /* named payload field names (NULL for positional) */
    TypeExpr **ftypes;   /* payload types as written */
    int nfields;
    struct Type **types; /* payload types over the declaration's parameter variables */
    Sym *sym;
};

struct TypeDecl {
    const char *name;
    Pos pos;
    TypeDeclKind kind; /* TD_NAME: `type A = B`, an alias or a one-variant union (resolved later) */
    const char **params;
    int nparams;
    struct Type **pvars; /* one generic variable per parameter */
    /* TD_RECORD */
    const char **fields;
    TypeExpr **ftypes;
    struct Type **types;
    int nfields;
    /* TD_UNION */
    Variant **variants;
    int nvariants;
    /* TD_ALIAS */
    TypeExpr *alias;
    struct Type *alias_type;
    int id;       /* position in Program.tdecls (the checker's side tables are indexed by it) */
    bool builtin; /* declared by the compiler (frontend/builtin_types.c), not the program */
};

/* `effect` declarations (§3.4). */
typedef struct OpDecl {
    const char *name;
    Pos pos;
    TypeExpr *sig;     /* a function type */
    struct Type *type; /* TY_FN over the effect's parameter variables */
} OpDecl;

struct EffectDecl {
    const char *name;
    Pos pos;
    const char **params;
    int nparams;
    struct Type **pvars;
    OpDecl *ops;
    int nops;
    bool is_static; /* `static effect` (docs/spec/language.md §12.5) */
};

/* One entry of an effect row `!E` / `!E<T>` on a function. */
typedef struct EffectRef {
    const char *name;
    Pos pos;
    TypeExpr **args;
    int nargs;
    EffectDecl *decl;
    struct Type **types;
} EffectRef;

/* One arm of `handle`: `op x y => body`. */
struct HandleArm {
    const char *op;
    Pos pos;
    Param *binders;
    int nbinders;
    Expr *body;
    int opi;          /* index of the operation in the effect */
    bool resuming;    /* the body contains `resume` (§12.3) */
    bool tail_resume; /* the arm's value is `resume(...)` in tail position */
    Unit *unit;       /* U_ARM */
    int index;        /* arm number k in `<enclosing>$<Effect>.<op><k>` */
    int table_index;  /* index in the handle's resuming-arm table */
};

struct Expr {
    ExprKind kind;
    Pos pos;
    Type *type; /* inferred */
    union {
        int64_t ival; /* E_INT */
        double fval;  /* E_FLOAT */
        bool bval;    /* E_BOOL */
        struct {
            const char *s;
            size_t len;
        } str; /* E_STRING */
        struct {
            Expr **parts;
            int nparts;
        } interp; /* E_INTERP: each part a string-typed or rendered expr */
        struct {
            const char *name;
            Sym *sym;
            Type **inst;
            int ninst; /* instantiation of a polymorphic function's scheme */
        } ident;
        struct {
            Expr *callee;
            Expr **args;
            int nargs;
            bool piped;         /* written as `x |> f(...)` */
            const char **names; /* named arguments (NULL: positional); names[0] NULL when piped */
            Pos *name_pos;
        } call;
        struct {
            BinOp op;
            Expr *l, *r;
        } bin;
        struct {
            UnOp op;
            Expr *e;
        } un;
        struct {
            Expr *l, *r;
        } elvis;
        struct {
            Expr *scrut;
            MatchArm *arms;
            int narms;
        } match;
        struct {
            Stmt **stmts;
            int nstmts;
        } block; /* value: last stmt if it is an expression */
        struct {
            Param *params;
            int nparams;
            TypeExpr *ret;
            Expr *body;
            Unit *unit;
            struct EffSet *own_eff; /* what this lambda's body performs (effects.c) */
        } lambda;
        struct {
            Expr *e;
            Unit *unit;
        } spawn;
        struct {
            Expr *e;
        } await;
        struct {
            Expr *e;
        } yield; /* e may be NULL */
        struct {
            bool is_error;
            Expr *e;
        } ctor; /* Success { value: e } / Error { message: e } */
        struct {
            Expr **elems;
            int n;
        } list;
        struct {
            const char *feature;
            Expr **subs;
            int nsubs;
        } unsup;
        struct {
            Expr *cond, *then, *els;
        } if_;
        struct {
            Expr *e;
            const char *name;
            Pos npos;
            int slot;
        } field;
        struct {
            Expr *recv;
            const char *name;
            Pos npos;
            Expr **args;
            int nargs;
            Expr *fn;   /* E_IDENT for `name` (sym NULL if no such function) */
            Expr *call; /* the chosen call (set by the checker) */
        } method;
        struct {
            const char *tname;
            Pos tpos; /* NULL: anonymous record */
            FieldInit *fields;
            int n;
            TypeDecl *decl;          /* a declared record */
            Variant *variant;        /* a named-payload constructor */
            struct TypeExpr **targs; /* `Box<int> { ... }`: explicit type arguments, or NULL */
            int ntargs;
        } record;
        struct {
            Expr *e;
            FieldInit *fields;
            int n;
        } update;
        struct {
            Expr *e, *idx;
        } index;
        struct {
            Expr **keys, **vals;
            int n;
        } maplit;
        struct {
            const char *effect;
            Pos epos;
            const char *op;
            Pos opos;
            Expr **args;
            int nargs;
            EffectDecl *decl;
            int opi;
            struct Type **inst; /* the effect's type arguments */
        } perform;
        struct {
            const char *effect;
            Pos epos;
            HandleArm *arms;
            int narms;
            Expr *body;
            EffectDecl *decl;
            struct Type **inst;
            Unit *group;     /* U_HANDLE */
            Unit *body_unit; /* U_HBODY when resuming, else NULL */
            bool resuming;
            int index; /* k of `<enclosing>$handle<k>` (resuming only) */
            int nresuming;
            bool is_static; /* `handle static E` (docs/spec/language.md §12.5) */
        } handle;
        struct {
            Expr *e;
            HandleArm *arm;
            Expr *handle;
            bool tail;
        } resume;
        struct {
            Expr *ch, *v;
        } send;
        struct {
            Expr *ch;
        } recv;
        struct {
            Expr *e; /* its type is the erased value's (resolved per instance by codegen) */
        } erase;
    } u;
};

typedef enum StmtKind { S_LET, S_EXPR, S_FN, S_UNSUPPORTED, S_TYPE, S_EFFECT, S_ASSIGN } StmtKind;

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
        TypeDecl *type;
        EffectDecl *effect;
        struct {
            const char *name;
            Pos name_pos;
            Expr *value;
            Sym *sym;
        } assign;
    } u;
};

/* Constraint kinds deferred until their operand types are known (see check.c). */
typedef struct Constraint Constraint;

struct FnDecl {
    const char *name;
    Pos pos;  /* of the name */
    int line; /* line of the `fn` keyword (DISubprogram line) */
    Param *params;
    int nparams;
    const char **tparams; /* explicit type parameters `<T, U>` */
    Pos *tparam_pos;
    int ntparams;
    struct Type **tvars; /* their rigid variables */
    EffectRef *row;      /* declared effect row, or NULL */
    int nrow;
    bool has_row;
    TypeExpr *ret_annot;
    Expr *body;
    Sym *sym;
    Unit *unit;
    int decl_index; /* position among top-level statements */
    int id;         /* position in Program.fns (the checker's side tables are indexed by it) */
    bool is_main;
    bool is_extern; /* `extern fn`: a C function, no body (docs/spec/language.md §3.5) */
    /* inference */
    Type *type;   /* TY_FN, with generic vars when polymorphic */
    Type **qvars; /* generalised variables, in a fixed order */
    int nqvars;
    PtrVec cons;         /* Constraint* kept in the scheme */
    int scc;             /* strongly connected component id (callees first) */
    PtrVec callees;      /* FnDecl* referenced from the body */
    PtrVec globals_read; /* Sym* file-scope bindings read by the body (direct) */
    EffSet *esc;         /* effects that may escape a call, except calls of its parameters */
    bool *calls_param;   /* [nparams]: the body calls that parameter (effects.c, §12.2) */
};

/* A whole checked program. */
typedef struct Program {
    Arena *arena;
    TypeCtx types;
    const char *path;     /* as given */
    const char *abs_path; /* absolute path for debug info (may equal path) */
    Stmt **stmts;         /* top-level statements in source order */
    int nstmts;
    PtrVec fns;      /* FnDecl*, in declaration order */
    FnDecl *main_fn; /* `fn main`, or NULL */
    Unit *main_unit;
    PtrVec tdecls; /* TypeDecl* */
    PtrVec edecls; /* EffectDecl* */
    bool uses_testing;
    int main_line; /* line for the entry point's DISubprogram */
    /* `// @link: x` and `// @linkdir: d` lines (docs/spec/language.md §3.5), in source order:
     * link_args[i] is `-lx` or `-Ld` (one argument each), link_lines[i] its line */
    const char **link_args;
    int *link_lines;
    int nlink_args;
} Program;

/* Constructors used by the parser. */
Expr *expr_new(Arena *a, ExprKind k, Pos pos);
Stmt *stmt_new(Arena *a, StmtKind k, Pos pos);

#endif
