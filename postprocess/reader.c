/*
 * reader.c — the raw profile reader and its validation (docs/spec/profiler.md §(e)).
 *
 * The document is walked by a small cursor: objects and arrays at the positions the
 * format defines are walked here, element by element, so a million samples never become
 * a million cJSON trees. Scalars are taken from the source text: integers are parsed
 * exactly (addresses as unsigned 64-bit, never through a double), strings with escapes
 * and every value of a compound type or an unknown key go through cJSON
 * (cJSON_ParseWithLengthOpts, which reports where it stopped), so cJSON stays the judge
 * of what is valid JSON while our code never depends on its doubles.
 *
 * Errors: a syntax error stops the walk at once and wins over everything; the first
 * semantic problem (wrong type, bad element) is remembered while the walk continues, so a
 * truncated file is always reported as truncated. A bad `version` wins over other
 * semantic problems (a different version may have a different layout).
 */
#include "internal.h"
#include "osp_raw_format.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct rd {
    const char *name;
    const char *b, *e; /* document */
    bool syn;          /* syntax error: msg holds it */
    char msg[OSPPROF_ERR_MAX];
    bool has_sem;
    char sem[OSPPROF_ERR_MAX];
    bool has_ver;
    char ver[OSPPROF_ERR_MAX];
} rd;

static void syntax(rd *r, const char *at) {
    if (r->syn) return;
    r->syn = true;
    snprintf(r->msg, sizeof r->msg, "%s: not valid JSON at byte %zu", r->name, (size_t)(at - r->b));
}

__attribute__((format(printf, 2, 3))) static void sem(rd *r, const char *fmt, ...) {
    if (r->has_sem) return;
    r->has_sem = true;
    int n = snprintf(r->sem, sizeof r->sem, "%s: ", r->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->sem + n, sizeof r->sem - (size_t)n, fmt, ap);
    va_end(ap);
}

static const char *ws(rd *r, const char *p) {
    while (p < r->e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* ---- scalar values ---------------------------------------------------------------- */

enum { V_INT, V_NUM, V_STR, V_OTHER };

typedef struct leaf {
    int kind;
    bool neg, ovf; /* V_INT: sign; magnitude beyond 64 bits */
    uint64_t mag;  /* V_INT: magnitude */
    char *str;     /* V_STR: decoded, NUL-terminated, owned */
    size_t slen;
    bool nul; /* a string with an escaped U+0000: rejected (kind V_OTHER), since every
                     string the reader keeps is a C string (labels, paths) */
} leaf;

/* The type word for a string key, naming the reason when the value was a string with \u0000. */
static const char *str_word(const leaf *v) {
    return v->nul ? "a string without \\u0000" : "a string";
}

/* True if the JSON string literal [p, end) (quotes included) has a \u0000 escape. */
static bool has_escaped_nul(const char *p, const char *end) {
    for (const char *q = p + 1; q + 1 < end; q++) {
        if (*q != '\\') continue;
        if (q[1] == 'u' && end - q >= 6 && q[2] == '0' && q[3] == '0' && q[4] == '0' && q[5] == '0')
            return true;
        q++; /* skip the escaped character, so `\\u0000` (a backslash, then text) is not a NUL */
    }
    return false;
}

/* The first raw control byte (U+0000–U+001F, unescaped) inside a string literal of the JSON
 * text [p, end), or NULL. */
static const char *raw_control_in_strings(const char *p, const char *end) {
    bool in = false;
    for (const char *q = p; q < end; q++) {
        unsigned char c = (unsigned char)*q;
        if (!in) {
            in = c == '"';
        } else if (c == '\\') {
            q++; /* the escaped character */
        } else if (c == '"') {
            in = false;
        } else if (c < 0x20) {
            return q;
        }
    }
    return NULL;
}

static void leaf_clear(leaf *v) {
    free(v->str);
    memset(v, 0, sizeof *v);
}

/* Parse one JSON value at *pp (leading whitespace allowed) into v; *pp is left after
 * it. Returns false on a syntax error (recorded). */
static bool leaf_parse(rd *r, const char **pp, leaf *v) {
    memset(v, 0, sizeof *v);
    const char *p = ws(r, *pp);
    if (p >= r->e) {
        syntax(r, p);
        return false;
    }
    char c = *p;
    if (c == '-' || (c >= '0' && c <= '9')) {
        if (*p == '-') {
            v->neg = true;
            p++;
        }
        if (p >= r->e || *p < '0' || *p > '9') {
            syntax(r, p);
            return false;
        }
        if (*p == '0') {
            p++;
        } else {
            while (p < r->e && *p >= '0' && *p <= '9') {
                unsigned d = (unsigned)(*p - '0');
                if (v->mag > (UINT64_MAX - d) / 10)
                    v->ovf = true;
                else
                    v->mag = v->mag * 10 + d;
                p++;
            }
        }
        v->kind = V_INT;
        if (p < r->e && *p == '.') {
            p++;
            if (p >= r->e || *p < '0' || *p > '9') {
                syntax(r, p);
                return false;
            }
            while (p < r->e && *p >= '0' && *p <= '9') p++;
            v->kind = V_NUM;
        }
        if (p < r->e && (*p == 'e' || *p == 'E')) {
            p++;
            if (p < r->e && (*p == '+' || *p == '-')) p++;
            if (p >= r->e || *p < '0' || *p > '9') {
                syntax(r, p);
                return false;
            }
            while (p < r->e && *p >= '0' && *p <= '9') p++;
            v->kind = V_NUM;
        }
        *pp = p;
        return true;
    }
    if (c == '"') {
        const char *q = p + 1;
        while (q < r->e && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
        if (q < r->e && *q == '"') {
            v->kind = V_STR;
            v->slen = (size_t)(q - p - 1);
            v->str = ospprof_xstrndup(p + 1, v->slen);
            *pp = q + 1;
            return true;
        }
    } else if (!(c == '[' || c == '{' || c == 't' || c == 'f' || c == 'n')) {
        syntax(r, p);
        return false;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(p, (size_t)(r->e - p), &end, 0);
    if (!j) {
        syntax(r, end && end >= p && end <= r->e ? end : p);
        return false;
    }
    /* JSON forbids raw control bytes (NUL included) inside strings; cJSON lets them through */
    const char *bad = raw_control_in_strings(p, end);
    if (bad) {
        cJSON_Delete(j);
        syntax(r, bad);
        return false;
    }
    if (cJSON_IsString(j) && has_escaped_nul(p, end)) {
        v->kind = V_OTHER;
        v->nul = true;
        v->str = ospprof_xstrndup("\\u0000", 6); /* a key spelled so names no known key */
        v->slen = 6;
    } else if (cJSON_IsString(j)) {
        v->kind = V_STR;
        const char *s = j->valuestring ? j->valuestring : "";
        v->slen = strlen(s);
        v->str = ospprof_xstrndup(s, v->slen);
    } else {
        v->kind = V_OTHER;
    }
    cJSON_Delete(j);
    *pp = end;
    return true;
}

static bool is_u64(const leaf *v) {
    return v->kind == V_INT && !v->ovf && (!v->neg || v->mag == 0);
}
static bool is_i64(const leaf *v) {
    if (v->kind != V_INT || v->ovf) return false;
    return v->neg ? v->mag <= (uint64_t)INT64_MAX + 1 : v->mag <= (uint64_t)INT64_MAX;
}
static int64_t as_i64(const leaf *v) {
    if (!v->neg) return (int64_t)v->mag;
    if (v->mag == (uint64_t)INT64_MAX + 1) return INT64_MIN;
    return -(int64_t)v->mag;
}

/* ---- compound walkers --------------------------------------------------------------- */

/* After '[' or '{' was consumed: returns 1 if an element/member follows (for objects:
 * the key is read into *key and ':' consumed), 0 at the closing bracket, -1 on error. */
static int next_item(rd *r, const char **pp, bool *first, char close, leaf *key) {
    const char *p = ws(r, *pp);
    if (p >= r->e) {
        syntax(r, p);
        return -1;
    }
    if (*p == close) {
        *pp = p + 1;
        return 0;
    }
    if (!*first) {
        if (*p != ',') {
            syntax(r, p);
            return -1;
        }
        p = ws(r, p + 1);
    }
    *first = false;
    if (p >= r->e) {
        syntax(r, p);
        return -1;
    }
    if (close == '}') {
        if (*p != '"') {
            syntax(r, p);
            return -1;
        }
        if (!leaf_parse(r, &p, key)) return -1;
        p = ws(r, p);
        if (p >= r->e || *p != ':') {
            leaf_clear(key);
            syntax(r, p);
            return -1;
        }
        p++;
    }
    *pp = p;
    return 1;
}

/* Consumes '[' or '{' if present. Returns true when it was there. */
static bool open_c(rd *r, const char **pp, char c) {
    const char *p = ws(r, *pp);
    if (p < r->e && *p == c) {
        *pp = p + 1;
        return true;
    }
    *pp = p;
    return false;
}

/* Skip one value of any kind. */
static bool skip_value(rd *r, const char **pp) {
    leaf v;
    if (!leaf_parse(r, pp, &v)) return false;
    leaf_clear(&v);
    return true;
}

static bool key_is(const leaf *k, const char *s) {
    return k->slen == strlen(s) && memcmp(k->str, s, k->slen) == 0;
}

/* ---- the parse state ------------------------------------------------------------------ */

typedef struct psample { /* a sample as written, before the index checks */
    uint64_t t;
    int64_t row, stack;
    uint64_t state;
} psample;

typedef struct parse {
    ospprof_raw *raw;
    psample *ps;
    size_t nps, cap_ps;
    uint64_t *w;
    size_t nw, cap_w;
    uint64_t *trunc;
    size_t ntrunc, cap_trunc;
    size_t naddrs, cap_addrs, cap_stacks;
    unsigned seen; /* bit per known key */
} parse;

enum {
    K_VERSION,
    K_PID,
    K_EXE,
    K_RATE,
    K_PLATFORM,
    K_START,
    K_END,
    K_IMAGES,
    K_THREADS,
    K_STACKS,
    K_SAMPLES,
    K_DROPPED,
    K_WEIGHTS,
    K_TRUNC,
    K_ENGINE,
    K_PROFILER_CPU,
    K_REASONS,
    K_COUNT
};
static const char *const key_names[K_COUNT] = {OSP_RAW_KEY_VERSION,
                                               OSP_RAW_KEY_PID,
                                               OSP_RAW_KEY_EXE,
                                               OSP_RAW_KEY_RATE_HZ,
                                               OSP_RAW_KEY_PLATFORM,
                                               OSP_RAW_KEY_START_UNIX_NS,
                                               OSP_RAW_KEY_END_UNIX_NS,
                                               OSP_RAW_KEY_IMAGES,
                                               OSP_RAW_KEY_THREADS,
                                               OSP_RAW_KEY_STACKS,
                                               OSP_RAW_KEY_SAMPLES,
                                               OSP_RAW_KEY_DROPPED,
                                               OSP_RAW_KEY_SAMPLE_WEIGHTS_NS,
                                               OSP_RAW_KEY_TRUNCATED_STACKS,
                                               OSP_RAW_KEY_ENGINE,
                                               OSP_RAW_KEY_PROFILER_CPU_NS,
                                               OSP_RAW_KEY_DROPPED_REASONS};
/* required keys: all but dropped and the additional ones */
static const unsigned required_mask = (1u << K_DROPPED) - 1;

#define GROW(ptr, n, cap)                                           \
    do {                                                            \
        if ((n) == (cap)) {                                         \
            (cap) = (cap) ? (cap) * 2 : 16;                         \
            (ptr) = ospprof_xrealloc((ptr), (cap) * sizeof *(ptr)); \
        }                                                           \
    } while (0)

static const char *type_word(int which) {
    switch (which) {
    case 0: return "a non-negative integer";
    case 1: return "an integer";
    case 2: return "a string";
    case 3: return "an array";
    default: return "an object";
    }
}

/* images[i] */
static bool parse_image(rd *r, const char **pp, parse *ps, size_t i) {
    ospprof_raw *raw = ps->raw;
    ospprof_image *im = &raw->images[i];
    if (!open_c(r, pp, '{')) {
        if (!skip_value(r, pp)) return false;
        sem(r, "image %zu must be an object", i);
        return true;
    }
    bool first = true, has_path = false, has_base = false;
    leaf k;
    int rc;
    while ((rc = next_item(r, pp, &first, '}', &k)) == 1) {
        uint64_t *slot = NULL;
        if (key_is(&k, OSP_RAW_IMAGE_BASE))
            slot = &im->base, has_base = true;
        else if (key_is(&k, OSP_RAW_IMAGE_SLIDE))
            slot = &im->slide;
        else if (key_is(&k, OSP_RAW_IMAGE_TEXT))
            slot = &im->text;
        else if (key_is(&k, OSP_RAW_IMAGE_TEXT_SIZE))
            slot = &im->text_size;
        if (slot) {
            leaf v;
            if (!leaf_parse(r, pp, &v)) {
                leaf_clear(&k);
                return false;
            }
            if (is_u64(&v))
                *slot = v.mag;
            else
                sem(r, "image %zu: key \"%s\" must be a non-negative integer", i, k.str);
            leaf_clear(&v);
        } else if (key_is(&k, OSP_RAW_IMAGE_PATH) || key_is(&k, OSP_RAW_IMAGE_ARCH) ||
                   key_is(&k, OSP_RAW_IMAGE_BUILD_ID)) {
            leaf v;
            if (!leaf_parse(r, pp, &v)) {
                leaf_clear(&k);
                return false;
            }
            if (v.kind != V_STR) {
                sem(r, "image %zu: key \"%s\" must be %s", i, k.str, str_word(&v));
                leaf_clear(&v);
            } else {
                char **dst = key_is(&k, OSP_RAW_IMAGE_PATH)   ? &im->path
                             : key_is(&k, OSP_RAW_IMAGE_ARCH) ? &im->arch
                                                              : &im->build_id;
                if (key_is(&k, OSP_RAW_IMAGE_PATH)) has_path = true;
                free(*dst);
                *dst = v.str;
                v.str = NULL;
            }
        } else if (key_is(&k, OSP_RAW_IMAGE_SYMBOLS) && im->has_symbols) {
            sem(r, "image %zu: duplicate key \"symbols\"", i);
            if (!skip_value(r, pp)) {
                leaf_clear(&k);
                return false;
            }
        } else if (key_is(&k, OSP_RAW_IMAGE_SYMBOLS)) {
            if (!open_c(r, pp, '[')) {
                if (!skip_value(r, pp)) {
                    leaf_clear(&k);
                    return false;
                }
                sem(r, "image %zu: key \"symbols\" must be an array", i);
            } else {
                im->has_symbols = true;
                bool f2 = true;
                size_t cap = 0;
                int rc2;
                while ((rc2 = next_item(r, pp, &f2, ']', NULL)) == 1) {
                    size_t j = im->nsymbols;
                    GROW(im->symbols, im->nsymbols, cap);
                    ospprof_symbol *sy = &im->symbols[j];
                    memset(sy, 0, sizeof *sy);
                    im->nsymbols++;
                    if (!open_c(r, pp, '{')) {
                        if (!skip_value(r, pp)) {
                            leaf_clear(&k);
                            return false;
                        }
                        sem(r, "image %zu: symbol %zu must be an object", i, j);
                        continue;
                    }
                    bool f3 = true, hn = false, ha = false;
                    leaf k3;
                    int rc3;
                    while ((rc3 = next_item(r, pp, &f3, '}', &k3)) == 1) {
                        leaf v;
                        if (!leaf_parse(r, pp, &v)) {
                            leaf_clear(&k3);
                            leaf_clear(&k);
                            return false;
                        }
                        if (key_is(&k3, OSP_RAW_SYMBOL_NAME)) {
                            if (v.kind == V_STR) {
                                free(sy->name);
                                sy->name = v.str, v.str = NULL, hn = true;
                            } else {
                                sem(r, "image %zu: symbol %zu: key \"name\" must be %s", i, j,
                                    str_word(&v));
                            }
                        } else if (key_is(&k3, OSP_RAW_SYMBOL_ADDR) ||
                                   key_is(&k3, OSP_RAW_SYMBOL_SIZE)) {
                            if (is_u64(&v)) {
                                if (key_is(&k3, OSP_RAW_SYMBOL_ADDR))
                                    sy->addr = v.mag, ha = true;
                                else
                                    sy->size = v.mag;
                            } else {
                                sem(r,
                                    "image %zu: symbol %zu: key \"%s\" must be a non-negative "
                                    "integer",
                                    i, j, k3.str);
                            }
                        }
                        leaf_clear(&v);
                        leaf_clear(&k3);
                    }
                    if (rc3 < 0) {
                        leaf_clear(&k);
                        return false;
                    }
                    if (!hn)
                        sem(r, "image %zu: symbol %zu: missing key \"name\"", i, j);
                    else if (!ha)
                        sem(r, "image %zu: symbol %zu: missing key \"addr\"", i, j);
                }
                if (rc2 < 0) {
                    leaf_clear(&k);
                    return false;
                }
            }
        } else {
            if (!skip_value(r, pp)) {
                leaf_clear(&k);
                return false;
            }
        }
        leaf_clear(&k);
    }
    if (rc < 0) return false;
    if (!has_path)
        sem(r, "image %zu: missing key \"path\"", i);
    else if (!has_base)
        sem(r, "image %zu: missing key \"base\"", i);
    return true;
}

static bool parse_thread(rd *r, const char **pp, parse *ps, size_t i) {
    ospprof_thread *th = &ps->raw->threads[i];
    if (!open_c(r, pp, '{')) {
        if (!skip_value(r, pp)) return false;
        sem(r, "thread %zu must be an object", i);
        return true;
    }
    bool first = true, hf = false, hl = false;
    leaf k;
    int rc;
    while ((rc = next_item(r, pp, &first, '}', &k)) == 1) {
        leaf v;
        if (!leaf_parse(r, pp, &v)) {
            leaf_clear(&k);
            return false;
        }
        if (key_is(&k, OSP_RAW_THREAD_FIBER)) {
            if (is_i64(&v))
                th->fiber = as_i64(&v), hf = true;
            else
                sem(r, "thread %zu: key \"fiber\" must be an integer", i);
        } else if (key_is(&k, OSP_RAW_THREAD_LABEL)) {
            if (v.kind == V_STR) {
                free(th->label);
                th->label = v.str, v.str = NULL, hl = true;
            } else {
                sem(r, "thread %zu: key \"label\" must be %s", i, str_word(&v));
            }
        }
        leaf_clear(&v);
        leaf_clear(&k);
    }
    if (rc < 0) return false;
    if (!hf)
        sem(r, "thread %zu: missing key \"fiber\"", i);
    else if (!hl)
        sem(r, "thread %zu: missing key \"label\"", i);
    return true;
}

static bool parse_stack(rd *r, const char **pp, parse *ps, size_t k) {
    ospprof_raw *raw = ps->raw;
    if (!open_c(r, pp, '[')) {
        if (!skip_value(r, pp)) return false;
        sem(r, "stack %zu must be an array of addresses", k);
        return true;
    }
    bool first = true;
    size_t j = 0;
    int rc;
    while ((rc = next_item(r, pp, &first, ']', NULL)) == 1) {
        leaf v;
        if (!leaf_parse(r, pp, &v)) return false;
        if (is_u64(&v)) {
            GROW(raw->addrs, ps->naddrs, ps->cap_addrs);
            raw->addrs[ps->naddrs++] = v.mag;
            raw->stack_off[k + 1] = ps->naddrs;
        } else {
            sem(r, "stack %zu: element %zu is not a 64-bit address", k, j);
        }
        leaf_clear(&v);
        j++;
    }
    if (rc < 0) return false;
    if (j == 0) sem(r, "stack %zu is empty", k);
    return true;
}

static bool parse_sample(rd *r, const char **pp, parse *ps, size_t i) {
    GROW(ps->ps, ps->nps, ps->cap_ps);
    psample *s = &ps->ps[ps->nps++];
    memset(s, 0, sizeof *s);
    if (!open_c(r, pp, '[')) {
        if (!skip_value(r, pp)) return false;
        sem(r, "sample %zu must be an array of exactly 4 integers", i);
        return true;
    }
    bool first = true, bad = false;
    size_t j = 0;
    int64_t val[4] = {0, 0, 0, 0};
    int rc;
    while ((rc = next_item(r, pp, &first, ']', NULL)) == 1) {
        leaf v;
        if (!leaf_parse(r, pp, &v)) return false;
        if (is_i64(&v)) {
            if (j < 4) val[j] = as_i64(&v);
        } else {
            bad = true;
        }
        leaf_clear(&v);
        j++;
    }
    if (rc < 0) return false;
    if (bad || j != 4) {
        sem(r, "sample %zu must be an array of exactly 4 integers", i);
        return true;
    }
    if (val[0] < 0) sem(r, "sample %zu: time %" PRId64 " is negative", i, val[0]);
    if (val[3] != OSP_RAW_STATE_ON_CPU && val[3] != OSP_RAW_STATE_WAITING)
        sem(r, "sample %zu: state %" PRId64 " must be 0 (on-CPU) or 1 (waiting)", i, val[3]);
    s->t = val[0] < 0 ? 0 : (uint64_t)val[0];
    s->row = val[1];
    s->stack = val[2];
    s->state = val[3] == OSP_RAW_STATE_WAITING;
    return true;
}

/* An array of non-negative integers (sample_weights_ns, truncated_stacks). */
static bool parse_u64_array(rd *r, const char **pp, const char *key, uint64_t **out, size_t *n,
                            size_t *cap) {
    if (!open_c(r, pp, '[')) {
        if (!skip_value(r, pp)) return false;
        sem(r, "key \"%s\" must be an array", key);
        return true;
    }
    bool first = true;
    int rc;
    size_t j = 0;
    while ((rc = next_item(r, pp, &first, ']', NULL)) == 1) {
        leaf v;
        if (!leaf_parse(r, pp, &v)) return false;
        if (is_u64(&v)) {
            GROW(*out, *n, *cap);
            (*out)[(*n)++] = v.mag;
        } else {
            sem(r, "%s: element %zu must be a non-negative integer", key, j);
        }
        leaf_clear(&v);
        j++;
    }
    return rc == 0;
}

/* An array whose elements parse_elem handles one by one. */
static bool parse_rows(rd *r, const char **pp, const char *key, parse *ps,
                       bool (*elem)(rd *, const char **, parse *, size_t),
                       void (*before)(parse *, size_t)) {
    if (!open_c(r, pp, '[')) {
        if (!skip_value(r, pp)) return false;
        sem(r, "key \"%s\" must be an array", key);
        return true;
    }
    bool first = true;
    int rc;
    size_t i = 0;
    while ((rc = next_item(r, pp, &first, ']', NULL)) == 1) {
        if (before) before(ps, i);
        if (!elem(r, pp, ps, i)) return false;
        i++;
    }
    return rc == 0;
}

static void before_image(parse *ps, size_t i) {
    ospprof_raw *raw = ps->raw;
    raw->images = ospprof_xrealloc(raw->images, (i + 1) * sizeof *raw->images);
    memset(&raw->images[i], 0, sizeof raw->images[i]);
    raw->nimages = i + 1;
}
static void before_thread(parse *ps, size_t i) {
    ospprof_raw *raw = ps->raw;
    raw->threads = ospprof_xrealloc(raw->threads, (i + 1) * sizeof *raw->threads);
    memset(&raw->threads[i], 0, sizeof raw->threads[i]);
    raw->nthreads = i + 1;
}
static void before_stack(parse *ps, size_t i) {
    ospprof_raw *raw = ps->raw;
    if (i + 2 > ps->cap_stacks) {
        ps->cap_stacks = ps->cap_stacks ? ps->cap_stacks * 2 : 64;
        raw->stack_off = ospprof_xrealloc(raw->stack_off, ps->cap_stacks * sizeof *raw->stack_off);
    }
    if (i == 0) raw->stack_off[0] = 0;
    raw->stack_off[i + 1] = ps->naddrs;
    raw->nstacks = i + 1;
}

void ospprof_raw_free(ospprof_raw *raw) {
    if (!raw) return;
    free(raw->path);
    free(raw->exe);
    free(raw->platform);
    free(raw->engine);
    for (size_t i = 0; i < raw->nimages; i++) {
        ospprof_image *im = &raw->images[i];
        free(im->path);
        free(im->arch);
        free(im->build_id);
        for (size_t j = 0; j < im->nsymbols; j++) free(im->symbols[j].name);
        free(im->symbols);
    }
    free(raw->images);
    for (size_t i = 0; i < raw->nthreads; i++) free(raw->threads[i].label);
    free(raw->threads);
    free(raw->addrs);
    free(raw->stack_off);
    free(raw->truncated);
    free(raw->samples);
    free(raw);
}

typedef struct tkey {
    uint64_t t;
    size_t i;
} tkey;
static int tkey_cmp(const void *a, const void *b) {
    const tkey *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* dropped_reasons: only cpu_unsampled is read (the report's warning of CPU time no sample
 * carries). The key is informative: a value that is not an object, and members that are
 * not non-negative integers, are passed over without an error. */
static bool parse_reasons(rd *r, const char **pp, ospprof_raw *raw) {
    if (!open_c(r, pp, '{')) return skip_value(r, pp);
    bool first = true;
    leaf k;
    int rc;
    while ((rc = next_item(r, pp, &first, '}', &k)) == 1) {
        leaf v;
        if (!leaf_parse(r, pp, &v)) {
            leaf_clear(&k);
            return false;
        }
        if (key_is(&k, OSP_RAW_DROP_NAME_CPU_UNSAMPLED) && is_u64(&v)) raw->cpu_unsampled = v.mag;
        leaf_clear(&v);
        leaf_clear(&k);
    }
    return rc == 0;
}

static bool parse_top(rd *r, parse *ps) {
    ospprof_raw *raw = ps->raw;
    const char *p = ws(r, r->b);
    if (p >= r->e) {
        syntax(r, p);
        return false;
    }
    if (*p != '{') {
        if (!skip_value(r, &p)) return false;
        p = ws(r, p);
        if (p < r->e) {
            syntax(r, p);
            return false;
        }
        snprintf(r->msg, sizeof r->msg, "%s: top level is not a JSON object", r->name);
        r->syn = true;
        return false;
    }
    p++;
    bool first = true;
    leaf k;
    int rc;
    while ((rc = next_item(r, &p, &first, '}', &k)) == 1) {
        int which = -1;
        for (int i = 0; i < K_COUNT; i++)
            if (key_is(&k, key_names[i])) which = i;
        if (which >= 0 && (ps->seen & (1u << which))) {
            sem(r, "duplicate key \"%s\"", k.str);
            which = -1; /* keep the first value */
        }
        if (which >= 0) ps->seen |= 1u << which;
        bool ok = true;
        switch (which) {
        case K_IMAGES:
            ok = parse_rows(r, &p, OSP_RAW_KEY_IMAGES, ps, parse_image, before_image);
            break;
        case K_THREADS:
            ok = parse_rows(r, &p, OSP_RAW_KEY_THREADS, ps, parse_thread, before_thread);
            break;
        case K_STACKS:
            ok = parse_rows(r, &p, OSP_RAW_KEY_STACKS, ps, parse_stack, before_stack);
            break;
        case K_SAMPLES: ok = parse_rows(r, &p, OSP_RAW_KEY_SAMPLES, ps, parse_sample, NULL); break;
        case K_WEIGHTS:
            ok = parse_u64_array(r, &p, OSP_RAW_KEY_SAMPLE_WEIGHTS_NS, &ps->w, &ps->nw, &ps->cap_w);
            break;
        case K_TRUNC:
            ok = parse_u64_array(r, &p, OSP_RAW_KEY_TRUNCATED_STACKS, &ps->trunc, &ps->ntrunc,
                                 &ps->cap_trunc);
            break;
        case -1: ok = skip_value(r, &p); break;
        case K_REASONS: ok = parse_reasons(r, &p, raw); break;
        default: {
            leaf v;
            ok = leaf_parse(r, &p, &v);
            if (!ok) break;
            const char *kn = key_names[which];
            switch (which) {
            case K_EXE:
            case K_PLATFORM:
            case K_ENGINE:
                if (v.kind != V_STR) {
                    sem(r, "key \"%s\" must be %s", kn, v.nul ? str_word(&v) : type_word(2));
                } else {
                    char **dst = which == K_EXE        ? &raw->exe
                                 : which == K_PLATFORM ? &raw->platform
                                                       : &raw->engine;
                    free(*dst);
                    *dst = v.str;
                    v.str = NULL;
                }
                break;
            case K_RATE:
            case K_DROPPED:
            case K_PROFILER_CPU:
                if (!is_u64(&v))
                    sem(r, "key \"%s\" must be %s", kn, type_word(0));
                else if (which == K_RATE)
                    raw->rate_hz = v.mag;
                else if (which == K_DROPPED)
                    raw->dropped = v.mag;
                else
                    raw->profiler_cpu_ns = v.mag;
                if (which == K_RATE && is_u64(&v) && v.mag == 0)
                    sem(r, "rate_hz must be at least 1");
                break;
            case K_VERSION:
                if (!is_i64(&v)) {
                    if (!r->has_ver)
                        snprintf(r->ver, sizeof r->ver, "%s: key \"version\" must be an integer",
                                 r->name);
                    r->has_ver = true;
                } else {
                    raw->version = as_i64(&v);
                    if (raw->version != OSP_RAW_VERSION && !r->has_ver) {
                        snprintf(r->ver, sizeof r->ver,
                                 "%s: unsupported raw profile version %" PRId64 " (expected %d)",
                                 r->name, raw->version, OSP_RAW_VERSION);
                        r->has_ver = true;
                    }
                }
                break;
            default: /* pid, start_unix_ns, end_unix_ns */
                if (!is_i64(&v)) {
                    sem(r, "key \"%s\" must be %s", kn, type_word(1));
                } else {
                    int64_t x = as_i64(&v);
                    if (which == K_PID)
                        raw->pid = x;
                    else if (which == K_START)
                        raw->start_unix_ns = x;
                    else
                        raw->end_unix_ns = x;
                }
                break;
            }
            leaf_clear(&v);
        }
        }
        leaf_clear(&k);
        if (!ok) return false;
    }
    if (rc < 0) return false;
    p = ws(r, p);
    if (p < r->e) {
        syntax(r, p);
        return false;
    }
    return true;
}

ospprof_raw *ospprof_raw_parse(const char *name, const char *text, size_t len, char *err,
                               size_t errlen) {
    rd r;
    memset(&r, 0, sizeof r);
    r.name = name;
    r.b = text;
    r.e = text + len;
    parse ps;
    memset(&ps, 0, sizeof ps);
    ospprof_raw *raw = ospprof_xcalloc(1, sizeof *raw);
    ps.raw = raw;
    raw->path = ospprof_xstrndup(name, strlen(name));

    bool ok = parse_top(&r, &ps);
    const char *fail = NULL;
    char msg[OSPPROF_ERR_MAX];
    if (!ok || r.syn) {
        fail = r.msg;
    } else if (r.has_ver) {
        fail = r.ver;
    } else if (!(ps.seen & (1u << K_VERSION))) {
        snprintf(msg, sizeof msg, "%s: missing key \"version\"", name);
        fail = msg;
    } else if (r.has_sem) {
        fail = r.sem;
    } else {
        for (int i = 0; i < K_COUNT; i++) {
            if ((required_mask & (1u << i)) && !(ps.seen & (1u << i))) {
                snprintf(msg, sizeof msg, "%s: missing key \"%s\"", name, key_names[i]);
                fail = msg;
                break;
            }
        }
    }
    if (!fail) {
        for (size_t i = 0; i < ps.nps && !fail; i++) {
            psample *s = &ps.ps[i];
            if (s->row < 0 || (uint64_t)s->row >= raw->nthreads) {
                snprintf(msg, sizeof msg,
                         "%s: sample %zu: thread index %" PRId64
                         " out of range (profile has %zu threads)",
                         name, i, s->row, raw->nthreads);
                fail = msg;
            } else if (s->stack < 0 || (uint64_t)s->stack >= raw->nstacks) {
                snprintf(msg, sizeof msg,
                         "%s: sample %zu: stack index %" PRId64
                         " out of range (profile has %zu stacks)",
                         name, i, s->stack, raw->nstacks);
                fail = msg;
            }
        }
    }
    if (!fail && (ps.seen & (1u << K_WEIGHTS)) && ps.nw != ps.nps) {
        snprintf(msg, sizeof msg, "%s: sample_weights_ns has %zu entries, expected %zu", name,
                 ps.nw, ps.nps);
        fail = msg;
    }
    if (!fail && (ps.seen & (1u << K_WEIGHTS))) {
        /* every sum the model and exporters form (per frame, per thread, in all) is at most the
         * total, so a total that fits in int64 keeps them all exact */
        uint64_t total = 0;
        for (size_t i = 0; i < ps.nw && !fail; i++) {
            if (ps.w[i] > (uint64_t)INT64_MAX - total) {
                snprintf(msg, sizeof msg,
                         "%s: sample_weights_ns: the weights add up to more than 2^63-1 ns (at "
                         "sample %zu)",
                         name, i);
                fail = msg;
            }
            total += ps.w[i];
        }
    }
    if (!fail && (raw->nthreads > UINT32_MAX || raw->nstacks > UINT32_MAX)) {
        snprintf(msg, sizeof msg, "%s: too many threads or stacks", name);
        fail = msg;
    }
    if (fail) {
        ospprof_seterr(err, errlen, "%s", fail);
        free(ps.ps);
        free(ps.w);
        free(ps.trunc);
        ospprof_raw_free(raw);
        return NULL;
    }

    /* normalise */
    for (size_t i = 0; i < raw->nimages; i++)
        if (!raw->images[i].arch) raw->images[i].arch = ospprof_xstrndup("", 0);
    if (raw->nstacks == 0) {
        raw->stack_off = ospprof_xrealloc(raw->stack_off, sizeof *raw->stack_off);
        raw->stack_off[0] = 0;
    }
    raw->truncated = ospprof_xcalloc(raw->nstacks, sizeof *raw->truncated);
    for (size_t i = 0; i < ps.ntrunc; i++)
        if (ps.trunc[i] < raw->nstacks) raw->truncated[ps.trunc[i]] = true;
    free(ps.trunc);
    raw->has_weights = (ps.seen & (1u << K_WEIGHTS)) != 0;
    uint64_t nominal = 1000000000ull / raw->rate_hz;

    bool sorted = true;
    for (size_t i = 1; i < ps.nps && sorted; i++)
        if (ps.ps[i].t < ps.ps[i - 1].t) sorted = false;
    raw->samples = ospprof_xcalloc(ps.nps, sizeof *raw->samples);
    raw->nsamples = ps.nps;
    tkey *order = NULL;
    if (!sorted) {
        order = ospprof_xcalloc(ps.nps, sizeof *order);
        for (size_t i = 0; i < ps.nps; i++) order[i] = (tkey){ps.ps[i].t, i};
        qsort(order, ps.nps, sizeof *order, tkey_cmp);
    }
    for (size_t o = 0; o < ps.nps; o++) {
        size_t i = order ? order[o].i : o;
        const psample *s = &ps.ps[i];
        ospprof_sample *d = &raw->samples[o];
        d->t_ns = s->t;
        d->row = (uint32_t)s->row;
        d->stack = (uint32_t)s->stack;
        d->state = (uint8_t)s->state;
        d->weight_ns = raw->has_weights ? ps.w[i] : nominal;
    }
    free(order);
    free(ps.ps);
    free(ps.w);
    return raw;
}

size_t ospprof_raw_max_bytes(void) {
    const char *e = getenv("OSPREY_PROFILE_MAX_RAW_BYTES");
    if (!e || !*e) return OSPPROF_RAW_MAX_BYTES;
    /* decimal digits only: strtoull would take " 12", "+12" and "-1" (as 2^64-1) */
    size_t v = 0;
    bool ok = true;
    for (const char *c = e; *c && ok; c++) {
        unsigned d = (unsigned)(*c - '0');
        if (d > 9 || v > (SIZE_MAX - 1 - d) / 10)
            ok = false;
        else
            v = v * 10 + d;
    }
    if (ok && v > 0) return v;
    /* said once per process, however many inputs ask (the two of --diff, on two threads);
     * the same treatment as a bad OSPREY_PROFILE_HZ: a warning and the default */
    static atomic_bool warned;
    if (!atomic_exchange(&warned, true)) {
        ospprof_buf b = {0};
        ospprof_buf_puts(&b, "osprey: warning: OSPREY_PROFILE_MAX_RAW_BYTES=\"");
        ospprof_term_text(&b, e);
        ospprof_buf_printf(&b, "\" is not a number of bytes greater than 0; using %zu\n",
                           (size_t)OSPPROF_RAW_MAX_BYTES);
        fwrite(b.p, 1, b.n, stderr);
        fflush(stderr);
        ospprof_buf_free(&b);
    }
    return OSPPROF_RAW_MAX_BYTES;
}

ospprof_raw *ospprof_raw_load(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ospprof_seterr(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        ospprof_seterr(err, errlen, "%s: cannot read: %s", path, strerror(EISDIR));
        close(fd);
        return NULL;
    }
    size_t limit = ospprof_raw_max_bytes();
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > limit) {
        ospprof_seterr(err, errlen, "%s: larger than the limit of %zu bytes for a raw profile",
                       path, limit);
        close(fd);
        return NULL;
    }
    size_t cap = (fstat(fd, &st) == 0 && st.st_size > 0) ? (size_t)st.st_size + 1 : 65536;
    if (cap > limit + 1) cap = limit + 1;
    size_t n = 0;
    bool started = false; /* the first non-whitespace byte was seen (and is '{') */
    char *buf = ospprof_xrealloc(NULL, cap);
    for (;;) {
        if (n == cap) {
            if (n > limit) { /* a pipe or device that does not end (`yes | ...`) */
                ospprof_seterr(err, errlen,
                               "%s: larger than the limit of %zu bytes for a raw profile", path,
                               limit);
                free(buf);
                close(fd);
                return NULL;
            }
            cap = cap > limit / 2 ? limit + 1 : cap * 2;
            buf = ospprof_xrealloc(buf, cap);
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0) {
            if (errno == EINTR) continue;
            ospprof_seterr(err, errlen, "%s: cannot read: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (k == 0) break;
        /* a raw profile is one JSON object: refuse anything else at once rather than after
         * reading up to the limit (`yes | ...`) */
        size_t first = n;
        while (
            !started && first < n + (size_t)k &&
            (buf[first] == ' ' || buf[first] == '\t' || buf[first] == '\n' || buf[first] == '\r'))
            first++;
        if (!started && first < n + (size_t)k) {
            if (buf[first] != '{') {
                /* `[]`, `null`, `42` are JSON, just not a raw profile: say so, as the
                 * parser does for a buffer */
                if (buf[first] && strchr("[\"-0123456789tfn", buf[first]))
                    ospprof_seterr(err, errlen, "%s: top level is not a JSON object", path);
                else
                    ospprof_seterr(err, errlen, "%s: not valid JSON at byte %zu", path, first);
                free(buf);
                close(fd);
                return NULL;
            }
            started = true;
        }
        n += (size_t)k;
    }
    close(fd);
    ospprof_raw *raw = ospprof_raw_parse(path, buf, n, err, errlen);
    free(buf);
    return raw;
}
