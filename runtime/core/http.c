/*
 * HTTP built-ins (docs/spec/language.md §9.7): loopback-grade HTTP/1.1 over IPv4 TCP.
 * Byte-level parsing is http_parse.c; this file owns sockets, threads and the id tables.
 *
 * Ids. Servers and clients share one counter from 1 (`endpoints`, never reused); a server
 * must get an id below 100 (else -3), clients may go on past it. Kept replies
 * (httpGetResponse) have their own table, ids 1–1023, the lowest free one given out.
 *
 * Server thread. httpListen binds and listens on the calling thread, then starts the
 * server as a fiber (osp_fiber_spawn_thread: the next fiber/channel id, registered with the
 * profiler as that fiber with label `fiber`, with a copy of the caller's effect handlers), so
 * a profiled server shows its handler's frames under the fiber. The fiber accepts one
 * connection at a time and serves one request on it: head ≤ 32 KiB, whole request ≤ 1 MiB,
 * 5 s from accept for all of it to arrive. The handler (a closure of the Osprey type
 * (string, string, string, string) -> HttpResponse) runs on that thread. Waiting for a
 * connection or for bytes is a profiler blocking region and opens the thread's process
 * delivery gate (§16.8), like every other wait of the runtime.
 *
 * Stopping. httpStopServer sets `stop` and writes a byte to the server's wake pipe; the
 * server finishes the connection in hand, closes its listening socket and ends; the caller
 * waits for the fiber (osp_fiber_wait). Called from the handler itself it only sets `stop`.
 *
 * Client. Each request is one connection: connect (the client's timeout applies to it),
 * send, read until the server closes or timeoutMs passes without data (timeout 0: no
 * limit), close. `https://` clients are accepted but this runtime has no TLS: their requests
 * give -11. Every descriptor is close-on-exec, so spawnProcess children inherit none.
 *
 * Locks: `table_lock` guards both id tables; each server's `lock` guards its state. No
 * thread holds two at once, and none is held across a wait or a handler call.
 *
 * Windows (mingw) and Wasm: no POSIX sockets here; every built-in fails cleanly (the
 * documented failure value) — see the end of the file.
 */
#define _GNU_SOURCE /* accept4, pipe2, MSG_NOSIGNAL */
#include "rt_internal.h"

#include <string.h>

#if !defined(_WIN32) && !defined(__wasi__)

#include "http_parse.h"
#include "osp_prof.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
    SERVER_ID_LIMIT = 100,   /* server ids are 1..99 (§9.7) */
    REPLY_IDS = 1024,        /* kept replies: 1..1023 */
    HEAD_LIMIT = 32 << 10,   /* request head: 32 KiB */
    REQUEST_LIMIT = 1 << 20, /* whole request: 1 MiB */
    REQUEST_TIME_MS = 5000,  /* for the whole request to arrive */
    REPLY_SEND_MS = 5000,    /* for the server's reply to be taken by the client */
    LISTEN_BACKLOG = 128,
};
#define CLIENT_REPLY_LIMIT ((size_t)256 << 20) /* a client stops reading after 256 MiB */

enum { KIND_SERVER = 1, KIND_CLIENT = 2 };

typedef osp_http_response *(*handler_fn)(void *closure, const char *method, const char *target,
                                         const char *headers, const char *body);

typedef struct http_server {
    int64_t id;
    int port;
    const char *address; /* Osprey heap copy */
    pthread_mutex_t lock;
    bool listening; /* httpListen succeeded and the fiber has not ended */
    bool stop;      /* httpStopServer asked the fiber to end */
    int listen_fd;
    int wake[2]; /* wake[1] is written by httpStopServer; the fiber polls wake[0] */
    int64_t fiber;
    osp_closure handler;
} http_server;

typedef struct http_client {
    const char *host; /* Osprey heap copy */
    int port;
    int64_t timeout_ms; /* 0: no limit */
    bool tls;
} http_client;

typedef struct endpoint {
    int kind;
    void *object; /* http_server * or http_client * (Osprey heap) */
} endpoint;

typedef struct http_reply {
    int64_t status;
    const char *data; /* the whole reply as received (Osprey heap, NUL after len) */
    size_t len;
} http_reply;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static endpoint *endpoints; /* [endpoints_cap], uncollectable: keeps the objects alive */
static size_t endpoints_cap;
static int64_t next_id = 1;
static http_reply **replies; /* [REPLY_IDS], uncollectable */

/* ---- time and waiting ---------------------------------------------------------------- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * poll(2) as a blocking region of the calling thread (profiler, process gate); EINTR is
 * retried against the same deadline. timeout_ms < 0 waits without limit. Returns poll's
 * result (0 on timeout).
 */
static int wait_fds(struct pollfd *fds, nfds_t n, int64_t timeout_ms) {
    int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    osp_gate_block_begin();
    osp_prof_block_begin();
    int rc;
    for (;;) {
        int64_t left = deadline < 0 ? -1 : deadline - now_ms();
        if (deadline >= 0 && left < 0) left = 0;
        rc = poll(fds, n, left > INT32_MAX ? INT32_MAX : (int)left);
        if (rc >= 0 || errno != EINTR) break;
    }
    osp_prof_block_end();
    osp_gate_block_end();
    return rc;
}

/* Write all of s[0..n) to a socket; each wait for room is at most `timeout_ms` (< 0: no
 * limit). false on error or timeout. Never raises SIGPIPE. */
static bool send_all(int fd, const char *s, size_t n, int64_t timeout_ms) {
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            s += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {fd, POLLOUT, 0};
            if (wait_fds(&p, 1, timeout_ms) <= 0) return false;
            continue;
        }
        return false;
    }
    return true;
}

/* ---- a growable byte buffer (malloc) ---------------------------------------------------- */

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void buf_reserve(buf *b, size_t more) {
    if (b->cap - b->len >= more) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < more) {
        if (cap > SIZE_MAX / 2) osp_fatal_oom();
        cap *= 2;
    }
    char *np = realloc(b->p, cap);
    if (np == NULL) osp_fatal_oom();
    b->p = np;
    b->cap = cap;
}

static void buf_put(buf *b, const char *s, size_t n) {
    buf_reserve(b, n);
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void buf_puts(buf *b, const char *s) {
    buf_put(b, s, strlen(s));
}

/* ---- the id tables -------------------------------------------------------------------- */

/* Register `object` under the next id; returns it. */
static int64_t endpoint_add(int kind, void *object) {
    osp_rt_heap_init();
    pthread_mutex_lock(&table_lock);
    int64_t id = next_id++;
    if ((size_t)id >= endpoints_cap) {
        size_t cap = endpoints_cap ? endpoints_cap * 2 : 128;
        endpoint *ne = GC_MALLOC_UNCOLLECTABLE(cap * sizeof *ne);
        if (ne == NULL) osp_fatal_oom();
        if (endpoints_cap) memcpy(ne, endpoints, endpoints_cap * sizeof *ne);
        if (endpoints) GC_FREE(endpoints);
        endpoints = ne;
        endpoints_cap = cap;
    }
    endpoints[id] = (endpoint){kind, object};
    pthread_mutex_unlock(&table_lock);
    return id;
}

static void *endpoint_get(int64_t id, int kind) {
    void *o = NULL;
    pthread_mutex_lock(&table_lock);
    if (id >= 1 && (size_t)id < endpoints_cap && endpoints[id].kind == kind)
        o = endpoints[id].object;
    pthread_mutex_unlock(&table_lock);
    return o;
}

/* The next id, which must be a server's (< 100): -3 without taking it when none is left. */
static int64_t server_id_take(void) {
    pthread_mutex_lock(&table_lock);
    bool room = next_id < SERVER_ID_LIMIT;
    pthread_mutex_unlock(&table_lock);
    return room ? 0 : -3;
}

/* ---- server --------------------------------------------------------------------------- */

int64_t osp_http_create_server(int64_t port, const char *address) {
    if (port < 1 || port > 65535) return -1;
    if (server_id_take() != 0) return -3;
    if (address == NULL) address = "";
    http_server *s = osp_gc_alloc(sizeof *s);
    s->port = (int)port;
    s->address = osp_str_dup_n(address, strlen(address));
    s->listen_fd = s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->lock, NULL);
    int64_t id = endpoint_add(KIND_SERVER, s);
    if (id >= SERVER_ID_LIMIT) {
        /* a client took the last id between the check and here */
        pthread_mutex_lock(&table_lock);
        endpoints[id] = (endpoint){0, NULL};
        pthread_mutex_unlock(&table_lock);
        return -3;
    }
    s->id = id;
    return id;
}

static void reply_error(int fd, int64_t status, const char *json) {
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %lld %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     (long long)status, osp_httpp_reason(status), strlen(json));
    if (n > 0 && send_all(fd, head, (size_t)n, REPLY_SEND_MS))
        send_all(fd, json, strlen(json), REPLY_SEND_MS);
}

/*
 * End a connection: FIN after the reply, then (with `drain`) read and discard what the
 * client still sends until it closes, for at most 1 s and 4 MiB, so that closing with
 * unread bytes does not reset the connection and destroy the reply before the client has
 * read it (an early 413 while a large body is still arriving).
 */
static void finish(int fd, bool drain) {
    shutdown(fd, SHUT_WR);
    int64_t deadline = now_ms() + 1000;
    size_t discarded = 0;
    char sink[4096];
    while (drain && discarded < ((size_t)4 << 20)) {
        int64_t left = deadline - now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || wait_fds(&p, 1, left) <= 0) break;
        ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (n <= 0) break;
        discarded += (size_t)n;
    }
    close(fd);
}

static const char *S(const char *s) {
    return s ? s : "";
}

/* One request on connection `fd`: read, check, call the handler, reply. */
static void serve_connection(http_server *s, int fd) {
    int64_t deadline = now_ms() + REQUEST_TIME_MS;
    buf in = {0};
    osp_http_head h;
    char *headers = NULL;
    int state = OSP_HTTPP_NEED_MORE;
    size_t need = 0;    /* once the head is parsed: head + body bytes */
    bool drain = false; /* replied before reading the whole request */
    for (;;) {
        if (state == OSP_HTTPP_OK && in.len >= need) break;
        int64_t left = deadline - now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || wait_fds(&p, 1, left) == 0) {
            reply_error(fd, 408, "{\"error\":\"HTTP request timed out\"}");
            goto done;
        }
        buf_reserve(&in, 16 << 10);
        ssize_t n = recv(fd, in.p + in.len, in.cap - in.len, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (n <= 0) {
            /* the client closed (or the connection broke) before a whole request */
            if (in.len > 0) reply_error(fd, 400, "{\"error\":\"malformed HTTP request\"}");
            goto done;
        }
        /* the head is parsed again only when a line may have ended (or gone bad): a client
         * trickling bytes does not make the server rescan it for each one */
        const char *fresh = in.p + in.len;
        bool worth = memchr(fresh, '\n', (size_t)n) || memchr(fresh, '\r', (size_t)n) ||
                     memchr(fresh, 0, (size_t)n);
        in.len += (size_t)n;
        if (state == OSP_HTTPP_NEED_MORE && !worth && in.len <= HEAD_LIMIT) continue;
        if (state == OSP_HTTPP_NEED_MORE) {
            free(headers);
            headers = malloc(in.len ? in.len : 1);
            if (headers == NULL) osp_fatal_oom();
            state = osp_httpp_request_head(in.p, in.len, &h, headers);
            if (state == OSP_HTTPP_NEED_MORE && in.len > HEAD_LIMIT) {
                reply_error(fd, 413, "{\"error\":\"HTTP request too large\"}");
                drain = true;
                goto done;
            }
            if (state == OSP_HTTPP_MALFORMED) {
                reply_error(fd, 400, "{\"error\":\"malformed HTTP request\"}");
                drain = true;
                goto done;
            }
            if (state == OSP_HTTPP_TRANSFER_ENCODING) {
                reply_error(fd, 400, "{\"error\":\"unsupported HTTP transfer encoding\"}");
                drain = true;
                goto done;
            }
            if (state == OSP_HTTPP_OK) {
                if (h.head_len > HEAD_LIMIT ||
                    h.content_length > (uint64_t)REQUEST_LIMIT - h.head_len) {
                    reply_error(fd, 413, "{\"error\":\"HTTP request too large\"}");
                    drain = true;
                    goto done;
                }
                need = h.head_len + (size_t)h.content_length;
            }
        }
    }
    drain = in.len > need; /* bytes beyond the request (pipelining) stay unread */
    const char *method = osp_str_dup_n(in.p + h.method_off, h.method_len);
    const char *target = osp_str_dup_n(in.p + h.target_off, h.target_len);
    const char *hdrs = osp_str_dup_n(headers, h.headers_len);
    const char *body = osp_str_dup_n(in.p + h.head_len, (size_t)h.content_length);
    free(headers);
    headers = NULL;
    free(in.p);
    in = (buf){0};
    handler_fn code = *(handler_fn *)s->handler;
    osp_http_response *r = code(s->handler, method, target, hdrs, body);
    int64_t status = r ? r->status : 500;
    const char *rh = r ? S(r->headers) : "";
    const char *rb = r ? S(r->partial_body) : "";
    buf out = {0};
    char line[128];
    snprintf(line, sizeof line, "HTTP/1.1 %lld %s\r\n", (long long)status,
             osp_httpp_reason(status));
    buf_puts(&out, line);
    buf_puts(&out, rh);
    snprintf(line, sizeof line, "Content-Length: %zu\r\nConnection: close\r\n\r\n", strlen(rb));
    buf_puts(&out, line);
    buf_puts(&out, rb);
    send_all(fd, out.p, out.len, REPLY_SEND_MS);
    free(out.p);
done:
    free(headers);
    free(in.p);
    finish(fd, drain);
}

static osp_word server_main(void *env) {
    http_server *s = env;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        bool stop = s->stop;
        pthread_mutex_unlock(&s->lock);
        if (stop) break;
        struct pollfd fds[2] = {{s->listen_fd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
        if (wait_fds(fds, 2, -1) < 0) break;
        if (fds[1].revents) continue; /* a stop request: checked at the top */
        if (!(fds[0].revents & POLLIN)) continue;
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                struct pollfd none = {-1, 0, 0};
                wait_fds(&none, 1, 10); /* out of descriptors: do not spin */
            }
            continue;
        }
        serve_connection(s, fd);
    }
    pthread_mutex_lock(&s->lock);
    close(s->listen_fd);
    close(s->wake[0]);
    close(s->wake[1]);
    s->listen_fd = s->wake[0] = s->wake[1] = -1;
    s->listening = false;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int64_t osp_http_listen(int64_t server, osp_closure handler) {
    http_server *s =
        server >= 1 && server < SERVER_ID_LIMIT ? endpoint_get(server, KIND_SERVER) : NULL;
    if (s == NULL) return -1;
    pthread_mutex_lock(&s->lock);
    bool busy = s->listening;
    if (!busy) s->listening = true; /* claimed: a concurrent httpListen gets -7 */
    pthread_mutex_unlock(&s->lock);
    if (busy) return -7;
    int64_t rc = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)s->port);
    int one = 1;
    if (fd < 0)
        rc = -2;
    else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
             inet_pton(AF_INET, s->address, &sa.sin_addr) != 1)
        rc = -3;
    else if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        rc = -4;
    else if (listen(fd, LISTEN_BACKLOG) != 0)
        rc = -5;
    int wake[2] = {-1, -1};
    if (rc == 0 && pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) rc = -6;
    if (rc == 0) {
        pthread_mutex_lock(&s->lock);
        s->listen_fd = fd;
        s->wake[0] = wake[0];
        s->wake[1] = wake[1];
        s->stop = false;
        s->handler = handler;
        pthread_mutex_unlock(&s->lock);
        int64_t fiber = osp_fiber_spawn_thread(server_main, s);
        if (fiber > 0) {
            pthread_mutex_lock(&s->lock);
            s->fiber = fiber;
            pthread_mutex_unlock(&s->lock);
            return 0;
        }
        rc = -6;
        close(wake[0]);
        close(wake[1]);
    }
    if (fd >= 0) close(fd);
    pthread_mutex_lock(&s->lock);
    s->listen_fd = s->wake[0] = s->wake[1] = -1;
    s->listening = false;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int64_t osp_http_stop_server(int64_t server) {
    if (server < 1 || server >= SERVER_ID_LIMIT) return -1;
    http_server *s = endpoint_get(server, KIND_SERVER);
    if (s == NULL) return 0;
    pthread_mutex_lock(&s->lock);
    bool listening = s->listening;
    int64_t fiber = s->fiber;
    if (listening) {
        s->stop = true;
        char b = 1;
        ssize_t w = write(s->wake[1], &b, 1); /* full pipe: a wake-up is pending anyway */
        (void)w;
    }
    pthread_mutex_unlock(&s->lock);
    if (!listening || fiber <= 0) return 0;
    if (fiber == osp_fiber_current_id()) return 0; /* in the handler: ends after this reply */
    osp_fiber_wait(fiber);
    return 0;
}

/* ---- client --------------------------------------------------------------------------- */

static bool prefix_nocase(const char *s, const char *p) {
    for (; *p; s++, p++) {
        char a = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
        if (a != *p) return false;
    }
    return true;
}

int64_t osp_http_create_client(const char *base_url, int64_t timeout_ms) {
    if (timeout_ms < 0) return -2;
    const char *u = S(base_url);
    bool tls = false;
    if (prefix_nocase(u, "http://")) {
        u += 7;
    } else if (prefix_nocase(u, "https://")) {
        u += 8;
        tls = true;
    } else {
        return -4;
    }
    size_t hl = strcspn(u, ":/?#");
    if (hl == 0) return -4;
    for (size_t i = 0; i < hl; i++)
        if ((unsigned char)u[i] <= ' ' || u[i] == '@' || u[i] == '[' || u[i] == ']') return -4;
    int port = tls ? 443 : 80;
    const char *p = u + hl;
    if (*p == ':') {
        p++;
        long v = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 6) {
            v = v * 10 + (*p++ - '0');
            digits++;
        }
        if (digits == 0 || v < 1 || v > 65535 || (*p && *p != '/' && *p != '?' && *p != '#'))
            return -4;
        port = (int)v;
    }
    http_client *c = osp_gc_alloc(sizeof *c);
    c->host = osp_str_dup_n(u, hl);
    c->port = port;
    c->timeout_ms = timeout_ms;
    c->tls = tls;
    return endpoint_add(KIND_CLIENT, c);
}

int64_t osp_http_close_client(int64_t client) {
    pthread_mutex_lock(&table_lock);
    if (client >= 1 && (size_t)client < endpoints_cap && endpoints[client].kind == KIND_CLIENT)
        endpoints[client] = (endpoint){0, NULL};
    pthread_mutex_unlock(&table_lock);
    return 0;
}

/* Connect to the client's host within its timeout; the socket (blocking mode) or a
 * negative status: -4 unknown host, -5 cannot connect. */
static int connect_to(const http_client *c) {
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)c->port);
    if (inet_pton(AF_INET, c->host, &sa.sin_addr) != 1) {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(c->host, NULL, &hints, &res) != 0 || res == NULL) return -4;
        sa.sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
        freeaddrinfo(res);
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -5;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno != EINPROGRESS) {
            close(fd);
            return -5;
        }
        struct pollfd p = {fd, POLLOUT, 0};
        int err = 0;
        socklen_t el = sizeof err;
        if (wait_fds(&p, 1, c->timeout_ms ? c->timeout_ms : -1) <= 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0) {
            close(fd);
            return -5;
        }
    }
    return fd;
}

/*
 * One request (§9.7 format) on a new connection; the reply read until the server closes
 * or the timeout passes without data. Returns the status or a negative code; with `keep`,
 * the reply's bytes in *keep (Osprey heap) when the status is not negative.
 */
static int64_t request(int64_t client, const char *method, const char *path, const char *body,
                       const char *headers, http_reply **keep) {
    http_client *c = endpoint_get(client, KIND_CLIENT);
    if (c == NULL) return -1;
    if (c->tls) return -11; /* no TLS in this runtime */
    path = S(path);
    body = S(body);
    headers = S(headers);
    int fd = connect_to(c);
    if (fd < 0) return fd;
    buf rq = {0};
    buf_puts(&rq, method);
    buf_puts(&rq, " ");
    buf_puts(&rq, path);
    buf_puts(&rq, " HTTP/1.1\r\nHost: ");
    buf_puts(&rq, c->host);
    buf_puts(&rq, "\r\nConnection: close\r\n");
    if (*headers) {
        buf_puts(&rq, headers);
        buf_puts(&rq, "\r\n");
    }
    if (*body) {
        char cl[64];
        snprintf(cl, sizeof cl, "Content-Length: %zu\r\n\r\n", strlen(body));
        buf_puts(&rq, cl);
        buf_puts(&rq, body);
    } else {
        buf_puts(&rq, "\r\n");
    }
    int64_t wait_ms = c->timeout_ms ? c->timeout_ms : -1;
    bool sent = send_all(fd, rq.p, rq.len, wait_ms);
    free(rq.p);
    if (!sent) {
        close(fd);
        return -6;
    }
    buf in = {0};
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (wait_fds(&p, 1, wait_ms) <= 0) break; /* timeout without data */
        buf_reserve(&in, 16 << 10);
        ssize_t n = recv(fd, in.p + in.len, in.cap - in.len, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (n <= 0) break; /* closed (or reset) */
        in.len += (size_t)n;
        if (in.len >= CLIENT_REPLY_LIMIT) break;
    }
    close(fd);
    int64_t status = osp_httpp_status(in.p, in.len);
    if (status >= 0 && keep) {
        http_reply *r = osp_gc_alloc(sizeof *r);
        r->status = status;
        r->data = osp_str_dup_n(in.len ? in.p : "", in.len);
        r->len = in.len;
        *keep = r;
    }
    free(in.p);
    return status;
}

int64_t osp_http_get(int64_t c, const char *path, const char *headers) {
    return request(c, "GET", path, "", headers, NULL);
}
int64_t osp_http_delete(int64_t c, const char *path, const char *headers) {
    return request(c, "DELETE", path, "", headers, NULL);
}
int64_t osp_http_post(int64_t c, const char *path, const char *body, const char *headers) {
    return request(c, "POST", path, body, headers, NULL);
}
int64_t osp_http_put(int64_t c, const char *path, const char *body, const char *headers) {
    return request(c, "PUT", path, body, headers, NULL);
}

/* ---- kept replies --------------------------------------------------------------------- */

static osp_rres http_error(void) {
    return (osp_rres){OSP_RESULT_ERROR, 0};
}

osp_rres osp_http_get_response(int64_t c, const char *path, const char *headers) {
    http_reply *r = NULL;
    if (request(c, "GET", path, "", headers, &r) < 0 || r == NULL) return http_error();
    int64_t id = -1;
    pthread_mutex_lock(&table_lock);
    if (replies == NULL) {
        replies = GC_MALLOC_UNCOLLECTABLE(REPLY_IDS * sizeof *replies);
        if (replies == NULL) osp_fatal_oom();
    }
    for (int64_t i = 1; i < REPLY_IDS; i++)
        if (replies[i] == NULL) {
            replies[i] = r;
            id = i;
            break;
        }
    pthread_mutex_unlock(&table_lock);
    if (id < 0) return http_error();
    return (osp_rres){OSP_RESULT_SUCCESS, (osp_word)id};
}

static http_reply *reply_get(int64_t id) {
    http_reply *r = NULL;
    pthread_mutex_lock(&table_lock);
    if (replies && id >= 1 && id < REPLY_IDS) r = replies[id];
    pthread_mutex_unlock(&table_lock);
    return r;
}

int64_t osp_http_response_status(int64_t id) {
    http_reply *r = reply_get(id);
    return r ? r->status : -1;
}

osp_rres osp_http_response_body(int64_t id) {
    http_reply *r = reply_get(id);
    if (r == NULL) return http_error();
    char *out = osp_gc_alloc_atomic(r->len + 1);
    size_t n = 0;
    if (!osp_httpp_body(r->data, r->len, out, &n)) return http_error();
    out[n] = 0;
    return (osp_rres){OSP_RESULT_SUCCESS, (osp_word)(uintptr_t)out};
}

osp_rres osp_http_response_header(int64_t id, const char *name) {
    http_reply *r = reply_get(id);
    size_t off, len;
    if (r == NULL || !osp_httpp_header(r->data, r->len, S(name), &off, &len)) return http_error();
    return (osp_rres){OSP_RESULT_SUCCESS, (osp_word)(uintptr_t)osp_str_dup_n(r->data + off, len)};
}

osp_rres osp_http_response_free(int64_t id) {
    bool had = false;
    pthread_mutex_lock(&table_lock);
    if (replies && id >= 1 && id < REPLY_IDS && replies[id]) {
        replies[id] = NULL;
        had = true;
    }
    pthread_mutex_unlock(&table_lock);
    return had ? (osp_rres){OSP_RESULT_SUCCESS, 0} : http_error();
}

#else /* no POSIX sockets (Windows, Wasm): every built-in fails cleanly */

static osp_rres http_error(void) {
    return (osp_rres){OSP_RESULT_ERROR, 0};
}

int64_t osp_http_create_server(int64_t port, const char *address) {
    (void)address;
    return port < 1 || port > 65535 ? -1 : -3;
}
int64_t osp_http_listen(int64_t server, osp_closure handler) {
    (void)server;
    (void)handler;
    return -1;
}
int64_t osp_http_stop_server(int64_t server) {
    return server < 1 || server > 99 ? -1 : 0;
}
int64_t osp_http_create_client(const char *base_url, int64_t timeout_ms) {
    (void)base_url;
    return timeout_ms < 0 ? -2 : -4;
}
int64_t osp_http_close_client(int64_t client) {
    (void)client;
    return 0;
}
int64_t osp_http_get(int64_t c, const char *path, const char *headers) {
    (void)c, (void)path, (void)headers;
    return -1;
}
int64_t osp_http_delete(int64_t c, const char *path, const char *headers) {
    (void)c, (void)path, (void)headers;
    return -1;
}
int64_t osp_http_post(int64_t c, const char *path, const char *body, const char *headers) {
    (void)c, (void)path, (void)body, (void)headers;
    return -1;
}
int64_t osp_http_put(int64_t c, const char *path, const char *body, const char *headers) {
    (void)c, (void)path, (void)body, (void)headers;
    return -1;
}
osp_rres osp_http_get_response(int64_t c, const char *path, const char *headers) {
    (void)c, (void)path, (void)headers;
    return http_error();
}
int64_t osp_http_response_status(int64_t id) {
    (void)id;
    return -1;
}
osp_rres osp_http_response_body(int64_t id) {
    (void)id;
    return http_error();
}
osp_rres osp_http_response_header(int64_t id, const char *name) {
    (void)id, (void)name;
    return http_error();
}
osp_rres osp_http_response_free(int64_t id) {
    (void)id;
    return http_error();
}

#endif
