/*
 * Rendering (docs/spec/language.md §8), strings, Results, the heap and fatal texts (§2, §14.3).
 */
#include <float.h>
#include <math.h>
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

static double zero(void) {
    volatile double z = 0.0;
    return z;
}

/* Every rendering listed in §8 and §15, plus precision and exponent edges. The extra
 * rows were computed independently from the §8 rule (first of %.10g..%.17g that
 * round-trips, then ".0" if none of . e E n i). */
static void test_float_table(void **state) {
    (void)state;
    struct {
        double v;
        const char *text;
    } rows[] = {
        {2.5, "2.5"},
        {5.0, "5.0"},
        {0.1, "0.1"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1.0 / 3.0, "0.3333333333333333"},
        {100.0, "100.0"},
        {12345678901.0, "12345678901.0"},
        {1e15, "1e+15"},
        {1e20, "1e+20"},
        {1e-5, "1e-05"},
        {INFINITY, "inf"},
        {-INFINITY, "-inf"},
        {-0.0, "-0.0"},
        {0.0, "0.0"},
        {1.5, "1.5"},
        {6.0, "6.0"},
        {7.0, "7.0"},
        {3.5, "3.5"},
        {-2.5, "-2.5"},
        {1e16, "1e+16"},
        {1e10, "1e+10"},
        {99999999999.0, "99999999999.0"},
        {1234567890.0, "1234567890.0"},
        {123456789012345680.0, "1.2345678901234568e+17"},
        {5e-324, "4.940656458e-324"},
        {DBL_MAX, "1.7976931348623157e+308"},
        {DBL_MIN, "2.2250738585072014e-308"},
        {0.000123, "0.000123"},
        {0.0001, "0.0001"},
        {1e21, "1e+21"},
        {9007199254740993.0, "9007199254740992.0"},
        {2.0 / 3.0, "0.6666666666666666"},
        {1e100, "1e+100"},
        {1e-7, "1e-07"},
        {123456.789, "123456.789"},
        {0.1 + 0.7, "0.7999999999999999"},
        {100.5, "100.5"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *got = osp_show_float(rows[i].v);
        if (strcmp(got, rows[i].text) != 0)
            fail_msg("row %zu: expected \"%s\", got \"%s\"", i, rows[i].text, got);
    }
}

/* Every NaN renders `nan`, whatever its sign bit (x86's 0.0/0.0 has the sign set). */
static void test_float_nan(void **state) {
    (void)state;
    double z = zero();
    assert_string_equal(osp_show_float(z / z), "nan");
    assert_string_equal(osp_show_float(NAN), "nan");
    assert_string_equal(osp_show_float(-NAN), "nan");
    assert_string_equal(osp_show_float(-(z / z)), "nan");
}

/* Property over many doubles: the text parses back to the same bits (after removing an
 * appended ".0"), uses the first round-tripping precision, and never lacks a marker. */
static void test_float_round_trip(void **state) {
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        uint64_t bits = (i % 2) ? x : (x >> 12) | 0x3FF0000000000000ull; /* also [1,2) */
        memcpy(&v, &bits, sizeof v);
        if (isnan(v)) continue;
        const char *s = osp_show_float(v);
        assert_non_null(strpbrk(s, ".eEni"));
        double back = strtod(s, NULL);
        if (memcmp(&back, &v, sizeof v) != 0)
            fail_msg("%s does not round-trip (bits %llx)", s, (unsigned long long)bits);
        /* It is the text of the first precision from 10 up that round-trips, possibly
         * followed by ".0". */
        char t[64];
        for (int p = 10; p <= 17; p++) {
            snprintf(t, sizeof t, "%.*g", p, v);
            double b = strtod(t, NULL);
            if (memcmp(&b, &v, sizeof v) == 0) break;
        }
        size_t tl = strlen(t);
        if (!(strcmp(s, t) == 0 || (strncmp(s, t, tl) == 0 && strcmp(s + tl, ".0") == 0)))
            fail_msg("%s: expected the text %s", s, t);
    }
}

static void test_int(void **state) {
    (void)state;
    assert_string_equal(osp_show_int(0), "0");
    assert_string_equal(osp_show_int(-42), "-42");
    assert_string_equal(osp_show_int(42), "42");
    assert_string_equal(osp_show_int(-1), "-1");
    assert_string_equal(osp_show_int(INT64_MAX), "9223372036854775807");
    assert_string_equal(osp_show_int(INT64_MIN), "-9223372036854775808");
}

static void test_bool(void **state) {
    (void)state;
    assert_string_equal(osp_show_bool(true), "true");
    assert_string_equal(osp_show_bool(false), "false");
}

static void test_result(void **state) {
    (void)state;
    osp_result *ok = osp_result_ok(42);
    assert_int_equal(ok->tag, OSP_RESULT_SUCCESS);
    assert_int_equal(ok->value, 42);
    assert_null(ok->message);
    assert_string_equal(osp_show_result(ok, osp_show_int((int64_t)ok->value), false),
                        "Success(42)");
    assert_string_equal(osp_show_result(ok, osp_show_int((int64_t)ok->value), true), "42");

    const char *msg = "division by zero";
    osp_result *err = osp_result_err(msg);
    assert_int_equal(err->tag, OSP_RESULT_ERROR);
    assert_ptr_equal(err->message, msg); /* not copied */
    assert_int_equal(err->value, 0);
    assert_string_equal(osp_show_result(err, NULL, false), "Error(division by zero)");
    assert_string_equal(osp_show_result(err, NULL, true), "Error(division by zero)");

    osp_result *bare_err = osp_result_err(NULL);
    assert_string_equal(osp_show_result(bare_err, NULL, false), "Error");
    assert_string_equal(osp_show_result(bare_err, NULL, true), "Error");

    /* Payloads of other types, and a Result-typed payload (a fiber's Result). */
    assert_string_equal(osp_show_result(osp_result_ok(0), osp_show_float(2.5), false),
                        "Success(2.5)");
    assert_string_equal(osp_show_result(osp_result_ok(0), osp_show_float(5.0), true), "5.0");
    assert_string_equal(osp_show_result(osp_result_ok(0), "", false), "Success()");
    const char *inner = osp_show_result(osp_result_ok(1), "1", false);
    assert_string_equal(osp_show_result(osp_result_ok(0), inner, false), "Success(Success(1))");
    assert_string_equal(osp_show_result(osp_result_ok(0), inner, true), "Success(1)");
}

static void test_strings(void **state) {
    (void)state;
    assert_string_equal(osp_str_cat("hello, ", "Osprey"), "hello, Osprey");
    assert_string_equal(osp_str_cat("", ""), "");
    const char *a = "abc";
    const char *c = osp_str_cat(a, "");
    assert_string_equal(c, "abc");
    assert_ptr_not_equal(c, a); /* always a new string */

    const char *parts[] = {"n=", "3", ", doubled=", "6", ", raw=", "Success(6)", ", big=", "true"};
    assert_string_equal(osp_str_concat(8, parts), "n=3, doubled=6, raw=Success(6), big=true");
    assert_string_equal(osp_str_concat(0, NULL), "");
    const char *with_null[] = {"a", NULL, "b"};
    assert_string_equal(osp_str_concat(3, with_null), "ab");
    const char *tab[] = {"tab:\t", "end"};
    assert_string_equal(osp_str_concat(2, tab), "tab:\tend");

    assert_int_equal(osp_str_cmp("a", "b"), -1);
    assert_int_equal(osp_str_cmp("b", "a"), 1);
    assert_int_equal(osp_str_cmp("same", "same"), 0);
    assert_int_equal(osp_str_cmp("ab", "abc"), -1);
    assert_int_equal(osp_str_cmp("", "a"), -1);
    assert_int_equal(osp_str_cmp("Z", "a"), -1);
    /* Byte order: UTF-8 lead bytes (>= 0x80) sort after ASCII. */
    assert_int_equal(osp_str_cmp("\xc3\xa9", "z"), 1);
    assert_int_equal(osp_str_cmp("z", "\xc3\xa9"), -1);
}

/* osp_str_append_owned: a string the accumulator did not build is copied (never written);
 * the one it built last is extended in its own buffer, growing it when full. */
static void test_str_append_owned(void **state) {
    (void)state;
    osp_str_acc acc = {0};
    const char *outside = osp_str_cat("ab", "");
    const char *s = osp_str_append_owned(outside, "c", &acc);
    assert_string_equal(outside, "ab");
    assert_ptr_not_equal(s, outside);
    assert_string_equal(s, "abc");
    const char *t = osp_str_append_owned(s, "de", &acc);
    assert_ptr_equal(t, s); /* room to spare: in place */
    assert_string_equal(t, "abcde");
    assert_int_equal(acc.len, 5);
    for (int i = 0; i < 1000; i++) t = osp_str_append_owned(t, "xyz", &acc);
    assert_int_equal(strlen(t), 3005);
    assert_int_equal(acc.len, 3005);
    assert_true(acc.cap >= acc.len);
    assert_string_equal(t + 3002, "xyz");
    /* an older string of the same accumulator is not its last one: copied */
    const char *u = osp_str_append_owned(s, "!", &acc);
    assert_ptr_not_equal(u, t);
    assert_int_equal(strlen(t), 3005);
    assert_string_equal(osp_str_append_owned(NULL, NULL, &acc), "");
}

static void test_heap(void **state) {
    (void)state;
    for (size_t size = 0; size < 300; size += 7) {
        unsigned char *p = osp_gc_alloc(size);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (size_t i = 0; i < size; i++) assert_int_equal(p[i], 0);
        memset(p, 0xAB, size);
    }
    /* Objects reachable only from the stack and from other heap objects survive full
     * collections while lots of garbage is allocated around them. */
    struct node {
        struct node *next;
        int64_t value;
        const char *text;
    };
    struct node *head = NULL;
    for (int64_t i = 0; i < 20000; i++) {
        struct node *n = osp_gc_alloc(sizeof *n);
        n->next = head;
        n->value = i;
        n->text = osp_show_int(i);
        head = n;
        (void)osp_gc_alloc(64); /* garbage */
        if (i % 5000 == 0) GC_gcollect();
    }
    GC_gcollect();
    int64_t expect = 19999;
    char buf[32];
    for (struct node *n = head; n; n = n->next, expect--) {
        assert_int_equal(n->value, expect);
        snprintf(buf, sizeof buf, "%lld", (long long)expect);
        assert_string_equal(n->text, buf);
    }
    assert_int_equal(expect, -1);
}

static void child_oom(void *arg) {
    (void)arg;
    osp_print_line("before");
    (void)osp_gc_alloc(SIZE_MAX - 64);
    osp_print_line("not reached");
}

static void test_out_of_memory(void **state) {
    (void)state;
    child_output r;
    run_child(child_oom, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "before\n");
    assert_string_equal(r.err, "fatal: out of memory\n");
    child_free(&r);
}

static void child_no_match(void *arg) {
    (void)arg;
    osp_print_line("matching");
    osp_fatal_no_match("/home/u/prog.osp", 12);
}

static void child_no_match_long(void *arg) {
    (void)arg;
    char *path = malloc(5000);
    memset(path, 'p', 4999);
    path[0] = '/';
    path[4999] = '\0';
    osp_fatal_no_match(path, 9223372036854775807LL);
}

static void test_no_match(void **state) {
    (void)state;
    child_output r;
    run_child(child_no_match, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "matching\n");
    assert_string_equal(r.err, "fatal: no match arm matched (/home/u/prog.osp:12)\n");
    child_free(&r);

    run_child(child_no_match_long, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_int_equal(r.err_len, strlen("fatal: no match arm matched (") + 4999 +
                                    strlen(":9223372036854775807)\n"));
    assert_true(strncmp(r.err, "fatal: no match arm matched (/ppp", 33) == 0);
    assert_string_equal(r.err + r.err_len - 22, ":9223372036854775807)\n");
    child_free(&r);
}

int main(void) {
    osp_rt_start(0, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_table),
        cmocka_unit_test(test_float_nan),
        cmocka_unit_test(test_float_round_trip),
        cmocka_unit_test(test_int),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_result),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_str_append_owned),
        cmocka_unit_test(test_heap),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_no_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
