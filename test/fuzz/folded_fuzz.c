/*
 * folded_fuzz.c — libFuzzer target for the collapsed-stacks reader of `osprey --diff`
 * (docs/spec/profiler.md §(l.8)) and the diff behind it: every input is either refused with
 * one line "fuzz.folded:<line>: …", or is compared with a fixed base profile, its two files
 * written and its report printed; the three-column file's columns must sum to the two totals
 * and none of its stacks may hold an empty frame.
 *
 * Built two ways:
 *  - with -fsanitize=fuzzer,address by test/fuzz/folded_fuzz.sh (the fuzzing run);
 *  - linked with replay_main.c (ctest "postprocess_folded_fuzz_corpus"),
 *    which replays every file of test/fuzz/folded_corpus in every build.
 */
#include "internal.h"
#include "replay_main.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static char outdir[256];

static void setup(void) {
    if (outdir[0]) return;
    const char *t = getenv("TMPDIR");
    snprintf(outdir, sizeof outdir, "%s/ospprof-folded-fuzz-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(outdir)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    static const char base[] = "main;work 4\nmain;helper;[libz.so.1] 2\nfiber-1;main;work 3\n";
    char err[OSPPROF_ERR_MAX];
    ospprof_diff *d = ospprof_diff_new();
    if (ospprof_diff_add_folded(d, 0, "base.folded", base, sizeof base - 1, err, sizeof err))
        abort();
    err[0] = 0;
    if (ospprof_diff_add_folded(d, 1, "fuzz.folded", (const char *)data, size, err, sizeof err)) {
        if (strncmp(err, "fuzz.folded:", 12) != 0 || strchr(err, '\n')) abort();
        ospprof_diff_free(d);
        return 0;
    }
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s/f", outdir);
    if (ospprof_diff_write(d, prefix, "fuzz", err, sizeof err)) abort();
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        if (ospprof_diff_report(d, "base", "fuzz", "f", 0, null)) abort();
        fclose(null);
    }
    /* the three-column file holds every count exactly once */
    uint64_t tb, tn, sb = 0, sn = 0;
    ospprof_diff_totals(d, &tb, &tn);
    char path[320];
    snprintf(path, sizeof path, "%s.diff.folded", prefix);
    FILE *f = fopen(path, "rb");
    if (!f) abort();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        char *sp2 = strrchr(line, ' ');
        if (!sp2) abort();
        *sp2 = 0;
        char *sp1 = strrchr(line, ' ');
        if (!sp1) abort();
        /* every frame has a name: no empty one (";;", a leading or a trailing ';') */
        *sp1 = 0;
        size_t sl = strlen(line);
        if (sl == 0 || line[0] == ';' || line[sl - 1] == ';' || strstr(line, ";;")) abort();
        sb += strtoull(sp1 + 1, NULL, 10);
        sn += strtoull(sp2 + 1, NULL, 10);
    }
    free(line);
    fclose(f);
    if (sb != tb || sn != tn) abort();
    ospprof_diff_free(d);
    return 0;
}

/* After the replay: remove the temporary output directory. */
int fuzz_replay_finish(FILE *out) {
    (void)out;
    if (!outdir[0]) return 0;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", outdir);
    return system(cmd) != 0;
}
