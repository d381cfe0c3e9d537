/*
 * alloc.c — the post-processor's error strings and its never-NULL allocation helpers
 * (docs/ARCHITECTURE.md "House conventions": one out-of-memory policy per layer; here, print
 * `osprey: out of memory` and abort).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

void ospprof_seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static _Noreturn void out_of_memory(void) {
    fputs("osprey: out of memory\n", stderr);
    abort();
}

void *ospprof_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory();
    return q;
}

void *ospprof_xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) out_of_memory();
    return p;
}

char *ospprof_xstrndup(const char *s, size_t n) {
    char *c = ospprof_xrealloc(NULL, n + 1);
    memcpy(c, s, n);
    c[n] = 0;
    return c;
}

char *ospprof_xstrdup(const char *s) {
    return ospprof_xstrndup(s, strlen(s));
}
