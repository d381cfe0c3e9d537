/*
 * output.c — export files written through the shared atomic-output helper
 * (common/atomic_output.h): a buffered writer per file, committed alone or as a set
 * (docs/spec/profiler.md §(l.6): the exports are replaced as a set).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

void ospprof_remove_temporaries(void) {
    osp_atomic_remove_temporaries();
}

int ospprof_out_open(ospprof_out *o, const char *path, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    char reason[256];
    if (osp_atomic_open(&o->file, path, reason, sizeof reason) != 0) {
        ospprof_seterr(err, errlen, "cannot write %s: %s", path, reason);
        return -1;
    }
    o->path = ospprof_xstrdup(path);
    return 0;
}

void ospprof_out_flush(ospprof_out *o) {
    if (o->b.n && !o->failed &&
        osp_atomic_write(&o->file, o->b.p, o->b.n, o->reason, sizeof o->reason) != 0)
        o->failed = true;
    o->b.n = 0;
}

void ospprof_out_maybe_flush(ospprof_out *o) {
    if (o->b.n >= (1u << 20)) ospprof_out_flush(o);
}

static void out_release(ospprof_out *o) {
    ospprof_buf_free(&o->b);
    free(o->path);
    o->path = NULL;
}

void ospprof_out_abort(ospprof_out *o) {
    osp_atomic_abort(&o->file);
    out_release(o);
}

int ospprof_out_commit_set(ospprof_out *set, size_t n, char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++) ospprof_out_flush(&set[i]);
    for (size_t i = 0; i < n; i++) {
        if (!set[i].failed) continue;
        ospprof_seterr(err, errlen, "cannot write %s: %s", set[i].path, set[i].reason);
        for (size_t j = 0; j < n; j++) ospprof_out_abort(&set[j]);
        return -1;
    }
    osp_atomic_out *files = ospprof_xcalloc(n, sizeof *files);
    for (size_t i = 0; i < n; i++) files[i] = set[i].file;
    size_t bad = 0;
    char reason[256];
    int rc = osp_atomic_commit_set(files, n, &bad, reason, sizeof reason);
    if (rc != 0) ospprof_seterr(err, errlen, "cannot write %s: %s", set[bad].path, reason);
    free(files);
    for (size_t i = 0; i < n; i++) out_release(&set[i]);
    return rc;
}

int ospprof_out_commit(ospprof_out *o, char *err, size_t errlen) {
    return ospprof_out_commit_set(o, 1, err, errlen);
}

int ospprof_out_write(ospprof_out *o, const void *p, size_t n) {
    ospprof_buf_put(&o->b, p, n);
    ospprof_out_maybe_flush(o);
    return o->failed ? -1 : 0;
}
