/*
 * JSON built-ins (docs/spec/language.md §9.8): jsonParse, jsonGet, jsonLength, jsonFree.
 * The parser is json_parse.c; this file keeps the document table: ids 1–1023, the lowest
 * free one given out, reused after jsonFree. Trees are malloc memory owned by the table
 * (freed by jsonFree; a document never freed lives until exit). Strings handed to the
 * program are copied onto the Osprey heap. Every Error carries no message.
 *
 * Lock: `docs_lock` guards the table and is held while a document is read, so a jsonFree
 * from another fiber never frees a tree under a reader.
 */
#include "json_parse.h"
#include "rt_internal.h"

#include <pthread.h>
#include <string.h>

enum { OSP_JSON_DOCS = 1024 }; /* ids 1..1023 */

static pthread_mutex_t docs_lock = PTHREAD_MUTEX_INITIALIZER;
static osp_jtree *docs[OSP_JSON_DOCS];

static osp_rres json_error(void) {
    return (osp_rres){OSP_RESULT_ERROR, 0};
}

osp_rres osp_json_parse(const char *text) {
    if (text == NULL) text = "";
    osp_jtree *t = NULL;
    int rc = osp_jtree_parse(text, strlen(text), &t);
    if (rc == OSP_JSON_NOMEM) osp_fatal_oom();
    if (rc != OSP_JSON_OK) return json_error();
    pthread_mutex_lock(&docs_lock);
    int64_t id = -1;
    for (int64_t i = 1; i < OSP_JSON_DOCS; i++)
        if (docs[i] == NULL) {
            id = i;
            docs[i] = t;
            break;
        }
    pthread_mutex_unlock(&docs_lock);
    if (id < 0) {
        osp_jtree_free(t); /* no room: every id is in use */
        return json_error();
    }
    return (osp_rres){OSP_RESULT_SUCCESS, (osp_word)id};
}

osp_rres osp_json_get(int64_t doc, const char *path) {
    if (path == NULL) path = "";
    osp_rres r = json_error();
    pthread_mutex_lock(&docs_lock);
    osp_jtree *t = doc >= 1 && doc < OSP_JSON_DOCS ? docs[doc] : NULL;
    int64_t at = osp_jtree_find(t, path);
    if (at >= 0) {
        const osp_jnode *n = &t->nodes[at];
        if (n->kind != OSP_JSON_ARRAY && n->kind != OSP_JSON_OBJECT) {
            const char *s = osp_str_dup_n(n->text_len ? t->pool + n->text_off : "", n->text_len);
            r = (osp_rres){OSP_RESULT_SUCCESS, (osp_word)(uintptr_t)s};
        }
    }
    pthread_mutex_unlock(&docs_lock);
    return r;
}

int64_t osp_json_length(int64_t doc, const char *path) {
    if (path == NULL) path = "";
    int64_t len = -1;
    pthread_mutex_lock(&docs_lock);
    osp_jtree *t = doc >= 1 && doc < OSP_JSON_DOCS ? docs[doc] : NULL;
    int64_t at = osp_jtree_find(t, path);
    if (at >= 0) {
        const osp_jnode *n = &t->nodes[at];
        if (n->kind == OSP_JSON_ARRAY || n->kind == OSP_JSON_OBJECT) len = n->count;
    }
    pthread_mutex_unlock(&docs_lock);
    return len;
}

osp_rres osp_json_free(int64_t doc) {
    osp_jtree *t = NULL;
    pthread_mutex_lock(&docs_lock);
    if (doc >= 1 && doc < OSP_JSON_DOCS) {
        t = docs[doc];
        docs[doc] = NULL;
    }
    pthread_mutex_unlock(&docs_lock);
    if (t == NULL) return json_error();
    osp_jtree_free(t);
    return (osp_rres){OSP_RESULT_SUCCESS, 0};
}
