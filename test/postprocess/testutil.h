/* testutil.h — small helpers shared by the postprocess unit tests (cmocka). */
#ifndef OSPPROF_TESTUTIL_H
#define OSPPROF_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

/* Read a whole file into a malloc'd NUL-terminated buffer; *n gets its length. */
static inline char *tu_slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    size_t k;
    while ((k = fread(b + len, 1, cap - len - 1, f)) > 0) {
        len += k;
        if (cap - len < 2) b = realloc(b, cap *= 2);
    }
    fclose(f);
    b[len] = 0;
    if (n) *n = len;
    return b;
}

/* A fresh private directory under TMPDIR; caller frees the string. */
static inline char *tu_tmpdir(void) {
    const char *t = getenv("TMPDIR");
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/ospprof-test-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(p)) abort();
    return p;
}

static inline void tu_rmtree(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

static inline void tu_write(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

#endif
