/*
 * C functions for programs that call C through `extern` (docs/spec/language.md §3.5): cells
 * for out-parameters, NULL and SQLite's SQLITE_TRANSIENT, and the copy of a C string result.
 * They are exported under exactly the names the specification gives, for programs to declare.
 *
 * Cells come from malloc, not the Osprey heap: C code may keep the pointer stored in them, and
 * the program frees them with osprey_ffi_free.
 */
#include "rt_internal.h"

#include <stdlib.h>
#include <string.h>

const char *osp_str_from_c(const char *s) {
    if (s == NULL) return "";
    return osp_str_dup_n(s, strlen(s));
}

void *osprey_ffi_cell(void) {
    void **cell = calloc(1, sizeof(void *));
    if (cell == NULL) osp_fatal_oom();
    return cell;
}

void *osprey_ffi_deref(void *cell) {
    return cell ? *(void **)cell : NULL;
}

int64_t osprey_ffi_free(void *cell) {
    free(cell);
    return 0;
}

void *osprey_ffi_null(void) {
    return NULL;
}

void *osprey_ffi_transient(void) {
    return (void *)(intptr_t)-1;
}

int64_t osprey_ffi_is_null(void *p) {
    return p == NULL ? 1 : 0;
}
