/*
 * codegen_internal.h — what the parts of the code generator share (codegen.h is the public face).
 *
 * codegen.c          function instances and jobs, emission, osp_codegen
 * codegen_values.c   IR helpers, LLVM types, boxing, Results, rendering (§8)
 * codegen_expr.c     environment, expressions, calls, operators, statements
 * codegen_closures.c closures, captured environments, callees, spawn
 * codegen_extern.c   extern C functions (§3.5)
 * codegen_builtins.c iteration pipelines, built-ins as runtime calls (builtins.def)
 * codegen_data.c     records, variants, lists, maps
 * codegen_match.c    patterns and match
 * codegen_effects.c  effects (§12, §14.6)
 * codegen_gpu.c      GPU built-ins on the host (§9.9): chunk functions, parallel-safe kernels
 * codegen_own.c      where an old version of a value cannot be observed (updates in place)
 */
#ifndef OSP_CODEGEN_INTERNAL_H
#define OSP_CODEGEN_INTERNAL_H

#include <assert.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "inline_rt.h"
#include "osprey_rt.h"

/* The parts' shared functions are internal to the library: not exported from any image. */
#pragma GCC visibility push(hidden)

/*
 * `t` itself: the checker hands over a finished program whose types are all resolved
 * (check.h), and the types codegen builds from them are marked resolved too, so codegen
 * never follows a type variable's link. Asserts it (a type the checker's last pass missed).
 */
static inline Type *ty_rep(Type *t) {
    assert(t && t->resolved && !(t->kind == TY_VAR && t->link));
    return t;
}

/* ---- compile-time values ---- */

typedef enum CalleeKind {
    CAL_NONE,
    CAL_FN,
    CAL_BUILTIN,
    CAL_LAMBDA,
    CAL_CTOR,
    CAL_VALUE
} CalleeKind;
typedef struct Job Job;

/*
 * What a call calls: a function known at compile time (called directly) or a closure
 * value (CAL_VALUE, called through its code pointer). A closure is a heap block whose
 * word 0 is the code pointer `ret code(ptr closure, params...)` and whose words 1.. are
 * the captured values, boxed.
 */
typedef struct Callee {
    CalleeKind kind;
    FnDecl *fn;      /* CAL_FN */
    Type **targs;    /* CAL_FN: concrete type arguments (fn->nqvars) */
    Builtin builtin; /* CAL_BUILTIN */
    Expr *lambda;    /* CAL_LAMBDA */
    Job *encl;       /* CAL_LAMBDA: enclosing function instance (NULL: main) */
    LLVMValueRef
        env; /* CAL_LAMBDA: its closure (NULL when it captures nothing); CAL_VALUE: the closure */
    Variant *ctor; /* CAL_CTOR */
    Type *type;    /* CAL_VALUE / CAL_CTOR: the function's concrete type */
} Callee;

typedef struct Stage {
    bool is_filter;
    Callee cb;
    Type *in, *out;
    struct Stage *prev; /* the stage before this one (NULL: the first) */
} Stage;

/* A range pipeline whose bounds have been evaluated (compiled to one counted loop). Its
 * stages are a list from the last one back, shared with the pipelines it extends (a bound
 * iterator may be extended twice), so a pipeline may have any number of stages. */
typedef struct IterDesc {
    LLVMValueRef start, end;
    Stage *last;
    int nstages;
} IterDesc;

/* BIND_CELL: a `mut` binding; v points to its storage (a heap cell or a global). */
typedef enum BindKind { BIND_VALUE, BIND_CALLEE, BIND_ITER, BIND_CELL } BindKind;
typedef struct Binding {
    Sym *sym;
    BindKind kind;
    LLVMValueRef v;
    bool release_at_use; /* BIND_VALUE: a list released after its one use (codegen_own.c) */
    Callee callee;
    IterDesc *iter;
    struct Binding *next;
} Binding;

/*
 * JOB_ARM: a handler arm (plain: `ret f(ptr env, params...)`; resuming:
 * `i64 f(ptr env, ptr k)`); JOB_HBODY: the body of a handle with a resuming arm
 * (`i64 f(ptr env)`, run on a continuation thread); JOB_WRAP: the closure code of a
 * named function, built-in or constructor used as a value; JOB_GPU: the chunk function of a
 * GPU combinator (`void f(ptr ctx, i64 lo, i64 hi)`, codegen_gpu.c).
 */
typedef enum JobKind {
    JOB_FN,
    JOB_LAMBDA,
    JOB_SPAWN,
    JOB_ARM,
    JOB_HBODY,
    JOB_WRAP,
    JOB_GPU
} JobKind;

/* One machine function to emit: a function instance, a lambda or a spawn thunk. */
struct Job {
    JobKind kind;
    FnDecl *fn;           /* JOB_FN; JOB_WRAP of a function */
    Type **targs;         /* JOB_FN */
    Expr *expr;           /* JOB_LAMBDA / JOB_SPAWN; JOB_ARM / JOB_HBODY: the E_HANDLE */
    HandleArm *arm;       /* JOB_ARM */
    Job *encl;            /* lambda/spawn/arm/body: enclosing instance (NULL: main) */
    Binding *static_caps; /* compile-time bindings visible in the function */
    Callee wrapped;       /* JOB_WRAP */
    Type *wtype;          /* JOB_WRAP: the concrete function type; JOB_GPU: the kernel's */
    int line;             /* JOB_WRAP, JOB_GPU: line for its debug info */
    const char *name;
    LLVMValueRef llfn;
    LLVMTypeRef llty;
    bool emitted;
    Builtin gpu_op;           /* JOB_GPU: gpuMap, gpuZipWith or gpuFilter */
    LLVMValueRef gpu_closure; /* JOB_GPU: the kernel's closure when it is a constant, else NULL */
};

typedef struct FnState {
    LLVMValueRef fn;
    LLVMMetadataRef sp;
    Job *job;  /* NULL for the entry point */
    Job *inst; /* substitution context: the enclosing function instance (NULL: main) */
    Binding *env;
    LLVMBasicBlockRef entry;
    LLVMMetadataRef loc;
    LLVMValueRef cont_k; /* resuming arm: its continuation (ptr) */
    Type *handle_type;   /* resuming arm: the value type of its handle */
    /*
     * Self tail calls (JOB_FN): the function's body starts at `loop_head`, where one phi per
     * parameter (`loop_phis`) stands for it; a call of this same instance in tail position
     * adds its arguments to the phis and branches there, so iteration written as tail
     * recursion runs in constant stack at every optimisation level, whatever the body holds
     * (docs/compiler.md). `tail` is set by the parent for the expression it is about to
     * generate; gen() moves it into `at_tail` (and clears it) before generating anything.
     */
    LLVMBasicBlockRef loop_head;
    LLVMValueRef *loop_phis;
    LLVMValueRef *acc_state; /* per parameter: its osp_str_acc (str_param_appendable), or NULL */
    bool tail, at_tail;
} FnState;

typedef struct CG {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMDIBuilderRef dib;
    LLVMMetadataRef di_file, di_cu, di_fnty;
    const Program *prog; /* read only: codegen never writes to the front end's value */
    Arena *arena;        /* codegen's own, freed when osp_codegen returns */
    TypeCtx *tc;         /* &types */
    TypeCtx types;       /* the front end's base types; new types (instances) go in `arena` */
    const osp_cg_options *opts;
    LLVMTypeRef i1, i8, i32, i64, f64, ptr, voidt, rest, osp_result_t, eff_entry_t;
    PtrVec keys; /* interned effect-key strings: const char* then LLVMValueRef */
    PtrVec jobs;
    FnState *fs;
    LLVMAttributeRef fp_attr;
    LLVMValueRef str_integer_overflow, str_division_by_zero, str_zero, str_true, str_false,
        str_file;
    Binding *globals; /* file-scope bindings stored in LLVM globals: sym -> global */
    PtrVec erasers;   /* Type* then LLVMValueRef: the erasing function of a record or union */
    char *error;
} CG;

/* Emits the stages of `d` on the value *x of type *xt at the builder's position: a map stage
 * replaces both, a filter stage branches to `skip` when it rejects (the builder is left in
 * the block where the value passed every stage). */
void emit_stages(CG *g, IterDesc *d, LLVMValueRef *x, Type **xt, LLVMBasicBlockRef skip);

/* codegen_values.c */
LLVMValueRef ci64(CG *g, int64_t v);
LLVMValueRef ci32(CG *g, int v);
void set_loc_line(CG *g, int line, int col);
void restore_loc(CG *g, LLVMMetadataRef loc);
LLVMValueRef const_string(CG *g, const char *s, size_t len);
LLVMValueRef cstr(CG *g, const char *s);
LLVMValueRef rt_fn(CG *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int n,
                   LLVMTypeRef *out_ty);
LLVMValueRef call_rt(CG *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *pt, LLVMValueRef *args,
                     int n);
void add_zeroext(CG *g, LLVMValueRef fn_or_call, unsigned idx, bool is_call);
LLVMValueRef intrinsic(CG *g, const char *name, LLVMTypeRef *tys, int ntys, LLVMTypeRef *fnty);
LLVMValueRef entry_alloca(CG *g, LLVMTypeRef ty, const char *name);
LLVMBasicBlockRef new_block(CG *g, const char *name);
bool type_eq(Type *a, Type *b);
Type *rebuild_type(CG *g, Type *t, Type **args, Type *ret);
Type *subst(CG *g, Type *t, Job *inst);
Type *ety(CG *g, Expr *e);
Type *sty(CG *g, Type *t);
LLVMTypeRef llty(CG *g, Type *t);
LLVMValueRef unit_value(CG *g);
LLVMValueRef box(CG *g, LLVMValueRef v, Type *t);
LLVMValueRef unbox(CG *g, LLVMValueRef w, Type *t);
LLVMValueRef make_result(CG *g, LLVMValueRef is_err_i1, LLVMValueRef word);
LLVMValueRef gen_intdiv(CG *g, LLVMValueRef a, LLVMValueRef d);
LLVMValueRef render(CG *g, LLVMValueRef v, Type *t, bool bare);
void print_line(CG *g, LLVMValueRef s);
/* docs/spec/language.md §4.1: erase value `v` of concrete type `t` into a new `osp_any *`
 * (an `any` is returned as it is). */
LLVMValueRef erase_value(CG *g, LLVMValueRef v, Type *t);
/* A new list of the elements of list `xs` (element type `elem`), each erased (§9.4). */
LLVMValueRef erase_list(CG *g, LLVMValueRef xs, Type *elem);

/* codegen.c */
/* Start emitting helper function `fn` (no job, no substitution) into a fresh FnState that
 * becomes g->fs; the caller saves and restores g->fs and the builder's position. */
void begin_helper(CG *g, FnState *fs, LLVMValueRef fn, const char *name, int line);
bool targs_eq(Type **a, Type **b, int n);
const char *unique_name(CG *g, const char *base);
Job *fn_instance(CG *g, FnDecl *fn, Type **targs);
const char *encl_name(Job *encl);
LLVMTypeRef closure_fn_type(CG *g, Type *ft);
Job *lambda_job(CG *g, Expr *lam, Job *encl);

/* codegen_expr.c */
Binding *bind_sym(CG *g, Sym *s, BindKind k);
Binding *lookup(CG *g, Sym *s);
void internal_error(CG *g, const char *msg);
LLVMValueRef gen(CG *g, Expr *e);
void gen_stmt(CG *g, Stmt *s, LLVMValueRef *value);

/* codegen_closures.c */
LLVMValueRef gc_alloc(CG *g, int64_t bytes);
void store_word(CG *g, LLVMValueRef block, int i, LLVMValueRef w);
LLVMValueRef load_word(CG *g, LLVMValueRef block, int i, const char *name);
LLVMValueRef build_env(CG *g, Unit *u, LLVMValueRef code, bool by_ref_muts, Binding **statics);
void bind_captures(CG *g, Unit *u, LLVMValueRef env, Binding *statics, bool by_ref_muts);
LLVMValueRef callee_value(CG *g, Callee *c, Type *ft);
LLVMValueRef gen_closure(CG *g, Expr *lam);
Type **ident_targs(CG *g, Expr *id);
Callee callee_of(CG *g, Expr *e);
LLVMValueRef call_callee(CG *g, Callee *c, LLVMValueRef *args, Type **argt, int n);
LLVMValueRef gen_spawn(CG *g, Expr *e);

/* codegen_extern.c */
LLVMValueRef gen_extern_call(CG *g, FnDecl *f, LLVMValueRef *args);
LLVMValueRef extern_fn_pointer(CG *g, Expr *e, Type *ft);

/* codegen_builtins.c */
IterDesc *gen_iter(CG *g, Expr *e);
/* osp_list_release(xs): a list view nothing reads again (codegen_own.c proved it). */
void release_list(CG *g, LLVMValueRef xs);
LLVMValueRef str_eq(CG *g, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef call_sig(CG *g, const char *fn, const char *sig, LLVMValueRef *vals, Type **types);
LLVMValueRef gen_size(CG *g, LLVMValueRef v, Type *t);
LLVMValueRef builtin_values(CG *g, Builtin b, LLVMValueRef *v, Type **t);
LLVMValueRef gen_builtin_call(CG *g, Expr *e, Builtin b);

/* codegen_gpu.c */
LLVMValueRef gen_gpu_call(CG *g, Expr *e, Builtin b);
void gen_gpu_chunk(CG *g, Job *j);

/* codegen_data.c */
Type *subst_vars(CG *g, Type *t, Type **from, Type **to, int n);
Type *variant_field_type(CG *g, Type *t, Variant *v, int slot);
int record_slot(Type *t, const char *name);
LLVMValueRef build_variant(CG *g, Variant *v, LLVMValueRef *args, Type **argt, int n);
LLVMValueRef gen_record(CG *g, Expr *e);
LLVMValueRef gen_update(CG *g, Expr *e);
LLVMValueRef gen_list(CG *g, Expr *e);
/* "osp_list_new_scalar" for a list type whose elements are int, float or bool (never
 * pointers), else "osp_list_new": the runtime constructor for a list of type `list_t`. */
const char *list_new_fn(Type *list_t);
LLVMValueRef gen_maplit(CG *g, Expr *e);
LLVMValueRef gen_index(CG *g, Expr *e);

/* codegen_match.c */
LLVMValueRef gen_match(CG *g, Expr *e);

/* codegen_own.c */
/* Whether the fold step `cb` uses its accumulator (first parameter) linearly: only read before
 * one update (mapSet, mapRemove) whose result is the step's value, so the fold may keep the
 * accumulator as a transient map updated in place. False for a callee whose body is unknown. */
bool fold_step_linear(const Callee *cb);
/* Whether `e` is a call of a list built-in that returns a view nobody else holds (listReverse,
 * listPrepend, listConcat, listAppend). */
bool owned_list_temp(const Expr *e);
/* Whether argument `argi` of built-in `b` is a list the built-in only reads (it keeps nothing
 * of its view), so a view nobody else holds may be released after the call. */
bool list_taking_arg(Builtin b, int argi);
/* For the `let` at statement `i` of the block `block`: release its list after its one use
 * (OWN_AT_USE), at the end of the block (OWN_AT_END), or never (OWN_NONE). */
typedef enum OwnPlan { OWN_NONE, OWN_AT_USE, OWN_AT_END } OwnPlan;
OwnPlan own_let_plan(const Expr *block, int i);
/* Whether parameter `i` of `f` (a string in the instance being emitted) is only read —
 * compared, measured, printed, copied by `+` or an interpolation, outside any closure — so
 * that a self tail call may pass it on as `p + e` appended in place (osp_str_append_owned):
 * nothing else can hold the string the previous iteration built. */
bool str_param_appendable(const FnDecl *f, int i);
/* Whether argument `i` of the self tail call `call` is `p + e` (or `p + e1 + e2 …`, or an
 * interpolation `"${p}…"` of two or more parts) with `p` not read by the `e`s or by any other
 * argument (they run after or beside the appends), so it may append in place. */
bool str_append_arg(const Expr *call, int i, const Sym *p);
/* The first part of interpolation `e` that is not an empty string literal (the lexer puts
 * one before a leading `${…}`). */
int interp_first_part(const Expr *e);

/* codegen_effects.c */
Type **concrete_inst(CG *g, EffectDecl *d, Type **inst);
Type *eff_op_type(CG *g, EffectDecl *d, int opi, Type **inst);
LLVMValueRef gen_perform(CG *g, Expr *e);
LLVMValueRef gen_handle(CG *g, Expr *e);
LLVMValueRef gen_resume(CG *g, Expr *e);

#pragma GCC visibility pop

#endif
