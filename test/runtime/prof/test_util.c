/*
 * test_util.c — pure parts of the profiler runtime: OSPREY_PROFILE_HZ parsing and
 * clamping (docs/spec/profiler.md §(a)), the exact warning text, output path resolution, label
 * cutting (§(d)), JSON string escaping and integers (§(e)), the sample store
 * (§(b.5)), and the kernel-timed engines' periods (§(l.3)): the first due time of a new
 * timer and the perf_event engine's catch-up period.
 */
#define _GNU_SOURCE
#include "support.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof_session.h"

static void check_hz_clamp(const char *text, uint32_t want, bool want_invalid, bool want_clamped) {
    bool invalid = !want_invalid, clamped = !want_clamped;
    uint32_t got = osp_prof__parse_hz(text, &invalid, &clamped);
    if (got != want || invalid != want_invalid || clamped != want_clamped)
        fail_msg("OSPREY_PROFILE_HZ=\"%s\": got %u%s%s, want %u%s%s", text ? text : "(unset)", got,
                 invalid ? " (invalid)" : "", clamped ? " (clamped)" : "", want,
                 want_invalid ? " (invalid)" : "", want_clamped ? " (clamped)" : "");
}

/* A value in range, or an invalid one (never both invalid and clamped). */
static void check_hz(const char *text, uint32_t want, bool want_invalid) {
    check_hz_clamp(text, want, want_invalid, false);
}

static void test_parse_hz(void **state) {
    (void)state;
    check_hz(NULL, 997, false);
    check_hz("", 997, false);
    check_hz("997", 997, false);
    check_hz("2000", 2000, false);
    check_hz("+250", 250, false);
    check_hz("10", 10, false);
    check_hz("10000", 10000, false);
    check_hz("0010", 10, false);
    /* clamping, which the caller reports */
    check_hz_clamp("9", 10, false, true);
    check_hz_clamp("0", 10, false, true);
    check_hz_clamp("5", 10, false, true);
    check_hz_clamp("-0", 10, false, true);
    check_hz_clamp("-5", 10, false, true);
    check_hz_clamp("10001", 10000, false, true);
    check_hz_clamp("20000", 10000, false, true);
    /* overflow clamps by sign */
    check_hz_clamp("99999999999999999999999999", 10000, false, true);
    check_hz_clamp("+99999999999999999999999999", 10000, false, true);
    check_hz_clamp("-99999999999999999999999999", 10, false, true);
    /* not an optional sign followed by digits */
    check_hz("abc", 997, true);
    check_hz("12abc", 997, true);
    check_hz(" 50", 997, true);
    check_hz("50 ", 997, true);
    check_hz("1e3", 997, true);
    check_hz("0x10", 997, true);
    check_hz("+", 997, true);
    check_hz("-", 997, true);
    check_hz("+-5", 997, true);
    check_hz("5.0", 997, true);
    check_hz("99999999999999999999999999x", 997, true);
}

static void expect_warning(const char *value, const char *want) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    osp_prof__warn_bad_hz(fds[1], value);
    close(fds[1]);
    char buf[1024];
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void test_warning_text(void **state) {
    (void)state;
    expect_warning("abc",
                   "osprey profiler: OSPREY_PROFILE_HZ=\"abc\" is not an integer; using 997\n");
    expect_warning(" 5",
                   "osprey profiler: OSPREY_PROFILE_HZ=\" 5\" is not an integer; using 997\n");
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    osp_prof__warn_hz_range(fds[1], "10001", 10000);
    osp_prof__warn_hz_range(fds[1], "-\n5", 10);
    close(fds[1]);
    char buf[1024];
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf,
                        "osprey profiler: OSPREY_PROFILE_HZ=\"10001\" is out of range 10..10000; "
                        "using 10000\n"
                        "osprey profiler: OSPREY_PROFILE_HZ=\"-\\x0a5\" is out of range 10..10000; "
                        "using 10\n");
    /* One line, whatever the value holds. */
    expect_warning(
        "a\nb\"c\\",
        "osprey profiler: OSPREY_PROFILE_HZ=\"a\\x0ab\\\"c\\\\\" is not an integer; using 997\n");
}

static void test_absolute_path(void **state) {
    (void)state;
    char cwd[PATH_MAX], out[OSP_PROF_PATH_MAX + 1], want[PATH_MAX + 64];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(osp_prof__absolute_path("/abs/file.json", out, sizeof out), 0);
    assert_string_equal(out, "/abs/file.json");
    assert_int_equal(osp_prof__absolute_path("rel.json", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/rel.json", strcmp(cwd, "/") ? cwd : "");
    assert_string_equal(out, want);
    assert_int_equal(osp_prof__absolute_path("./sub/rel.json", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/sub/rel.json", strcmp(cwd, "/") ? cwd : "");
    assert_string_equal(out, want);
    /* 4095 bytes is the longest usable path; 4096 or more is too long. */
    char *p = malloc(5000);
    memset(p, 'a', 4999);
    p[0] = '/';
    p[4095] = '\0';
    assert_int_equal(osp_prof__absolute_path(p, out, sizeof out), 0);
    assert_int_equal(strlen(out), 4095);
    p[4095] = 'a';
    p[4096] = '\0';
    assert_int_equal(osp_prof__absolute_path(p, out, sizeof out), ENAMETOOLONG);
    /* Relative: the joined result counts. */
    size_t room = 4095 - strlen(cwd) - 1;
    memset(p, 'b', room);
    p[room] = '\0';
    assert_int_equal(osp_prof__absolute_path(p, out, sizeof out), 0);
    p[room] = 'b';
    p[room + 1] = '\0';
    assert_int_equal(osp_prof__absolute_path(p, out, sizeof out), ENAMETOOLONG);
    free(p);
}

static void check_label(const char *in, const char *want) {
    char out[OSP_PROF_LABEL_MAX + 1];
    size_t n = osp_prof__cut_label(in, out);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n + 1);
}

static void test_cut_label(void **state) {
    (void)state;
    check_label(NULL, "");
    check_label("main", "main");
    check_label("fiber", "fiber");
    check_label("123456789012345", "123456789012345");
    check_label("1234567890123456789", "123456789012345");
    /* 14 ASCII bytes + "é" (2 bytes) = 16: the é would be split, so it goes. */
    check_label("12345678901234\xC3\xA9", "12345678901234");
    /* 13 + "é" = 15 fits. */
    check_label("1234567890123\xC3\xA9xyz", "1234567890123\xC3\xA9");
    /* A 4-byte character that would end at byte 16. */
    check_label("123456789012\xF0\x9F\x90\xA6", "123456789012");
    check_label("12345678901\xF0\x9F\x90\xA6z", "12345678901\xF0\x9F\x90\xA6");
    /* Invalid bytes count one each (the writer replaces them). */
    check_label("\xFF\xFE", "\xFF\xFE");
}

static void check_json(const char *in, size_t n, const char *want) {
    char buf[1024];
    struct osp_prof_out o = {.fd = -1, .buf = buf, .cap = sizeof buf, .len = 0, .err = 0};
    osp_prof__out_json_string(&o, in, n);
    assert_int_equal(o.err, 0);
    buf[o.len] = '\0';
    assert_string_equal(buf, want);
}

static void test_json_strings(void **state) {
    (void)state;
    check_json("plain", 5, "\"plain\"");
    check_json("", 0, "\"\"");
    check_json("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    check_json("\n\t\x01\x1f", 4, "\"\\u000a\\u0009\\u0001\\u001f\"");
    check_json("nul\0x", 5, "\"nul\\u0000x\"");
    check_json("\x7f", 1, "\"\x7f\"");
    /* Valid UTF-8 passes through. */
    check_json("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x90\xA6", 14,
               "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x90\xA6\"");
    /* Invalid UTF-8 becomes U+FFFD, one per offending byte. */
    check_json("a\xFFz", 3, "\"a\xEF\xBF\xBDz\"");
    check_json("\xC0\x80", 2, "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");                 /* overlong NUL */
    check_json("\xED\xA0\x80", 3, "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""); /* surrogate */
    check_json("\xF4\x90\x80\x80", 4,
               "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""); /* above U+10FFFF */
    check_json("ab\xE2\x82", 4, "\"ab\xEF\xBF\xBD\xEF\xBF\xBD\"");      /* truncated at the end */
    check_json("\x80x", 2, "\"\xEF\xBF\xBDx\"");                        /* lone continuation */
}

static void test_integers_and_overflow(void **state) {
    (void)state;
    char buf[128];
    struct osp_prof_out o = {.fd = -1, .buf = buf, .cap = sizeof buf, .len = 0, .err = 0};
    osp_prof__out_u64(&o, 0);
    osp_prof__out_str(&o, ",");
    osp_prof__out_u64(&o, UINT64_MAX);
    osp_prof__out_str(&o, ",");
    osp_prof__out_i64(&o, INT64_MIN);
    osp_prof__out_str(&o, ",");
    osp_prof__out_i64(&o, -1);
    buf[o.len] = '\0';
    assert_string_equal(buf, "0,18446744073709551615,-9223372036854775808,-1");
    /* A full buffer without a descriptor reports ENOSPC and stops. */
    char small[4];
    struct osp_prof_out s = {.fd = -1, .buf = small, .cap = sizeof small, .len = 0, .err = 0};
    osp_prof__out_str(&s, "too long");
    assert_int_equal(s.err, ENOSPC);
    /* Write errors are kept: a closed pipe gives EPIPE (SIGPIPE ignored here). */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    char b2[8];
    struct osp_prof_out w = {.fd = fds[1], .buf = b2, .cap = sizeof b2, .len = 0, .err = 0};
    osp_prof__out_str(&w, "0123456789abcdef");
    assert_int_equal(osp_prof__out_flush(&w), EPIPE);
    close(fds[1]);
}

static void test_store(void **state) {
    (void)state;
    struct osp_prof_store s;
    memset(&s, 0, sizeof s);
    uintptr_t a[3] = {0x1000, 0x2000, 0x3000}, b[3] = {0x1000, 0x2000, 0x3001};
    int64_t ka = osp_prof__store_intern(&s, a, 3, false);
    int64_t kb = osp_prof__store_intern(&s, b, 3, false);
    int64_t ka2 = osp_prof__store_intern(&s, a, 3, true);
    int64_t kshort = osp_prof__store_intern(&s, a, 2, false);
    assert_true(ka >= 0 && kb >= 0);
    assert_int_equal(ka, ka2);
    assert_int_not_equal(ka, kb);
    assert_int_not_equal(ka, kshort);
    assert_int_equal(s.stacks[ka].truncated, 1); /* ORed in */
    assert_int_equal(s.stacks[kb].truncated, 0);
    assert_int_equal(osp_prof__store_intern(&s, a, 0, false), -1); /* never empty */
    /* Many distinct stacks: the table grows and every one is found again. */
    for (uintptr_t i = 0; i < 50000; i++) {
        uintptr_t st[2] = {0x10000 + i, 0x20000};
        assert_int_equal(osp_prof__store_intern(&s, st, 2, false), (int64_t)(3 + i));
    }
    for (uintptr_t i = 0; i < 50000; i += 997) {
        uintptr_t st[2] = {0x10000 + i, 0x20000};
        assert_int_equal(osp_prof__store_intern(&s, st, 2, false), (int64_t)(3 + i));
    }
    /* The cap: beyond it samples are counted as store_full, nothing else. */
    s.samples_limit = 5000;
    for (int i = 0; i < 6000; i++)
        osp_prof__store_record(&s, (uint64_t)(6000 - i), 0, a, 3, false, 0, 1);
    assert_int_equal(s.nsamples, 5000);
    assert_int_equal(s.dropped[OSP_DROP_STORE_FULL], 1000);
    assert_int_equal(s.dropped[OSP_DROP_ALLOC], 0);
    osp_prof__store_sort(&s);
    for (size_t i = 1; i < s.nsamples; i++)
        assert_true(s.samples[i - 1].t_rel_ns <= s.samples[i].t_rel_ns);
    osp_prof__store_free(&s);
    assert_int_equal(s.nsamples, 0);
    assert_int_equal(s.nstacks, 0);
    assert_int_equal(s.samples_limit, 5000);
}

/* The first due time follows the residual distribution of the jittered periods
 * (uniform in [0.7p, 1.3p)): density 1/p on [0, 0.7p), falling linearly to 0 at 1.3p.
 * Its mean is E[X^2] / (2 E[X]) = 0.515p; 70 % of it lies below 0.7p, 7.5 % above p. */
static void test_first_due(void **state) {
    (void)state;
    const uint64_t p = 1000000;
    uint64_t rng = 0x1234567887654321ull;
    const int n = 200000;
    double sum = 0;
    int below = 0, above = 0;
    for (int i = 0; i < n; i++) {
        uint64_t x = osp_prof__first_due_ns(&rng, p);
        if (x >= p * 13 / 10) fail_msg("first due %llu ns >= 1.3p", (unsigned long long)x);
        sum += (double)x;
        below += x < p * 7 / 10;
        above += x >= p;
    }
    double mean = sum / n / (double)p;
    if (mean < 0.510 || mean > 0.520) fail_msg("mean first due %.4f p, want 0.515 p", mean);
    if (below < n * 0.69 || below > n * 0.71) fail_msg("%d of %d below 0.7p, want 70 %%", below, n);
    if (above < n * 0.070 || above > n * 0.080)
        fail_msg("%d of %d at or above p, want 7.5 %%", above, n);
}

/* The catch-up period: the drawn one less 1/k of the lateness, within [0.8w, 1.25w]. */
static void test_catch_up_period(void **state) {
    (void)state;
    assert_int_equal(osp_prof__catch_up_period(1000, 0, 4, 10), 1000);
    assert_int_equal(osp_prof__catch_up_period(1000, 400, 4, 10), 900);    /* late: shorter */
    assert_int_equal(osp_prof__catch_up_period(1000, -400, 4, 10), 1100);  /* early: longer */
    assert_int_equal(osp_prof__catch_up_period(1000, 4000, 4, 10), 800);   /* never below 0.8w */
    assert_int_equal(osp_prof__catch_up_period(1000, -4000, 4, 10), 1250); /* nor above 1.25w */
    assert_int_equal(osp_prof__catch_up_period(1000, 400, 40, 10), 990);
    assert_int_equal(osp_prof__catch_up_period(10, 4, 1, 9), 9); /* the kernel's minimum */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_hz),        cmocka_unit_test(test_warning_text),
        cmocka_unit_test(test_absolute_path),   cmocka_unit_test(test_cut_label),
        cmocka_unit_test(test_json_strings),    cmocka_unit_test(test_integers_and_overflow),
        cmocka_unit_test(test_store),           cmocka_unit_test(test_first_due),
        cmocka_unit_test(test_catch_up_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
