/*
 * internal.h — data structures and helpers shared by the post-processor's sources and
 * its unit tests. Not installed; not a stable interface. Source: docs/spec/profiler.md §(e)–(h).
 */
#ifndef OSPPROF_INTERNAL_H
#define OSPPROF_INTERNAL_H

#include "ospprof.h"

#include <stdarg.h>

/* ---- Raw profile (§(e)) ------------------------------------------------------------ */

typedef struct ospprof_symbol {
    char *name;    /* owned */
    uint64_t addr; /* unslid, as the image describes it */
    uint64_t size; /* bytes */
} ospprof_symbol;

typedef struct ospprof_image {
    char *path;     /* owned */
    char *arch;     /* owned, "" if unknown */
    char *build_id; /* owned lowercase hex, NULL if not recorded */
    uint64_t base, slide, text, text_size;
    ospprof_symbol *symbols; /* owned, nsymbols entries; NULL if no `symbols` key */
    size_t nsymbols;
    bool has_symbols;
} ospprof_image;

typedef struct ospprof_thread {
    int64_t fiber;
    char *label; /* owned */
} ospprof_thread;

typedef struct ospprof_sample {
    uint64_t t_ns;      /* t_rel_ns */
    uint64_t weight_ns; /* measured weight, or floor(1e9 / rate_hz) */
    uint32_t row;       /* thread row index (validated) */
    uint32_t stack;     /* stack index (validated) */
    uint8_t state;      /* 0 on-CPU, 1 waiting */
} ospprof_sample;

struct ospprof_raw {
    char *path; /* owned: the name used in messages */
    int64_t version, pid;
    char *exe, *platform; /* owned */
    char *engine; /* owned; NULL when the file does not say (docs/spec/profiler.md §(l.3)) */
    uint64_t rate_hz;
    int64_t start_unix_ns, end_unix_ns;
    ospprof_image *images;
    size_t nimages;
    ospprof_thread *threads;
    size_t nthreads;
    uint64_t *addrs;   /* all stacks' addresses, leaf first, concatenated */
    size_t *stack_off; /* nstacks + 1 offsets into addrs */
    size_t nstacks;
    bool *truncated;         /* nstacks flags from truncated_stacks */
    ospprof_sample *samples; /* sorted stably by t_ns */
    size_t nsamples;
    uint64_t dropped;
    bool has_weights;
};

/* ---- Symbolization (§(f)) ---------------------------------------------------------- */

/* Index of the image describing `addr` per §(f).1, or -1 for none. */
long ospprof_image_for(const ospprof_raw *raw, uint64_t addr);

/* One resolved frame; strings are interned (owned by the string table). */
typedef struct ospprof_frame {
    uint32_t name; /* string id */
    uint32_t file; /* string id; the empty string when unknown */
    uint32_t line; /* 0 = unknown */
    uint32_t func; /* function id (name, file) */
} ospprof_frame;

typedef struct ospprof_func {
    uint32_t name, file;
    uint32_t line; /* display line: smallest non-zero line seen; 0 if none */
    bool user;     /* kind: file ends in .osp / .ospml */
    uint64_t self_w, total_w;
    uint64_t self_n, total_n;
} ospprof_func;

/* String table: interned, NUL-terminated strings addressed by id. */
typedef struct ospprof_strtab {
    char **str;
    size_t *len;
    size_t n, cap;
    uint32_t *slots; /* open addressing, id + 1, 0 = empty */
    size_t nslots;
} ospprof_strtab;

uint32_t ospprof_intern(ospprof_strtab *t, const char *s, size_t len);
void ospprof_strtab_free(ospprof_strtab *t);

typedef struct ospprof_stackinfo {
    size_t off, n;       /* frames[off .. off+n) in prof->stack_frames, leaf first */
    uint64_t on_w, on_n; /* on-CPU weight and count of samples on this stack */
    char *ss_json;       /* cached root-first speedscope index list, or NULL */
    size_t ss_len;
} ospprof_stackinfo;

typedef struct ospprof_rowinfo {
    int64_t fiber;
    char *label; /* display label (§(g.1)), owned */
    uint64_t n, on_n, w, on_w;
} ospprof_rowinfo;

struct ospprof_profile {
    ospprof_strtab strs;
    char *program;     /* owned: as given (or exe) */
    const char *pname; /* basename of program (points into program) */
    ospprof_frame *frames;
    size_t nframes;
    ospprof_func *funcs;
    size_t nfuncs;
    uint32_t *stack_frames; /* frame ids per stack, leaf first */
    size_t nstack_frames;
    ospprof_stackinfo *stacks; /* per raw stack */
    size_t nstacks;
    ospprof_rowinfo *rows;
    size_t nrows;
    ospprof_sample *samples; /* copy of the raw samples, time ordered */
    size_t nsamples;
    uint64_t rate_hz, dropped;
    uint64_t on_w, on_n; /* total on-CPU weight (ns) and samples */
    double wall_s;
};

/* Kind rule §(f).8: file ends in .osp or .ospml, ASCII case-insensitive. */
bool ospprof_is_user_file(const char *file);

/* ---- Symbolizer engine (symbolizer.cpp) -------------------------------------------- */

typedef struct ospprof_symframe {
    char *name; /* malloc'd; NULL when unknown */
    char *file; /* malloc'd; NULL when unknown */
    uint32_t line;
} ospprof_symframe;

typedef struct ospprof_llvm ospprof_llvm;

/* One LLVM symbolizer for the whole run. NULL if it cannot be created. */
ospprof_llvm *ospprof_llvm_new(void);
void ospprof_llvm_free(ospprof_llvm *s);
/* Resolve `addr` (as the object describes it) in the object file `object`: frames
 * innermost first into *out (malloc'd array, free with ospprof_symframes_free). Returns
 * the number of frames, 0 when nothing is known. Never prints, never fails hard. */
int ospprof_llvm_symbolize(ospprof_llvm *s, const char *object, uint64_t addr,
                           ospprof_symframe **out);
void ospprof_symframes_free(ospprof_symframe *f, int n);
/* Lowercase hex of the object's GNU build-id note (or Mach-O UUID); malloc'd, NULL when
 * the object has none or cannot be read. */
char *ospprof_llvm_build_id(const char *object);

/* ---- Hash map keyed by two 64-bit words, holding a 32-bit value -------------------- */

typedef struct ospprof_map {
    uint64_t *ka, *kb;
    uint32_t *val;
    uint8_t *used;
    size_t cap, n;
} ospprof_map;

/* Find (a, b). Returns a pointer to its value; when absent inserts it with value `fresh`
 * and sets *inserted. The pointer is valid until the next call. */
uint32_t *ospprof_map_put(ospprof_map *m, uint64_t a, uint64_t b, uint32_t fresh, bool *inserted);
/* Find (a, b): true and *v when present. */
bool ospprof_map_get(const ospprof_map *m, uint64_t a, uint64_t b, uint32_t *v);
void ospprof_map_free(ospprof_map *m);

/* Test hook: resolve `rel` (an address as image `im` describes it) instead of any object
 * or symbol table; same contract as ospprof_llvm_symbolize. */
typedef int (*ospprof_resolver_fn)(void *ctx, const ospprof_image *im, uint64_t rel,
                                   ospprof_symframe **out);

/* ospprof_profile_build with an optional resolver replacing §(f).3–4 (unit tests). */
ospprof_profile *ospprof_profile_build_ex(const ospprof_raw *raw, const char *program,
                                          const char *binary, const char *symbolizer,
                                          ospprof_resolver_fn resolver, void *ctx);

/* Function indices with on-CPU samples, in hotFunctions order (§(g.5)); *out malloc'd. */
size_t ospprof_hot_functions(const ospprof_profile *p, uint32_t **out);

/* ---- Output helpers ---------------------------------------------------------------- */

/* A growable byte buffer. */
typedef struct ospprof_buf {
    char *p;
    size_t n, cap;
} ospprof_buf;

void ospprof_buf_put(ospprof_buf *b, const void *s, size_t n);
void ospprof_buf_puts(ospprof_buf *b, const char *s);
void ospprof_buf_putc(ospprof_buf *b, char c);
void ospprof_buf_printf(ospprof_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ospprof_buf_free(ospprof_buf *b);

/* JSON string literal with quotes: valid UTF-8 (invalid bytes → U+FFFD), `"` and `\`
 * escaped, every control character (C0, DEL, C1) as \u00XX. */
void ospprof_json_str(ospprof_buf *b, const char *s);
/* Shortest %.<p>g (p = 1..17) that reads back as the same double. */
void ospprof_json_double(ospprof_buf *b, double v);
/* Decimal digits of v. */
void ospprof_buf_u64(ospprof_buf *b, uint64_t v);
/* ns / 1e9 in the shortest round-trip form (fast path for integral ns). */
void ospprof_json_seconds(ospprof_buf *b, uint64_t ns);

/* Atomic file output: a temporary file in the target's directory, renamed on commit.
 * An existing character device or FIFO (/dev/null, a named pipe) is written in place and
 * never replaced (tmp and dest NULL); a symbolic link to a regular file is followed: the
 * file it points to is replaced in its own directory and the link stays. A directory, a
 * dangling link or any other kind of file is refused ("cannot write <path>: ..."). */
typedef struct ospprof_out {
    FILE *f;
    char *path; /* as given, for messages */
    char *tmp;  /* the temporary, or NULL when writing in place */
    char *dest; /* what the temporary is renamed to */
} ospprof_out;
int ospprof_out_open(ospprof_out *o, const char *path, char *err, size_t errlen);
int ospprof_out_write(ospprof_out *o, const void *p, size_t n);
/* Flush, close and rename; on any error removes the temporary and returns -1 (err set). */
int ospprof_out_commit(ospprof_out *o, char *err, size_t errlen);
void ospprof_out_abort(ospprof_out *o);

/* Allocation that never returns NULL: on failure it prints `osprey: out of memory` on
 * stderr and aborts. A zero size or count allocates one byte. Free with free(). */
void *ospprof_xcalloc(size_t n, size_t size);
void *ospprof_xrealloc(void *p, size_t bytes);
/* A malloc'd copy of s[0..n) plus a NUL; of the NUL-terminated s. Free with free(). */
char *ospprof_xstrndup(const char *s, size_t n);
char *ospprof_xstrdup(const char *s);

void ospprof_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sanitised folded-stack frame (§(g.4)) appended to b. */
void ospprof_folded_name(ospprof_buf *b, const char *s);

/* Decode one UTF-8 sequence at s[0..n): returns its length (1..4) and the code point in
 * *cp, or 0 if the bytes there are not valid UTF-8. */
size_t ospprof_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

#endif /* OSPPROF_INTERNAL_H */
