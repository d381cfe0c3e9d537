/*
 * pprof.c — the `--pprof` export (docs/spec/profiler.md §(l.6)): the profile model as pprof's
 * `profile.proto`, gzip-compressed, written by a small protobuf encoder of our own (varints
 * and length-delimited fields are all the format needs) and zlib.
 *
 * Shape: sample types `samples/count` and `cpu/nanoseconds` (the default), one pprof sample
 * per (fiber row, stack) with its on-CPU count and weight and a `fiber` label; one location
 * per distinct recorded address (a leaf address and a return address are distinct, as they
 * resolve differently), whose lines are the address's inline frames innermost first (the
 * last line is the function the others were inlined into); one function per model function;
 * one mapping per image; string table with "" first.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- protobuf encoding -------------------------------------------------------------------- */

static void pb_varint(ospprof_buf *b, uint64_t v) {
    ospprof_buf_reserve(b, 10);
    while (v >= 0x80) {
        b->p[b->n++] = (char)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (char)v;
}

/* Field `field` with wire type 0 (varint); zero values are left out (proto3 defaults). */
static void pb_uint(ospprof_buf *b, uint32_t field, uint64_t v) {
    if (!v) return;
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}

/* Field `field` with wire type 2 (length-delimited), n bytes of s. */
static void pb_bytes(ospprof_buf *b, uint32_t field, const void *s, size_t n) {
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    ospprof_buf_put(b, s, n);
}

/* An embedded message built in `m` (emptied afterwards, kept allocated). */
static void pb_message(ospprof_buf *b, uint32_t field, ospprof_buf *m) {
    pb_bytes(b, field, m->p ? m->p : "", m->n);
    m->n = 0;
}

/* ---- string table ------------------------------------------------------------------------- */

typedef struct pstrings {
    ospprof_strtab t; /* id = pprof string index; "" is id 0 */
} pstrings;

static uint64_t pstr(pstrings *s, const char *text) {
    return ospprof_intern(&s->t, text, strlen(text));
}

/* ---- the profile -------------------------------------------------------------------------- */

/* Profile field numbers (profile.proto). */
enum {
    F_SAMPLE_TYPE = 1,
    F_SAMPLE = 2,
    F_MAPPING = 3,
    F_LOCATION = 4,
    F_FUNCTION = 5,
    F_STRING_TABLE = 6,
    F_TIME_NANOS = 9,
    F_DURATION_NANOS = 10,
    F_PERIOD_TYPE = 11,
    F_PERIOD = 12,
    F_DEFAULT_SAMPLE_TYPE = 14,
};

static void value_type(ospprof_buf *b, uint32_t field, pstrings *s, const char *type,
                       const char *unit, ospprof_buf *m) {
    pb_uint(m, 1, pstr(s, type));
    pb_uint(m, 2, pstr(s, unit));
    pb_message(b, field, m);
}

/* Encode the uncompressed profile.proto of p into out. */
static void pprof_encode(const ospprof_profile *p, ospprof_buf *out) {
    pstrings s = {0};
    pstr(&s, "");
    ospprof_buf m = {0}, sub = {0}, packed = {0};

    value_type(out, F_SAMPLE_TYPE, &s, "samples", "count", &m);
    value_type(out, F_SAMPLE_TYPE, &s, "cpu", "nanoseconds", &m);

    /* locations: one per (address, leaf-or-return, image) group of positions. Location id
     * = index + 1; loc_of[position] for the first position of each group. */
    uint32_t *loc_of = ospprof_xcalloc(p->nstack_frames, sizeof *loc_of);
    uint32_t *loc_first = NULL, *loc_len = NULL; /* the positions that define each location */
    size_t nloc = 0, caploc = 0;
    ospprof_map locs = {0};
    uint32_t *stamp = ospprof_xcalloc(p->nstacks, sizeof *stamp);
    for (size_t i = 0; i < p->nsamples; i++) {
        const ospprof_sample *smp = &p->samples[i];
        if (smp->state != 0 || stamp[smp->stack]) continue;
        stamp[smp->stack] = 1;
        const ospprof_stackinfo *si = &p->stacks[smp->stack];
        for (size_t j = 0; j < si->n;) {
            size_t q = si->off + j, e = j + 1;
            while (e < si->n && p->stack_groups[si->off + e] == p->stack_groups[q]) e++;
            /* key: address and whether it is the leaf or another address looked up as it is
             * (return addresses resolve at addr - 1) and the truncation marker (address 0, no
             * image) */
            uint32_t g = p->stack_groups[q];
            uint64_t kind = g == 0 || (g & OSPPROF_GROUP_EXACT) ? 1 : 2;
            if (p->stack_images[q] < 0 && p->stack_addrs[q] == 0) kind = 3;
            bool ins;
            uint32_t *slot = ospprof_map_put(&locs, p->stack_addrs[q], kind, (uint32_t)nloc, &ins);
            if (ins) {
                if (nloc == caploc) {
                    caploc = caploc ? caploc * 2 : 256;
                    loc_first = ospprof_xrealloc(loc_first, caploc * sizeof *loc_first);
                    loc_len = ospprof_xrealloc(loc_len, caploc * sizeof *loc_len);
                }
                loc_first[nloc] = (uint32_t)q;
                loc_len[nloc++] = (uint32_t)(e - j);
            }
            loc_of[q] = *slot + 1;
            j = e;
        }
    }
    ospprof_map_free(&locs);

    /* samples: (row, stack) aggregated */
    ospprof_map agg = {0};
    size_t nagg = 0, capagg = 0;
    struct aggs {
        uint32_t row, stack;
        uint64_t n, w;
    } *ag = NULL;
    for (size_t i = 0; i < p->nsamples; i++) {
        const ospprof_sample *smp = &p->samples[i];
        if (smp->state != 0) continue;
        bool ins;
        uint32_t *slot = ospprof_map_put(&agg, smp->row, smp->stack, (uint32_t)nagg, &ins);
        if (ins) {
            if (nagg == capagg) {
                capagg = capagg ? capagg * 2 : 256;
                ag = ospprof_xrealloc(ag, capagg * sizeof *ag);
            }
            ag[nagg++] = (struct aggs){smp->row, smp->stack, 0, 0};
        }
        ag[*slot].n++;
        ag[*slot].w += smp->weight_ns;
    }
    ospprof_map_free(&agg);
    uint64_t fiber_key = pstr(&s, "fiber");
    for (size_t i = 0; i < nagg; i++) {
        const ospprof_stackinfo *si = &p->stacks[ag[i].stack];
        for (size_t j = 0; j < si->n; j++)
            if (loc_of[si->off + j]) pb_varint(&packed, loc_of[si->off + j]);
        pb_message(&m, 1, &packed);
        pb_varint(&packed, ag[i].n);
        pb_varint(&packed, ag[i].w);
        pb_message(&m, 2, &packed);
        pb_uint(&sub, 1, fiber_key);
        pb_uint(&sub, 2, pstr(&s, p->rows[ag[i].row].label));
        pb_message(&m, 3, &sub);
        pb_message(out, F_SAMPLE, &m);
    }
    free(ag);
    free(stamp);

    /* mappings: image i is mapping i + 1 */
    for (size_t i = 0; i < p->nimages; i++) {
        const ospprof_pimage *im = &p->images[i];
        pb_uint(&m, 1, i + 1);
        pb_uint(&m, 2, im->start);
        pb_uint(&m, 3, im->limit ? im->limit : im->start + 1);
        pb_uint(&m, 5, pstr(&s, im->path));
        if (im->build_id) pb_uint(&m, 6, pstr(&s, im->build_id));
        /* symbolized already: pprof must not look for the binaries */
        for (uint32_t f = 7; f <= 10; f++) pb_uint(&m, f, 1);
        pb_message(out, F_MAPPING, &m);
    }

    /* locations */
    for (size_t l = 0; l < nloc; l++) {
        size_t q = loc_first[l];
        pb_uint(&m, 1, l + 1);
        if (p->stack_images[q] >= 0) pb_uint(&m, 2, (uint64_t)p->stack_images[q] + 1);
        pb_uint(&m, 3, p->stack_addrs[q]);
        /* the group: the address's frames, innermost first */
        for (size_t k = q; k < q + loc_len[l]; k++) {
            pb_uint(&sub, 1, (uint64_t)p->frames[p->stack_frames[k]].func + 1);
            pb_uint(&sub, 2, p->stack_lines[k]);
            pb_message(&m, 4, &sub);
        }
        pb_message(out, F_LOCATION, &m);
    }
    free(loc_first);
    free(loc_len);
    free(loc_of);

    /* functions: function i is id i + 1 */
    for (size_t i = 0; i < p->nfuncs; i++) {
        const ospprof_func *f = &p->funcs[i];
        uint64_t name = pstr(&s, p->strs.str[f->name]);
        pb_uint(&m, 1, i + 1);
        pb_uint(&m, 2, name);
        pb_uint(&m, 3, name);
        pb_uint(&m, 4, pstr(&s, p->strs.str[f->file]));
        pb_uint(&m, 5, f->line);
        pb_message(out, F_FUNCTION, &m);
    }

    uint64_t period = p->rate_hz ? 1000000000u / p->rate_hz : 0;
    pb_uint(out, F_DURATION_NANOS, (uint64_t)(p->wall_s * 1e9));
    value_type(out, F_PERIOD_TYPE, &s, "cpu", "nanoseconds", &m);
    pb_uint(out, F_PERIOD, period);
    pb_uint(out, F_DEFAULT_SAMPLE_TYPE, pstr(&s, "cpu"));
    /* the string table last: every index above is known now */
    for (size_t i = 0; i < s.t.n; i++) pb_bytes(out, F_STRING_TABLE, s.t.str[i], s.t.len[i]);
    ospprof_strtab_free(&s.t);
    ospprof_buf_free(&m);
    ospprof_buf_free(&sub);
    ospprof_buf_free(&packed);
}

/* ---- gzip and the file -------------------------------------------------------------------- */

void ospprof_pprof_body(const ospprof_profile *p, ospprof_out *w) {
    ospprof_buf raw = {0};
    pprof_encode(p, &raw);
    z_stream z;
    memset(&z, 0, sizeof z);
    /* windowBits 15 + 16: a gzip wrapper, as pprof reads */
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
        w->failed = true;
        snprintf(w->reason, sizeof w->reason, "zlib cannot start");
        ospprof_buf_free(&raw);
        return;
    }
    z.next_in = (unsigned char *)(raw.p ? raw.p : "");
    z.avail_in = (uInt)raw.n; /* profiles stay far below 4 GiB */
    int rc;
    do {
        ospprof_buf_reserve(&w->b, 1 << 16);
        z.next_out = (unsigned char *)w->b.p + w->b.n;
        z.avail_out = 1 << 16;
        rc = deflate(&z, Z_FINISH);
        w->b.n += (1 << 16) - z.avail_out;
        ospprof_out_maybe_flush(w);
    } while (rc == Z_OK);
    if (rc != Z_STREAM_END && !w->failed) {
        w->failed = true;
        snprintf(w->reason, sizeof w->reason, "zlib error %d", rc);
    }
    deflateEnd(&z);
    ospprof_buf_free(&raw);
}

int ospprof_write_pprof(const ospprof_profile *p, const char *path, char *err, size_t errlen) {
    ospprof_out o;
    if (ospprof_out_open(&o, path, err, errlen) != 0) return -1;
    ospprof_pprof_body(p, &o);
    return ospprof_out_commit(&o, err, errlen);
}
