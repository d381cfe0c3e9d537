/*
 * Erased values (docs/spec/language.md §4.1): the box, the structural queries of §7.1 and the
 * rendering of §8, over shape descriptors laid out as generated code lays them out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rt_internal.h"

static const osp_shape int_shape = {OSP_SHAPE_INT, 0, NULL, NULL};
static const osp_shape float_shape = {OSP_SHAPE_FLOAT, 0, NULL, NULL};
static const osp_shape bool_shape = {OSP_SHAPE_BOOL, 0, NULL, NULL};
static const osp_shape string_shape = {OSP_SHAPE_STRING, 0, NULL, NULL};
static const osp_shape unit_shape = {OSP_SHAPE_UNIT, 0, NULL, NULL};
static const osp_shape success_shape = {OSP_SHAPE_SUCCESS, 0, NULL, NULL};
static const osp_shape error_shape = {OSP_SHAPE_ERROR, 0, NULL, NULL};
static const char *const xy[] = {"x", "y"};
static const osp_shape point_shape = {OSP_SHAPE_RECORD, 2, NULL, xy};
static const char *const slots[] = {"0", "1"};
static const osp_shape tag_shape = {OSP_SHAPE_RECORD, 2, NULL, slots};
static const char *const text[] = {"text"};
static const osp_shape word_shape = {OSP_SHAPE_VARIANT, 1, "Word", text};
static const osp_shape num_shape = {OSP_SHAPE_VARIANT, 1, "Num", NULL};
static const osp_shape pair_shape = {OSP_SHAPE_VARIANT, 2, "Pair", NULL};
static const osp_shape eof_shape = {OSP_SHAPE_VARIANT, 0, "Eof", NULL};
static const osp_shape list_shape = {OSP_SHAPE_LIST, 0, NULL, NULL};
static const osp_shape map_shape = {OSP_SHAPE_MAP, 0, NULL, NULL};
static const osp_shape gpu_shape = {OSP_SHAPE_GPU, 0, NULL, NULL};
static const osp_shape handle_shape = {OSP_SHAPE_HANDLE, 0, NULL, NULL};

static osp_word word_of(const void *p) {
    return (osp_word)(uintptr_t)p;
}

static osp_any *i64(int64_t v) {
    return osp_any_new(&int_shape, (osp_word)v);
}

static osp_any *str(const char *s) {
    return osp_any_new(&string_shape, word_of(s));
}

/* A record or union value: its erased fields in a heap block, as generated code builds it. */
static osp_any *fields(const osp_shape *shape, osp_any *a, osp_any *b) {
    osp_any **block = osp_gc_alloc(2 * sizeof *block);
    block[0] = a;
    block[1] = b;
    return osp_any_new(shape, word_of(block));
}

static void test_scalars(void **state) {
    (void)state;
    assert_string_equal(osp_any_show(i64(-42)), "-42");
    double d = 2.5;
    osp_word w;
    memcpy(&w, &d, sizeof w);
    assert_string_equal(osp_any_show(osp_any_new(&float_shape, w)), "2.5");
    d = 5.0;
    memcpy(&w, &d, sizeof w);
    assert_string_equal(osp_any_show(osp_any_new(&float_shape, w)), "5.0");
    assert_string_equal(osp_any_show(osp_any_new(&bool_shape, 1)), "true");
    assert_string_equal(osp_any_show(osp_any_new(&bool_shape, 0)), "false");
    assert_string_equal(osp_any_show(str("quoted \"not\"")), "quoted \"not\"");
    assert_string_equal(osp_any_show(osp_any_new(&unit_shape, 0)), "0");
    assert_string_equal(osp_any_show(osp_any_new(&list_shape, 0)), "<list>");
    assert_string_equal(osp_any_show(osp_any_new(&map_shape, 0)), "<map>");
    assert_string_equal(osp_any_show(osp_any_new(&gpu_shape, 0)), "<gpu>");
    assert_string_equal(osp_any_show(osp_any_new(&handle_shape, 0)), "<handle>");
}

static void test_results(void **state) {
    (void)state;
    osp_any *ok = osp_any_new(&success_shape, word_of(i64(4)));
    assert_string_equal(osp_any_show(ok), "Success(4)");
    assert_string_equal(osp_any_show_test(ok), "4");
    osp_any *err = osp_any_new(&error_shape, word_of("division by zero"));
    assert_string_equal(osp_any_show(err), "Error(division by zero)");
    assert_string_equal(osp_any_show_test(err), "Error(division by zero)");
    assert_string_equal(osp_any_show(osp_any_new(&error_shape, 0)), "Error");
    osp_any *nested = osp_any_new(&success_shape, word_of(fields(&point_shape, i64(1), i64(2))));
    assert_string_equal(osp_any_show(nested), "Success({ x: 1, y: 2 })");
}

static void test_records_and_unions(void **state) {
    (void)state;
    assert_string_equal(osp_any_show(fields(&point_shape, i64(1), i64(2))), "{ x: 1, y: 2 }");
    assert_string_equal(osp_any_show(fields(&tag_shape, i64(7), str("seven"))),
                        "{ 0: 7, 1: seven }");
    assert_string_equal(osp_any_show(fields(&word_shape, str("hi"), NULL)), "Word { text: hi }");
    assert_string_equal(osp_any_show(fields(&num_shape, i64(4), NULL)), "Num(4)");
    assert_string_equal(osp_any_show(fields(&pair_shape, i64(1), str("one"))), "Pair(1, one)");
    assert_string_equal(osp_any_show(osp_any_new(&eof_shape, 0)), "Eof");
    osp_any *inner = fields(&pair_shape, osp_any_new(&eof_shape, 0), fields(&num_shape, i64(3), 0));
    assert_string_equal(osp_any_show(fields(&point_shape, inner, str("s"))),
                        "{ x: Pair(Eof, Num(3)), y: s }");
}

static void test_structural_queries(void **state) {
    (void)state;
    osp_any *p = fields(&point_shape, i64(1), i64(2));
    assert_int_equal(osp_any_row_size(p), 2);
    assert_ptr_equal(osp_any_field(p, "y"), ((osp_any **)(uintptr_t)p->word)[1]);
    assert_null(osp_any_field(p, "z"));
    /* only records have rows: unions, Results and scalars never match (§7.1) */
    osp_any *w = fields(&word_shape, str("hi"), NULL);
    assert_int_equal(osp_any_row_size(w), -1);
    assert_null(osp_any_field(w, "text"));
    assert_int_equal(osp_any_row_size(i64(1)), -1);
    assert_int_equal(osp_any_row_size(osp_any_new(&success_shape, word_of(p))), -1);
    assert_int_equal(osp_any_row_size(osp_any_new(&eof_shape, 0)), -1);
    assert_int_equal(osp_any_row_size(fields(&tag_shape, i64(7), str("seven"))), 2);
    assert_non_null(osp_any_field(fields(&tag_shape, i64(7), str("seven")), "1"));
}

static void test_long_rendering(void **state) {
    (void)state;
    /* the text grows past its first buffer many times */
    osp_any *v = i64(0);
    for (int i = 0; i < 300; i++) v = fields(&point_shape, v, str("abcdefghij"));
    const char *s = osp_any_show(v);
    assert_int_equal(strlen(s), 300 * strlen("{ x: , y: abcdefghij }") + 1);
    assert_true(strncmp(s, "{ x: { x: ", 10) == 0);
}

int main(void) {
    osp_rt_start(0, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_results),
        cmocka_unit_test(test_records_and_unions),
        cmocka_unit_test(test_structural_queries),
        cmocka_unit_test(test_long_rendering),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
