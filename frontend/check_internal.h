/*
 * check_internal.h — what the parts of the type checker share (check.h is the public face).
 *
 * check.c             SCCs (Tarjan), check_scc, defaulting, Iterator restrictions, check_program
 * check_constraints.c deferred constraints, generalisation and instantiation
 * check_types.c       annotations and declared types
 * check_builtins.c    built-in signatures (builtins.def) and built-in calls
 * check_expr.c        expressions and statements
 * check_patterns.c    patterns and match
 */
#ifndef OSP_FE_CHECK_INTERNAL_H
#define OSP_FE_CHECK_INTERNAL_H

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "check.h"

/* The parts' shared functions are internal to the library: not exported from any image. */
#pragma GCC visibility push(hidden)

/*
 * Deferred constraints:
 *   C_ARITH   a op b = res (checked arithmetic, string `+`, list and map `+`)
 *   C_NEG     -a = res
 *   C_CMP     a op b (comparison)
 *   C_SHOW    a is printable (§8) / C_ASSERTABLE: and has a test rendering (§13.1)
 *   C_INDEX   a[b] = res (list, map, string)
 *   C_SIZED   a is a string, list or map (length, isEmpty)
 *   C_FIELD   a.name = res (a record); with op OP_UPDATE_FIELD, res is the new value of
 *             the field in an update `a { name: v }` (erased when the field is `any`)
 *   C_SENDABLE a may cross a channel (not a Result)
 *   C_GPU_ELEM a is int, float or bool: a GpuBuffer element or gpuFold's accumulator (§9.9);
 *              name: the built-in, b non-NULL for the accumulator
 *   C_EQUATABLE a is compared for equality by built-in `name` (listContains): not an erased
 *              `any` (§4.1)
 *   C_ERASABLE a is erased into `any` (§4.1): not an anonymous record, nor a Result whose
 *              Success payload (through nested Results) has no rendering; deferred while a
 *              type parameter leaves that open, so a generic function checks it at each call
 */
typedef enum CKind {
    C_ARITH,
    C_NEG,
    C_CMP,
    C_SHOW,
    C_INDEX,
    C_SIZED,
    C_FIELD,
    C_SENDABLE,
    C_GPU_ELEM,
    C_EQUATABLE,
    C_ERASABLE
} CKind;

struct Constraint {
    CKind kind;
    BinOp op;
    Type *a, *b, *res;
    Pos pos;
    const char *via;  /* instantiated from the scheme of this function */
    const char *name; /* C_FIELD: the field; C_SIZED: the built-in */
    int level;
    bool dead;
    /* a copy made when a function's scheme is instantiated: the definition's own constraint,
     * and there the overload its first solved copy chose (docs/spec/language.md §16.1: one
     * overload per definition) and where */
    struct Constraint *origin;
    const char *origin_fn; /* the function whose body holds `origin` */
    int overload;          /* OVL_*; 0 until a copy is solved */
    Pos overload_pos;
};

/* C_FIELD's op for a field of a record update (a plain field access has OP_ADD) */
#define OP_UPDATE_FIELD OP_SUB

enum { OVL_NONE, OVL_INT, OVL_FLOAT, OVL_STRING, OVL_LIST, OVL_MAP };

typedef struct Checker {
    Arena *a;
    Diags *d;
    Program *prog;
    TypeCtx *tc;
    PtrVec pending; /* Constraint* */
    int errors;
    PtrVec *sccs; /* per SCC id: FnDecl* members */
    int nsccs;
    FnDecl *cur_fn;
    /* type parameters in scope for annotations: names[i] stands for types[i] */
    const char **tnames;
    Type **ttypes;
    int ntenv;
    PtrVec handles; /* Expr* E_HANDLE whose body is being checked (innermost last) */
    /* scratch state per function, indexed by FnDecl.id, in `scratch` (never in the AST) */
    Arena *scratch;
    unsigned char *fn_state; /* CK_NEW, CK_IN_PROGRESS, CK_DONE: checked or not */
    int *tj_index, *tj_low;  /* Tarjan's numbering; 0: not visited yet */
    bool *tj_onstack;
    unsigned char *alias_state; /* per TypeDecl.id: alias expansion, CK_* */
} Checker;

enum { CK_NEW = 0, CK_IN_PROGRESS = 1, CK_DONE = 2 };

static inline void error(Checker *c, Pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void error(Checker *c, Pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(c->d, pos, fmt, ap);
    va_end(ap);
    c->errors++;
}

static inline char *show(Checker *c, Type *t) {
    return ty_show(c->a, t);
}

static inline void poison(Checker *c, Type *t) {
    t = ty_find(t);
    if (t->kind == TY_VAR && !t->generic) t->link = c->tc->t_poison;
}

typedef struct InstMap {
    Type **from, **to;
    int n;
} InstMap;

/* check_constraints.c */
Constraint *add_constraint_named(Checker *c, CKind kind, BinOp op, Type *a, Type *b, Type *res,
                                 Pos pos, const char *via, const char *name);
Constraint *add_constraint(Checker *c, CKind kind, BinOp op, Type *a, Type *b, Type *res, Pos pos,
                           const char *via);
void solve_forced(Checker *c, int min_level);
void generalise(Checker *c, PtrVec *members, int outer);
Type *inst_type(Checker *c, Type *t, InstMap *m, int depth);
void ensure_checked(Checker *c, FnDecl *f);

/* check_types.c */
TypeDecl *find_tdecl(Checker *c, const char *name);
const char *decl_name(void *decl);
bool is_record_type(Type *t);
Type *inst_decl(Checker *c, Type **pvars, int n, Type **args, Type *t);
Variant *positional_record(Type *t);
Type *inst_field(Checker *c, Type *t, const char *name, int *slot);
Type *fresh_named(Checker *c, TypeDecl *td);
Type *make_anon_record(Checker *c, int n, const char **names, Type **types, int *slots);
Type *convert_type(Checker *c, TypeExpr *te);
void prepare_decls(Checker *c);
Type *op_type(Checker *c, EffectDecl *ed, int opi, Type **inst);
Type **fresh_inst(Checker *c, int n);

/* check_expr.c */
/* docs/spec/language.md §4.1: unify `actual` (the type of *slot) with `expected`, except that
 * where `expected` is `any` a value of another type is erased (*slot becomes an E_ERASE of
 * it; an anonymous record is reported). False on a mismatch, which the caller reports. */
bool coerce(Checker *c, Expr **slot, Type *actual, Type *expected);
/* Report "cannot recover `T` from an erased `any`" when `actual` is `any` and `expected` is
 * another type; false (nothing reported) otherwise. */
bool recover_error(Checker *c, Pos pos, Type *actual, Type *expected);
/* check_expr of *slot where a value of type `expected` (NULL: unknown) is wanted; a list
 * literal where a `List<any>` is expected has its elements erased whatever their types
 * (§4.1). */
Type *check_expected(Checker *c, Expr **slot, Type *expected);
bool expect_type(Checker *c, Expr *e, Type *actual, Type *expected, const char *what);
Type *check_expr(Checker *c, Expr *e);
void check_stmt(Checker *c, Stmt *s, Type **value);

/* check_builtins.c */
const char *builtin_sig(Builtin b);
Type *builtin_type(Checker *c, Builtin b);
Type *apply_fn_type(Checker *c, Expr *e, Type *ft, Type **at, const char *who);
Type *check_builtin_call(Checker *c, Expr *e, Builtin b);
bool reorder_named(Checker *c, Expr *e, const char **pnames, int np, const char *fname);

/* check_patterns.c */
Type *check_match(Checker *c, Expr *e);

/* check.c */
void check_scc(Checker *c, int id);

#pragma GCC visibility pop

#endif
