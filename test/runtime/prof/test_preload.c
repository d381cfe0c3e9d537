/*
 * test_preload.c — libosprey_prof.so profiles an unmodified program when preloaded
 * (docs/profiler-runtime.md): the main thread is registered by the library's
 * constructor, the program's threads as they start (pthread_create interposed), and a
 * plain nanosleep call runs to its end (sleeping calls are blocking regions). A program
 * that ends with _exit keeps its profile; one that execs itself (execv, execl, execlp,
 * execle) is followed into the new program, a forked child's exec is not.
 */
#define _GNU_SOURCE
#include "support.h"

#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the target (its sleeper waiting in `how`, NULL: nanosleep) and checks the whole
 * profile; `how` names the sleeping call in messages. */
static void check_preloaded_run(const char *how) {
    char dir[PATH_MAX], path[PATH_MAX], var[PATH_MAX + 32], wait_var[64];
    scratch_dir(dir, sizeof dir, "preload");
    snprintf(path, sizeof path, "%s/preload.json", dir);
    snprintf(var, sizeof var, "OSPREY_PROFILE=%s", path);
    snprintf(wait_var, sizeof wait_var, "PRELOAD_TARGET_WAIT=%s", how ? how : "nanosleep");
    char *env[] = {var, "OSPREY_PROFILE_HZ=2000", "LD_PRELOAD=" PROF_PRELOAD_LIB, wait_var, NULL};
    char *argv[] = {PROF_PRELOAD_TARGET, "0.3", NULL};
    char err[4096], out_path[PATH_MAX], out[4096];
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    int status = run_child(argv, env, dir, out_path, err, sizeof err);
    assert_true(read_text(out_path, out, sizeof out) > 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("target status %d: %s", status, err);
    assert_string_equal(err, "");

    struct raw r;
    raw_load(&r, path);
    assert_string_equal(r.exe, PROF_PRELOAD_TARGET);
    assert_int_equal(r.rate_hz, 2000);
    assert_int_equal(r.nthreads, 4);
    assert_true(raw_row(&r, "main", 0) == 0);
    assert_true(raw_row(&r, "thread", 1) > 0);
    assert_true(raw_row(&r, "thread", 2) > 0);
    long sleeper = raw_row(&r, "thread", 3);
    assert_true(sleeper > 0);
    long lib = -1;
    for (size_t i = 0; i < r.nimages; i++)
        if (strstr(r.images[i].path, "libosprey_prof.so")) lib = (long)i;
    assert_true(lib >= 0);

    /* The single sleeping call slept its full time: never interrupted. */
    int sleep_ret = -2;
    double slept = 0;
    assert_int_equal(sscanf(out, "sleep_ret=%d slept=%lf", &sleep_ret, &slept), 2);
    assert_int_equal(sleep_ret, 0);
    assert_true(slept >= 0.3 - 1e-3);
    size_t mi = raw_main_image(&r);
    uint64_t addr, size;
    assert_true(elf_symbol(PROF_PRELOAD_TARGET, "target_hot", &addr, &size));
    /* Rows are in registration order, which is the order the threads start in, not the
     * order they were created in: look them up by fiber id. */
    const long busy[3] = {raw_row(&r, "main", 0), raw_row(&r, "thread", 1),
                          raw_row(&r, "thread", 2)};
    for (int b = 0; b < 3; b++) {
        long row = busy[b];
        assert_true(row >= 0);
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
    /* The sleeper: waiting samples whose stack starts in the library's nanosleep wrapper
     * and goes on into the program's target_sleep. */
    uint64_t saddr, ssize;
    assert_true(elf_symbol(PROF_PRELOAD_TARGET, "target_sleep", &saddr, &ssize));
    size_t waiting = 0, good = 0;
    for (size_t i = 0; i < r.nsamples; i++) {
        if ((long)r.samples[i].row != sleeper || r.samples[i].state != 1) continue;
        waiting++;
        uint32_t k = r.samples[i].stack;
        bool leaf_in_lib = raw_in_text(&r, (size_t)lib, r.stacks[k][0]);
        bool caller = false;
        for (uint32_t j = 1; j < r.stack_len[k]; j++) {
            uint64_t a = r.stacks[k][j] - 1 - r.images[mi].slide;
            if (a >= saddr && a < saddr + ssize) caller = true;
        }
        if (leaf_in_lib && caller) good++;
    }
    print_message("sleeper (%s): %zu waiting samples, %zu through the wrapper into target_sleep; "
                  "slept %.3f s\n",
                  how ? how : "nanosleep", waiting, good, slept);
    assert_true((double)waiting >= fmin(50, 0.05 * raw_wait_hz(&r, 2000))); /* 0.3 s asleep */
    assert_int_equal(good, waiting);
    raw_free(&r);
    scratch_cleanup(dir);
}

static void test_preloaded_program_is_profiled(void **state) {
    (void)state;
    check_preloaded_run(NULL);
}

/* The other sleeping calls the library wraps, the raw syscall() among them: each waits
 * to its end, inside the library's wrapper (never interrupted, §(l.3)). */
static void test_other_waits_are_wrapped(void **state) {
    (void)state;
    check_preloaded_run("sigtimedwait");
    check_preloaded_run("sem_timedwait");
    check_preloaded_run("syscall_nanosleep");
}

/* Run the target with `end` (see preload_target.c); returns its exit status, its pid
 * (from "pid=<n>") and the number of "sleep_ret=" lines; the raw file is `path`. */
static int run_ending(const char *dir, const char *path, const char *end, int *pid, int *sleeps) {
    char var[PATH_MAX + 32];
    snprintf(var, sizeof var, "OSPREY_PROFILE=%s", path);
    char *env[] = {var, "OSPREY_PROFILE_HZ=2000", "LD_PRELOAD=" PROF_PRELOAD_LIB, NULL};
    char *argv[] = {PROF_PRELOAD_TARGET, "0.2", (char *)end, NULL};
    char err[4096], out_path[PATH_MAX], out[4096];
    snprintf(out_path, sizeof out_path, "%s/stdout-%s", dir, end);
    int status = run_child(argv, env, dir, out_path, err, sizeof err);
    assert_true(read_text(out_path, out, sizeof out) > 0);
    assert_string_equal(err, "");
    const char *p = strstr(out, "pid=");
    assert_non_null(p);
    *pid = atoi(p + 4);
    *sleeps = 0;
    for (p = out; (p = strstr(p, "sleep_ret=")) != NULL; p++) (*sleeps)++;
    return status;
}

/* _exit runs no atexit handler: the profile is written all the same (by the sampler
 * thread, before the real _exit), and the exit status is the program's. */
static void test_exit_underscore_keeps_profile(void **state) {
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX];
    scratch_dir(dir, sizeof dir, "preload_exit");
    snprintf(path, sizeof path, "%s/exit.json", dir);
    int pid, sleeps;
    int status = run_ending(dir, path, "_exit", &pid, &sleeps);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7);
    struct raw r;
    raw_load(&r, path);
    assert_int_equal(r.pid, pid);
    assert_int_equal(r.nthreads, 4);
    assert_true(r.nsamples > 0);
    raw_free(&r);
    scratch_cleanup(dir);
}

/* exec by the profiled process: the new program (LD_PRELOAD inherited) gets the profile
 * back and writes it at its own exit; an exec in a forked child is not followed (the
 * file is the parent's). */
static void test_exec_is_followed(void **state) {
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX];
    scratch_dir(dir, sizeof dir, "preload_exec");
    snprintf(path, sizeof path, "%s/exec.json", dir);
    int pid, sleeps;
    int status = run_ending(dir, path, "exec", &pid, &sleeps);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(sleeps, 2); /* the program, then what it became */
    struct raw r;
    raw_load(&r, path);
    assert_int_equal(r.pid, pid);    /* exec keeps the pid */
    assert_int_equal(r.nthreads, 4); /* the new program's own threads */
    assert_int_equal(r.rate_hz, 2000);
    raw_free(&r);

    snprintf(path, sizeof path, "%s/forkexec.json", dir);
    status = run_ending(dir, path, "forkexec", &pid, &sleeps);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(sleeps, 2);
    raw_load(&r, path);
    assert_int_equal(r.pid, pid); /* the parent's file, not overwritten by the child */
    raw_free(&r);
    scratch_cleanup(dir);
}

/* execl, execlp and execle (glibc's call its internal execve, past the execve wrapper) are
 * followed the same way: one program, then what it became, in one profile with the same
 * pid. execle's environment is the one given after the NULL (it has no OSPREY_PROFILE of its
 * own: following puts it back) and OSPREY_PROFILE_HZ comes back with it. */
static void test_execl_family_is_followed(void **state) {
    (void)state;
    static const char *const ends[] = {"execl", "execlp", "execle"};
    char dir[PATH_MAX], path[PATH_MAX];
    scratch_dir(dir, sizeof dir, "preload_execl");
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        snprintf(path, sizeof path, "%s/%s.json", dir, ends[i]);
        int pid, sleeps;
        int status = run_ending(dir, path, ends[i], &pid, &sleeps);
        print_message("%s: status %d, %d sleeps\n", ends[i], status, sleeps);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(sleeps, 2); /* the program, then what it became */
        struct raw r;
        raw_load(&r, path);
        assert_int_equal(r.pid, pid);
        assert_int_equal(r.nthreads, 4); /* the new program's own threads */
        assert_int_equal(r.rate_hz, 2000);
        raw_free(&r);
    }
    char out_path[PATH_MAX], out[4096];
    snprintf(out_path, sizeof out_path, "%s/stdout-execle", dir);
    assert_true(read_text(out_path, out, sizeof out) > 0);
    assert_non_null(strstr(out, "mark=execle\n")); /* the envp after the NULL was used */
    scratch_cleanup(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preloaded_program_is_profiled),
        cmocka_unit_test(test_other_waits_are_wrapped),
        cmocka_unit_test(test_exit_underscore_keeps_profile),
        cmocka_unit_test(test_exec_is_followed),
        cmocka_unit_test(test_execl_family_is_followed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
