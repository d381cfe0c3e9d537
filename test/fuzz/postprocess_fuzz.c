/*
 * postprocess_fuzz.c — libFuzzer target for the raw profile reader (docs/spec/profiler.md §(e)) and
 * everything behind it: every input either is rejected with one message, or is
 * symbolized (hex only: OSPREY_PROFILE_SYMBOLIZER=none), modelled, and exported.
 *
 * Built two ways:
 *  - with -fsanitize=fuzzer,address by test/fuzz/postprocess_fuzz.sh (the fuzzing run);
 *  - linked with replay_main.c (ctest "postprocess_fuzz_corpus"),
 *    which replays every file of the kept corpus in every build, sanitizers included.
 */
#include "internal.h"
#include "replay_main.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char outdir[256];

static void setup(void) {
    if (outdir[0]) return;
    const char *t = getenv("TMPDIR");
    snprintf(outdir, sizeof outdir, "%s/ospprof-fuzz-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(outdir)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    char err[OSPPROF_ERR_MAX];
    err[0] = 0;
    ospprof_raw *raw = ospprof_raw_parse("fuzz.json", (const char *)data, size, err, sizeof err);
    if (!raw) {
        /* exactly one line naming the file */
        if (strncmp(err, "fuzz.json: ", 11) != 0 || strchr(err, '\n')) abort();
        return 0;
    }
    ospprof_profile *p = ospprof_profile_build(raw, "fuzz.osp", NULL, "none", err, sizeof err);
    ospprof_raw_free(raw);
    if (!p) abort();
    char path[512];
    snprintf(path, sizeof path, "%s/f.speedscope.json", outdir);
    if (ospprof_write_speedscope(p, path, err, sizeof err)) abort();
    snprintf(path, sizeof path, "%s/f.cpuprofile", outdir);
    if (ospprof_write_cpuprofile(p, path, err, sizeof err)) abort();
    snprintf(path, sizeof path, "%s/f.folded", outdir);
    if (ospprof_write_folded(p, path, err, sizeof err)) abort();
    snprintf(path, sizeof path, "%s/f.profile.json", outdir);
    if (ospprof_write_summary(p, path, err, sizeof err)) abort();
    snprintf(path, sizeof path, "%s/f.svg", outdir);
    if (ospprof_write_svg(p, path, err, sizeof err)) abort();
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        ospprof_report(p, "f", true, null);
        ospprof_options style = {.columns = 40, .interrupted_signal = 2};
        ospprof_report_ex(p, "f", &style, null);
        fclose(null);
    }
    ospprof_profile_free(p);
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
