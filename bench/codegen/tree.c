/* bench: binary trees allocated with malloc, walked and freed, as tree.osp. */
#include <stdio.h>
#include <stdlib.h>
typedef struct node {
    struct node *l, *r;
    long v;
} node;
static node *make(long depth, long v) {
    if (depth == 0) return NULL;
    node *n = malloc(sizeof *n);
    n->l = make(depth - 1, v * 2);
    n->v = v;
    n->r = make(depth - 1, v * 2 + 1);
    return n;
}
static long check(const node *t) {
    if (!t) return 0;
    return check(t->l) + t->v % 7 + check(t->r) + 1;
}
static void release(node *t) {
    if (!t) return;
    release(t->l);
    release(t->r);
    free(t);
}
int main(void) {
    long acc = 0;
    for (long k = 0; k < 160; k++) {
        node *t = make(16, k);
        acc += check(t);
        release(t);
    }
    printf("%ld\n", acc);
    return 0;
}
