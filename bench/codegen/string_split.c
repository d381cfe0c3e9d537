/* bench: split a comma-separated line into fields and strtol each, as string_split.osp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    size_t cap = 1 << 20, len = 0;
    char *line = malloc(cap);
    for (long i = 0; i < 20000; i++)
        len += (size_t)snprintf(line + len, cap - len, "%s%ld", i ? "," : "", i * 37 % 10007);
    long acc = 0;
    for (long k = 0; k < 600; k++) {
        long sum = k;
        char *copy = strdup(line), *save = NULL;
        for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save))
            sum += strtol(f, NULL, 10);
        free(copy);
        acc += sum;
    }
    printf("%ld\n", acc);
    free(line);
    return 0;
}
