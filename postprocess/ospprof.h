/*
 * ospprof.h — the profile post-processor: raw profile → symbolized profile model →
 * exports (.speedscope.json, .cpuprofile, .folded, .profile.json) and terminal report.
 *
 * Source: profiler specification [PROF-SYMBOLIZE-OFFLINE], [PROF-CLI-RUN],
 * [PROF-CLI-REPORT] and docs/spec/profiler.md §(e)–(i). Every exported symbol of
 * libospprof.a starts with `ospprof_`.
 *
 * The library knows nothing about the Osprey language beyond "a frame whose file ends in
 * .osp/.ospml is user code"; it post-processes raw profiles from any native program.
 *
 * Typical use (the driver): fill an ospprof_options and call ospprof_run(). The staged
 * API below (load → profile → write/report) is what ospprof_run() does, exposed for tests
 * and tools.
 */
#ifndef OSPPROF_H
#define OSPPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Size of an error buffer big enough for every message this library produces
 * (longer messages are cut, never overflowed). */
#define OSPPROF_ERR_MAX 1024

/* What ospprof_run() does. Strings are borrowed for the duration of the call. */
typedef struct ospprof_options {
    /* Raw profile to read (docs/spec/profiler.md §(e)). Required. */
    const char *raw_path;
    /* Object that stands in for the main image when the recorded executable no longer
     * exists (docs/spec/profiler.md §(f).3: the binary the CLI just built, or --binary). NULL: none. */
    const char *binary;
    /* The program's source path exactly as given to the CLI: `program` in .profile.json,
     * its basename is speedscope's `name` and the report header. NULL: the raw `exe`. */
    const char *program;
    /* Export path without extension: "<dir>/<stem>" or "<stem>". The files are
     * <prefix>.speedscope.json, .cpuprofile, .folded and .profile.json, each written to
     * a temporary name in the same directory and renamed into place. Required. */
    const char *output_prefix;
    /* Where the terminal report (§(h)) goes; NULL: no report. */
    FILE *report;
    /* Colour escapes in the report. Decide with ospprof_color_wanted(). */
    bool color;
    /* Symbolizer: "llvm", "none" or NULL (= the OSPREY_PROFILE_SYMBOLIZER environment
     * variable, default "llvm"). Unknown values behave as "llvm". */
    const char *symbolizer;
    /* The signal that ended the profiled run early (SIGINT, SIGTERM, SIGHUP), or 0: the
     * report header then says "(interrupted by SIGINT)" (docs/spec/profiler.md §(l.5)). */
    int interrupted_signal;
} ospprof_options;

/*
 * Run the whole post-processing pipeline (§(e)–(h)): read and validate the raw file,
 * symbolize, build the model, write the four exports, print the report.
 * Returns 0 on success. On failure returns -1 and writes one line, without a trailing
 * newline and without a "osprey: " prefix, into err[0..errlen) (e.g.
 * "<path>: missing key \"samples\"" or "cannot write out/x.cpuprofile: Permission
 * denied"). Nothing is left half-written: exports already renamed into place stay,
 * the one being written is removed. Symbolization problems never fail the run.
 */
int ospprof_run(const ospprof_options *opts, char *err, size_t errlen);

/*
 * True when the report should use colour (§(h).5): `out` is a terminal and NO_COLOR is
 * unset or empty.
 */
bool ospprof_color_wanted(FILE *out);

/*
 * Remove the temporary files of exports being written at this moment (each export is
 * written to "<dir>/.<name>.XXXXXX" and renamed, §(i)). For a program about to die of a
 * signal: the driver's signal thread calls it so an interrupted post-processing leaves
 * no temporary behind. Thread-safe; the exports stay failed for their writer.
 */
void ospprof_remove_temporaries(void);

/* ---- Staged API ------------------------------------------------------------------ */

/* A validated raw profile (§(e)); opaque. */
typedef struct ospprof_raw ospprof_raw;
/* A symbolized, aggregated profile (§(f), §(g.1)); opaque. */
typedef struct ospprof_profile ospprof_profile;

/*
 * Read and validate the raw profile at `path` (§(e)). Returns a new raw profile (free
 * with ospprof_raw_free) or NULL with the §(e) message "<path>: <problem>" in err.
 * Addresses are parsed exactly as unsigned 64-bit integers. Samples are sorted stably by
 * time; missing optional keys are normalised as §(e) lists.
 */
ospprof_raw *ospprof_raw_load(const char *path, char *err, size_t errlen);

/* Same as ospprof_raw_load on an in-memory document of `len` bytes; `name` is the path
 * used in messages. The buffer need not be NUL-terminated and is not retained. */
ospprof_raw *ospprof_raw_parse(const char *name, const char *text, size_t len, char *err,
                               size_t errlen);

void ospprof_raw_free(ospprof_raw *raw);

/*
 * Symbolize `raw` (§(f)) and aggregate it (§(g.1)). `binary` substitutes for a missing
 * main image (may be NULL); `symbolizer` as in ospprof_options. `program` as in
 * ospprof_options (NULL: the raw exe). Never fails for symbolization problems; returns
 * NULL only when out of memory (err set). The raw profile may be freed afterwards.
 */
ospprof_profile *ospprof_profile_build(const ospprof_raw *raw, const char *program,
                                       const char *binary, const char *symbolizer, char *err,
                                       size_t errlen);

void ospprof_profile_free(ospprof_profile *prof);

/* Exports (§(g.2)–(g.5)), each written to `path` through a temporary file in the same
 * directory and renamed. 0 on success, -1 with "cannot write <path>: <error>" in err. */
int ospprof_write_speedscope(const ospprof_profile *prof, const char *path, char *err,
                             size_t errlen);
int ospprof_write_cpuprofile(const ospprof_profile *prof, const char *path, char *err,
                             size_t errlen);
int ospprof_write_folded(const ospprof_profile *prof, const char *path, char *err, size_t errlen);
int ospprof_write_summary(const ospprof_profile *prof, const char *path, char *err, size_t errlen);

/*
 * Print the terminal report (§(h)) to `out`. `output_prefix` is used for the profile:
 * and view: lines (paths as the CLI wrote them). Returns 0, or -1 when writing failed.
 */
int ospprof_report(const ospprof_profile *prof, const char *output_prefix, bool color, FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* OSPPROF_H */
