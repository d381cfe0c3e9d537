/*
 * HTTP runtime (docs/spec/language.md §9.7): the byte-level parsing of http_parse.c, and the
 * server and client of http.c over raw loopback sockets — what an Osprey program cannot
 * produce or see: exact reply bytes and reason phrases, a request that never completes
 * (408), a client that closes early, replies that are empty (-7), not HTTP (-8), chunked or
 * cut short by the client's timeout. Every server binds 127.0.0.1 on a port the kernel
 * reported free, and every test stops its server.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "http_parse.h"
#include "rt_internal.h"

#define STR(w) ((const char *)(uintptr_t)(w))

/* ---- http_parse.c ------------------------------------------------------------------------- */

static int head(const char *req, osp_http_head *h, char *hdrs) {
    return osp_httpp_request_head(req, strlen(req), h, hdrs);
}

static void test_parse_request_head(void **state) {
    (void)state;
    char hdrs[512];
    osp_http_head h;
    const char *req = "POST /a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nX-E:\r\n\r\nabc";
    assert_int_equal(head(req, &h, hdrs), OSP_HTTPP_OK);
    assert_int_equal(h.method_len, 4);
    assert_memory_equal(req + h.method_off, "POST", 4);
    assert_int_equal(h.target_len, 6);
    assert_memory_equal(req + h.target_off, "/a?b=1", 6);
    assert_int_equal(h.content_length, 3);
    assert_int_equal(h.head_len, strlen(req) - 3);
    assert_int_equal(h.headers_len, strlen("Host: x\r\nContent-Length: 3\r\nX-E:"));
    assert_memory_equal(hdrs, "Host: x\r\nContent-Length: 3\r\nX-E:", h.headers_len);
    /* bare LF line ends; no headers at all */
    assert_int_equal(head("GET / HTTP/1.0\nA: b\n\n", &h, hdrs), OSP_HTTPP_OK);
    assert_memory_equal(hdrs, "A: b", h.headers_len);
    assert_int_equal(head("GET / HTTP/1.1\r\n\r\n", &h, hdrs), OSP_HTTPP_OK);
    assert_int_equal(h.headers_len, 0);
    /* incomplete */
    assert_int_equal(head("", &h, hdrs), OSP_HTTPP_NEED_MORE);
    assert_int_equal(head("GET / HTTP/1.1\r\nHost: x\r\n", &h, hdrs), OSP_HTTPP_NEED_MORE);
    assert_int_equal(head("GET / HT", &h, hdrs), OSP_HTTPP_NEED_MORE);
    /* malformed */
    static const char *const bad[] = {
        "GET /a b HTTP/1.1\r\n\r\n",
        "GET / HTTP/2.0\r\n\r\n",
        "GET  / HTTP/1.1\r\n\r\n",
        "/ HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1 x\r\n\r\n",
        "GARBAGE\r\n\r\n",
        "GET / HTTP/1.1\r\nNoColon\r\n\r\n",
        "GET / HTTP/1.1\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",
        "GET / HT\rTP",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(head(bad[i], &h, hdrs), OSP_HTTPP_MALFORMED);
    assert_int_equal(
        head("GET / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length:  2 \r\n\r\n", &h, hdrs),
        OSP_HTTPP_OK);
    assert_int_equal(head("PUT / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n", &h, hdrs),
                     OSP_HTTPP_TRANSFER_ENCODING);
}

static void test_parse_reply(void **state) {
    (void)state;
    assert_int_equal(osp_httpp_status("", 0), -7);
    assert_int_equal(osp_httpp_status("HTTP/1.1 200 OK\r\n", 17), 200);
    assert_int_equal(osp_httpp_status("HTTP/1.0 404", 12), 404);
    assert_int_equal(osp_httpp_status("HTTP/2 200 OK\r\n", 15), -8);
    assert_int_equal(osp_httpp_status("HTTP/1.1 20x OK", 15), -8);
    assert_int_equal(osp_httpp_status("HTTP/1.1 2000", 13), -8);
    assert_int_equal(osp_httpp_status("hello", 5), -8);
    const char *r =
        "HTTP/1.1 200 OK\r\nContent-Type:  \ttext/plain\r\nX-A: 1\r\nx-a: 2\r\n\r\nbody";
    size_t off, len;
    assert_true(osp_httpp_header(r, strlen(r), "CONTENT-type", &off, &len));
    assert_int_equal(len, 10);
    assert_memory_equal(r + off, "text/plain", 10);
    assert_true(osp_httpp_header(r, strlen(r), "x-A", &off, &len));
    assert_memory_equal(r + off, "1", len);
    assert_false(osp_httpp_header(r, strlen(r), "body", &off, &len));
    char out[256];
    assert_true(osp_httpp_body(r, strlen(r), out, &len));
    assert_memory_equal(out, "body", len);
    assert_int_equal(len, 4);
    /* chunked, with an extension and trailers; then cut short inside a chunk */
    const char *c = "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
                    "5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nT: 1\r\n\r\n";
    assert_true(osp_httpp_body(c, strlen(c), out, &len));
    assert_int_equal(len, 11);
    assert_memory_equal(out, "hello world", 11);
    const char *cut = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n01234";
    assert_true(osp_httpp_body(cut, strlen(cut), out, &len));
    assert_int_equal(len, 5);
    const char *badc = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    assert_false(osp_httpp_body(badc, strlen(badc), out, &len));
    assert_false(osp_httpp_body("HTTP/1.1 200 OK\r\nA: b\r\n", 24, out, &len)); /* no blank line */
    assert_string_equal(osp_httpp_reason(413), "Content Too Large");
    assert_string_equal(osp_httpp_reason(422), "Unprocessable Content");
    assert_string_equal(osp_httpp_reason(418), "Error");
}

/* ---- a server and raw clients ------------------------------------------------------------- */

/* A handler closure: word 0 the code pointer, as generated code builds one. */
typedef osp_http_response *(*handler_code)(void *, const char *, const char *, const char *,
                                           const char *);
typedef struct {
    handler_code code;
} closure;

static osp_http_response *echo_handler(void *self, const char *method, const char *target,
                                       const char *headers, const char *body) {
    (void)self;
    (void)headers;
    osp_http_response *r = osp_gc_alloc(sizeof *r);
    r->status = strcmp(target, "/created") == 0 ? 201 : strcmp(target, "/odd") == 0 ? 418 : 200;
    r->headers = "X-A: 1\r\n";
    r->content_type = "text/plain";
    r->partial_body = osp_str_cat(method, body);
    return r;
}
static closure echo = {echo_handler};

/* A port nobody listens on right now (the kernel's pick for port 0). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

/* A listening server on a free port; its id, the port in *port. */
static int64_t start_server(int *port) {
    for (int tries = 0; tries < 20; tries++) {
        *port = free_port();
        int64_t s = osp_http_create_server(*port, "127.0.0.1");
        assert_true(s > 0);
        int64_t rc = osp_http_listen(s, &echo);
        if (rc == 0) return s;
        assert_int_equal(rc, -4); /* taken in between: try another */
    }
    fail_msg("no free port");
    return -1;
}

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Everything the peer sends until it closes (NUL-terminated, malloc'd). */
static char *read_all(int fd) {
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    for (;;) {
        ssize_t n = read(fd, b + len, cap - len - 1);
        if (n <= 0) break;
        len += (size_t)n;
    }
    b[len] = 0;
    return b;
}

static char *exchange(int port, const char *request, bool half_close) {
    int fd = dial(port);
    assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
    if (half_close) shutdown(fd, SHUT_WR);
    char *reply = read_all(fd);
    close(fd);
    return reply;
}

static void test_server_replies(void **state) {
    (void)state;
    int port;
    int64_t s = start_server(&port);
    char *r = exchange(port, "POST /created HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", false);
    assert_string_equal(r, "HTTP/1.1 201 Created\r\nX-A: 1\r\nContent-Length: 6\r\n"
                           "Connection: close\r\n\r\nPOSThi");
    free(r);
    r = exchange(port, "GET /odd HTTP/1.1\r\n\r\n", false);
    assert_string_equal(r, "HTTP/1.1 418 Error\r\nX-A: 1\r\nContent-Length: 3\r\n"
                           "Connection: close\r\n\r\nGET");
    free(r);
    r = exchange(port, "GET /a b HTTP/1.1\r\n\r\n", false);
    assert_string_equal(r, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                           "Content-Length: 34\r\nConnection: close\r\n\r\n"
                           "{\"error\":\"malformed HTTP request\"}");
    free(r);
    /* the client stops sending halfway: malformed */
    r = exchange(port, "GET / HTTP/1.1\r\nHost:", true);
    assert_non_null(strstr(r, "400 Bad Request"));
    free(r);
    /* a body shorter than its Content-Length, then the client closes its side */
    r = exchange(port, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", true);
    assert_non_null(strstr(r, "{\"error\":\"malformed HTTP request\"}"));
    free(r);
    /* a connection closed without a byte gets nothing, and the server goes on */
    close(dial(port));
    r = exchange(port, "DELETE /x HTTP/1.1\r\n\r\n", false);
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
    free(r);
    /* too large: a head over 32 KiB, a declared body over 1 MiB */
    char *big = malloc(40000);
    memset(big, 'a', 39999);
    big[39999] = 0;
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    r = exchange(port, big, false);
    assert_non_null(strstr(r, "HTTP/1.1 413 Content Too Large\r\n"));
    assert_non_null(strstr(r, "{\"error\":\"HTTP request too large\"}"));
    free(r);
    free(big);
    r = exchange(port, "PUT / HTTP/1.1\r\nContent-Length: 1048577\r\n\r\n", false);
    assert_non_null(strstr(r, "413 Content Too Large"));
    free(r);
    assert_int_equal(osp_http_stop_server(s), 0);
}

static void test_server_request_timeout(void **state) {
    (void)state;
    int port;
    int64_t s = start_server(&port);
    int fd = dial(port);
    assert_int_equal(write(fd, "GET / HTTP/1.1\r\n", 16), 16); /* and nothing more */
    char *r = read_all(fd);                                    /* after the server's 5 s */
    close(fd);
    assert_string_equal(r, "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                           "Content-Length: 34\r\nConnection: close\r\n\r\n"
                           "{\"error\":\"HTTP request timed out\"}");
    free(r);
    assert_int_equal(osp_http_stop_server(s), 0);
    /* the port is free again: a new server binds it */
    int64_t again = osp_http_create_server(port, "127.0.0.1");
    assert_int_equal(osp_http_listen(again, &echo), 0);
    assert_int_equal(osp_http_stop_server(again), 0);
}

/* ---- the client against a raw server ------------------------------------------------------ */

typedef struct {
    int listen_fd;
    const char *reply; /* sent after reading the request head; NULL: close at once */
    bool hold;         /* keep the connection open after the reply (until the client closes) */
    char request[4096];
} raw_server;

static void *raw_server_main(void *arg) {
    raw_server *rs = arg;
    int fd = accept(rs->listen_fd, NULL, NULL);
    size_t len = 0;
    while (len < sizeof rs->request - 1 && !strstr(rs->request, "\r\n\r\n")) {
        ssize_t n = read(fd, rs->request + len, sizeof rs->request - 1 - len);
        if (n <= 0) break;
        len += (size_t)n;
        rs->request[len] = 0;
    }
    if (rs->reply)
        assert_int_equal(write(fd, rs->reply, strlen(rs->reply)), (ssize_t)strlen(rs->reply));
    if (rs->hold) {
        char b[64];
        while (read(fd, b, sizeof b) > 0) {
        }
    }
    close(fd);
    return NULL;
}

/* Serve one connection with `reply`; the client's request, status and (kept) reply. */
static int64_t raw_exchange(const char *reply, bool hold, int64_t timeout_ms, char *request,
                            int64_t *kept) {
    raw_server rs = {.reply = reply, .hold = hold};
    rs.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(rs.listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(rs.listen_fd, 4), 0);
    socklen_t sl = sizeof sa;
    getsockname(rs.listen_fd, (struct sockaddr *)&sa, &sl);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/base", ntohs(sa.sin_port));
    int64_t c = osp_http_create_client(url, timeout_ms);
    assert_true(c > 0);
    pthread_t t;
    pthread_create(&t, NULL, raw_server_main, &rs);
    int64_t status;
    if (kept) {
        osp_rres r = osp_http_get_response(c, "/p", "X-One: 1\r\nX-Two: 2");
        status = r.tag == OSP_RESULT_SUCCESS ? osp_http_response_status((int64_t)r.word) : -100;
        *kept = r.tag == OSP_RESULT_SUCCESS ? (int64_t)r.word : -1;
    } else {
        status = osp_http_post(c, "/p", "body!", "");
    }
    pthread_join(t, NULL);
    close(rs.listen_fd);
    osp_http_close_client(c);
    if (request) strcpy(request, rs.request);
    return status;
}

static void test_client(void **state) {
    (void)state;
    char req[4096];
    assert_int_equal(raw_exchange("HTTP/1.1 201 Created\r\n\r\n", false, 5000, req, NULL), 201);
    assert_string_equal(req, "POST /p HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                             "Content-Length: 5\r\n\r\nbody!");
    assert_int_equal(raw_exchange(NULL, false, 5000, NULL, NULL), -7);
    assert_int_equal(raw_exchange("SSH-2.0-OpenSSH\r\n", false, 5000, NULL, NULL), -8);
    /* a server that never closes: the reply is what arrived before the timeout */
    int64_t id;
    assert_int_equal(
        raw_exchange("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true, 300, req, &id), 200);
    assert_string_equal(req, "GET /p HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                             "X-One: 1\r\nX-Two: 2\r\n\r\n");
    assert_string_equal(STR(osp_http_response_body(id).word), "ok");
    assert_int_equal(osp_http_response_free(id).tag, OSP_RESULT_SUCCESS);
    /* chunked */
    const char *chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Y:   z\r\n\r\n"
                          "4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n";
    assert_int_equal(raw_exchange(chunked, false, 5000, NULL, &id), 200);
    assert_string_equal(STR(osp_http_response_body(id).word), "Wikipedia");
    assert_string_equal(STR(osp_http_response_header(id, "x-y").word), "z");
    assert_int_equal(osp_http_response_header(id, "x-none").tag, OSP_RESULT_ERROR);
    assert_int_equal(osp_http_response_free(id).tag, OSP_RESULT_SUCCESS);
    assert_int_equal(osp_http_response_free(id).tag, OSP_RESULT_ERROR);
    /* a refused connection */
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", free_port());
    int64_t c = osp_http_create_client(url, 1000);
    assert_int_equal(osp_http_get(c, "/", ""), -5);
    assert_int_equal(osp_http_get_response(c, "/", "").tag, OSP_RESULT_ERROR);
}

int main(void) {
    osp_rt_start(0, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_request_head),
        cmocka_unit_test(test_parse_reply),
        cmocka_unit_test(test_server_replies),
        cmocka_unit_test(test_server_request_timeout),
        cmocka_unit_test(test_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
