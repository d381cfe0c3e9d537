/*
 * JSON parsing and paths (docs/spec/language.md §9.8); see json_parse.h. A recursive-descent
 * parser over the input bytes, nesting through a heap stack (no depth limit); every read is checked against
 * the end of the input (it need not be NUL-terminated). Plain C and malloc only: the fuzz
 * target (test/fuzz/json_fuzz.c) builds this file alone.
 */
#include "json_parse.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const unsigned char *p, *end;
    osp_jtree *t;
    size_t nodes_cap, pool_cap;
    int status; /* OSP_JSON_OK until the first failure */
} parser;

static bool fail(parser *ps, int status) {
    if (ps->status == OSP_JSON_OK) ps->status = status;
    return false;
}

static bool pool_reserve(parser *ps, size_t more) {
    osp_jtree *t = ps->t;
    if (more <= ps->pool_cap - t->pool_len) return true;
    size_t cap = ps->pool_cap ? ps->pool_cap : 64;
    while (cap - t->pool_len < more) {
        if (cap > SIZE_MAX / 2) return fail(ps, OSP_JSON_NOMEM);
        cap *= 2;
    }
    char *np = realloc(t->pool, cap);
    if (np == NULL) return fail(ps, OSP_JSON_NOMEM);
    t->pool = np;
    ps->pool_cap = cap;
    return true;
}

static bool pool_put(parser *ps, const void *bytes, size_t n) {
    if (n == 0) return true;
    if (!pool_reserve(ps, n)) return false;
    memcpy(ps->t->pool + ps->t->pool_len, bytes, n);
    ps->t->pool_len += n;
    return true;
}

/* Append a zeroed node; its index in *idx. */
static bool new_node(parser *ps, uint8_t kind, uint32_t *idx) {
    osp_jtree *t = ps->t;
    if (t->nnodes >= UINT32_MAX) return fail(ps, OSP_JSON_INVALID);
    if (t->nnodes == ps->nodes_cap) {
        size_t cap = ps->nodes_cap ? ps->nodes_cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof(osp_jnode)) return fail(ps, OSP_JSON_NOMEM);
        osp_jnode *nn = realloc(t->nodes, cap * sizeof *nn);
        if (nn == NULL) return fail(ps, OSP_JSON_NOMEM);
        t->nodes = nn;
        ps->nodes_cap = cap;
    }
    memset(&t->nodes[t->nnodes], 0, sizeof t->nodes[0]);
    t->nodes[t->nnodes].kind = kind;
    *idx = (uint32_t)t->nnodes++;
    return true;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r' || *ps->p == '\n'))
        ps->p++;
}

static int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits after `\u`; -1 if malformed. */
static long read_hex4(parser *ps) {
    if (ps->end - ps->p < 4) return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(ps->p[i]);
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    ps->p += 4;
    return v;
}

static bool put_utf8(parser *ps, unsigned long cp) {
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (cp >> 18));
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return pool_put(ps, b, n);
}

/* A string token at ps->p (the opening quote), decoded into the pool: its bytes in
 * [*off, *off + *len). */
static bool parse_string(parser *ps, size_t *off, size_t *len) {
    ps->p++; /* '"' */
    *off = ps->t->pool_len;
    for (;;) {
        const unsigned char *run = ps->p;
        while (ps->p < ps->end && *ps->p != '"' && *ps->p != '\\' && *ps->p >= 0x20) ps->p++;
        if (ps->p > run && !pool_put(ps, run, (size_t)(ps->p - run))) return false;
        if (ps->p >= ps->end || *ps->p < 0x20) return fail(ps, OSP_JSON_INVALID);
        if (*ps->p == '"') {
            ps->p++;
            *len = ps->t->pool_len - *off;
            return true;
        }
        ps->p++; /* '\\' */
        if (ps->p >= ps->end) return fail(ps, OSP_JSON_INVALID);
        unsigned char c = *ps->p++;
        char out;
        switch (c) {
        case '"': out = '"'; break;
        case '\\': out = '\\'; break;
        case '/': out = '/'; break;
        case 'b': out = '\b'; break;
        case 'f': out = '\f'; break;
        case 'n': out = '\n'; break;
        case 'r': out = '\r'; break;
        case 't': out = '\t'; break;
        case 'u': {
            long cp = read_hex4(ps);
            if (cp < 0) return fail(ps, OSP_JSON_INVALID);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                /* a high surrogate must be followed by a low one: together, one code point */
                if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u')
                    return fail(ps, OSP_JSON_INVALID);
                ps->p += 2;
                long lo = read_hex4(ps);
                if (lo < 0xDC00 || lo > 0xDFFF) return fail(ps, OSP_JSON_INVALID);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return fail(ps, OSP_JSON_INVALID); /* a lone low surrogate */
            }
            if (!put_utf8(ps, (unsigned long)cp)) return false;
            continue;
        }
        default: return fail(ps, OSP_JSON_INVALID);
        }
        if (!pool_put(ps, &out, 1)) return false;
    }
}

static bool is_number_char(unsigned char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

static bool parse_literal(parser *ps, const char *word, uint8_t kind, uint32_t idx) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, OSP_JSON_INVALID);
    ps->p += n;
    ps->t->nodes[idx].kind = kind;
    ps->t->nodes[idx].text_off = ps->t->pool_len;
    ps->t->nodes[idx].text_len = n;
    return pool_put(ps, word, n);
}

/* A key and its colon at ps->p (an object's member); whitespace after the colon skipped. */
static bool parse_key(parser *ps, size_t *off, size_t *len) {
    if (ps->p >= ps->end || *ps->p != '"') return fail(ps, OSP_JSON_INVALID);
    if (!parse_string(ps, off, len)) return false;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') return fail(ps, OSP_JSON_INVALID);
    ps->p++;
    skip_ws(ps);
    return true;
}

/* A scalar at ps->p (no leading whitespace) into node idx. */
static bool parse_scalar(parser *ps, uint32_t idx) {
    switch (*ps->p) {
    case '"': {
        size_t off, len;
        if (!parse_string(ps, &off, &len)) return false;
        ps->t->nodes[idx].kind = OSP_JSON_STRING;
        ps->t->nodes[idx].text_off = off;
        ps->t->nodes[idx].text_len = len;
        return true;
    }
    case 't': return parse_literal(ps, "true", OSP_JSON_TRUE, idx);
    case 'f': return parse_literal(ps, "false", OSP_JSON_FALSE, idx);
    case 'n': return parse_literal(ps, "null", OSP_JSON_NULL, idx);
    default: break;
    }
    /* a number token: an optional '-', then a run of 0-9 . e E + - starting with a digit */
    const unsigned char *start = ps->p;
    if (*ps->p == '-') ps->p++;
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return fail(ps, OSP_JSON_INVALID);
    while (ps->p < ps->end && is_number_char(*ps->p)) ps->p++;
    ps->t->nodes[idx].kind = OSP_JSON_NUMBER;
    ps->t->nodes[idx].text_off = ps->t->pool_len;
    ps->t->nodes[idx].text_len = (size_t)(ps->p - start);
    return pool_put(ps, start, (size_t)(ps->p - start));
}

/* An array or object still open: its node, its last child so far and how many. */
typedef struct open_container {
    uint32_t idx, prev, count;
    bool object;
} open_container;

/* The one value at ps->p (no leading whitespace), as node 0 and its descendants. Arrays and
 * objects nest through a stack on the heap, not through recursion, so any depth the memory
 * holds parses (§9.8 sets no limit). */
static bool parse_document(parser *ps) {
    open_container *stack = NULL;
    size_t depth = 0, cap = 0, key_off = 0, key_len = 0;
    bool ok = false;
    for (;;) {
        /* a value: the root, an element or a member's value */
        if (ps->p >= ps->end) {
            fail(ps, OSP_JSON_INVALID);
            break;
        }
        uint32_t idx;
        if (!new_node(ps, OSP_JSON_NULL, &idx)) break;
        osp_jnode *nodes = ps->t->nodes; /* new_node may have moved the array */
        nodes[idx].key_off = key_off;
        nodes[idx].key_len = key_len;
        if (depth > 0) {
            open_container *up = &stack[depth - 1];
            if (up->count == UINT32_MAX) {
                fail(ps, OSP_JSON_INVALID);
                break;
            }
            if (up->count++ == 0)
                nodes[up->idx].first = idx;
            else
                nodes[up->prev].next = idx;
            up->prev = idx;
        }
        if (*ps->p == '{' || *ps->p == '[') {
            bool object = *ps->p == '{';
            nodes[idx].kind = object ? OSP_JSON_OBJECT : OSP_JSON_ARRAY;
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) {
                ps->p++; /* empty: complete at once */
            } else {
                if (depth == cap) {
                    size_t ncap = cap ? cap * 2 : 16;
                    open_container *grown = ncap < SIZE_MAX / sizeof *grown
                                                ? realloc(stack, ncap * sizeof *grown)
                                                : NULL;
                    if (grown == NULL) {
                        fail(ps, OSP_JSON_NOMEM);
                        break;
                    }
                    stack = grown;
                    cap = ncap;
                }
                stack[depth++] = (open_container){idx, 0, 0, object};
                key_off = key_len = 0;
                if (object && !parse_key(ps, &key_off, &key_len)) break;
                continue; /* its first child */
            }
        } else if (!parse_scalar(ps, idx)) {
            break;
        }
        /* a value is complete: close what it completes, then the next sibling or the end */
        bool more = false, bad = false;
        while (depth > 0) {
            open_container *top = &stack[depth - 1];
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                skip_ws(ps);
                key_off = key_len = 0;
                more = !top->object || parse_key(ps, &key_off, &key_len);
                bad = !more;
                break;
            }
            if (ps->p < ps->end && *ps->p == (top->object ? '}' : ']')) {
                ps->p++;
                ps->t->nodes[top->idx].count = top->count;
                depth--;
                continue;
            }
            bad = !fail(ps, OSP_JSON_INVALID);
            break;
        }
        if (more) continue;
        ok = !bad && depth == 0;
        break;
    }
    free(stack);
    return ok;
}

int osp_jtree_parse(const char *text, size_t len, osp_jtree **out) {
    osp_jtree *t = calloc(1, sizeof *t);
    if (t == NULL) return OSP_JSON_NOMEM;
    parser ps = {
        (const unsigned char *)text, (const unsigned char *)text + len, t, 0, 0, OSP_JSON_OK};
    if (text == NULL) ps.p = ps.end = NULL;
    skip_ws(&ps);
    if (parse_document(&ps)) {
        skip_ws(&ps);
        if (ps.p != ps.end) fail(&ps, OSP_JSON_INVALID);
    }
    if (ps.status != OSP_JSON_OK) {
        osp_jtree_free(t);
        return ps.status;
    }
    *out = t;
    return OSP_JSON_OK;
}

void osp_jtree_free(osp_jtree *t) {
    if (t == NULL) return;
    free(t->nodes);
    free(t->pool);
    free(t);
}

int64_t osp_jtree_find(const osp_jtree *t, const char *path) {
    if (t == NULL || t->nnodes == 0 || path == NULL) return -1;
    uint32_t at = 0;
    const char *p = path;
    for (;;) {
        while (*p == '.') p++;
        if (*p == 0) return at;
        const osp_jnode *n = &t->nodes[at];
        if (*p == '[') {
            p++;
            if (*p < '0' || *p > '9') return -1;
            uint64_t i = 0;
            while (*p >= '0' && *p <= '9') {
                if (i > UINT32_MAX) return -1; /* beyond any array */
                i = i * 10 + (uint64_t)(*p - '0');
                p++;
            }
            if (*p != ']') return -1;
            p++;
            if (n->kind != OSP_JSON_ARRAY || i >= n->count) return -1;
            uint32_t c = n->first;
            for (uint64_t k = 0; k < i; k++) c = t->nodes[c].next;
            at = c;
            continue;
        }
        size_t klen = strcspn(p, ".[");
        if (n->kind != OSP_JSON_OBJECT || n->count == 0) return -1;
        uint32_t c = n->first;
        bool found = false;
        for (uint32_t k = 0; k < n->count; k++, c = t->nodes[c].next) {
            const osp_jnode *m = &t->nodes[c];
            if (m->key_len == klen && memcmp(t->pool + m->key_off, p, klen) == 0) {
                found = true;
                break;
            }
        }
        if (!found) return -1;
        at = c;
        p += klen;
    }
}
