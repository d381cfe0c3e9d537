/*
 * Fatal signals (crash.c): what the program printed before SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL or SIGABRT is written out, a stack overflow on the main thread, a fiber or an
 * effect-continuation thread says `fatal: stack overflow`, and the process still dies
 * of the signal (status 128 + N). Sanitizer builds install nothing (the sanitizer
 * reports faults itself): there the behaviour tests are skipped and one test checks
 * that nothing was installed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rt_internal.h"
#include "support.h"

#define LINES 1000 /* about 20 KiB: stays in the 64 KiB buffer until something flushes it */

static void print_lines(void) {
    char buf[64];
    for (int i = 0; i < LINES; i++) {
        snprintf(buf, sizeof buf, "printed before the crash %d", i);
        osp_print_line(buf);
    }
}

static void assert_lines(const char *out) {
    const char *p = out;
    char buf[64];
    for (int i = 0; i < LINES; i++) {
        int n = snprintf(buf, sizeof buf, "printed before the crash %d\n", i);
        if (strncmp(p, buf, (size_t)n) != 0) fail_msg("line %d missing; output:\n%.300s", i, p);
        p += n;
    }
    assert_string_equal(p, "");
}

/* What osp_rt_start does, in a child: cmocka catches SIGSEGV & co. for its own reports,
 * and the runtime leaves a handler it did not install alone, so reset them first. */
static void start_runtime(void) {
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    osp_crash_init();
}

static void require_handlers(void) {
    if (!osp_crash_handlers_enabled()) skip(); /* the sanitizer owns the signals */
}

/* Unbounded recursion that no optimisation turns into a loop. */
__attribute__((noinline, optnone)) static int recurse(int n) {
    volatile char pad[256];
    pad[0] = (char)n;
    if (n < 0) return pad[0];
    return recurse(n + 1) + pad[0];
}

/* ---- the buffer is written out --------------------------------------------------------------- */

static void child_raise(void *arg) {
    start_runtime();
    print_lines();
    raise((int)(intptr_t)arg);
    exit(0); /* not reached */
}

static void check_raise(int sig) {
    require_handlers();
    child_output r;
    run_child(child_raise, (void *)(intptr_t)sig, &r);
    assert_int_equal(r.status, 128 + sig);
    assert_lines(r.out);
    assert_string_equal(r.err, ""); /* sent, not a fault: no stack-overflow message */
    child_free(&r);
}

static void test_sigsegv_flushes(void **state) {
    (void)state;
    check_raise(SIGSEGV);
}
static void test_sigbus_flushes(void **state) {
    (void)state;
    check_raise(SIGBUS);
}
static void test_sigfpe_flushes(void **state) {
    (void)state;
    check_raise(SIGFPE);
}
static void test_sigill_flushes(void **state) {
    (void)state;
    check_raise(SIGILL);
}

/* Interrupted (Ctrl-C, kill, hang-up): what was printed reaches a redirected stdout. */
static void test_sigint_flushes(void **state) {
    (void)state;
    check_raise(SIGINT);
}
static void test_sigterm_flushes(void **state) {
    (void)state;
    check_raise(SIGTERM);
}
static void test_sighup_flushes(void **state) {
    (void)state;
    check_raise(SIGHUP);
}

/* A signal the program was started with ignored stays ignored (nohup, background jobs). */
static void child_ignored_kept(void *arg) {
    (void)arg;
    signal(SIGHUP, SIG_IGN);
    start_runtime();
    print_lines();
    raise(SIGHUP);
    exit(3);
}

static void test_ignored_signal_kept(void **state) {
    (void)state;
    child_output r;
    run_child(child_ignored_kept, NULL, &r);
    assert_int_equal(r.status, 3);
    assert_lines(r.out); /* written at exit */
    child_free(&r);
}

static void child_abort(void *arg) {
    (void)arg;
    start_runtime();
    print_lines();
    abort();
}

static void test_abort_flushes(void **state) {
    (void)state;
    require_handlers();
    child_output r;
    run_child(child_abort, NULL, &r);
    assert_int_equal(r.status, 128 + SIGABRT);
    assert_lines(r.out);
    assert_string_equal(r.err, "");
    child_free(&r);
}

/* A fault that is not a stack overflow (a wild pointer): output written, no message. */
static void child_wild_pointer(void *arg) {
    (void)arg;
    start_runtime();
    print_lines();
    volatile int *p = (volatile int *)(uintptr_t)64;
    *p = 1;
    exit(0);
}

static void test_wild_pointer_is_not_overflow(void **state) {
    (void)state;
    require_handlers();
    child_output r;
    run_child(child_wild_pointer, NULL, &r);
    assert_int_equal(r.status, 128 + SIGSEGV);
    assert_lines(r.out);
    assert_string_equal(r.err, "");
    child_free(&r);
}

/* ---- stack overflow on every kind of thread ---------------------------------------------------- */

static void child_main_overflow(void *arg) {
    (void)arg;
    start_runtime();
    print_lines();
    (void)recurse(0);
    exit(0);
}

static void test_main_thread_overflow(void **state) {
    (void)state;
    require_handlers();
    child_output r;
    run_child(child_main_overflow, NULL, &r);
    assert_int_equal(r.status, 128 + SIGSEGV);
    assert_lines(r.out);
    assert_string_equal(r.err, "fatal: stack overflow\n");
    child_free(&r);
}

static osp_word overflow_thunk(void *env) {
    (void)env;
    return (osp_word)recurse(0);
}

static void child_fiber_overflow(void *arg) {
    (void)arg;
    start_runtime();
    print_lines();
    int64_t id = osp_fiber_spawn(overflow_thunk, NULL);
    (void)osp_fiber_wait(id);
    exit(0);
}

static void test_fiber_overflow(void **state) {
    (void)state;
    require_handlers();
    child_output r;
    run_child(child_fiber_overflow, NULL, &r);
    assert_int_equal(r.status, 128 + SIGSEGV);
    assert_lines(r.out);
    assert_string_equal(r.err, "fatal: stack overflow\n");
    child_free(&r);
}

/* A handle with a resuming arm runs its body on an effect-continuation thread. */
static osp_word resume_arm(void *env, osp_cont_k *k) {
    (void)env;
    return osp_cont_resume_tail(k, 0);
}

static void child_continuation_overflow(void *arg) {
    (void)arg;
    start_runtime();
    print_lines();
    osp_arm_fn *arms = osp_gc_alloc(sizeof(osp_arm_fn));
    arms[0] = resume_arm;
    osp_cont *c = osp_cont_new(NULL, arms, 1);
    osp_eff_entry *below = osp_eff_top();
    osp_eff_push("Crash", "go", NULL, NULL, c, 0, below);
    osp_cont_begin(c, overflow_thunk, NULL);
    osp_eff_pop(1);
    (void)osp_cont_drive(c);
    exit(0);
}

static void test_continuation_overflow(void **state) {
    (void)state;
    require_handlers();
    child_output r;
    run_child(child_continuation_overflow, NULL, &r);
    assert_int_equal(r.status, 128 + SIGSEGV);
    assert_lines(r.out);
    assert_string_equal(r.err, "fatal: stack overflow\n");
    child_free(&r);
}

/* ---- lines of other threads stay whole ------------------------------------------------------------ */

static void child_crash_while_chatting(void *arg) {
    (void)arg;
    start_runtime();
    for (int i = 0; i < 4; i++) (void)osp_fiber_spawn(chatter, NULL);
    osp_sleep_ms(20);
    osp_print_line("main crashes");
    (void)recurse(0);
}

static void test_crash_while_fibers_print(void **state) {
    (void)state;
    require_handlers();
    child_output r;
    run_child(child_crash_while_chatting, NULL, &r);
    assert_int_equal(r.status, 128 + SIGSEGV);
    assert_string_equal(r.err, "fatal: stack overflow\n");
    assert_non_null(strstr(r.out, "main crashes\n"));
    char *p = r.out, *end = r.out + r.out_len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) fail_msg("output ends in a torn line");
        size_t n = (size_t)(nl - p);
        bool ok =
            (n == 12 && memcmp(p, "main crashes", 12) == 0) ||
            (n == 63 &&
             memcmp(p, "chatter chatter chatter chatter chatter chatter chatter chatter", 63) == 0);
        if (!ok) fail_msg("torn line at byte %zu", (size_t)(p - r.out));
        p = nl + 1;
    }
    child_free(&r);
}

/* ---- what is installed ------------------------------------------------------------------------------ */

static void foreign_handler(int sig) {
    (void)sig;
    static const char msg[] = "foreign handler\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(42);
}

/* A handler installed before the runtime starts (a debugging library) stays. */
static void child_foreign_handler(void *arg) {
    (void)arg;
    signal(SIGSEGV, foreign_handler);
    osp_crash_init();
    osp_print_line("buffered");
    raise(SIGSEGV);
    exit(0);
}

static void test_foreign_handler_kept(void **state) {
    (void)state;
    child_output r;
    run_child(child_foreign_handler, NULL, &r);
    assert_int_equal(r.status, 42);
    assert_string_equal(r.err, "foreign handler\n");
    child_free(&r);
}

static void child_report_installed(void *arg) {
    (void)arg;
    struct sigaction before, after;
    signal(SIGSEGV, SIG_DFL);
    sigaction(SIGSEGV, NULL, &before);
    osp_crash_init();
    sigaction(SIGSEGV, NULL, &after);
    stack_t ss;
    sigaltstack(NULL, &ss);
    bool changed = memcmp(&before, &after, sizeof before) != 0;
    printf("changed=%d onstack=%d altstack=%d size=%zu\n", changed,
           (after.sa_flags & SA_ONSTACK) != 0, !(ss.ss_flags & SS_DISABLE), (size_t)ss.ss_size);
    fflush(stdout);
    exit(0);
}

static void test_installed_only_without_sanitizer(void **state) {
    (void)state;
    child_output r;
    run_child(child_report_installed, NULL, &r);
    assert_int_equal(r.status, 0);
    if (osp_crash_handlers_enabled())
        assert_string_equal(r.out, "changed=1 onstack=1 altstack=1 size=65536\n");
    else /* the sanitizer may have an alternate stack of its own: only the action counts */
        assert_true(strncmp(r.out, "changed=0 onstack=0 ", 20) == 0);
    child_free(&r);
}

/* A fiber runs with its own alternate signal stack. */
static osp_word report_altstack(void *env) {
    (void)env;
    stack_t ss;
    sigaltstack(NULL, &ss);
    return !(ss.ss_flags & SS_DISABLE) && ss.ss_size == 64 * 1024;
}

static void child_fiber_alt_stack(void *arg) {
    (void)arg;
    start_runtime();
    int64_t id = osp_fiber_spawn(report_altstack, NULL);
    exit(osp_fiber_wait(id) == 1 ? 0 : 1);
}

static void test_fiber_has_alt_stack(void **state) {
    (void)state;
    require_handlers();
    child_output r;
    run_child(child_fiber_alt_stack, NULL, &r);
    assert_int_equal(r.status, 0);
    child_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigsegv_flushes),
        cmocka_unit_test(test_sigbus_flushes),
        cmocka_unit_test(test_sigfpe_flushes),
        cmocka_unit_test(test_sigill_flushes),
        cmocka_unit_test(test_abort_flushes),
        cmocka_unit_test(test_sigint_flushes),
        cmocka_unit_test(test_sigterm_flushes),
        cmocka_unit_test(test_sighup_flushes),
        cmocka_unit_test(test_ignored_signal_kept),
        cmocka_unit_test(test_wild_pointer_is_not_overflow),
        cmocka_unit_test(test_main_thread_overflow),
        cmocka_unit_test(test_fiber_overflow),
        cmocka_unit_test(test_continuation_overflow),
        cmocka_unit_test(test_crash_while_fibers_print),
        cmocka_unit_test(test_foreign_handler_kept),
        cmocka_unit_test(test_installed_only_without_sanitizer),
        cmocka_unit_test(test_fiber_has_alt_stack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
