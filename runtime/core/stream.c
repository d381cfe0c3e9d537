/*
 * The program's one stdout stream (docs/spec/language.md §8): every `print` and every TAP line
 * goes through it, each line written whole under one lock, so lines of concurrent
 * fibers never mix and one thread's lines keep program order.
 *
 * Buffering follows C's stdout: a terminal gets each line at once; a pipe or file gets
 * a 64 KiB buffer flushed when full, at normal exit (atexit: return from main or exit()
 * from any thread) and before fatal runtime exits. After the exit-time flush the stream
 * writes through, so lines printed by fibers while the process winds down are never
 * torn or left behind in the buffer.
 *
 * A write that fails for good (full disk, closed pipe with SIGPIPE ignored, bad fd)
 * discards further output and is remembered: at exit the program reports it once,
 * `fatal: cannot write standard output: <strerror>`, and a program that would have
 * exited 0 exits 1 instead (as `cat` or a C program checking fclose(stdout) would).
 * A fatal signal writes out the buffer first (osp_stream_emergency_flush, crash.c).
 *
 * The bottom of runtime/core's start-up layering (see rt_internal.h): the stream, the
 * write(2) loop for last words and the one serialised process exit live here and call
 * nothing in start.c or crash.c, which both call into this file.
 */
#include "rt_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define OSP_STREAM_CAP (64 * 1024)

static struct {
    pthread_mutex_t lock;
    bool write_through; /* terminal, or exit in progress */
    bool is_tty;
    bool exiting;
    bool broken;   /* a write failed for good: discard further output */
    int err;       /* errno of that write (0: none failed) */
    bool reported; /* the failure was reported at exit */
    size_t len;
    char buf[OSP_STREAM_CAP];
} out = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t stream_once = PTHREAD_ONCE_INIT;

/* Whether the calling thread holds out.lock (read by the fatal-signal handler, which
 * must not wait for a lock its own thread holds). */
static _Thread_local bool holding __attribute__((tls_model("initial-exec")));

static void stream_lock(void) {
    pthread_mutex_lock(&out.lock);
    holding = true;
}
static void stream_unlock(void) {
    holding = false;
    pthread_mutex_unlock(&out.lock);
}

/* Write every byte of iov[0..cnt) to fd 1 (caller holds the lock). */
static void write_iov(struct iovec *iov, int cnt) {
    while (cnt > 0 && !out.broken) {
        if (iov[0].iov_len == 0) {
            iov++;
            cnt--;
            continue;
        }
        ssize_t w = writev(1, iov, cnt);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* Non-blocking stdout: wait until writable (no busy loop). */
                struct pollfd p = {.fd = 1, .events = POLLOUT};
                while (poll(&p, 1, -1) < 0 && errno == EINTR) {
                }
                continue;
            }
            out.broken = true; /* EPIPE (SIGPIPE ignored), EBADF, ENOSPC, ... */
            if (out.err == 0) out.err = errno;
            return;
        }
        size_t done = (size_t)w;
        while (cnt > 0 && done >= iov[0].iov_len) {
            done -= iov[0].iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov[0].iov_base = (char *)iov[0].iov_base + done;
            iov[0].iov_len -= done;
        }
    }
}

static void flush_locked(void) {
    if (out.len == 0) return;
    struct iovec iov = {.iov_base = out.buf, .iov_len = out.len};
    write_iov(&iov, 1);
    out.len = 0;
}

static void detect_locked(void) {
    out.is_tty = isatty(1) == 1;
    out.write_through = out.is_tty || out.exiting;
}

/* At exit (registered when the stream is set up, so it runs before the exit handlers
 * registered earlier, the profiler's among them): write the buffer out and switch to
 * writing through (fibers may still print). */
static void exit_flush(void) {
    stream_lock();
    flush_locked();
    out.exiting = true;
    out.write_through = true;
    stream_unlock();
}

/* Last at exit: report a failed write once; `status` is the exit status when known (-1:
 * unknown). A failure turns an exit status of 0 into 1. */
static void exit_report(int status) {
    stream_lock();
    bool report = out.broken && !out.reported;
    int err = out.err;
    out.reported = true;
    stream_unlock();
    if (!report) return;
    char msg[160];
    int n = snprintf(msg, sizeof msg, "fatal: cannot write standard output: %s\n",
                     strerror(err ? err : EIO));
    if (n > 0) {
        size_t len = (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
        while (write(2, msg, len) < 0 && errno == EINTR) {
        }
    }
    /* exit() is running and cannot be called again: end the process with 1 here. The
     * other exit handlers of the program have run (see exit_report_register); what is
     * skipped is the C library's own clean-up (stdio buffers, which the runtime does not
     * use for the program's output, and shared-library destructors). */
    if (status == 0) _exit(1);
}

#if defined(__GLIBC__)
static void exit_report_status(int status, void *arg) {
    (void)arg;
    exit_report(status);
}
#else
static void exit_report_unknown(void) {
    exit_report(-1);
}
#endif

/* Exit handlers run in reverse order of registration. This constructor runs before the
 * default-priority ones (among them the profiler's, which registers the handler that
 * writes the profile), so exit_report runs after their handlers. */
__attribute__((constructor(101))) static void exit_report_register(void) {
#if defined(__GLIBC__)
    on_exit(exit_report_status, NULL); /* like atexit, and it is told the exit status */
#else
    atexit(exit_report_unknown);
#endif
}

/* fork: never let the child inherit a lock held by another thread. */
static void atfork_prepare(void) {
    stream_lock();
}
static void atfork_parent(void) {
    stream_unlock();
}
static void atfork_child(void) {
    stream_unlock();
}

static void stream_init_once(void) {
    stream_lock();
    detect_locked();
    stream_unlock();
    atexit(exit_flush);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void osp_stream_buffer_range(void **lo, void **hi) {
    *lo = out.buf;
    *hi = out.buf + sizeof out.buf;
}

void osp_stream_init(void) {
    pthread_once(&stream_once, stream_init_once);
}

void osp_stream_write_line(const char *s, size_t n) {
    static const char nl = '\n';
    osp_stream_init();
    stream_lock();
    if (!out.write_through && out.len + n + 1 <= OSP_STREAM_CAP) {
        memcpy(out.buf + out.len, s, n);
        out.buf[out.len + n] = '\n';
        out.len += n + 1;
    } else {
        /* Terminal, exit in progress, or the line does not fit: flush what is buffered,
         * then the line itself if it is larger than the buffer. */
        flush_locked();
        if (!out.write_through && n + 1 <= OSP_STREAM_CAP) {
            memcpy(out.buf, s, n);
            out.buf[n] = '\n';
            out.len = n + 1;
        } else {
            struct iovec iov[2] = {{.iov_base = (void *)s, .iov_len = n},
                                   {.iov_base = (void *)&nl, .iov_len = 1}};
            write_iov(iov, 2);
        }
    }
    stream_unlock();
}

void osp_stream_printf_line(const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        osp_stream_write_line(small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (big == NULL) osp_stream_exit(OSP_OOM_LINE, sizeof OSP_OOM_LINE - 1, 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    osp_stream_write_line(big, (size_t)n);
    free(big);
}

void osp_print_line(const char *s) {
    if (s == NULL) s = "";
    osp_stream_write_line(s, strlen(s));
}

void osp_stdout_flush(void) {
    osp_stream_init();
    stream_lock();
    flush_locked();
    stream_unlock();
}

void osp_stream_rebind(void) {
    osp_stream_init();
    stream_lock();
    flush_locked();
    out.exiting = false;
    out.broken = false;
    out.err = 0;
    out.reported = false;
    detect_locked();
    stream_unlock();
}

int osp_stream_error(void) {
    osp_stream_init();
    stream_lock();
    int err = out.broken ? (out.err ? out.err : EIO) : 0;
    stream_unlock();
    return err;
}

void osp_stream_emergency_flush(void) {
    /* Take the lock if it can be had within about 100 ms (another thread may be in the
     * middle of a line or a flush); a thread that holds it itself, or a lock that stays
     * taken, gets the buffer written as it is. Everything here is async-signal-safe:
     * trylock is one atomic operation, then write(2), poll(2) and nanosleep(2). */
    if (!holding) {
        for (int i = 0; i < 100 && pthread_mutex_trylock(&out.lock) != 0; i++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
    if (out.broken) return;
    const char *p = out.buf;
    size_t n = out.len <= OSP_STREAM_CAP ? out.len : OSP_STREAM_CAP;
    while (n > 0) {
        ssize_t w = write(1, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd pf = {.fd = 1, .events = POLLOUT};
                if (poll(&pf, 1, 1000) > 0) continue;
            }
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    out.len = 0;
}

/* ---- last words and the process exit ---------------------------------------------------- */

void osp_write_all_fd(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

static pthread_mutex_t exit_lock = PTHREAD_MUTEX_INITIALIZER;

void osp_stream_exit(const char *line, size_t n, int status) {
    /* The first exit wins; a second thread exiting at the same time waits here until the
     * process is gone (exit() must not run twice concurrently). */
    pthread_mutex_lock(&exit_lock);
    osp_stdout_flush();
    if (n > 0) osp_write_all_fd(2, line, n);
    exit(status);
}
