/*
 * HTTP request heads and replies, byte by byte (docs/spec/language.md §9.7); see
 * http_parse.h. Every read is bounded by the buffer's length; nothing allocates.
 */
#include "http_parse.h"

#include <string.h>

static bool is_tchar(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static unsigned char lower(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static bool name_is(const char *s, size_t n, const char *name) {
    size_t k = strlen(name);
    if (n != k) return false;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)s[i]) != lower((unsigned char)name[i])) return false;
    return true;
}

/* The line starting at `at`: its content [at, *end) without CR/LF, and the start of the
 * next line in *next. false when no LF follows within len. */
static bool line_at(const char *buf, size_t len, size_t at, size_t *end, size_t *next) {
    const char *lf = at < len ? memchr(buf + at, '\n', len - at) : NULL;
    if (lf == NULL) return false;
    size_t e = (size_t)(lf - buf);
    *next = e + 1;
    if (e > at && buf[e - 1] == '\r') e--;
    *end = e;
    return true;
}

static bool parse_request_line(const char *s, size_t n, osp_http_head *h, size_t base) {
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)s[i])) i++;
    if (i == 0 || i >= n || s[i] != ' ') return false;
    h->method_off = base;
    h->method_len = i;
    size_t t = ++i;
    while (i < n && (unsigned char)s[i] > ' ' && (unsigned char)s[i] < 0x7F) i++;
    if (i == t || i >= n || s[i] != ' ') return false;
    h->target_off = base + t;
    h->target_len = i - t;
    i++;
    return n - i == 8 && memcmp(s + i, "HTTP/1.", 7) == 0 && s[i + 7] >= '0' && s[i + 7] <= '9';
}

static bool parse_decimal(const char *s, size_t n, uint64_t *v) {
    while (n > 0 && (*s == ' ' || *s == '\t')) s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (n == 0 || n > 18) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return true;
}

int osp_httpp_request_head(const char *buf, size_t len, osp_http_head *h, char *headers) {
    memset(h, 0, sizeof *h);
    size_t end, next;
    if (!line_at(buf, len, 0, &end, &next)) {
        /* an incomplete request line can already be malformed (a NUL, a bare CR) */
        for (size_t i = 0; i < len; i++)
            if (buf[i] == 0 || (buf[i] == '\r' && i + 1 < len)) return OSP_HTTPP_MALFORMED;
        return OSP_HTTPP_NEED_MORE;
    }
    if (memchr(buf, 0, end) || memchr(buf, '\r', end)) return OSP_HTTPP_MALFORMED;
    if (!parse_request_line(buf, end, h, 0)) return OSP_HTTPP_MALFORMED;
    bool transfer_encoding = false, have_length = false;
    uint64_t length = 0;
    size_t out = 0, at = next;
    for (;;) {
        if (!line_at(buf, len, at, &end, &next)) {
            for (size_t i = at; i < len; i++)
                if (buf[i] == 0 || (buf[i] == '\r' && i + 1 < len)) return OSP_HTTPP_MALFORMED;
            return OSP_HTTPP_NEED_MORE;
        }
        if (end == at) break; /* the blank line */
        const char *s = buf + at;
        size_t n = end - at;
        if (memchr(s, 0, n) || memchr(s, '\r', n)) return OSP_HTTPP_MALFORMED;
        size_t i = 0;
        while (i < n && is_tchar((unsigned char)s[i])) i++;
        if (i == 0 || i >= n || s[i] != ':') return OSP_HTTPP_MALFORMED;
        if (name_is(s, i, "transfer-encoding")) transfer_encoding = true;
        if (name_is(s, i, "content-length")) {
            uint64_t v;
            if (!parse_decimal(s + i + 1, n - i - 1, &v)) return OSP_HTTPP_MALFORMED;
            if (have_length && v != length) return OSP_HTTPP_MALFORMED;
            have_length = true;
            length = v;
        }
        if (out > 0) {
            headers[out++] = '\r';
            headers[out++] = '\n';
        }
        memcpy(headers + out, s, n);
        out += n;
        at = next;
    }
    if (transfer_encoding) return OSP_HTTPP_TRANSFER_ENCODING;
    h->head_len = next;
    h->content_length = length;
    h->headers_len = out;
    return OSP_HTTPP_OK;
}

const char *osp_httpp_reason(int64_t status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    default: return "Error";
    }
}

int64_t osp_httpp_status(const char *buf, size_t len) {
    if (len == 0) return -7;
    if (len < 8 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[7] < '0' || buf[7] > '9') return -8;
    size_t i = 8;
    if (i >= len || buf[i] != ' ') return -8;
    while (i < len && buf[i] == ' ') i++;
    if (len - i < 3) return -8;
    int64_t code = 0;
    for (int k = 0; k < 3; k++) {
        char c = buf[i + (size_t)k];
        if (c < '0' || c > '9') return -8;
        code = code * 10 + (c - '0');
    }
    i += 3;
    if (i < len && buf[i] != ' ' && buf[i] != '\r' && buf[i] != '\n') return -8;
    return code;
}

/* Where the reply's body starts (after its blank line), or false when the head never ends.
 * Calls `each(line, n, ctx)` for every header line on the way (NULL: none). */
static bool scan_head(const char *buf, size_t len, size_t *body,
                      bool (*each)(const char *, size_t, void *), void *ctx) {
    size_t end, next;
    if (!line_at(buf, len, 0, &end, &next)) return false;
    size_t at = next;
    for (;;) {
        if (!line_at(buf, len, at, &end, &next)) {
            /* the last line, cut off without LF, is still a header line to look at */
            if (each && at < len) each(buf + at, len - at, ctx);
            return false;
        }
        if (end == at) {
            *body = next;
            return true;
        }
        if (each && each(buf + at, end - at, ctx)) return false;
        at = next;
    }
}

typedef struct {
    const char *name;
    const char *buf;
    size_t off, vlen;
    bool found;
} header_query;

static bool match_header(const char *line, size_t n, void *ctx) {
    header_query *q = ctx;
    const char *colon = memchr(line, ':', n);
    if (colon == NULL || !name_is(line, (size_t)(colon - line), q->name)) return false;
    const char *v = colon + 1, *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t')) v++;
    if (e > v && e[-1] == '\r') e--;
    q->off = (size_t)(v - q->buf);
    q->vlen = (size_t)(e - v);
    q->found = true;
    return true; /* the first one wins: stop */
}

bool osp_httpp_header(const char *buf, size_t len, const char *name, size_t *off, size_t *vlen) {
    header_query q = {name, buf, 0, 0, false};
    size_t body;
    scan_head(buf, len, &body, match_header, &q);
    if (!q.found) return false;
    *off = q.off;
    *vlen = q.vlen;
    return true;
}

static bool contains_chunked(const char *s, size_t n) {
    for (size_t i = 0; i + 7 <= n; i++)
        if (name_is(s + i, 7, "chunked")) return true;
    return false;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool osp_httpp_body(const char *buf, size_t len, char *out, size_t *out_len) {
    size_t at;
    *out_len = 0;
    if (!scan_head(buf, len, &at, NULL, NULL)) return false;
    size_t off, vlen;
    if (!osp_httpp_header(buf, len, "transfer-encoding", &off, &vlen) ||
        !contains_chunked(buf + off, vlen)) {
        memcpy(out, buf + at, len - at);
        *out_len = len - at;
        return true;
    }
    size_t o = 0;
    while (at < len) {
        uint64_t size = 0;
        size_t digits = 0;
        while (at < len && hex_value(buf[at]) >= 0) {
            if (size > (UINT64_MAX >> 4)) return false;
            size = size * 16 + (uint64_t)hex_value(buf[at]);
            at++;
            digits++;
        }
        if (digits == 0) return false;
        /* chunk extensions and the line end */
        const char *lf = memchr(buf + at, '\n', len - at);
        if (lf == NULL) break; /* cut short inside the size line */
        char c = buf[at];
        if (buf + at < lf && c != ';' && c != '\r' && c != ' ' && c != '\t') return false;
        at = (size_t)(lf - buf) + 1;
        if (size == 0) break; /* the last chunk; trailers are ignored */
        size_t take = size < len - at ? (size_t)size : len - at;
        memcpy(out + o, buf + at, take);
        o += take;
        at += take;
        if (take < size) break; /* cut short inside the data */
        if (at < len && buf[at] == '\r') at++;
        if (at < len && buf[at] == '\n') at++;
    }
    *out_len = o;
    return true;
}
