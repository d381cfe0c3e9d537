/*
 * test_outputs.c — how the exports are written (postprocess/output.c over common/atomic_output.c,
 * docs/spec/profiler.md §(i), §(l.6),
 * docs/ARCHITECTURE.md "Error handling"): a temporary beside the target renamed into place, except
 * that an existing character device or FIFO is written in place and never replaced by
 * a regular file (as root the old rename destroyed /dev/null), a symbolic link to a
 * regular file is followed (the link stays), a directory or dangling link is refused
 * with one message, and ospprof_remove_temporaries() removes an export being written.
 * The real /dev/null is never touched: devices are made with mknod in a private
 * directory (root only; skipped otherwise).
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static const char k_text[] = "main;work 7\n";

/* Write k_text to `path` through the export writer; returns commit's result. */
static int write_export(const char *path, char *err, size_t errlen) {
    ospprof_out o;
    if (ospprof_out_open(&o, path, err, errlen) != 0) return -1;
    assert_int_equal(ospprof_out_write(&o, k_text, sizeof k_text - 1), 0);
    return ospprof_out_commit(&o, err, errlen);
}

/* Entries of `dir` (no . and ..). */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static void test_regular_file_replaced_atomically(void **state) {
    (void)state;
    char *dir = tu_tmpdir(), path[4200], err[OSPPROF_ERR_MAX] = "";
    snprintf(path, sizeof path, "%s/a.folded", dir);
    tu_write(path, "old contents that are longer than the new ones\n");
    assert_int_equal(write_export(path, err, sizeof err), 0);
    char *got = tu_slurp(path, NULL);
    assert_string_equal(got, k_text);
    free(got);
    assert_int_equal(count_entries(dir), 1); /* no temporary left */
    tu_rmtree(dir);
    free(dir);
}

struct reader {
    const char *path;
    char buf[256];
    size_t n;
};

static void *read_fifo(void *arg) {
    struct reader *r = arg;
    int fd = open(r->path, O_RDONLY | O_CLOEXEC); /* blocks until the writer opens */
    if (fd < 0) return NULL;
    ssize_t k;
    while (r->n < sizeof r->buf - 1 && (k = read(fd, r->buf + r->n, sizeof r->buf - 1 - r->n)) > 0)
        r->n += (size_t)k;
    r->buf[r->n] = 0;
    close(fd);
    return NULL;
}

static void test_fifo_written_in_place(void **state) {
    (void)state;
    char *dir = tu_tmpdir(), path[4200], err[OSPPROF_ERR_MAX] = "";
    snprintf(path, sizeof path, "%s/a.folded", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    struct reader r = {.path = path};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_fifo, &r), 0);
    int rc = write_export(path, err, sizeof err);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    bool fifo = S_ISFIFO(st.st_mode);
    if (!fifo) pthread_cancel(t); /* the old FIFO is gone: nobody will open it */
    pthread_join(t, NULL);
    assert_true(fifo); /* never replaced by a regular file */
    assert_int_equal(rc, 0);
    assert_string_equal(r.buf, k_text);
    assert_int_equal(count_entries(dir), 1);
    tu_rmtree(dir);
    free(dir);
}

/* A private device node major:minor in `dir`, or skip (needs root and a file system
 * that allows devices). */
static void make_device(const char *path, unsigned major, unsigned minor) {
    if (mknod(path, S_IFCHR | 0666, makedev(major, minor)) != 0) {
        print_message("skipped: mknod: %s (needs root)\n", strerror(errno));
        skip();
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        print_message("skipped: cannot open a device here: %s\n", strerror(errno));
        unlink(path);
        skip();
    }
    close(fd);
}

static void test_char_devices_written_in_place(void **state) {
    (void)state;
    char *dir = tu_tmpdir(), null_path[4200], full_path[4200], err[OSPPROF_ERR_MAX] = "";
    snprintf(null_path, sizeof null_path, "%s/null", dir);
    snprintf(full_path, sizeof full_path, "%s/full", dir);
    make_device(null_path, 1, 3); /* like /dev/null */
    make_device(full_path, 1, 7); /* like /dev/full */
    assert_int_equal(write_export(null_path, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(lstat(null_path, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(st.st_rdev, makedev(1, 3));
    /* a full device: the write error is reported, and it stays a device */
    assert_int_equal(write_export(full_path, err, sizeof err), -1);
    char want[4400];
    snprintf(want, sizeof want, "cannot write %s: %s", full_path, strerror(ENOSPC));
    assert_string_equal(err, want);
    assert_int_equal(lstat(full_path, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(count_entries(dir), 2);
    tu_rmtree(dir);
    free(dir);
}

static void test_symlink_followed(void **state) {
    (void)state;
    char *dir = tu_tmpdir(), link[4200], target[4200], err[OSPPROF_ERR_MAX] = "";
    snprintf(link, sizeof link, "%s/a.folded", dir);
    snprintf(target, sizeof target, "%s/real.folded", dir);
    tu_write(target, "old\n");
    assert_int_equal(symlink("real.folded", link), 0);
    assert_int_equal(write_export(link, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode)); /* the link stays a link ... */
    char *got = tu_slurp(target, NULL);
    assert_string_equal(got, k_text); /* ... to the new contents */
    free(got);
    assert_int_equal(count_entries(dir), 2);
    tu_rmtree(dir);
    free(dir);
}

static void test_directory_and_dangling_link_refused(void **state) {
    (void)state;
    char *dir = tu_tmpdir(), link[4200], sub[4200], err[OSPPROF_ERR_MAX] = "", want[4400];
    snprintf(link, sizeof link, "%s/a.folded", dir);
    snprintf(sub, sizeof sub, "%s/b.folded", dir);
    assert_int_equal(symlink("missing/x.folded", link), 0);
    assert_int_equal(write_export(link, err, sizeof err), -1);
    snprintf(want, sizeof want, "cannot write %s: it is a symbolic link to a missing file", link);
    assert_string_equal(err, want);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(write_export(sub, err, sizeof err), -1);
    snprintf(want, sizeof want, "cannot write %s: %s", sub, strerror(EISDIR));
    assert_string_equal(err, want);
    assert_int_equal(count_entries(dir), 2); /* nothing created, nothing replaced */
    tu_rmtree(dir);
    free(dir);
}

static void test_remove_temporaries(void **state) {
    (void)state;
    char *dir = tu_tmpdir(), path[4200], err[OSPPROF_ERR_MAX] = "";
    snprintf(path, sizeof path, "%s/a.folded", dir);
    tu_write(path, "good\n");
    ospprof_out o;
    assert_int_equal(ospprof_out_open(&o, path, err, sizeof err), 0);
    assert_int_equal(ospprof_out_write(&o, k_text, sizeof k_text - 1), 0);
    assert_int_equal(count_entries(dir), 2); /* the file and the temporary */
    ospprof_remove_temporaries();            /* as the driver's signal thread does */
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(ospprof_out_commit(&o, err, sizeof err), -1); /* the export failed ... */
    char *got = tu_slurp(path, NULL);
    assert_string_equal(got, "good\n"); /* ... and the good file is untouched */
    free(got);
    tu_rmtree(dir);
    free(dir);
}

/* The five exports are replaced as a set (docs/spec/profiler.md §(l.6)): when one of them
 * cannot be written (here <prefix>.svg is a directory), none of the previous files changes and
 * no temporary is left; when all can, all five are new. */
static void test_exports_replaced_as_a_set(void **state) {
    (void)state;
    char *raw = tu_slurp(GOLDEN_DIR "/demo.raw.json", NULL);
    assert_non_null(raw);
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = ospprof_raw_parse("demo.raw.json", raw, strlen(raw), err, sizeof err);
    assert_non_null(r);
    ospprof_profile *p = ospprof_profile_build(r, "demo.osp", NULL, "none", err, sizeof err);
    assert_non_null(p);
    char *dir = tu_tmpdir(), prefix[4200], path[4300];
    snprintf(prefix, sizeof prefix, "%s/demo", dir);
    static const char *const ext[] = {".speedscope.json", ".cpuprofile", ".folded",
                                      ".profile.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s%s", prefix, ext[i]);
        tu_write(path, "previous\n");
    }
    snprintf(path, sizeof path, "%s.svg", prefix);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(ospprof_write_exports(p, prefix, err, sizeof err), -1);
    char want[4400];
    snprintf(want, sizeof want, "cannot write %s: %s", path, strerror(EISDIR));
    assert_string_equal(err, want);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s%s", prefix, ext[i]);
        char *got = tu_slurp(path, NULL);
        assert_string_equal(got, "previous\n");
        free(got);
    }
    assert_int_equal(count_entries(dir), 5); /* the four old files and the directory */
    snprintf(path, sizeof path, "%s.svg", prefix);
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(ospprof_write_exports(p, prefix, err, sizeof err), 0);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s%s", prefix, ext[i]);
        char *got = tu_slurp(path, NULL);
        assert_string_not_equal(got, "previous\n");
        free(got);
    }
    snprintf(path, sizeof path, "%s.svg", prefix);
    char *svg = tu_slurp(path, NULL);
    assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    free(svg);
    assert_int_equal(count_entries(dir), 5);
    ospprof_profile_free(p);
    ospprof_raw_free(r);
    free(raw);
    tu_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regular_file_replaced_atomically),
        cmocka_unit_test(test_fifo_written_in_place),
        cmocka_unit_test(test_char_devices_written_in_place),
        cmocka_unit_test(test_symlink_followed),
        cmocka_unit_test(test_directory_and_dangling_link_refused),
        cmocka_unit_test(test_remove_temporaries),
        cmocka_unit_test(test_exports_replaced_as_a_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
