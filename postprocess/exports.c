/*
 * exports.c — the export files (docs/spec/profiler.md §(g.2)–(g.5) as revised by §(l.6)):
 * frames are functions, `.cpuprofile` nodes carry positionTicks, hotLines count attributed
 * lines, `.folded` is on-CPU only; the SVG body is in svg_profile.c.
 *
 * Every file is produced in chunks through a buffer into a temporary file beside the
 * target and renamed into place (ospprof_out); ospprof_write_exports renames the five as a
 * set. Object keys are written in ascending byte order by hand. Per-stack text (speedscope
 * index lists, folded bodies) is built once per distinct stack and reused for every sample,
 * so output cost is linear in samples plus distinct stacks, and memory is linear in distinct
 * stacks.
 */
#include "internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Each export has a body writer (into an open ospprof_out, flushed every megabyte) and a
 * public function that writes it alone; ospprof_write_exports writes the five as a set. */

static const char *S(const ospprof_profile *p, uint32_t id) {
    return p->strs.str[id];
}

/* Sample indices grouped by row, each group in time order. *start has nrows + 1 entries. */
static uint32_t *by_row(const ospprof_profile *p, size_t **start) {
    size_t *st = ospprof_xcalloc(p->nrows + 1, sizeof *st);
    for (size_t i = 0; i < p->nsamples; i++) st[p->samples[i].row + 1]++;
    for (size_t r = 0; r < p->nrows; r++) st[r + 1] += st[r];
    size_t *pos = ospprof_xcalloc(p->nrows + 1, sizeof *pos);
    memcpy(pos, st, (p->nrows + 1) * sizeof *pos);
    uint32_t *ord = ospprof_xcalloc(p->nsamples, sizeof *ord);
    for (size_t i = 0; i < p->nsamples; i++) ord[pos[p->samples[i].row]++] = (uint32_t)i;
    free(pos);
    *start = st;
    return ord;
}

/* ---- speedscope (§(g.2)) -------------------------------------------------------------- */

static const char *stack_json(ospprof_profile *p, uint32_t k) {
    ospprof_stackinfo *si = &p->stacks[k];
    if (!si->ss_json) {
        ospprof_buf b = {0};
        ospprof_buf_putc(&b, '[');
        for (size_t j = si->n; j-- > 0;) { /* root first */
            ospprof_buf_u64(&b, p->stack_frames[si->off + j]);
            if (j) ospprof_buf_putc(&b, ',');
        }
        ospprof_buf_putc(&b, ']');
        si->ss_json = b.p;
        si->ss_len = b.n;
    }
    return si->ss_json;
}

static void speedscope_body(const ospprof_profile *cp, ospprof_out *w) {
    ospprof_profile *p = (ospprof_profile *)cp; /* only the per-stack text cache changes */
    ospprof_buf *b = &w->b;
    size_t active = 0, nprof = 0;
    uint64_t best = 0;
    bool have = false;
    for (size_t r = 0; r < p->nrows; r++) {
        if (!p->rows[r].n) continue;
        if (!have || p->rows[r].on_n > best) {
            best = p->rows[r].on_n;
            active = nprof;
            have = true;
        }
        nprof++;
    }
    ospprof_buf_puts(b, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                        "\"activeProfileIndex\":");
    ospprof_buf_printf(b, "%zu", active);
    ospprof_buf_puts(b, ",\"exporter\":\"osprey\",\"name\":");
    ospprof_json_str(b, p->pname);
    ospprof_buf_puts(b, ",\"profiles\":[");
    if (nprof == 0) {
        ospprof_buf_puts(b, "{\"endValue\":0,\"name\":\"main\",\"samples\":[],\"startValue\":0,"
                            "\"type\":\"sampled\",\"unit\":\"seconds\",\"weights\":[]}");
    } else {
        size_t *st;
        uint32_t *ord = by_row(p, &st);
        bool firstp = true;
        for (size_t r = 0; r < p->nrows; r++) {
            if (!p->rows[r].n) continue;
            if (!firstp) ospprof_buf_putc(b, ',');
            firstp = false;
            ospprof_buf_puts(b, "{\"endValue\":");
            ospprof_json_seconds(b, p->rows[r].w);
            ospprof_buf_puts(b, ",\"name\":");
            ospprof_json_str(b, p->rows[r].label);
            ospprof_buf_puts(b, ",\"samples\":[");
            for (size_t i = st[r]; i < st[r + 1]; i++) {
                if (i > st[r]) ospprof_buf_putc(b, ',');
                uint32_t k = p->samples[ord[i]].stack;
                stack_json(p, k);
                ospprof_buf_put(b, p->stacks[k].ss_json, p->stacks[k].ss_len);
                ospprof_out_maybe_flush(w);
            }
            /* "states": each sample's raw state (0 on-CPU, 1 waiting), in sample order — not
             * part of speedscope's schema (which allows extra keys); the VS Code extension's
             * On-CPU only toggle reads it (docs/profile-formats.md). */
            ospprof_buf_puts(b, "],\"startValue\":0,\"states\":[");
            for (size_t i = st[r]; i < st[r + 1]; i++) {
                if (i > st[r]) ospprof_buf_putc(b, ',');
                ospprof_buf_putc(b, p->samples[ord[i]].state ? '1' : '0');
            }
            ospprof_buf_puts(b, "],\"type\":\"sampled\",\"unit\":\"seconds\",\"weights\":[");
            for (size_t i = st[r]; i < st[r + 1]; i++) {
                if (i > st[r]) ospprof_buf_putc(b, ',');
                ospprof_json_seconds(b, p->samples[ord[i]].weight_ns);
                ospprof_out_maybe_flush(w);
            }
            ospprof_buf_puts(b, "]}");
        }
        free(ord);
        free(st);
    }
    ospprof_buf_puts(b, "],\"shared\":{\"frames\":[");
    for (size_t f = 0; f < p->nframes; f++) {
        if (f) ospprof_buf_putc(b, ',');
        ospprof_buf_puts(b, "{\"file\":");
        ospprof_json_str(b, S(p, p->frames[f].file));
        ospprof_buf_printf(b, ",\"line\":%" PRIu32 ",\"name\":", p->frames[f].line);
        ospprof_json_str(b, S(p, p->frames[f].name));
        ospprof_buf_putc(b, '}');
        ospprof_out_maybe_flush(w);
    }
    ospprof_buf_puts(b, "]}}\n");
}

/* ---- .cpuprofile (§(g.3)) -------------------------------------------------------------- */

typedef struct oskey {
    uint64_t t;
    uint32_t row, idx;
} oskey;
static int oskey_cmp(const void *a, const void *b) {
    const oskey *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void call_frame(ospprof_buf *b, const char *name, const char *url, uint32_t line) {
    if (line)
        ospprof_buf_printf(b, "{\"columnNumber\":0,\"functionName\":");
    else
        ospprof_buf_puts(b, "{\"columnNumber\":-1,\"functionName\":");
    ospprof_json_str(b, name);
    if (line)
        ospprof_buf_printf(b, ",\"lineNumber\":%" PRIu32, line - 1);
    else
        ospprof_buf_puts(b, ",\"lineNumber\":-1");
    ospprof_buf_puts(b, ",\"scriptId\":\"0\",\"url\":");
    ospprof_json_str(b, url);
    ospprof_buf_putc(b, '}');
}

/* positionTicks entry: node, 1-based line, samples. */
typedef struct tick {
    uint32_t node, line;
    uint64_t ticks;
} tick;
static int tick_cmp(const void *a, const void *b) {
    const tick *x = a, *y = b;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static void cpuprofile_body(const ospprof_profile *p, ospprof_out *w) {
    ospprof_buf *b = &w->b;
    /* on-CPU samples ordered by (t, row) */
    oskey *keys = ospprof_xcalloc(p->on_n, sizeof *keys);
    size_t n = 0;
    bool sorted = true;
    for (size_t i = 0; i < p->nsamples; i++) {
        const ospprof_sample *s = &p->samples[i];
        if (s->state != 0) continue;
        keys[n] = (oskey){s->t_ns, s->row, (uint32_t)i};
        if (n && oskey_cmp(&keys[n - 1], &keys[n]) > 0) sorted = false;
        n++;
    }
    if (!sorted) qsort(keys, n, sizeof *keys, oskey_cmp);

    if (n == 0) {
        ospprof_buf_puts(b, "{\"endTime\":0,\"nodes\":[{\"callFrame\":");
        call_frame(b, "(root)", "", 0);
        ospprof_buf_puts(b, ",\"children\":[2],\"hitCount\":0,\"id\":1},{\"callFrame\":");
        call_frame(b, "(idle)", "", 0);
        ospprof_buf_puts(b, ",\"children\":[],\"hitCount\":1,\"id\":2}],\"samples\":[2],"
                            "\"startTime\":0,\"timeDeltas\":[0]}\n");
        free(keys);
        return;
    }

    /* call tree: node 0 is the root (id 1) */
    size_t cap = 1024, nn = 1;
    uint32_t *frame = ospprof_xcalloc(cap, sizeof *frame),
             *first = ospprof_xcalloc(cap, sizeof *first),
             *last = ospprof_xcalloc(cap, sizeof *last), *next = ospprof_xcalloc(cap, sizeof *next);
    uint64_t *hits = ospprof_xcalloc(cap, sizeof *hits);
    uint32_t *leaf_of = ospprof_xcalloc(p->nstacks, sizeof *leaf_of); /* node index + 1 */
    uint32_t *sample_node = ospprof_xcalloc(n, sizeof *sample_node);
    ospprof_map edges = {0}, tick_ids = {0};
    tick *ticks = NULL;
    size_t nticks = 0, capticks = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t k = p->samples[keys[i].idx].stack;
        if (!leaf_of[k]) {
            const ospprof_stackinfo *si = &p->stacks[k];
            uint32_t cur = 0;
            for (size_t j = si->n; j-- > 0;) {
                uint32_t f = p->stack_frames[si->off + j];
                bool ins;
                uint32_t *slot = ospprof_map_put(&edges, cur, f, (uint32_t)nn, &ins);
                if (ins) {
                    if (nn == cap) {
                        cap *= 2;
                        frame = ospprof_xrealloc(frame, cap * sizeof *frame);
                        first = ospprof_xrealloc(first, cap * sizeof *first);
                        last = ospprof_xrealloc(last, cap * sizeof *last);
                        next = ospprof_xrealloc(next, cap * sizeof *next);
                        hits = ospprof_xrealloc(hits, cap * sizeof *hits);
                    }
                    frame[nn] = f;
                    first[nn] = last[nn] = next[nn] = 0;
                    hits[nn] = 0;
                    if (last[cur])
                        next[last[cur]] = (uint32_t)nn;
                    else
                        first[cur] = (uint32_t)nn;
                    last[cur] = (uint32_t)nn;
                    nn++;
                }
                cur = *slot;
            }
            leaf_of[k] = cur + 1;
        }
        sample_node[i] = leaf_of[k] - 1;
        hits[sample_node[i]]++;
        uint32_t line = p->stacks[k].n ? p->stack_lines[p->stacks[k].off] : 0;
        if (line) {
            bool ins;
            uint32_t *slot =
                ospprof_map_put(&tick_ids, sample_node[i], line, (uint32_t)nticks, &ins);
            if (ins) {
                if (nticks == capticks) {
                    capticks = capticks ? capticks * 2 : 256;
                    ticks = ospprof_xrealloc(ticks, capticks * sizeof *ticks);
                }
                ticks[nticks++] = (tick){sample_node[i], line, 0};
            }
            ticks[*slot].ticks++;
        }
    }
    ospprof_map_free(&edges);
    ospprof_map_free(&tick_ids);
    if (nticks > 1) qsort(ticks, nticks, sizeof *ticks, tick_cmp);
    size_t tk = 0;

    uint64_t end_us = p->samples[keys[n - 1].idx].t_ns / 1000;
    ospprof_buf_printf(b, "{\"endTime\":%" PRIu64 ",\"nodes\":[", end_us);
    for (size_t id = 0; id < nn; id++) {
        if (id) ospprof_buf_putc(b, ',');
        ospprof_buf_puts(b, "{\"callFrame\":");
        if (id == 0) {
            call_frame(b, "(root)", "", 0);
        } else {
            const ospprof_frame *f = &p->frames[frame[id]];
            call_frame(b, S(p, f->name), S(p, f->file), f->line);
        }
        ospprof_buf_puts(b, ",\"children\":[");
        for (uint32_t c = first[id]; c; c = next[c]) {
            ospprof_buf_printf(b, "%" PRIu32, c + 1);
            if (next[c]) ospprof_buf_putc(b, ',');
        }
        ospprof_buf_printf(b, "],\"hitCount\":%" PRIu64 ",\"id\":%zu", id == 0 ? 0 : hits[id],
                           id + 1);
        if (tk < nticks && ticks[tk].node == id) {
            ospprof_buf_puts(b, ",\"positionTicks\":[");
            for (bool firstt = true; tk < nticks && ticks[tk].node == id; tk++, firstt = false)
                ospprof_buf_printf(b, "%s{\"line\":%" PRIu32 ",\"ticks\":%" PRIu64 "}",
                                   firstt ? "" : ",", ticks[tk].line, ticks[tk].ticks);
            ospprof_buf_putc(b, ']');
        }
        ospprof_buf_putc(b, '}');
        ospprof_out_maybe_flush(w);
    }
    ospprof_buf_puts(b, "],\"samples\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) ospprof_buf_putc(b, ',');
        ospprof_buf_u64(b, sample_node[i] + 1);
        ospprof_out_maybe_flush(w);
    }
    ospprof_buf_puts(b, "],\"startTime\":0,\"timeDeltas\":[");
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t us = p->samples[keys[i].idx].t_ns / 1000;
        if (i) ospprof_buf_putc(b, ',');
        ospprof_buf_u64(b, us - prev);
        prev = us;
        ospprof_out_maybe_flush(w);
    }
    ospprof_buf_puts(b, "]}\n");
    free(keys);
    free(frame), free(first), free(last), free(next), free(hits), free(leaf_of);
    free(sample_node);
    free(ticks);
}

/* ---- folded (§(g.4)) ----------------------------------------------------------------------- */

typedef struct fline {
    const char *lab, *body; /* "label;" and the body (names root to leaf) */
    size_t llen, blen;
    uint64_t count;
} fline;

static int fline_cmp(const void *a, const void *b) {
    const fline *x = a, *y = b;
    if (x->lab == y->lab) { /* same row: compare the bodies */
        size_t n = x->blen < y->blen ? x->blen : y->blen;
        int c = memcmp(x->body, y->body, n);
        if (c) return c;
        return x->blen < y->blen ? -1 : x->blen > y->blen;
    }
    size_t nx = x->llen + x->blen, ny = y->llen + y->blen;
    for (size_t i = 0; i < nx && i < ny; i++) {
        unsigned char cx = (unsigned char)(i < x->llen ? x->lab[i] : x->body[i - x->llen]);
        unsigned char cy = (unsigned char)(i < y->llen ? y->lab[i] : y->body[i - y->llen]);
        if (cx != cy) return cx < cy ? -1 : 1;
    }
    return nx < ny ? -1 : nx > ny;
}

static void folded_body(const ospprof_profile *p, ospprof_out *w) {
    /* labels "<sanitised label>;" */
    ospprof_strtab bodies = {0};
    char **labs = ospprof_xcalloc(p->nrows, sizeof *labs);
    for (size_t r = 0; r < p->nrows; r++) {
        ospprof_buf lb = {0};
        ospprof_folded_name(&lb, p->rows[r].label);
        ospprof_buf_putc(&lb, ';');
        labs[r] = lb.p;
    }
    /* body id per used stack */
    uint32_t *body_of = ospprof_xcalloc(p->nstacks, sizeof *body_of); /* id + 1 */
    ospprof_map counts = {0};
    size_t nlines = 0, caplines = 0;
    fline *lines = NULL;
    ospprof_buf tmp = {0};
    for (size_t i = 0; i < p->nsamples; i++) {
        const ospprof_sample *s = &p->samples[i];
        if (s->state != 0) continue; /* §(l.6): a CPU flame graph, on-CPU samples only */
        if (!body_of[s->stack]) {
            const ospprof_stackinfo *si = &p->stacks[s->stack];
            tmp.n = 0;
            for (size_t j = si->n; j-- > 0;) {
                ospprof_folded_name(&tmp, S(p, p->frames[p->stack_frames[si->off + j]].name));
                if (j) ospprof_buf_putc(&tmp, ';');
            }
            body_of[s->stack] = ospprof_intern(&bodies, tmp.p ? tmp.p : "", tmp.n) + 1;
        }
        uint32_t body = body_of[s->stack] - 1;
        bool ins;
        uint32_t *slot = ospprof_map_put(&counts, s->row, body, (uint32_t)nlines, &ins);
        if (ins) {
            if (nlines == caplines) {
                caplines = caplines ? caplines * 2 : 256;
                lines = ospprof_xrealloc(lines, caplines * sizeof *lines);
            }
            lines[nlines++] = (fline){labs[s->row], NULL, strlen(labs[s->row]), body, 0};
        }
        lines[*slot].count++;
    }
    ospprof_buf_free(&tmp);
    ospprof_map_free(&counts);
    for (size_t i = 0; i < nlines; i++) {
        size_t id = lines[i].blen;
        lines[i].body = bodies.str[id];
        lines[i].blen = bodies.len[id];
    }
    if (nlines > 1) qsort(lines, nlines, sizeof *lines, fline_cmp);
    ospprof_buf *b = &w->b;
    for (size_t i = 0; i < nlines;) {
        size_t j = i + 1;
        uint64_t c = lines[i].count;
        while (j < nlines && fline_cmp(&lines[i], &lines[j]) == 0) c += lines[j++].count;
        ospprof_buf_put(b, lines[i].lab, lines[i].llen);
        ospprof_buf_put(b, lines[i].body, lines[i].blen);
        ospprof_buf_printf(b, " %" PRIu64 "\n", c);
        ospprof_out_maybe_flush(w);
        i = j;
    }
    free(lines);
    free(body_of);
    for (size_t r = 0; r < p->nrows; r++) free(labs[r]);
    free(labs);
    ospprof_strtab_free(&bodies);
}

/* ---- profile.json (§(g.5)) -------------------------------------------------------------- */

static void pct(ospprof_buf *b, uint64_t part, uint64_t whole) {
    ospprof_buf_printf(b, "%.1f", whole ? (double)part * 100.0 / (double)whole : 0.0);
}

static void summary_body(const ospprof_profile *p, ospprof_out *w) {
    ospprof_buf *b = &w->b;
    ospprof_buf_printf(b, "{\"cpuSeconds\":%.3f,\"droppedSamples\":%" PRIu64 ",\"fibers\":[",
                       (double)p->on_w / 1e9, p->dropped);
    for (size_t r = 0; r < p->nrows; r++) {
        if (r) ospprof_buf_putc(b, ',');
        ospprof_buf_printf(b, "{\"id\":%" PRId64 ",\"label\":", p->rows[r].fiber);
        ospprof_json_str(b, p->rows[r].label);
        ospprof_buf_printf(b, ",\"oncpuSamples\":%" PRIu64 ",\"samples\":%" PRIu64 "}",
                           p->rows[r].on_n, p->rows[r].n);
        ospprof_out_maybe_flush(w);
    }
    ospprof_buf_puts(b, "],\"hotFunctions\":[");
    uint32_t *hf;
    size_t nhf = ospprof_hot_functions(p, &hf);
    for (size_t i = 0; i < nhf && i < 50; i++) {
        const ospprof_func *f = &p->funcs[hf[i]];
        if (i) ospprof_buf_putc(b, ',');
        ospprof_buf_puts(b, "{\"file\":");
        ospprof_json_str(b, S(p, f->file));
        ospprof_buf_printf(b, ",\"kind\":\"%s\",\"line\":%" PRIu32 ",\"name\":",
                           f->user ? "user" : "runtime", f->line);
        ospprof_json_str(b, S(p, f->name));
        ospprof_buf_puts(b, ",\"selfPct\":");
        pct(b, f->self_w, p->on_w);
        ospprof_buf_printf(b, ",\"selfSamples\":%" PRIu64 ",\"totalPct\":", f->self_n);
        pct(b, f->total_w, p->on_w);
        ospprof_buf_printf(b, ",\"totalSamples\":%" PRIu64 "}", f->total_n);
    }
    free(hf);
    ospprof_buf_puts(b, "],\"hotLines\":[");
    /* hot lines: attributed lines (§(l.6)), at least 0.5 % of the on-CPU weight */
    ospprof_hotline *hl;
    size_t nhl = ospprof_hot_lines(p, &hl);
    size_t out = 0;
    for (size_t i = 0; i < nhl && out < 100; i++) {
        if (hl[i].w * 200 < p->on_w) continue; /* below 0.5 % */
        if (out++) ospprof_buf_putc(b, ',');
        ospprof_buf_puts(b, "{\"file\":");
        ospprof_json_str(b, hl[i].file_s);
        ospprof_buf_printf(b, ",\"line\":%" PRIu32 ",\"pct\":", hl[i].line);
        pct(b, hl[i].w, p->on_w);
        ospprof_buf_printf(b, ",\"samples\":%" PRIu64 ",\"selfSamples\":%" PRIu64 "}", hl[i].n,
                           hl[i].self_n);
    }
    free(hl);
    ospprof_buf_puts(b, "],\"program\":");
    ospprof_json_str(b, p->program);
    ospprof_buf_printf(b,
                       ",\"rateHz\":%" PRIu64 ",\"sampleCount\":%zu,\"version\":1,"
                       "\"wallSeconds\":%.3f}\n",
                       p->rate_hz, p->nsamples, p->wall_s);
}

/* ---- files ------------------------------------------------------------------------------ */

typedef void (*body_fn)(const ospprof_profile *, ospprof_out *);

static int write_one(const ospprof_profile *p, body_fn body, const char *path, char *err,
                     size_t errlen) {
    ospprof_out o;
    if (ospprof_out_open(&o, path, err, errlen) != 0) return -1;
    body(p, &o);
    return ospprof_out_commit(&o, err, errlen);
}

int ospprof_write_speedscope(const ospprof_profile *p, const char *path, char *err, size_t errlen) {
    return write_one(p, speedscope_body, path, err, errlen);
}
int ospprof_write_cpuprofile(const ospprof_profile *p, const char *path, char *err, size_t errlen) {
    return write_one(p, cpuprofile_body, path, err, errlen);
}
int ospprof_write_folded(const ospprof_profile *p, const char *path, char *err, size_t errlen) {
    return write_one(p, folded_body, path, err, errlen);
}
int ospprof_write_summary(const ospprof_profile *p, const char *path, char *err, size_t errlen) {
    return write_one(p, summary_body, path, err, errlen);
}
int ospprof_write_svg(const ospprof_profile *p, const char *path, char *err, size_t errlen) {
    return write_one(p, ospprof_svg_body, path, err, errlen);
}

const char *const ospprof_export_ext[OSPPROF_NEXPORTS] = {".speedscope.json", ".cpuprofile",
                                                          ".folded", ".profile.json", ".svg"};

int ospprof_write_exports(const ospprof_profile *p, const char *prefix, char *err, size_t errlen) {
    return ospprof_write_exports_ex(p, prefix, false, err, errlen);
}

/* The speedscope export, the largest, is written on a second thread beside the others: the
 * bodies share the profile read-only (speedscope's per-stack index lists are the one cache,
 * and only speedscope_body reads or fills it) and each writes its own ospprof_out. */
typedef struct export_job {
    const ospprof_profile *p;
    body_fn body;
    ospprof_out *out;
} export_job;

static void write_body(const export_job *j) {
    j->body(j->p, j->out);
    ospprof_out_flush(j->out);
}

static void *export_job_run(void *arg) {
    write_body(arg);
    return NULL;
}

int ospprof_write_exports_ex(const ospprof_profile *p, const char *prefix, bool pprof, char *err,
                             size_t errlen) {
    static const body_fn bodies[OSPPROF_NEXPORTS + 1] = {speedscope_body,  cpuprofile_body,
                                                         folded_body,      summary_body,
                                                         ospprof_svg_body, ospprof_pprof_body};
    size_t nset = OSPPROF_NEXPORTS + (pprof ? 1 : 0);
    ospprof_out set[OSPPROF_NEXPORTS + 1];
    char *paths[OSPPROF_NEXPORTS + 1];
    size_t plen = strlen(prefix);
    size_t opened = 0;
    int rc = 0;
    /* every temporary first ... */
    for (; opened < nset; opened++) {
        const char *ext =
            opened < OSPPROF_NEXPORTS ? ospprof_export_ext[opened] : OSPPROF_PPROF_EXT;
        paths[opened] = ospprof_xrealloc(NULL, plen + strlen(ext) + 1);
        memcpy(paths[opened], prefix, plen);
        strcpy(paths[opened] + plen, ext);
        if (ospprof_out_open(&set[opened], paths[opened], err, errlen) != 0) {
            free(paths[opened]);
            rc = -1;
            break;
        }
    }
    if (rc == 0) {
        export_job first = {p, bodies[0], &set[0]};
        pthread_t th;
        bool threaded = pthread_create(&th, NULL, export_job_run, &first) == 0;
        if (!threaded) write_body(&first);
        for (size_t i = 1; i < nset; i++) write_body(&(export_job){p, bodies[i], &set[i]});
        if (threaded) pthread_join(th, NULL);
        for (size_t i = 0; i < nset; i++) {
            if (set[i].failed) {
                ospprof_seterr(err, errlen, "cannot write %s: %s", paths[i], set[i].reason);
                rc = -1;
                break;
            }
        }
    }
    for (size_t i = 0; i < opened; i++) free(paths[i]);
    if (rc != 0) {
        for (size_t i = 0; i < opened; i++) ospprof_out_abort(&set[i]);
        return -1;
    }
    /* ... then the renames, all or none */
    return ospprof_out_commit_set(set, nset, err, errlen);
}
