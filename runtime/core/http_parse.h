/*
 * http_parse.h — the byte-level parts of the HTTP built-ins (docs/spec/language.md §9.7):
 * the server's request head, and the client's reply (status line, header lookup, body with
 * chunked decoding). Pure functions over a buffer and its length (not NUL-terminated, any
 * bytes), no allocation and no other runtime file, so the libFuzzer target
 * (test/fuzz/http_fuzz.c) links this file alone. Sockets and threads are in http.c.
 */
#ifndef OSP_HTTP_PARSE_H
#define OSP_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a request head is (osp_httpp_request_head). */
enum {
    OSP_HTTPP_NEED_MORE = 0,         /* no blank line yet: read more */
    OSP_HTTPP_OK = 1,                /* a complete, well-formed head */
    OSP_HTTPP_MALFORMED = 2,         /* -> 400 {"error":"malformed HTTP request"} */
    OSP_HTTPP_TRANSFER_ENCODING = 3, /* -> 400 {"error":"unsupported HTTP transfer encoding"} */
};

/* The parts of a request head, as offsets into the buffer that was parsed. */
typedef struct osp_http_head {
    size_t head_len; /* request line and header lines, the blank line included */
    size_t method_off, method_len;
    size_t target_off, target_len;
    uint64_t content_length; /* 0 without a Content-Length header */
    size_t headers_len;      /* bytes written to the caller's `headers` buffer */
} osp_http_head;

/* Largest Content-Length accepted as a number (more digits are malformed). */
#define OSP_HTTPP_MAX_CONTENT_LENGTH ((uint64_t)999999999999999999ULL)

/*
 * Parse the request head at the start of buf[0..len). Lines end with LF, optionally
 * preceded by CR; the first empty line ends the head. The request line is
 * `METHOD SP target SP HTTP/1.<digit>` (method a token, target visible ASCII without
 * spaces); each header line `name: value` (name a token; no continuation lines, no NUL, no
 * bare CR). A `Transfer-Encoding` header gives OSP_HTTPP_TRANSFER_ENCODING; Content-Length
 * must be decimal digits (blanks around allowed), and repeated ones must agree.
 * On OSP_HTTPP_OK fills *h and writes the header lines, joined by "\r\n" with no trailing
 * one, to headers[0..h->headers_len) (`headers` must have room for `len` bytes; it is not
 * NUL-terminated). A head that is not complete within buf returns OSP_HTTPP_NEED_MORE,
 * unless what is there is already malformed.
 */
int osp_httpp_request_head(const char *buf, size_t len, osp_http_head *h, char *headers);

/* Bytes of the reason phrase for `status` (§9.7: 200 OK, 201 Created, 400 Bad Request,
 * 404 Not Found, 405 Method Not Allowed, 408 Request Timeout, 413 Content Too Large,
 * 422 Unprocessable Content, every other status `Error`). Static string. */
const char *osp_httpp_reason(int64_t status);

/*
 * The status code of a reply: buf must start with `HTTP/1.<digit>`, one or more spaces and
 * three digits (then a space, CR, LF or the end). Returns 100–999 as written (000–999), or
 * -8 (§9.7: no `HTTP/1.x` status line); -7 when len is 0 (empty reply).
 */
int64_t osp_httpp_status(const char *buf, size_t len);

/*
 * The value of the first header line of a reply (after its status line, before the blank
 * line or the end of buf) whose name equals `name` (NUL-terminated) ignoring ASCII case:
 * buf[*off, *off + *vlen), blanks (space, tab) after the colon dropped, the line's CR
 * dropped. false if there is none.
 */
bool osp_httpp_header(const char *buf, size_t len, const char *name, size_t *off, size_t *vlen);

/*
 * The body of a reply, after the blank line that ends its head, written to out (room for
 * `len` bytes) with its length in *out_len. With `Transfer-Encoding: chunked` (the header's
 * value contains `chunked`, any case) the chunks are decoded: `<hex size>[;ext]` CRLF
 * data CRLF ... up to the zero-size chunk (trailers ignored); a reply cut short keeps
 * the chunks (and the part of a chunk) that arrived. Returns false when the head never
 * ends (no body) or a chunk size line is not hexadecimal.
 */
bool osp_httpp_body(const char *buf, size_t len, char *out, size_t *out_len);

#endif /* OSP_HTTP_PARSE_H */
