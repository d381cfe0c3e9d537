/* util.c — arena, vectors and diagnostics for the front end (see util.h). */
#include "util.h"

#include <stdlib.h>
#include <string.h>

typedef struct Chunk {
    struct Chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
    Chunk *head;
};

Arena *arena_new(void) {
    Arena *a = calloc(1, sizeof *a);
    if (!a) {
        fputs("osprey: fatal: out of memory\n", stderr);
        abort();
    }
    return a;
}

void arena_free(Arena *a) {
    if (!a) return;
    Chunk *c = a->head;
    while (c) {
        Chunk *n = c->next;
        free(c);
        c = n;
    }
    free(a);
}

void *arena_alloc(Arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (size == 0) size = 16;
    Chunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        c = malloc(sizeof(Chunk) + cap);
        if (!c) {
            fputs("osprey: fatal: out of memory\n", stderr);
            abort();
        }
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *p = arena_alloc(a, n + 1);
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

static char *arena_vprintf(Arena *a, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) n = 0;
    char *p = arena_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *p = arena_vprintf(a, fmt, ap);
    va_end(ap);
    return p;
}

void vec_push(Arena *a, PtrVec *v, void *item) {
    if (v->len == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        void **items = arena_alloc(a, sizeof(void *) * (size_t)cap);
        if (v->len) memcpy(items, v->items, sizeof(void *) * (size_t)v->len);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->len++] = item;
}

void diag_verror(Diags *d, Pos pos, const char *fmt, va_list ap) {
    d->count++;
    if (d->items.len >= OSP_MAX_ERRORS) {
        d->overflow = true;
        return;
    }
    Diag *g = arena_alloc(d->arena, sizeof *g);
    g->pos = pos;
    g->msg = arena_vprintf(d->arena, fmt, ap);
    g->seq = d->items.len;
    vec_push(d->arena, &d->items, g);
}

void diag_error(Diags *d, Pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(d, pos, fmt, ap);
    va_end(ap);
}

static int diag_cmp(const void *x, const void *y) {
    const Diag *a = *(Diag *const *)x, *b = *(Diag *const *)y;
    if (a->pos.line != b->pos.line) return a->pos.line < b->pos.line ? -1 : 1;
    if (a->pos.col != b->pos.col) return a->pos.col < b->pos.col ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Find the start of 1-based line `line` in the source; NULL if out of range. */
static const char *line_start(const Diags *d, int line, size_t *len) {
    if (!d->src || line < 1) return NULL;
    const char *p = d->src, *end = d->src + d->src_len;
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return NULL;
        p = nl + 1;
    }
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    *len = (size_t)((nl ? nl : end) - p);
    if (*len && p[*len - 1] == '\r') (*len)--;
    return p;
}

void diag_print(Diags *d, FILE *out) {
    if (d->items.len > 1) qsort(d->items.items, (size_t)d->items.len, sizeof(void *), diag_cmp);
    for (int i = 0; i < d->items.len; i++) {
        Diag *g = d->items.items[i];
        if (i > 0) {
            Diag *prev = d->items.items[i - 1];
            if (prev->pos.line == g->pos.line && prev->pos.col == g->pos.col) continue; /* one error per position */
        }
        fprintf(out, "%s:%d:%d: error: %s\n", d->path, g->pos.line, g->pos.col, g->msg);
        size_t len = 0;
        const char *ls = line_start(d, g->pos.line, &len);
        if (!ls) continue;
        for (size_t k = 0; k < len; k++) {
            unsigned char c = (unsigned char)ls[k];
            fputc(c == 0 ? ' ' : c, out);
        }
        fputc('\n', out);
        for (int k = 0; k + 1 < g->pos.col && (size_t)k < len; k++) fputc(ls[k] == '\t' ? '\t' : ' ', out);
        fputs("^\n", out);
    }
    if (d->overflow) fprintf(out, "%s: error: too many errors (%d), stopping\n", d->path, d->count);
}
