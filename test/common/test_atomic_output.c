/*
 * test_atomic_output.c — the one atomic-output helper of the driver and the post-processor
 * (common/atomic_output.h; docs/ARCHITECTURE.md "House conventions", docs/spec/profiler.md
 * §(l.6) "replaced as a set"): the temporary's name and mode (the umask applies, no
 * toggling), replace and abort, streams written in place, links followed, refusals with
 * their reasons, a set renamed all or nothing (a failed rename undoes the earlier ones),
 * temporaries removed on request, and "same file" through hard and symbolic links.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_output.h"

static char *tmpdir(void) {
    const char *base = getenv("TMPDIR");
    char *t = malloc(4096);
    snprintf(t, 4096, "%s/atomic-XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(t));
    char *real = realpath(t, NULL);
    free(t);
    return real;
}

static void rmtree(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *get(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *b = calloc(1, 65536);
    size_t n = fread(b, 1, 65535, f);
    b[n] = 0;
    fclose(f);
    return b;
}

static int entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Open, write `text`, commit. */
static int write_file(const char *path, const char *text, char *reason) {
    osp_atomic_out o;
    if (osp_atomic_open(&o, path, reason, 256) != 0) return -1;
    if (osp_atomic_write(&o, text, strlen(text), reason, 256) != 0) {
        osp_atomic_abort(&o);
        return -1;
    }
    return osp_atomic_commit(&o, reason, 256);
}

static void test_new_file_name_and_mode(void **st) {
    (void)st;
    char *dir = tmpdir(), path[4200], reason[256];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    mode_t old = umask(027);
    osp_atomic_out o;
    assert_int_equal(osp_atomic_open(&o, path, reason, sizeof reason), 0);
    /* the temporary: "<dir>/.<base>.XXXXXX", six characters from [A-Za-z0-9] */
    char prefix[4300];
    snprintf(prefix, sizeof prefix, "%s/.out.txt.", dir);
    assert_int_equal(strncmp(o.tmp, prefix, strlen(prefix)), 0);
    const char *sfx = o.tmp + strlen(prefix);
    assert_int_equal(strlen(sfx), 6);
    for (int i = 0; i < 6; i++)
        assert_non_null(
            strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", sfx[i]));
    assert_int_equal(access(path, F_OK), -1); /* nothing at the destination yet */
    assert_int_equal(osp_atomic_write(&o, "hello\n", 6, reason, sizeof reason), 0);
    assert_int_equal(osp_atomic_commit(&o, reason, sizeof reason), 0);
    umask(old);
    struct stat s;
    assert_int_equal(stat(path, &s), 0);
    assert_int_equal(s.st_mode & 0777, 0640); /* 0666 & ~027: the umask applied by itself */
    char *got = get(path);
    assert_string_equal(got, "hello\n");
    free(got);
    assert_int_equal(entries(dir), 1);
    rmtree(dir);
    free(dir);
}

/* A destination whose name is 248 to 255 bytes long fits in NAME_MAX, but its temporary
 * ".<name>.XXXXXX" did not ("File name too long"): the temporary's copy of the name is cut. */
static void test_long_name(void **st) {
    (void)st;
    char *dir = tmpdir(), path[4200], reason[256];
    for (size_t len = 246; len <= 255; len++) {
        snprintf(path, sizeof path, "%s/%0*d", dir, (int)len, 7);
        put(path, "old\n");
        osp_atomic_out o;
        assert_int_equal(osp_atomic_open(&o, path, reason, sizeof reason), 0);
        assert_true(strlen(strrchr(o.tmp, '/') + 1) <= 255);
        assert_int_equal(osp_atomic_write(&o, "new\n", 4, reason, sizeof reason), 0);
        assert_int_equal(osp_atomic_commit(&o, reason, sizeof reason), 0);
        char *got = get(path);
        assert_string_equal(got, "new\n");
        free(got);
        char *dest = NULL;
        assert_int_equal(osp_atomic_probe(path, &dest, reason, sizeof reason), 0);
        free(dest);
    }
    assert_int_equal(entries(dir), 10); /* the files, no temporary left */
    rmtree(dir);
    free(dir);
}

static void test_replace_and_abort(void **st) {
    (void)st;
    char *dir = tmpdir(), path[4200], reason[256];
    snprintf(path, sizeof path, "%s/a.json", dir);
    put(path, "old\n");
    osp_atomic_out o;
    assert_int_equal(osp_atomic_open(&o, path, reason, sizeof reason), 0);
    assert_int_equal(osp_atomic_write(&o, "new\n", 4, reason, sizeof reason), 0);
    char *got = get(path);
    assert_string_equal(got, "old\n"); /* unchanged until the commit */
    free(got);
    osp_atomic_abort(&o);
    got = get(path);
    assert_string_equal(got, "old\n");
    free(got);
    assert_int_equal(entries(dir), 1);
    assert_int_equal(write_file(path, "new\n", reason), 0);
    got = get(path);
    assert_string_equal(got, "new\n");
    free(got);
    assert_int_equal(entries(dir), 1);
    osp_atomic_abort(&o); /* a released value: harmless */
    rmtree(dir);
    free(dir);
}

static void test_streams_in_place(void **st) {
    (void)st;
    char *dir = tmpdir(), path[4200], reason[256];
    snprintf(path, sizeof path, "%s/pipe", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    int rfd = open(path, O_RDONLY | O_NONBLOCK);
    assert_true(rfd >= 0);
    osp_atomic_out o;
    assert_int_equal(osp_atomic_open(&o, path, reason, sizeof reason), 0);
    assert_null(o.tmp);
    assert_null(o.dest);
    assert_int_equal(osp_atomic_write(&o, "via fifo", 8, reason, sizeof reason), 0);
    assert_int_equal(osp_atomic_commit(&o, reason, sizeof reason), 0);
    char buf[16] = {0};
    assert_int_equal(read(rfd, buf, sizeof buf), 8);
    assert_string_equal(buf, "via fifo");
    close(rfd);
    struct stat s;
    assert_int_equal(lstat(path, &s), 0);
    assert_true(S_ISFIFO(s.st_mode)); /* never replaced by a file */
    /* a character device (/dev/null exists everywhere; writing to it changes nothing) */
    char *dest = (char *)1;
    assert_int_equal(osp_atomic_resolve("/dev/null", &dest, reason, sizeof reason), 0);
    assert_null(dest);
    assert_int_equal(write_file("/dev/null", "discarded", reason), 0);
    assert_int_equal(lstat("/dev/null", &s), 0);
    assert_true(S_ISCHR(s.st_mode));
    rmtree(dir);
    free(dir);
}

static void test_links_and_refusals(void **st) {
    (void)st;
    char *dir = tmpdir(), path[4200], link[4200], reason[256];
    mkdir(strcat(strcpy(path, dir), "/real"), 0700);
    snprintf(path, sizeof path, "%s/real/target.txt", dir);
    put(path, "old");
    snprintf(link, sizeof link, "%s/link.txt", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(write_file(link, "through the link", reason), 0);
    struct stat s;
    assert_int_equal(lstat(link, &s), 0);
    assert_true(S_ISLNK(s.st_mode)); /* the link stays a link */
    char *got = get(path);
    assert_string_equal(got, "through the link");
    free(got);
    /* refusals, each with its reason and nothing created */
    snprintf(link, sizeof link, "%s/dangling", dir);
    assert_int_equal(symlink("/nonexistent/nowhere", link), 0);
    assert_int_equal(write_file(link, "x", reason), -1);
    assert_string_equal(reason, "it is a symbolic link to a missing file");
    snprintf(path, sizeof path, "%s/real", dir);
    assert_int_equal(write_file(path, "x", reason), -1);
    assert_string_equal(reason, strerror(EISDIR));
    snprintf(path, sizeof path, "%s/missing/x", dir);
    assert_int_equal(write_file(path, "x", reason), -1);
    assert_string_equal(reason, strerror(ENOENT));
    snprintf(path, sizeof path, "%s/real/target.txt/x", dir);
    assert_int_equal(write_file(path, "x", reason), -1);
    assert_string_equal(reason, strerror(ENOTDIR));
    assert_int_equal(entries(dir), 3); /* real, link.txt, dangling */
    rmtree(dir);
    free(dir);
}

static void test_set_all_or_nothing(void **st) {
    (void)st;
    char *dir = tmpdir(), a[4200], b[4200], c[4200], reason[256];
    snprintf(a, sizeof a, "%s/p.a", dir);
    snprintf(b, sizeof b, "%s/p.b", dir);
    snprintf(c, sizeof c, "%s/p.c", dir);
    put(a, "old a");
    put(c, "old c");
    /* success: all three renamed */
    osp_atomic_out set[3];
    const char *paths[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(osp_atomic_open(&set[i], paths[i], reason, sizeof reason), 0);
        assert_int_equal(osp_atomic_write(&set[i], "v2", 2, reason, sizeof reason), 0);
    }
    assert_int_equal(osp_atomic_commit_set(set, 3, NULL, reason, sizeof reason), 0);
    for (int i = 0; i < 3; i++) {
        char *got = get(paths[i]);
        assert_string_equal(got, "v2");
        free(got);
    }
    assert_int_equal(entries(dir), 3);
    /* the last rename fails (its temporary vanished): the first two get their previous
     * files back, nothing else is left */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(osp_atomic_open(&set[i], paths[i], reason, sizeof reason), 0);
        assert_int_equal(osp_atomic_write(&set[i], "v3", 2, reason, sizeof reason), 0);
    }
    unlink(set[2].tmp);
    size_t failed = 99;
    assert_int_equal(osp_atomic_commit_set(set, 3, &failed, reason, sizeof reason), -1);
    assert_int_equal(failed, 2);
    assert_string_equal(reason, strerror(ENOENT));
    for (int i = 0; i < 3; i++) {
        char *got = get(paths[i]);
        assert_string_equal(got, "v2");
        free(got);
    }
    assert_int_equal(entries(dir), 3);
    /* a member that did not exist before is removed again when a later one fails */
    unlink(b);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(osp_atomic_open(&set[i], paths[i], reason, sizeof reason), 0);
        assert_int_equal(osp_atomic_write(&set[i], "v4", 2, reason, sizeof reason), 0);
    }
    unlink(set[2].tmp);
    assert_int_equal(osp_atomic_commit_set(set, 3, &failed, reason, sizeof reason), -1);
    assert_int_equal(access(b, F_OK), -1);
    char *got = get(a);
    assert_string_equal(got, "v2");
    free(got);
    assert_int_equal(entries(dir), 2);
    rmtree(dir);
    free(dir);
}

static void test_remove_temporaries(void **st) {
    (void)st;
    char *dir = tmpdir(), path[4200], reason[256];
    snprintf(path, sizeof path, "%s/x.svg", dir);
    put(path, "good");
    osp_atomic_out o;
    assert_int_equal(osp_atomic_open(&o, path, reason, sizeof reason), 0);
    assert_int_equal(entries(dir), 2);
    osp_atomic_remove_temporaries(); /* what the driver's signal thread does */
    assert_int_equal(entries(dir), 1);
    assert_int_equal(osp_atomic_commit(&o, reason, sizeof reason), -1);
    char *got = get(path);
    assert_string_equal(got, "good");
    free(got);
    rmtree(dir);
    free(dir);
}

static void test_same_file(void **st) {
    (void)st;
    char *dir = tmpdir(), a[4200], hard[4200], sym[4200], sdir[4200], via[4200];
    snprintf(a, sizeof a, "%s/src.osp", dir);
    put(a, "x");
    snprintf(hard, sizeof hard, "%s/hard.osp", dir);
    assert_int_equal(link(a, hard), 0);
    snprintf(sym, sizeof sym, "%s/sym.osp", dir);
    assert_int_equal(symlink(a, sym), 0);
    assert_true(osp_same_file(a, hard));
    assert_true(osp_same_file(sym, a));
    /* a file that does not exist yet, reached through a symbolic link to its directory */
    snprintf(sdir, sizeof sdir, "%s/alias", dir);
    assert_int_equal(symlink(dir, sdir), 0);
    snprintf(via, sizeof via, "%s/new.svg", sdir);
    char direct[4300];
    snprintf(direct, sizeof direct, "%s/new.svg", dir);
    assert_true(osp_same_file(via, direct));
    assert_false(osp_same_file(a, direct));
    rmtree(dir);
    free(dir);
}

/* osp_atomic_probe really creates (and removes) the temporary: a new file's directory that
 * takes one passes and keeps nothing; /proc, which access() calls writable for root, is
 * refused with the errno of the create (ENOENT; EACCES for anyone else). */
static void test_probe(void **st) {
    (void)st;
    char *dir = tmpdir(), path[4200], reason[256];
    snprintf(path, sizeof path, "%s/new.bin", dir);
    char *dest = NULL;
    assert_int_equal(osp_atomic_probe(path, &dest, reason, sizeof reason), 0);
    assert_non_null(dest);
    assert_string_equal(dest, path);
    free(dest);
    assert_int_equal(entries(dir), 0); /* the temporary is gone, nothing else was made */
    /* a stream is written in place: nothing to create */
    dest = (char *)1;
    assert_int_equal(osp_atomic_probe("/dev/null", &dest, reason, sizeof reason), 0);
    assert_null(dest);
    /* a directory path is refused as osp_atomic_resolve refuses it */
    assert_int_equal(osp_atomic_probe(dir, &dest, reason, sizeof reason), -1);
    assert_null(dest);
    assert_string_equal(reason, strerror(EISDIR));
    /* /proc: resolve alone passes for root; the probe does not */
    bool resolves = osp_atomic_resolve("/proc/osprey-probe", &dest, reason, sizeof reason) == 0;
    free(dest);
    dest = (char *)1;
    assert_int_equal(osp_atomic_probe("/proc/osprey-probe", &dest, reason, sizeof reason), -1);
    assert_null(dest);
    assert_string_equal(reason, strerror(resolves ? ENOENT : EACCES));
    rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_file_name_and_mode),
        cmocka_unit_test(test_long_name),
        cmocka_unit_test(test_replace_and_abort),
        cmocka_unit_test(test_streams_in_place),
        cmocka_unit_test(test_links_and_refusals),
        cmocka_unit_test(test_set_all_or_nothing),
        cmocka_unit_test(test_remove_temporaries),
        cmocka_unit_test(test_same_file),
        cmocka_unit_test(test_probe),
    };
    return cmocka_run_group_tests_name("driver_common_atomic_output", tests, NULL, NULL);
}
