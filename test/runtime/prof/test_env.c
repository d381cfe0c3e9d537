/*
 * test_env.c — activation through the environment (docs/spec/profiler.md §(a)), by running
 * prof_helper (a program linked with the runtime that boots from its load-time
 * constructor) with chosen variables: exact warning texts, rate clamping, relative path
 * resolved at boot, variables removed from the environment, inert when unset, file mode
 * 0600 and atomic replacement, write errors reported, exit() from a worker thread, a
 * forked child never writing.
 */
#define _GNU_SOURCE
#include "support.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[PATH_MAX];

static int setup(void **state) {
    (void)state;
    scratch_dir(g_dir, sizeof g_dir, "env");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_cleanup(g_dir);
    return 0;
}

struct run {
    int status;
    char err[8192];
    char out[8192];
};

/* Run the helper with up to three variables (NULL entries skipped). */
static bool g_no_leak_check;

static void helper(struct run *r, const char *cwd, const char *v1, const char *v2, const char *v3,
                   const char *a1, const char *a2, const char *a3) {
    char *env[8];
    int n = 0;
    const char *vars[3] = {v1, v2, v3};
    for (int i = 0; i < 3; i++)
        if (vars[i]) env[n++] = (char *)vars[i];
    /* Sanitizer runtimes read their options from the environment. */
    static char asan[512], tsan[512], ubsan[512];
    const char *o;
    if ((o = getenv("ASAN_OPTIONS")) != NULL || g_no_leak_check)
        env[n++] = (snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%s", o ? o : "",
                             g_no_leak_check ? ":detect_leaks=0" : ""),
                    asan);
    if ((o = getenv("TSAN_OPTIONS")) != NULL)
        env[n++] = (snprintf(tsan, sizeof tsan, "TSAN_OPTIONS=%s", o), tsan);
    if ((o = getenv("UBSAN_OPTIONS")) != NULL)
        env[n++] = (snprintf(ubsan, sizeof ubsan, "UBSAN_OPTIONS=%s", o), ubsan);
    env[n] = NULL;
    char *argv[] = {PROF_HELPER, (char *)a1, (char *)a2, (char *)a3, NULL};
    char out_path[PATH_MAX];
    snprintf(out_path, sizeof out_path, "%s/helper.stdout", g_dir);
    r->status = run_child(argv, env, cwd, out_path, r->err, sizeof r->err);
    if (read_text(out_path, r->out, sizeof r->out) < 0) r->out[0] = '\0';
    unlink(out_path);
}

static void expect_clean_exit(const struct run *r) {
    if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
        fail_msg("helper status %d, stderr: %s", r->status, r->err);
}

/* Files in the scratch directory other than `keep` (temporary leftovers). */
static int stray_files(const char *keep) {
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || strcmp(e->d_name, "..") == 0)) continue;
        if (keep && strcmp(e->d_name, keep) == 0) continue;
        if (e->d_type == DT_DIR) continue;
        n++;
    }
    closedir(d);
    return n;
}

static void test_unset_or_empty_is_inert(void **state) {
    (void)state;
    struct run r;
    helper(&r, g_dir, NULL, "OSPREY_PROFILE_HZ=abc", NULL, "busy", "20", NULL);
    expect_clean_exit(&r);
    assert_string_equal(r.err, ""); /* HZ is not even looked at */
    assert_non_null(strstr(r.out, "samplers=0\n"));
    assert_non_null(strstr(r.out, "OSPREY_PROFILE_HZ=abc\n")); /* untouched */
    helper(&r, g_dir, "OSPREY_PROFILE=", NULL, NULL, "busy", "20", NULL);
    expect_clean_exit(&r);
    assert_string_equal(r.err, "");
    assert_non_null(strstr(r.out, "samplers=0\n"));
    assert_int_equal(stray_files(NULL), 0);
}

static void test_active_boot(void **state) {
    (void)state;
    char path[PATH_MAX], var[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/boot.json", g_dir);
    snprintf(var, sizeof var, "OSPREY_PROFILE=%s", path);
    /* A previous file is replaced atomically. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);
    struct run r;
    helper(&r, g_dir, var, "OSPREY_PROFILE_HZ=1500", NULL, "busy", "200", NULL);
    expect_clean_exit(&r);
    assert_string_equal(r.err, "");
    /* Sampler running; both variables gone from the environment. */
    assert_non_null(strstr(r.out, "samplers=1\n"));
    assert_non_null(strstr(r.out, "OSPREY_PROFILE=<unset>\n"));
    assert_non_null(strstr(r.out, "OSPREY_PROFILE_HZ=<unset>\n"));
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(stray_files("boot.json"), 0);
    struct raw raw;
    raw_load(&raw, path);
    assert_int_equal(raw.rate_hz, 1500);
    assert_string_equal(raw.exe, PROF_HELPER);
    assert_int_equal(raw.nthreads, 1);
    assert_string_equal(raw.threads[0].label, "main");
    assert_int_equal(raw.threads[0].fiber, 0);
    size_t mi = raw_main_image(&raw);
    /* The leaf is in helper_hot; under ThreadSanitizer a third of the time it is in the
     * memory-access hooks helper_hot calls (for its volatile accumulator), which the
     * sanitizer runtime links into the helper. */
    const char *hot_fns[] = {"helper_hot", "__tsan_read8", "__tsan_write8"};
    size_t nhot = 1;
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
    nhot = 3;
#endif
#endif
    uint64_t addr[3], size[3];
    for (size_t k = 0; k < nhot; k++)
        assert_true(elf_symbol(PROF_HELPER, hot_fns[k], &addr[k], &size[k]));
    size_t hot = 0, on = 0;
    for (size_t i = 0; i < raw.nsamples; i++) {
        if (raw.samples[i].state != 0) continue;
        on++;
        uint64_t leaf = raw.stacks[raw.samples[i].stack][0] - raw.images[mi].slide;
        for (size_t k = 0; k < nhot; k++)
            if (leaf >= addr[k] && leaf < addr[k] + size[k]) {
                hot++;
                break;
            }
    }
    assert_true(on >= 30);
    assert_true(hot * 2 >= on);
    raw_free(&raw);
}

static void expect_rate(const char *hz_var, uint32_t want, const char *want_err) {
    char path[PATH_MAX], var[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/rate.json", g_dir);
    snprintf(var, sizeof var, "OSPREY_PROFILE=%s", path);
    unlink(path);
    struct run r;
    helper(&r, g_dir, var, hz_var, NULL, "busy", "30", NULL);
    expect_clean_exit(&r);
    assert_string_equal(r.err, want_err);
    struct raw raw;
    raw_load(&raw, path);
    if (raw.rate_hz != want)
        fail_msg("%s: rate_hz %u, want %u", hz_var ? hz_var : "(unset)", raw.rate_hz, want);
    raw_free(&raw);
}

static void test_rate_parsing_and_warnings(void **state) {
    (void)state;
    expect_rate(NULL, 997, "");
    expect_rate("OSPREY_PROFILE_HZ=", 997, "");
    expect_rate("OSPREY_PROFILE_HZ=250", 250, "");
    expect_rate("OSPREY_PROFILE_HZ=+40", 40, "");
    expect_rate("OSPREY_PROFILE_HZ=10", 10, "");
    expect_rate("OSPREY_PROFILE_HZ=10000", 10000, "");
    /* Out of range: clamped, and said once. */
    expect_rate("OSPREY_PROFILE_HZ=0", 10,
                "osprey profiler: OSPREY_PROFILE_HZ=\"0\" is out of range 10..10000; using 10\n");
    expect_rate("OSPREY_PROFILE_HZ=5", 10,
                "osprey profiler: OSPREY_PROFILE_HZ=\"5\" is out of range 10..10000; using 10\n");
    expect_rate("OSPREY_PROFILE_HZ=-3", 10,
                "osprey profiler: OSPREY_PROFILE_HZ=\"-3\" is out of range 10..10000; using 10\n");
    expect_rate("OSPREY_PROFILE_HZ=10001", 10000,
                "osprey profiler: OSPREY_PROFILE_HZ=\"10001\" is out of range 10..10000; using "
                "10000\n");
    expect_rate("OSPREY_PROFILE_HZ=99999999999999999999999", 10000,
                "osprey profiler: OSPREY_PROFILE_HZ=\"99999999999999999999999\" is out of range "
                "10..10000; using 10000\n");
    expect_rate("OSPREY_PROFILE_HZ=-99999999999999999999999", 10,
                "osprey profiler: OSPREY_PROFILE_HZ=\"-99999999999999999999999\" is out of range "
                "10..10000; using 10\n");
    expect_rate("OSPREY_PROFILE_HZ=abc", 997,
                "osprey profiler: OSPREY_PROFILE_HZ=\"abc\" is not an integer; using 997\n");
    expect_rate("OSPREY_PROFILE_HZ=1e3", 997,
                "osprey profiler: OSPREY_PROFILE_HZ=\"1e3\" is not an integer; using 997\n");
    expect_rate("OSPREY_PROFILE_HZ= 50", 997,
                "osprey profiler: OSPREY_PROFILE_HZ=\" 50\" is not an integer; using 997\n");
}

static void test_relative_path_resolved_at_boot(void **state) {
    (void)state;
    char sub[PATH_MAX], want[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/elsewhere", g_dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(want, sizeof want, "%s/relative.json", g_dir);
    struct run r;
    /* The helper changes directory after boot; the file stays where it was resolved. */
    helper(&r, g_dir, "OSPREY_PROFILE=relative.json", NULL, NULL, "chdir", sub, "30");
    expect_clean_exit(&r);
    assert_string_equal(r.err, "");
    assert_int_equal(access(want, F_OK), 0);
    char wrong[PATH_MAX];
    snprintf(wrong, sizeof wrong, "%s/relative.json", sub);
    assert_int_equal(access(wrong, F_OK), -1);
    struct raw raw;
    raw_load(&raw, want);
    raw_free(&raw);
}

static void test_path_too_long(void **state) {
    (void)state;
    static char var[6000];
    /* Absolute, 4096 bytes. */
    int n = snprintf(var, sizeof var, "OSPREY_PROFILE=/");
    memset(var + n, 'a', 4095);
    var[n + 4095] = '\0';
    struct run r;
    helper(&r, g_dir, var, NULL, NULL, "busy", "10", NULL);
    expect_clean_exit(&r);
    assert_string_equal(r.err, "osprey profiler: output path too long; profiling disabled\n");
    assert_non_null(strstr(r.out, "samplers=0\n"));
    /* Relative, too long only once joined to the working directory. */
    n = snprintf(var, sizeof var, "OSPREY_PROFILE=");
    size_t len = 4096 - strlen(g_dir) - 1;
    memset(var + n, 'r', len);
    var[n + len] = '\0';
    helper(&r, g_dir, var, NULL, NULL, "busy", "10", NULL);
    expect_clean_exit(&r);
    assert_string_equal(r.err, "osprey profiler: output path too long; profiling disabled\n");
}

static void test_unwritable_path(void **state) {
    (void)state;
    struct run r;
    helper(&r, g_dir, "OSPREY_PROFILE=/nonexistent-osprey-dir/x.json", NULL, NULL, "busy", "10",
           NULL);
    expect_clean_exit(&r); /* the program is unaffected */
    /* Reported at start, before the program runs (§(l.5)), and nothing is sampled. */
    assert_string_equal(r.err, "osprey profiler: cannot write /nonexistent-osprey-dir/x.json: No "
                               "such file or directory; profiling disabled\n");
    assert_non_null(strstr(r.out, "samplers=0\n"));
}

static void test_exit_from_worker_thread(void **state) {
    (void)state;
    char path[PATH_MAX], var[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/worker-exit.json", g_dir);
    snprintf(var, sizeof var, "OSPREY_PROFILE=%s", path);
    struct run r;
    helper(&r, g_dir, var, "OSPREY_PROFILE_HZ=2000", NULL, "worker-exit", "150", NULL);
    expect_clean_exit(&r);
    assert_string_equal(r.err, "");
    struct raw raw;
    raw_load(&raw, path);
    long row = raw_row(&raw, "fiber", 1);
    assert_true(row == 1);
    size_t on = 0;
    for (size_t i = 0; i < raw.nsamples; i++)
        if ((long)raw.samples[i].row == row && raw.samples[i].state == 0) on++;
    assert_true(on >= 30);
    raw_free(&raw);
}

static void test_forked_child_never_writes(void **state) {
    (void)state;
    char path[PATH_MAX], var[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/fork.json", g_dir);
    snprintf(var, sizeof var, "OSPREY_PROFILE=%s", path);
    struct run r;
    /* LeakSanitizer cannot check a forked child of a threaded process (it reports the
     * parent's threads as unsuspended); it is not what this test is about. */
    g_no_leak_check = true;
    helper(&r, g_dir, var, NULL, NULL, "fork", path, "60");
    g_no_leak_check = false;
    expect_clean_exit(&r);
    assert_string_equal(r.err, "");
    assert_non_null(strstr(r.out, "child-samplers=0\n")); /* no sampler in the child */
    assert_non_null(strstr(r.out, "after-child=absent\n"));
    struct raw raw;
    raw_load(&raw, path);
    assert_int_equal(raw.nthreads, 1);
    raw_free(&raw);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unset_or_empty_is_inert),
        cmocka_unit_test(test_active_boot),
        cmocka_unit_test(test_rate_parsing_and_warnings),
        cmocka_unit_test(test_relative_path_resolved_at_boot),
        cmocka_unit_test(test_path_too_long),
        cmocka_unit_test(test_unwritable_path),
        cmocka_unit_test(test_exit_from_worker_thread),
        cmocka_unit_test(test_forked_child_never_writes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
