/*
 * internal.h — data structures and helpers shared by the post-processor's sources and
 * its unit tests. Not installed; not a stable interface. Source: docs/spec/profiler.md §(e)–(h).
 */
#ifndef OSPPROF_INTERNAL_H
#define OSPPROF_INTERNAL_H

#include "atomic_output.h"
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
    uint64_t profiler_cpu_ns; /* "profiler_cpu_ns" (docs/spec/profiler.md §(e)); 0 if absent */
    uint64_t cpu_unsampled;   /* dropped_reasons.cpu_unsampled; 0 if absent */
    bool has_weights;
};

/* ---- Symbolization (§(f)) ---------------------------------------------------------- */

/* Index of the image describing `addr` per §(f).1, or -1 for none. */
long ospprof_image_for(const ospprof_raw *raw, uint64_t addr);

/* One frame: a function (name, file), docs/spec/profiler.md §(l.6); frame i is function i.
 * Strings are interned (owned by the string table). */
typedef struct ospprof_frame {
    uint32_t name; /* string id */
    uint32_t file; /* string id; the empty string when unknown */
    uint32_t line; /* the function's display line; 0 = unknown */
    uint32_t func; /* function id (== the frame id) */
} ospprof_frame;

typedef struct ospprof_func {
    uint32_t name, file;
    uint32_t line;  /* display line: smallest non-zero line seen; 0 if none */
    bool user;      /* kind: file ends in .osp / .ospml */
    bool in_main;   /* seen inside the main executable (image path == exe) */
    bool attr_user; /* counts as `user` for attributed lines: `user`, or, in a profile without
                       any user frame, `in_main` (§(l.6)) */
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

/* An image as the model keeps it: runtime text range and identity (§(e)). */
typedef struct ospprof_pimage {
    char *path;            /* owned */
    const char *basename;  /* the image's name: `soname` when set, else points into path */
    char *soname;          /* owned: the DT_SONAME of the object that describes it, or NULL */
    char *build_id;        /* owned, NULL if not recorded */
    uint64_t start, limit; /* runtime text range [start, limit); limit 0 when unknown */
} ospprof_pimage;

struct ospprof_profile {
    ospprof_strtab strs;
    char *program;     /* owned: as given (or exe) */
    const char *pname; /* basename of program (points into program) */
    ospprof_frame *frames;
    size_t nframes;
    ospprof_func *funcs;
    size_t nfuncs;
    uint32_t *stack_frames; /* frame ids per stack, leaf first */
    uint32_t *stack_lines;  /* the line of each of those positions (0 = unknown): the
                               sampled line at the leaf, the call line above it */
    uint64_t *stack_addrs;  /* the recorded address each position came from (inline frames of
                               one address share it; 0 for the [truncated] frame) */
    uint32_t *stack_groups; /* per position: index of its address within the raw stack, so
                               consecutive positions with the same value are one location
                               (one address, inline frames innermost first); with
                               OSPPROF_GROUP_EXACT set when that address was looked up as it
                               is, not less one (the leaf's is not marked: index 0) */
    int32_t *stack_images;  /* per position: image index (into images) or -1 */
    size_t nstack_frames;
    ospprof_pimage *images; /* the raw profile's images (pprof mappings, filters) */
    size_t nimages;
    bool any_user;   /* some function is Osprey code */
    char **warnings; /* owned: one-line messages from symbolization (e.g. an unusable
                        --binary), without the "osprey: warning: " prefix */
    size_t nwarnings;
    ospprof_stackinfo *stacks; /* per raw stack */
    size_t nstacks;
    ospprof_rowinfo *rows;
    size_t nrows;
    ospprof_sample *samples; /* copy of the raw samples, time ordered */
    size_t nsamples;
    uint64_t rate_hz, dropped;
    char engine[16];          /* the raw file's "engine" (cut), "" when it does not say */
    uint64_t on_w, on_n;      /* total on-CPU weight (ns) and samples */
    uint64_t profiler_cpu_ns; /* the profiler's own CPU no sample carries (raw file) */
    double wall_s;
    char *filter_desc;        /* owned: what the §(l.8) filters kept, for the report; NULL: none */
    uint64_t unfiltered_on_w; /* on-CPU weight before the filters */
};

/* Self / total weight and counts of every function from the stacks' on-CPU totals. */
void ospprof_profile_totals(ospprof_profile *p);

/* Kind rule §(f).8: file ends in .osp or .ospml, ASCII case-insensitive. */
bool ospprof_is_user_file(const char *file);

/* ---- Symbolizer engine (symbolizer.cpp) -------------------------------------------- */

/* In stack_groups: a non-leaf address looked up as it is (a signal trampoline, or the pc
 * a signal interrupted), not as a return address. */
#define OSPPROF_GROUP_EXACT 0x80000000u

typedef struct ospprof_symframe {
    char *name; /* malloc'd; NULL when unknown */
    char *file; /* malloc'd; NULL when unknown */
    uint32_t line;
} ospprof_symframe;

typedef struct ospprof_llvm ospprof_llvm;

/* One LLVM symbolizer for the whole run. NULL if it cannot be created. */
ospprof_llvm *ospprof_llvm_new(void);
/* The same; `lines` false: frames get names only (file NULL, line 0), which skips the line
 * tables (for `--diff`, whose stacks are names). */
ospprof_llvm *ospprof_llvm_new_ex(bool lines);
void ospprof_llvm_free(ospprof_llvm *s);
/* Resolve `addr` (as the object describes it) in the object file `object`: frames
 * innermost first into *out (malloc'd array, free with ospprof_symframes_free). Returns
 * the number of frames, 0 when nothing is known. Never prints, never fails hard. */
int ospprof_llvm_symbolize(ospprof_llvm *s, const char *object, uint64_t addr,
                           ospprof_symframe **out);
void ospprof_symframes_free(ospprof_symframe *f, int n);
/* Whether `addr` (as the object describes it) is the first instruction of an x86-64
 * signal trampoline (rt_sigreturn) in `object`: a stack's frame there is where a signal
 * handler returns to, not a return address after a call, and the frame below it is the
 * interrupted pc (docs/profile-formats.md "Symbolization"). */
bool ospprof_llvm_is_sigreturn(ospprof_llvm *s, const char *object, uint64_t addr);
/* Lowercase hex of the object's GNU build-id note (or Mach-O UUID); malloc'd, NULL when
 * the object has none or cannot be read. */
char *ospprof_llvm_build_id(const char *object);
/* The ELF object's DT_SONAME ("libstdc++.so.6"), malloc'd; NULL when it has none, is not a
 * valid ELF file or cannot be read. An image's name (docs/profile-formats.md "Names for
 * code without symbols"). */
char *ospprof_llvm_soname(const char *object);

/* The demangled form of a C++ (Itanium or MSVC), Rust or D linkage name, keeping a
 * trailing "@plt"; malloc'd, or NULL when `name` is not mangled (then use it unchanged).
 * LLVM's demangler (docs/spec/profiler.md §(l.6)). */
char *ospprof_demangle(const char *name);
/* What the object file says about itself: *arch "x86_64", "arm64" or "" (malloc'd) and, for
 * ELF, *text_size = the span of its executable PT_LOAD segments (0 when unknown), the same
 * measure as the raw file's `text_size` (docs/spec/profiler.md §(e)). 0, or -1 (nothing set)
 * when the object cannot be read. */
int ospprof_llvm_object_info(const char *object, char **arch, uint64_t *text_size);

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

/* ospprof_profile_build for a consumer that needs the frames' names only (`--diff`): no
 * file or line is looked up, so frames of one name are one frame and every line is 0;
 * names, stacks, counts and warnings are those ospprof_profile_build gives, except that the
 * warning about an unreadable main executable suggests post-processing with --binary. */
ospprof_profile *ospprof_profile_build_names(const ospprof_raw *raw, const char *symbolizer);

/* Function indices with on-CPU samples, in hotFunctions order (§(g.5)); *out malloc'd. */
size_t ospprof_hot_functions(const ospprof_profile *p, uint32_t **out);

/* One attributed line (docs/spec/profiler.md §(l.6)): on-CPU samples whose innermost `user`
 * frame (attr_user, known line) is on (file, line); self_*: those whose leaf itself is. */
typedef struct ospprof_hotline {
    uint32_t file, line; /* string id, 1-based line */
    const char *file_s;  /* the file's text (borrowed from the profile) */
    uint64_t w, n;       /* attributed weight (ns) and samples */
    uint64_t self_w, self_n;
} ospprof_hotline;

/* Every attributed line, sorted by weight desc, file asc, line asc (no threshold);
 * *out malloc'd (free it), returns the count. */
size_t ospprof_hot_lines(const ospprof_profile *p, ospprof_hotline **out);

/* ---- Output helpers ---------------------------------------------------------------- */

/* A growable byte buffer. */
typedef struct ospprof_buf {
    char *p;
    size_t n, cap;
} ospprof_buf;

/* Make room for `extra` more bytes (plus a NUL). */
void ospprof_buf_reserve(ospprof_buf *b, size_t extra);
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

/* An export being written: a buffer in front of the shared atomic-output helper
 * (common/atomic_output.h: temporary "<dir>/.<base>.XXXXXX" beside the target, renamed on
 * commit; a character device or FIFO is written in place; a symbolic link to a regular file
 * replaces the file it points to; a directory, a dangling link or any other kind of file is
 * refused with "cannot write <path>: <reason>"). Write into `b` and call
 * ospprof_out_maybe_flush now and then; the first write error is kept and reported by the
 * commit. */
typedef struct ospprof_out {
    osp_atomic_out file;
    ospprof_buf b;
    char *path; /* owned: as given, for messages */
    bool failed;
    char reason[256];
} ospprof_out;
int ospprof_out_open(ospprof_out *o, const char *path, char *err, size_t errlen);
/* Append n bytes (flushed when the buffer is large). 0, or -1 once a write failed. */
int ospprof_out_write(ospprof_out *o, const void *p, size_t n);
void ospprof_out_flush(ospprof_out *o);
void ospprof_out_maybe_flush(ospprof_out *o);
/* Flush, close and rename; on any error removes the temporary and returns -1 (err set). */
int ospprof_out_commit(ospprof_out *o, char *err, size_t errlen);
/* Commit n exports as a set (osp_atomic_commit_set): all renamed, or none changes; err
 * names the export that failed. Every member is released either way. */
int ospprof_out_commit_set(ospprof_out *set, size_t n, char *err, size_t errlen);
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

/* C0, DEL or C1 control character. */
bool ospprof_is_control(uint32_t cp);

/* Text for the terminal (§(h).5, §(l.7)): control characters as '?', invalid UTF-8 as
 * U+FFFD. */
void ospprof_term_text(ospprof_buf *b, const char *s);

/* Append text[0..n) (already ospprof_term_text'd) to b, cut to `room` cells with a trailing
 * "…" when longer; room 0 means the OSPPROF_REPORT_MAX_CELLS of a report without a terminal. */
void ospprof_term_cut(ospprof_buf *b, const char *text, size_t n, size_t room);

/* Sanitised folded-stack frame (§(g.4)) appended to b. */
void ospprof_folded_name(ospprof_buf *b, const char *s);

/* Decode one UTF-8 sequence at s[0..n): returns its length (1..4) and the code point in
 * *cp, or 0 if the bytes there are not valid UTF-8. */
size_t ospprof_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* ---- Flame graph SVG (svg.c, svg_profile.c) -------------------------------------------- */

/* One node of a flame-graph tree. */
typedef struct ospprof_flame_node {
    uint32_t parent;  /* parent's index; UINT32_MAX for the root (node 0) */
    uint64_t weight;  /* total weight of the subtree, any unit (ns here) */
    uint64_t self;    /* weight of the samples that end at this node */
    uint64_t samples; /* total samples (shown on hover) */
} ospprof_flame_node;

/* A tree to draw as a self-contained interactive SVG (docs/spec/profiler.md §(l.6)). Nodes:
 * node 0 is the root, every parent comes before its children. The callbacks get `ctx` and a
 * node index: `name` (required; borrowed until the writer returns), `detail` (hover text such
 * as "file:line", appended to the buffer; may be NULL) and `color` ("#rrggbb" into out; NULL:
 * grey). Nodes narrower than min_fraction of the root (0.001 = 0.1 %) are not drawn: their
 * weight stays in their parent's width. */
typedef struct ospprof_flame {
    const ospprof_flame_node *nodes;
    size_t nnodes;
    const char *title;
    const char *(*name)(void *ctx, size_t node);
    void (*detail)(void *ctx, size_t node, ospprof_buf *out);
    void (*color)(void *ctx, size_t node, char out[8]);
    void *ctx;
    double min_fraction;
} ospprof_flame;

/* Write the SVG document for `fg` into w (hover, click-to-zoom, reset, search with matched %;
 * no network, no external resource). Errors surface at the commit of w. */
void ospprof_svg_flame(const ospprof_flame *fg, ospprof_out *w);

/* The profile's `<stem>.svg` body: every fiber's on-CPU samples, coloured by the editor's
 * rule. */
void ospprof_svg_body(const ospprof_profile *p, ospprof_out *w);

/* The `<stem>.pb.gz` body (pprof.c): gzip'd profile.proto; zlib failures mark w failed. */
void ospprof_pprof_body(const ospprof_profile *p, ospprof_out *w);

/* The editor's deterministic frame colours (docs/spec/profiler.md §(j) "Frame colours"):
 * out[i] is "#rrggbb" for frame i of p (the speedscope `shared.frames` order). */
void ospprof_frame_colors(const ospprof_profile *p, char (*out)[8]);

/* UTF-16 code-unit order of two UTF-8 strings (invalid bytes read as U+FFFD), the order
 * JavaScript's `<` uses: -1, 0 or 1. */
int ospprof_utf16_cmp(const char *a, const char *b);

#endif /* OSPPROF_INTERNAL_H */
