/*
 * The runtime as user programs get it: linked from build/lib/libosprey_rt.a (with the
 * real profiler objects) plus OSPREY_RT_LINK_LIBS. Drives the ABI the way generated
 * `main` does (docs/spec/language.md §14.1) and checks the program's whole output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "osp_prof.h"
#include "osprey_rt.h"
#include "support.h"

static osp_word fib_thunk(void *env) {
    int64_t n = *(int64_t *)env;
    int64_t a = 0, b = 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t t = a + b;
        a = b;
        b = t;
    }
    return (osp_word)a;
}

static osp_word nap_thunk(void *env) {
    int64_t ms = *(int64_t *)env;
    osp_sleep_ms(ms);
    return (osp_word)osp_result_ok((osp_word)ms);
}

/* Example L16/L17/L18 shapes, plus a test case, as generated code would call them. */
static void program(void *arg) {
    (void)arg;
    int64_t *n = osp_gc_alloc(sizeof *n);
    *n = 20;
    int64_t worker = osp_fiber_spawn(fib_thunk, n);
    int64_t *ms = osp_gc_alloc(sizeof *ms);
    *ms = 30;
    int64_t idle = osp_fiber_spawn(nap_thunk, ms);
    osp_print_line(osp_str_cat("worker fiber ", osp_show_int(worker)));
    const char *parts[] = {"results ", osp_show_int((int64_t)osp_fiber_wait(worker)), " ",
                           osp_show_int(610)};
    osp_print_line(osp_str_concat(4, parts));
    osp_result *napped = (osp_result *)(uintptr_t)osp_fiber_wait(idle);
    osp_print_line(osp_show_result(napped, osp_show_int((int64_t)napped->value), false));
    osp_print_line(osp_show_float(1.0 / 3.0));
    if (osp_tap_case_begin("fiber done")) {
        int64_t st = osp_fiber_state(idle);
        osp_tap_check(NULL, st == 1, "1", osp_show_int(st));
        osp_tap_case_end();
    }
    exit(osp_tap_finish());
}

static void test_program(void **state) {
    (void)state;
    child_output r;
    run_child(program, NULL, &r);
    assert_string_equal(r.out, "worker fiber 1\n"
                               "results 6765 610\n"
                               "Success(30)\n"
                               "0.3333333333333333\n"
                               "ok 1 - fiber done\n"
                               "1..1\n"
                               "# tests=1 passed=1 failed=0 skipped=0\n");
    assert_string_equal(r.err, "");
    assert_int_equal(r.status, 0);
    child_free(&r);
}

int main(int argc, char **argv) {
    unsetenv("OSPREY_PROFILE"); /* the real profiler stays inert */
    osp_rt_start(argc, argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_program)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
