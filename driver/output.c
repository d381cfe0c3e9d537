/* output.c — see output.h. */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process.h"
#include "xalloc.h"

/* The directory part of `path` ("." when there is none), malloc'd. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return drv_xstrdup(".");
    if (slash == path) return drv_xstrdup("/");
    char *d = drv_xstrdup(path);
    d[slash - path] = 0;
    return d;
}

int write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (w == 0) return EIO;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int fail(char *msg, size_t msglen, const char *given, const char *reason) {
    snprintf(msg, msglen, "cannot write '%s': %s", given, reason);
    return -1;
}

int out_check(const char *given, out_target *t, char *msg, size_t msglen) {
    t->given = given;
    t->dest = NULL;
    struct stat lst, st;
    if (lstat(given, &lst) != 0) {
        if (errno != ENOENT) return fail(msg, msglen, given, strerror(errno));
        t->dest = drv_xstrdup(given);
    } else {
        st = lst;
        if (S_ISLNK(lst.st_mode) && stat(given, &st) != 0) {
            return fail(msg, msglen, given,
                        errno == ENOENT ? "it is a symbolic link to a missing file"
                                        : strerror(errno));
        }
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
            if (access(given, W_OK) != 0) return fail(msg, msglen, given, strerror(errno));
            return 0; /* written in place */
        }
        if (S_ISDIR(st.st_mode)) return fail(msg, msglen, given, strerror(EISDIR));
        if (S_ISBLK(st.st_mode)) return fail(msg, msglen, given, "it is a block device");
        if (!S_ISREG(st.st_mode))
            return fail(msg, msglen, given, "not a regular file, character device or FIFO");
        t->dest = S_ISLNK(lst.st_mode) ? realpath(given, NULL) : drv_xstrdup(given);
        if (!t->dest) return fail(msg, msglen, given, strerror(errno));
    }
    /* The temporary goes beside the destination: that directory must take a new file. */
    char *dir = dir_of(t->dest);
    struct stat ds;
    int e = 0;
    if (stat(dir, &ds) != 0)
        e = errno;
    else if (!S_ISDIR(ds.st_mode))
        e = ENOTDIR;
    else if (access(dir, W_OK | X_OK) != 0)
        e = errno;
    free(dir);
    if (e) {
        out_target_free(t);
        return fail(msg, msglen, given, strerror(e));
    }
    return 0;
}

void out_target_free(out_target *t) {
    free(t->dest);
    t->dest = NULL;
}

/* realpath of `p`, or of its directory plus its last component when `p` does not exist;
 * else a copy of `p`. */
static char *canonical(const char *p) {
    char *r = realpath(p, NULL);
    if (r) return r;
    char *dir = dir_of(p);
    char *rd = realpath(dir, NULL);
    free(dir);
    if (!rd) return drv_xstrdup(p);
    const char *slash = strrchr(p, '/');
    const char *base = slash ? slash + 1 : p;
    char *c = drv_xasprintf("%s/%s", strcmp(rd, "/") == 0 ? "" : rd, base);
    free(rd);
    return c;
}

bool out_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ca = canonical(a), *cb = canonical(b);
    bool same = strcmp(ca, cb) == 0;
    free(ca);
    free(cb);
    return same;
}

int out_write(const out_target *t, const void *data, size_t len, char *msg, size_t msglen) {
    if (!t->dest) {
        int fd = open(t->given, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) return fail(msg, msglen, t->given, strerror(errno));
        int e = write_all(fd, data, len);
        if (close(fd) != 0 && !e) e = errno;
        return e ? fail(msg, msglen, t->given, strerror(e)) : 0;
    }
    char *tmp = drv_xasprintf("%s.tmp.XXXXXX", t->dest);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return fail(msg, msglen, t->given, strerror(e));
    }
    cleanup_temp(tmp);
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    int e = write_all(fd, data, len);
    if (close(fd) != 0 && !e) e = errno;
    if (!e && rename(tmp, t->dest) != 0) e = errno;
    if (e) unlink(tmp);
    cleanup_temp(NULL);
    free(tmp);
    return e ? fail(msg, msglen, t->given, strerror(e)) : 0;
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
        if ((e = write_all(out, buf, (size_t)r)) != 0) break;
    }
    close(in);
    if (close(out) != 0 && !e) e = errno;
    return e ? fail(msg, msglen, t->given, strerror(e)) : 0;
}
