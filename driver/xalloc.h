/*
 * xalloc.h — the driver's one out-of-memory policy: every allocation the driver makes
 * goes through these helpers, which never return NULL. When memory runs out they print
 * `osprey: error: out of memory`, remove what the driver registered for clean-up (the
 * scratch directory, the temporary output, the post-processor's temporary exports; see
 * proc_exit_cleaned in process.h) and exit with status 1 — the same one line and
 * nothing half-written as any other error (docs/ARCHITECTURE.md "House conventions").
 *
 * The one exception is --attach's readers of another process (attach.c, attach_elf.c): a
 * buffer sized by what the target's memory or ELF headers claim is checked, and on failure
 * that image or table is skipped, since a bogus size must not end the driver.
 *
 * Every result is malloc'd and owned by the caller (free it with free()). Not for use
 * while holding process.c's clean-up lock (the exit path takes it).
 */
#ifndef OSPREY_XALLOC_H
#define OSPREY_XALLOC_H

#include <stddef.h>

/* malloc(n) (n == 0 allocates one byte); never NULL. */
void *drv_xmalloc(size_t n);

/* calloc(count, size), zeroed; never NULL; count * size overflowing is out of memory. */
void *drv_xcalloc(size_t count, size_t size);

/* realloc(p, n) (n == 0 keeps one byte); never NULL; on failure `p` is not freed, the
 * process exits. */
void *drv_xrealloc(void *p, size_t n);

/* A copy of the NUL-terminated `s`; never NULL. */
char *drv_xstrdup(const char *s);

/* printf into a new string of exactly the needed size; never NULL. */
char *drv_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print `osprey: error: out of memory`, clean up and exit(1) (see above). */
_Noreturn void drv_out_of_memory(void);

#endif
