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
 *  - as a plain program with -DOSP_FUZZ_REPLAY_MAIN (ctest runtime_http_fuzz_corpus), which
 *    replays the kept corpus test/fuzz/http_corpus in every build, sanitizers included.
 */
#define _GNU_SOURCE
#include "http_parse.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t g_heads; /* inputs that parsed as a complete request head */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
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

#ifdef OSP_FUZZ_REPLAY_MAIN
/* Replay: ./http_fuzz_replay <corpus-dir>... ; prints how many inputs ran. */
int main(int argc, char **argv) {
    size_t n = 0;
    for (int a = 1; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        if (!d) {
            fprintf(stderr, "cannot open %s\n", argv[a]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            FILE *f = fopen(path, "rb");
            if (!f) continue;
            fseek(f, 0, SEEK_END);
            long len = ftell(f);
            fseek(f, 0, SEEK_SET);
            uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
            size_t got = b ? fread(b, 1, (size_t)(len > 0 ? len : 0), f) : 0;
            fclose(f);
            if (b) LLVMFuzzerTestOneInput(b, got);
            free(b);
            n++;
        }
        closedir(d);
    }
    printf("replayed %zu inputs, %zu complete request heads\n", n, g_heads);
    return n ? 0 : 1;
}
#endif
