/*
 * String built-ins (docs/spec/language.md §9.3) and the numeric and system built-ins (§9.2).
 * Strings are NUL-terminated byte strings; lengths and indices count bytes; case mapping
 * and trimming are ASCII-only. Failure messages are exactly the ones §9.3 lists.
 */
#include "rt_internal.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <sys/random.h> /* getentropy */
#endif

static osp_rres ok_word(osp_word w) {
    return (osp_rres){OSP_RESULT_SUCCESS, w};
}
static osp_rres ok_str(const char *s) {
    return ok_word((osp_word)(uintptr_t)s);
}
static osp_rres err(const char *msg) {
    return (osp_rres){OSP_RESULT_ERROR, (osp_word)(uintptr_t)msg};
}
static const char *S(const char *s) {
    return s ? s : "";
}

/*
 * The byte length of `s`, remembered for the last long string each thread measured here.
 * A string has no stored length, so without this a loop that reads a long string byte by
 * byte (`byteAt(s, i)`, `s[i]`, `codePointAt`, `substring` at increasing `i`) measured the
 * whole string at every step: quadratic (a 1.3 MB file scanned with byteAt took 24 s).
 * A string changes only by growing at its end, in the buffer osp_str_append_owned (render.c)
 * extends for the one tail-recursive loop that can still read it: a remembered length
 * whose byte is no longer the terminating NUL is stale and the string is measured again.
 * The remembered pointers live in a static table, which the collector
 * scans (like gpu.c's free lists), so a remembered string stays alive and its address
 * cannot be reused while it is there; the table has a fixed number of slots, so at most
 * that many strings are kept alive by it, however many threads come and go. Threads share
 * a slot when there are more of them than slots: a slot is taken with a try-lock, and a
 * thread that finds it busy simply measures.
 */
enum { LEN_CACHE_MIN = 256, LEN_SLOTS = 64 }; /* shorter strings are measured every time */
static struct len_slot {
    atomic_flag busy;
    const char *s;
    size_t len;
} len_slots[LEN_SLOTS];
static _Atomic unsigned len_slot_next;
static _Thread_local struct len_slot *len_mine;

static size_t str_len(const char *s) {
    struct len_slot *e = len_mine;
    if (e == NULL)
        e = len_mine =
            &len_slots[atomic_fetch_add_explicit(&len_slot_next, 1, memory_order_relaxed) %
                       LEN_SLOTS];
    if (!atomic_flag_test_and_set_explicit(&e->busy, memory_order_acquire)) {
        bool hit = e->s == s;
        size_t n = e->len;
        atomic_flag_clear_explicit(&e->busy, memory_order_release);
        if (hit && s[n] == '\0') return n;
    }
    size_t n = strlen(s);
    if (n >= LEN_CACHE_MIN && !atomic_flag_test_and_set_explicit(&e->busy, memory_order_acquire)) {
        e->s = s;
        e->len = n;
        atomic_flag_clear_explicit(&e->busy, memory_order_release);
    }
    return n;
}

/* ---- numeric ------------------------------------------------------------------------------- */

osp_rres osp_int_abs(int64_t n) {
    if (n == INT64_MIN) return err("integer overflow");
    return ok_word((osp_word)(n < 0 ? -n : n));
}

osp_rres osp_checked_add(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return err("integer overflow");
    return ok_word((osp_word)r);
}

osp_rres osp_checked_sub(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) return err("integer overflow");
    return ok_word((osp_word)r);
}

osp_rres osp_checked_mul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return err("integer overflow");
    return ok_word((osp_word)r);
}

const char *osp_input(void) {
    size_t cap = 64, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL) osp_fatal_oom();
    osp_stdout_flush(); /* a prompt printed just before must be visible */
    /* No blocking region here: a read that waits (a terminal, an empty pipe) is a thread
     * blocked in a system call, which the profiler records as waiting without one
     * (docs/spec/profiler.md §(l.4)); a region around the loop also called the thread
     * waiting while it read a file or a full pipe on a CPU. */
    for (;;) {
        char c;
        ssize_t r = read(0, &c, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0 || c == '\n') break;
        if (len + 1 >= cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                osp_fatal_oom();
            }
            buf = nb;
        }
        buf[len++] = c;
    }
    char *s = osp_str_dup_n(buf, len);
    free(buf);
    return s;
}

/* 64 bits from the kernel's CSPRNG (getentropy: Linux getrandom(2), macOS too). */
static uint64_t random_u64(void) {
    uint64_t v;
    while (getentropy(&v, sizeof v) != 0) {
        if (errno != EINTR) osp_fatalf("random: %s", strerror(errno));
    }
    return v;
}

int64_t osp_random(void) {
    return (int64_t)(random_u64() >> 1);
}

osp_rres osp_random_below(int64_t n) {
    if (n <= 0) return err("randomBelow: bound must be positive");
    uint64_t bound = (uint64_t)n;
    /* Reject the top partial bucket so every value is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t v;
    do v = random_u64();
    while (v >= limit);
    return ok_word(v % bound);
}

/* ---- total string functions --------------------------------------------------------------- */

int64_t osp_str_length(const char *s) {
    return (int64_t)str_len(S(s));
}

/* What the inlined body of osp_str_length (codegen/inline_rt.c) calls for a string of 256
 * bytes or more, so `i < length(s)` in a loop over a long string does not measure it at
 * every step. */
int64_t osp_str_length_long(const char *s) {
    return (int64_t)str_len(S(s));
}

bool osp_str_contains(const char *s, const char *needle) {
    return strstr(S(s), S(needle)) != NULL;
}

bool osp_str_starts_with(const char *s, const char *p) {
    s = S(s);
    p = S(p);
    return strncmp(s, p, strlen(p)) == 0;
}

bool osp_str_ends_with(const char *s, const char *p) {
    s = S(s);
    p = S(p);
    size_t n = strlen(s), m = strlen(p);
    return m <= n && memcmp(s + n - m, p, m) == 0;
}

/* The first min(n, length) bytes are measured, never the whole string: `take(s, 1)` and
 * `drop(s, 1)` on a long string cost O(1), so a loop that walks a string by dropping its
 * first byte (`[h, ...t]` style recursion on strings) is linear, not quadratic. */
static size_t prefix_len(const char *s, int64_t n) {
    return n <= 0 ? 0 : strnlen(s, (uint64_t)n >= SIZE_MAX ? SIZE_MAX : (size_t)n);
}

const char *osp_str_take(const char *s, int64_t n) {
    s = S(s);
    return osp_str_dup_n(s, prefix_len(s, n));
}

/* Strings never change, so the rest of `s` is shared rather than copied: the result points
 * into `s` (the collector treats it as a reference to all of `s`). */
const char *osp_str_drop(const char *s, int64_t n) {
    s = S(s);
    return s + prefix_len(s, n);
}

const char *osp_str_join(const osp_list *parts, const char *sep) {
    sep = S(sep);
    int64_t n = osp_list_length(parts);
    size_t seplen = strlen(sep), total = 0;
    for (int64_t i = 0; i < n; i++)
        total += strlen(S((const char *)(uintptr_t)osp_list_at(parts, i)));
    if (n > 1) total += seplen * (size_t)(n - 1);
    char *out = osp_str_dup_n("", 0);
    if (total == 0) return out;
    out = osp_gc_alloc_atomic(total + 1);
    char *p = out;
    for (int64_t i = 0; i < n; i++) {
        if (i) {
            memcpy(p, sep, seplen);
            p += seplen;
        }
        const char *e = S((const char *)(uintptr_t)osp_list_at(parts, i));
        size_t l = strlen(e);
        memcpy(p, e, l);
        p += l;
    }
    *p = 0;
    return out;
}

/* A growable array of words for building lists. */
typedef struct wvec {
    osp_word *w;
    int64_t n, cap;
} wvec;

static void wpush(wvec *v, osp_word x) {
    if (v->n == v->cap) {
        int64_t cap = v->cap ? v->cap * 2 : 8;
        osp_word *nw = osp_gc_alloc((size_t)cap * sizeof *nw);
        if (v->n) memcpy(nw, v->w, (size_t)v->n * sizeof *nw);
        v->w = nw;
        v->cap = cap;
    }
    v->w[v->n++] = x;
}

static osp_word str_word(const char *s, size_t n) {
    return (osp_word)(uintptr_t)osp_str_dup_n(s, n);
}

osp_list *osp_str_lines(const char *s) {
    s = S(s);
    wvec v = {0};
    while (*s) {
        const char *nl = strchr(s, '\n');
        if (nl == NULL) {
            wpush(&v, str_word(s, strlen(s)));
            break;
        }
        wpush(&v, str_word(s, (size_t)(nl - s)));
        s = nl + 1;
    }
    return osp_list_new(v.n, v.w);
}

static bool is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

osp_list *osp_str_words(const char *s) {
    s = S(s);
    wvec v = {0};
    for (;;) {
        while (*s && is_space((unsigned char)*s)) s++;
        if (!*s) break;
        const char *b = s;
        while (*s && !is_space((unsigned char)*s)) s++;
        wpush(&v, str_word(b, (size_t)(s - b)));
    }
    return osp_list_new(v.n, v.w);
}

static const char *map_bytes(const char *s, int upper) {
    s = S(s);
    size_t n = strlen(s);
    char *o = osp_str_dup_n(s, n);
    for (size_t i = 0; i < n; i++) {
        char c = o[i];
        if (upper && c >= 'a' && c <= 'z') o[i] = (char)(c - 32);
        if (!upper && c >= 'A' && c <= 'Z') o[i] = (char)(c + 32);
    }
    return o;
}

const char *osp_str_upper(const char *s) {
    return map_bytes(s, 1);
}
const char *osp_str_lower(const char *s) {
    return map_bytes(s, 0);
}

static const char *trim(const char *s, bool start, bool end) {
    s = S(s);
    const char *b = s, *e = s + strlen(s);
    if (start)
        while (b < e && is_space((unsigned char)*b)) b++;
    if (end)
        while (e > b && is_space((unsigned char)e[-1])) e--;
    return osp_str_dup_n(b, (size_t)(e - b));
}

const char *osp_str_trim(const char *s) {
    return trim(s, true, true);
}
const char *osp_str_trim_start(const char *s) {
    return trim(s, true, false);
}
const char *osp_str_trim_end(const char *s) {
    return trim(s, false, true);
}

const char *osp_str_reverse(const char *s) {
    s = S(s);
    size_t n = strlen(s);
    char *o = osp_str_dup_n(s, n);
    for (size_t i = 0; i < n / 2; i++) {
        char t = o[i];
        o[i] = o[n - 1 - i];
        o[n - 1 - i] = t;
    }
    return o;
}

/* ---- fallible string functions ------------------------------------------------------------------ */

osp_rres osp_str_index_of(const char *s, const char *needle) {
    s = S(s);
    const char *p = strstr(s, S(needle));
    if (p == NULL) return err("indexOf: substring not found");
    return ok_word((osp_word)(p - s));
}

osp_rres osp_str_substring(const char *s, int64_t start, int64_t end) {
    s = S(s);
    int64_t len = (int64_t)str_len(s);
    if (start < 0 || end < start || end > len) return err("substring: index out of range");
    return ok_str(osp_str_dup_n(s + start, (size_t)(end - start)));
}

osp_rres osp_str_split(const char *s, const char *sep) {
    s = S(s);
    sep = S(sep);
    size_t m = strlen(sep);
    if (m == 0) return err("split: separator must not be empty");
    wvec v = {0};
    for (;;) {
        const char *p = strstr(s, sep);
        if (p == NULL) {
            wpush(&v, str_word(s, strlen(s)));
            break;
        }
        wpush(&v, str_word(s, (size_t)(p - s)));
        s = p + m;
    }
    return ok_word((osp_word)(uintptr_t)osp_list_new(v.n, v.w));
}

osp_rres osp_str_replace(const char *s, const char *needle, const char *rep) {
    s = S(s);
    needle = S(needle);
    rep = S(rep);
    size_t m = strlen(needle), r = strlen(rep);
    if (m == 0) return err("replace: needle must not be empty");
    size_t count = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + m, needle)) count++;
    size_t n = strlen(s);
    if (count == 0) return ok_str(osp_str_dup_n(s, n));
    if (r > m && count > (SIZE_MAX - n - 1) / (r - m)) osp_fatal_oom();
    size_t total = n + count * r - count * m;
    char *o = osp_gc_alloc_atomic(total + 1);
    char *q = o;
    for (;;) {
        const char *p = strstr(s, needle);
        if (p == NULL) break;
        memcpy(q, s, (size_t)(p - s));
        q += p - s;
        memcpy(q, rep, r);
        q += r;
        s = p + m;
    }
    strcpy(q, s);
    return ok_str(o);
}

osp_rres osp_str_repeat(const char *s, int64_t n) {
    s = S(s);
    if (n < 0) return err("repeat: count must not be negative");
    size_t len = strlen(s);
    if (len && (uint64_t)n > (SIZE_MAX / 2) / len) osp_fatal_oom();
    size_t total = len * (size_t)n;
    char *o = osp_gc_alloc_atomic(total + 1);
    for (int64_t i = 0; i < n; i++) memcpy(o + (size_t)i * len, s, len);
    o[total] = 0;
    return ok_str(o);
}

static osp_rres pad(const char *s, int64_t want, const char *fill, bool start) {
    s = S(s);
    fill = S(fill);
    size_t f = strlen(fill);
    if (f == 0)
        return err(start ? "padStart: fill must not be empty" : "padEnd: fill must not be empty");
    size_t n = strlen(s);
    if (want <= (int64_t)n) return ok_str(osp_str_dup_n(s, n));
    if ((uint64_t)want > SIZE_MAX / 2) osp_fatal_oom();
    size_t total = (size_t)want, padn = total - n;
    char *o = osp_gc_alloc_atomic(total + 1);
    char *padp = start ? o : o + n;
    for (size_t i = 0; i < padn; i++) padp[i] = fill[i % f];
    memcpy(start ? o + padn : o, s, n);
    o[total] = 0;
    return ok_str(o);
}

osp_rres osp_str_pad_start(const char *s, int64_t len, const char *fill) {
    return pad(s, len, fill, true);
}
osp_rres osp_str_pad_end(const char *s, int64_t len, const char *fill) {
    return pad(s, len, fill, false);
}

osp_rres osp_str_parse_int(const char *s) {
    s = S(s);
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (*p < '0' || *p > '9') return err("parseInt: invalid integer");
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return err("parseInt: invalid integer");
        unsigned d = (unsigned)(*p - '0');
        if (v > (limit - d) / 10) return err("parseInt: invalid integer");
        v = v * 10 + d;
    }
    return ok_word(neg ? (osp_word)(0 - v) : (osp_word)v);
}

/* docs/spec/language.md §9.3: [+-] (digits [. digits*] | . digits) [(e|E) [+-] digits], nothing
 * else, and the value must be finite. */
osp_rres osp_str_parse_float(const char *s) {
    s = S(s);
    const char *q = s;
    if (*q == '+' || *q == '-') q++;
    size_t digits = 0;
    while (*q >= '0' && *q <= '9') q++, digits++;
    if (*q == '.') {
        q++;
        while (*q >= '0' && *q <= '9') q++, digits++;
    }
    bool ok = digits > 0;
    if (ok && (*q == 'e' || *q == 'E')) {
        q++;
        if (*q == '+' || *q == '-') q++;
        size_t ed = 0;
        while (*q >= '0' && *q <= '9') q++, ed++;
        ok = ed > 0;
    }
    if (!ok || *q != 0) return err("parseFloat: invalid number");
    double d = strtod(s, NULL);
    if (!isfinite(d)) return err("parseFloat: invalid number");
    osp_word w;
    memcpy(&w, &d, sizeof w);
    return ok_word(w);
}

osp_rres osp_str_byte_at(const char *s, int64_t i) {
    s = S(s);
    if (i < 0 || i >= (int64_t)str_len(s)) return err("byteAt: index out of range");
    return ok_word((unsigned char)s[i]);
}

osp_rres osp_str_index(const char *s, int64_t i) {
    s = S(s);
    if (i < 0 || i >= (int64_t)str_len(s)) return err("index out of range");
    return ok_str(osp_str_dup_n(s + i, 1));
}

/* docs/spec/language.md §9.3: the checks run in the order of the spec's table, so one
 * malformed sequence always gives the same message. */
osp_rres osp_str_code_point_at(const char *s, int64_t i) {
    s = S(s);
    int64_t n = (int64_t)str_len(s);
    if (i < 0 || i >= n) return err("codePointAt: index out of range");
    const unsigned char *p = (const unsigned char *)s + i;
    uint32_t c = p[0];
    int len;
    uint32_t min;
    if (c < 0x80) return ok_word(c);
    if (c < 0xC0 || c >= 0xF8) return err("codePointAt: invalid UTF-8 lead byte");
    if (c < 0xE0)
        len = 2, c &= 0x1F, min = 0x80;
    else if (c < 0xF0)
        len = 3, c &= 0x0F, min = 0x800;
    else
        len = 4, c &= 0x07, min = 0x10000;
    if (i + len > n) return err("codePointAt: truncated codepoint");
    for (int k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80) return err("codePointAt: invalid continuation byte");
        c = (c << 6) | (p[k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return err("codePointAt: invalid UTF-8 sequence");
    return ok_word(c);
}

/* The UTF-8 encoded length of a code point (docs/spec/language.md §9.3; not a display width). */
osp_rres osp_code_point_width(int64_t cp) {
    if (cp < 0 || cp > 0x10FFFF) return err("codePointWidth: code point out of range");
    if (cp >= 0xD800 && cp <= 0xDFFF) return err("codePointWidth: surrogate is not a scalar");
    return ok_word(cp <= 0x7F ? 1 : cp <= 0x7FF ? 2 : cp <= 0xFFFF ? 3 : 4);
}

osp_rres osp_from_code_point(int64_t cp) {
    if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0)
        return err("fromCodePoint: invalid code point");
    char b[4];
    size_t n;
    uint32_t c = (uint32_t)cp;
    if (c < 0x80)
        b[0] = (char)c, n = 1;
    else if (c < 0x800)
        b[0] = (char)(0xC0 | (c >> 6)), b[1] = (char)(0x80 | (c & 0x3F)), n = 2;
    else if (c < 0x10000)
        b[0] = (char)(0xE0 | (c >> 12)), b[1] = (char)(0x80 | ((c >> 6) & 0x3F)),
        b[2] = (char)(0x80 | (c & 0x3F)), n = 3;
    else
        b[0] = (char)(0xF0 | (c >> 18)), b[1] = (char)(0x80 | ((c >> 12) & 0x3F)),
        b[2] = (char)(0x80 | ((c >> 6) & 0x3F)), b[3] = (char)(0x80 | (c & 0x3F)), n = 4;
    return ok_str(osp_str_dup_n(b, n));
}
