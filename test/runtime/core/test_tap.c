/*
 * The test framework's output and exit status, byte for byte (docs/spec/language.md §13,
 * examples L27–L31). Each scenario runs in a forked child the way generated code would
 * drive the runtime: osp_tap_case_begin / assertions / [verdict] / osp_tap_case_end,
 * then `exit(osp_tap_finish())` as `return` from main would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_internal.h"
#include "support.h"

/* The rendering used by test assertions: §8 with a bare Success payload (§13.1). */
static const char *test_render_int_result(osp_result *r) {
    const char *payload = r->tag == OSP_RESULT_SUCCESS ? osp_show_int((int64_t)r->value) : NULL;
    return osp_show_result(r, payload, true);
}

/* expect(actual, expected): equal test renderings pass. */
static void expect_r(const char *actual, const char *expected) {
    osp_tap_check(NULL, strcmp(actual, expected) == 0, expected, actual);
}
static void check_r(const char *label, const char *expected, const char *actual) {
    osp_tap_check(label, strcmp(actual, expected) == 0, expected, actual);
}
static void expect_true(bool b) {
    osp_tap_check(NULL, b, "true", osp_show_bool(b));
}
static void check_false(const char *label, bool b) {
    osp_tap_check(label, !b, "false", osp_show_bool(b));
}
static void check_true(const char *label, bool b) {
    osp_tap_check(label, b, "true", osp_show_bool(b));
}

static int64_t dbl(int64_t x) {
    return x * 2;
}

/* Example L27 */
static void l27(void *arg) {
    (void)arg;
    osp_print_line("begin");
    if (osp_tap_case_begin("doubling")) {
        check_true("double", dbl(2) == 4); /* checkAll: one assertion per element */
        check_true("double", dbl(0) == 0);
        osp_tap_case_end();
    }
    if (osp_tap_case_begin("wrong expectation")) {
        check_r("three", osp_show_int(5), osp_show_int(dbl(3)));
        osp_tap_case_end();
    }
    osp_print_line("end");
    exit(osp_tap_finish());
}

/* Example L28 */
static void l28(void *arg) {
    (void)arg;
    if (osp_tap_case_begin("renderings")) {
        expect_r(test_render_int_result(osp_result_ok(5)), osp_show_int(5));
        osp_result *sum = osp_result_ok(5);
        expect_r(osp_show_result(sum, osp_show_int(5), false), "Success(5)"); /* toString */
        expect_r(test_render_int_result(osp_result_err("division by zero")),
                 "Error(division by zero)");
        expect_r(osp_show_int(10), "10");
        expect_r(test_render_int_result(osp_result_ok(2)), osp_show_int(3));
        osp_tap_case_end();
    }
    exit(osp_tap_finish());
}

/* Example L29 */
static void l29(void *arg) {
    (void)arg;
    if (osp_tap_case_begin("flags")) {
        expect_true(1 > 2);
        check_false("small", 1 < 2);
        expect_true(true); /* expectAll([true, 1 == 2]) */
        expect_true(1 == 2);
        osp_tap_case_end();
    }
    exit(osp_tap_finish());
}

/* Example L30 */
static void l30(void *arg) {
    (void)arg;
    if (osp_tap_case_begin("alpha")) {
        expect_r(osp_show_int(1), osp_show_int(1));
        osp_tap_case_end();
    }
    osp_print_line("between");
    if (osp_tap_case_begin("outer")) {
        if (osp_tap_case_begin("inner")) {
            expect_r(osp_show_int(1), osp_show_int(1));
            osp_tap_case_end();
        }
        expect_r(osp_show_int(2), osp_show_int(2));
        osp_tap_case_end();
    }
    exit(osp_tap_finish());
}

static void l30_filter_alpha(void *arg) {
    set_filter("alpha");
    l30(arg);
}
static void l30_filter_empty(void *arg) {
    set_filter(""); /* empty = no filter */
    l30(arg);
}
static void l30_filter_outer(void *arg) {
    set_filter("outer");
    l30(arg);
}
static void l30_filter_none(void *arg) {
    set_filter("no such case");
    l30(arg);
}

/* Example L31 [T2] */
static void l31(void *arg) {
    (void)arg;
    if (osp_tap_case_begin("ready")) {
        osp_tap_verdict(OSP_VERDICT_PASS, NULL);
        osp_tap_case_end();
    }
    if (osp_tap_case_begin("pending")) {
        osp_tap_verdict(OSP_VERDICT_SKIP, "needs network");
        osp_tap_case_end();
    }
    if (osp_tap_case_begin("broken")) {
        osp_tap_verdict(OSP_VERDICT_FAIL, "bad state");
        osp_tap_case_end();
    }
    if (osp_tap_case_begin("bare")) {
        osp_tap_verdict(OSP_VERDICT_SKIP, "");
        osp_tap_case_end();
    }
    exit(osp_tap_finish());
}

/* A failed assertion wins over Skip and Pass; Fail prints `# fail:` even with failed
 * assertions; a NULL reason is "". */
static void verdict_rules(void *arg) {
    (void)arg;
    if (osp_tap_case_begin("skip but failed")) {
        expect_r("1", "2");
        osp_tap_verdict(OSP_VERDICT_SKIP, "later");
        osp_tap_case_end();
    }
    if (osp_tap_case_begin("fail and failed")) {
        check_r("x", "a", "b");
        osp_tap_verdict(OSP_VERDICT_FAIL, "also");
        osp_tap_case_end();
    }
    if (osp_tap_case_begin("skip null")) {
        osp_tap_verdict(OSP_VERDICT_SKIP, NULL);
        osp_tap_case_end();
    }
    if (osp_tap_case_begin("fail null")) {
        osp_tap_verdict(OSP_VERDICT_FAIL, NULL);
        osp_tap_case_end();
    }
    exit(osp_tap_finish());
}

static void no_cases(void *arg) {
    (void)arg;
    osp_print_line("nothing to test");
    exit(osp_tap_finish());
}

/* Assertions outside any case print their diagnostic, change no count, fail the run. */
static void outside(void *arg) {
    (void)arg;
    expect_r("1", "1");
    check_r("top", "5", "6");
    if (osp_tap_case_begin("fine")) osp_tap_case_end();
    exit(osp_tap_finish());
}

static void outside_pass(void *arg) {
    (void)arg;
    expect_r("1", "1");
    check_true("ok", true);
    if (osp_tap_case_begin("fine")) osp_tap_case_end();
    exit(osp_tap_finish());
}

static void assert_run(void (*fn)(void *), const char *expected_out, int expected_status) {
    child_output r;
    run_child(fn, NULL, &r);
    assert_string_equal(r.out, expected_out);
    assert_int_equal(r.out_len, strlen(expected_out));
    assert_string_equal(r.err, "");
    assert_int_equal(r.status, expected_status);
    child_free(&r);
}

static void test_l27(void **state) {
    (void)state;
    assert_run(l27,
               "begin\n"
               "ok 1 - doubling\n"
               "# check 'three' failed: expected 5, got 6\n"
               "not ok 2 - wrong expectation\n"
               "end\n"
               "1..2\n"
               "# tests=2 passed=1 failed=1 skipped=0\n",
               1);
}

static void test_l28(void **state) {
    (void)state;
    assert_run(l28,
               "# expect failed: expected 3, got 2\n"
               "not ok 1 - renderings\n"
               "1..1\n"
               "# tests=1 passed=0 failed=1 skipped=0\n",
               1);
}

static void test_l29(void **state) {
    (void)state;
    assert_run(l29,
               "# expect failed: expected true, got false\n"
               "# check 'small' failed: expected false, got true\n"
               "# expect failed: expected true, got false\n"
               "not ok 1 - flags\n"
               "1..1\n"
               "# tests=1 passed=0 failed=1 skipped=0\n",
               1);
}

static void test_l30(void **state) {
    (void)state;
    static const char unfiltered[] =
        "ok 1 - alpha\n"
        "between\n"
        "# nested test 'inner' skipped: test() inside a test body is not supported\n"
        "not ok 2 - outer\n"
        "1..2\n"
        "# tests=2 passed=1 failed=1 skipped=0\n";
    assert_run(l30, unfiltered, 1);
    assert_run(l30_filter_empty, unfiltered, 1);
    assert_run(l30_filter_alpha,
               "ok 1 - alpha\n"
               "between\n"
               "1..1\n"
               "# tests=1 passed=1 failed=0 skipped=0\n",
               0);
    /* Under a filter naming the outer case, the nested one is filtered out silently. */
    assert_run(l30_filter_outer,
               "between\n"
               "ok 1 - outer\n"
               "1..1\n"
               "# tests=1 passed=1 failed=0 skipped=0\n",
               0);
    assert_run(l30_filter_none,
               "between\n"
               "1..0\n"
               "# tests=0 passed=0 failed=0 skipped=0\n",
               0);
}

static void test_l31(void **state) {
    (void)state;
    assert_run(l31,
               "ok 1 - ready\n"
               "ok 2 - pending # SKIP needs network\n"
               "# fail: bad state\n"
               "not ok 3 - broken\n"
               "ok 4 - bare # SKIP\n"
               "1..4\n"
               "# tests=4 passed=1 failed=1 skipped=2\n",
               1);
}

static void test_verdict_rules(void **state) {
    (void)state;
    assert_run(verdict_rules,
               "# expect failed: expected 2, got 1\n"
               "not ok 1 - skip but failed\n"
               "# check 'x' failed: expected a, got b\n"
               "# fail: also\n"
               "not ok 2 - fail and failed\n"
               "ok 3 - skip null # SKIP\n"
               "# fail: \n"
               "not ok 4 - fail null\n"
               "1..4\n"
               "# tests=4 passed=0 failed=3 skipped=1\n",
               1);
}

static void test_no_cases(void **state) {
    (void)state;
    assert_run(no_cases,
               "nothing to test\n"
               "1..0\n"
               "# tests=0 passed=0 failed=0 skipped=0\n",
               0);
}

static void test_outside(void **state) {
    (void)state;
    assert_run(outside,
               "# check 'top' failed: expected 5, got 6\n"
               "ok 1 - fine\n"
               "1..1\n"
               "# tests=1 passed=1 failed=0 skipped=0\n",
               1);
    assert_run(outside_pass,
               "ok 1 - fine\n"
               "1..1\n"
               "# tests=1 passed=1 failed=0 skipped=0\n",
               0);
}

/* Many cases: numbering and counts stay right past one buffer's worth of output. */
static void many(void *arg) {
    (void)arg;
    char name[32];
    for (int i = 1; i <= 3000; i++) {
        snprintf(name, sizeof name, "case %d", i);
        if (osp_tap_case_begin(osp_str_dup_n(name, strlen(name)))) {
            if (i % 3 == 0) expect_r(osp_show_int(i), "0");
            if (i % 5 == 0) osp_tap_verdict(OSP_VERDICT_SKIP, "five");
            osp_tap_case_end();
        }
    }
    exit(osp_tap_finish());
}

static void test_many(void **state) {
    (void)state;
    child_output r;
    run_child(many, NULL, &r);
    assert_int_equal(r.status, 1);
    /* failed: multiples of 3 (1000); skipped: multiples of 5 but not of 3 (400) */
    const char *tail =
        "ok 2999 - case 2999\n# expect failed: expected 0, got 3000\nnot ok 3000 - case 3000\n"
        "1..3000\n# tests=3000 passed=1600 failed=1000 skipped=400\n";
    assert_true(r.out_len > strlen(tail));
    assert_string_equal(r.out + r.out_len - strlen(tail), tail);
    assert_non_null(strstr(r.out, "\nok 2995 - case 2995 # SKIP five\n"));
    static const char head[] =
        "ok 1 - case 1\nok 2 - case 2\n# expect failed: expected 0, got 3\nnot ok 3 - case 3\n";
    assert_memory_equal(r.out, head, sizeof head - 1);
    child_free(&r);
}

int main(void) {
    osp_rt_start(0, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_l27),      cmocka_unit_test(test_l28),
        cmocka_unit_test(test_l29),      cmocka_unit_test(test_l30),
        cmocka_unit_test(test_l31),      cmocka_unit_test(test_verdict_rules),
        cmocka_unit_test(test_no_cases), cmocka_unit_test(test_outside),
        cmocka_unit_test(test_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
