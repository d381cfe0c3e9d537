/*
 * process.h — the driver's file-system and process helpers. Only the driver spawns
 * processes (DESIGN.md): always posix_spawn with an argv array, never a shell.
 */
#ifndef OSPREY_PROCESS_H
#define OSPREY_PROCESS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Run `argv[0]` (searched in PATH when it has no '/') with `argv`, stdio inherited,
 * environment `envp` (NULL: the driver's own). Waits for it. Returns the exit
 * status: the exit code, 128 + N if killed by signal N, or -1 if it could not be
 * started (errno-style message printed to stderr, naming argv[0]).
 * While waiting, SIGINT/SIGQUIT are ignored by the driver (the terminal delivers them
 * to the child too) and SIGTERM/SIGHUP are forwarded to the child.
 */
int proc_run(char *const argv[], char *const envp[]);

/* Create a private (0700) scratch directory under $TMPDIR or /tmp. Returns a malloc'd
 * path, or NULL with a message on stderr. */
char *scratch_create(void);

/* Remove the scratch directory and every file in it (not recursive into subdirectories). */
void scratch_remove(const char *dir);

/* Directory holding the running executable (malloc'd), or NULL. */
char *self_dir(void);

/* Read a whole file; returns malloc'd bytes (NUL-terminated) and its length, or NULL
 * with errno set. */
char *read_file(const char *path, size_t *len);

/* 8 random hex digits (for scratch file names). `out` holds at least 9 bytes. */
void random_hex(char out[9]);

#endif
