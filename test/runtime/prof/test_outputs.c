/*
 * test_outputs.c — where the raw profile goes and what the runtime says about it
 * (docs/spec/profiler.md §(a), (k) items 9 and 14; docs/profiler-runtime.md):
 *  - an existing FIFO or character device at the output path is written in place and is
 *    never replaced by a regular file (as root, the old rename destroyed /dev/null);
 *  - a symbolic link to a regular file is followed: the file it names is replaced, the
 *    link stays; a dangling link and a directory are refused with one message;
 *  - the temporary is "<dir>/.<base>.XXXXXX" beside the file replaced, the scheme of
 *    common/atomic_output.h (test/common/test_atomic_output.c checks the same names), and
 *    none is left behind;
 *  - a program that installs its own SIGPROF handler after the profiler started gets one
 *    "SIGPROF handler was replaced" line (the profile is not silently empty); a program
 *    that does not gets none.
 */
#define _GNU_SOURCE
#include "prof_session.h"
#include "support.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[PATH_MAX];

static int setup(void **state) {
    (void)state;
    scratch_dir(g_dir, sizeof g_dir, "outputs");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_cleanup(g_dir);
    return 0;
}

/* A short session writing to `path`; returns what osp_prof_session_end() said. */
static bool short_session(const char *path) {
    assert_true(osp_prof_session_begin(path, 1000));
    burn_cpu(0.02);
    return osp_prof_session_end();
}

/* ---- the temporary's name ---------------------------------------------------------- */

static void test_temporary_name(void **state) {
    (void)state;
    static const struct {
        const char *dest, *tmp;
    } cases[] = {
        {"/a/b/out.osprof.json", "/a/b/.out.osprof.json.XXXXXX"},
        {"prog.json", ".prog.json.XXXXXX"},
        {"/top", "/.top.XXXXXX"},
        {"dir/.hidden", "dir/..hidden.XXXXXX"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = osp_prof__raw_temp_name(cases[i].dest);
        assert_non_null(t);
        assert_string_equal(t, cases[i].tmp);
        free(t);
    }
    /* a name of 248 to 255 bytes fits in NAME_MAX; its temporary must too: the base is cut
     * to 247 bytes (common/atomic_output.h's OSP_ATOMIC_TEMP_BASE_MAX) */
    char longdest[300], want[300];
    memset(longdest, 0, sizeof longdest);
    memcpy(longdest, "/d/", 3);
    memset(longdest + 3, 'n', 255);
    snprintf(want, sizeof want, "/d/.%.*s.XXXXXX", 247, longdest + 3);
    char *lt = osp_prof__raw_temp_name(longdest);
    assert_non_null(lt);
    assert_string_equal(lt, want);
    assert_int_equal(strlen(strrchr(lt, '/') + 1), 255);
    free(lt);
    /* a real write through it leaves only the file */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tmpname", g_dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/tmpname/p.json", g_dir);
    assert_true(short_session(path));
    snprintf(path, sizeof path, "%s/tmpname", g_dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        assert_string_equal(e->d_name, "p.json");
        n++;
    }
    closedir(d);
    assert_int_equal(n, 1);
}

/* ---- a FIFO --------------------------------------------------------------------- */

struct reader {
    const char *path;
    char *data;
    size_t n;
};

static void *read_fifo(void *arg) {
    struct reader *r = arg;
    int fd = open(r->path, O_RDONLY | O_CLOEXEC); /* blocks until the writer opens */
    if (fd < 0) return NULL;
    size_t cap = 1 << 16;
    r->data = malloc(cap);
    for (;;) {
        if (r->n + 1 >= cap) r->data = realloc(r->data, cap *= 2);
        ssize_t k = read(fd, r->data + r->n, cap - 1 - r->n);
        if (k <= 0) break;
        r->n += (size_t)k;
    }
    r->data[r->n] = 0;
    close(fd);
    return NULL;
}

static void test_fifo_written_in_place(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/profile.fifo", g_dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    struct reader r = {.path = path};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_fifo, &r), 0);
    bool ok = short_session(path);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    bool still_fifo = S_ISFIFO(st.st_mode);
    if (!still_fifo) pthread_cancel(t); /* nobody will ever open the old FIFO */
    pthread_join(t, NULL);
    assert_true(still_fifo); /* never replaced by a regular file */
    assert_true(ok);
    assert_non_null(r.data);
    assert_true(r.n > 20);
    assert_memory_equal(r.data, "{\"version\":1,", 12);
    assert_int_equal(r.data[r.n - 1], '\n');
    free(r.data);
}

/* ---- a character device (root only: mknod) --------------------------------------- */

static void test_char_device_written_in_place(void **state) {
    (void)state;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/null", g_dir);
    /* A private null device (1:3) in the scratch directory: the real /dev/null is
     * never touched. Needs root and a file system that allows devices. */
    if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        print_message("skipped: mknod: %s (needs root)\n", strerror(errno));
        skip();
    }
    int probe = open(path, O_WRONLY | O_CLOEXEC);
    if (probe < 0) {
        print_message("skipped: cannot open a device here: %s\n", strerror(errno));
        skip();
    }
    close(probe);
    assert_true(short_session(path));
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(st.st_rdev, makedev(1, 3));
}

/* ---- symbolic links, directories ------------------------------------------------- */

static void test_symlink_followed(void **state) {
    (void)state;
    char target[PATH_MAX], link[PATH_MAX], buf[64];
    snprintf(target, sizeof target, "%s/real.json", g_dir);
    snprintf(link, sizeof link, "%s/link.json", g_dir);
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);
    assert_int_equal(symlink("real.json", link), 0);
    assert_true(short_session(link));
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode)); /* the link stays a link ... */
    assert_true(read_text(target, buf, sizeof buf) > 12);
    assert_memory_equal(buf, "{\"version\":1,", 12); /* ... to the new profile */
    struct raw r;
    raw_load(&r, link);
    raw_free(&r);
}

static void test_dangling_symlink_and_directory_refused(void **state) {
    (void)state;
    char link[PATH_MAX], dir[PATH_MAX];
    snprintf(link, sizeof link, "%s/dangling.json", g_dir);
    snprintf(dir, sizeof dir, "%s/adir", g_dir);
    assert_int_equal(symlink("missing/target.json", link), 0);
    /* Refused when the session starts (§(l.5)), not after the run. */
    assert_false(osp_prof_session_begin(link, 1000));
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_false(osp_prof_session_begin(dir, 1000));
    assert_int_equal(lstat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
}

/* ---- SIGPROF replaced by the program ----------------------------------------------- */

static const char k_replaced[] = "osprey profiler: SIGPROF handler was replaced by the program; "
                                 "samples after that point are lost\n";

static void run_program(const char *mode, char *err, size_t cap, char *out, size_t outcap,
                        const char *raw) {
    char var[PATH_MAX + 32], out_path[PATH_MAX];
    snprintf(var, sizeof var, "OSPREY_PROFILE=%s", raw);
    snprintf(out_path, sizeof out_path, "%s/program.stdout", g_dir);
    char *env[8];
    int n = 0;
    env[n++] = var;
    static char san[5][512];
    const char *names[5] = {"ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS",
                            "OSPREY_PROFILE_ENGINE", "OSPREY_PROFILE_PERF_DELIVERY"};
    for (int i = 0; i < 5; i++) {
        const char *o = getenv(names[i]);
        if (o) env[n++] = (snprintf(san[i], sizeof san[i], "%s=%s", names[i], o), san[i]);
    }
    env[n] = NULL;
    char *argv[] = {SIGPROF_PROGRAM, (char *)mode, "300", NULL};
    int status = run_child(argv, env, NULL, out_path, err, cap);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("status %d, stderr: %s", status, err);
    assert_true(read_text(out_path, out, outcap) > 0);
}

/* Whether this process can open a task-clock counter with the runtime's ring delivery
 * and map its ring (as prof_engine_timer.c does; x86-64 only): then a child profiled with
 * the perf_event engine samples without SIGPROF. */
static bool ring_delivery_available(void) {
#if defined(__x86_64__)
    const char *e = getenv("OSPREY_PROFILE_ENGINE"), *d = getenv("OSPREY_PROFILE_PERF_DELIVERY");
    if ((e && *e && strcmp(e, "perf_event") != 0 && strcmp(e, "auto") != 0) ||
        (d && strcmp(d, "signal") == 0))
        return false;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 1000000;
    a.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = 1u << 6;
    a.sample_stack_user = 8192;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return false;
    size_t len = (size_t)sysconf(_SC_PAGESIZE) + ((size_t)256 << 10);
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return false;
    munmap(m, len);
    return true;
#else
    return false;
#endif
}

static void test_sigprof_replaced_is_reported(void **state) {
    (void)state;
    char raw[PATH_MAX], err[4096], out[256];
    snprintf(raw, sizeof raw, "%s/own.json", g_dir);
    run_program("own", err, sizeof err, out, sizeof out, raw);
    print_message("program: %sstderr: %s", out, err);
    assert_non_null(strstr(out, "ticks="));
    assert_true(atoi(strstr(out, "ticks=") + 6) > 0); /* its handler works as before */
    if (ring_delivery_available()) {
        /* Ring delivery takes no signal: the program's SIGPROF is its own, nothing of
         * ours is lost, and nothing is said. */
        assert_null(strstr(err, "SIGPROF handler was replaced"));
        struct raw r;
        raw_load(&r, raw);
        double on = 0;
        for (size_t i = 0; i < r.nsamples; i++)
            if (r.samples[i].state == 0) on += (double)r.samples[i].weight / 1e9;
        raw_print_dropped(&r, "replaced, ring delivery");
        print_message("on-CPU weight %.3f s\n", on);
        assert_string_equal(r.engine, "perf_event");
        assert_true(on >= 0.28);
        assert_int_equal(r.dropped_reasons[OSP_RAW_DROP_HANDLER_REPLACED], 0);
        raw_free(&r);
        return;
    }
    /* exactly one line, exactly this text */
    const char *hit = strstr(err, k_replaced);
    assert_non_null(hit);
    assert_null(strstr(hit + strlen(k_replaced), "SIGPROF handler was replaced"));
    struct raw r; /* and the raw file is still complete */
    raw_load(&r, raw);
    /* The 300 ms burnt after the replacement are lost samples (one per period of CPU
     * time, §(l.3)), not weight charged to the last sample before it. */
    double on = 0;
    for (size_t i = 0; i < r.nsamples; i++)
        if (r.samples[i].state == 0) on += (double)r.samples[i].weight / 1e9;
    raw_print_dropped(&r, "replaced");
    print_message("on-CPU weight %.3f s\n", on);
    assert_true(on < 0.1);
    assert_true(r.dropped_reasons[OSP_RAW_DROP_HANDLER_REPLACED] >= 0.2 * r.rate_hz);
    raw_free(&r);
}

static void test_sigprof_kept_is_silent(void **state) {
    (void)state;
    char raw[PATH_MAX], err[4096], out[256];
    snprintf(raw, sizeof raw, "%s/none.json", g_dir);
    run_program("none", err, sizeof err, out, sizeof out, raw);
    assert_null(strstr(err, "SIGPROF handler was replaced"));
    struct raw r;
    raw_load(&r, raw);
    assert_true(r.nsamples > 0);
    raw_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_temporary_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_written_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_char_device_written_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dangling_symlink_and_directory_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sigprof_replaced_is_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigprof_kept_is_silent, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
