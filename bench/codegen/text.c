/* bench: tokenise a text on spaces, upper-case each word and classify it, as text.osp. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    static const char *vocab[] = {"alpha",   "beta", "gamma", "delta",
                                  "epsilon", "zeta", "eta",   "theta"};
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    for (long i = 0; i < 50000; i++)
        len += (size_t)snprintf(text + len, cap - len, "%s%s", i ? " " : "", vocab[i * 5 % 8]);
    long acc = 0;
    for (long k = 0; k < 160; k++) {
        long sum = k;
        char *copy = strdup(text), *save = NULL;
        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            size_t n = strlen(w);
            char *u = malloc(n + 1);
            for (size_t i = 0; i <= n; i++) u[i] = (char)toupper((unsigned char)w[i]);
            long s = u[0] == 'E' ? 3 : strstr(w, "ta") ? 2 : 1;
            sum += s + (long)n;
            free(u);
        }
        free(copy);
        acc += sum;
    }
    printf("%ld\n", acc);
    free(text);
    return 0;
}
