/*
 * The one stdout stream (docs/spec/language.md §8): whole lines under concurrency, program order
 * per thread, flush at return from main / exit() on any thread / fatal exits, line
 * buffering on a terminal, and a failing stdout reported once at exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rt_internal.h"
#include "support.h"

/* ---- lines of concurrent fibers never mix ---------------------------------------------- */

#define WRITERS 8
#define LINES   400
#define BIG     (100 * 1024) /* larger than the stream's 64 KiB buffer */

/* Line j of writer k: "w<k> <j> " then filler of letter 'a'+k; every 50th line is BIG. */
static size_t line_len(int k, int j) {
    return (j % 50 == 49) ? BIG : (size_t)(20 + (k * 37 + j * 11) % 200);
}

static char *make_line(int k, int j) {
    size_t n = line_len(k, j);
    char *s = malloc(n + 1);
    int head = snprintf(s, n + 1, "w%d %d ", k, j);
    memset(s + head, 'a' + k, n - (size_t)head);
    s[n] = '\0';
    return s;
}

static osp_word writer(void *env) {
    int k = (int)*(int64_t *)env;
    for (int j = 0; j < LINES; j++) {
        char *s = make_line(k, j);
        osp_print_line(s);
        free(s);
        if (j % 64 == 0) osp_fiber_yield();
    }
    return 0;
}

static void child_writers(void *arg) {
    (void)arg;
    int64_t ids[WRITERS];
    for (int k = 0; k < WRITERS; k++) {
        int64_t *env = osp_gc_alloc(sizeof *env);
        *env = k;
        ids[k] = osp_fiber_spawn(writer, env);
    }
    writer(&(int64_t){WRITERS}); /* the main thread writes too */
    for (int k = 0; k < WRITERS; k++) (void)osp_fiber_wait(ids[k]);
    exit(0);
}

static void test_lines_never_mix(void **state) {
    (void)state;
    child_output r;
    run_child(child_writers, NULL, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    int next[WRITERS + 1] = {0};
    size_t total = 0;
    char *p = r.out;
    char *end = r.out + r.out_len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) fail_msg("output does not end with a newline");
        int k = -1, j = -1, head = 0;
        if (sscanf(p, "w%d %d %n", &k, &j, &head) != 2 || k < 0 || k > WRITERS)
            fail_msg("mixed line at byte %zu", (size_t)(p - r.out));
        /* Program order per thread, every line exactly once. */
        if (j != next[k]) fail_msg("writer %d: line %d came where %d was due", k, j, next[k]);
        next[k]++;
        size_t n = (size_t)(nl - p);
        if (n != line_len(k, j))
            fail_msg("writer %d line %d: %zu bytes, want %zu", k, j, n, line_len(k, j));
        for (size_t i = (size_t)head; i < n; i++)
            if (p[i] != 'a' + k) fail_msg("writer %d line %d is torn at byte %zu", k, j, i);
        total++;
        p = nl + 1;
    }
    for (int k = 0; k <= WRITERS; k++) assert_int_equal(next[k], LINES);
    assert_int_equal(total, (WRITERS + 1) * LINES);
    child_free(&r);
}

/* ---- flush at exit ----------------------------------------------------------------------- */

static void child_return_from_main(void *arg) {
    (void)arg;
    char buf[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(buf, sizeof buf, "line %d", i);
        osp_print_line(buf);
    }
    osp_print_line(NULL); /* an empty line */
    exit(0);              /* what returning from main does */
}

static void test_flush_at_exit(void **state) {
    (void)state;
    child_output r;
    run_child(child_return_from_main, NULL, &r);
    assert_int_equal(r.status, 0);
    char *p = r.out;
    char buf[32];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(buf, sizeof buf, "line %d\n", i);
        if (strncmp(p, buf, (size_t)n) != 0) fail_msg("line %d missing or out of order", i);
        p += n;
    }
    assert_string_equal(p, "\n");
    child_free(&r);
}

static osp_word exiting_fiber(void *env) {
    (void)env;
    osp_print_line("fiber says bye");
    exit(3);
}

static void child_exit_from_fiber(void *arg) {
    (void)arg;
    for (int i = 0; i < 100; i++) osp_print_line("main line");
    int64_t id = osp_fiber_spawn(exiting_fiber, NULL);
    (void)osp_fiber_wait(id); /* never returns: the fiber ends the process */
    osp_print_line("not reached");
}

static void test_flush_when_fiber_calls_exit(void **state) {
    (void)state;
    child_output r;
    run_child(child_exit_from_fiber, NULL, &r);
    assert_int_equal(r.status, 3);
    char want[1200] = "";
    for (int i = 0; i < 100; i++) strcat(want, "main line\n");
    strcat(want, "fiber says bye\n");
    assert_string_equal(r.out, want);
    assert_string_equal(r.err, "");
    child_free(&r);
}

/* Lines printed by fibers while another thread is exiting are written whole, never
 * torn, even after the exit-time flush (the stream writes through from then on). */

static void child_exit_while_chatting(void *arg) {
    (void)arg;
    for (int i = 0; i < 4; i++) (void)osp_fiber_spawn(chatter, NULL);
    osp_sleep_ms(20);
    osp_print_line("main done");
    exit(0);
}

static void test_exit_while_fibers_print(void **state) {
    (void)state;
    child_output r;
    run_child(child_exit_while_chatting, NULL, &r);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "main done\n"));
    char *p = r.out, *end = r.out + r.out_len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        assert_non_null(nl);
        size_t n = (size_t)(nl - p);
        bool ok =
            (n == 9 && memcmp(p, "main done", 9) == 0) ||
            (n == 63 &&
             memcmp(p, "chatter chatter chatter chatter chatter chatter chatter chatter", 63) == 0);
        if (!ok) fail_msg("torn line at byte %zu", (size_t)(p - r.out));
        p = nl + 1;
    }
    child_free(&r);
}

/* ---- a failing stdout is reported once at exit -------------------------------------------- */

static int open_full_as_stdout(void) {
    int fd = open("/dev/full", O_WRONLY);
    if (fd < 0) return -1;
    dup2(fd, 1);
    close(fd);
    osp_stream_rebind();
    return 0;
}

/* arg: the exit status the program ends with. */
static void child_stdout_full(void *arg) {
    if (open_full_as_stdout() != 0) exit(77);
    for (int i = 0; i < 100000; i++) osp_print_line("into a full disk");
    osp_stdout_flush();
    if (osp_stream_error() != ENOSPC) exit(78);
    osp_print_line("more output, still discarded"); /* no second report */
    exit((int)(intptr_t)arg);
}

static void test_stdout_write_error(void **state) {
    (void)state;
    child_output r;
    run_child(child_stdout_full, (void *)(intptr_t)0, &r);
    if (r.status == 77) skip();
    /* The program would have exited 0: the lost output makes it 1, with one message. */
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "fatal: cannot write standard output: No space left on device\n");
    child_free(&r);
}

static void test_stdout_write_error_keeps_failure_status(void **state) {
    (void)state;
    child_output r;
    run_child(child_stdout_full, (void *)(intptr_t)3, &r);
    if (r.status == 77) skip();
    assert_int_equal(r.status, 3);
    assert_string_equal(r.err, "fatal: cannot write standard output: No space left on device\n");
    child_free(&r);
}

/* The error shows only at exit: a buffered write fails when the buffer is written out. */
static void child_stdout_full_buffered(void *arg) {
    (void)arg;
    if (open_full_as_stdout() != 0) exit(77);
    osp_print_line("one small line, still in the buffer");
    if (osp_stream_error() != 0) exit(78);
    exit(0);
}

static void test_stdout_write_error_at_exit_flush(void **state) {
    (void)state;
    child_output r;
    run_child(child_stdout_full_buffered, NULL, &r);
    if (r.status == 77) skip();
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "fatal: cannot write standard output: No space left on device\n");
    child_free(&r);
}

/* A reader that went away while SIGPIPE is ignored: EPIPE, reported like any failure. */
static void child_closed_pipe(void *arg) {
    (void)arg;
    signal(SIGPIPE, SIG_IGN);
    int p[2];
    if (pipe(p) != 0) exit(77);
    close(p[0]);
    dup2(p[1], 1);
    close(p[1]);
    osp_stream_rebind();
    osp_print_line("nobody reads this");
    exit(0);
}

static void test_stdout_closed_pipe(void **state) {
    (void)state;
    child_output r;
    run_child(child_closed_pipe, NULL, &r);
    if (r.status == 77) skip();
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "fatal: cannot write standard output: Broken pipe\n");
    child_free(&r);
}

/* Output that was written is not an error: status 0, nothing on stderr. */
static void child_writes_fine(void *arg) {
    (void)arg;
    osp_print_line("fine");
    if (osp_stream_error() != 0) exit(78);
    exit(0);
}

static void test_stdout_no_error(void **state) {
    (void)state;
    child_output r;
    run_child(child_writes_fine, NULL, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "fine\n");
    assert_string_equal(r.err, "");
    child_free(&r);
}

/* ---- a terminal gets each line at once ---------------------------------------------------- */

static void test_terminal_line_buffered(void **state) {
    (void)state;
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0) skip();
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    char *name = ptsname(master);
    assert_non_null(name);
    int release[2];
    assert_int_equal(pipe(release), 0);
    fflush(stdout);
    fflush(stderr);
    osp_stdout_flush();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_started();
        int slave = open(name, O_RDWR | O_NOCTTY);
        if (slave < 0) _exit(2);
        dup2(slave, 1);
        close(slave);
        close(master);
        close(release[1]);
        osp_stream_rebind();
        osp_print_line("hello tty");
        char c;
        while (read(release[0], &c, 1) < 0 && errno == EINTR) {
        } /* block until released */
        exit(0);
    }
    close(release[0]);
    /* The line must arrive while the child is still running (not at its exit). */
    char got[64] = "";
    size_t len = 0;
    while (strstr(got, "hello tty") == NULL) {
        struct pollfd p = {.fd = master, .events = POLLIN};
        int rc = poll(&p, 1, 20000); /* a hang guard, not a timing assertion */
        if (rc <= 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fail_msg("no line on the terminal while the program was running");
        }
        ssize_t n = read(master, got + len, sizeof got - 1 - len);
        if (n <= 0) break;
        len += (size_t)n;
        got[len] = '\0';
    }
    assert_non_null(strstr(got, "hello tty"));
    close(release[1]);
    int st = 0;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(master);
}

int main(void) {
    osp_rt_start(0, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_never_mix),
        cmocka_unit_test(test_flush_at_exit),
        cmocka_unit_test(test_flush_when_fiber_calls_exit),
        cmocka_unit_test(test_exit_while_fibers_print),
        cmocka_unit_test(test_stdout_write_error),
        cmocka_unit_test(test_stdout_write_error_keeps_failure_status),
        cmocka_unit_test(test_stdout_write_error_at_exit_flush),
        cmocka_unit_test(test_stdout_closed_pipe),
        cmocka_unit_test(test_stdout_no_error),
        cmocka_unit_test(test_terminal_line_buffered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
