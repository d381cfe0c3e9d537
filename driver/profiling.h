/*
 * profiling.h — the driver's profiling commands around a run: the checks made before a
 * profiled program starts, the profiled run itself with post-processing (`--profile`),
 * `--record` (any native program, preloaded runtime) and `--attach` (a running process,
 * sampled from outside by attach.h). docs/spec/profiler.md §(i), §(l.5), §(l.9);
 * user-facing description in docs/compiler.md.
 *
 * Exit-status rule shared by all three (docs/compiler.md "Profiling commands"): the
 * program's status, except that a SIGINT/SIGTERM/SIGHUP the driver received while the
 * program ran (or while it sampled) makes it 128 + N after the profile was processed.
 */
#ifndef OSPREY_PROFILING_H
#define OSPREY_PROFILING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parse a --duration value: decimal seconds greater than 0 and at most 10^7 (a fraction is
 * allowed, "2", "0.5", "1.25"; no sign, no exponent, nothing after it). Stores nanoseconds in
 * *duration_ns. Returns 0, or -1 when the text is not such a number (nothing stored).
 */
int prof_parse_duration(const char *text, uint64_t *duration_ns);

/*
 * The first export of `prefix` — the five, and `<prefix>.pb.gz` when `pprof` — that is the
 * file `protect` (out_same_file: links count), as a malloc'd path; NULL when none is, or
 * when `protect` is NULL.
 */
char *prof_export_clash(const char *prefix, bool pprof, const char *protect);

/*
 * docs/spec/profiler.md §(l.5): the exports of `prefix` ("dir/stem" or "stem") can be
 * written. Its directory must exist and be a directory, else one line
 * `osprey: error: cannot write the profile to '<dir>/': <reason>`; no export may be the
 * input `protect` (the source file, the program; may be NULL), else one line
 * `osprey: error: the export '<path>' would overwrite the <protect_what> '<protect>'`; then
 * each of the five exports, and `<prefix>.pb.gz` when `pprof` (--pprof), is checked with
 * out_check (its temporary is really created and removed), else one line
 * `osprey: error: cannot write '<prefix><ext>': <reason> (the profile exports)`.
 * Returns 0, or -1 after printing that line (callers exit 2, before anything runs).
 */
int prof_check_export_dir(const char *prefix, bool pprof, const char *protect,
                          const char *protect_what);

/* What the command line asks of every post-processing the driver runs: the report's stream
 * (--report-to-stdout) and the export and filter options (docs/spec/profiler.md §(l.6)
 * --pprof, §(l.8) --focus/--ignore/--fiber). The strings and the fibers array are borrowed
 * (argv) and outlive the run. --record and --attach pass only the report's stream. */
typedef struct prof_post_options {
    bool report_to_stdout;     /* the report on stdout instead of stderr */
    bool pprof;                /* also write <prefix>.pb.gz */
    const char *focus;         /* NULL: no --focus */
    const char *ignore;        /* NULL: no --ignore */
    const char *const *fibers; /* --fiber labels, nfibers of them */
    size_t nfibers;
} prof_post_options;

/*
 * Run argv (argv[0] a path or a name searched in PATH) as a profiled program and
 * post-process what it wrote (docs/spec/profiler.md §(i), §(l.5)): the raw profile goes to
 * "<scratch>/<stem>-<pid>-<random>.osprof.json" (checked creatable first), OSPREY_PROFILE
 * is set in its environment and, when `preload` is non-NULL, LD_PRELOAD=<preload> (ahead
 * of any LD_PRELOAD the driver has). `duration_ns` > 0: SIGINT after that long (process.h).
 * `binary` stands in for the main image (may be NULL), `program` names the profile in the
 * report, `prefix` is the export prefix, `no_raw_hint` (may be NULL) replaces the reason in
 * the warning printed when a program that exited normally left no raw profile; `post`
 * carries the command line's report stream, exports and filters. The raw file
 * is removed afterwards; the scratch directory is the caller's. Returns the exit status per
 * the rule above (1 if the program could not be started).
 */
int prof_run_and_postprocess(char *const argv[], const char *preload, const char *scratch,
                             const char *stem, uint64_t duration_ns, const char *binary,
                             const char *program, const char *prefix, const char *no_raw_hint,
                             const prof_post_options *post);

/*
 * osprey --record [-o <out>] [--duration <s>] -- <program> [args...] (docs/spec/profiler.md
 * §(l.9)): `args[0..nargs)` is the program and its arguments; `output` the -o prefix (NULL:
 * the program's basename in the current directory). Returns the exit status: the program's,
 * 127 when it cannot be found, 2 when the export directory is unusable, 1 when the profiler
 * runtime (<bindir>/../lib/libosprey_prof.so) is missing.
 */
int prof_record_main(char **args, int nargs, const char *output, uint64_t duration_ns,
                     const prof_post_options *post);

/*
 * osprey --attach <pid> [--duration <s>] [-o <out>] (docs/spec/profiler.md §(l.9)): sample the
 * running process `pid_text` with attach.h until the duration passes, a SIGINT/SIGTERM/
 * SIGHUP/SIGQUIT reaches osprey, or the process exits; detach; then write the exports
 * (default prefix "<name>-<pid>", name from /proc/<pid>/comm) and the report. Returns 0,
 * 128 + N when a signal N stopped it, or 2 for a refusal (one line naming cause and fix).
 */
int prof_attach_main(const char *pid_text, const char *output, uint64_t duration_ns,
                     const prof_post_options *post);

/* Defined in main.c, shared with these commands. */

/* Post-process `raw_path` into the exports at `prefix` and print the report; a problem is
 * one warning line (docs/spec/profiler.md §(i)). `interrupted_signal` (0: none) is passed to
 * the report header (§(l.5)); `post` gives the report's stream (stdout or stderr), --pprof
 * and the filters. */
void run_postprocess(const char *raw_path, const char *exe_path, const char *program,
                     const char *prefix, int interrupted_signal, const prof_post_options *post);

/* One line when the program was killed by signal `sig` (none for 0, SIGINT and SIGPIPE). */
void report_signal(int sig);

#endif
