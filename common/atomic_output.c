/* atomic_output.c — see atomic_output.h. */
#include "atomic_output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__) || defined(__APPLE__)
#include <sys/random.h>
#endif

static _Noreturn void out_of_memory(void) {
    fputs("osprey: out of memory\n", stderr);
    abort();
}

static char *xstrdup(const char *s) {
    char *c = strdup(s);
    if (!c) out_of_memory();
    return c;
}

static int set_reason(char *reason, size_t reasonlen, const char *text) {
    if (reason && reasonlen) snprintf(reason, reasonlen, "%s", text);
    return -1;
}

static int set_errno_reason(char *reason, size_t reasonlen, int e) {
    return set_reason(reason, reasonlen, strerror(e));
}

/* ---- registry of temporaries (for a driver terminated by a signal) ------------------ */

/* Registered in the same critical section as they are created, unregistered as they are
 * renamed or removed, so the list is never stale. The strings are owned by their writers. */
enum { MAX_TEMPS = 32 };
static pthread_mutex_t g_temps_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *g_temps[MAX_TEMPS];

static void temps_add_locked(const char *tmp) {
    for (int i = 0; i < MAX_TEMPS; i++)
        if (!g_temps[i]) {
            g_temps[i] = tmp;
            return;
        }
}

static void temps_forget_locked(const char *tmp) {
    for (int i = 0; i < MAX_TEMPS; i++)
        if (g_temps[i] == tmp) g_temps[i] = NULL;
}

void osp_atomic_remove_temporaries(void) {
    pthread_mutex_lock(&g_temps_lock);
    for (int i = 0; i < MAX_TEMPS; i++) {
        if (g_temps[i]) unlink(g_temps[i]);
        g_temps[i] = NULL;
    }
    pthread_mutex_unlock(&g_temps_lock);
}

/* ---- paths ------------------------------------------------------------------------- */

/* The directory part of `path` ("." when there is none), malloc'd. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return xstrdup(".");
    if (slash == path) return xstrdup("/");
    char *d = xstrdup(path);
    d[slash - path] = 0;
    return d;
}

int osp_atomic_resolve(const char *path, char **dest, char *reason, size_t reasonlen) {
    *dest = NULL;
    struct stat lst, st;
    if (lstat(path, &lst) != 0) {
        if (errno != ENOENT) return set_errno_reason(reason, reasonlen, errno);
        *dest = xstrdup(path); /* a new file */
    } else {
        st = lst;
        if (S_ISLNK(lst.st_mode) && stat(path, &st) != 0) {
            if (errno == ENOENT)
                return set_reason(reason, reasonlen, "it is a symbolic link to a missing file");
            return set_errno_reason(reason, reasonlen, errno);
        }
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
            if (access(path, W_OK) != 0) return set_errno_reason(reason, reasonlen, errno);
            return 0; /* written in place */
        }
        if (S_ISDIR(st.st_mode)) return set_errno_reason(reason, reasonlen, EISDIR);
        if (S_ISBLK(st.st_mode)) return set_reason(reason, reasonlen, "it is a block device");
        if (!S_ISREG(st.st_mode))
            return set_reason(reason, reasonlen, "not a regular file, character device or FIFO");
        if (S_ISLNK(lst.st_mode)) {
            /* Replace the file the link points to, in its own directory; the link stays. */
            *dest = realpath(path, NULL);
            if (!*dest) return set_errno_reason(reason, reasonlen, errno);
        } else {
            *dest = xstrdup(path);
        }
    }
    /* The temporary goes beside the destination: that directory must take a new file. */
    char *dir = dir_of(*dest);
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
        free(*dest);
        *dest = NULL;
        return set_errno_reason(reason, reasonlen, e);
    }
    return 0;
}

/* Six characters from [A-Za-z0-9]: the kernel's random bytes, else a mix of the clock,
 * the pid and a counter (uniqueness comes from O_EXCL; randomness only avoids retries). */
static void random_suffix(char out[7]) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static unsigned counter;
    unsigned char bytes[6];
    bool have = false;
#if defined(__linux__) || defined(__APPLE__)
    have = getentropy(bytes, sizeof bytes) == 0;
#endif
    if (!have) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x =
            (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40) ^
            (uint64_t)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9E3779B97F4A7C15ull;
        for (int i = 0; i < 6; i++, x >>= 8) bytes[i] = (unsigned char)x;
    }
    for (int i = 0; i < 6; i++) out[i] = alphabet[bytes[i] % 62];
    out[6] = 0;
}

/* Create a fresh "<dir>/.<base>.XXXXXX" beside `dest`: with flags O_WRONLY (fd returned)
 * when `want_fd`, else only the name is chosen (link target). <base> is cut to
 * OSP_ATOMIC_TEMP_BASE_MAX bytes, so a destination whose own name fits in NAME_MAX always
 * gets a temporary (its 8 added bytes made a 248-255-byte name "File name too long").
 * Returns the fd (or 0 when !want_fd) and *out_name (malloc'd), or -errno. */
static int make_temp_name(const char *dest, char **out_name, bool want_fd) {
    const char *slash = strrchr(dest, '/');
    size_t dirlen = slash ? (size_t)(slash - dest) + 1 : 0;
    const char *base = dest + dirlen;
    size_t blen = strlen(base);
    if (blen > OSP_ATOMIC_TEMP_BASE_MAX) blen = OSP_ATOMIC_TEMP_BASE_MAX;
    size_t n = strlen(dest) + 16;
    char *name = malloc(n);
    if (!name) out_of_memory();
    for (int attempt = 0; attempt < 100; attempt++) {
        char sfx[7];
        random_suffix(sfx);
        snprintf(name, n, "%.*s.%.*s.%s", (int)dirlen, dest, (int)blen, base, sfx);
        if (!want_fd) {
            struct stat st;
            if (lstat(name, &st) != 0 && errno == ENOENT) {
                *out_name = name;
                return 0;
            }
            continue;
        }
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd >= 0) {
            *out_name = name;
            return fd;
        }
        if (errno != EEXIST) {
            int e = errno;
            free(name);
            return -e;
        }
    }
    free(name);
    return -EEXIST;
}

int osp_atomic_probe(const char *path, char **dest, char *reason, size_t reasonlen) {
    if (osp_atomic_resolve(path, dest, reason, reasonlen) != 0) return -1;
    if (!*dest) return 0; /* a stream written in place: resolve checked it is writable */
    char *tmp = NULL;
    pthread_mutex_lock(&g_temps_lock);
    int fd = make_temp_name(*dest, &tmp, true);
    if (fd >= 0) temps_add_locked(tmp);
    pthread_mutex_unlock(&g_temps_lock);
    if (fd < 0) {
        free(*dest);
        *dest = NULL;
        return set_errno_reason(reason, reasonlen, -fd);
    }
    close(fd);
    pthread_mutex_lock(&g_temps_lock);
    unlink(tmp);
    temps_forget_locked(tmp);
    pthread_mutex_unlock(&g_temps_lock);
    free(tmp);
    return 0;
}

/* ---- one file ---------------------------------------------------------------------- */

static void release(osp_atomic_out *o) {
    free(o->dest);
    free(o->tmp);
    o->dest = o->tmp = NULL;
    o->fd = -1;
}

int osp_atomic_open(osp_atomic_out *o, const char *path, char *reason, size_t reasonlen) {
    o->fd = -1;
    o->dest = o->tmp = NULL;
    if (osp_atomic_resolve(path, &o->dest, reason, reasonlen) != 0) return -1;
    if (!o->dest) {
        o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (o->fd < 0) return set_errno_reason(reason, reasonlen, errno);
        return 0;
    }
    pthread_mutex_lock(&g_temps_lock);
    int fd = make_temp_name(o->dest, &o->tmp, true);
    if (fd >= 0) temps_add_locked(o->tmp);
    pthread_mutex_unlock(&g_temps_lock);
    if (fd < 0) {
        release(o);
        return set_errno_reason(reason, reasonlen, -fd);
    }
    o->fd = fd;
    return 0;
}

int osp_write_all(int fd, const void *data, size_t len) {
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

int osp_atomic_write(osp_atomic_out *o, const void *data, size_t len, char *reason,
                     size_t reasonlen) {
    if (o->fd < 0) return set_errno_reason(reason, reasonlen, EBADF);
    int e = osp_write_all(o->fd, data, len);
    return e ? set_errno_reason(reason, reasonlen, e) : 0;
}

void osp_atomic_abort(osp_atomic_out *o) {
    if (o->fd >= 0) close(o->fd);
    if (o->tmp) {
        pthread_mutex_lock(&g_temps_lock);
        unlink(o->tmp);
        temps_forget_locked(o->tmp);
        pthread_mutex_unlock(&g_temps_lock);
    }
    release(o);
}

int osp_atomic_commit(osp_atomic_out *o, char *reason, size_t reasonlen) {
    return osp_atomic_commit_set(o, 1, NULL, reason, reasonlen);
}

/* ---- a set ------------------------------------------------------------------------- */

int osp_atomic_commit_set(osp_atomic_out *set, size_t n, size_t *failed, char *reason,
                          size_t reasonlen) {
    /* 1. Close every member; one failure (a full disk shows here on NFS) fails the set. */
    int e = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (set[i].fd < 0) {
            if (!e) e = EBADF, bad = i;
            continue;
        }
        if (close(set[i].fd) != 0 && !e) e = errno, bad = i;
        set[i].fd = -1;
    }
    if (e) {
        for (size_t i = 0; i < n; i++) osp_atomic_abort(&set[i]);
        if (failed) *failed = bad;
        return set_errno_reason(reason, reasonlen, e);
    }
    /* 2. Keep a hard link to each previous file, so a failed rename can be undone. A file
     *    system without hard links just gets no undo for that member. */
    char **backup = calloc(n ? n : 1, sizeof *backup);
    bool *existed = calloc(n ? n : 1, sizeof *existed);
    if (!backup || !existed) out_of_memory();
    pthread_mutex_lock(&g_temps_lock);
    for (size_t i = 0; i < n && n > 1; i++) {
        struct stat st;
        if (!set[i].dest || lstat(set[i].dest, &st) != 0) continue;
        existed[i] = true;
        char *name = NULL;
        if (make_temp_name(set[i].dest, &name, false) == 0 && link(set[i].dest, name) == 0) {
            backup[i] = name;
            temps_add_locked(name);
        } else {
            free(name);
        }
    }
    /* 3. Rename each member; undo the earlier ones if one fails. */
    for (size_t i = 0; i < n; i++) {
        if (!set[i].dest) continue; /* a stream written in place */
        if (rename(set[i].tmp, set[i].dest) != 0) {
            e = errno, bad = i;
            for (size_t j = 0; j < i; j++) {
                if (!set[j].dest) continue; /* a stream written in place */
                if (backup[j]) {
                    if (rename(backup[j], set[j].dest) == 0) {
                        temps_forget_locked(backup[j]);
                        free(backup[j]);
                        backup[j] = NULL;
                    }
                } else if (!existed[j]) {
                    unlink(set[j].dest);
                }
            }
            break;
        }
        temps_forget_locked(set[i].tmp);
        free(set[i].tmp);
        set[i].tmp = NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (backup[i]) {
            unlink(backup[i]);
            temps_forget_locked(backup[i]);
            free(backup[i]);
        }
        if (set[i].tmp) {
            unlink(set[i].tmp);
            temps_forget_locked(set[i].tmp);
        }
    }
    pthread_mutex_unlock(&g_temps_lock);
    free(backup);
    free(existed);
    for (size_t i = 0; i < n; i++) release(&set[i]);
    if (e) {
        if (failed) *failed = bad;
        return set_errno_reason(reason, reasonlen, e);
    }
    return 0;
}

/* ---- same file --------------------------------------------------------------------- */

/* realpath of `p`, or of its directory plus its last component when `p` does not exist;
 * else a copy of `p`. */
static char *canonical(const char *p) {
    char *r = realpath(p, NULL);
    if (r) return r;
    char *dir = dir_of(p);
    char *rd = realpath(dir, NULL);
    free(dir);
    if (!rd) return xstrdup(p);
    const char *slash = strrchr(p, '/');
    const char *base = slash ? slash + 1 : p;
    size_t n = strlen(rd) + strlen(base) + 2;
    char *c = malloc(n);
    if (!c) out_of_memory();
    snprintf(c, n, "%s/%s", strcmp(rd, "/") == 0 ? "" : rd, base);
    free(rd);
    return c;
}

bool osp_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ca = canonical(a), *cb = canonical(b);
    bool same = strcmp(ca, cb) == 0;
    free(ca);
    free(cb);
    return same;
}
