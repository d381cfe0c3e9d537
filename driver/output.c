/* output.c — see output.h. The file mechanics live in common/atomic_output.c; this file
 * words the driver's messages around them. */
#include "output.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_output.h"
#include "ospprof.h"
#include "xalloc.h"

static int fail(char *msg, size_t msglen, const char *given, const char *reason) {
    snprintf(msg, msglen, "cannot write '%s': %s", given, reason);
    return -1;
}

int write_all(int fd, const void *data, size_t len) {
    return osp_write_all(fd, data, len);
}

int out_check(const char *given, out_target *t, char *msg, size_t msglen) {
    t->given = given;
    t->dest = NULL;
    char reason[256];
    if (osp_atomic_probe(given, &t->dest, reason, sizeof reason) != 0)
        return fail(msg, msglen, given, reason);
    return 0;
}

void out_target_free(out_target *t) {
    free(t->dest);
    t->dest = NULL;
}

bool out_same_file(const char *a, const char *b) {
    return osp_same_file(a, b);
}

int out_write(const out_target *t, const void *data, size_t len, char *msg, size_t msglen) {
    char reason[256];
    osp_atomic_out o;
    if (osp_atomic_open(&o, t->given, reason, sizeof reason) != 0)
        return fail(msg, msglen, t->given, reason);
    if (osp_atomic_write(&o, data, len, reason, sizeof reason) != 0) {
        osp_atomic_abort(&o);
        return fail(msg, msglen, t->given, reason);
    }
    if (osp_atomic_commit(&o, reason, sizeof reason) != 0)
        return fail(msg, msglen, t->given, reason);
    return 0;
}

int out_copy_into(const out_target *t, const char *from, char *msg, size_t msglen) {
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        snprintf(msg, msglen, "cannot read '%s': %s", from, strerror(errno));
        return -1;
    }
    int out = open(t->given, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (out < 0) {
        int e = errno;
        close(in);
        return fail(msg, msglen, t->given, strerror(e));
    }
    char buf[1 << 16];
    int e = 0;
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int re = errno;
            close(in);
            close(out);
            snprintf(msg, msglen, "cannot read '%s': %s", from, strerror(re));
            return -1;
        }
        if (r == 0) break;
        if ((e = osp_write_all(out, buf, (size_t)r)) != 0) break;
    }
    close(in);
    if (close(out) != 0 && !e) e = errno;
    return e ? fail(msg, msglen, t->given, strerror(e)) : 0;
}

void drv_diag(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0) drv_out_of_memory();
    char *shown = ospprof_term_string(line);
    fprintf(stderr, "%s\n", shown);
    free(shown);
    free(line);
}
