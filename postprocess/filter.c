/*
 * filter.c — `--focus`, `--ignore`, `--fiber` (docs/spec/profiler.md §(l.8)): applied to the
 * model once, so every export and the report see the same samples. A sample is kept or
 * dropped whole: its weight and its stack never change, only which samples remain.
 */
#include "internal.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compile(regex_t *re, const char *what, const char *pattern, char *err, size_t errlen) {
    int rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
    if (rc == 0) return 0;
    char msg[256];
    regerror(rc, re, msg, sizeof msg);
    ospprof_buf safe = {0};
    ospprof_term_text(&safe, pattern);
    ospprof_seterr(err, errlen, "%s: bad regular expression '%s': %s", what, safe.p ? safe.p : "",
                   msg);
    ospprof_buf_free(&safe);
    return -1;
}

int ospprof_filter_check(const ospprof_options *o, char *err, size_t errlen) {
    const char *pats[2] = {o->focus, o->ignore}, *names[2] = {"--focus", "--ignore"};
    for (int i = 0; i < 2; i++) {
        if (!pats[i]) continue;
        regex_t re;
        if (compile(&re, names[i], pats[i], err, errlen) != 0) return -1;
        regfree(&re);
    }
    return 0;
}

/* Per function and per image: does `re` match its name / basename? */
static void match_table(const ospprof_profile *p, const regex_t *re, bool **fm, bool **im) {
    *fm = ospprof_xcalloc(p->nfuncs, sizeof **fm);
    *im = ospprof_xcalloc(p->nimages, sizeof **im);
    for (size_t i = 0; i < p->nfuncs; i++)
        (*fm)[i] = regexec(re, p->strs.str[p->funcs[i].name], 0, NULL, 0) == 0;
    for (size_t i = 0; i < p->nimages; i++)
        (*im)[i] = regexec(re, p->images[i].basename, 0, NULL, 0) == 0;
}

static bool stack_matches(const ospprof_profile *p, size_t k, const bool *fm, const bool *im) {
    const ospprof_stackinfo *si = &p->stacks[k];
    for (size_t j = si->off; j < si->off + si->n; j++) {
        if (fm[p->frames[p->stack_frames[j]].func]) return true;
        if (p->stack_images[j] >= 0 && im[p->stack_images[j]]) return true;
    }
    return false;
}

/* Append one warning line (without the "osprey: warning: " prefix) to p's warnings. */
static void add_warning(ospprof_profile *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_warning(ospprof_profile *p, const char *fmt, ...) {
    char msg[OSPPROF_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->warnings = ospprof_xrealloc(p->warnings, (p->nwarnings + 1) * sizeof *p->warnings);
    p->warnings[p->nwarnings++] = ospprof_xstrdup(msg);
}

/* One warning per --fiber label that names no fiber with samples, listing those that exist
 * (at most 10, as the report's `fibers:` line shows them). Returns how many were unknown. */
static size_t warn_unknown_fibers(ospprof_profile *p, const ospprof_options *o) {
    size_t misses = 0;
    for (size_t i = 0; i < o->nfibers; i++) {
        bool found = false;
        for (size_t r = 0; r < p->nrows && !found; r++)
            found = p->rows[r].n && strcmp(p->rows[r].label, o->fibers[i]) == 0;
        if (found) continue;
        misses++;
        ospprof_buf list = {0};
        size_t shown = 0, more = 0;
        for (size_t r = 0; r < p->nrows; r++) {
            if (!p->rows[r].n) continue;
            if (shown == 10) {
                more++;
                continue;
            }
            if (shown++) ospprof_buf_puts(&list, ", ");
            ospprof_term_text(&list, p->rows[r].label);
        }
        if (more) ospprof_buf_printf(&list, " and %zu more", more);
        ospprof_buf name = {0};
        ospprof_term_text(&name, o->fibers[i]);
        add_warning(p, "no fiber matches '%s' (fibers: %s)", name.p ? name.p : "",
                    shown ? list.p : "none with samples");
        ospprof_buf_free(&name);
        ospprof_buf_free(&list);
    }
    return misses;
}

int ospprof_profile_filter(ospprof_profile *p, const ospprof_options *o, char *err, size_t errlen) {
    if (!o->focus && !o->ignore && !o->nfibers) return 0;
    regex_t focus, ignore;
    if (o->focus && compile(&focus, "--focus", o->focus, err, errlen) != 0) return -1;
    if (o->ignore && compile(&ignore, "--ignore", o->ignore, err, errlen) != 0) {
        if (o->focus) regfree(&focus);
        return -1;
    }
    /* per stack: 1 keep, 2 drop (decided once per stack) */
    uint8_t *verdict = ospprof_xcalloc(p->nstacks, 1);
    bool *ffm = NULL, *fim = NULL, *ifm = NULL, *iim = NULL;
    if (o->focus) match_table(p, &focus, &ffm, &fim);
    if (o->ignore) match_table(p, &ignore, &ifm, &iim);
    for (size_t k = 0; k < p->nstacks; k++) {
        bool keep = true;
        if (o->focus && !stack_matches(p, k, ffm, fim)) keep = false;
        if (keep && o->ignore && stack_matches(p, k, ifm, iim)) keep = false;
        verdict[k] = keep ? 1 : 2;
    }
    free(ffm), free(fim), free(ifm), free(iim);
    size_t fiber_misses = warn_unknown_fibers(p, o);
    bool *row_ok = ospprof_xcalloc(p->nrows, sizeof *row_ok);
    for (size_t r = 0; r < p->nrows; r++) {
        row_ok[r] = o->nfibers == 0;
        for (size_t i = 0; i < o->nfibers; i++)
            if (strcmp(p->rows[r].label, o->fibers[i]) == 0) row_ok[r] = true;
    }

    p->unfiltered_on_w = p->on_w;
    size_t before = p->nsamples;
    uint64_t before_on_n = p->on_n;
    size_t n = 0;
    for (size_t i = 0; i < p->nsamples; i++) {
        const ospprof_sample *s = &p->samples[i];
        if (row_ok[s->row] && verdict[s->stack] == 1) p->samples[n++] = *s;
    }
    p->nsamples = n;
    /* the totals of what remains: the kept samples' own weights, unchanged */
    for (size_t r = 0; r < p->nrows; r++)
        p->rows[r].n = p->rows[r].on_n = p->rows[r].w = p->rows[r].on_w = 0;
    for (size_t k = 0; k < p->nstacks; k++) p->stacks[k].on_w = p->stacks[k].on_n = 0;
    p->on_w = p->on_n = 0;
    for (size_t i = 0; i < p->nsamples; i++) {
        const ospprof_sample *s = &p->samples[i];
        ospprof_rowinfo *r = &p->rows[s->row];
        r->n++;
        r->w += s->weight_ns;
        if (s->state == 0) {
            r->on_n++;
            r->on_w += s->weight_ns;
            p->stacks[s->stack].on_n++;
            p->stacks[s->stack].on_w += s->weight_ns;
            p->on_n++;
            p->on_w += s->weight_ns;
        }
    }
    ospprof_profile_totals(p);

    ospprof_buf d = {0};
    if (o->focus) {
        ospprof_buf_puts(&d, "focus /");
        ospprof_term_text(&d, o->focus);
        ospprof_buf_putc(&d, '/');
    }
    if (o->ignore) {
        ospprof_buf_puts(&d, d.n ? " · ignore /" : "ignore /");
        ospprof_term_text(&d, o->ignore);
        ospprof_buf_putc(&d, '/');
    }
    if (o->nfibers) {
        ospprof_buf_puts(&d, d.n ? " · fiber " : "fiber ");
        for (size_t i = 0; i < o->nfibers; i++) {
            if (i) ospprof_buf_puts(&d, ", ");
            ospprof_term_text(&d, o->fibers[i]);
        }
    }
    /* a filter that keeps nothing says so (unless a --fiber typo already explains it) */
    if (before && p->nsamples == 0 && !(o->nfibers && fiber_misses == o->nfibers))
        add_warning(p, "the filters (%s) left no samples; the exports are empty", d.p);
    else if (before_on_n && p->nsamples && p->on_n == 0)
        add_warning(p, "the filters (%s) left no on-CPU samples, only waiting ones", d.p);
    ospprof_buf_printf(&d, " — %.1f%% of the on-CPU weight remains",
                       p->unfiltered_on_w ? (double)p->on_w * 100.0 / (double)p->unfiltered_on_w
                                          : 0.0);
    free(p->filter_desc);
    p->filter_desc = d.p;
    free(verdict);
    free(row_ok);
    if (o->focus) regfree(&focus);
    if (o->ignore) regfree(&ignore);
    return 0;
}
