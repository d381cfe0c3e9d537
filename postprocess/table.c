/*
 * table.c — the two hash tables of the model: interned strings addressed by id, and a map
 * keyed by two 64-bit words holding a 32-bit value (open addressing, linear probing).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- string table ---------------------------------------------------------------- */

/* A word at a time (frame names run to kilobytes: C++ templates): each 8-byte word mixed by
 * a multiply and a rotate, the length folded in, then a final avalanche. Not FNV's byte loop,
 * which was the whole cost of interning the frames of a large collapsed-stacks file. */
static uint64_t hash_bytes(const char *s, size_t n) {
    const uint64_t k = 0x9E3779B97F4A7C15ull;
    uint64_t h = 0x6A09E667F3BCC909ull ^ (n * k);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, s + i, n - i);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    return h ^ (h >> 32);
}

uint32_t ospprof_intern(ospprof_strtab *t, const char *s, size_t len) {
    if (t->nslots == 0 || (t->n + 1) * 2 > t->nslots) {
        size_t ns = t->nslots ? t->nslots * 2 : 1024;
        uint32_t *slots = ospprof_xcalloc(ns, sizeof *slots);
        for (size_t i = 0; i < t->n; i++) {
            size_t h = hash_bytes(t->str[i], t->len[i]) & (ns - 1);
            while (slots[h]) h = (h + 1) & (ns - 1);
            slots[h] = (uint32_t)i + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->nslots = ns;
    }
    size_t h = hash_bytes(s, len) & (t->nslots - 1);
    while (t->slots[h]) {
        uint32_t id = t->slots[h] - 1;
        if (t->len[id] == len && memcmp(t->str[id], s, len) == 0) return id;
        h = (h + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 256;
        t->str = ospprof_xrealloc(t->str, t->cap * sizeof *t->str);
        t->len = ospprof_xrealloc(t->len, t->cap * sizeof *t->len);
    }
    char *c = ospprof_xstrndup(s, len);
    t->str[t->n] = c;
    t->len[t->n] = len;
    t->slots[h] = (uint32_t)t->n + 1;
    return (uint32_t)t->n++;
}

void ospprof_strtab_free(ospprof_strtab *t) {
    for (size_t i = 0; i < t->n; i++) free(t->str[i]);
    free(t->str);
    free(t->len);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* ---- two-word hash map ------------------------------------------------------------ */

static size_t map_hash(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return (size_t)h;
}

static void map_grow(ospprof_map *m) {
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    uint64_t *ka = ospprof_xcalloc(ncap, sizeof *ka), *kb = ospprof_xcalloc(ncap, sizeof *kb);
    uint32_t *val = ospprof_xcalloc(ncap, sizeof *val);
    uint8_t *used = ospprof_xcalloc(ncap, 1);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        size_t h = map_hash(m->ka[i], m->kb[i]) & (ncap - 1);
        while (used[h]) h = (h + 1) & (ncap - 1);
        ka[h] = m->ka[i], kb[h] = m->kb[i], val[h] = m->val[i], used[h] = 1;
    }
    free(m->ka), free(m->kb), free(m->val), free(m->used);
    m->ka = ka, m->kb = kb, m->val = val, m->used = used, m->cap = ncap;
}

uint32_t *ospprof_map_put(ospprof_map *m, uint64_t a, uint64_t b, uint32_t fresh, bool *inserted) {
    if ((m->n + 1) * 2 > m->cap) map_grow(m);
    size_t h = map_hash(a, b) & (m->cap - 1);
    while (m->used[h]) {
        if (m->ka[h] == a && m->kb[h] == b) {
            if (inserted) *inserted = false;
            return &m->val[h];
        }
        h = (h + 1) & (m->cap - 1);
    }
    m->ka[h] = a, m->kb[h] = b, m->val[h] = fresh, m->used[h] = 1;
    m->n++;
    if (inserted) *inserted = true;
    return &m->val[h];
}

bool ospprof_map_get(const ospprof_map *m, uint64_t a, uint64_t b, uint32_t *v) {
    if (!m->cap) return false;
    size_t h = map_hash(a, b) & (m->cap - 1);
    while (m->used[h]) {
        if (m->ka[h] == a && m->kb[h] == b) {
            *v = m->val[h];
            return true;
        }
        h = (h + 1) & (m->cap - 1);
    }
    return false;
}

void ospprof_map_free(ospprof_map *m) {
    free(m->ka), free(m->kb), free(m->val), free(m->used);
    memset(m, 0, sizeof *m);
}
