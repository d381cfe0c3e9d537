/*
 * svg_profile.c — `<stem>.svg` (docs/spec/profiler.md §(l.6)): the profile's on-CPU samples of
 * every fiber as one tree ("all" → fiber frame → stack frames root to leaf, merged by
 * function), coloured by the editor's rule (§(j) "Frame colours"), drawn by svg.c.
 */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- colours (the editor's rule, editor/vscode/src/model/colors.ts) --------------------- */

/* The UTF-16 code units of the code point at s (as the editor's JavaScript sees the JSON
 * string: invalid bytes are U+FFFD, as ospprof_json_str writes them). Returns the bytes used. */
static size_t utf16_units(const unsigned char *s, size_t n, uint16_t u[2], int *nu) {
    uint32_t cp;
    size_t len = ospprof_utf8_decode(s, n, &cp);
    if (len == 0) {
        cp = 0xFFFD;
        len = 1;
    }
    if (cp >= 0x10000) {
        u[0] = (uint16_t)(0xD800 + ((cp - 0x10000) >> 10));
        u[1] = (uint16_t)(0xDC00 + ((cp - 0x10000) & 0x3FF));
        *nu = 2;
    } else {
        u[0] = (uint16_t)cp;
        *nu = 1;
    }
    return len;
}

/* Code-unit order of two UTF-8 strings read as JavaScript strings: -1, 0 or 1. */
int ospprof_utf16_cmp(const char *a, const char *b) {
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t nx = strlen(a), ny = strlen(b), i = 0, j = 0;
    uint16_t ux[2], uy[2];
    int kx = 0, ky = 0, px = 0, py = 0;
    for (;;) {
        if (px == kx) {
            if (i >= nx) {
                kx = 0;
            } else {
                i += utf16_units(x + i, nx - i, ux, &kx);
            }
            px = 0;
        }
        if (py == ky) {
            if (j >= ny) {
                ky = 0;
            } else {
                j += utf16_units(y + j, ny - j, uy, &ky);
            }
            py = 0;
        }
        if (kx == 0 || ky == 0) return kx == ky ? 0 : kx == 0 ? -1 : 1;
        if (ux[px] != uy[py]) return ux[px] < uy[py] ? -1 : 1;
        px++, py++;
    }
}

typedef struct color_key {
    const char *file, *name;
    uint32_t idx;
} color_key;

static int color_key_cmp(const void *a, const void *b) {
    const color_key *x = a, *y = b;
    int c = ospprof_utf16_cmp(x->file, y->file);
    if (!c) c = ospprof_utf16_cmp(x->name, y->name);
    if (c) return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* CSS hsl(h, s%, l%) as "#rrggbb" (CSS Color 4, each channel rounded), like hslToHex. */
static void hsl_hex(double h, double s, double l, char out[8]) {
    static const char hex[] = "0123456789abcdef";
    double sat = s / 100, lig = l / 100;
    const double ks[3] = {0, 8, 4};
    out[0] = '#';
    for (int c = 0; c < 3; c++) {
        double k = fmod(ks[c] + h / 30, 12);
        double a = sat * (lig < 1 - lig ? lig : 1 - lig);
        double m = k - 3 < 9 - k ? k - 3 : 9 - k;
        if (m > 1) m = 1;
        if (m < -1) m = -1;
        long v = lround((lig - a * m) * 255);
        if (v < 0) v = 0;
        if (v > 255) v = 255;
        out[1 + 2 * c] = hex[v >> 4];
        out[2 + 2 * c] = hex[v & 15];
    }
    out[7] = 0;
}

static double tri(double v) {
    return 2 * fabs(v / 2 - floor(v / 2 + 0.5));
}

void ospprof_frame_colors(const ospprof_profile *p, char (*out)[8]) {
    size_t n = p->nframes;
    color_key *keys = ospprof_xcalloc(n, sizeof *keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = (color_key){p->strs.str[p->frames[i].file], p->strs.str[p->frames[i].name],
                              (uint32_t)i};
    if (n > 1) qsort(keys, n, sizeof *keys, color_key_cmp);
    size_t run = 0;
    for (size_t r = 0; r < n; r++) {
        if (r > 0 && (strcmp(keys[r - 1].file, keys[r].file) != 0 ||
                      strcmp(keys[r - 1].name, keys[r].name) != 0))
            run = r;
        double t = floor(255.0 * (double)run / (double)n) / 255.0;
        double x = tri(30 * t);
        if (ospprof_is_user_file(keys[r].file))
            hsl_hex(324 * t, 25 + 20 * x, 65 - 15 * x, out[keys[r].idx]);
        else
            hsl_hex(215, 12, 58 - 12 * x, out[keys[r].idx]);
    }
    free(keys);
}

/* ---- the tree ------------------------------------------------------------------------------ */

typedef struct flame_ctx {
    const ospprof_profile *p;
    ospprof_flame_node *nodes;
    uint32_t *what; /* per node: frame id, or UINT32_MAX - row for a fiber frame */
    char (*colors)[8];
    size_t n, cap;
} flame_ctx;

enum { ROOT_NODE = 0 };
#define FIBER_TAG 0x80000000u

static const char *node_name(void *vc, size_t i) {
    flame_ctx *c = vc;
    if (i == ROOT_NODE) return "all";
    uint32_t w = c->what[i];
    if (w & FIBER_TAG) return c->p->rows[w & ~FIBER_TAG].label;
    return c->p->strs.str[c->p->frames[w].name];
}

static void node_detail(void *vc, size_t i, ospprof_buf *b) {
    flame_ctx *c = vc;
    if (i == ROOT_NODE) {
        ospprof_buf_puts(b, "every fiber");
        return;
    }
    uint32_t w = c->what[i];
    if (w & FIBER_TAG) {
        ospprof_buf_puts(b, "fiber");
        return;
    }
    const ospprof_frame *f = &c->p->frames[w];
    const char *file = c->p->strs.str[f->file];
    if (!file[0]) return;
    ospprof_buf_puts(b, file);
    if (f->line) ospprof_buf_printf(b, ":%" PRIu32, f->line);
}

static void node_color(void *vc, size_t i, char out[8]) {
    flame_ctx *c = vc;
    uint32_t w = i == ROOT_NODE ? FIBER_TAG : c->what[i];
    memcpy(out, (w & FIBER_TAG) ? "#bcbcbc" : c->colors[w], 8);
}

static uint32_t add_node(flame_ctx *c, uint32_t parent, uint32_t what) {
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1024;
        c->nodes = ospprof_xrealloc(c->nodes, c->cap * sizeof *c->nodes);
        c->what = ospprof_xrealloc(c->what, c->cap * sizeof *c->what);
    }
    c->nodes[c->n] = (ospprof_flame_node){parent, 0, 0, 0};
    c->what[c->n] = what;
    return (uint32_t)c->n++;
}

/* One (row, stack) with on-CPU samples; its root-first sequence is the fiber frame, then the
 * stack's frames from the root. */
typedef struct path_acc {
    const uint32_t *frames; /* the stack's frame ids, leaf first (borrowed) */
    uint32_t nframes, row;
    uint64_t w, n;
} path_acc;

static uint32_t path_at(const path_acc *a, size_t d) {
    return d == 0 ? (FIBER_TAG | a->row) : a->frames[a->nframes - d];
}

static int path_cmp(const void *x, const void *y) {
    const path_acc *a = x, *b = y;
    size_t la = (size_t)a->nframes + 1, lb = (size_t)b->nframes + 1;
    for (size_t d = 0; d < la && d < lb; d++) {
        uint32_t u = path_at(a, d), v = path_at(b, d);
        if (u != v) return u < v ? -1 : 1;
    }
    return la < lb ? -1 : la > lb;
}

/* Close the open nodes at depths >= keep (deepest first); a closed node lighter than `thr`
 * is dropped with its subtree, which DFS order placed right after it. */
static void close_to(flame_ctx *c, uint32_t *open, size_t *nopen, size_t keep, double thr) {
    while (*nopen > keep) {
        uint32_t v = open[--*nopen];
        if ((double)c->nodes[v].weight < thr) c->n = v;
    }
}

void ospprof_svg_body(const ospprof_profile *p, ospprof_out *w) {
    flame_ctx c = {.p = p};
    c.colors = ospprof_xcalloc(p->nframes ? p->nframes : 1, sizeof *c.colors);
    ospprof_frame_colors(p, c.colors);
    add_node(&c, UINT32_MAX, FIBER_TAG);
    /* on-CPU weight per (row, stack) */
    ospprof_map rs = {0};
    path_acc *accs = NULL;
    size_t nacc = 0, capacc = 0, maxlen = 1;
    for (size_t i = 0; i < p->nsamples; i++) {
        const ospprof_sample *s = &p->samples[i];
        if (s->state != 0) continue;
        bool ins;
        uint32_t *slot = ospprof_map_put(&rs, s->row, s->stack, (uint32_t)nacc, &ins);
        if (ins) {
            if (nacc == capacc) {
                capacc = capacc ? capacc * 2 : 256;
                accs = ospprof_xrealloc(accs, capacc * sizeof *accs);
            }
            const ospprof_stackinfo *si = &p->stacks[s->stack];
            accs[nacc++] = (path_acc){&p->stack_frames[si->off], (uint32_t)si->n, s->row, 0, 0};
            if (si->n + 1 > maxlen) maxlen = si->n + 1;
        }
        accs[*slot].w += s->weight_ns;
        accs[*slot].n++;
    }
    ospprof_map_free(&rs);
    /* Merge the paths in sorted order (so every prefix is one contiguous run) into a tree in
     * depth-first order, dropping each node lighter than 0.1 % as soon as it closes: memory
     * stays near the drawn tree, not every distinct prefix. */
    if (nacc > 1) qsort(accs, nacc, sizeof *accs, path_cmp);
    const double min_fraction = 0.001, thr = min_fraction * (double)p->on_w;
    uint32_t *open = ospprof_xcalloc(maxlen, sizeof *open);
    size_t nopen = 0;
    for (size_t a = 0; a < nacc; a++) {
        const path_acc *e = &accs[a];
        size_t len = (size_t)e->nframes + 1, common = 0;
        if (a > 0) {
            const path_acc *prev = &accs[a - 1];
            size_t lp = (size_t)prev->nframes + 1;
            while (common < nopen && common < len && common < lp &&
                   path_at(prev, common) == path_at(e, common))
                common++;
        }
        close_to(&c, open, &nopen, common, thr);
        for (size_t d = nopen; d < len; d++) {
            uint32_t parent = d == 0 ? ROOT_NODE : open[d - 1];
            open[nopen++] = add_node(&c, parent, path_at(e, d));
        }
        c.nodes[ROOT_NODE].weight += e->w;
        c.nodes[ROOT_NODE].samples += e->n;
        for (size_t d = 0; d < len; d++) {
            c.nodes[open[d]].weight += e->w;
            c.nodes[open[d]].samples += e->n;
        }
        c.nodes[open[len - 1]].self += e->w;
    }
    close_to(&c, open, &nopen, 0, thr);
    free(open);
    free(accs);
    ospprof_buf title = {0};
    ospprof_buf_puts(&title, p->pname);
    ospprof_buf_printf(&title, " · %.2fs CPU · %" PRIu64 " samples", (double)p->on_w / 1e9,
                       p->on_n);
    ospprof_flame fg = {.nodes = c.nodes,
                        .nnodes = c.n,
                        .title = title.p,
                        .name = node_name,
                        .detail = node_detail,
                        .color = node_color,
                        .ctx = &c,
                        .min_fraction = min_fraction};
    ospprof_svg_flame(&fg, w);
    ospprof_buf_free(&title);
    free(c.nodes);
    free(c.what);
    free(c.colors);
}
