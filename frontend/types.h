/*
 * types.h — Osprey types for Hindley–Milner inference (docs/spec/language.md §4).
 *
 * A type is a constructor with arguments or a type variable. Variables are
 * union-find nodes (`link`), carry a binding level for generalisation (Rémy's
 * levels) and become `generic` when generalised into a function's type scheme.
 * Tier 2 constructors (List, Map, Channel, named records/unions) are declared so
 * that the representation does not change when they are implemented.
 */
#ifndef OSP_FE_TYPES_H
#define OSP_FE_TYPES_H

#include "util.h"

typedef enum TyKind {
    TY_VAR,
    TY_INT,
    TY_FLOAT,
    TY_BOOL,
    TY_STRING,
    TY_UNIT,
    TY_MATHERROR,
    TY_ERRORT,  /* the two error types; both a message string at run time */
    TY_RESULT,  /* args[0] payload, args[1] error type */
    TY_FIBER,   /* args[0] */
    TY_ITER,    /* args[0] element */
    TY_FN,      /* args[0..nargs) params, ret */
    TY_LIST,    /* args[0] element */
    TY_MAP,     /* args[0] key (always string), args[1] value */
    TY_CHANNEL, /* args[0] */
    TY_NAMED,   /* a declared record or union: decl, args = type arguments */
    TY_RECORD,  /* an anonymous record: fields[i] has type args[i], names sorted */
    TY_PTR,     /* an opaque C pointer (docs/spec/language.md §3.5) */
    TY_POISON,  /* the type of an erroneous expression; unifies with anything */
    TY_ANY,     /* an erased value that remembers its shape (docs/spec/language.md §4.1) */
    TY_GPU      /* GpuBuffer<T>: args[0] element, int, float or bool (docs/spec/language.md §9.9) */
} TyKind;

/*
 * The effects a function value may perform when called (a union-find node: unifying two
 * function types merges their sets). Filled in by the effect pass (effects.c) after
 * inference; `items` holds EffKey* there.
 */
typedef struct EffSet {
    struct EffSet *link;
    PtrVec items;
} EffSet;

EffSet *eff_find(EffSet *s);

/* Hint for defaulting an unconstrained variable at the end of inference. */
enum { HINT_NONE = 0, HINT_ERROR = 1 };

typedef struct Type {
    TyKind kind;
    int nargs;
    struct Type **args;
    struct Type *ret;
    void *decl;          /* TY_NAMED: the TypeDecl */
    const char **fields; /* TY_RECORD: field names, sorted by name */
    EffSet *eff;         /* TY_FN */
    /* TY_VAR */
    struct Type *link;
    int id;
    int level;
    bool generic;
    bool rigid;       /* an explicit type parameter `<T>`: unifies only with itself */
    const char *name; /* its name, for diagnostics */
    unsigned char hint;
    /* set by the checker's last pass on every type the program holds: not a linked variable,
     * and its arguments and result (transitively) are resolved too */
    bool resolved;
    /* walk stamps (a type is a DAG: a walk that visits a shared node once stays linear):
     * occurs_adjust's, default_type's (frontend/check.c) */
    unsigned occurs_mark, default_mark;
    /* collect_vars' and mentions' (frontend/check_constraints.c; they never nest) */
    unsigned leaf_mark;
    /* unify_rec: this node was (being) unified with `unify_partner` in walk `unify_mark` */
    unsigned unify_mark;
    struct Type *unify_partner;
    /* codegen: 1 when no variable occurs in the (resolved) type, 2 when one does, 0 unknown */
    unsigned char var_free;
    /* codegen: a resolved type found structurally equal to this one (type_eq's memo) */
    struct Type *eq_partner;
} Type;

typedef struct TypeCtx {
    Arena *arena;
    int next_var;
    int level;
    Type *t_int, *t_float, *t_bool, *t_string, *t_unit, *t_matherror, *t_errort, *t_poison, *t_ptr,
        *t_any;
} TypeCtx;

void types_init(TypeCtx *tc, Arena *a);
Type *ty_var(TypeCtx *tc);
Type *ty_con(TypeCtx *tc, TyKind k, int nargs, Type **args);
Type *ty_con1(TypeCtx *tc, TyKind k, Type *a);
Type *ty_result(TypeCtx *tc, Type *payload, Type *err);
Type *ty_fn(TypeCtx *tc, int nparams, Type **params, Type *ret);
/* A type with the same constructor as `t` (kind, decl, fields, effect set) and new arguments. */
Type *ty_rebuild(TypeCtx *tc, Type *t, Type **args, Type *ret);
/* A rigid variable for explicit type parameter `name`. */
Type *ty_rigid(TypeCtx *tc, const char *name);
/* Name of a declared type (TY_NAMED), for diagnostics. Set by the front end. */
extern const char *(*ty_decl_name)(void *decl);

/* Follow variable links; returns the representative. */
Type *ty_find(Type *t);

/* Unify; returns false on mismatch (nothing is reported). Occurs check included. */
bool ty_unify(TypeCtx *tc, Type *a, Type *b);

/* Render a type for a diagnostic ("Result<int, MathError>", "(int) -> int", "'a"). */
char *ty_show(Arena *a, Type *t);

/* True when `t` (after find) contains no unbound variable. */
bool ty_is_ground(Type *t);

#endif
