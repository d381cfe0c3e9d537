/*
 * Erased values (docs/spec/language.md §4.1): boxing, the structural tests of §7.1 and the
 * rendering of §8. The boxes and their shape descriptors are laid out by generated code
 * (osprey_rt.h); nothing here knows how records or unions are laid out before erasure.
 */
#include "rt_internal.h"

#include <string.h>

osp_any *osp_any_new(const osp_shape *shape, osp_word word) {
    osp_any *v = osp_gc_alloc(sizeof *v);
    v->shape = shape;
    v->word = word;
    return v;
}

int64_t osp_any_row_size(const osp_any *v) {
    if (v == NULL || v->shape->kind != OSP_SHAPE_RECORD) return -1;
    return v->shape->nfields;
}

const osp_any *osp_any_field(const osp_any *v, const char *name) {
    if (v == NULL || v->shape->kind != OSP_SHAPE_RECORD) return NULL;
    const osp_any *const *fields = (const osp_any *const *)(uintptr_t)v->word;
    for (int64_t i = 0; i < v->shape->nfields; i++)
        if (strcmp(v->shape->fields[i], name) == 0) return fields[i];
    return NULL;
}

/* A growing text (on the Osprey heap). */
typedef struct Text {
    char *p;
    size_t len, cap;
} Text;

static void put(Text *t, const char *s) {
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->len + n + 1) {
            if (cap > SIZE_MAX / 2) osp_fatal_oom();
            cap *= 2;
        }
        char *p = osp_gc_alloc_atomic(cap);
        if (t->len) memcpy(p, t->p, t->len);
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n + 1);
    t->len += n;
}

/* Rendering walks an explicit stack of work (on the Osprey heap, so the collector sees the
 * values it holds): a value nested 100,000 deep renders without deep C recursion. Each item
 * is a value to render or, when `v` is NULL, a literal to append. */
typedef struct Work {
    const osp_any *v;
    const char *s;
} Work;

typedef struct Stack {
    Work *items;
    size_t len, cap;
} Stack;

static void push(Stack *st, const osp_any *v, const char *s) {
    if (st->len == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof(Work)) osp_fatal_oom();
        Work *items = osp_gc_alloc(cap * sizeof(Work));
        if (st->len) memcpy(items, st->items, st->len * sizeof(Work));
        st->items = items;
        st->cap = cap;
    }
    st->items[st->len++] = (Work){v, s};
}

/* The fields of a record or union value, `{ f: r, g: r }`, ` { f: r }` or `(r, r)`: pushed in
 * reverse, so they come off the stack in order. */
static void push_fields(Stack *st, const osp_any *v, bool record) {
    const osp_shape *s = v->shape;
    const osp_any *const *fields = (const osp_any *const *)(uintptr_t)v->word;
    bool positional = s->fields == NULL;
    push(st, NULL, positional ? ")" : " }");
    for (int64_t i = s->nfields - 1; i >= 0; i--) {
        push(st, fields[i], NULL);
        if (!positional) {
            push(st, NULL, ": ");
            push(st, NULL, s->fields[i]);
        }
        if (i) push(st, NULL, ", ");
    }
    push(st, NULL, positional ? "(" : record ? "{ " : " { ");
}

static void show(Text *t, const osp_any *root) {
    Stack st = {0};
    push(&st, root, NULL);
    while (st.len) {
        Work w = st.items[--st.len];
        const osp_any *v = w.v;
        if (v == NULL) {
            put(t, w.s);
            continue;
        }
        switch (v->shape->kind) {
        case OSP_SHAPE_INT: put(t, osp_show_int((int64_t)v->word)); break;
        case OSP_SHAPE_FLOAT: {
            double d;
            memcpy(&d, &v->word, sizeof d);
            put(t, osp_show_float(d));
            break;
        }
        case OSP_SHAPE_BOOL: put(t, v->word ? "true" : "false"); break;
        case OSP_SHAPE_STRING: put(t, (const char *)(uintptr_t)v->word); break;
        case OSP_SHAPE_UNIT: put(t, "0"); break;
        case OSP_SHAPE_SUCCESS:
            put(t, "Success(");
            push(&st, NULL, ")");
            push(&st, (const osp_any *)(uintptr_t)v->word, NULL);
            break;
        case OSP_SHAPE_ERROR:
            if (v->word == 0) {
                put(t, "Error");
                break;
            }
            put(t, "Error(");
            put(t, (const char *)(uintptr_t)v->word);
            put(t, ")");
            break;
        case OSP_SHAPE_RECORD: push_fields(&st, v, true); break;
        case OSP_SHAPE_VARIANT:
            put(t, v->shape->name);
            if (v->shape->nfields > 0) push_fields(&st, v, false);
            break;
        case OSP_SHAPE_LIST: put(t, "<list>"); break;
        case OSP_SHAPE_MAP: put(t, "<map>"); break;
        case OSP_SHAPE_GPU: put(t, "<gpu>"); break;
        default: put(t, "<handle>"); break;
        }
    }
    /* keep the root reachable until the walk is done */
    __asm__ volatile("" : : "r"(root) : "memory");
}

const char *osp_any_show_test(const osp_any *v) {
    if (v != NULL && v->shape->kind == OSP_SHAPE_SUCCESS)
        return osp_any_show((const osp_any *)(uintptr_t)v->word);
    return osp_any_show(v);
}

const char *osp_any_show(const osp_any *v) {
    Text t = {0};
    put(&t, "");
    show(&t, v);
    return t.p;
}
