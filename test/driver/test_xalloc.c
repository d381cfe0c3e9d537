/*
 * The driver's out-of-memory policy (driver/xalloc.h): the helpers never return NULL;
 * when memory runs out the driver prints one line, `osprey: error: out of memory`,
 * removes its scratch directory and temporary output, and exits with status 1.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "process.h"
#include "xalloc.h"

/* Under AddressSanitizer an impossible allocation returns NULL, as it does with glibc,
 * instead of ending the process with a report: the policy under test is the driver's. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "allocator_may_return_null=1";
}

static void test_helpers(void **state) {
    (void)state;
    char *s = drv_xstrdup("frame pointer");
    assert_string_equal(s, "frame pointer");
    s = drv_xrealloc(s, 4096);
    assert_string_equal(s, "frame pointer"); /* the contents survive a move */
    free(s);
    char *f = drv_xasprintf("%s-%d-%s", "sample", 42, "stack");
    assert_string_equal(f, "sample-42-stack");
    free(f);
    unsigned char *z = drv_xcalloc(1000, 3);
    for (size_t i = 0; i < 3000; i++) assert_int_equal(z[i], 0);
    free(z);
    void *none = drv_xmalloc(0);
    assert_non_null(none);
    free(none);
}

/* How a child ran out of memory. */
enum oom_kind { OOM_CALLOC_OVERFLOW, OOM_MALLOC_HUGE, OOM_REALLOC_HUGE };

static size_t entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

/* In a child with TMPDIR=<private dir>: make a scratch directory with a file in it and a
 * registered temporary output, then run out of memory. The parent sees one line on
 * stderr, status 1, and the private directory empty again. */
static void run_out_of_memory(enum oom_kind kind) {
    char top[] = "/tmp/osprey-xalloc-XXXXXX";
    assert_non_null(mkdtemp(top));
    char err_path[sizeof top + 16];
    snprintf(err_path, sizeof err_path, "%s.err", top);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0) _exit(90);
        setenv("TMPDIR", top, 1);
        char *scratch = scratch_create();
        if (!scratch) _exit(91);
        char *inside = drv_xasprintf("%s/program.o", scratch);
        char *temp = drv_xasprintf("%s/out.tmp.1", top);
        if (close(open(inside, O_WRONLY | O_CREAT, 0600)) != 0) _exit(92);
        if (close(open(temp, O_WRONLY | O_CREAT, 0600)) != 0) _exit(93);
        cleanup_temp(temp);
        volatile size_t huge = SIZE_MAX - 64;
        switch (kind) {
        case OOM_CALLOC_OVERFLOW: drv_xcalloc(huge / 2, 4); break;
        case OOM_MALLOC_HUGE: drv_xmalloc(huge); break;
        case OOM_REALLOC_HUGE: drv_xrealloc(inside, huge); break;
        }
        _exit(94); /* not reached: the helper exits */
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 1);
    /* The driver's stderr, without a sanitizer runtime's own lines ("==<pid>==WARNING:
     * AddressSanitizer failed to allocate ..."), which are not the driver's. */
    char buf[1024] = {0}, line[512];
    size_t n = 0;
    FILE *e = fopen(err_path, "r");
    assert_non_null(e);
    while (fgets(line, sizeof line, e))
        if (strncmp(line, "==", 2) != 0 && n + strlen(line) < sizeof buf) {
            memcpy(buf + n, line, strlen(line));
            n += strlen(line);
        }
    fclose(e);
    assert_string_equal(buf, "osprey: error: out of memory\n");
    assert_int_equal(entries(top), 0); /* scratch directory and temporary output removed */
    assert_int_equal(rmdir(top), 0);
    assert_int_equal(unlink(err_path), 0);
}

static void test_calloc_overflow(void **state) {
    (void)state;
    run_out_of_memory(OOM_CALLOC_OVERFLOW);
}

static void test_malloc_huge(void **state) {
    (void)state;
    run_out_of_memory(OOM_MALLOC_HUGE);
}

static void test_realloc_huge(void **state) {
    (void)state;
    run_out_of_memory(OOM_REALLOC_HUGE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_calloc_overflow),
        cmocka_unit_test(test_malloc_huge),
        cmocka_unit_test(test_realloc_huge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
