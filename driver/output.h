/*
 * output.h — where and how the driver writes an output file (the executable, `.ll`),
 * docs/ARCHITECTURE.md "Error handling": a temporary file in the destination's directory renamed
 * into place, so a crash or a full disk never leaves half a file where a good one was. The
 * mechanics are the shared helper common/atomic_output.h (also used by the post-processor);
 * these functions word the driver's messages ("cannot write '<path>': <reason>").
 *
 * Destinations that are not regular files (docs/compiler.md "Output files"):
 *  - an existing character device or FIFO (/dev/null, /dev/stdout on a terminal or pipe,
 *    a named pipe) is written in place: opened for writing, never replaced by a file;
 *  - a symbolic link to a regular file is followed: the file it points to is replaced
 *    (temporary in that file's directory, then rename) and the link stays a link;
 *  - a directory, a dangling symbolic link, a block device or a socket is refused.
 */
#ifndef OSPREY_OUTPUT_H
#define OSPREY_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

/* A checked destination. */
typedef struct out_target {
    const char *given; /* the path as the user gave it (borrowed), used in messages */
    char *dest;        /* malloc'd rename target; NULL: write `given` in place (a stream) */
} out_target;

/*
 * Check that `given` can be written and decide how (see above). For a new or regular
 * file, its directory must exist, be a directory and take a new file: the helper's
 * temporary is created there and removed (osp_atomic_probe), so /proc, /sys or a read-only
 * mount is refused for root too, with the create's errno. Returns 0 and fills *t (free
 * with out_target_free), or -1 with "cannot write '<given>': <reason>" (reason: strerror,
 * or a wording such as "it is a block device") in msg[0..msglen).
 */
int out_check(const char *given, out_target *t, char *msg, size_t msglen);

void out_target_free(out_target *t);

/* True when `a` and `b` name the same file: the same device and inode when both exist
 * (hard and symbolic links included), else the same canonical path (symbolic links in
 * the existing directories resolved). */
bool out_same_file(const char *a, const char *b);

/* Write `len` bytes to the target: in place for a stream, else to the helper's temporary
 * "<dir>/.<base>.XXXXXX" then renamed (the temporary is registered for removal on a
 * terminating signal: osp_atomic_remove_temporaries).
 * Returns 0 or -1 with "cannot write '<given>': <strerror>" in msg. */
int out_write(const out_target *t, const void *data, size_t len, char *msg, size_t msglen);

/* Copy the file `from` into a stream target (t->dest == NULL). Returns 0 or -1 with a
 * message in msg. */
int out_copy_into(const out_target *t, const char *from, char *msg, size_t msglen);

/* write(2) all of [data, data+len) to fd, retrying on EINTR and short writes. Returns 0
 * or the errno of the failing write. */
int write_all(int fd, const void *data, size_t len);

/* One diagnostic line on stderr: `fmt` formatted, every control character shown as '?' and
 * bytes that are not UTF-8 as U+FFFD — the paths and names in messages come from the command
 * line, file names and files (docs/ARCHITECTURE.md "Untrusted text on a terminal") — then a
 * newline. */
void drv_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
