/*
 * Files (docs/spec/language.md §9.6): readFile and writeFile. Both report failures as
 * `<op>: <path>: <strerror(errno)>`; neither is a blocking region (file I/O is on-CPU time of
 * the calling thread, sampled in these functions).
 */
#include "rt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0 /* Windows (mingw): no exec(2) for the descriptor to leak across */
#endif

static osp_rres fail(const char *op, const char *path, int err) {
    const char *why = strerror(err);
    size_t n = strlen(op) + strlen(path) + strlen(why) + 5;
    char *msg = GC_MALLOC_ATOMIC(n);
    if (msg == NULL) osp_fatal_oom();
    snprintf(msg, n, "%s: %s: %s", op, path, why);
    return (osp_rres){OSP_RESULT_ERROR, (osp_word)(uintptr_t)msg};
}

osp_rres osp_read_file(const char *path) {
    if (path == NULL) path = "";
    int fd;
    do fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail("readFile", path, errno);
    size_t cap = 4096, len = 0;
    char *buf = GC_MALLOC_ATOMIC(cap + 1);
    if (buf == NULL) osp_fatal_oom();
    for (;;) {
        if (len == cap) {
            if (cap > SIZE_MAX / 4) osp_fatal_oom();
            char *nb = GC_MALLOC_ATOMIC(cap * 2 + 1);
            if (nb == NULL) osp_fatal_oom();
            memcpy(nb, buf, len);
            buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            close(fd);
            return fail("readFile", path, err);
        }
        if (n == 0) break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = 0; /* the string ends at its first NUL byte, if any */
    return (osp_rres){OSP_RESULT_SUCCESS, (osp_word)(uintptr_t)buf};
}

osp_rres osp_write_file(const char *path, const char *text) {
    if (path == NULL) path = "";
    if (text == NULL) text = "";
    int fd;
    do fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail("writeFile", path, errno);
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            close(fd);
            return fail("writeFile", path, err);
        }
        done += (size_t)n;
    }
    if (close(fd) != 0 && errno != EINTR) return fail("writeFile", path, errno);
    return (osp_rres){OSP_RESULT_SUCCESS, (osp_word)done};
}
