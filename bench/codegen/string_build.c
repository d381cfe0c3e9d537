/* bench: string building into a growing buffer with snprintf, as string_build.osp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    long acc = 0;
    for (long k = 0; k < 180; k++) {
        size_t len = 0, cap = 64;
        char *buf = malloc(cap);
        buf[0] = '\0';
        for (long i = 0; i < 20000; i++) {
            char piece[64];
            long v = i + k;
            int n = snprintf(piece, sizeof piece, "%s%ld:%ld;", i ? "," : "", v, v * 3);
            while (len + (size_t)n + 1 > cap) buf = realloc(buf, cap *= 2);
            memcpy(buf + len, piece, (size_t)n + 1);
            len += (size_t)n;
        }
        acc += (long)strlen(buf);
        free(buf);
    }
    printf("%ld\n", acc);
    return 0;
}
