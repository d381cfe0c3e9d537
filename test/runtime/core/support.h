/*
 * support.h — helpers shared by the runtime/core unit tests: run a function in a forked
 * child with its stdout and stderr captured, so tests can compare the program's output
 * byte for byte and check exit statuses and fatal messages.
 */
#ifndef RT_TEST_SUPPORT_H
#define RT_TEST_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "osprey_rt.h"

typedef struct {
    int status; /* exit status, or 128 + signal number if the child was killed */
    char *out;  /* captured stdout, NUL-terminated (malloc'd; free with child_free) */
    size_t out_len;
    char *err; /* captured stderr, NUL-terminated */
    size_t err_len;
} child_output;

/*
 * Fork; in the child point fd 1 and fd 2 at pipes, rebind the runtime's stdout stream,
 * call fn(arg), and exit(0) if fn returns. The parent collects both streams until EOF (at most 60 s,
 * after which the child is killed and the test fails) and the exit status.
 */
void run_child(void (*fn)(void *), void *arg, child_output *res);
void child_free(child_output *res);

/* Call first thing in a child forked by a test itself: turns LeakSanitizer off there. */
void child_started(void);

/* Set (value non-NULL) or unset OSPREY_TEST_FILTER; for use inside a child. */
void set_filter(const char *value);

/* A fiber body (osp_fiber_spawn) that prints one 63-character line and yields, forever:
 * other threads' output to check that lines stay whole. `env` is unused. */
osp_word chatter(void *env);

#endif
