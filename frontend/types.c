/* types.c — see types.h. */
#include "types.h"

#include <string.h>

static Type *mk(TypeCtx *tc, TyKind k) {
    Type *t = arena_alloc(tc->arena, sizeof *t);
    t->kind = k;
    return t;
}

void types_init(TypeCtx *tc, Arena *a) {
    memset(tc, 0, sizeof *tc);
    tc->arena = a;
    tc->level = 1;
    tc->t_int = mk(tc, TY_INT);
    tc->t_float = mk(tc, TY_FLOAT);
    tc->t_bool = mk(tc, TY_BOOL);
    tc->t_string = mk(tc, TY_STRING);
    tc->t_unit = mk(tc, TY_UNIT);
    tc->t_matherror = mk(tc, TY_MATHERROR);
    tc->t_errort = mk(tc, TY_ERRORT);
    tc->t_poison = mk(tc, TY_POISON);
    tc->t_ptr = mk(tc, TY_PTR);
    tc->t_any = mk(tc, TY_ANY);
}

Type *ty_var(TypeCtx *tc) {
    Type *t = mk(tc, TY_VAR);
    t->id = ++tc->next_var;
    t->level = tc->level;
    return t;
}

Type *ty_con(TypeCtx *tc, TyKind k, int nargs, Type **args) {
    Type *t = mk(tc, k);
    t->nargs = nargs;
    if (nargs) {
        t->args = arena_alloc(tc->arena, sizeof(Type *) * (size_t)nargs);
        memcpy(t->args, args, sizeof(Type *) * (size_t)nargs);
    }
    return t;
}

Type *ty_con1(TypeCtx *tc, TyKind k, Type *a) {
    return ty_con(tc, k, 1, &a);
}

Type *ty_result(TypeCtx *tc, Type *payload, Type *err) {
    Type *args[2] = {payload, err};
    return ty_con(tc, TY_RESULT, 2, args);
}

Type *ty_fn(TypeCtx *tc, int nparams, Type **params, Type *ret) {
    Type *t = ty_con(tc, TY_FN, nparams, params);
    t->ret = ret;
    t->eff = arena_alloc(tc->arena, sizeof(EffSet));
    return t;
}

Type *ty_rebuild(TypeCtx *tc, Type *t, Type **args, Type *ret) {
    Type *n = ty_con(tc, t->kind, t->nargs, args);
    n->ret = ret;
    n->decl = t->decl;
    n->fields = t->fields;
    n->eff = t->eff;
    return n;
}

Type *ty_rigid(TypeCtx *tc, const char *name) {
    Type *t = ty_var(tc);
    t->rigid = true;
    t->name = name;
    return t;
}

static const char *no_decl_name(void *decl) {
    (void)decl;
    return "?";
}
const char *(*ty_decl_name)(void *decl) = no_decl_name;

EffSet *eff_find(EffSet *s) {
    if (!s) return NULL;
    EffSet *r = s;
    while (r->link) r = r->link;
    while (s->link && s->link != r) {
        EffSet *n = s->link;
        s->link = r;
        s = n;
    }
    return r;
}

static void eff_union(EffSet *a, EffSet *b) {
    a = eff_find(a);
    b = eff_find(b);
    if (!a || !b || a == b) return;
    for (int i = 0; i < a->items.len; i++) {
        /* items are only added after inference; nothing to move here in practice */
        (void)i;
    }
    a->link = b;
}

Type *ty_find(Type *t) {
    Type *r = t;
    while (r->kind == TY_VAR && r->link) r = r->link;
    while (t->kind == TY_VAR && t->link && t->link != r) {
        Type *n = t->link;
        t->link = r;
        t = n;
    }
    return r;
}

/* Occurs check and level adjustment. Returns false if `v` occurs in `t`. A node already
 * visited by this walk (stamp `mark`) holds no `v` and has had its levels adjusted. */
static bool occurs_adjust(Type *v, Type *t, int level, int depth, unsigned mark) {
    t = ty_find(t);
    if (depth > 10000) return false;
    if (t == v) return false;
    if (t->kind == TY_VAR) {
        if (!t->generic && t->level > level) t->level = level;
        return true;
    }
    if (t->occurs_mark == mark) return true;
    t->occurs_mark = mark;
    for (int i = 0; i < t->nargs; i++)
        if (!occurs_adjust(v, t->args[i], level, depth + 1, mark)) return false;
    if (t->ret && !occurs_adjust(v, t->ret, level, depth + 1, mark)) return false;
    return true;
}

static unsigned unify_walk; /* the current ty_unify call (stamps Type.unify_mark) */

static bool unify_rec(TypeCtx *tc, Type *a, Type *b, int depth) {
    a = ty_find(a);
    b = ty_find(b);
    if (a == b) return true;
    if (depth > 10000) return false;
    if (a->kind == TY_POISON || b->kind == TY_POISON) return true;
    /* A rigid variable (explicit type parameter) binds nothing: only a flexible variable
     * may be bound to it. */
    if (b->kind == TY_VAR && b->rigid && !b->generic) {
        Type *t = a;
        a = b;
        b = t;
    }
    if (a->kind == TY_VAR && a->rigid && !a->generic) {
        if (b->kind == TY_VAR && !b->generic && !b->rigid) {
            if (a->level > b->level) a->level = b->level;
            b->link = a;
            return true;
        }
        return false;
    }
    if (a->kind == TY_VAR && !a->generic) {
        if (b->kind == TY_VAR && !b->generic) {
            if (b->level > a->level) b->level = a->level;
            b->hint |= a->hint;
            a->link = b;
            return true;
        }
        static unsigned occurs_walks;
        if (++occurs_walks == 0) occurs_walks = 1; /* 0: never visited */
        if (!occurs_adjust(a, b, a->level, 0, occurs_walks)) return false;
        a->link = b;
        return true;
    }
    if (b->kind == TY_VAR && !b->generic) return unify_rec(tc, b, a, depth);
    if (a->kind != b->kind || a->nargs != b->nargs) return false;
    if (a->kind == TY_NAMED && a->decl != b->decl) return false;
    /* a pair met again in this walk (shared nodes of a DAG) is unified, or being unified */
    if (a->unify_mark == unify_walk && a->unify_partner == b) return true;
    a->unify_mark = unify_walk;
    a->unify_partner = b;
    if (a->kind == TY_RECORD) {
        for (int i = 0; i < a->nargs; i++)
            if (strcmp(a->fields[i], b->fields[i]) != 0) return false;
    }
    for (int i = 0; i < a->nargs; i++)
        if (!unify_rec(tc, a->args[i], b->args[i], depth + 1)) return false;
    if (a->ret || b->ret) {
        if (!a->ret || !b->ret) return false;
        if (!unify_rec(tc, a->ret, b->ret, depth + 1)) return false;
    }
    if (a->kind == TY_FN) eff_union(a->eff, b->eff);
    return true;
}

bool ty_unify(TypeCtx *tc, Type *a, Type *b) {
    if (++unify_walk == 0) unify_walk = 1; /* 0: never visited */
    return unify_rec(tc, a, b, 0);
}

typedef struct ShowBuf {
    Arena *a;
    char *p;
    size_t len, cap;
    int vars[26];
    int nvars;
    bool cut; /* the rendering was cut short */
} ShowBuf;

static void sb_puts(ShowBuf *b, const char *s) {
    if (b->cut) return; /* nothing after the `...` of a cut rendering */
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap : 64);
        while (cap < b->len + n + 1) cap *= 2;
        char *p = arena_alloc(b->a, cap);
        if (b->len) memcpy(p, b->p, b->len);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

/* A diagnostic shows at most about this many bytes of one type: a type is a DAG, and
 * `Pair<Pair<…>, Pair<…>>` nested n deep is n nodes but renders in 2^n bytes. */
#define SHOW_MAX_BYTES 1000

static void show_rec(ShowBuf *b, Type *t, int depth) {
    t = ty_find(t);
    if (b->cut) return;
    if (b->len > SHOW_MAX_BYTES) {
        sb_puts(b, "...");
        b->cut = true;
        return;
    }
    if (depth > 40) {
        sb_puts(b, "...");
        return;
    }
    switch (t->kind) {
    case TY_VAR: {
        if (t->rigid && t->name) {
            sb_puts(b, t->name);
            return;
        }
        int k = -1;
        for (int i = 0; i < b->nvars; i++)
            if (b->vars[i] == t->id) k = i;
        if (k < 0 && b->nvars < 26) {
            k = b->nvars;
            b->vars[b->nvars++] = t->id;
        }
        char s[4] = {'\'', (char)('a' + (k < 0 ? 25 : k)), 0, 0};
        sb_puts(b, s);
        return;
    }
    case TY_INT: sb_puts(b, "int"); return;
    case TY_FLOAT: sb_puts(b, "float"); return;
    case TY_BOOL: sb_puts(b, "bool"); return;
    case TY_STRING: sb_puts(b, "string"); return;
    case TY_UNIT: sb_puts(b, "Unit"); return;
    case TY_PTR: sb_puts(b, "Ptr"); return;
    case TY_ANY: sb_puts(b, "any"); return;
    case TY_MATHERROR: sb_puts(b, "MathError"); return;
    case TY_ERRORT: sb_puts(b, "Error"); return;
    case TY_POISON: sb_puts(b, "<error>"); return;
    case TY_FN:
        sb_puts(b, "(");
        for (int i = 0; i < t->nargs; i++) {
            if (i) sb_puts(b, ", ");
            show_rec(b, t->args[i], depth + 1);
        }
        sb_puts(b, ") -> ");
        show_rec(b, t->ret, depth + 1);
        return;
    case TY_RECORD:
        sb_puts(b, "{ ");
        for (int i = 0; i < t->nargs; i++) {
            if (i) sb_puts(b, ", ");
            sb_puts(b, t->fields[i]);
            sb_puts(b, ": ");
            show_rec(b, t->args[i], depth + 1);
        }
        sb_puts(b, " }");
        return;
    default: {
        const char *name = t->kind == TY_RESULT  ? "Result"
                           : t->kind == TY_FIBER ? "Fiber"
                           : t->kind == TY_ITER  ? "Iterator"
                           : t->kind == TY_LIST  ? "List"
                           : t->kind == TY_MAP   ? "Map"
                           : t->kind == TY_NAMED ? ty_decl_name(t->decl)
                           : t->kind == TY_GPU   ? "GpuBuffer"
                                                 : "Channel";
        sb_puts(b, name);
        if (t->nargs == 0) return;
        sb_puts(b, "<");
        for (int i = 0; i < t->nargs; i++) {
            if (i) sb_puts(b, ", ");
            show_rec(b, t->args[i], depth + 1);
        }
        sb_puts(b, ">");
        return;
    }
    }
}

char *ty_show(Arena *a, Type *t) {
    ShowBuf b = {.a = a};
    show_rec(&b, t, 0);
    return b.p ? b.p : arena_strdup(a, "");
}

bool ty_is_ground(Type *t) {
    t = ty_find(t);
    if (t->kind == TY_VAR) return false;
    for (int i = 0; i < t->nargs; i++)
        if (!ty_is_ground(t->args[i])) return false;
    return !t->ret || ty_is_ground(t->ret);
}
