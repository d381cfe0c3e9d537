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

char *arena_strdup(Arena *a, const char *s) {
    return arena_strndup(a, s, strlen(s));
}

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

void diag_warning(Diags *d, Pos pos, const char *fmt, ...) {
    if (d->items.len >= OSP_MAX_ERRORS) return;
    va_list ap;
    va_start(ap, fmt);
    Diag *g = arena_alloc(d->arena, sizeof *g);
    g->pos = pos;
    g->msg = arena_vprintf(d->arena, fmt, ap);
    g->seq = d->items.len;
    g->warning = true;
    vec_push(d->arena, &d->items, g);
    va_end(ap);
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

/* Longest source line echoed whole, and how much of a longer one is kept before the
 * caret (bytes). A longer line is shown as a window of DIAG_LINE_MAX bytes with `…`
 * marking each cut end, so a generated single-line source of megabytes prints one
 * screen line per error. */
#define DIAG_LINE_MAX 200
#define DIAG_BEFORE   100

static bool utf8_cont(unsigned char c) {
    return (c & 0xC0) == 0x80;
}

/* Length (2..4) of the well-formed UTF-8 sequence of a non-ASCII code point at s[0..n) —
 * no overlong form, no surrogate, nothing past U+10FFFF — with the code point in *cp; 0 when
 * the bytes there are not one. */
static size_t utf8_seq(const unsigned char *s, size_t n, unsigned *cp) {
    unsigned c = s[0];
    size_t len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    unsigned v = c & (0x7Fu >> len);
    for (size_t k = 1; k < len; k++) {
        if (!utf8_cont(s[k])) return 0;
        v = (v << 6) | (s[k] & 0x3Fu);
    }
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

/* Terminal columns of the code point at s[0..n) (n >= 1): 2 for East Asian wide and
 * fullwidth characters and emoji, 0 for combining marks, else 1 (also for a byte that does
 * not start well-formed UTF-8, echoed as one U+FFFD). `*used` gets its length. */
static int cp_width(const unsigned char *s, size_t n, size_t *used) {
    unsigned cp = 0;
    size_t len = s[0] < 0x80 ? 0 : utf8_seq(s, n, &cp);
    *used = len ? len : 1;
    if (len == 0) return 1;
    if ((cp >= 0x300 && cp <= 0x36F) || (cp >= 0x200B && cp <= 0x200F) || cp == 0xFEFF) return 0;
    if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
        (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
        (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
        (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
        (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD))
        return 2;
    return 1;
}

static bool is_control(unsigned char c) {
    return c < 0x20 || c == 0x7F;
}

/* Echo text[0..n) for a terminal: an ASCII control byte (other than a tab, kept when
 * `tabs`) or a C1 control as `?`, a NUL as a space when `tabs` (a source line), and each byte
 * that does not start well-formed UTF-8 as U+FFFD — the text is untrusted and an ESC or CR in
 * it must not drive the terminal or break the line. */
static void print_safe(FILE *out, const unsigned char *s, size_t n, bool tabs) {
    for (size_t k = 0; k < n;) {
        unsigned c = s[k];
        if (c < 0x80) {
            fputc(tabs && c == 0      ? ' '
                  : tabs && c == '\t' ? '\t'
                  : is_control(c)     ? '?'
                                      : (int)c,
                  out);
            k++;
            continue;
        }
        unsigned cp = 0;
        size_t len = utf8_seq(s + k, n - k, &cp);
        if (len == 0) {
            fputs("\xEF\xBF\xBD", out); /* U+FFFD */
            k++;
        } else {
            if (cp <= 0x9F)
                fputc('?', out);
            else
                fwrite(s + k, 1, len, out);
            k += len;
        }
    }
}

/* Print a path or message with its control bytes shown as `?` (and invalid UTF-8 as
 * U+FFFD), so a file name (or a quoted directive) holding a newline or an ESC still gives
 * one plain diagnostic line. */
static void print_plain(FILE *out, const char *text) {
    print_safe(out, (const unsigned char *)text, strlen(text), false);
}

/* Echo the source line `ls` (`len` bytes) and a caret under byte column `col`. */
static void print_source_line(FILE *out, const char *ls, size_t len, int col) {
    const unsigned char *s = (const unsigned char *)ls;
    size_t caret = col > 1 ? (size_t)col - 1 : 0;
    if (caret > len) caret = len;
    size_t from = 0, to = len;
    if (len > DIAG_LINE_MAX) {
        from = caret > DIAG_BEFORE ? caret - DIAG_BEFORE : 0;
        to = from + DIAG_LINE_MAX;
        if (to > len) {
            to = len;
            from = len - DIAG_LINE_MAX;
        }
        while (from > 0 && from < caret && utf8_cont(s[from])) from++; /* cut between characters */
        while (to < len && to > caret && utf8_cont(s[to])) to--;
    }
    static const char ellipsis[] = "\xE2\x80\xA6"; /* … */
    if (from > 0) fputs(ellipsis, out);
    print_safe(out, s + from, to - from, true);
    if (to < len) fputs(ellipsis, out);
    fputc('\n', out);
    if (from > 0) fputc(' ', out); /* under the `…` */
    for (size_t k = from; k < caret;) {
        if (s[k] == '\t') {
            fputc('\t', out);
            k++;
            continue;
        }
        size_t used = 1;
        int w = cp_width(s + k, caret - k, &used);
        for (int j = 0; j < w; j++) fputc(' ', out);
        k += used;
    }
    fputs("^\n", out);
}

void diag_print(Diags *d, FILE *out) {
    if (d->items.len > 1) qsort(d->items.items, (size_t)d->items.len, sizeof(void *), diag_cmp);
    for (int i = 0; i < d->items.len; i++) {
        Diag *g = d->items.items[i];
        if (i > 0) {
            Diag *prev = d->items.items[i - 1];
            if (prev->pos.line == g->pos.line && prev->pos.col == g->pos.col &&
                prev->warning == g->warning)
                continue; /* one error per position */
        }
        print_plain(out, d->path);
        fprintf(out, ":%d:%d: %s: ", g->pos.line, g->pos.col, g->warning ? "warning" : "error");
        print_plain(out, g->msg);
        fputc('\n', out);
        size_t len = 0;
        const char *ls = line_start(d, g->pos.line, &len);
        if (ls) print_source_line(out, ls, len, g->pos.col);
    }
    if (d->overflow) {
        print_plain(out, d->path);
        fprintf(out, ": error: too many errors; only the first %d are shown\n", d->items.len);
    }
}
