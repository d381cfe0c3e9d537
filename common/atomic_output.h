/*
 * atomic_output.h — the one way the driver and the post-processor write output files
 * (docs/ARCHITECTURE.md "House conventions", docs/compiler.md "Output files",
 * docs/spec/profiler.md §(l.6) "replaced as a set").
 *
 * A file is written to a temporary in its destination's directory and renamed into place,
 * so a crash, a full disk or a signal never leaves half a file where a good one was:
 *  - the temporary is "<dir>/.<base>.XXXXXX" (six random characters from [A-Za-z0-9]),
 *    created with open(O_CREAT | O_EXCL, 0666), so the process umask applies by itself;
 *    <base> is cut to its first OSP_ATOMIC_TEMP_BASE_MAX bytes, so that the temporary of
 *    any name that fits in NAME_MAX (255) fits too;
 *  - an existing character device or FIFO (/dev/null, /dev/stdout on a pipe, a named pipe)
 *    is written in place and never replaced by a file;
 *  - a symbolic link to a regular file is followed: the file it points to is replaced in its
 *    own directory and the link stays a link;
 *  - a directory, a dangling symbolic link, a block device, a socket or any other kind of
 *    file is refused.
 * A set of files (osp_atomic_commit_set) is renamed only when every member was written;
 * if a rename fails midway, the members already renamed get their previous contents back.
 *
 * Errors: every function that can fail returns -1 and writes the reason, without the path
 * (e.g. "No such file or directory", "it is a symbolic link to a missing file"), into
 * reason[0..reasonlen); each caller words the message around it. Allocation failures print
 * `osprey: out of memory` and abort.
 *
 * Threads: functions on different osp_atomic_out values may run concurrently;
 * osp_atomic_remove_temporaries may run on any thread at any time (not in a signal handler).
 * The runtime's raw-profile writer keeps its own async-signal-aware copy
 * (runtime/prof), since it must not allocate or lock.
 */
#ifndef OSPREY_ATOMIC_OUTPUT_H
#define OSPREY_ATOMIC_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest <base> in a temporary's name: NAME_MAX − 8 ("." before it, ".XXXXXX" after). */
#define OSP_ATOMIC_TEMP_BASE_MAX 247

/* One output file being written. Zero-initialise or fill with osp_atomic_open. */
typedef struct osp_atomic_out {
    int fd;     /* open descriptor; -1 once closed */
    char *dest; /* owned: the rename target; NULL when written in place (a stream) */
    char *tmp;  /* owned: the temporary; NULL when written in place */
} osp_atomic_out;

/*
 * Decide how `path` would be written (rules above) without creating anything. On success
 * returns 0 and sets *dest to the malloc'd rename target (free it), or to NULL for a stream
 * written in place (then `path` must be writable). A new or regular file's directory must
 * exist, be a directory and accept a new file. Returns -1 with the reason otherwise.
 */
int osp_atomic_resolve(const char *path, char **dest, char *reason, size_t reasonlen);

/*
 * osp_atomic_resolve, then, for a file (not a stream), a real try: the temporary
 * "<dir>/.<base>.XXXXXX" that osp_atomic_open would use is created and removed at once, so
 * a directory that access() calls writable but where no file can be created (root under
 * /proc or /sys, a read-only mount) is refused with the errno of that create. *dest as for
 * osp_atomic_resolve (free it). Returns 0, or -1 with the reason (nothing is left behind).
 */
int osp_atomic_probe(const char *path, char **dest, char *reason, size_t reasonlen);

/*
 * Open `path` for writing (osp_atomic_resolve, then the temporary, or the stream in place).
 * The temporary is registered for osp_atomic_remove_temporaries until it is renamed or
 * removed. Returns 0, or -1 with the reason (nothing is left behind).
 */
int osp_atomic_open(osp_atomic_out *o, const char *path, char *reason, size_t reasonlen);

/* Write all of data[0..len) (retrying short writes and EINTR). 0, or -1 with the reason. */
int osp_atomic_write(osp_atomic_out *o, const void *data, size_t len, char *reason,
                     size_t reasonlen);

/*
 * Close and rename into place. Returns 0, or -1 with the reason; on failure the temporary
 * is removed and the destination keeps its previous contents. `o` is released either way.
 */
int osp_atomic_commit(osp_atomic_out *o, char *reason, size_t reasonlen);

/*
 * Commit `n` files as a set: close every member first; if any close failed, remove every
 * temporary and change nothing. Then rename each member, keeping a hard link to each
 * previous file; if a rename fails, the members already renamed get their previous file
 * back (a member that did not exist before is removed again). On failure *failed (if not
 * NULL) is the index of the member that failed. All members are released either way.
 */
int osp_atomic_commit_set(osp_atomic_out *set, size_t n, size_t *failed, char *reason,
                          size_t reasonlen);

/* Close and remove the temporary; the destination does not change. Safe on a released or
 * zero-initialised value. */
void osp_atomic_abort(osp_atomic_out *o);

/*
 * Remove every temporary (and set-commit backup link) registered at this moment, for a
 * process about to die of a signal. Their writers then fail. Thread-safe.
 */
void osp_atomic_remove_temporaries(void);

/* write(2) all of [data, data + len) to fd, retrying on EINTR and short writes. Returns 0
 * or the errno of the failing write (EIO for a write of 0 bytes). */
int osp_write_all(int fd, const void *data, size_t len);

/* True when `a` and `b` name the same file: the same device and inode when both exist
 * (hard and symbolic links included), else the same canonical path (symbolic links in the
 * existing directories resolved). Used to never write over a program's source or inputs. */
bool osp_same_file(const char *a, const char *b);

#ifdef __cplusplus
}
#endif
#endif
