/*
 * http_fuzz.c — libFuzzer target for the byte-level HTTP parsing of the server and the
 * client (runtime/core/http_parse.c, docs/spec/language.md §9.7): any bytes are taken both as
 * a request arriving at the server and as a reply arriving at a client. Nothing may read
 * outside the input; a parsed request head's parts must lie inside it and its joined header
 * lines fit the caller's buffer; a status is -7, -8 or 0–999; a header value and a decoded
 * body must lie inside the input / fit in `len` bytes.
 *
 * Built two ways:
 *  - with -fsanitize=fuzzer,address,undefined by test/fuzz/http_fuzz.sh (the fuzzing run);
 *  - as a plain program linked with replay_main.c (ctest runtime_http_fuzz_corpus), which
 *    replays the kept corpus test/fuzz/http_corpus in every build, sanitizers included.
 */
#define _GNU_SOURCE
#include "http_parse.h"
#include "replay_main.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t g_heads; /* inputs that parsed as a complete request head */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* Exact-size copies, so ASan sees any access past them. */
    char *buf = malloc(size ? size : 1);
    char *out = malloc(size ? size : 1);
    if (buf == NULL || out == NULL) {
        free(buf);
        free(out);
        return 0;
    }
    memcpy(buf, data, size);
    osp_http_head h;
    int rc = osp_httpp_request_head(buf, size, &h, out);
    if (rc < OSP_HTTPP_NEED_MORE || rc > OSP_HTTPP_TRANSFER_ENCODING) abort();
    if (rc == OSP_HTTPP_OK) {
        g_heads++;
        if (h.head_len > size || h.headers_len > size) abort();
        if (h.method_len == 0 || h.method_off + h.method_len > h.head_len) abort();
        if (h.target_len == 0 || h.target_off + h.target_len > h.head_len) abort();
        if (h.content_length > OSP_HTTPP_MAX_CONTENT_LENGTH) abort();
    }
    int64_t status = osp_httpp_status(buf, size);
    if (!(status == -7 || status == -8 || (status >= 0 && status <= 999))) abort();
    size_t off, vlen;
    static const char *const names[] = {"content-type", "transfer-encoding", "x", ""};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (osp_httpp_header(buf, size, names[i], &off, &vlen) && (off > size || vlen > size - off))
            abort();
    size_t n;
    if (osp_httpp_body(buf, size, out, &n) && n > size) abort();
    free(buf);
    free(out);
    return 0;
}

/* The replay's summary (replay_main.c): how many inputs were complete request heads. */
int fuzz_replay_finish(FILE *out) {
    fprintf(out, ", %zu complete request heads", g_heads);
    return 0;
}
