/* Test helpers: see support.h. */
#define _GNU_SOURCE
#include "support.h"
#include "rt_internal.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/*
 * LeakSanitizer hook (sanitizer/lsan_interface.h): a forked child exits in the middle
 * of a test with the harness's state still live, and LSan cannot suspend the threads
 * it inherited from the parent's registry ("Running thread ... was not suspended"), so
 * leak checking is off in children only. The parent process is still checked.
 */
static int in_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) {
    return in_child;
}

void child_started(void) {
    in_child = 1;
}

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (*len + n + 1 > c) c *= 2;
        *buf = realloc(*buf, c);
        assert_non_null(*buf);
        *cap = c;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

void run_child(void (*fn)(void *), void *arg, child_output *res) {
    int po[2], pe[2];
    assert_int_equal(pipe(po), 0);
    assert_int_equal(pipe(pe), 0);
    /* Nothing buffered may be duplicated into the child. */
    fflush(stdout);
    fflush(stderr);
    osp_stdout_flush();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_started();
        close(po[0]);
        close(pe[0]);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[1]);
        close(pe[1]);
        osp_stream_rebind();
        fn(arg);
        exit(0);
    }
    close(po[1]);
    close(pe[1]);
    memset(res, 0, sizeof *res);
    size_t ocap = 0, ecap = 0;
    append(&res->out, &res->out_len, &ocap, "", 0);
    append(&res->err, &res->err_len, &ecap, "", 0);
    struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
    int open_fds = 2;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    bool timed_out = false;
    while (open_fds > 0) {
        int r = poll(fds, 2, 1000);
        if (r < 0 && errno == EINTR) continue;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 60) {
            timed_out = true;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char chunk[65536];
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            if (i == 0)
                append(&res->out, &res->out_len, &ocap, chunk, (size_t)n);
            else
                append(&res->err, &res->err_len, &ecap, chunk, (size_t)n);
        }
    }
    if (timed_out) kill(pid, SIGKILL);
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0) close(fds[i].fd);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (timed_out) fail_msg("child did not finish within 60 s; stdout so far:\n%s", res->out);
}

void child_free(child_output *res) {
    free(res->out);
    free(res->err);
    memset(res, 0, sizeof *res);
}

void set_filter(const char *value) {
    if (value)
        setenv("OSPREY_TEST_FILTER", value, 1);
    else
        unsetenv("OSPREY_TEST_FILTER");
}

osp_word chatter(void *env) {
    (void)env;
    for (;;) {
        osp_print_line("chatter chatter chatter chatter chatter chatter chatter chatter");
        osp_fiber_yield();
    }
}
