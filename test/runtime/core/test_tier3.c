/*
 * Tier 3 runtime services: files (docs/spec/language.md §9.6), processes and the callback
 * delivery gate (§9.6, §16.8), the FFI helpers (§3.5) and deterministic fiber mode (§11.4).
 * Linked with fake_prof.c, which records the profiler hook calls.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_prof.h"
#include "rt_internal.h"
#include "support.h"

#define STR(w) ((const char *)(uintptr_t)(w))

/* ---- files ------------------------------------------------------------------------------ */

static void test_files(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/osprey-test-tier3-%ld.txt", (long)getpid());
    osp_rres w = osp_write_file(path, "one\ntwo\n");
    assert_int_equal(w.tag, OSP_RESULT_SUCCESS);
    assert_int_equal(w.word, 8);
    osp_rres r = osp_read_file(path);
    assert_int_equal(r.tag, OSP_RESULT_SUCCESS);
    assert_string_equal(STR(r.word), "one\ntwo\n");
    /* a larger file than the first buffer */
    char *big = malloc(100001);
    memset(big, 'x', 100000);
    big[100000] = 0;
    assert_int_equal(osp_write_file(path, big).word, 100000);
    assert_int_equal(strlen(STR(osp_read_file(path).word)), 100000);
    free(big);
    /* truncation */
    assert_int_equal(osp_write_file(path, "").word, 0);
    assert_string_equal(STR(osp_read_file(path).word), "");
    unlink(path);
    osp_rres missing = osp_read_file(path);
    assert_int_equal(missing.tag, OSP_RESULT_ERROR);
    char want[128];
    snprintf(want, sizeof want, "readFile: %s: No such file or directory", path);
    assert_string_equal(STR(missing.word), want);
    assert_string_equal(STR(osp_read_file("/tmp").word), "readFile: /tmp: Is a directory");
    assert_string_equal(STR(osp_write_file("/tmp", "x").word), "writeFile: /tmp: Is a directory");
}

/* ---- FFI helpers ------------------------------------------------------------------------ */

static void test_ffi(void **state) {
    (void)state;
    void *cell = osprey_ffi_cell();
    assert_non_null(cell);
    assert_null(osprey_ffi_deref(cell));
    assert_int_equal(osprey_ffi_is_null(osprey_ffi_deref(cell)), 1);
    *(void **)cell = cell;
    assert_ptr_equal(osprey_ffi_deref(cell), cell);
    assert_int_equal(osprey_ffi_is_null(cell), 0);
    assert_int_equal(osprey_ffi_free(cell), 0);
    assert_null(osprey_ffi_deref(NULL));
    assert_null(osprey_ffi_null());
    assert_ptr_equal(osprey_ffi_transient(), (void *)(intptr_t)-1);
    assert_string_equal(osp_str_from_c(NULL), "");
    char buf[] = "abc";
    const char *copy = osp_str_from_c(buf);
    buf[0] = 'z';
    assert_string_equal(copy, "abc");
}

/* ---- processes -------------------------------------------------------------------------- */

/* A closure as codegen builds it: word 0 the code pointer, then the captured state. */
typedef struct {
    int64_t (*code)(void *closure, int64_t id, int64_t kind, const char *text);
    char log[4096];
    atomic_int events;
    atomic_int while_running; /* callbacks that ran while the test thread was not waiting */
    atomic_int test_busy;
} recorder;

static int64_t record(void *closure, int64_t id, int64_t kind, const char *text) {
    recorder *r = closure;
    if (atomic_load(&r->test_busy)) atomic_fetch_add(&r->while_running, 1);
    size_t n = strlen(r->log);
    snprintf(r->log + n, sizeof r->log - n, "[%lld:%lld:%s]", (long long)id, (long long)kind, text);
    atomic_fetch_add(&r->events, 1);
    return 0;
}

static recorder *new_recorder(void) {
    recorder *r = calloc(1, sizeof *r);
    r->code = record;
    return r;
}

static void test_process_events_and_status(void **state) {
    (void)state;
    recorder *r = new_recorder();
    atomic_store(&r->test_busy, 1);
    osp_rres s = osp_process_spawn("printf out; sleep 0.05; printf err >&2; exit 3", r);
    assert_int_equal(s.tag, OSP_RESULT_SUCCESS);
    int64_t id = (int64_t)s.word;
    assert_true(id >= 1);
    /* §16.8: nothing is delivered while this thread runs (it is not waiting) */
    usleep(200 * 1000);
    assert_int_equal(atomic_load(&r->events), 0);
    atomic_store(&r->test_busy, 0);
    assert_int_equal(osp_process_await(id), 3);
    char want[128];
    snprintf(want, sizeof want, "[%lld:1:out][%lld:2:err][%lld:3:3]", (long long)id, (long long)id,
             (long long)id);
    assert_string_equal(r->log, want);
    assert_int_equal(atomic_load(&r->while_running), 0);
    assert_int_equal(osp_process_await(id), 3); /* again: the same value */
    osp_process_cleanup(id);
    assert_int_equal(osp_process_await(id), -1);
    assert_int_equal(osp_process_await(987), -1);
    osp_process_cleanup(987); /* ignored */
    assert_int_equal(fake_prof_violations(), 0);
    free(r);
}

static void test_process_shell_failure_and_signal(void **state) {
    (void)state;
    recorder *r = new_recorder();
    osp_rres s = osp_process_spawn("osprey-no-such-command 2>/dev/null", r);
    assert_int_equal(s.tag, OSP_RESULT_SUCCESS);
    assert_int_equal(osp_process_await((int64_t)s.word), 127);
    recorder *k = new_recorder();
    s = osp_process_spawn("kill -9 $$", k);
    assert_int_equal(osp_process_await((int64_t)s.word), -1);
    assert_non_null(strstr(k->log, ":3:-1]"));
    /* chunks are at most 1023 bytes and arrive in order */
    recorder *b = new_recorder();
    s = osp_process_spawn("head -c 3000 /dev/zero | tr '\\\\0' a", b);
    assert_int_equal(osp_process_await((int64_t)s.word), 0);
    assert_true(atomic_load(&b->events) >= 4); /* 3 chunks or more, then the exit */
    free(r);
    free(k);
    free(b);
}

/* ---- deterministic mode (last: it stays on) ------------------------------------------------ */

static char order[64];

static osp_word say(void *env) {
    size_t n = strlen(order);
    order[n] = *(const char *)env;
    order[n + 1] = 0;
    return (osp_word)(unsigned char)*(const char *)env;
}

static osp_word spawner(void *env) {
    (void)env;
    size_t n = strlen(order);
    order[n] = 'S';
    order[n + 1] = 0;
    return (osp_word)osp_fiber_spawn(say, "c"); /* joins the end of the queue */
}

static void test_deterministic_mode(void **state) {
    (void)state;
    assert_int_equal(fiber_set_deterministic_mode(true), 0);
    int64_t a = osp_fiber_spawn(say, "a");
    int64_t s = osp_fiber_spawn(spawner, NULL);
    int64_t b = osp_fiber_spawn(say, "b");
    int64_t never = osp_fiber_spawn(say, "n");
    assert_string_equal(order, ""); /* spawn only queues */
    assert_int_equal(osp_fiber_state(b), 1);
    osp_fiber_yield();
    assert_int_equal(osp_fiber_wait(b), 'b'); /* runs a, the spawner, b: in spawn order */
    assert_string_equal(order, "aSb");
    assert_int_equal(osp_fiber_wait(a), 'a'); /* finished: its value, nothing runs */
    int64_t c = (int64_t)osp_fiber_wait(s);
    assert_int_equal(osp_fiber_wait(c), 'c'); /* runs n, then c */
    assert_string_equal(order, "aSbnc");
    (void)never;
    assert_int_equal(osp_fiber_current_id(), 0);
}

int main(void) {
    osp_rt_start(0, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_ffi),
        cmocka_unit_test(test_process_events_and_status),
        cmocka_unit_test(test_process_shell_failure_and_signal),
        cmocka_unit_test(test_deterministic_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
