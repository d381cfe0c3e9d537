/*
 * test_runtime.c — the profiler together with runtime/core, as in an Osprey program:
 * fiber threads register themselves (label "fiber", their fiber id), and the runtime's
 * waits (osp_sleep_ms, osp_fiber_wait) are blocking regions whose waiting samples start
 * at the runtime's own call site (docs/spec/profiler.md §(b.3), §(c) item 6, §(d)).
 */
#define _GNU_SOURCE
#include "support.h"

#include <math.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "osprey_rt.h"

osp_word computing_fiber(void *env) {
    (void)env;
    burn_cpu(0.15);
    return 1;
}

osp_word sleeping_fiber(void *env) {
    (void)env;
    burn_cpu(0.05);
    osp_sleep_ms(250);
    return 2;
}

static void test_fibers_sleep_and_await(void **state) {
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX];
    scratch_dir(dir, sizeof dir, "runtime");
    snprintf(path, sizeof path, "%s/fibers.json", dir);
    char *argv[] = {"test", NULL};
    osp_rt_start(1, argv); /* boots the profiler: inert, OSPREY_PROFILE is not set */
    assert_true(osp_prof_session_begin(path, 2000));
    double t_spawn = mono_seconds();
    int64_t a = osp_fiber_spawn(computing_fiber, NULL);
    int64_t b = osp_fiber_spawn(sleeping_fiber, NULL);
    double t0 = mono_seconds();
    assert_int_equal(osp_fiber_wait(b), 2);
    assert_int_equal(osp_fiber_wait(a), 1);
    double t_end = mono_seconds();
    double waited = t_end - t0;
    assert_true(osp_prof_session_end());

    struct raw r;
    raw_load(&r, path);
    long ra = raw_row(&r, "fiber", a), rb = raw_row(&r, "fiber", b);
    size_t mi = raw_main_image(&r);
    assert_true(ra > 0 && rb > 0);
    /* Waiting samples in the runtime's waits start at its call site. (A thread may also
     * wait outside them, e.g. stopped by the collector, so not every waiting sample
     * does.) */
    size_t main_wait = 0, sleep_wait = 0, a_on = 0, rooted = 0;
    uint64_t main_w = 0, sleep_w = 0, sleep_longest_ns = 0, main_longest_ns = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        const struct raw_sample *s = &r.samples[i];
        const char *leaf = sym_name(r.stacks[s->stack][0], false);
        if (s->row == 0 && s->state == 1 && strcmp(leaf, "osp_fiber_wait") == 0) {
            main_wait++;
            main_w += s->weight;
            if (s->weight > main_longest_ns) main_longest_ns = s->weight;
        }
        if ((long)s->row == rb && s->state == 1 && strcmp(leaf, "osp_sleep_ms") == 0) {
            assert_true(raw_stack_has(&r, s->stack, "sleeping_fiber"));
            sleep_wait++;
            sleep_w += s->weight;
            if (s->weight > sleep_longest_ns) sleep_longest_ns = s->weight;
        }
        if ((long)s->row == ra && s->state == 0) a_on++;
        /* Fiber stacks end at the runtime's fiber entry, in the program itself: the
         * collector's start routine above it (no frame pointer, no symbol) is never
         * recorded as a frame. (Only stacks whose chain reaches the fiber's body: a
         * sample taken in code without frame pointers, such as the vDSO, can end early.) */
        if (((long)s->row == ra && raw_stack_has(&r, s->stack, "computing_fiber")) ||
            ((long)s->row == rb && raw_stack_has(&r, s->stack, "sleeping_fiber"))) {
            const uint64_t *st = r.stacks[s->stack];
            if (!raw_in_text(&r, mi, st[r.stack_len[s->stack] - 1])) {
                /* Say which stack, to tell a walk past the fiber entry from one cut short. */
                for (uint32_t f = 0; f < r.stack_len[s->stack]; f++)
                    print_message("  frame %u: %#llx %s%s\n", f, (unsigned long long)st[f],
                                  sym_name(st[f], f > 0),
                                  raw_in_text(&r, mi, st[f]) ? "" : " (not the program's)");
                fail_msg("a fiber stack (row %u, state %d, truncated %d) ends outside the "
                         "program",
                         s->row, s->state, (int)r.truncated[s->stack]);
            }
            rooted++;
        }
    }
    print_message(
        "main waited %.3f s (%zu samples, %.3f s measured); fiber %lld slept %.3f s (%zu samples); "
        "fiber %lld %zu on-CPU\n",
        (double)main_w / 1e9, main_wait, waited, (long long)b, (double)sleep_w / 1e9, sleep_wait,
        (long long)a, a_on);
    /* The main thread's waits lie between t0 and t_end; all its waiting weights but the
     * first lie inside them. */
    assert_true(main_wait >= 1);
    assert_true(main_w - main_longest_ns <= (uint64_t)(waited * 1e9));
    assert_true(sleep_wait >= 1);
    /* Waiting weights are wall time between ticks; all but the first lie inside the sleep,
     * which lies between the spawn and the end of the waits. (How close they come to the
     * 0.25 s slept depends on the load: bench/, not a bound here.) */
    assert_true(sleep_w - sleep_longest_ns <= (uint64_t)((t_end - t_spawn) * 1e9));
    assert_true((double)a_on >= 50 * raw_engine_hz(&r, 2000) / 2000);
    assert_true((double)rooted >= fmin(100, 0.2 * raw_wait_hz(&r, 2000)));
    raw_free(&r);
    scratch_cleanup(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fibers_sleep_and_await),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
