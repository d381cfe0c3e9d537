/*
 * run.c — ospprof_run(), the single entry point the driver calls (docs/spec/profiler.md §(i),
 * §(l.6), §(l.7)): load → build → warnings → the five exports as a set → report.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

size_t ospprof_profile_warnings(const ospprof_profile *p, const char *const **out) {
    *out = (const char *const *)p->warnings;
    return p->nwarnings;
}

int ospprof_run(const ospprof_options *o, char *err, size_t errlen) {
    if (!o || !o->raw_path || !o->output_prefix) {
        ospprof_seterr(err, errlen, "no raw profile or output given");
        return -1;
    }
    if (ospprof_filter_check(o, err, errlen) != 0) return -1;
    ospprof_raw *raw = ospprof_raw_load(o->raw_path, err, errlen);
    if (!raw) return -1;
    ospprof_profile *p =
        ospprof_profile_build(raw, o->program, o->binary, o->symbolizer, err, errlen);
    ospprof_raw_free(raw);
    if (!p) return -1;
    if (ospprof_profile_filter(p, o, err, errlen) != 0) {
        ospprof_profile_free(p);
        return -1;
    }
    FILE *wf = o->warnings ? o->warnings : stderr;
    for (size_t i = 0; i < p->nwarnings; i++) {
        ospprof_buf line = {0};
        ospprof_buf_puts(&line, "osprey: warning: ");
        ospprof_term_text(&line, p->warnings[i]);
        ospprof_buf_putc(&line, '\n');
        fwrite(line.p, 1, line.n, wf);
        ospprof_buf_free(&line);
    }
    fflush(wf);
    int rc = ospprof_write_exports_ex(p, o->output_prefix, o->pprof, err, errlen);
    if (rc == 0 && o->report && ospprof_report_ex(p, o->output_prefix, o, o->report) != 0) {
        ospprof_seterr(err, errlen, "cannot write the report");
        rc = -1;
    }
    ospprof_profile_free(p);
    return rc;
}
