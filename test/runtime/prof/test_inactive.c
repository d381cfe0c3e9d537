/*
 * test_inactive.c — with OSPREY_PROFILE unset the profiler is inert (docs/spec/profiler.md §(a)):
 * boot does nothing, hooks are no-ops, no thread is started, no SIGPROF handler is
 * installed and nothing is written. This process never starts a session.
 */
#define _GNU_SOURCE
#include "support.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void *hooks_thread(void *arg) {
    (void)arg;
    osp_prof_thread_register(7, "fiber");
    osp_prof_block_begin();
    osp_prof_block_begin();
    osp_prof_block_end();
    osp_prof_block_end();
    osp_prof_block_end(); /* unbalanced end: still nothing */
    osp_prof_thread_unregister();
    osp_prof_thread_unregister();
    return NULL;
}

static void test_hooks_are_noops(void **state) {
    (void)state;
    /* The load-time constructor already booted (inert: the test runner does not set
     * OSPREY_PROFILE). Boot again, explicitly. */
    unsetenv("OSPREY_PROFILE");
    struct sigaction sa_before;
    assert_int_equal(sigaction(SIGPROF, NULL, &sa_before), 0);
    osp_prof_boot();
    osp_prof_boot();
    osp_prof_thread_register(0, "main");
    osp_prof_block_begin();
    osp_prof_block_end();
    assert_false(osp_prof__active());
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hooks_thread, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    osp_prof_thread_unregister();
    assert_int_equal(sampler_count(), 0); /* no sampler thread */
    struct sigaction sa_after;
    assert_int_equal(sigaction(SIGPROF, NULL, &sa_after), 0);
    assert_true(sa_after.sa_handler == sa_before.sa_handler);
    assert_true(sa_after.sa_handler == SIG_DFL);
    assert_false(osp_prof__active());
    assert_int_equal(osp_prof__session_start_mono_ns(), 0);
}

static void test_session_end_without_session(void **state) {
    (void)state;
    assert_false(osp_prof_session_end());
    assert_false(osp_prof_session_begin(NULL, 997));
    assert_false(osp_prof_session_begin("", 997));
    assert_false(osp_prof__active());
}

static void test_boot_ignores_late_environment(void **state) {
    (void)state;
    /* Boot is idempotent: it ran at load time with OSPREY_PROFILE unset, so setting it
     * now changes nothing. */
    setenv("OSPREY_PROFILE", "/nonexistent/should-not-be-written.json", 1);
    osp_prof_boot();
    assert_false(osp_prof__active());
    assert_int_equal(sampler_count(), 0);
    unsetenv("OSPREY_PROFILE");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hooks_are_noops),
        cmocka_unit_test(test_session_end_without_session),
        cmocka_unit_test(test_boot_ignores_late_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
