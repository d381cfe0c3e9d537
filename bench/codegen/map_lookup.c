/* bench: lookups in an open-addressing hash table of 1000 string keys, as map_lookup.osp. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef struct entry {
    char *key;
    long value;
} entry;
static entry table[2048];
static uint32_t fnv1a(const char *s) {
    uint32_t h = 0x811C9DC5u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x01000193u;
    return h;
}
static entry *slot(const char *key) {
    uint32_t i = fnv1a(key) & 2047;
    while (table[i].key && strcmp(table[i].key, key) != 0) i = (i + 1) & 2047;
    return &table[i];
}
int main(void) {
    char *keys[1000];
    for (long i = 0; i < 1000; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "key%ld", i);
        keys[i] = strdup(buf);
        entry *e = slot(keys[i]);
        e->key = keys[i];
        e->value = i;
    }
    long acc = 0;
    for (long i = 0; i < 3000000; i++) {
        entry *e = slot(keys[i % 1000]);
        long r;
        if (!__builtin_add_overflow(acc, e->key ? e->value : 0, &r)) acc = r;
    }
    printf("%ld\n", acc);
    return 0;
}
