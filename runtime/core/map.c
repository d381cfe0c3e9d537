/*
 * Immutable maps with string keys (docs/spec/language.md §9.5): a persistent hash array mapped
 * trie over the keys' 32-bit FNV-1a hashes.
 *
 * Shape. Level d (0..6) of the trie is indexed by chunk d of the hash: bits 5d..5d+4 (level 6
 * has the top two bits only). A node holds a 32-bit `bitmap` of its occupied slots and, packed
 * in slot order, one pointer per occupied slot: an entry (key, value, hash) or a child node
 * (`nodemap` says which). Below level 6 every bit of the hash is used, so a node at depth 7 is a
 * collision node: the entries whose hashes are equal, in the order they were inserted among the
 * keys now present.
 *
 * Order. Visiting slots in increasing index, depth first, visits keys in increasing
 * lexicographic order of their chunks (c0, c1, ..., c6): exactly the iteration order §9.5
 * defines, with ties (equal hashes) in collision-node order. mapSet on a present key replaces
 * its value in place (it keeps its place); a new key with a colliding hash goes last.
 *
 * Persistence. Nodes and entries are never changed after they are published; an update
 * copies the path from the root to the changed slot (at most 8 nodes), so old and new maps
 * share everything else. Lookups and updates are O(log32 n) node visits plus one key compare
 * per visited entry.
 *
 * Transient maps. The one exception: a map made by osp_map_transient carries an edit token
 * (`edit`, never 0) that no other map has ever carried, and every node and entry that an update
 * of that map creates is stamped with it. mapSet and mapRemove on such a map change the
 * wrapper in place and return it, and change the nodes and entries stamped with its token in
 * place instead of copying them (nodes from elsewhere are still copied, and the copies stamped):
 * a fold that sets one key per step then allocates only for new keys. This is sound only
 * because generated code makes a transient map just for a fold accumulator that each step
 * uses linearly (codegen/codegen_own.c: read, then updated once, the update returned; never
 * stored, captured or passed on), so nothing can observe the old version; osp_map_seal ends
 * the token's life when the fold ends, and no map ever carries it again.
 *
 * Memory: everything is on the collector's heap (osp_gc_alloc) and never freed explicitly.
 */
#include "rt_internal.h"

#include <stdatomic.h>
#include <string.h>

enum { HAMT_BITS = 5, HAMT_LEVELS = 7 /* 6 full chunks of 5 bits and one of 2 */ };

typedef struct entry {
    uint32_t hash;
    uint32_t edit; /* the transient map's token that created it (0: none) */
    const char *key;
    osp_word value;
} entry;

typedef struct hnode {
    uint32_t bitmap;  /* occupied slots (collision node: 0) */
    uint32_t nodemap; /* occupied slots that hold a child node rather than an entry */
    int32_t n;        /* number of slots (popcount(bitmap); collision node: entries) */
    uint32_t edit;    /* the transient map's token that created it (0: none) */
    void *slot[];     /* entry * or struct hnode *, in slot order */
} hnode;

struct osp_map {
    hnode *root; /* NULL for the empty map */
    int64_t count;
    uint32_t edit; /* a transient map's token (see the top of the file); 0: persistent */
};

uint32_t osp_map_hash(const char *key) {
    uint32_t h = 0x811C9DC5u;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 0x01000193u;
    }
    return h;
}

/* Equal keys; the same string object (a key looked up with the very string it was set
 * with, the common case) needs no byte compare. */
static inline bool key_eq(const char *a, const char *b) {
    return a == b || strcmp(a, b) == 0;
}

static unsigned chunk(uint32_t h, int depth) {
    return (h >> (HAMT_BITS * depth)) & 31u;
}

static int slot_index(uint32_t bitmap, unsigned bit) {
    return __builtin_popcount(bitmap & ((1u << bit) - 1u));
}

static hnode *node_new(int n, uint32_t edit) {
    hnode *nd = osp_gc_alloc(sizeof *nd + (size_t)(n > 0 ? n : 1) * sizeof(void *));
    nd->n = n;
    nd->edit = edit;
    return nd;
}

static hnode *node_copy(const hnode *o, int n, uint32_t edit) {
    hnode *nd = node_new(n, edit);
    nd->bitmap = o->bitmap;
    nd->nodemap = o->nodemap;
    memcpy(nd->slot, o->slot, (size_t)(o->n < n ? o->n : n) * sizeof(void *));
    return nd;
}

/* One update: the key and value to set, or (mapMerge) an existing entry to insert as it is. */
typedef struct upd {
    uint32_t hash;
    const char *key;
    osp_word value;
    entry *e;      /* the entry to insert: given, or made on first need */
    uint32_t edit; /* the transient map's token, 0 for a persistent update */
    bool added;    /* a new key (not a replaced value) */
} upd;

static entry *upd_entry(upd *u) {
    if (u->e == NULL) {
        u->e = osp_gc_alloc(sizeof *u->e);
        u->e->hash = u->hash;
        u->e->edit = u->edit;
        u->e->key = u->key;
        u->e->value = u->value;
    }
    return u->e;
}

/* Whether the transient update `u` may change `edit`-stamped memory in place. */
static bool mine(uint32_t stamp, const upd *u) {
    return u->edit != 0 && stamp == u->edit;
}

/* The entry that replaces `o` (whose key equals the update's): `o` itself, its value
 * changed, when the transient update owns it. */
static entry *replaced(entry *o, upd *u) {
    if (mine(o->edit, u)) {
        o->value = u->value; /* the key keeps its first string: equal bytes */
        return o;
    }
    return upd_entry(u);
}

/* `nd` to change in place when the update owns it, else a copy stamped with its token. */
static hnode *writable(hnode *nd, const upd *u) {
    return mine(nd->edit, u) ? nd : node_copy(nd, nd->n, u->edit);
}

/* A node at `depth` holding two entries whose hashes differ at or below `depth`, or (at
 * depth HAMT_LEVELS) a collision node of both, `a` first. */
static hnode *node_of_two(entry *a, entry *b, int depth, uint32_t edit) {
    if (depth == HAMT_LEVELS) {
        hnode *nd = node_new(2, edit);
        nd->slot[0] = a;
        nd->slot[1] = b;
        return nd;
    }
    unsigned ca = chunk(a->hash, depth), cb = chunk(b->hash, depth);
    if (ca == cb) {
        hnode *nd = node_new(1, edit);
        nd->bitmap = nd->nodemap = 1u << ca;
        nd->slot[0] = node_of_two(a, b, depth + 1, edit);
        return nd;
    }
    hnode *nd = node_new(2, edit);
    nd->bitmap = (1u << ca) | (1u << cb);
    nd->slot[ca < cb ? 0 : 1] = a;
    nd->slot[ca < cb ? 1 : 0] = b;
    return nd;
}

static const entry *find(const hnode *nd, uint32_t h, const char *key) {
    for (int depth = 0; nd; depth++) {
        if (depth == HAMT_LEVELS) {
            for (int i = 0; i < nd->n; i++) {
                const entry *e = nd->slot[i];
                if (key_eq(e->key, key)) return e;
            }
            return NULL;
        }
        unsigned bit = chunk(h, depth);
        if (!(nd->bitmap & (1u << bit))) return NULL;
        void *s = nd->slot[slot_index(nd->bitmap, bit)];
        if (!(nd->nodemap & (1u << bit))) {
            const entry *e = s;
            return e->hash == h && key_eq(e->key, key) ? e : NULL;
        }
        nd = s;
    }
    return NULL;
}

/* `nd` with the update's key set (added or its value replaced; `u->added` tells which). */
static hnode *insert(hnode *nd, upd *u, int depth) {
    if (nd == NULL) {
        u->added = true;
        hnode *c = node_new(1, u->edit);
        if (depth < HAMT_LEVELS) c->bitmap = 1u << chunk(u->hash, depth);
        c->slot[0] = upd_entry(u);
        return c;
    }
    if (depth == HAMT_LEVELS) {
        for (int i = 0; i < nd->n; i++) {
            entry *o = nd->slot[i];
            if (key_eq(o->key, u->key)) {
                hnode *c = writable(nd, u);
                c->slot[i] = replaced(o, u); /* keeps its place */
                return c;
            }
        }
        u->added = true;
        hnode *c = node_copy(nd, nd->n + 1, u->edit);
        c->slot[nd->n] = upd_entry(u); /* a new colliding key goes last */
        return c;
    }
    unsigned bit = chunk(u->hash, depth);
    int i = slot_index(nd->bitmap, bit);
    if (!(nd->bitmap & (1u << bit))) {
        u->added = true;
        hnode *c = node_new(nd->n + 1, u->edit);
        c->bitmap = nd->bitmap | (1u << bit);
        c->nodemap = nd->nodemap;
        memcpy(c->slot, nd->slot, (size_t)i * sizeof(void *));
        c->slot[i] = upd_entry(u);
        memcpy(c->slot + i + 1, nd->slot + i, (size_t)(nd->n - i) * sizeof(void *));
        return c;
    }
    if (nd->nodemap & (1u << bit)) {
        hnode *c = writable(nd, u);
        c->slot[i] = insert(nd->slot[i], u, depth + 1);
        return c;
    }
    entry *o = nd->slot[i];
    hnode *c = writable(nd, u);
    if (o->hash == u->hash && key_eq(o->key, u->key)) {
        c->slot[i] = replaced(o, u);
        return c;
    }
    u->added = true;
    c->slot[i] = node_of_two(o, upd_entry(u), depth + 1, u->edit);
    c->nodemap |= 1u << bit;
    return c;
}

/* `nd` without slot `i` (NULL when nothing is left): in place when the update owns it. */
static hnode *without_slot(hnode *nd, int i, uint32_t bitmap, uint32_t nodemap, const upd *u) {
    if (nd->n == 1) return NULL;
    hnode *c = mine(nd->edit, u) ? nd : node_new(nd->n - 1, u->edit);
    c->bitmap = bitmap;
    c->nodemap = nodemap;
    if (c != nd) memcpy(c->slot, nd->slot, (size_t)i * sizeof(void *));
    memmove(c->slot + i, nd->slot + i + 1, (size_t)(nd->n - i - 1) * sizeof(void *));
    if (c == nd) c->slot[nd->n - 1] = NULL; /* keep nothing alive from the freed slot */
    c->n = nd->n - 1;
    return c;
}

/* `nd` without the update's key (NULL when nothing is left); `u->added` is set when it was
 * there (and removed). A child left with one entry and no child nodes is replaced by that
 * entry, so the trie stays as shallow as its keys allow; the order of the remaining keys does
 * not change. */
static hnode *erase(hnode *nd, upd *u, int depth) {
    if (depth == HAMT_LEVELS) {
        for (int i = 0; i < nd->n; i++) {
            const entry *o = nd->slot[i];
            if (!key_eq(o->key, u->key)) continue;
            u->added = true;
            return without_slot(nd, i, 0, 0, u);
        }
        return nd;
    }
    unsigned bit = chunk(u->hash, depth);
    if (!(nd->bitmap & (1u << bit))) return nd;
    int i = slot_index(nd->bitmap, bit);
    void *replacement = NULL;
    bool is_node = false;
    if (nd->nodemap & (1u << bit)) {
        hnode *child = erase(nd->slot[i], u, depth + 1);
        if (!u->added) return nd;
        if (child && child->nodemap == 0 && child->n == 1) {
            replacement = child->slot[0]; /* pull a lone entry up */
        } else if (child) {
            replacement = child;
            is_node = true;
        }
    } else {
        const entry *o = nd->slot[i];
        if (o->hash != u->hash || !key_eq(o->key, u->key)) return nd;
        u->added = true;
    }
    if (replacement) {
        hnode *c = writable(nd, u);
        c->slot[i] = replacement;
        if (is_node)
            c->nodemap |= 1u << bit;
        else
            c->nodemap &= ~(1u << bit);
        return c;
    }
    return without_slot(nd, i, nd->bitmap & ~(1u << bit), nd->nodemap & ~(1u << bit), u);
}

static osp_map *wrap(hnode *root, int64_t count) {
    osp_map *m = osp_gc_alloc(sizeof *m);
    m->root = root;
    m->count = count;
    return m;
}

osp_map *osp_map_empty(void) {
    return wrap(NULL, 0);
}

/* Edit tokens: each transient map gets the next one. After 2^32 - 1 of them the counter is
 * spent and osp_map_transient hands out 0 (a persistent map): a token is never reused. */
static _Atomic uint64_t last_edit_token;

osp_map *osp_map_transient(const osp_map *m) {
    osp_map *t = wrap(m->root, m->count);
    uint64_t token = atomic_fetch_add_explicit(&last_edit_token, 1, memory_order_relaxed) + 1;
    t->edit = token <= UINT32_MAX ? (uint32_t)token : 0;
    return t;
}

osp_map *osp_map_seal(osp_map *m) {
    if (m->edit) m->edit = 0; /* a persistent map (never transient) is not written at all */
    return m;
}

osp_map *osp_map_set(osp_map *m, const char *key, osp_word v) {
    if (key == NULL) key = "";
    upd u = {osp_map_hash(key), key, v, NULL, m->edit, false};
    hnode *root = insert(m->root, &u, 0);
    if (m->edit) {
        m->root = root;
        m->count += u.added ? 1 : 0;
        return m;
    }
    return wrap(root, m->count + (u.added ? 1 : 0));
}

osp_rres osp_map_get(const osp_map *m, const char *key) {
    if (key == NULL) key = "";
    const entry *e = find(m->root, osp_map_hash(key), key);
    if (e == NULL)
        return (osp_rres){OSP_RESULT_ERROR, (osp_word)(uintptr_t)"mapGet: key not found"};
    return (osp_rres){OSP_RESULT_SUCCESS, e->value};
}

osp_map *osp_map_remove(osp_map *m, const char *key) {
    if (key == NULL) key = "";
    if (m->root == NULL) return m;
    upd u = {osp_map_hash(key), key, 0, NULL, m->edit, false};
    hnode *root = erase(m->root, &u, 0);
    if (!u.added) return m;
    if (m->edit) {
        m->root = root;
        m->count--;
        return m;
    }
    return wrap(root, m->count - 1);
}

/* Visit every entry in iteration order: slots in increasing index, depth first. */
static void each(const hnode *nd, int depth, void (*fn)(const entry *, void *), void *ctx) {
    if (nd == NULL) return;
    if (depth == HAMT_LEVELS) {
        for (int i = 0; i < nd->n; i++) fn(nd->slot[i], ctx);
        return;
    }
    uint32_t rest = nd->bitmap;
    for (int i = 0; i < nd->n; i++, rest &= rest - 1) {
        unsigned bit = (unsigned)__builtin_ctz(rest); /* slot i is the i-th set bit */
        if (nd->nodemap & (1u << bit))
            each(nd->slot[i], depth + 1, fn, ctx);
        else
            fn(nd->slot[i], ctx);
    }
}

static void merge_one(const entry *e, void *ctx) {
    osp_map **acc = ctx;
    upd u = {e->hash, e->key, e->value, (entry *)e, 0, false};
    hnode *root = insert((*acc)->root, &u, 0);
    *acc = wrap(root, (*acc)->count + (u.added ? 1 : 0));
}

osp_map *osp_map_merge(const osp_map *a, const osp_map *b) {
    if (b->count == 0) return (osp_map *)a;
    if (a->count == 0) return (osp_map *)b;
    osp_map *acc = (osp_map *)a;
    each(b->root, 0, merge_one, &acc); /* b's entries into a, in b's order; b wins */
    return acc;
}

bool osp_map_contains(const osp_map *m, const char *key) {
    if (key == NULL) key = "";
    return find(m->root, osp_map_hash(key), key) != NULL;
}

int64_t osp_map_length(const osp_map *m) {
    return m->count;
}

typedef struct collect_ctx {
    osp_word *out;
    int64_t i;
    bool keys;
} collect_ctx;

static void collect_one(const entry *e, void *ctx) {
    collect_ctx *c = ctx;
    c->out[c->i++] = c->keys ? (osp_word)(uintptr_t)e->key : e->value;
}

static osp_list *to_list(const osp_map *m, bool keys) {
    if (m->count == 0) return osp_list_new(0, NULL);
    collect_ctx c = {osp_gc_alloc((size_t)m->count * sizeof(osp_word)), 0, keys};
    each(m->root, 0, collect_one, &c);
    return osp_list_new(c.i, c.out);
}

osp_list *osp_map_keys(const osp_map *m) {
    return to_list(m, true);
}
osp_list *osp_map_values(const osp_map *m) {
    return to_list(m, false);
}
