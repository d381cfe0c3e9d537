/*
 * ospprof.h — the profile post-processor: raw profile → symbolized profile model →
 * exports (.speedscope.json, .cpuprofile, .folded, .profile.json, .svg) and terminal report.
 *
 * Source: docs/spec/profiler.md §(e)–(i) as revised by §(l.6) (exports) and §(l.7) (report);
 * the files and the report are described for users in docs/profile-formats.md. Every exported symbol of
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
     * <prefix>.speedscope.json, .cpuprofile, .folded, .profile.json and .svg, all written to
     * temporaries in the same directory first and renamed only when all were written
     * (§(l.6): replaced as a set). Required. */
    const char *output_prefix;
    /* Where the terminal report (§(h), §(l.7)) goes; NULL: no report. The CLI passes stderr
     * (stdout with --report-to-stdout). */
    FILE *report;
    /* Colour escapes in the report. Decide with ospprof_color_wanted(report). */
    bool color;
    /* Terminal width in columns for the report: rows and hot lines are cut with "…" to fit
     * (§(l.7)); 0: no terminal, a row's name and location stop at OSPPROF_REPORT_MAX_CELLS
     * cells and a hot line at 160. Decide with ospprof_terminal_columns(report). */
    int columns;
    /* 0: the program ran to its end; N: it was ended by signal N (§(l.5)), and the report's
     * header says "(interrupted by SIGINT)" etc. Set by the driver. */
    int interrupted_signal;
    /* Where warnings go, one line each, "osprey: warning: <message>" (e.g. a --binary whose
     * build-id or architecture does not match, §(l.6)); NULL: stderr. */
    FILE *warnings;
    /* Symbolizer: "llvm", "none" or NULL (= the OSPREY_PROFILE_SYMBOLIZER environment
     * variable, default "llvm"). Unknown values behave as "llvm"; an unknown value of the
     * variable is said once per process on stderr. */
    const char *symbolizer;
    /* --pprof: also write <prefix>.pb.gz (§(l.6)) as a member of the set. */
    bool pprof;
    /* Filters (§(l.8)), applied to the model once, before every export and the report.
     * focus: keep only samples with a frame whose name, or whose image basename, matches this
     * POSIX extended regex; ignore: drop those samples; fibers[0..nfibers): keep only samples
     * of rows whose display label is one of these. NULL / 0: no such filter. */
    const char *focus;
    const char *ignore;
    const char *const *fibers;
    size_t nfibers;
} ospprof_options;

/*
 * Run the whole post-processing pipeline (§(e)–(h), §(l.6), §(l.7)): read and validate the
 * raw file, symbolize, build the model, print the build's warnings, write the five exports as
 * a set, print the report.
 * Returns 0 on success. On failure returns -1 and writes one line, without a trailing
 * newline and without a "osprey: " prefix, into err[0..errlen) (e.g.
 * "<path>: missing key \"samples\"" or "cannot write out/x.cpuprofile: Permission
 * denied"). Nothing is left half-written and no previous export changes on failure.
 * Symbolization problems never fail the run (they may be warnings).
 */
int ospprof_run(const ospprof_options *opts, char *err, size_t errlen);

/*
 * True when the report should use colour (§(h).5): `out` is a terminal and NO_COLOR is
 * unset or empty.
 */
bool ospprof_color_wanted(FILE *out);

/*
 * The width to cut the report to (§(l.7)): 0 when `out` is not a terminal; else COLUMNS when
 * it is a positive number, else the terminal's window width, else 80.
 */
int ospprof_terminal_columns(FILE *out);

/* `s` as it may be shown on a terminal: control characters as '?', bytes that are not UTF-8
 * as U+FFFD (docs/ARCHITECTURE.md "Untrusted text on a terminal"). malloc'd (free it). */
char *ospprof_term_string(const char *s);

/* Without a terminal, a report's name column stops at this many cells, with "…" (a frame
 * name read from a collapsed-stacks file or a symbol table can be megabytes long). */
#define OSPPROF_REPORT_MAX_CELLS 400

/* Number of export files and their suffixes, in the order the report lists them:
 * ".speedscope.json", ".cpuprofile", ".folded", ".profile.json", ".svg". */
#define OSPPROF_NEXPORTS 5
extern const char *const ospprof_export_ext[OSPPROF_NEXPORTS];

/* Suffix of the optional pprof export (§(l.6)). */
#define OSPPROF_PPROF_EXT ".pb.gz"

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

/* Largest raw profile ospprof_raw_load reads: 1 GiB (about 30 million samples), so an input
 * that never ends (`yes | osprey --postprocess /dev/stdin`) is refused instead of filling
 * memory. OSPREY_PROFILE_MAX_RAW_BYTES (a positive byte count) overrides it. */
#define OSPPROF_RAW_MAX_BYTES ((size_t)1 << 30)
size_t ospprof_raw_max_bytes(void);

/*
 * Read and validate the raw profile at `path` (§(e)). Returns a new raw profile (free
 * with ospprof_raw_free) or NULL with the §(e) message "<path>: <problem>" in err; an input
 * longer than ospprof_raw_max_bytes() gives "<path>: larger than the limit of N bytes for a
 * raw profile"; a raw control byte inside a string is "not valid JSON at byte K".
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

/*
 * The five exports of §(l.6) at <prefix><ext> as a set: every temporary is written first and
 * the renames happen only when all succeeded; on any failure none of the previous files
 * changes. 0, or -1 with "cannot write <path>: <error>" in err.
 */
int ospprof_write_exports(const ospprof_profile *prof, const char *prefix, char *err,
                          size_t errlen);

/*
 * Check the §(l.8) filter patterns of `o` (focus, ignore) before any work: 0, or -1 with
 * "--focus: bad regular expression '<pattern>': <regerror text>" in err (the CLI exits 2).
 */
int ospprof_filter_check(const ospprof_options *o, char *err, size_t errlen);

/*
 * Apply the §(l.8) filters of `o` (focus, ignore, fibers) to `prof` in place: samples are kept
 * or dropped whole (their weights and stacks unchanged), then every total is recomputed from
 * the kept samples, and the report's header names the filters and the share of on-CPU weight
 * that remains. A filter that keeps nothing is not an error, but adds a warning to prof's
 * warnings (ospprof_profile_warnings): one per --fiber label that names no fiber with samples
 * ("no fiber matches 'x' (fibers: main, fiber-1)"), else "the filters (…) left no samples" (or
 * "… no on-CPU samples"). No filter set: nothing changes. 0, or -1 (a bad pattern, err as
 * ospprof_filter_check; prof unchanged).
 */
int ospprof_profile_filter(ospprof_profile *prof, const ospprof_options *o, char *err,
                           size_t errlen);

/* ospprof_write_exports, plus <prefix>.pb.gz in the same set when `pprof` (§(l.6)). */
int ospprof_write_exports_ex(const ospprof_profile *prof, const char *prefix, bool pprof, char *err,
                             size_t errlen);

/* Each export alone (§(g.2)–(g.5), §(l.6)), written to `path` through a temporary file in the
 * same directory and renamed. 0 on success, -1 with "cannot write <path>: <error>" in err.
 * ospprof_write_svg: the interactive flame graph (docs/profile-formats.md). */
int ospprof_write_speedscope(const ospprof_profile *prof, const char *path, char *err,
                             size_t errlen);
int ospprof_write_cpuprofile(const ospprof_profile *prof, const char *path, char *err,
                             size_t errlen);
int ospprof_write_folded(const ospprof_profile *prof, const char *path, char *err, size_t errlen);
int ospprof_write_summary(const ospprof_profile *prof, const char *path, char *err, size_t errlen);
int ospprof_write_svg(const ospprof_profile *prof, const char *path, char *err, size_t errlen);
/* The pprof export (§(l.6)): gzip'd profile.proto, sample types samples/count and
 * cpu/nanoseconds (default), on-CPU samples with a `fiber` label, one location per recorded
 * address (its inline frames as lines, innermost first), one mapping per image. */
int ospprof_write_pprof(const ospprof_profile *prof, const char *path, char *err, size_t errlen);

/*
 * Print the terminal report (§(h) as revised by §(l.7)) to `out`: header, fiber split,
 * function table, up to 5 hot lines with their source text, the low-sample note, and the
 * profile:/view: lines naming the five files at `output_prefix` (paths as the CLI wrote
 * them, control characters shown as '?'). Returns 0, or -1 when writing failed.
 * ospprof_report_ex takes color, columns and interrupted_signal from `style` (its other
 * fields are ignored); ospprof_report is the same with no width limit and no signal.
 */
int ospprof_report(const ospprof_profile *prof, const char *output_prefix, bool color, FILE *out);
int ospprof_report_ex(const ospprof_profile *prof, const char *output_prefix,
                      const ospprof_options *style, FILE *out);

/* One-line warnings ospprof_profile_build and ospprof_profile_filter produced for `prof` (e.g.
 * an unusable --binary, a filter that kept nothing); borrowed, valid while prof lives. Returns
 * the count, fills *out. */
size_t ospprof_profile_warnings(const ospprof_profile *prof, const char *const **out);

/* ---- Comparisons (docs/spec/profiler.md §(l.8)) ------------------------------------------ */

/* Two profiles' stacks, each with a base (side 0) and a new (side 1) count, compared as one
 * tree of stacks; opaque. */
typedef struct ospprof_diff ospprof_diff;

ospprof_diff *ospprof_diff_new(void);
void ospprof_diff_free(ospprof_diff *d);

/*
 * Add a collapsed-stacks document text[0..len) to `side` (0 base, 1 new): lines
 * `<frame>;<frame>;… <count>` (root first, count a decimal integer after the last space or
 * tab; blank lines and \r\n endings accepted; frames may contain spaces). `name` is the file
 * name used in messages. 0, or -1 with "<name>:<line>: not a collapsed-stacks line (…)" (or
 * "… a NUL byte", "… count too large") in err; lines before the bad one stay added. A
 * differential file (ospprof_diff_write's `<stack> <base> <new>`: every non-blank line ends
 * in two integers, each after a space or tab) is refused once read whole, with
 * "<name>:<first line>: this is a differential folded file (two counts per line); pass the
 * folded stacks it was made from" (its lines stay added).
 */
int ospprof_diff_add_folded(ospprof_diff *d, int side, const char *name, const char *text,
                            size_t len, char *err, size_t errlen);

/* Add a built profile's on-CPU samples to `side`, one count per sample, as its .folded counts
 * them (fiber label first, names sanitised). Returns 0. */
int ospprof_diff_add_profile(ospprof_diff *d, int side, const ospprof_profile *prof);

/* Add the file at `path`: a raw profile (its first non-blank byte is '{'; read, validated and
 * symbolized with `symbolizer` as in ospprof_options) or a collapsed-stacks file. 0, or -1
 * with one line naming the file (and the line for collapsed stacks) in err. The symbolizer's
 * warnings about a raw profile (a moved executable, …) go to stderr, one
 * "osprey: warning: <path>: <warning>" line each, and so does "osprey: warning: <path>: no
 * samples" for a file that added nothing to its side (empty, a byte order mark or blank
 * lines alone, counts of 0, a raw profile without samples; "no on-CPU samples (only waiting
 * ones)" for a raw profile of waiting samples): not an error, the side stays empty. */
int ospprof_diff_add_file(ospprof_diff *d, int side, const char *path, const char *symbolizer,
                          char *err, size_t errlen);

/* Each side's total count (the normaliser of its shares). */
void ospprof_diff_totals(const ospprof_diff *d, uint64_t *base, uint64_t *new_);

/* One function (by name, merged over every stack) of a diff: counts and shares (percent of
 * its side's total) on each side ([0] base, [1] new); deltas are new minus base, in points.
 * A function's total counts each stack once however often it recurses. */
typedef struct ospprof_diff_func {
    const char *name; /* borrowed from the diff */
    uint64_t self[2], total[2];
    double self_pct[2], total_pct[2];
    double self_delta, total_delta;
} ospprof_diff_func;

/* Every function with a count on either side into *out (malloc'd; free it); the count. */
int ospprof_diff_functions(const ospprof_diff *d, ospprof_diff_func **out);

/* "#rrggbb" for a change of `delta_points` when the largest change drawn is `max_points`:
 * red for more, blue for less, white for none, saturation growing with |delta| / max. */
void ospprof_diff_color(double delta_points, double max_points, char out[8]);

/* <prefix>.diff.svg (differential flame graph of the new side, titled `title`) and
 * <prefix>.diff.folded (`<stack> <base> <new>` lines sorted bytewise), replaced as a set.
 * 0, or -1 with "cannot write <path>: <reason>" (no file changed). */
int ospprof_diff_write(const ospprof_diff *d, const char *prefix, const char *title, char *err,
                       size_t errlen);

/* The comparison report: both totals, then the functions whose self share rose and fell most
 * and the same for total share (10 each), then the files written. Names are filtered for
 * control characters and invalid UTF-8 and cut to `columns` (the terminal's width; 0 for no
 * terminal: OSPPROF_REPORT_MAX_CELLS cells). 0, or -1 on a write error. */
int ospprof_diff_report(const ospprof_diff *d, const char *base_name, const char *new_name,
                        const char *prefix, int columns, FILE *out);

/* `osprey --diff`: read both inputs, write both files, print the report to `report` (NULL:
 * none) cut to `columns` as ospprof_diff_report does. 0, or -1 with one line in err (nothing
 * written on an input error). Warnings about the inputs go to stderr as
 * ospprof_diff_add_file's do, the base's first. */
int ospprof_diff_run(const char *base, const char *new_, const char *prefix, FILE *report,
                     int columns, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* OSPPROF_H */
