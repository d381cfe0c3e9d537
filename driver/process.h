/*
 * process.h — the driver's file-system, process and signal helpers. Only the driver spawns
 * processes (docs/ARCHITECTURE.md): always posix_spawn with an argument vector, never a shell.
 *
 * Signals (docs/compiler.md "Signals"). proc_signals_init() blocks SIGINT, SIGQUIT,
 * SIGTERM, SIGHUP and SIGPIPE in every driver thread and handles them on one dedicated
 * thread (sigwait), so the clean-up never runs inside an asynchronous signal handler:
 *  - while a tool (the link compiler, dsymutil) runs: SIGTERM/SIGHUP are forwarded to it;
 *    when it has exited the driver removes its temporaries and dies of the signal;
 *  - while the user's program runs (--run): SIGTERM/SIGHUP are forwarded to it,
 *    SIGINT/SIGQUIT are ignored (the terminal delivers them to the program too) and the
 *    driver carries on when the program exits (its status is the driver's);
 *  - while a profiled program runs (--profile, --record): SIGINT/SIGTERM/SIGHUP are
 *    forwarded too (unless the terminal sent them to the program already) and remembered,
 *    so the driver post-processes and exits 128 + N (proc_run_profiled);
 *  - while --attach samples: they stop the capture (proc_capture_begin);
 *  - otherwise (front end, code generation, post-processing, ...): the driver removes the
 *    scratch directory, the temporary output being written and the post-processor's
 *    temporary exports, then dies of the signal (exit status 128 + N for the shell).
 * A write to a closed pipe therefore fails with EPIPE instead of killing the driver.
 */
#ifndef OSPREY_PROCESS_H
#define OSPREY_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Start the signal thread described above. Call first thing in main(), before any other
 * thread exists. Returns 0, or -1 with a message on stderr (the driver then runs with the
 * default dispositions). */
int proc_signals_init(void);

/* What proc_run starts: a build tool, the user's program, or a program being profiled
 * (--profile, --record: SIGINT, SIGTERM and SIGHUP are forwarded and remembered). */
typedef enum proc_kind { PROC_TOOL, PROC_PROGRAM, PROC_PROFILED } proc_kind;

/*
 * Run `argv[0]` (searched in PATH when it has no '/') with `argv`, stdio inherited,
 * environment `envp` (NULL: the driver's own), no blocked signals and default
 * dispositions for the signals above. Waits for it. Returns the exit status: the exit
 * code, 128 + N if it was killed by signal N (then *termsig = N, else 0; termsig may be
 * NULL), or -1 if it could not be started (message naming argv[0] printed to stderr).
 * For PROC_TOOL, a terminating signal received meanwhile makes the driver clean up and
 * die of it once the tool has exited (never returns then).
 */
int proc_run(char *const argv[], char *const envp[], proc_kind kind, int *termsig);

/* How a profiled run ended (proc_run_profiled). */
typedef struct proc_outcome {
    int status;            /* as proc_run returns it: exit code, 128 + N, or -1 */
    int termsig;           /* the signal that killed the program, else 0 */
    int interrupt_sig;     /* first SIGINT/SIGTERM/SIGHUP the driver received meanwhile, else 0 */
    bool duration_expired; /* the driver sent SIGINT because the duration had passed */
} proc_outcome;

/* After --duration has expired and SIGINT was sent, the program gets this long before
 * SIGKILL (docs/spec/profiler.md §(l.5)). */
#define OSP_DURATION_KILL_NS ((uint64_t)5 * 1000 * 1000 * 1000)

/*
 * proc_run for a profiled program (docs/spec/profiler.md §(l.5)): SIGINT, SIGTERM and SIGHUP
 * the driver receives while it runs are forwarded to it — except a terminal's (si_code
 * SI_KERNEL: Ctrl-C, hang-up), which the program, in the same foreground process group,
 * has received already — and the first one is reported in out->interrupt_sig. With
 * `duration_ns` > 0 the program gets SIGINT after that many nanoseconds and SIGKILL
 * OSP_DURATION_KILL_NS later if it is still running. Fills *out; returns out->status.
 */
int proc_run_profiled(char *const argv[], char *const envp[], uint64_t duration_ns,
                      proc_outcome *out);

/*
 * An out-of-process capture (--attach, docs/spec/profiler.md §(l.9)) is running: from
 * proc_capture_begin to proc_capture_end, SIGINT, SIGQUIT, SIGTERM and SIGHUP do not end the
 * driver; the first one is remembered so the capture can detach cleanly and stop.
 * proc_capture_signal returns it (0: none yet; safe from any thread); proc_capture_end
 * returns it and restores the usual handling (a signal after that ends the driver).
 */
void proc_capture_begin(void);
int proc_capture_signal(void);
int proc_capture_end(void);

/* Create a private (0700) scratch directory under $TMPDIR or /tmp and register it for
 * removal on a terminating signal. Returns a malloc'd path, or NULL with a message on
 * stderr. */
char *scratch_create(void);

/* Remove the scratch directory and everything in it; unregisters it. NULL: nothing. */
void scratch_remove(const char *dir);

/* Register (path != NULL) or unregister (NULL) the one temporary output file the driver
 * is writing outside the scratch directory (e.g. "<out>.tmp.<pid>"), removed if a
 * terminating signal arrives before it is renamed into place. The path is copied. */
void cleanup_temp(const char *path);

/* Remove the registered scratch directory and temporary files, then terminate the
 * process with signal `sig` (default action; exit status 128 + sig for a shell). */
_Noreturn void die_by_signal(int sig);

/* Remove the registered scratch directory and temporary files, then _exit(status)
 * (no atexit handlers: used when memory has run out, see xalloc.h). */
_Noreturn void proc_exit_cleaned(int status);

/* Directory holding the running executable (malloc'd), or NULL when it cannot be found. */
char *self_dir(void);

/* Largest source file read_file accepts, in bytes (64 MiB). */
#define OSP_SOURCE_MAX ((size_t)64 << 20)

/* Read a whole file of at most `max` bytes; returns malloc'd bytes (NUL-terminated) and
 * its length, or NULL with errno set (EISDIR for a directory, EFBIG when it is longer
 * than `max`, e.g. /dev/zero). */
char *read_file(const char *path, size_t max, size_t *len);

/* 8 random hex digits (for scratch file names). `out` holds at least 9 bytes. */
void random_hex(char out[9]);

#endif
