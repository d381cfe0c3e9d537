/*
 * Effect handlers and effect continuations (docs/spec/language.md §12, §14.6; docs/spec/profiler.md §(d)):
 * the handler stack, dispatch per (effect, operation), handler inheritance by fibers,
 * resuming arms on continuation threads (deep, one-shot), abandoning, nesting, tail
 * resumes, fibers performing into a resuming handler, and the profiler contract
 * (continuation threads register as (-1, "effect") and unregister on every path).
 * These tests drive the runtime the way generated code does (see codegen.c).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_prof.h"
#include "rt_internal.h"
#include "support.h"

typedef osp_word (*plain1)(void *env, osp_word a);

/* What generated code does for `perform <effect>.<op>(a)` (one word argument). */
static osp_word perform1(const char *effect, const char *op, osp_word a) {
    osp_eff_entry *e = osp_eff_find(effect, op);
    for (;;) {
        if (e->fn) {
            osp_eff_entry *saved = osp_eff_arm_enter(e);
            osp_word r = ((plain1)e->fn)(e->env, a);
            osp_eff_arm_leave(saved);
            return r;
        }
        osp_word out = 0, args[1] = {a};
        e = osp_cont_suspend(e, args, 1, &out);
        if (e == NULL) return out;
    }
}

/* ---- the handler stack ---------------------------------------------------------------- */

static osp_word plain_add(void *env, osp_word a) {
    return a + *(osp_word *)env;
}

static osp_word plain_reperform(void *env, osp_word a) {
    (void)env;
    /* Inside an arm the stack is the one outside its handle: this reaches the outer arm. */
    return perform1("E", "op", a) * 10;
}

static void test_stack_dispatch(void **state) {
    (void)state;
    osp_word *ten = osp_gc_alloc(sizeof *ten), *hundred = osp_gc_alloc(sizeof *hundred);
    *ten = 10;
    *hundred = 100;
    assert_null(osp_eff_top());
    osp_eff_entry *below = osp_eff_top();
    osp_eff_push("E", "op", (void *)plain_add, ten, NULL, 0, below);
    osp_eff_push("E", "other", (void *)plain_add, hundred, NULL, 0, below);
    assert_int_equal(perform1("E", "op", 1), 11);
    assert_int_equal(perform1("E", "other", 1), 101);
    /* An inner handler for `op` only shadows `op` (per operation). */
    below = osp_eff_top();
    osp_eff_push("E", "op", (void *)plain_reperform, NULL, NULL, 0, below);
    assert_int_equal(perform1("E", "op", 2), 120);
    assert_int_equal(perform1("E", "other", 2), 102);
    /* Keys compare by content, not by pointer. */
    char key[8];
    strcpy(key, "E");
    assert_int_equal(perform1(key, "other", 3), 103);
    /* Copy and adopt: a snapshot is one pointer to immutable entries. */
    osp_eff_entry *snap = osp_eff_copy();
    osp_eff_pop(3);
    assert_null(osp_eff_top());
    osp_eff_adopt(snap);
    assert_int_equal(perform1("E", "op", 2), 120);
    osp_eff_pop(3);
    assert_null(osp_eff_top());
}

static void unhandled_child(void *arg) {
    (void)arg;
    osp_print_line("before");
    perform1("Log", "say", 1);
    osp_print_line("not reached");
}

static void test_unhandled_prints_to_stdout(void **state) {
    (void)state;
    child_output r;
    run_child(unhandled_child, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "before\nunhandled effect: Log.say\n");
    assert_string_equal(r.err, "");
    child_free(&r);
}

/* ---- fibers inherit the handler stack -------------------------------------------------- */

static osp_word fiber_performs(void *env) {
    (void)env;
    return perform1("E", "op", 5);
}

static void test_fiber_inherits(void **state) {
    (void)state;
    osp_word *ten = osp_gc_alloc(sizeof *ten);
    *ten = 10;
    osp_eff_push("E", "op", (void *)plain_add, ten, NULL, 0, osp_eff_top());
    int64_t f = osp_fiber_spawn(fiber_performs, NULL);
    osp_eff_pop(1); /* the handle ends; the fiber keeps its copy */
    GC_gcollect();
    assert_int_equal(osp_fiber_wait(f), 15);
}

/* ---- resuming arms ------------------------------------------------------------------------- */

/* A handle with one resuming arm for E.get: what generated code emits. */
static osp_word run_handle(osp_arm_fn arm, osp_thunk_fn body, void *env) {
    osp_arm_fn *arms = osp_gc_alloc(sizeof(osp_arm_fn));
    arms[0] = arm;
    osp_cont *c = osp_cont_new(env, arms, 1);
    osp_eff_entry *below = osp_eff_top();
    osp_eff_push("E", "get", NULL, env, c, 0, below);
    osp_cont_begin(c, body, env);
    osp_eff_pop(1);
    return osp_cont_drive(c);
}

typedef struct trace {
    char log[256];
    pthread_mutex_t lock;
    int64_t body_fiber;
    char body_label[16];
    bool body_registered;
    int performs;
} trace;

static void note(trace *t, const char *fmt, ...) {
    pthread_mutex_lock(&t->lock);
    size_t n = strlen(t->log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->log + n, sizeof t->log - n, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&t->lock);
}

static trace *new_trace(void) {
    trace *t = osp_gc_alloc(sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

/* body: v = perform get(1); w = perform get(v); v + w */
static osp_word twice_body(void *env) {
    trace *t = env;
    const char *label = NULL;
    t->body_registered = fake_prof_current(&t->body_fiber, &label);
    snprintf(t->body_label, sizeof t->body_label, "%s", label ? label : "");
    osp_word v = perform1("E", "get", 1);
    note(t, "b%lld ", (long long)v);
    osp_word w = perform1("E", "get", v);
    note(t, "b%lld ", (long long)w);
    return v + w;
}

/* arm: r = resume(x * 10); r + 1 */
static osp_word resume_times_ten(void *env, osp_cont_k *k) {
    trace *t = env;
    osp_word x = osp_cont_arg(k, 0);
    note(t, "a%lld ", (long long)x);
    osp_word r = osp_cont_resume(k, x * 10);
    note(t, "r%lld ", (long long)r);
    return r + 1;
}

static void test_resume_deep(void **state) {
    (void)state;
    trace *t = new_trace();
    int64_t regs = fake_prof_effect_registrations(), unregs = fake_prof_effect_unregistrations();
    osp_word v = run_handle(resume_times_ten, twice_body, t);
    /* get(1) -> 10; get(10) -> 100 (the second arm runs nested in the first's resume);
     * body returns 110; inner arm 111; outer arm 112. */
    assert_int_equal(v, 112);
    assert_string_equal(t->log, "a1 b10 a10 b100 r110 r111 ");
    assert_true(t->body_registered);
    assert_int_equal(t->body_fiber, -1);
    assert_string_equal(t->body_label, "effect");
    assert_int_equal(fake_prof_effect_registrations() - regs, 1);
    assert_int_equal(fake_prof_effect_unregistrations() - unregs, 1);
    assert_int_equal(fake_prof_depth(), 0);
    assert_int_equal(fake_prof_violations(), 0);
}

/* The body never performs: the handle's value is the body's. */
static osp_word plain_body(void *env) {
    (void)env;
    return 42;
}

static void test_body_without_perform(void **state) {
    (void)state;
    assert_int_equal(run_handle(resume_times_ten, plain_body, new_trace()), 42);
}

/* arm: if x < 0 then 0 (abandon) else resume(x) — docs/spec/language.md example L25. */
static osp_word gate_arm(void *env, osp_cont_k *k) {
    (void)env;
    int64_t x = (int64_t)osp_cont_arg(k, 0);
    if (x < 0) return 0;
    return osp_cont_resume(k, (osp_word)x);
}

static osp_word pipeline_body(void *env) {
    trace *t = env;
    osp_word a = perform1("E", "get", 5);
    note(t, "passed %lld ", (long long)a);
    osp_word b = perform1("E", "get", (osp_word)-3);
    note(t, "passed %lld ", (long long)b); /* never reached */
    return a + b;
}

static void test_abandon_nested(void **state) {
    (void)state;
    trace *t = new_trace();
    int64_t regs = fake_prof_effect_registrations(), unregs = fake_prof_effect_unregistrations();
    assert_int_equal(run_handle(gate_arm, pipeline_body, t), 0);
    assert_string_equal(t->log, "passed 5 ");
    /* The abandoned body thread unregistered on its way out and was joined. */
    assert_int_equal(fake_prof_effect_registrations() - regs, 1);
    assert_int_equal(fake_prof_effect_unregistrations() - unregs, 1);
    assert_int_equal(fake_prof_violations(), 0);
}

static osp_word never_resume(void *env, osp_cont_k *k) {
    (void)env;
    return osp_cont_arg(k, 0) + 1000;
}

static void test_abandon_first(void **state) {
    (void)state;
    trace *t = new_trace();
    assert_int_equal(run_handle(never_resume, twice_body, t), 1001);
    assert_string_equal(t->log, "");
}

/* Second resume of one continuation is fatal (docs/spec/language.md L26). */
static osp_word resume_twice(void *env, osp_cont_k *k) {
    (void)env;
    osp_cont_resume(k, 1);
    return osp_cont_resume(k, 2);
}

static osp_word ping_body(void *env) {
    (void)env;
    return perform1("E", "get", 0);
}

static void twice_child(void *arg) {
    (void)arg;
    run_handle(resume_twice, ping_body, NULL);
    osp_print_line("not reached");
}

static void test_second_resume_fatal(void **state) {
    (void)state;
    child_output r;
    run_child(twice_child, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "");
    assert_string_equal(
        r.err, "fatal: continuation already resumed (multi-shot resume is not supported)\n");
    child_free(&r);
}

/* Tail resumes: a body that performs 200000 times does not deepen the driver's stack. */
static osp_word tail_arm(void *env, osp_cont_k *k) {
    (void)env;
    return osp_cont_resume_tail(k, osp_cont_arg(k, 0) + 1);
}

static osp_word counting_body(void *env) {
    (void)env;
    osp_word sum = 0;
    for (int i = 0; i < 200000; i++) sum += perform1("E", "get", (osp_word)i) - (osp_word)i;
    return sum;
}

static void test_tail_resume_loop(void **state) {
    (void)state;
    assert_int_equal(run_handle(tail_arm, counting_body, NULL), 200000);
    assert_int_equal(fake_prof_depth(), 0);
}

/* Nested resuming handles: the inner body performs into the outer handle, whose arm
 * abandons; both continuation threads leave and are joined. */
static osp_word inner_arm(void *env, osp_cont_k *k) {
    (void)env;
    return osp_cont_resume(k, osp_cont_arg(k, 0));
}

static osp_word inner_body(void *env) {
    trace *t = env;
    note(t, "inner ");
    osp_word x = perform1("Outer", "stop", 7); /* the outer arm abandons here */
    note(t, "never %lld ", (long long)x);
    return x;
}

static osp_word outer_body(void *env) {
    /* handle Inner (resuming) in inner_body */
    trace *t = env;
    osp_arm_fn *arms = osp_gc_alloc(sizeof(osp_arm_fn));
    arms[0] = inner_arm;
    osp_cont *c = osp_cont_new(env, arms, 1);
    osp_eff_push("Inner", "get", NULL, env, c, 0, osp_eff_top());
    osp_cont_begin(c, inner_body, env);
    osp_eff_pop(1);
    osp_word v = osp_cont_drive(c);
    note(t, "never-outer ");
    return v;
}

static osp_word outer_arm(void *env, osp_cont_k *k) {
    (void)env;
    return osp_cont_arg(k, 0) * 2; /* no resume: abandon */
}

static void test_nested_abandon_chain(void **state) {
    (void)state;
    trace *t = new_trace();
    int64_t regs = fake_prof_effect_registrations(), unregs = fake_prof_effect_unregistrations();
    osp_arm_fn *arms = osp_gc_alloc(sizeof(osp_arm_fn));
    arms[0] = outer_arm;
    osp_cont *c = osp_cont_new(t, arms, 1);
    osp_eff_push("Outer", "stop", NULL, t, c, 0, osp_eff_top());
    osp_cont_begin(c, outer_body, t);
    osp_eff_pop(1);
    assert_int_equal(osp_cont_drive(c), 14);
    assert_string_equal(t->log, "inner ");
    assert_int_equal(fake_prof_effect_registrations() - regs, 2);
    assert_int_equal(fake_prof_effect_unregistrations() - unregs, 2);
    assert_int_equal(fake_prof_violations(), 0);
}

/* A fiber spawned in the body performs into the resuming handle: served in turn. */
static osp_word fiber_asks(void *env) {
    (void)env;
    return perform1("E", "get", 3);
}

static osp_word body_with_fiber(void *env) {
    (void)env;
    int64_t f = osp_fiber_spawn(fiber_asks, NULL);
    osp_word mine = perform1("E", "get", 1);
    return mine + osp_fiber_wait(f);
}

static osp_word tail_times_ten(void *env, osp_cont_k *k) {
    (void)env;
    return osp_cont_resume_tail(k, osp_cont_arg(k, 0) * 10);
}

static void test_fiber_performs_into_resuming_handle(void **state) {
    (void)state;
    assert_int_equal(run_handle(tail_times_ten, body_with_fiber, NULL), 40);
    assert_int_equal(fake_prof_violations(), 0);
}

/* A fiber that outlives the handle falls through to the next handler down. */
static osp_word late_fiber(void *env) {
    (void)env;
    osp_sleep_ms(20);
    return perform1("E", "get", 2);
}

static osp_word body_spawns_late(void *env) {
    return (osp_word)osp_fiber_spawn(late_fiber, env);
}

static void test_fiber_after_handle_closed(void **state) {
    (void)state;
    osp_word *ten = osp_gc_alloc(sizeof *ten);
    *ten = 10;
    osp_eff_push("E", "get", (void *)plain_add, ten, NULL, 0, osp_eff_top());
    int64_t f = (int64_t)run_handle(tail_times_ten, body_spawns_late, NULL);
    assert_int_equal(osp_fiber_wait(f), 12); /* the plain outer arm: 2 + 10 */
    osp_eff_pop(1);
}

/* A fiber whose perform the arm abandons ends as abandoned; awaiting it is fatal. */
static int64_t abandoned_fiber_id;

static osp_word fiber_abandoned_body(void *env) {
    (void)env;
    int64_t f = osp_fiber_spawn(fiber_asks, NULL);
    abandoned_fiber_id = f;
    while (osp_fiber_state(f) != 1) osp_sleep_ms(1); /* abandoned fibers count as finished */
    return (osp_word)f;
}

static void abandoned_fiber_child(void *arg) {
    (void)arg;
    osp_word v = run_handle(never_resume, fiber_abandoned_body, NULL);
    /* never_resume's value for the fiber's perform (3 + 1000) is the handle's value */
    osp_stream_printf_line("handle %lld", (long long)v);
    osp_fiber_wait(abandoned_fiber_id);
    osp_print_line("not reached");
}

static void test_fiber_abandoned(void **state) {
    (void)state;
    child_output r;
    run_child(abandoned_fiber_child, NULL, &r);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "handle 1003\n");
    char want[96];
    snprintf(want, sizeof want, "fatal: fiber %lld was abandoned by an effect handler\n",
             (long long)1);
    (void)want;
    assert_non_null(strstr(r.err, "was abandoned by an effect handler\n"));
    child_free(&r);
}

int main(void) {
    osp_rt_heap_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stack_dispatch),
        cmocka_unit_test(test_unhandled_prints_to_stdout),
        cmocka_unit_test(test_fiber_inherits),
        cmocka_unit_test(test_resume_deep),
        cmocka_unit_test(test_body_without_perform),
        cmocka_unit_test(test_abandon_nested),
        cmocka_unit_test(test_abandon_first),
        cmocka_unit_test(test_second_resume_fatal),
        cmocka_unit_test(test_tail_resume_loop),
        cmocka_unit_test(test_nested_abandon_chain),
        cmocka_unit_test(test_fiber_performs_into_resuming_handle),
        cmocka_unit_test(test_fiber_after_handle_closed),
        cmocka_unit_test(test_fiber_abandoned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
