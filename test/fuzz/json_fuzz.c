/*
 * json_fuzz.c — libFuzzer target for the JSON parser of jsonParse/jsonGet/jsonLength
 * (runtime/core/json_parse.c, docs/spec/language.md §9.8): any bytes are a text to parse.
 * The parser must never read outside the input (it nests on a heap stack, to any depth), and
 * either refuse the text or build a well-formed tree: every child index in range, each
 * container's child chain exactly `count` long, strings and numbers inside the pool, and
 * the root found at the path "". The input, cut at its first NUL, is also looked up as a
 * path in the tree it built (or in a fixed document), which must give -1 or a valid node.
 *
 * Built two ways:
 *  - with -fsanitize=fuzzer,address,undefined by test/fuzz/json_fuzz.sh (the fuzzing run);
 *  - as a plain program linked with replay_main.c (ctest runtime_json_fuzz_corpus), which
 *    replays the kept corpus test/fuzz/json_corpus in every build, sanitizers included.
 */
#define _GNU_SOURCE
#include "json_parse.h"
#include "replay_main.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t g_parsed; /* inputs that parsed (reported by the replay) */

static void check_tree(const osp_jtree *t) {
    if (t->nnodes == 0) abort();
    for (size_t i = 0; i < t->nnodes; i++) {
        const osp_jnode *n = &t->nodes[i];
        if (n->kind > OSP_JSON_OBJECT) abort();
        if (n->text_off > t->pool_len || n->text_len > t->pool_len - n->text_off) abort();
        if (n->key_off > t->pool_len || n->key_len > t->pool_len - n->key_off) abort();
        if (n->kind == OSP_JSON_ARRAY || n->kind == OSP_JSON_OBJECT) {
            uint32_t c = n->first;
            for (uint32_t k = 0; k < n->count; k++) {
                if (c <= i || c >= t->nnodes) abort(); /* children come after their parent */
                if (k + 1 < n->count && t->nodes[c].next == 0) abort();
                c = t->nodes[c].next;
            }
        } else if (n->count != 0) {
            abort();
        }
    }
    if (osp_jtree_find(t, "") != 0) abort();
}

static const char fixed_doc[] =
    "{\"a\": [1, {\"b\": [true, null, \"x\"]}], \"c\": {\"d\": -2.5e3}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* An exact-size copy, so ASan sees any read past the input. */
    char *buf = malloc(size ? size : 1);
    if (buf == NULL) return 0;
    memcpy(buf, data, size);
    osp_jtree *t = NULL;
    int rc = osp_jtree_parse(buf, size, &t);
    if (rc == OSP_JSON_OK) {
        g_parsed++;
        check_tree(t);
    } else if (rc != OSP_JSON_INVALID && rc != OSP_JSON_NOMEM) {
        abort();
    } else if (osp_jtree_parse(fixed_doc, sizeof fixed_doc - 1, &t) != OSP_JSON_OK) {
        abort();
    }
    char *path = malloc(size + 1);
    if (path) {
        memcpy(path, data, size);
        path[size] = 0;
        int64_t at = osp_jtree_find(t, path);
        if (at < -1 || at >= (int64_t)t->nnodes) abort();
        free(path);
    }
    osp_jtree_free(t);
    free(buf);
    return 0;
}

/* The replay's summary (replay_main.c): how many inputs parsed. */
int fuzz_replay_finish(FILE *out) {
    fprintf(out, ", %zu parsed", g_parsed);
    return 0;
}
