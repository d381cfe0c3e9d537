/*
 * prof_util.c — environment parsing, label cutting and the JSON writer of the profiler
 * runtime (docs/spec/profiler.md §(a), §(d), §(e)). Plain C, no dependencies: the runtime is
 * linked into every program and does not use cJSON (docs/ARCHITECTURE.md).
 */
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "prof_own_text.h"

/* ---- OSPREY_PROFILE_HZ ------------------------------------------------------------------ */

uint32_t osp_prof__parse_hz(const char *s, bool *invalid, bool *clamped) {
    *invalid = false;
    *clamped = false;
    if (s == NULL || *s == '\0') return OSP_PROF_HZ_DEFAULT;
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    if (*p == '\0') {
        *invalid = true;
        return OSP_PROF_HZ_DEFAULT;
    }
    uint64_t v = 0;
    bool big = false;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') {
            *invalid = true;
            return OSP_PROF_HZ_DEFAULT;
        }
        if (!big) {
            v = v * 10 + (uint64_t)(*p - '0');
            if (v > OSP_PROF_HZ_MAX) big = true; /* keeps scanning for junk; clamps below */
        }
    }
    *clamped = true;
    if (neg) return OSP_PROF_HZ_MIN; /* every negative value (and -0) clamps low */
    if (big) return OSP_PROF_HZ_MAX;
    if (v < OSP_PROF_HZ_MIN) return OSP_PROF_HZ_MIN;
    *clamped = false;
    return (uint32_t)v;
}

/* `osprey profiler: OSPREY_PROFILE_HZ="<value, escaped>` followed by `tail`, one write. */
static void warn_hz(int fd, const char *value, const char *tail_text) {
    static const char head[] = "osprey profiler: OSPREY_PROFILE_HZ=\"";
    char tail[64];
    size_t tail_len = strlen(tail_text) < sizeof tail - 1 ? strlen(tail_text) : sizeof tail - 1;
    memcpy(tail, tail_text, tail_len);
    tail[tail_len] = '\0';
    char line[512];
    size_t n = 0;
    memcpy(line, head, sizeof head - 1);
    n = sizeof head - 1;
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (n + 4 + tail_len + 1 > sizeof line) { /* very long value: elide the rest */
            memcpy(line + n, "...", 3);
            n += 3;
            break;
        }
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            line[n++] = '\\';
            line[n++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            line[n++] = '\\';
            line[n++] = 'x';
            line[n++] = hex[c >> 4];
            line[n++] = hex[c & 15];
        } else {
            line[n++] = (char)c;
        }
    }
    memcpy(line + n, tail, tail_len);
    n += tail_len;
    ssize_t w;
    do w = write(fd, line, n);
    while (w < 0 && errno == EINTR);
}

void osp_prof__warn_bad_hz(int fd, const char *value) {
    warn_hz(fd, value, "\" is not an integer; using 997\n");
}

void osp_prof__warn_hz_range(int fd, const char *value, uint32_t used) {
    char tail[64] = "\" is out of range 10..10000; using ";
    size_t n = strlen(tail);
    char digits[12];
    size_t k = 0;
    do digits[k++] = (char)('0' + used % 10);
    while ((used /= 10) != 0 && k < sizeof digits);
    while (k > 0) tail[n++] = digits[--k];
    tail[n++] = '\n';
    tail[n] = '\0';
    warn_hz(fd, value, tail);
}

/* ---- paths and labels ------------------------------------------------------------------- */

int osp_prof__absolute_path(const char *path, char *out, size_t cap) {
    size_t plen = strlen(path);
    if (path[0] == '/') {
        if (plen > OSP_PROF_PATH_MAX || plen + 1 > cap) return ENAMETOOLONG;
        memcpy(out, path, plen + 1);
        return 0;
    }
    char cwd[OSP_PROF_PATH_MAX + 2];
    if (getcwd(cwd, sizeof cwd) == NULL) return errno == ERANGE ? ENAMETOOLONG : errno;
    size_t clen = strlen(cwd);
    /* Drop a leading "./" (repeatedly) so the recorded path reads naturally. */
    while (plen >= 2 && path[0] == '.' && path[1] == '/') {
        path += 2;
        plen -= 2;
        while (plen > 0 && path[0] == '/') path++, plen--;
    }
    bool slash = clen > 0 && cwd[clen - 1] == '/';
    size_t total = clen + (slash ? 0 : 1) + plen;
    if (total > OSP_PROF_PATH_MAX || total + 1 > cap) return ENAMETOOLONG;
    memcpy(out, cwd, clen);
    size_t n = clen;
    if (!slash) out[n++] = '/';
    memcpy(out + n, path, plen);
    out[n + plen] = '\0';
    return 0;
}

/* Length of a valid UTF-8 sequence starting at s (at most `avail` bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t avail) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c == 0xE0)
        len = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC)
        len = 3;
    else if (c == 0xED)
        len = 3, hi = 0x9F; /* no surrogates */
    else if (c >= 0xEE && c <= 0xEF)
        len = 3;
    else if (c == 0xF0)
        len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3)
        len = 4;
    else if (c == 0xF4)
        len = 4, hi = 0x8F; /* <= U+10FFFF */
    else
        return 0;
    if (avail < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

size_t osp_prof__cut_label(const char *label, char *out) {
    if (label == NULL) label = "";
    const unsigned char *s = (const unsigned char *)label;
    size_t len = strlen(label), n = 0;
    while (n < len) {
        size_t k = utf8_seq(s + n, len - n);
        if (k == 0) k = 1; /* an invalid byte stands alone; the writer replaces it */
        if (n + k > OSP_PROF_LABEL_MAX) break;
        n += k;
    }
    memcpy(out, label, n);
    out[n] = '\0';
    return n;
}

/* ---- JSON writer ------------------------------------------------------------------------- */

static void out_drain(struct osp_prof_out *o) {
    if (o->err || o->fd < 0) return;
    size_t done = 0;
    while (done < o->len) {
        ssize_t w = write(o->fd, o->buf + done, o->len - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            o->err = errno;
            return;
        }
        if (w == 0) {
            o->err = EIO;
            return;
        }
        done += (size_t)w;
    }
    o->len = 0;
}

void osp_prof__out_bytes(struct osp_prof_out *o, const void *p, size_t n) {
    const char *c = p;
    while (n > 0 && !o->err) {
        if (o->len == o->cap) {
            if (o->fd < 0) {
                o->err = ENOSPC;
                return;
            }
            out_drain(o);
            continue;
        }
        size_t k = o->cap - o->len;
        if (k > n) k = n;
        memcpy(o->buf + o->len, c, k);
        o->len += k;
        c += k;
        n -= k;
    }
}

void osp_prof__out_str(struct osp_prof_out *o, const char *s) {
    osp_prof__out_bytes(o, s, strlen(s));
}

void osp_prof__out_u64(struct osp_prof_out *o, uint64_t v) {
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    osp_prof__out_bytes(o, tmp + i, sizeof tmp - i);
}

void osp_prof__out_i64(struct osp_prof_out *o, int64_t v) {
    if (v < 0) {
        osp_prof__out_bytes(o, "-", 1);
        osp_prof__out_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        osp_prof__out_u64(o, (uint64_t)v);
    }
}

void osp_prof__out_json_string(struct osp_prof_out *o, const char *str, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    osp_prof__out_bytes(o, "\"", 1);
    size_t run = 0; /* start of the pending run of bytes copied verbatim */
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        const char *esc = NULL;
        char ubuf[6];
        size_t adv = 1;
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c < 0x20) {
            ubuf[0] = '\\', ubuf[1] = 'u', ubuf[2] = '0', ubuf[3] = '0';
            ubuf[4] = hex[c >> 4], ubuf[5] = hex[c & 15];
        } else if (c >= 0x80) {
            adv = utf8_seq(s + i, n - i);
            if (adv == 0) {
                esc = "\xEF\xBF\xBD"; /* U+FFFD for each byte that is not valid UTF-8 */
                adv = 1;
            } else {
                i += adv;
                continue;
            }
        } else {
            i++;
            continue;
        }
        osp_prof__out_bytes(o, s + run, i - run);
        if (esc)
            osp_prof__out_str(o, esc);
        else
            osp_prof__out_bytes(o, ubuf, 6);
        i += adv;
        run = i;
    }
    osp_prof__out_bytes(o, s + run, n - run);
    osp_prof__out_bytes(o, "\"", 1);
}

int osp_prof__out_flush(struct osp_prof_out *o) {
    out_drain(o);
    return o->err;
}

#endif /* OSP_PROF_SAMPLER */
