/* xalloc.c — see xalloc.h. */
#include "xalloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process.h"

_Noreturn void drv_out_of_memory(void) {
    fputs("osprey: error: out of memory\n", stderr);
    proc_exit_cleaned(1);
}

void *drv_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) drv_out_of_memory();
    return p;
}

void *drv_xcalloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) drv_out_of_memory();
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) drv_out_of_memory();
    return p;
}

void *drv_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) drv_out_of_memory();
    return q;
}

char *drv_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = drv_xmalloc(n);
    memcpy(c, s, n);
    return c;
}

char *drv_xasprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) drv_out_of_memory(); /* only EOVERFLOW is possible: a result over INT_MAX */
    char *s = drv_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}
