/*
 * The program's one stdout stream (LANGUAGE.md §8): every `print` and every TAP line
 * goes through it, each line written whole under one lock, so lines of concurrent
 * fibers never mix and one thread's lines keep program order.
 *
 * Buffering follows C's stdout: a terminal gets each line at once; a pipe or file gets
 * a 64 KiB buffer flushed when full, at normal exit (atexit: return from main or exit()
 * from any thread) and before fatal runtime exits. After the exit-time flush the stream
 * writes through, so lines printed by fibers while the process winds down are never
 * torn or left behind in the buffer.
 */
#include "rt_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define OSP_STREAM_CAP (64 * 1024)

static struct {
    pthread_mutex_t lock;
    bool write_through; /* terminal, or exit in progress */
    bool is_tty;
    bool exiting;
    bool broken; /* a write failed for good: discard further output */
    size_t len;
    char buf[OSP_STREAM_CAP];
} out = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t stream_once = PTHREAD_ONCE_INIT;

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

static void exit_flush(void) {
    pthread_mutex_lock(&out.lock);
    flush_locked();
    out.exiting = true;
    out.write_through = true;
    pthread_mutex_unlock(&out.lock);
}

/* fork: never let the child inherit a lock held by another thread. */
static void atfork_prepare(void) { pthread_mutex_lock(&out.lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&out.lock); }
static void atfork_child(void) { pthread_mutex_unlock(&out.lock); }

static void stream_init_once(void) {
    pthread_mutex_lock(&out.lock);
    detect_locked();
    pthread_mutex_unlock(&out.lock);
    atexit(exit_flush);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void osp_stream_init(void) { pthread_once(&stream_once, stream_init_once); }

void osp_stream_write_line(const char *s, size_t n) {
    static const char nl = '\n';
    osp_stream_init();
    pthread_mutex_lock(&out.lock);
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
    pthread_mutex_unlock(&out.lock);
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
    if (big == NULL) osp_fatal_oom();
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
    pthread_mutex_lock(&out.lock);
    flush_locked();
    pthread_mutex_unlock(&out.lock);
}

void osp_stream_rebind(void) {
    osp_stream_init();
    pthread_mutex_lock(&out.lock);
    flush_locked();
    out.exiting = false;
    out.broken = false;
    detect_locked();
    pthread_mutex_unlock(&out.lock);
}
