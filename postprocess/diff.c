/*
 * diff.c — `osprey --diff <base> <new>` (docs/spec/profiler.md §(l.8)): two profiles, each a
 * collapsed-stacks file (`frame;frame;… <count>` lines: ours or any other tool's) or a raw
 * profile (symbolized first, on-CPU samples as our `.folded` counts them), merged into one
 * tree of stacks with a base and a new count per node. Shares are normalised by each side's
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
#include <stdlib.h>
#include <string.h>

/* One node of the merged tree: node 0 is the root; a parent precedes its children. */
typedef struct dnode {
    uint32_t parent, name;      /* name: string id */
    uint64_t self[2], total[2]; /* [0] base, [1] new */
} dnode;

struct ospprof_diff {
    ospprof_strtab names;
    dnode *nodes;
    size_t n, cap;
    ospprof_map edges; /* (parent, name) → node */
    uint64_t sum[2];   /* each side's total count */
};

static uint32_t child(ospprof_diff *d, uint32_t parent, uint32_t name) {
    bool ins;
    uint32_t *slot = ospprof_map_put(&d->edges, parent, name, (uint32_t)d->n, &ins);
    if (ins) {
        if (d->n == d->cap) {
            d->cap = d->cap ? d->cap * 2 : 1024;
            d->nodes = ospprof_xrealloc(d->nodes, d->cap * sizeof *d->nodes);
        }
        d->nodes[d->n++] = (dnode){parent, name, {0, 0}, {0, 0}};
    }
    return *slot;
}

ospprof_diff *ospprof_diff_new(void) {
    ospprof_diff *d = ospprof_xcalloc(1, sizeof *d);
    d->nodes = ospprof_xcalloc(1024, sizeof *d->nodes);
    d->cap = 1024;
    d->nodes[0] = (dnode){UINT32_MAX, ospprof_intern(&d->names, "all", 3), {0, 0}, {0, 0}};
    d->n = 1;
    return d;
}

void ospprof_diff_free(ospprof_diff *d) {
    if (!d) return;
    ospprof_strtab_free(&d->names);
    ospprof_map_free(&d->edges);
    free(d->nodes);
    free(d);
}

/* The node path of the previous stack added, so a stack sharing its first frames (sorted
 * collapsed-stacks files share long prefixes) skips their lookups. frames point into text that
 * lives while the cache is used. */
typedef struct pathcache {
    const char **frames;
    size_t *lens;
    uint32_t *nodes;
    size_t n, cap;
} pathcache;

/* Add `count` to the stack frames[0..n) (root first) on `side`. */
static void add_stack(ospprof_diff *d, int side, const char *const *frames, const size_t *lens,
                      size_t n, uint64_t count, pathcache *pc) {
    size_t k = 0;
    while (k < pc->n && k < n && pc->lens[k] == lens[k] &&
           memcmp(pc->frames[k], frames[k], lens[k]) == 0)
        k++;
    if (n > pc->cap) {
        pc->cap = n * 2;
        pc->frames = ospprof_xrealloc(pc->frames, pc->cap * sizeof *pc->frames);
        pc->lens = ospprof_xrealloc(pc->lens, pc->cap * sizeof *pc->lens);
        pc->nodes = ospprof_xrealloc(pc->nodes, pc->cap * sizeof *pc->nodes);
    }
    uint32_t cur = k ? pc->nodes[k - 1] : 0;
    for (size_t i = k; i < n; i++) {
        cur = child(d, cur, ospprof_intern(&d->names, frames[i], lens[i]));
        pc->frames[i] = frames[i];
        pc->lens[i] = lens[i];
        pc->nodes[i] = cur;
    }
    pc->n = n;
    d->nodes[0].total[side] += count;
    for (size_t i = 0; i < n; i++) d->nodes[pc->nodes[i]].total[side] += count;
    d->nodes[cur].self[side] += count;
    d->sum[side] += count;
}

static void pathcache_free(pathcache *pc) {
    free(pc->frames);
    free(pc->lens);
    free(pc->nodes);
}

/* ---- the collapsed-stacks reader ---------------------------------------------------------- */

int ospprof_diff_add_folded(ospprof_diff *d, int side, const char *name, const char *text,
                            size_t len, char *err, size_t errlen) {
    const char **frames = NULL;
    size_t *lens = NULL, cap = 0;
    size_t lineno = 0;
    int rc = 0;
    pathcache pc = {0};
    for (size_t pos = 0; pos < len;) {
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
        /* split the stack on ';' */
        size_t nf = 0;
        for (size_t s = a; s <= se;) {
            const char *semi = memchr(line + s, ';', se - s);
            size_t fe = semi ? (size_t)(semi - line) : se;
            if (nf == cap) {
                cap = cap ? cap * 2 : 64;
                frames = ospprof_xrealloc(frames, cap * sizeof *frames);
                lens = ospprof_xrealloc(lens, cap * sizeof *lens);
            }
            frames[nf] = line + s;
            lens[nf++] = fe - s;
            s = fe + 1;
            if (!semi) break;
        }
        if (count) add_stack(d, side, frames, lens, nf, count, &pc);
    }
    pathcache_free(&pc);
    free(frames);
    free(lens);
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
        uint64_t count = keys[k].n;
        uint32_t cur = child(d, 0, rname[keys[k].row]);
        d->nodes[0].total[side] += count;
        d->nodes[cur].total[side] += count;
        for (size_t j = si->n; j-- > 0;) { /* root first */
            cur = child(d, cur, fname[p->stack_frames[si->off + j]]);
            d->nodes[cur].total[side] += count;
        }
        d->nodes[cur].self[side] += count;
        d->sum[side] += count;
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

/* Change of a node's total share, new minus base, in points. */
static double delta(const ospprof_diff *d, const dnode *nd) {
    return share(d, 1, nd->total[1]) - share(d, 0, nd->total[0]);
}

/* ---- the differential SVG ----------------------------------------------------------------- */

typedef struct svgctx {
    const ospprof_diff *d;
    const uint32_t *src; /* drawn node → tree node */
    double max_delta;
} svgctx;

static const char *svg_name(void *ctx, size_t node) {
    svgctx *c = ctx;
    return c->d->names.str[c->d->nodes[c->src[node]].name];
}

static void svg_detail(void *ctx, size_t node, ospprof_buf *out) {
    svgctx *c = ctx;
    const dnode *nd = &c->d->nodes[c->src[node]];
    ospprof_buf_printf(out, "base %.2f%% · new %.2f%% (%+.2f)", share(c->d, 0, nd->total[0]),
                       share(c->d, 1, nd->total[1]), delta(c->d, nd));
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
    ospprof_diff_color(delta(c->d, &c->d->nodes[c->src[node]]), c->max_delta, out);
}

static void diff_svg(const ospprof_diff *d, const char *title, ospprof_out *w) {
    /* the new profile's tree: nodes with new weight (their parents have it too) */
    uint32_t *map = ospprof_xcalloc(d->n, sizeof *map);
    uint32_t *src = ospprof_xcalloc(d->n, sizeof *src);
    ospprof_flame_node *fn = ospprof_xcalloc(d->n, sizeof *fn);
    size_t m = 0;
    double maxd = 0;
    for (size_t i = 0; i < d->n; i++) {
        const dnode *nd = &d->nodes[i];
        if (i && !nd->total[1]) continue;
        map[i] = (uint32_t)m;
        src[m] = (uint32_t)i;
        fn[m] = (ospprof_flame_node){i ? map[nd->parent] : UINT32_MAX, nd->total[1], nd->self[1],
                                     nd->total[1]};
        double dl = fabs(delta(d, nd));
        if (i && dl > maxd) maxd = dl;
        m++;
    }
    svgctx c = {d, src, maxd};
    ospprof_flame fg = {.nodes = fn,
                        .nnodes = m,
                        .title = title,
                        .name = svg_name,
                        .detail = svg_detail,
                        .color = svg_color,
                        .ctx = &c,
                        .min_fraction = 0.001};
    ospprof_svg_flame(&fg, w);
    free(map);
    free(src);
    free(fn);
}

/* ---- the three-column folded file --------------------------------------------------------- */

typedef struct dline {
    char *stack;
    size_t len;
    uint64_t base, new_;
} dline;

static int dline_cmp(const void *a, const void *b) {
    const dline *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->stack, y->stack, n);
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

static void diff_folded(const ospprof_diff *d, ospprof_out *w) {
    dline *lines = NULL;
    size_t nl = 0, cap = 0;
    uint32_t *path = ospprof_xcalloc(d->n, sizeof *path);
    for (size_t i = 1; i < d->n; i++) {
        const dnode *nd = &d->nodes[i];
        if (!nd->self[0] && !nd->self[1]) continue;
        size_t depth = 0;
        for (uint32_t v = (uint32_t)i; v != 0; v = d->nodes[v].parent) path[depth++] = v;
        ospprof_buf b = {0};
        for (size_t k = depth; k-- > 0;) {
            ospprof_buf_puts(&b, d->names.str[d->nodes[path[k]].name]);
            if (k) ospprof_buf_putc(&b, ';');
        }
        if (nl == cap) {
            cap = cap ? cap * 2 : 256;
            lines = ospprof_xrealloc(lines, cap * sizeof *lines);
        }
        lines[nl++] = (dline){b.p ? b.p : ospprof_xstrdup(""), b.n, nd->self[0], nd->self[1]};
    }
    free(path);
    if (nl > 1) qsort(lines, nl, sizeof *lines, dline_cmp);
    for (size_t i = 0; i < nl; i++) {
        ospprof_buf_put(&w->b, lines[i].stack, lines[i].len);
        ospprof_buf_printf(&w->b, " %" PRIu64 " %" PRIu64 "\n", lines[i].base, lines[i].new_);
        ospprof_out_maybe_flush(w);
        free(lines[i].stack);
    }
    free(lines);
}

/* ---- per-function changes ----------------------------------------------------------------- */

int ospprof_diff_functions(const ospprof_diff *d, ospprof_diff_func **out) {
    /* per name: self and total on each side; total counted once per stack */
    size_t nn = d->names.n;
    ospprof_diff_func *f = ospprof_xcalloc(nn, sizeof *f);
    uint32_t *stamp = ospprof_xcalloc(nn, sizeof *stamp);
    for (size_t i = 1; i < d->n; i++) {
        const dnode *nd = &d->nodes[i];
        if (!nd->self[0] && !nd->self[1]) continue;
        f[nd->name].self[0] += nd->self[0];
        f[nd->name].self[1] += nd->self[1];
        for (uint32_t v = (uint32_t)i; v != 0; v = d->nodes[v].parent) {
            uint32_t nm = d->nodes[v].name;
            if (stamp[nm] == i) continue;
            stamp[nm] = (uint32_t)i;
            f[nm].total[0] += nd->self[0];
            f[nm].total[1] += nd->self[1];
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

void ospprof_diff_totals(const ospprof_diff *d, uint64_t *base, uint64_t *new_) {
    *base = d->sum[0];
    *new_ = d->sum[1];
}

static const ospprof_diff_func *sort_base;
static int by_self(const void *a, const void *b) {
    const ospprof_diff_func *x = &sort_base[*(const uint32_t *)a],
                            *y = &sort_base[*(const uint32_t *)b];
    if (x->self_delta != y->self_delta) return x->self_delta > y->self_delta ? -1 : 1;
    return strcmp(x->name, y->name);
}
static int by_total(const void *a, const void *b) {
    const ospprof_diff_func *x = &sort_base[*(const uint32_t *)a],
                            *y = &sort_base[*(const uint32_t *)b];
    if (x->total_delta != y->total_delta) return x->total_delta > y->total_delta ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void report_part(ospprof_buf *b, const ospprof_diff_func *f, const uint32_t *ord, size_t n,
                        bool self, bool up) {
    ospprof_buf_printf(b, "\n%s share, largest %s:\n", self ? "self" : "total",
                       up ? "increases" : "decreases");
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < 10; i++) {
        const ospprof_diff_func *x = &f[ord[up ? i : n - 1 - i]];
        double dl = self ? x->self_delta : x->total_delta;
        if (up ? dl < 0.005 : dl > -0.005) break; /* no change at 0.01-point resolution */
        const double *pc = self ? x->self_pct : x->total_pct;
        ospprof_buf_printf(b, "  %+7.2f  %6.2f%% → %6.2f%%  ", dl, pc[0], pc[1]);
        ospprof_term_text(b, x->name);
        ospprof_buf_putc(b, '\n');
        shown++;
    }
    if (!shown) ospprof_buf_puts(b, "  (none)\n");
}

int ospprof_diff_report(const ospprof_diff *d, const char *base_name, const char *new_name,
                        const char *prefix, FILE *out) {
    ospprof_diff_func *f;
    size_t n = (size_t)ospprof_diff_functions(d, &f);
    uint32_t *ord = ospprof_xcalloc(n, sizeof *ord);
    ospprof_buf b = {0};
    ospprof_buf_puts(&b, "diff: base ");
    ospprof_term_text(&b, base_name);
    ospprof_buf_printf(&b, " (%" PRIu64 ") → new ", d->sum[0]);
    ospprof_term_text(&b, new_name);
    ospprof_buf_printf(&b, " (%" PRIu64 "); shares of each side's total, in points\n", d->sum[1]);
    sort_base = f;
    for (int part = 0; part < 2; part++) {
        for (size_t i = 0; i < n; i++) ord[i] = (uint32_t)i;
        if (n > 1) qsort(ord, n, sizeof *ord, part == 0 ? by_self : by_total);
        report_part(&b, f, ord, n, part == 0, true);
        report_part(&b, f, ord, n, part == 0, false);
    }
    sort_base = NULL;
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

int ospprof_diff_write(const ospprof_diff *d, const char *prefix, const char *title, char *err,
                       size_t errlen) {
    static const char *const ext[2] = {".diff.svg", ".diff.folded"};
    ospprof_out set[2];
    size_t plen = strlen(prefix), opened = 0;
    char *path = ospprof_xrealloc(NULL, plen + 16);
    int rc = 0;
    for (; opened < 2; opened++) {
        memcpy(path, prefix, plen);
        strcpy(path + plen, ext[opened]);
        if (ospprof_out_open(&set[opened], path, err, errlen) != 0) {
            rc = -1;
            break;
        }
        if (opened == 0)
            diff_svg(d, title, &set[0]);
        else
            diff_folded(d, &set[1]);
        ospprof_out_flush(&set[opened]);
        if (set[opened].failed) {
            ospprof_seterr(err, errlen, "cannot write %s: %s", path, set[opened].reason);
            opened++;
            rc = -1;
            break;
        }
    }
    free(path);
    if (rc != 0) {
        for (size_t i = 0; i < opened; i++) ospprof_out_abort(&set[i]);
        return -1;
    }
    return ospprof_out_commit_set(set, 2, err, errlen);
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
    char *buf = ospprof_xrealloc(NULL, cap);
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                ospprof_seterr(err, errlen, "%s: larger than the limit of %zu bytes", path, max);
                free(buf);
                fclose(f);
                return NULL;
            }
            cap *= 2;
            buf = ospprof_xrealloc(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
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

int ospprof_diff_add_file(ospprof_diff *d, int side, const char *path, const char *symbolizer,
                          char *err, size_t errlen) {
    size_t len;
    char *text = slurp(path, &len, err, errlen);
    if (!text) return -1;
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    int rc;
    if (i < len && text[i] == '{') { /* a raw profile (§(e)): symbolize it first */
        ospprof_raw *raw = ospprof_raw_parse(path, text, len, err, errlen);
        free(text);
        if (!raw) return -1;
        ospprof_profile *p = ospprof_profile_build(raw, NULL, NULL, symbolizer, err, errlen);
        ospprof_raw_free(raw);
        if (!p) return -1;
        rc = ospprof_diff_add_profile(d, side, p);
        ospprof_profile_free(p);
        return rc;
    }
    rc = ospprof_diff_add_folded(d, side, path, text, len, err, errlen);
    free(text);
    return rc;
}

int ospprof_diff_run(const char *base, const char *new_, const char *prefix, FILE *report,
                     char *err, size_t errlen) {
    ospprof_diff *d = ospprof_diff_new();
    int rc = ospprof_diff_add_file(d, 0, base, NULL, err, errlen);
    if (rc == 0) rc = ospprof_diff_add_file(d, 1, new_, NULL, err, errlen);
    if (rc == 0) {
        ospprof_buf title = {0};
        const char *bs = strrchr(base, '/'), *ns = strrchr(new_, '/');
        ospprof_buf_printf(&title, "%s vs %s · red: more than base, blue: less", ns ? ns + 1 : new_,
                           bs ? bs + 1 : base);
        rc = ospprof_diff_write(d, prefix, title.p, err, errlen);
        ospprof_buf_free(&title);
    }
    if (rc == 0 && report && ospprof_diff_report(d, base, new_, prefix, report) != 0) {
        ospprof_seterr(err, errlen, "cannot write the report");
        rc = -1;
    }
    ospprof_diff_free(d);
    return rc;
}
