/*
 * Immutable maps with string keys (docs/spec/language.md §9.5): a persistent treap. Nodes are
 * never changed after they are published; an update copies the path from the root to
 * the changed node (O(log n) expected), so old and new maps share everything else. A
 * node's priority is a hash of its key, so a given set of keys always has the same shape.
 */
#include "rt_internal.h"

#include <string.h>

typedef struct node {
    const char *key;
    uint64_t prio;
    osp_word value;
    struct node *left, *right;
} node;

struct osp_map {
    node *root;
    int64_t count;
};

static uint64_t key_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a, then a final avalanche */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static node *mk(const char *key, uint64_t prio, osp_word v, node *l, node *r) {
    node *n = osp_gc_alloc(sizeof *n);
    n->key = key;
    n->prio = prio;
    n->value = v;
    n->left = l;
    n->right = r;
    return n;
}

static node *copy(const node *t) {
    return mk(t->key, t->prio, t->value, t->left, t->right);
}

static osp_map *wrap(node *root, int64_t count) {
    osp_map *m = osp_gc_alloc(sizeof *m);
    m->root = root;
    m->count = count;
    return m;
}

osp_map *osp_map_empty(void) {
    return wrap(NULL, 0);
}

/* Insert or replace; every node on the returned path is fresh, so rotating is safe. */
static node *insert(const node *t, const char *key, uint64_t prio, osp_word v, bool *added) {
    if (t == NULL) {
        *added = true;
        return mk(key, prio, v, NULL, NULL);
    }
    int c = strcmp(key, t->key);
    node *n = copy(t);
    if (c == 0) {
        n->value = v;
        return n;
    }
    if (c < 0) {
        node *l = insert(t->left, key, prio, v, added);
        n->left = l;
        if (l->prio > n->prio) { /* rotate right */
            n->left = l->right;
            l->right = n;
            return l;
        }
    } else {
        node *r = insert(t->right, key, prio, v, added);
        n->right = r;
        if (r->prio > n->prio) { /* rotate left */
            n->right = r->left;
            r->left = n;
            return r;
        }
    }
    return n;
}

/* Join two treaps whose keys are all ordered a < b. */
static node *join(const node *a, const node *b) {
    if (a == NULL) return (node *)b;
    if (b == NULL) return (node *)a;
    if (a->prio >= b->prio) {
        node *n = copy(a);
        n->right = join(a->right, b);
        return n;
    }
    node *n = copy(b);
    n->left = join(a, b->left);
    return n;
}

static node *erase(const node *t, const char *key, bool *removed) {
    if (t == NULL) return NULL;
    int c = strcmp(key, t->key);
    if (c == 0) {
        *removed = true;
        return join(t->left, t->right);
    }
    node *n = copy(t);
    if (c < 0)
        n->left = erase(t->left, key, removed);
    else
        n->right = erase(t->right, key, removed);
    return n;
}

static const node *find(const node *t, const char *key) {
    while (t) {
        int c = strcmp(key, t->key);
        if (c == 0) return t;
        t = c < 0 ? t->left : t->right;
    }
    return NULL;
}

osp_map *osp_map_set(const osp_map *m, const char *key, osp_word v) {
    if (key == NULL) key = "";
    bool added = false;
    node *root = insert(m->root, key, key_hash(key), v, &added);
    return wrap(root, m->count + (added ? 1 : 0));
}

osp_rres osp_map_get(const osp_map *m, const char *key) {
    const node *n = find(m->root, key ? key : "");
    if (n == NULL)
        return (osp_rres){OSP_RESULT_ERROR, (osp_word)(uintptr_t)"mapGet: key not found"};
    return (osp_rres){OSP_RESULT_SUCCESS, n->value};
}

osp_map *osp_map_remove(const osp_map *m, const char *key) {
    bool removed = false;
    node *root = erase(m->root, key ? key : "", &removed);
    if (!removed) return (osp_map *)m;
    return wrap(root, m->count - 1);
}

static void merge_into(osp_map **acc, const node *t) {
    if (t == NULL) return;
    merge_into(acc, t->left);
    *acc = osp_map_set(*acc, t->key, t->value);
    merge_into(acc, t->right);
}

osp_map *osp_map_merge(const osp_map *a, const osp_map *b) {
    if (b->count == 0) return (osp_map *)a;
    if (a->count == 0) return (osp_map *)b;
    osp_map *acc = (osp_map *)a;
    merge_into(&acc, b->root);
    return acc;
}

bool osp_map_contains(const osp_map *m, const char *key) {
    return find(m->root, key ? key : "") != NULL;
}

int64_t osp_map_length(const osp_map *m) {
    return m->count;
}

static void collect(const node *t, osp_word *out, int64_t *i, bool keys) {
    while (t) {
        collect(t->left, out, i, keys);
        out[(*i)++] = keys ? (osp_word)(uintptr_t)t->key : t->value;
        t = t->right;
    }
}

static osp_list *to_list(const osp_map *m, bool keys) {
    if (m->count == 0) return osp_list_new(0, NULL);
    osp_word *tmp = osp_gc_alloc((size_t)m->count * sizeof(osp_word));
    int64_t i = 0;
    collect(m->root, tmp, &i, keys);
    return osp_list_new(i, tmp);
}

osp_list *osp_map_keys(const osp_map *m) {
    return to_list(m, true);
}
osp_list *osp_map_values(const osp_map *m) {
    return to_list(m, false);
}
