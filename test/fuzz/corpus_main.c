/*
 * corpus_main.c — regression test over the fuzzing corpus: feeds every file in the
 * given directories through the front end (as the fuzzer did) with a plain main, so
 * it runs in every build, including the sanitizer build. Exit 0 when every input was
 * processed (crashes and sanitizer reports fail the test by themselves); prints the
 * number of inputs and how many were accepted without diagnostics.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

static int run_file(const char *path, FILE *sink, int *clean) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "corpus: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return -1;
    int nerrors = 0;
    Program *p = osp_frontend_run(path, path, buf, n, sink, &nerrors);
    osp_program_free(p);
    free(buf);
    if (nerrors == 0) (*clean)++;
    return 0;
}

int main(int argc, char **argv) {
    FILE *sink = fopen("/dev/null", "w");
    if (!sink) return 2;
    int total = 0, clean = 0, failures = 0;
    for (int i = 1; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "corpus: cannot open directory %s\n", argv[i]);
            failures++;
            continue;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.') continue;
            size_t len = strlen(argv[i]) + strlen(de->d_name) + 2;
            char *path = malloc(len);
            if (!path) return 2;
            snprintf(path, len, "%s/%s", argv[i], de->d_name);
            if (run_file(path, sink, &clean) != 0) failures++;
            total++;
            free(path);
        }
        closedir(d);
    }
    fclose(sink);
    printf("corpus: %d inputs, %d without diagnostics, %d unreadable\n", total, clean, failures);
    return failures || total == 0 ? 1 : 0;
}
