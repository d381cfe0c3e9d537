/*
 * diff.c — `osprey --diff <base> <new>` (docs/spec/profiler.md §(l.8)): two profiles, each a
 * collapsed-stacks file (`frame;frame;… <count>` lines: ours or any other tool's) or a raw
 * profile (symbolized first, on-CPU samples as our `.folded` counts them). Each stack is kept
 * as a sequence of interned frame names; the outputs are built from one sorted view in which
 * every distinct stack appears once with a base and a new count. The merged tree of stacks is
 * never built whole: the SVG merges the sorted stacks depth-first and keeps only the nodes it
 * draws, the report sums per function over the stacks. Shares are normalised by each side's
 * total, so profiles of different lengths compare.
 *
 * Outputs, replaced as a set: `<stem>.diff.svg` (the new profile's flame graph, coloured red
 * where a frame's total share grew and blue where it shrank, saturation by the size of the
 * change; hover shows both shares) and `<stem>.diff.folded` (`<stack> <base> <new>` lines,
 * sorted), and a report of the functions whose self and total shares changed most.
 */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One stack added to a side: frames d->ids[off .. off+len) (string ids, root first). The
 * same stack may be added many times (by either side, or by a file that repeats a line):
 * identical stacks are merged once, when the outputs are built (dview). */
typedef struct dpath {
    size_t off;
    uint32_t len;
    int side;
    uint64_t count;
} dpath;

struct ospprof_diff {
    ospprof_strtab names;
    uint32_t *ids; /* every stack's frames, back to back */
    size_t nids, capids;
    dpath *paths;
    size_t np, capp;
    uint64_t sum[2]; /* each side's total count */
};

ospprof_diff *ospprof_diff_new(void) {
    ospprof_diff *d = ospprof_xcalloc(1, sizeof *d);
    ospprof_intern(&d->names, "all", 3); /* id 0: the root's name */
    return d;
}

void ospprof_diff_free(ospprof_diff *d) {
    if (!d) return;
    ospprof_strtab_free(&d->names);
    free(d->ids);
    free(d->paths);
    free(d);
}

/* Room for n more frame ids; returns where they go. */
static uint32_t *ids_reserve(ospprof_diff *d, size_t n) {
    if (d->nids + n > d->capids) {
        size_t cap = d->capids ? d->capids * 2 : 1 << 16;
        while (cap < d->nids + n) cap *= 2;
        d->ids = ospprof_xrealloc(d->ids, cap * sizeof *d->ids);
        d->capids = cap;
    }
    return d->ids + d->nids;
}

/* Add `count` to the stack whose n frame ids were just written at ids_reserve(d, n). */
static void add_path(ospprof_diff *d, int side, size_t n, uint64_t count) {
    if (d->np == d->capp) {
        d->capp = d->capp ? d->capp * 2 : 1024;
        d->paths = ospprof_xrealloc(d->paths, d->capp * sizeof *d->paths);
    }
    d->paths[d->np++] = (dpath){d->nids, (uint32_t)n, side, count};
    d->nids += n;
    d->sum[side] += count;
}

/* The merged view the outputs are built from: every distinct stack once, with both counts,
 * sorted by frame ids (so the stacks under any prefix are one contiguous run). */
typedef struct upath {
    const uint32_t *ids;
    uint32_t len;
    const ospprof_strtab *names; /* for the bytewise order of the folded file */
    uint64_t n[2];
} upath;

typedef struct dview {
    upath *u;
    size_t n, maxlen;
} dview;

static int upath_id_cmp(const upath *x, const upath *y) {
    uint32_t n = x->len < y->len ? x->len : y->len;
    for (uint32_t i = 0; i < n; i++)
        if (x->ids[i] != y->ids[i]) return x->ids[i] < y->ids[i] ? -1 : 1;
    return x->len < y->len ? -1 : x->len > y->len;
}

static int upath_ptr_id_cmp(const void *a, const void *b) {
    return upath_id_cmp(*(const upath *const *)a, *(const upath *const *)b);
}

static void view_build(const ospprof_diff *d, dview *v) {
    /* sorted as pointers (qsort moves 8 bytes, not a whole upath), then merged in order */
    size_t np = d->np;
    upath *all = ospprof_xcalloc(np ? np : 1, sizeof *all);
    const upath **ord = ospprof_xcalloc(np ? np : 1, sizeof *ord);
    for (size_t i = 0; i < np; i++) {
        const dpath *p = &d->paths[i];
        all[i] = (upath){d->ids + p->off, p->len, &d->names, {0, 0}};
        all[i].n[p->side] = p->count;
        ord[i] = &all[i];
    }
    if (np > 1) qsort(ord, np, sizeof *ord, upath_ptr_id_cmp);
    upath *u = ospprof_xcalloc(np ? np : 1, sizeof *u);
    size_t k = 0, maxlen = 0;
    for (size_t i = 0; i < np; i++) {
        if (k && upath_id_cmp(&u[k - 1], ord[i]) == 0) {
            u[k - 1].n[0] += ord[i]->n[0];
            u[k - 1].n[1] += ord[i]->n[1];
            continue;
        }
        u[k++] = *ord[i];
        if (ord[i]->len > maxlen) maxlen = ord[i]->len;
    }
    free(ord);
    free(all);
    v->u = u;
    v->n = k;
    v->maxlen = maxlen;
}

static void view_free(dview *v) {
    free(v->u);
}

/* ---- the collapsed-stacks reader ---------------------------------------------------------- */

int ospprof_diff_add_folded(ospprof_diff *d, int side, const char *name, const char *text,
                            size_t len, char *err, size_t errlen) {
    /* this line's frames, and the previous line's (a sorted collapsed-stacks file repeats
     * long prefixes: their ids are copied, not looked up again) */
    const char **frames = NULL, **pframes = NULL;
    size_t *lens = NULL, *plens = NULL, cap = 0, pn = 0, poff = 0;
    size_t lineno = 0;
    /* a differential file (`<stack> <base> <new>`, what ospprof_diff_write makes) parses as
     * stacks whose last frame ends in " <base>": refused when every line ends so */
    size_t first = 0, nlines = 0, ntwo = 0;
    int rc = 0;
    /* a UTF-8 byte order mark (an editor's, PowerShell's) is not part of the first frame */
    size_t start = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    /* UTF-16 (PowerShell's `>`, Notepad's "Unicode"): said as such rather than as a NUL byte */
    if (len >= 2 && (memcmp(text, "\xFF\xFE", 2) == 0 || memcmp(text, "\xFE\xFF", 2) == 0)) {
        ospprof_seterr(err, errlen,
                       "%s:1: UTF-16 text (byte order mark %s); collapsed stacks are read as "
                       "UTF-8: convert it first (iconv -f UTF-16 -t UTF-8)",
                       name, text[0] == '\xFF' ? "FF FE" : "FE FF");
        return -1;
    }
    for (size_t pos = start; pos < len;) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + (nl ? 1 : 0);
        lineno++;
        if (n && line[n - 1] == '\r') n--;
        size_t a = 0;
        while (a < n && (line[a] == ' ' || line[a] == '\t')) a++;
        if (a == n) continue; /* blank line */
        if (memchr(line, 0, n)) {
            ospprof_seterr(err, errlen, "%s:%zu: not a collapsed-stacks file (a NUL byte)", name,
                           lineno);
            rc = -1;
            break;
        }
        size_t e = n;
        while (e > a && (line[e - 1] == ' ' || line[e - 1] == '\t')) e--;
        size_t c = e;
        while (c > a && line[c - 1] >= '0' && line[c - 1] <= '9') c--;
        if (c == e || c == a || (line[c - 1] != ' ' && line[c - 1] != '\t')) {
            ospprof_seterr(err, errlen,
                           "%s:%zu: not a collapsed-stacks line (expected "
                           "'<frame>;<frame>;... <count>')",
                           name, lineno);
            rc = -1;
            break;
        }
        uint64_t count = 0;
        bool overflow = false;
        for (size_t i = c; i < e; i++) {
            unsigned dg = (unsigned)(line[i] - '0');
            if (count > (UINT64_MAX - dg) / 10) overflow = true;
            count = count * 10 + dg;
        }
        if (overflow || d->sum[side] + count < d->sum[side]) {
            ospprof_seterr(err, errlen, "%s:%zu: count too large", name, lineno);
            rc = -1;
            break;
        }
        size_t se = c - 1;
        while (se > a && (line[se - 1] == ' ' || line[se - 1] == '\t')) se--;
        size_t c2 = se;
        while (c2 > a && line[c2 - 1] >= '0' && line[c2 - 1] <= '9') c2--;
        if (!nlines++) first = lineno;
        if (c2 < se && c2 > a && (line[c2 - 1] == ' ' || line[c2 - 1] == '\t')) ntwo++;
        /* split the stack on ';' */
        size_t nf = 0;
        for (size_t s = a; s <= se;) {
            const char *semi = memchr(line + s, ';', se - s);
            size_t fe = semi ? (size_t)(semi - line) : se;
            if (fe == s) { /* "a;;b", ";a" or "a;": a frame needs a name */
                ospprof_seterr(err, errlen, "%s:%zu:%zu: empty frame in a collapsed stack", name,
                               lineno, s + 1);
                rc = -1;
                break;
            }
            if (nf == cap) {
                cap = cap ? cap * 2 : 64;
                frames = ospprof_xrealloc(frames, cap * sizeof *frames);
                lens = ospprof_xrealloc(lens, cap * sizeof *lens);
                pframes = ospprof_xrealloc(pframes, cap * sizeof *pframes);
                plens = ospprof_xrealloc(plens, cap * sizeof *plens);
            }
            frames[nf] = line + s;
            lens[nf++] = fe - s;
            s = fe + 1;
            if (!semi) break;
        }
        if (rc) break;
        if (!count) continue;
        size_t k = 0;
        while (k < pn && k < nf && plens[k] == lens[k] &&
               memcmp(pframes[k], frames[k], lens[k]) == 0)
            k++;
        uint32_t *ids = ids_reserve(d, nf);
        for (size_t i = 0; i < k; i++) ids[i] = d->ids[poff + i];
        for (size_t i = k; i < nf; i++) ids[i] = ospprof_intern(&d->names, frames[i], lens[i]);
        memcpy(pframes, frames, nf * sizeof *frames);
        memcpy(plens, lens, nf * sizeof *lens);
        pn = nf;
        poff = d->nids;
        add_path(d, side, nf, count);
    }
    if (rc == 0 && nlines && ntwo == nlines) {
        ospprof_seterr(err, errlen,
                       "%s:%zu: this is a differential folded file (two counts per line); pass "
                       "the folded stacks it was made from",
                       name, first);
        rc = -1;
    }
    free(frames);
    free(lens);
    free(pframes);
    free(plens);
    return rc;
}

/* ---- raw profiles ------------------------------------------------------------------------- */

int ospprof_diff_add_profile(ospprof_diff *d, int side, const ospprof_profile *p) {
    /* per stack and row: the on-CPU sample count (as .folded counts) */
    ospprof_map counts = {0};
    size_t nk = 0, capk = 0;
    struct key {
        uint32_t row, stack;
        uint64_t n;
    } *keys = NULL;
    for (size_t i = 0; i < p->nsamples; i++) {
        const ospprof_sample *s = &p->samples[i];
        if (s->state != 0) continue;
        bool ins;
        uint32_t *slot = ospprof_map_put(&counts, s->row, s->stack, (uint32_t)nk, &ins);
        if (ins) {
            if (nk == capk) {
                capk = capk ? capk * 2 : 256;
                keys = ospprof_xrealloc(keys, capk * sizeof *keys);
            }
            keys[nk++] = (struct key){s->row, s->stack, 0};
        }
        keys[*slot].n++;
    }
    ospprof_map_free(&counts);
    /* each frame's and each row's sanitised name interned once (the same text as .folded) */
    uint32_t *fname = ospprof_xcalloc(p->nframes, sizeof *fname);
    uint32_t *rname = ospprof_xcalloc(p->nrows, sizeof *rname);
    ospprof_buf t = {0};
    for (size_t f = 0; f < p->nframes; f++) {
        t.n = 0;
        ospprof_folded_name(&t, p->strs.str[p->frames[f].name]);
        fname[f] = ospprof_intern(&d->names, t.p ? t.p : "", t.n);
    }
    for (size_t r = 0; r < p->nrows; r++) {
        t.n = 0;
        ospprof_folded_name(&t, p->rows[r].label);
        rname[r] = ospprof_intern(&d->names, t.p ? t.p : "", t.n);
    }
    ospprof_buf_free(&t);
    for (size_t k = 0; k < nk; k++) {
        const ospprof_stackinfo *si = &p->stacks[keys[k].stack];
        uint32_t *ids = ids_reserve(d, si->n + 1);
        ids[0] = rname[keys[k].row];
        for (size_t j = 0; j < si->n; j++) /* root first */
            ids[j + 1] = fname[p->stack_frames[si->off + si->n - 1 - j]];
        add_path(d, side, si->n + 1, keys[k].n);
    }
    free(fname);
    free(rname);
    free(keys);
    return 0;
}

/* ---- shares ------------------------------------------------------------------------------- */

static double share(const ospprof_diff *d, int side, uint64_t v) {
    return d->sum[side] ? (double)v * 100.0 / (double)d->sum[side] : 0.0;
}

/* Change of a total share, new minus base, in points. */
static double delta(const ospprof_diff *d, uint64_t base, uint64_t new_) {
    return share(d, 1, new_) - share(d, 0, base);
}

/* ---- the differential SVG ----------------------------------------------------------------- */

/* The drawn tree: the new profile's nodes at least min_fraction of its total wide. */
typedef struct svgctx {
    const ospprof_diff *d;
    ospprof_flame_node *fn; /* weight, self and samples: the new side's counts */
    uint32_t *name;         /* per node: string id */
    uint64_t *base;         /* per node: the base side's total */
    size_t n, cap;
    double max_delta; /* largest |change| of any node with new weight, drawn or not */
} svgctx;

static const char *svg_name(void *ctx, size_t node) {
    svgctx *c = ctx;
    return c->d->names.str[c->name[node]];
}

static void svg_detail(void *ctx, size_t node, ospprof_buf *out) {
    svgctx *c = ctx;
    uint64_t b = c->base[node], n = c->fn[node].weight;
    ospprof_buf_printf(out, "base %.2f%% · new %.2f%% (%+.2f)", share(c->d, 0, b),
                       share(c->d, 1, n), delta(c->d, b, n));
}

void ospprof_diff_color(double delta_points, double max_points, char out[8]) {
    double t = max_points > 0 ? fabs(delta_points) / max_points : 0.0;
    if (t > 1) t = 1;
    /* white (no change) to full red or blue; a small change stays visible */
    int strong = (int)lround(255.0 - 200.0 * t);
    if (delta_points > 0)
        snprintf(out, 8, "#%02x%02x%02x", 255, strong, strong);
    else if (delta_points < 0)
        snprintf(out, 8, "#%02x%02x%02x", strong, strong, 255);
    else
        snprintf(out, 8, "#%02x%02x%02x", 255, 255, 255);
}

static void svg_color(void *ctx, size_t node, char out[8]) {
    svgctx *c = ctx;
    ospprof_diff_color(delta(c->d, c->base[node], c->fn[node].weight), c->max_delta, out);
}

static uint32_t svg_add(svgctx *c, uint32_t parent, uint32_t name) {
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1024;
        c->fn = ospprof_xrealloc(c->fn, c->cap * sizeof *c->fn);
        c->name = ospprof_xrealloc(c->name, c->cap * sizeof *c->name);
        c->base = ospprof_xrealloc(c->base, c->cap * sizeof *c->base);
    }
    c->fn[c->n] = (ospprof_flame_node){parent, 0, 0, 0};
    c->name[c->n] = name;
    c->base[c->n] = 0;
    return (uint32_t)c->n++;
}

/* One open node of the depth-first merge: its index and its subtree's counts so far. */
typedef struct open_node {
    uint32_t node;
    uint64_t total[2], self1;
} open_node;

/* Close the open nodes at depths >= keep, deepest first: each one's counts are final, so its
 * change counts towards the largest, its counts go to its parent, and it is dropped with its
 * subtree (which depth-first order placed right after it) when it is narrower than `thr` or
 * has no new weight, as the flame-graph writer would not draw it. */
static void svg_close(svgctx *c, open_node *open, size_t *nopen, size_t keep, double thr) {
    while (*nopen > keep) {
        open_node *o = &open[--*nopen];
        if (o->total[1]) {
            double dl = fabs(delta(c->d, o->total[0], o->total[1]));
            if (dl > c->max_delta) c->max_delta = dl;
        }
        if (*nopen) {
            open[*nopen - 1].total[0] += o->total[0];
            open[*nopen - 1].total[1] += o->total[1];
        }
        if (!o->total[1] || (double)o->total[1] < thr) {
            c->n = o->node;
            continue;
        }
        c->fn[o->node].weight = c->fn[o->node].samples = o->total[1];
        c->fn[o->node].self = o->self1;
        c->base[o->node] = o->total[0];
    }
}

static void diff_svg(const ospprof_diff *d, const dview *v, const char *title, ospprof_out *w) {
    /* The merged tree is never built whole: the stacks, in id order, are merged depth-first
     * (every prefix one contiguous run), and a node is kept only if it is drawn; memory
     * stays near the drawn tree (svg_profile.c does the same for <stem>.svg). */
    const double min_fraction = 0.001, thr = min_fraction * (double)d->sum[1];
    svgctx c = {.d = d};
    svg_add(&c, UINT32_MAX, 0);
    c.fn[0] = (ospprof_flame_node){UINT32_MAX, d->sum[1], 0, d->sum[1]};
    c.base[0] = d->sum[0];
    open_node *open = ospprof_xcalloc(v->maxlen ? v->maxlen : 1, sizeof *open);
    size_t nopen = 0;
    for (size_t i = 0; i < v->n; i++) {
        const upath *p = &v->u[i];
        size_t common = 0;
        if (i > 0) {
            const upath *q = &v->u[i - 1];
            while (common < nopen && common < p->len && common < q->len &&
                   q->ids[common] == p->ids[common])
                common++;
        }
        svg_close(&c, open, &nopen, common, thr);
        for (size_t k = nopen; k < p->len; k++) {
            uint32_t parent = k ? open[k - 1].node : 0;
            open[nopen++] = (open_node){svg_add(&c, parent, p->ids[k]), {0, 0}, 0};
        }
        open_node *leaf = &open[p->len - 1];
        leaf->total[0] += p->n[0];
        leaf->total[1] += p->n[1];
        leaf->self1 += p->n[1];
    }
    svg_close(&c, open, &nopen, 0, thr);
    free(open);
    ospprof_flame fg = {.nodes = c.fn,
                        .nnodes = c.n,
                        .title = title,
                        .name = svg_name,
                        .detail = svg_detail,
                        .color = svg_color,
                        .ctx = &c,
                        .min_fraction = min_fraction};
    ospprof_svg_flame(&fg, w);
    free(c.fn);
    free(c.name);
    free(c.base);
}

/* ---- the three-column folded file --------------------------------------------------------- */

/* The bytewise order of the two stacks' lines `frame;frame;…` (what sorting the joined
 * strings with memcmp gives), without joining them: equal frames are skipped whole. */
static int upath_text_cmp(const void *a, const void *b) {
    const upath *x = *(const upath *const *)a, *y = *(const upath *const *)b;
    const ospprof_strtab *t = x->names;
    size_t i = 0, j = 0, oi = 0, oj = 0; /* frame and byte offset in it, on each side */
    for (;;) {
        if (oi == 0 && oj == 0 && i < x->len && j < y->len && x->ids[i] == y->ids[j]) {
            oi = t->len[x->ids[i]];
            oj = t->len[y->ids[j]];
        }
        size_t li = t->len[x->ids[i]], lj = t->len[y->ids[j]];
        if (oi < li && oj < lj) { /* inside a frame on both sides */
            size_t m = li - oi < lj - oj ? li - oi : lj - oj;
            int c = memcmp(t->str[x->ids[i]] + oi, t->str[y->ids[j]] + oj, m);
            if (c) return c;
            oi += m;
            oj += m;
            continue;
        }
        /* at least one side is at the end of a frame: a ';', or the end of its line */
        bool ei = oi == li && i + 1 == x->len, ej = oj == lj && j + 1 == y->len;
        if (ei || ej) return ei && ej ? 0 : ei ? -1 : 1;
        unsigned char ci = oi == li ? ';' : (unsigned char)t->str[x->ids[i]][oi];
        unsigned char cj = oj == lj ? ';' : (unsigned char)t->str[y->ids[j]][oj];
        if (ci != cj) return ci < cj ? -1 : 1;
        if (oi == li)
            i++, oi = 0;
        else
            oi++;
        if (oj == lj)
            j++, oj = 0;
        else
            oj++;
    }
}

static void diff_folded(const ospprof_diff *d, const dview *v, ospprof_out *w) {
    const upath **u = ospprof_xcalloc(v->n ? v->n : 1, sizeof *u);
    for (size_t i = 0; i < v->n; i++) u[i] = &v->u[i];
    if (v->n > 1) qsort(u, v->n, sizeof *u, upath_text_cmp);
    for (size_t i = 0; i < v->n; i++) {
        /* the line's length first, then its bytes copied straight into the buffer */
        const upath *p = u[i];
        size_t len = p->len + 2 * 21 + 2;
        for (uint32_t k = 0; k < p->len; k++) len += d->names.len[p->ids[k]];
        ospprof_buf_reserve(&w->b, len);
        char *o = w->b.p + w->b.n;
        for (uint32_t k = 0; k < p->len; k++) {
            uint32_t id = p->ids[k];
            if (k) *o++ = ';';
            memcpy(o, d->names.str[id], d->names.len[id]);
            o += d->names.len[id];
        }
        w->b.n = (size_t)(o - w->b.p);
        ospprof_buf_putc(&w->b, ' ');
        ospprof_buf_u64(&w->b, p->n[0]);
        ospprof_buf_putc(&w->b, ' ');
        ospprof_buf_u64(&w->b, p->n[1]);
        ospprof_buf_putc(&w->b, '\n');
        ospprof_out_maybe_flush(w);
    }
    free(u);
}

/* ---- per-function changes ----------------------------------------------------------------- */

static int functions_of(const ospprof_diff *d, const dview *v, ospprof_diff_func **out) {
    /* per name: self and total on each side; total counted once per stack */
    size_t nn = d->names.n;
    ospprof_diff_func *f = ospprof_xcalloc(nn, sizeof *f);
    size_t *stamp = ospprof_xcalloc(nn, sizeof *stamp);
    for (size_t i = 0; i < v->n; i++) {
        const upath *p = &v->u[i];
        uint32_t leaf = p->ids[p->len - 1];
        f[leaf].self[0] += p->n[0];
        f[leaf].self[1] += p->n[1];
        for (uint32_t k = 0; k < p->len; k++) {
            uint32_t nm = p->ids[k];
            if (stamp[nm] == i + 1) continue;
            stamp[nm] = i + 1;
            f[nm].total[0] += p->n[0];
            f[nm].total[1] += p->n[1];
        }
    }
    free(stamp);
    size_t k = 0;
    for (size_t i = 0; i < nn; i++) {
        if (!f[i].total[0] && !f[i].total[1]) continue;
        f[k] = f[i];
        f[k].name = d->names.str[i];
        f[k].self_delta = share(d, 1, f[k].self[1]) - share(d, 0, f[k].self[0]);
        f[k].total_delta = share(d, 1, f[k].total[1]) - share(d, 0, f[k].total[0]);
        f[k].self_pct[0] = share(d, 0, f[k].self[0]);
        f[k].self_pct[1] = share(d, 1, f[k].self[1]);
        f[k].total_pct[0] = share(d, 0, f[k].total[0]);
        f[k].total_pct[1] = share(d, 1, f[k].total[1]);
        k++;
    }
    *out = f;
    return (int)k;
}

int ospprof_diff_functions(const ospprof_diff *d, ospprof_diff_func **out) {
    dview v;
    view_build(d, &v);
    int n = functions_of(d, &v, out);
    view_free(&v);
    return n;
}

void ospprof_diff_totals(const ospprof_diff *d, uint64_t *base, uint64_t *new_) {
    *base = d->sum[0];
    *new_ = d->sum[1];
}

/* Orders of the report: by change, largest first, then by name (names are unique). */
static int by_self(const void *a, const void *b) {
    const ospprof_diff_func *x = *(const ospprof_diff_func *const *)a,
                            *y = *(const ospprof_diff_func *const *)b;
    if (x->self_delta != y->self_delta) return x->self_delta > y->self_delta ? -1 : 1;
    return strcmp(x->name, y->name);
}
static int by_total(const void *a, const void *b) {
    const ospprof_diff_func *x = *(const ospprof_diff_func *const *)a,
                            *y = *(const ospprof_diff_func *const *)b;
    if (x->total_delta != y->total_delta) return x->total_delta > y->total_delta ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* `room`: cells left for a name after the 30 of the numbers (0: no terminal). */
static void report_part(ospprof_buf *b, const ospprof_diff_func *const *ord, size_t n, bool self,
                        bool up, size_t room) {
    ospprof_buf cell = {0};
    ospprof_buf_printf(b, "\n%s share, largest %s:\n", self ? "self" : "total",
                       up ? "increases" : "decreases");
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < 10; i++) {
        const ospprof_diff_func *x = ord[up ? i : n - 1 - i];
        double dl = self ? x->self_delta : x->total_delta;
        if (up ? dl < 0.005 : dl > -0.005) break; /* no change at 0.01-point resolution */
        const double *pc = self ? x->self_pct : x->total_pct;
        ospprof_buf_printf(b, "  %+7.2f  %6.2f%% → %6.2f%%  ", dl, pc[0], pc[1]);
        cell.n = 0;
        ospprof_term_text(&cell, x->name);
        ospprof_term_cut(b, cell.p ? cell.p : "", cell.n, room);
        ospprof_buf_putc(b, '\n');
        shown++;
    }
    ospprof_buf_free(&cell);
    if (!shown) ospprof_buf_puts(b, "  (none)\n");
}

static int report_of(const ospprof_diff *d, const dview *v, const char *base_name,
                     const char *new_name, const char *prefix, int columns, FILE *out) {
    size_t room = columns > 30 ? (size_t)columns - 30 : columns > 0 ? 1 : 0;
    ospprof_diff_func *f;
    size_t n = (size_t)functions_of(d, v, &f);
    const ospprof_diff_func **ord = ospprof_xcalloc(n ? n : 1, sizeof *ord);
    ospprof_buf b = {0};
    ospprof_buf_puts(&b, "diff: base ");
    ospprof_term_text(&b, base_name);
    ospprof_buf_printf(&b, " (%" PRIu64 ") → new ", d->sum[0]);
    ospprof_term_text(&b, new_name);
    ospprof_buf_printf(&b, " (%" PRIu64 "); shares of each side's total, in points\n", d->sum[1]);
    for (int part = 0; part < 2; part++) {
        for (size_t i = 0; i < n; i++) ord[i] = &f[i];
        if (n > 1) qsort(ord, n, sizeof *ord, part == 0 ? by_self : by_total);
        report_part(&b, ord, n, part == 0, true, room);
        report_part(&b, ord, n, part == 0, false, room);
    }
    ospprof_buf_puts(&b, "\ndiff: ");
    ospprof_term_text(&b, prefix);
    ospprof_buf_puts(&b, ".diff.svg · ");
    ospprof_term_text(&b, prefix);
    ospprof_buf_puts(&b, ".diff.folded\n");
    int rc = 0;
    if (fwrite(b.p, 1, b.n, out) != b.n || fflush(out) != 0) rc = -1;
    ospprof_buf_free(&b);
    free(ord);
    free(f);
    return rc;
}

int ospprof_diff_report(const ospprof_diff *d, const char *base_name, const char *new_name,
                        const char *prefix, int columns, FILE *out) {
    dview v;
    view_build(d, &v);
    int rc = report_of(d, &v, base_name, new_name, prefix, columns, out);
    view_free(&v);
    return rc;
}

/* The folded file, written on a second thread while the first draws the SVG. */
typedef struct folded_job {
    const ospprof_diff *d;
    const dview *v;
    ospprof_out *w;
} folded_job;

static void *folded_job_run(void *arg) {
    folded_job *j = arg;
    diff_folded(j->d, j->v, j->w);
    ospprof_out_flush(j->w);
    return NULL;
}

static int write_of(const ospprof_diff *d, const dview *v, const char *prefix, const char *title,
                    char *err, size_t errlen) {
    static const char *const ext[2] = {".diff.svg", ".diff.folded"};
    ospprof_out set[2];
    size_t plen = strlen(prefix);
    char *path = ospprof_xrealloc(NULL, plen + 16);
    for (size_t k = 0; k < 2; k++) {
        memcpy(path, prefix, plen);
        strcpy(path + plen, ext[k]);
        if (ospprof_out_open(&set[k], path, err, errlen) != 0) {
            if (k) ospprof_out_abort(&set[0]);
            free(path);
            return -1;
        }
    }
    free(path);
    /* the two files are independent: the folded one (every stack's text, by far the larger)
     * on a second thread, the SVG on this one */
    folded_job fj = {d, v, &set[1]};
    pthread_t th;
    bool threaded = pthread_create(&th, NULL, folded_job_run, &fj) == 0;
    diff_svg(d, v, title, &set[0]);
    ospprof_out_flush(&set[0]);
    if (threaded)
        pthread_join(th, NULL);
    else
        folded_job_run(&fj);
    for (size_t k = 0; k < 2; k++)
        if (set[k].failed) {
            ospprof_seterr(err, errlen, "cannot write %s: %s", set[k].path, set[k].reason);
            ospprof_out_abort(&set[0]);
            ospprof_out_abort(&set[1]);
            return -1;
        }
    return ospprof_out_commit_set(set, 2, err, errlen);
}

int ospprof_diff_write(const ospprof_diff *d, const char *prefix, const char *title, char *err,
                       size_t errlen) {
    dview v;
    view_build(d, &v);
    int rc = write_of(d, &v, prefix, title, err, errlen);
    view_free(&v);
    return rc;
}

/* ---- the whole command -------------------------------------------------------------------- */

/* Read a whole file (at most the raw-profile limit). NULL with "<path>: <reason>" in err. */
static char *slurp(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        ospprof_seterr(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    size_t max = ospprof_raw_max_bytes(), n = 0, cap = 1 << 16;
    struct stat st; /* a regular file: read in one piece (the loop still sees it grow) */
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size < max)
        cap = (size_t)st.st_size + 1;
    if (max < SIZE_MAX && cap > max + 1) cap = max + 1;
    char *buf = ospprof_xrealloc(NULL, cap);
    for (;;) {
        /* the buffer grows to one byte past the limit at most: that byte, read, refuses the
         * file (after the loop), however the limit compares with the buffer's size */
        if (n == cap && n <= max) {
            size_t next = cap > max / 2 ? max + 1 : cap * 2;
            if (next <= cap) next = SIZE_MAX; /* max == SIZE_MAX */
            cap = next;
            buf = ospprof_xrealloc(buf, cap);
        }
        if (n == cap) break;
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (n > max) {
        ospprof_seterr(err, errlen, "%s: larger than the limit of %zu bytes", path, max);
        free(buf);
        fclose(f);
        return NULL;
    }
    if (ferror(f)) {
        ospprof_seterr(err, errlen, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* "osprey: warning: <path>: no<what> samples<why>\n" appended to `warnings`: an input that
 * adds nothing to its side. */
static void no_samples_warning(ospprof_buf *warnings, const char *path, const char *what,
                               const char *why) {
    ospprof_buf_puts(warnings, "osprey: warning: ");
    ospprof_term_text(warnings, path);
    ospprof_buf_printf(warnings, ": no%s samples%s\n", what, why);
}

/* ospprof_diff_add_file, with the symbolizer's warnings about a raw profile appended to
 * `warnings` as "osprey: warning: <path>: <warning>\n" lines (filtered like the report). */
static int add_file(ospprof_diff *d, int side, const char *path, const char *symbolizer,
                    ospprof_buf *warnings, char *err, size_t errlen) {
    size_t len;
    char *text = slurp(path, &len, err, errlen);
    if (!text) return -1;
    uint64_t before = d->sum[side];
    /* past a byte order mark (skipped in collapsed stacks, ospprof_diff_add_folded): a raw
     * profile behind one is still a raw profile, refused as --postprocess refuses it */
    size_t i = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    int rc;
    if (i < len && text[i] == '{') { /* a raw profile (§(e)): symbolize it first */
        ospprof_raw *raw = ospprof_raw_parse(path, text, len, err, errlen);
        free(text);
        if (!raw) return -1;
        /* names only: the diff's stacks are frame names, so no line table is read */
        ospprof_profile *p = ospprof_profile_build_names(raw, symbolizer);
        ospprof_raw_free(raw);
        if (!p) return -1;
        /* a moved executable, a mismatched build-id…: said as --postprocess says it, with the
         * input it is about */
        for (size_t w = 0; w < p->nwarnings; w++) {
            ospprof_buf_puts(warnings, "osprey: warning: ");
            ospprof_term_text(warnings, path);
            ospprof_buf_puts(warnings, ": ");
            ospprof_term_text(warnings, p->warnings[w]);
            ospprof_buf_putc(warnings, '\n');
        }
        rc = ospprof_diff_add_profile(d, side, p);
        /* a profile whose samples are all waiting ones counts nothing on-CPU */
        if (rc == 0 && d->sum[side] == before && p->nsamples)
            no_samples_warning(warnings, path, " on-CPU", " (only waiting ones)");
        else if (rc == 0 && d->sum[side] == before)
            no_samples_warning(warnings, path, "", "");
        ospprof_profile_free(p);
        return rc;
    }
    rc = ospprof_diff_add_folded(d, side, path, text, len, err, errlen);
    free(text);
    /* empty, a byte order mark alone, blank lines, only counts of 0: compared as a side
     * with nothing in it (every share 0%), said in one line rather than silently */
    if (rc == 0 && d->sum[side] == before) no_samples_warning(warnings, path, "", "");
    return rc;
}

/* Print the warning lines add_file collected to stderr and free them. */
static void print_warnings(ospprof_buf *warnings) {
    if (warnings->n) {
        fwrite(warnings->p, 1, warnings->n, stderr);
        fflush(stderr);
    }
    ospprof_buf_free(warnings);
}

int ospprof_diff_add_file(ospprof_diff *d, int side, const char *path, const char *symbolizer,
                          char *err, size_t errlen) {
    ospprof_buf warnings = {0};
    int rc = add_file(d, side, path, symbolizer, &warnings, err, errlen);
    print_warnings(&warnings);
    return rc;
}

/* Append `from` to `into`: its names interned into `into` in `from`'s id order (so the ids
 * come out as if `from`'s file had been added to `into` directly), its stacks remapped. */
static void diff_merge(ospprof_diff *into, const ospprof_diff *from) {
    uint32_t *map = ospprof_xcalloc(from->names.n ? from->names.n : 1, sizeof *map);
    for (size_t i = 0; i < from->names.n; i++)
        map[i] = ospprof_intern(&into->names, from->names.str[i], from->names.len[i]);
    for (size_t i = 0; i < from->np; i++) {
        const dpath *p = &from->paths[i];
        uint32_t *ids = ids_reserve(into, p->len);
        for (uint32_t k = 0; k < p->len; k++) ids[k] = map[from->ids[p->off + k]];
        add_path(into, p->side, p->len, p->count);
    }
    free(map);
}

/* One input of ospprof_diff_run, read (and for a raw profile symbolized) on its own. */
typedef struct diff_job {
    const char *path;
    int side, rc;
    ospprof_diff *d;
    ospprof_buf warnings; /* printed by ospprof_diff_run, base first */
    char err[OSPPROF_ERR_MAX];
} diff_job;

static void *diff_job_run(void *arg) {
    diff_job *j = arg;
    j->d = ospprof_diff_new();
    j->err[0] = 0;
    j->rc = add_file(j->d, j->side, j->path, NULL, &j->warnings, j->err, sizeof j->err);
    return NULL;
}

int ospprof_diff_run(const char *base, const char *new_, const char *prefix, FILE *report,
                     int columns, char *err, size_t errlen) {
    /* The two inputs are independent until they are merged: the base is read on a second
     * thread while this one reads the new (both symbolized at once when they are raw
     * profiles, each with its own symbolizer). Then the new is appended to the base, which
     * gives the same diff as adding the two files in turn. */
    diff_job job[2] = {{.path = base, .side = 0}, {.path = new_, .side = 1}};
    pthread_t th;
    bool threaded = pthread_create(&th, NULL, diff_job_run, &job[0]) == 0;
    if (!threaded) diff_job_run(&job[0]);
    diff_job_run(&job[1]);
    if (threaded) pthread_join(th, NULL);
    for (int k = 0; k < 2; k++) print_warnings(&job[k].warnings);
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++)
        if (job[k].rc != 0) {
            ospprof_seterr(err, errlen, "%s", job[k].err);
            rc = -1;
        }
    ospprof_diff *d = job[0].d;
    if (rc == 0) diff_merge(d, job[1].d);
    ospprof_diff_free(job[1].d);
    dview v = {0};
    if (rc == 0) view_build(d, &v);
    if (rc == 0) {
        ospprof_buf title = {0};
        const char *bs = strrchr(base, '/'), *ns = strrchr(new_, '/');
        ospprof_buf_printf(&title, "%s vs %s · red: more than base, blue: less", ns ? ns + 1 : new_,
                           bs ? bs + 1 : base);
        rc = write_of(d, &v, prefix, title.p, err, errlen);
        ospprof_buf_free(&title);
    }
    if (rc == 0 && report && report_of(d, &v, base, new_, prefix, columns, report) != 0) {
        ospprof_seterr(err, errlen, "cannot write the report");
        rc = -1;
    }
    view_free(&v);
    ospprof_diff_free(d);
    return rc;
}
