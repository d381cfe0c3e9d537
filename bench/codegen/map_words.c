/* bench: word frequencies in an open-addressing hash table (FNV-1a, string keys), as
 * map_words.osp. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef struct entry {
    char *key;
    long count;
} entry;
static entry table[16384];
static long used;
static uint32_t fnv1a(const char *s) {
    uint32_t h = 0x811C9DC5u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x01000193u;
    return h;
}
static entry *slot(const char *key) {
    uint32_t i = fnv1a(key) & 16383;
    while (table[i].key && strcmp(table[i].key, key) != 0) i = (i + 1) & 16383;
    return &table[i];
}
int main(void) {
    char w[32];
    for (long i = 0; i < 300000; i++) {
        snprintf(w, sizeof w, "w%ld", i * 7919 % 5000);
        entry *e = slot(w);
        if (!e->key) {
            e->key = strdup(w);
            used++;
        }
        e->count++;
    }
    printf("%ld\n%ld\n", used, slot("w42")->count);
    return 0;
}
