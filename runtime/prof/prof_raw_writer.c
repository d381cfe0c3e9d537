/*
 * prof_raw_writer.c — the raw profile writer (§(e)): serialises the session's store, rows
 * and counters, and puts the file in place (§(a), (k) item 14). Runs on the session owner
 * after the engine has stopped (the sampler thread is joined, no registration can start),
 * under the session lock only: nothing else touches what it reads.
 *
 * Source: docs/spec/profiler.md §(a), §(e), §(k) item 14; [PROF-RAW-FORMAT].
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "prof_session.h"
#include "prof_own_text.h"

/* Key `k` of an object after its first member: `,"k":`. */
#define KEY(k) ",\"" k "\":"

static void write_body(struct osp_prof_session *ps, struct osp_prof_out *o, uint64_t end_unix) {
    char exe[OSP_PROF_PATH_MAX + 1];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k < 0) k = 0;
    exe[k] = '\0';
    struct osp_prof_store *st = &ps->store;
    osp_prof__out_str(o, "{\"" OSP_RAW_KEY_VERSION "\":");
    osp_prof__out_u64(o, OSP_RAW_VERSION);
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_PID));
    osp_prof__out_i64(o, (int64_t)atomic_load(&ps->pid));
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_EXE));
    osp_prof__out_json_string(o, exe, (size_t)k);
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_RATE_HZ));
    osp_prof__out_u64(o, ps->rate_hz);
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_PLATFORM) "\"");
    osp_prof__out_str(o, osp_prof__platform());
    osp_prof__out_str(o, "\"" KEY(OSP_RAW_KEY_START_UNIX_NS));
    osp_prof__out_u64(o, ps->start_unix_ns);
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_END_UNIX_NS));
    osp_prof__out_u64(o, end_unix);
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_IMAGES));
    osp_prof__write_images(o, exe);
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_THREADS) "[");
    for (size_t i = 0; i < ps->nrows; i++) {
        osp_prof__out_str(o,
                          i ? ",{\"" OSP_RAW_THREAD_FIBER "\":" : "{\"" OSP_RAW_THREAD_FIBER "\":");
        osp_prof__out_i64(o, ps->rows[i].fiber);
        osp_prof__out_str(o, KEY(OSP_RAW_THREAD_LABEL));
        osp_prof__out_json_string(o, ps->rows[i].label, strlen(ps->rows[i].label));
        osp_prof__out_str(o, KEY(OSP_RAW_THREAD_TID));
        osp_prof__out_i64(o, ps->rows[i].tid);
        osp_prof__out_str(o, "}");
    }
    osp_prof__out_str(o, "]" KEY(OSP_RAW_KEY_STACKS) "[");
    for (size_t i = 0; i < st->nstacks; i++) {
        const struct osp_prof_stack_ref *r = &st->stacks[i];
        osp_prof__out_str(o, i ? ",[" : "[");
        for (uint32_t j = 0; j < r->n; j++) {
            if (j) osp_prof__out_bytes(o, ",", 1);
            osp_prof__out_u64(o, st->addrs[r->off + j]);
        }
        osp_prof__out_str(o, "]");
    }
    osp_prof__out_str(o, "]" KEY(OSP_RAW_KEY_SAMPLES) "[");
    for (size_t i = 0; i < st->nsamples; i++) {
        const struct osp_prof_sample *x = &st->samples[i];
        osp_prof__out_str(o, i ? ",[" : "[");
        osp_prof__out_u64(o, x->t_rel_ns);
        osp_prof__out_bytes(o, ",", 1);
        osp_prof__out_u64(o, x->row);
        osp_prof__out_bytes(o, ",", 1);
        osp_prof__out_u64(o, x->stack);
        osp_prof__out_bytes(o, ",", 1);
        osp_prof__out_u64(o, x->state);
        osp_prof__out_str(o, "]");
    }
    uint64_t dropped = 0;
    for (int i = 0; i < OSP_DROP_COUNT; i++) dropped += st->dropped[i];
    osp_prof__out_str(o, "]" KEY(OSP_RAW_KEY_DROPPED));
    osp_prof__out_u64(o, dropped);
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_SAMPLE_WEIGHTS_NS) "[");
    for (size_t i = 0; i < st->nsamples; i++) {
        if (i) osp_prof__out_bytes(o, ",", 1);
        osp_prof__out_u64(o, st->samples[i].weight_ns);
    }
    osp_prof__out_str(o, "]" KEY(OSP_RAW_KEY_TICKS));
    osp_prof__out_u64(o, ps->ticks);
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_LATE_TICKS));
    osp_prof__out_u64(o, ps->late_ticks);
    static const char *const reasons[OSP_RAW_DROP_COUNT] = OSP_RAW_DROP_NAMES;
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_DROPPED_REASONS) "{");
    for (int i = 0; i < OSP_DROP_COUNT; i++) {
        osp_prof__out_str(o, i ? ",\"" : "\"");
        osp_prof__out_str(o, reasons[i]);
        osp_prof__out_str(o, "\":");
        osp_prof__out_u64(o, st->dropped[i]);
    }
    osp_prof__out_str(o, "}" KEY(OSP_RAW_KEY_THREADS_OVER_LIMIT));
    osp_prof__out_u64(o, ps->threads_over_limit);
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_TRUNCATED_STACKS) "[");
    bool first = true;
    for (size_t i = 0; i < st->nstacks; i++) {
        if (!st->stacks[i].truncated) continue;
        if (!first) osp_prof__out_bytes(o, ",", 1);
        first = false;
        osp_prof__out_u64(o, i);
    }
    osp_prof__out_str(o, "]" KEY(OSP_RAW_KEY_ENGINE));
    const char *engine = ps->engine != NULL ? ps->engine->name : "";
    osp_prof__out_json_string(o, engine, strlen(engine));
    /* How the stored stacks' walks ended, and how many blocked threads were read from
     * /proc without a signal (docs/profiler-runtime.md "The unwinder"). */
    static const char *const ends[OSP_RAW_UNWIND_COUNT] = OSP_RAW_UNWIND_NAMES;
    osp_prof__out_str(o, KEY(OSP_RAW_KEY_UNWIND) "{");
    for (int i = 0; i < OSP_RAW_UNWIND_COUNT; i++) {
        osp_prof__out_str(o, i ? ",\"" : "\"");
        osp_prof__out_str(o, ends[i]);
        osp_prof__out_str(o, "\":");
        osp_prof__out_u64(o, ps->unwind_ends[i]);
    }
    osp_prof__out_str(o, ",\"" OSP_RAW_UNWIND_BLOCKED_READS "\":");
    osp_prof__out_u64(o, ps->blocked_reads);
    osp_prof__out_str(o, ",\"" OSP_RAW_UNWIND_BLOCKED_SKIPS "\":");
    osp_prof__out_u64(o, ps->blocked_skips);
    /* Last, so that the session owner's stop and most of this write are in it. */
    osp_prof__out_str(o, "}" KEY(OSP_RAW_KEY_PROFILER_CPU_NS));
    uint64_t own = ps->own_startup_ns + ps->sampler_cpu_ns + ps->own_thread_ns, now;
    if (ps->own_stop_cpu_ok && osp_prof__read_clock(CLOCK_THREAD_CPUTIME_ID, &now) &&
        now > ps->own_stop_cpu_ns)
        own += now - ps->own_stop_cpu_ns;
    osp_prof__out_u64(o, own);
    osp_prof__out_str(o, "}\n");
}

#undef KEY

char *osp_prof__raw_temp_name(const char *dest) {
    const char *slash = strrchr(dest, '/');
    size_t dlen = slash ? (size_t)(slash - dest) + 1 : 0, blen = strlen(dest + dlen);
    /* the base cut to 247 bytes, as common/atomic_output.c does (OSP_ATOMIC_TEMP_BASE_MAX):
     * a destination whose name fits in NAME_MAX gets a temporary that fits too */
    if (blen > 247) blen = 247;
    char *tmp = malloc(dlen + 1 + blen + 8);
    if (tmp == NULL) return NULL;
    memcpy(tmp, dest, dlen);
    tmp[dlen] = '.';
    memcpy(tmp + dlen + 1, dest + dlen, blen);
    memcpy(tmp + dlen + 1 + blen, ".XXXXXX", 8);
    return tmp;
}

/* Open an unnamed file in `dest`'s directory for the body (O_TMPFILE, mode 0600), moved
 * to a descriptor >= OSP_PROF_FD_MIN. Returns the descriptor, or -1 with errno. */
static int tmpfile_open(const char *dest) {
    const char *slash = strrchr(dest, '/');
    size_t dlen = slash == NULL ? 0 : slash == dest ? 1 : (size_t)(slash - dest);
    char *dir = malloc(dlen + 2);
    if (dir == NULL) return -1;
    if (dlen == 0)
        dir[dlen++] = '.';
    else
        memcpy(dir, dest, dlen);
    dir[dlen] = '\0';
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    int e = errno;
    free(dir);
    errno = e;
    if (fd < 0) return -1;
    return osp_prof__fd_high(fd);
}

bool osp_prof__raw_hold_ours(const struct osp_prof_raw_hold *hold) {
    struct stat st;
    return hold->fd >= 0 && fstat(hold->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 0 &&
           st.st_dev == hold->dev && st.st_ino == hold->ino;
}

void osp_prof__raw_release(struct osp_prof_raw_hold *hold) {
    if (osp_prof__raw_hold_ours(hold)) osp_prof__close_nc(hold->fd);
    hold->fd = -1;
}

int osp_prof__raw_probe(const char *path, struct osp_prof_raw_hold *hold) {
    const char *dest = path;
    char *resolved = NULL;
    struct stat lst, st;
    hold->fd = -1;
    if (lstat(path, &lst) == 0) {
        st = lst;
        if (S_ISLNK(lst.st_mode) && stat(path, &st) != 0) return errno;
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return 0; /* written in place */
        if (S_ISDIR(st.st_mode)) return EISDIR;
        if (!S_ISREG(st.st_mode)) return -1;
        if (S_ISLNK(lst.st_mode)) {
            resolved = realpath(path, NULL);
            if (resolved == NULL) return errno;
            dest = resolved;
        }
    }
    /* The body, held to the end: the directory takes a new file, which is all a named
     * temporary would have shown. A file system without O_TMPFILE (or a descriptor that
     * cannot go high: RLIMIT_NOFILE at or below OSP_PROF_FD_MIN) falls back to the named
     * probe below and to a new temporary at the end. */
    int hfd = tmpfile_open(dest);
    struct stat hst;
    if (hfd >= 0 && fstat(hfd, &hst) == 0) {
        hold->fd = hfd;
        hold->dev = hst.st_dev;
        hold->ino = hst.st_ino;
        free(resolved);
        return 0;
    }
    if (hfd >= 0) osp_prof__close_nc(hfd);
    char *tmp = osp_prof__raw_temp_name(dest);
    if (tmp == NULL) {
        free(resolved);
        return ENOMEM;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    free(tmp);
    free(resolved);
    return err;
}

/* Give the held body (known ours) the temporary name `tmp` (its "XXXXXX" replaced, tried
 * again on a clash): linkat through /proc/self/fd, or AT_EMPTY_PATH where /proc is not
 * mounted. Neither needs a new descriptor or an openat. 0 or an errno value. */
static int hold_link(int fd, char *tmp) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    char *x = tmp + strlen(tmp) - 6;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    uint64_t r = osp_prof__mono_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)tmp;
    for (int attempt = 0; attempt < 100; attempt++) {
        for (int i = 0; i < 6; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = digits[(r >> 33) % (sizeof digits - 1)];
        }
        if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) return 0;
        int e = errno;
        if (e == EEXIST) continue;
        if (linkat(fd, "", AT_FDCWD, tmp, AT_EMPTY_PATH) == 0) return 0;
        if (errno == EEXIST) continue;
        return e;
    }
    return EEXIST;
}

/* Write the raw profile to a temporary "<dir>/.<base>.XXXXXX" (mode 0600), check
 * every write, then rename it into place (§(a), (k) item 14). An existing character
 * device or FIFO (OSPREY_PROFILE=/dev/null, a named pipe) is written in place, never
 * replaced by a file; a symbolic link to a regular file is followed (the file it points
 * to is replaced, the link stays); a directory, a dangling link or any other kind of
 * file is refused with the usual one-line message (docs/profiler-runtime.md). */
bool osp_prof__write_raw(struct osp_prof_session *ps, const char *path, uint64_t end_unix) {
    char *tmp = NULL;
    char *resolved = NULL;
    const char *dest = path;
    char *buf = malloc(1 << 16);
    int err = 0;
    int fd = -1;
    if (buf == NULL) {
        err = ENOMEM;
        goto fail;
    }
    struct stat lst, st;
    if (lstat(path, &lst) == 0) {
        st = lst;
        if (S_ISLNK(lst.st_mode) && stat(path, &st) != 0) {
            err = errno;
            goto fail;
        }
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
            osp_prof__raw_release(&ps->raw);
            fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
            if (fd < 0) {
                err = errno;
                goto fail;
            }
            struct osp_prof_out o = {.fd = fd, .buf = buf, .cap = 1 << 16, .len = 0, .err = 0};
            write_body(ps, &o, end_unix);
            err = osp_prof__out_flush(&o);
            int cfd = fd;
            fd = -1;
            if (close(cfd) != 0 && err == 0) err = errno;
            if (err) goto fail;
            free(buf);
            return true;
        }
        if (S_ISDIR(st.st_mode)) {
            err = EISDIR;
            goto fail;
        }
        if (!S_ISREG(st.st_mode)) {
            osp_prof__raw_release(&ps->raw);
            free(buf);
            osp_prof__say(
                "osprey profiler: cannot write %s: not a regular file, character device or FIFO",
                path);
            return false;
        }
        if (S_ISLNK(lst.st_mode)) {
            resolved = realpath(path, NULL);
            if (resolved == NULL) {
                err = errno;
                goto fail;
            }
            dest = resolved;
        }
    }
    tmp = osp_prof__raw_temp_name(dest);
    if (tmp == NULL) {
        err = ENOMEM;
        goto fail;
    }
    /* The body held since the start, when the program has not closed it: named under
     * the temporary and written there, needing no new descriptor. Anything else about it
     * (gone, replaced, on another file system than a link now points to) falls back to a
     * new temporary, as before the body was held. */
    if (osp_prof__raw_hold_ours(&ps->raw) && hold_link(ps->raw.fd, tmp) == 0) {
        fd = ps->raw.fd;
        ps->raw.fd = -1;
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
            err = errno;
            goto fail;
        }
    } else {
        osp_prof__raw_release(&ps->raw);
        memcpy(tmp + strlen(tmp) - 6, "XXXXXX", 6);
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
            err = errno;
            free(tmp);
            tmp = NULL;
            goto fail;
        }
    }
    if (fchmod(fd, 0600) != 0) {
        err = errno;
        goto fail;
    }
    struct osp_prof_out o = {.fd = fd, .buf = buf, .cap = 1 << 16, .len = 0, .err = 0};
    write_body(ps, &o, end_unix);
    err = osp_prof__out_flush(&o);
    if (err) goto fail;
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) {
        err = errno;
        goto fail;
    }
    if (rename(tmp, dest) != 0) {
        err = errno;
        goto fail;
    }
    free(tmp);
    free(resolved);
    free(buf);
    return true;
fail:
    osp_prof__raw_release(&ps->raw);
    if (fd >= 0) close(fd);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(resolved);
    free(buf);
    osp_prof__say("osprey profiler: cannot write %s: %s", path, strerror(err ? err : EIO));
    return false;
}

#endif /* OSP_PROF_SAMPLER */
