/* frontend.c — see frontend.h. */
#include "frontend.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "builtin_types.h"
#include "check.h"
#include "effects.h"
#include "parser.h"
#include "resolve.h"
#include "restrict.h"

/* ---- the compile stack ------------------------------------------------------------------ */

static _Thread_local bool on_compile_stack;

typedef struct {
    void (*fn)(void *);
    void *arg;
} stack_job;

static void *compile_thread(void *p) {
    stack_job *job = p;
    on_compile_stack = true;
    job->fn(job->arg);
    return NULL;
}

void osp_run_on_compile_stack(void (*fn)(void *), void *arg) {
    if (on_compile_stack) {
        fn(arg);
        return;
    }
    stack_job job = {fn, arg};
    pthread_attr_t attr;
    pthread_t t;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        rc = pthread_attr_setstacksize(&attr, OSP_COMPILE_STACK);
        if (rc == 0) rc = pthread_create(&t, &attr, compile_thread, &job);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        /* No thread (address space or thread limits): run here, on the stack we have. */
        fn(arg);
        return;
    }
    pthread_join(t, NULL);
}

/* ---- the front end ------------------------------------------------------------------------ */

typedef struct {
    const char *path, *abs_path, *src;
    size_t len;
    FILE *diag_out;
    int nerrors;
    Program *prog;
} frontend_job;

static void frontend_work(void *p) {
    frontend_job *job = p;
    const char *src = job->src;
    size_t len = job->len;
    /* One leading UTF-8 byte order mark is not part of the program: positions start
     * after it, so line 1 column 1 is the first character an editor shows. */
    if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) {
        src += 3;
        len -= 3;
    }
    Arena *a = arena_new();
    Program *prog = arena_alloc(a, sizeof *prog);
    prog->arena = a;
    types_init(&prog->types, a);
    prog->path = arena_strdup(a, job->path);
    prog->abs_path = arena_strdup(a, job->abs_path ? job->abs_path : job->path);
    Diags d = {.arena = a, .path = prog->path, .src = src, .src_len = len};
    int syntax = parse_program(prog, &d, src, len);
    if (syntax == 0) {
        int before = d.count;
        builtin_types_add(prog);
        resolve_program(prog, &d);
        check_program(prog, &d);
        restrict_program(prog, &d);
        if (d.count == before) effects_program(prog, &d);
    }
    if (job->diag_out) diag_print(&d, job->diag_out);
    job->nerrors = d.count;
    job->prog = prog;
}

Program *osp_frontend_run(const char *path, const char *abs_path, const char *src, size_t len,
                          FILE *diag_out, int *nerrors) {
    frontend_job job = {path, abs_path, src, len, diag_out, 0, NULL};
    osp_run_on_compile_stack(frontend_work, &job);
    *nerrors = job.nerrors;
    return job.prog;
}

void osp_program_free(Program *prog) {
    if (prog) arena_free(prog->arena);
}
