/*
 * test_preload.c — libosprey_prof.so profiles an unmodified program when preloaded
 * (docs/profiler-runtime.md): the main thread is registered by the library's
 * constructor, the program's threads as they start (pthread_create interposed).
 */
#define _GNU_SOURCE
#include "support.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_preloaded_program_is_profiled(void **state) {
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX], var[PATH_MAX + 32];
    scratch_dir(dir, sizeof dir, "preload");
    snprintf(path, sizeof path, "%s/preload.json", dir);
    snprintf(var, sizeof var, "OSPREY_PROFILE=%s", path);
    char *env[] = {var, "OSPREY_PROFILE_HZ=2000", "LD_PRELOAD=" PROF_PRELOAD_LIB, NULL};
    char *argv[] = {PROF_PRELOAD_TARGET, "0.3", NULL};
    char err[4096];
    int status = run_child(argv, env, dir, NULL, err, sizeof err);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("target status %d: %s", status, err);
    assert_string_equal(err, "");

    struct raw r;
    raw_load(&r, path);
    assert_string_equal(r.exe, PROF_PRELOAD_TARGET);
    assert_int_equal(r.rate_hz, 2000);
    assert_int_equal(r.nthreads, 3);
    assert_true(raw_row(&r, "main", 0) == 0);
    assert_true(raw_row(&r, "thread", 1) > 0);
    assert_true(raw_row(&r, "thread", 2) > 0);
    bool lib = false;
    for (size_t i = 0; i < r.nimages; i++)
        if (strstr(r.images[i].path, "libosprey_prof.so")) lib = true;
    assert_true(lib);
    size_t mi = raw_main_image(&r);
    uint64_t addr, size;
    assert_true(elf_symbol(PROF_PRELOAD_TARGET, "target_hot", &addr, &size));
    for (long row = 0; row < 3; row++) {
        size_t on = 0, hot = 0;
        for (size_t i = 0; i < r.nsamples; i++) {
            if ((long)r.samples[i].row != row || r.samples[i].state != 0) continue;
            on++;
            uint64_t leaf = r.stacks[r.samples[i].stack][0];
            assert_true(leaf >= r.images[mi].slide);
            if (raw_in_text(&r, mi, leaf) && leaf - r.images[mi].slide >= addr &&
                leaf - r.images[mi].slide < addr + size)
                hot++;
        }
        print_message("row %ld: %zu on-CPU, %zu in target_hot\n", row, on, hot);
        assert_true(on >= 50);
        assert_true(hot * 2 >= on);
    }
    raw_free(&r);
    scratch_cleanup(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preloaded_program_is_profiled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
