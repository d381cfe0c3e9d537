/*
 * util.h — arena allocation, growable arrays and diagnostics for the front end.
 *
 * Every front-end structure (tokens, AST, types) lives in one arena owned by the
 * compilation (osp_program); freeing the arena frees everything at once.
 */
#ifndef OSP_FE_UTIL_H
#define OSP_FE_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A source position: 1-based line and column (columns count bytes). */
typedef struct Pos {
    int line;
    int col;
} Pos;

/* Bump allocator. Allocations are zeroed and 16-byte aligned; aborts on exhaustion. */
typedef struct Arena Arena;
Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
/* printf into the arena; returns a NUL-terminated string owned by the arena. */
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Growable array of pointers, storage in an arena. */
typedef struct PtrVec {
    void **items;
    int len;
    int cap;
} PtrVec;
void vec_push(Arena *a, PtrVec *v, void *item);

/* Diagnostics: collected, then printed sorted by position as
 * `path:line:col: error: message`, the source line and a caret. */
typedef struct Diag {
    Pos pos;
    char *msg;
    int seq;
    bool warning; /* `warning:` instead of `error:`; not counted in Diags.count */
} Diag;

typedef struct Diags {
    Arena *arena;
    const char *path; /* as given on the command line */
    const char *src;  /* whole source text */
    size_t src_len;
    PtrVec items;  /* Diag* */
    int count;     /* errors (warnings are not counted) */
    bool overflow; /* more than OSP_MAX_ERRORS were reported */
} Diags;

#define OSP_MAX_ERRORS 50

void diag_error(Diags *d, Pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A warning (docs/spec/language.md: `path:line:col: warning: message`): printed with the
 * errors, in position order, but it does not stop compilation (Diags.count is unchanged). */
void diag_warning(Diags *d, Pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_verror(Diags *d, Pos pos, const char *fmt, va_list ap);
/* Print all collected diagnostics to `out`, sorted by position. */
void diag_print(Diags *d, FILE *out);

#endif
