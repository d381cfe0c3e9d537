/*
 * Value rendering (docs/spec/language.md §8), strings and Results (§4, §6.3).
 */
#include "rt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *osp_show_int(int64_t v) {
    /* Decimal digits from the right, as snprintf("%lld") prints them, without the cost of
     * the printf machinery (rendering ints is most of building strings). */
    char buf[24];
    char *end = buf + sizeof buf, *p = end;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) *--p = '-';
    return osp_str_dup_n(p, (size_t)(end - p));
}

const char *osp_show_float(double v) {
    char buf[48];
    int n;
    if (isnan(v)) {
        /* Any NaN renders `nan`: x86's default NaN has its sign bit set and %g would
         * print "-nan". */
        return osp_str_dup_n("nan", 3);
    }
    /* The first precision whose text parses back to the very same double (compared bit
     * for bit, so -0.0 stays distinct from 0.0). %.17g always round-trips. */
    for (int prec = 10;; prec++) {
        n = snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (prec >= 17 || memcmp(&back, &v, sizeof v) == 0) break;
    }
    if (strpbrk(buf, ".eEni") == NULL) {
        memcpy(buf + n, ".0", 3);
        n += 2;
    }
    return osp_str_dup_n(buf, (size_t)n);
}

const char *osp_show_bool(bool v) {
    return v ? osp_str_dup_n("true", 4) : osp_str_dup_n("false", 5);
}

const char *osp_show_result(const osp_result *r, const char *payload, bool bare) {
    if (r == NULL || r->tag != OSP_RESULT_SUCCESS) {
        const char *m = r ? r->message : NULL;
        if (m == NULL) return osp_str_dup_n("Error", 5);
        const char *parts[3] = {"Error(", m, ")"};
        return osp_str_concat(3, parts);
    }
    if (payload == NULL) payload = "";
    if (bare) return payload;
    const char *parts[3] = {"Success(", payload, ")"};
    return osp_str_concat(3, parts);
}

const char *osp_str_cat(const char *a, const char *b) {
    const char *parts[2] = {a, b};
    return osp_str_concat(2, parts);
}

const char *osp_str_append_owned(const char *a, const char *b, osp_str_acc *acc) {
    size_t lb = b ? strlen(b) : 0;
    bool owned = a != NULL && a == acc->buf;
    size_t la = owned ? (size_t)acc->len : a ? strlen(a) : 0;
    if (la > SIZE_MAX / 2 - 16 - lb) osp_fatal_oom();
    size_t need = la + lb;
    if (owned && need <= (size_t)acc->cap) {
        memcpy(acc->buf + la, b, lb);
        acc->buf[need] = '\0';
        acc->len = (int64_t)need;
        return acc->buf;
    }
    size_t cap = need < 16 ? 32 : 2 * need;
    char *s = osp_gc_alloc_atomic(cap + 1);
    if (la) memcpy(s, a, la);
    if (lb) memcpy(s + la, b, lb);
    s[need] = '\0';
    acc->buf = s;
    acc->len = (int64_t)need;
    acc->cap = (int64_t)cap;
    return s;
}

const char *osp_str_concat(int64_t n, const char *const *parts) {
    /* Each part's length is measured once (kept for the first 16 parts). */
    size_t lens[16];
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t len = parts[i] ? strlen(parts[i]) : 0;
        if (i < 16) lens[i] = len;
        if (total > SIZE_MAX - 1 - len) osp_fatal_oom();
        total += len;
    }
    char *s = osp_gc_alloc_atomic(total + 1);
    char *p = s;
    for (int64_t i = 0; i < n; i++) {
        if (parts[i] == NULL) continue;
        size_t len = i < 16 ? lens[i] : strlen(parts[i]);
        memcpy(p, parts[i], len);
        p += len;
    }
    *p = '\0';
    return s;
}

int64_t osp_str_cmp(const char *a, const char *b) {
    /* strcmp compares as unsigned char: byte order, as §6.1 requires. */
    int c = strcmp(a ? a : "", b ? b : "");
    return (c > 0) - (c < 0);
}

osp_result *osp_result_ok(osp_word value) {
    osp_result *r = osp_gc_alloc(sizeof *r);
    r->tag = OSP_RESULT_SUCCESS;
    r->value = value;
    r->message = NULL;
    return r;
}

osp_result *osp_result_err(const char *message) {
    osp_result *r = osp_gc_alloc(sizeof *r);
    r->tag = OSP_RESULT_ERROR;
    r->value = 0;
    r->message = message;
    return r;
}
