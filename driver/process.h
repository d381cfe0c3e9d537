/*
 * process.h — the driver's file-system, process and signal helpers. Only the driver spawns
 * processes (docs/ARCHITECTURE.md): always posix_spawn with an argument vector, never a shell.
 *
 * Signals (docs/compiler.md "Signals"). proc_signals_init() blocks SIGINT, SIGQUIT,
 * SIGTERM, SIGHUP and SIGPIPE in every driver thread and handles them on one dedicated
 * thread (sigwait), so the clean-up never runs inside an asynchronous signal handler:
 *  - while a tool (the link compiler, dsymutil) runs: SIGTERM/SIGHUP are forwarded to it;
 *    when it has exited the driver removes its temporaries and dies of the signal;
 *  - while the user's program runs (--run/--profile): SIGTERM/SIGHUP are forwarded to it,
 *    SIGINT/SIGQUIT are ignored (the terminal delivers them to the program too) and the
 *    driver carries on when the program exits (its status is the driver's);
 *  - otherwise (front end, code generation, post-processing, ...): the driver removes the
 *    scratch directory, the temporary output being written and the post-processor's
 *    temporary exports, then dies of the signal (exit status 128 + N for the shell).
 * A write to a closed pipe therefore fails with EPIPE instead of killing the driver.
 */
#ifndef OSPREY_PROCESS_H
#define OSPREY_PROCESS_H

#include <stdbool.h>
#include <stddef.h>

/* Start the signal thread described above. Call first thing in main(), before any other
 * thread exists. Returns 0, or -1 with a message on stderr (the driver then runs with the
 * default dispositions). */
int proc_signals_init(void);

/* What proc_run starts: a build tool, or the user's program. */
typedef enum proc_kind { PROC_TOOL, PROC_PROGRAM } proc_kind;

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
