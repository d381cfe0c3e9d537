/*
 * replay_main.c — the corpus replay shared by the libFuzzer targets (cfi_fuzz.c,
 * postprocess_fuzz.c, folded_fuzz.c, fuzz_attach_elf.c): linked with a target instead of
 * libFuzzer's main, it feeds every file of the given corpus directories to
 * LLVMFuzzerTestOneInput once, as an exact-size heap copy (so ASan sees a read past the
 * end), then calls the target's fuzz_replay_finish if it has one.
 *
 * Usage: <target>_replay <corpus-dir>...  Prints "replayed N inputs" (and what the target
 * appends); exits 1 if a directory cannot be opened, no input ran, or the finish hook
 * failed. Crashes and sanitizer reports fail the run by themselves.
 */
#include "replay_main.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The whole file at `path` into a malloc'd buffer of exactly its size; NULL if unreadable. */
static uint8_t *read_input(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return NULL;
    }
    uint8_t *exact = malloc(n ? n : 1); /* exact size: a read past the input is a heap overflow */
    if (exact) memcpy(exact, buf, n);
    free(buf);
    *len = n;
    return exact;
}

int main(int argc, char **argv) {
    size_t n = 0;
    for (int a = 1; a < argc; a++) {
        DIR *dir = opendir(argv[a]);
        if (!dir) {
            fprintf(stderr, "cannot open %s\n", argv[a]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            size_t len;
            uint8_t *buf = read_input(path, &len);
            if (!buf) continue;
            LLVMFuzzerTestOneInput(buf, len);
            free(buf);
            n++;
        }
        closedir(dir);
    }
    printf("replayed %zu inputs", n);
    int rc = n ? 0 : 1;
    if (fuzz_replay_finish && fuzz_replay_finish(stdout) != 0) rc = 1;
    printf("\n");
    return rc;
}
