/*
 * profile.c — image mapping and symbolization (docs/spec/profiler.md §(f)) and the profile model
 * (§(g.1)): frames interned as (name, file, line) in order of first appearance, functions
 * as (name, file), self/total per function with recursion counted once, per-row counts,
 * wall and CPU time.
 *
 * Everything is iterative and keyed by distinct stacks: samples are folded into per-stack
 * totals first, so the work after reading is linear in samples plus distinct frames.
 */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

long ospprof_image_for(const ospprof_raw *raw, uint64_t addr) {
    long best = -1;
    for (size_t i = 0; i < raw->nimages; i++) {
        const ospprof_image *im = &raw->images[i];
        if (im->text_size && addr >= im->text && addr - im->text < im->text_size &&
            (best < 0 || im->text > raw->images[best].text))
            best = (long)i;
    }
    if (best >= 0) return best;
    for (size_t i = 0; i < raw->nimages; i++) {
        const ospprof_image *im = &raw->images[i];
        if (im->text_size == 0 && im->base <= addr &&
            (best < 0 || im->base > raw->images[best].base))
            best = (long)i;
    }
    return best;
}

bool ospprof_is_user_file(const char *file) {
    size_t n = strlen(file);
    if (n >= 4 && strcasecmp(file + n - 4, ".osp") == 0) return true;
    if (n >= 6 && strcasecmp(file + n - 6, ".ospml") == 0) return true;
    return false;
}

/* ---- symbolization state ------------------------------------------------------------ */

typedef struct triple {
    uint32_t name, file, line;
    bool in_main; /* resolved inside the main executable (the C-program `user` rule, §(l.6)) */
} triple;

typedef struct symctx {
    const ospprof_raw *raw;
    ospprof_strtab *strs;
    ospprof_resolver_fn resolver;
    void *rctx;
    bool enabled;       /* false: OSPREY_PROFILE_SYMBOLIZER=none, every frame hex */
    ospprof_llvm *llvm; /* NULL: no object lookups */
    const char *binary;
    /* what the warning about an unreadable main executable suggests, e.g. " (pass --binary)" */
    const char *exe_hint;
    /* per image: 0 = not decided, 1 = object path, 2 = symbols table, 3 = none */
    uint8_t *qual;
    const char **object;
    ospprof_map cache; /* (image, lookup address) → index into res */
    triple *res;       /* resolved chains, innermost first */
    size_t nres, capres;
    uint32_t *res_off; /* per cache entry: start in res; count in res_n */
    uint32_t *res_n;
    size_t ncache, capcache;
    uint32_t empty;        /* id of "" */
    ospprof_profile *prof; /* for warnings */
    long main_image;       /* index of the image whose path is `exe`, or -1 */
    bool cur_main;         /* the image being resolved is the main one */
} symctx;

/* NULL when `p` is a regular file we may read; else why not (strerror's text). */
static const char *unreadable(const char *p) {
    struct stat st;
    if (stat(p, &st) != 0) return strerror(errno);
    if (S_ISDIR(st.st_mode)) return strerror(EISDIR);
    if (!S_ISREG(st.st_mode)) return "not a regular file";
    if (access(p, R_OK) != 0) return strerror(errno);
    return NULL;
}

static void warn(symctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(symctx *c, const char *fmt, ...) {
    char msg[OSPPROF_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ospprof_profile *p = c->prof;
    p->warnings = ospprof_xrealloc(p->warnings, (p->nwarnings + 1) * sizeof *p->warnings);
    p->warnings[p->nwarnings++] = ospprof_xstrdup(msg);
}

/* §(f).3 and §(l.6): does `object` describe image `im`? A recorded build-id must match; the
 * architecture must be the recorded one; without a build-id, the object's executable range
 * must still have the recorded `text_size` (else it was rebuilt since the run). `loud`: the
 * object is the main executable or the user's --binary (or the CLI's fresh build), which gets
 * one warning when it cannot be used; other libraries just become image frames. */
static bool object_describes(symctx *c, const ospprof_image *im, const char *object, bool loud) {
    if (im->build_id) {
        char *id = ospprof_llvm_build_id(object);
        bool ok = id && strcmp(id, im->build_id) == 0;
        if (!ok && loud)
            warn(c, "%s: build-id %s does not match the profile's %s; its frames are not named",
                 object, id ? id : "(none)", im->build_id);
        free(id);
        if (!ok) return false;
    }
    char *arch = NULL;
    uint64_t text_size = 0;
    if (ospprof_llvm_object_info(object, &arch, &text_size) != 0) return true; /* LLVM decides */
    bool ok = true;
    if (im->arch && im->arch[0] && arch[0] && strcmp(arch, im->arch) != 0) {
        if (loud)
            warn(c,
                 "%s: built for %s, but the profile was recorded on %s; its frames are not named",
                 object, arch, im->arch);
        ok = false;
    } else if (!im->build_id && im->text_size && text_size && text_size != im->text_size) {
        if (loud)
            warn(c,
                 "%s: its executable range is %" PRIu64 " bytes, the profile recorded %" PRIu64
                 " (rebuilt since the run?); its frames are not named",
                 object, text_size, im->text_size);
        ok = false;
    }
    free(arch);
    return ok;
}

/* Image i's name, once an object describes it: that object's DT_SONAME when it has one, so
 * a library is named alike whichever path to it was recorded — the loader's
 * (`libstdc++.so.6`, --record and --profile) or /proc/<pid>/maps's resolved one
 * (`libstdc++.so.6.0.30`, --attach) — else its path's basename (docs/profile-formats.md
 * "Names for code without symbols"). */
static void name_image(symctx *c, size_t i) {
    ospprof_pimage *pi = &c->prof->images[i];
    if (pi->soname) return;
    pi->soname = ospprof_llvm_soname(c->object[i]);
    if (pi->soname) pi->basename = pi->soname;
}

/* §(f).3: which object describes image i. */
static void qualify(symctx *c, size_t i) {
    const ospprof_image *im = &c->raw->images[i];
    c->qual[i] = 3;
    if (c->resolver) {
        c->qual[i] = 4;
        return;
    }
    if (im->has_symbols) {
        c->qual[i] = 2;
        return;
    }
    if (!im->path || !im->path[0] || im->path[0] == '[') return; /* [vdso] and the like */
    const char *why = unreadable(im->path);
    if (!why) {
        if (object_describes(c, im, im->path, (long)i == c->main_image)) {
            c->qual[i] = 1;
            c->object[i] = im->path;
            name_image(c, i);
        }
        return;
    }
    bool is_exe = c->raw->exe && strcmp(im->path, c->raw->exe) == 0;
    if (is_exe && c->binary) {
        const char *bwhy = unreadable(c->binary);
        if (bwhy) {
            warn(c, "cannot read '%s' (standing in for '%s'): %s; its frames are unnamed",
                 c->binary, im->path, bwhy);
        } else if (object_describes(c, im, c->binary, true)) {
            c->qual[i] = 1;
            c->object[i] = c->binary;
            name_image(c, i);
        }
        return;
    }
    /* moved, deleted or unreadable since the run: said once per image (this runs once per
     * image with samples), --binary suggested for the main executable */
    warn(c, "cannot read '%s': %s; its frames are unnamed%s", im->path, why,
         is_exe ? c->exe_hint : "");
}

/* OSPREY_PROFILE_SYMBOLIZER (§(a)): "llvm" (also unset or empty) or "none". Anything else
 * is said once per process, as a bad OSPREY_PROFILE_HZ is, and "llvm" is used ("atos" is
 * macOS's, which this post-processor does not drive). */
static const char *symbolizer_from_env(void) {
    const char *v = getenv("OSPREY_PROFILE_SYMBOLIZER");
    if (!v || !*v || strcmp(v, "llvm") == 0 || strcmp(v, "none") == 0) return v;
    static atomic_bool warned;
    if (!atomic_exchange(&warned, true)) {
        ospprof_buf b = {0};
        ospprof_buf_puts(&b, "osprey: warning: OSPREY_PROFILE_SYMBOLIZER=\"");
        ospprof_term_text(&b, v);
        ospprof_buf_puts(&b, "\" is not llvm or none; using llvm\n");
        fwrite(b.p, 1, b.n, stderr);
        fflush(stderr);
        ospprof_buf_free(&b);
    }
    return "llvm";
}

static void push_res(symctx *c, uint32_t name, uint32_t file, uint32_t line) {
    if (c->nres == c->capres) {
        c->capres = c->capres ? c->capres * 2 : 1024;
        c->res = ospprof_xrealloc(c->res, c->capres * sizeof *c->res);
    }
    c->res[c->nres++] = (triple){name, file, line, c->cur_main};
}

/* Intern a symbol name, demangled when it is a mangled C++/Rust/D name. */
static uint32_t intern_name(symctx *c, const char *name) {
    char *d = ospprof_demangle(name);
    uint32_t id = ospprof_intern(c->strs, d ? d : name, strlen(d ? d : name));
    free(d);
    return id;
}

/* The frame for unnamed code inside image `im`: "[<basename>]" (kept as is when the path is
 * already bracketed, like "[vdso]"), file the image path, line 0 (§(l.6)). */
static void push_image_frame(symctx *c, size_t img) {
    const ospprof_image *im = &c->raw->images[img];
    const char *base = c->prof->images[img].basename; /* its name (name_image) */
    size_t n = strlen(base);
    uint32_t name;
    if (n >= 2 && base[0] == '[' && base[n - 1] == ']') {
        name = ospprof_intern(c->strs, base, n);
    } else {
        char *b = ospprof_xrealloc(NULL, n + 3);
        b[0] = '[';
        memcpy(b + 1, base, n);
        b[n + 1] = ']';
        b[n + 2] = 0;
        name = ospprof_intern(c->strs, b, n + 2);
        free(b);
    }
    push_res(c, name, ospprof_intern(c->strs, im->path, strlen(im->path)), 0);
}

static uint32_t hex_name(symctx *c, uint64_t addr) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "0x%" PRIx64, addr);
    return ospprof_intern(c->strs, tmp, (size_t)n);
}

/* Whether the recorded non-leaf `addr` is a signal trampoline's first instruction (the
 * kernel's signal frame: the walk recorded where the handler returns to, then the pc the
 * signal interrupted). Neither is a return address after a call, so neither is looked up
 * at address - 1: that named the padding before the trampoline ([libc.so.6]) and could name
 * the instruction before the interrupted one. */
static bool is_signal_trampoline(symctx *c, uint64_t addr) {
    if (!c->enabled || !c->llvm) return false;
    long img = ospprof_image_for(c->raw, addr);
    if (img < 0) return false;
    const ospprof_image *im = &c->raw->images[img];
    if (addr < im->slide) return false;
    if (!c->qual[img]) qualify(c, (size_t)img);
    return c->qual[img] == 1 &&
           ospprof_llvm_is_sigreturn(c->llvm, c->object[img], addr - im->slide);
}

/* Resolve one recorded address into c->res[*off .. *off + *n), innermost first. */
static void resolve(symctx *c, uint64_t addr, bool is_return, bool trampoline, size_t *off,
                    size_t *n) {
    if (c->enabled) {
        uint64_t look = is_return && addr > 0 ? addr - 1 : addr;
        long img = ospprof_image_for(c->raw, look);
        if (img >= 0) {
            const ospprof_image *im = &c->raw->images[img];
            c->cur_main = img == c->main_image;
            if (look >= im->slide) {
                uint64_t rel = look - im->slide;
                if (!c->qual[img]) qualify(c, (size_t)img);
                bool ins;
                uint32_t *slot =
                    ospprof_map_put(&c->cache, (uint64_t)img, rel, (uint32_t)c->ncache, &ins);
                if (ins) {
                    if (c->ncache == c->capcache) {
                        c->capcache = c->capcache ? c->capcache * 2 : 1024;
                        c->res_off = ospprof_xrealloc(c->res_off, c->capcache * sizeof *c->res_off);
                        c->res_n = ospprof_xrealloc(c->res_n, c->capcache * sizeof *c->res_n);
                    }
                    size_t start = c->nres;
                    if ((c->qual[img] == 1 && c->llvm) || c->qual[img] == 4) {
                        ospprof_symframe *f = NULL;
                        int k = c->qual[img] == 4
                                    ? c->resolver(c->rctx, im, rel, &f)
                                    : ospprof_llvm_symbolize(c->llvm, c->object[img], rel, &f);
                        /* a chain with an unknown name at any level is not trusted */
                        bool good = k > 0;
                        for (int j = 0; j < k; j++)
                            if (!f[j].name || !f[j].name[0]) good = false;
                        if (good) {
                            for (int j = 0; j < k; j++) {
                                const char *file = f[j].file ? f[j].file : "";
                                push_res(c, intern_name(c, f[j].name),
                                         ospprof_intern(c->strs, file, strlen(file)),
                                         f[j].file ? f[j].line : 0);
                            }
                        }
                        ospprof_symframes_free(f, k);
                    } else if (c->qual[img] == 2) {
                        for (size_t j = 0; j < im->nsymbols; j++) {
                            const ospprof_symbol *s = &im->symbols[j];
                            if (s->name && s->name[0] && rel >= s->addr &&
                                rel - s->addr < s->size) {
                                push_res(c, intern_name(c, s->name), c->empty, 0);
                                break;
                            }
                        }
                    }
                    if (c->nres == start && trampoline) /* libc names it only in .symtab */
                        push_res(c, ospprof_intern(c->strs, "[signal handler called]", 23),
                                 ospprof_intern(c->strs, im->path, strlen(im->path)), 0);
                    if (c->nres == start && im->path && im->path[0])
                        push_image_frame(c, (size_t)img); /* one row per unnamed library */
                    c->res_off[c->ncache] = (uint32_t)start;
                    c->res_n[c->ncache] = (uint32_t)(c->nres - start);
                    c->ncache++;
                }
                uint32_t e = *slot;
                if (c->res_n[e]) {
                    *off = c->res_off[e];
                    *n = c->res_n[e];
                    return;
                }
            }
        }
    }
    /* hex frame: the raw recorded address (in no image, or symbolization off) */
    c->cur_main = false;
    *off = c->nres;
    *n = 1;
    push_res(c, hex_name(c, addr), c->empty, 0);
    c->nres--; /* scratch slot past the end (capacity kept): used at once by the caller */
}

/* ---- model ------------------------------------------------------------------------------ */

static char *display_label(const ospprof_thread *t, size_t row) {
    const char *label = t->label ? t->label : "";
    if (strcmp(label, "main") == 0) return ospprof_xstrdup("main");
    char tmp[64];
    int64_t n = t->fiber < 0 ? (int64_t)row : t->fiber;
    snprintf(tmp, sizeof tmp, "-%" PRId64, n);
    size_t a = strlen(label), b = strlen(tmp);
    char *s = ospprof_xrealloc(NULL, a + b + 1);
    memcpy(s, label, a);
    memcpy(s + a, tmp, b + 1);
    return s;
}

void ospprof_profile_free(ospprof_profile *p) {
    if (!p) return;
    ospprof_strtab_free(&p->strs);
    free(p->program);
    free(p->frames);
    free(p->funcs);
    free(p->stack_frames);
    free(p->stack_lines);
    free(p->filter_desc);
    free(p->stack_addrs);
    free(p->stack_groups);
    free(p->stack_images);
    for (size_t i = 0; i < p->nimages; i++)
        free(p->images[i].path), free(p->images[i].build_id), free(p->images[i].soname);
    free(p->images);
    for (size_t i = 0; i < p->nwarnings; i++) free(p->warnings[i]);
    free(p->warnings);
    for (size_t i = 0; i < p->nstacks; i++) free(p->stacks[i].ss_json);
    free(p->stacks);
    for (size_t i = 0; i < p->nrows; i++) free(p->rows[i].label);
    free(p->rows);
    free(p->samples);
    free(p);
}

void ospprof_profile_totals(ospprof_profile *p) {
    for (size_t i = 0; i < p->nfuncs; i++) {
        ospprof_func *f = &p->funcs[i];
        f->self_w = f->total_w = f->self_n = f->total_n = 0;
    }
    /* self / total per function: once per stack, weighted by the stack's on-CPU totals */
    uint32_t *stamp = ospprof_xcalloc(p->nfuncs, sizeof *stamp);
    for (size_t k = 0; k < p->nstacks; k++) {
        ospprof_stackinfo *si = &p->stacks[k];
        if (!si->on_n || !si->n) continue;
        const uint32_t *fr = &p->stack_frames[si->off];
        ospprof_func *leaf = &p->funcs[p->frames[fr[0]].func];
        leaf->self_w += si->on_w;
        leaf->self_n += si->on_n;
        for (size_t j = 0; j < si->n; j++) {
            uint32_t fn = p->frames[fr[j]].func;
            if (stamp[fn] == k + 1) continue;
            stamp[fn] = (uint32_t)(k + 1);
            p->funcs[fn].total_w += si->on_w;
            p->funcs[fn].total_n += si->on_n;
        }
    }
    free(stamp);
}

ospprof_profile *ospprof_profile_build(const ospprof_raw *raw, const char *program,
                                       const char *binary, const char *symbolizer, char *err,
                                       size_t errlen) {
    (void)err, (void)errlen;
    return ospprof_profile_build_ex(raw, program, binary, symbolizer, NULL, NULL);
}

static ospprof_profile *build(const ospprof_raw *raw, const char *program, const char *binary,
                              const char *symbolizer, ospprof_resolver_fn resolver, void *rctx,
                              bool lines, const char *exe_hint);

ospprof_profile *ospprof_profile_build_ex(const ospprof_raw *raw, const char *program,
                                          const char *binary, const char *symbolizer,
                                          ospprof_resolver_fn resolver, void *rctx) {
    return build(raw, program, binary, symbolizer, resolver, rctx, true, " (pass --binary)");
}

ospprof_profile *ospprof_profile_build_names(const ospprof_raw *raw, const char *symbolizer) {
    /* `osprey --diff` builds these and takes no --binary: --postprocess does */
    return build(raw, NULL, NULL, symbolizer, NULL, NULL, false,
                 " (post-process it with --binary and compare its .folded)");
}

static ospprof_profile *build(const ospprof_raw *raw, const char *program, const char *binary,
                              const char *symbolizer, ospprof_resolver_fn resolver, void *rctx,
                              bool lines, const char *exe_hint) {
    ospprof_profile *p = ospprof_xcalloc(1, sizeof *p);
    p->program = ospprof_xstrdup(program ? program : raw->exe ? raw->exe : "");
    const char *slash = strrchr(p->program, '/');
    p->pname = slash ? slash + 1 : p->program;
    p->rate_hz = raw->rate_hz;
    p->dropped = raw->dropped;
    if (raw->engine) snprintf(p->engine, sizeof p->engine, "%s", raw->engine);
    p->profiler_cpu_ns = raw->profiler_cpu_ns;
    p->nsamples = raw->nsamples;
    p->samples = ospprof_xcalloc(raw->nsamples, sizeof *p->samples);
    if (raw->nsamples) memcpy(p->samples, raw->samples, raw->nsamples * sizeof *p->samples);

    /* rows and per-stack totals */
    p->nrows = raw->nthreads;
    p->rows = ospprof_xcalloc(p->nrows, sizeof *p->rows);
    for (size_t i = 0; i < p->nrows; i++) {
        p->rows[i].fiber = raw->threads[i].fiber;
        p->rows[i].label = display_label(&raw->threads[i], i);
    }
    p->nimages = raw->nimages;
    p->images = ospprof_xcalloc(raw->nimages, sizeof *p->images);
    for (size_t i = 0; i < raw->nimages; i++) {
        const ospprof_image *im = &raw->images[i];
        ospprof_pimage *pi = &p->images[i];
        pi->path = ospprof_xstrdup(im->path ? im->path : "");
        const char *sl = strrchr(pi->path, '/');
        pi->basename = sl ? sl + 1 : pi->path;
        pi->build_id = im->build_id ? ospprof_xstrdup(im->build_id) : NULL;
        pi->start = im->text_size ? im->text : im->base;
        pi->limit = im->text_size ? im->text + im->text_size : 0;
    }
    p->nstacks = raw->nstacks;
    p->stacks = ospprof_xcalloc(p->nstacks, sizeof *p->stacks);
    bool *used = ospprof_xcalloc(p->nstacks, sizeof *used);
    for (size_t i = 0; i < p->nsamples; i++) {
        const ospprof_sample *s = &p->samples[i];
        ospprof_rowinfo *r = &p->rows[s->row];
        used[s->stack] = true;
        r->n++;
        r->w += s->weight_ns;
        if (s->state == 0) {
            r->on_n++;
            r->on_w += s->weight_ns;
            p->stacks[s->stack].on_n++;
            p->stacks[s->stack].on_w += s->weight_ns;
            p->on_n++;
            p->on_w += s->weight_ns;
        }
    }
    if (raw->end_unix_ns >= raw->start_unix_ns) {
        p->wall_s = (double)(raw->end_unix_ns - raw->start_unix_ns) / 1e9;
    } else if (p->nsamples >= 2) {
        p->wall_s = (double)(p->samples[p->nsamples - 1].t_ns - p->samples[0].t_ns) / 1e9;
    }

    /* symbolize the stacks used by samples, in stack-index order, leaf to root */
    const char *mode = symbolizer ? symbolizer : symbolizer_from_env();
    symctx c;
    memset(&c, 0, sizeof c);
    c.raw = raw;
    c.strs = &p->strs;
    c.binary = binary;
    c.exe_hint = exe_hint;
    c.empty = ospprof_intern(&p->strs, "", 0);
    c.qual = ospprof_xcalloc(raw->nimages, 1);
    c.object = ospprof_xcalloc(raw->nimages, sizeof *c.object);
    c.enabled = !(mode && strcmp(mode, "none") == 0);
    c.resolver = resolver;
    c.rctx = rctx;
    c.prof = p;
    c.main_image = -1;
    for (size_t i = 0; i < raw->nimages && raw->exe; i++)
        if (raw->images[i].path && strcmp(raw->images[i].path, raw->exe) == 0) {
            c.main_image = (long)i;
            break;
        }
    /* §(l.3) "any shortfall is counted": CPU time the rate asked samples for and got none
     * (dropped_reasons.cpu_unsampled, in periods) is said when it is a noticeable part of
     * the profile, so that a CPU total and shares short of it are not taken for the
     * program's whole: at least 10 periods and a tenth of the CPU time. */
    if (raw->cpu_unsampled >= 10 && raw->rate_hz > 0) {
        double missing = (double)raw->cpu_unsampled / (double)raw->rate_hz;
        double have = (double)p->on_w / 1e9;
        const char *why =
            strcmp(p->engine, "cpu_timer") == 0
                ? "; under the cpu_timer engine, threads that block SIGPROF or run less than a "
                  "scheduler tick are seldom sampled"
            : strcmp(p->engine, "sampler") == 0
                ? "; under the sampler engine, threads that block SIGPROF are not sampled, and "
                  "a busy machine delays the sampler thread"
                : "";
        if (missing > 0.1 * (have + missing))
            warn(&c,
                 "about %.2fs of CPU time is not in this profile (%" PRIu64
                 " on-CPU samples the rate asked for were not taken: cpu_unsampled)%s",
                 missing, raw->cpu_unsampled, why);
    }
    if (c.enabled && !resolver) c.llvm = ospprof_llvm_new_ex(lines);
    uint32_t truncated_name = ospprof_intern(&p->strs, "[truncated]", 11);

    ospprof_map frame_ids = {0};
    size_t capframes = 0, capsf = 0;
    for (size_t k = 0; k < raw->nstacks; k++) {
        ospprof_stackinfo *si = &p->stacks[k];
        si->off = p->nstack_frames;
        if (!used[k]) continue;
        size_t a0 = raw->stack_off[k], a1 = raw->stack_off[k + 1];
        bool interrupted = false; /* this frame is the pc a signal interrupted */
        for (size_t j = a0; j <= a1; j++) {
            size_t off, n;
            triple trunc_frame;
            const triple *chain;
            bool exact = false; /* a non-leaf address looked up as it is */
            if (j == a1) {
                if (!raw->truncated[k]) break;
                trunc_frame = (triple){truncated_name, c.empty, 0, false};
                chain = &trunc_frame;
                n = 1;
            } else {
                bool trampoline = j > a0 && is_signal_trampoline(&c, raw->addrs[j]);
                resolve(&c, raw->addrs[j], j > a0 && !trampoline && !interrupted, trampoline, &off,
                        &n);
                exact = trampoline || interrupted;
                interrupted = trampoline;
                chain = &c.res[off];
            }
            for (size_t q = 0; q < n; q++) {
                const triple *t = &chain[q];
                bool ins;
                /* §(l.6): a frame is a function, (name, file); the line goes per position */
                uint32_t *fid = ospprof_map_put(&frame_ids, ((uint64_t)t->name << 32) | t->file, 0,
                                                (uint32_t)p->nframes, &ins);
                if (ins) {
                    if (p->nframes == capframes) {
                        capframes = capframes ? capframes * 2 : 256;
                        p->frames = ospprof_xrealloc(p->frames, capframes * sizeof *p->frames);
                        p->funcs = ospprof_xrealloc(p->funcs, capframes * sizeof *p->funcs);
                    }
                    ospprof_func *f = &p->funcs[p->nfuncs++];
                    memset(f, 0, sizeof *f);
                    f->name = t->name;
                    f->file = t->file;
                    f->user = ospprof_is_user_file(p->strs.str[t->file]);
                    p->frames[p->nframes] =
                        (ospprof_frame){t->name, t->file, 0, (uint32_t)p->nframes};
                    p->nframes++;
                }
                ospprof_func *f = &p->funcs[*fid];
                if (t->line && (f->line == 0 || t->line < f->line)) f->line = t->line;
                if (t->in_main) f->in_main = true;
                if (p->nstack_frames == capsf) {
                    capsf = capsf ? capsf * 2 : 1024;
                    p->stack_frames =
                        ospprof_xrealloc(p->stack_frames, capsf * sizeof *p->stack_frames);
                    p->stack_lines =
                        ospprof_xrealloc(p->stack_lines, capsf * sizeof *p->stack_lines);
                    p->stack_addrs =
                        ospprof_xrealloc(p->stack_addrs, capsf * sizeof *p->stack_addrs);
                    p->stack_groups =
                        ospprof_xrealloc(p->stack_groups, capsf * sizeof *p->stack_groups);
                    p->stack_images =
                        ospprof_xrealloc(p->stack_images, capsf * sizeof *p->stack_images);
                }
                p->stack_addrs[p->nstack_frames] = j == a1 ? 0 : raw->addrs[j];
                p->stack_groups[p->nstack_frames] =
                    (uint32_t)(j - a0) | (exact ? OSPPROF_GROUP_EXACT : 0);
                p->stack_images[p->nstack_frames] =
                    j == a1 ? -1 : (int32_t)ospprof_image_for(raw, raw->addrs[j]);
                p->stack_lines[p->nstack_frames] = t->line;
                p->stack_frames[p->nstack_frames++] = *fid;
            }
        }
        si->n = p->nstack_frames - si->off;
    }
    ospprof_map_free(&frame_ids);
    /* a frame's line is its function's display line (§(g.1), §(l.6)); the C-program rule
     * for `user` when no frame is Osprey code (§(l.6) "Attributed line") */
    for (size_t i = 0; i < p->nframes; i++) {
        p->frames[i].line = p->funcs[i].line;
        if (p->funcs[i].user) p->any_user = true;
    }
    for (size_t i = 0; i < p->nfuncs; i++)
        p->funcs[i].attr_user = p->any_user ? p->funcs[i].user : p->funcs[i].in_main;
    ospprof_map_free(&c.cache);
    free(c.res);
    free(c.res_off);
    free(c.res_n);
    free(c.qual);
    free(c.object);
    ospprof_llvm_free(c.llvm);
    free(used);

    ospprof_profile_totals(p);
    return p;
}

/* ---- rankings (explicit sort keys: the comparators need no context) ---------------------- */

typedef struct func_key {
    uint64_t self_w, total_w;
    const char *name, *file;
    uint32_t idx;
} func_key;

static int func_key_cmp(const void *a, const void *b) {
    const func_key *x = a, *y = b;
    if (x->self_w != y->self_w) return x->self_w > y->self_w ? -1 : 1;
    if (x->total_w != y->total_w) return x->total_w > y->total_w ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    c = strcmp(x->file, y->file);
    if (c) return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

size_t ospprof_hot_functions(const ospprof_profile *p, uint32_t **out) {
    func_key *keys = ospprof_xcalloc(p->nfuncs, sizeof *keys);
    size_t n = 0;
    for (size_t i = 0; i < p->nfuncs; i++) {
        const ospprof_func *f = &p->funcs[i];
        if (f->total_n)
            keys[n++] = (func_key){f->self_w, f->total_w, p->strs.str[f->name],
                                   p->strs.str[f->file], (uint32_t)i};
    }
    if (n > 1) qsort(keys, n, sizeof *keys, func_key_cmp);
    uint32_t *idx = ospprof_xcalloc(n, sizeof *idx);
    for (size_t i = 0; i < n; i++) idx[i] = keys[i].idx;
    free(keys);
    *out = idx;
    return n;
}

static int hotline_cmp(const void *a, const void *b) {
    const ospprof_hotline *x = a, *y = b;
    if (x->w != y->w) return x->w > y->w ? -1 : 1;
    int c = strcmp(x->file_s, y->file_s);
    if (c) return c;
    return x->line < y->line ? -1 : x->line > y->line;
}

size_t ospprof_hot_lines(const ospprof_profile *p, ospprof_hotline **out) {
    ospprof_map lm = {0};
    ospprof_hotline *hl = NULL;
    size_t nhl = 0, cap = 0;
    for (size_t k = 0; k < p->nstacks; k++) {
        const ospprof_stackinfo *si = &p->stacks[k];
        if (!si->on_n || !si->n) continue;
        /* the attributed line: the innermost `user` frame with a known line */
        size_t j = 0;
        while (j < si->n &&
               !(p->funcs[p->stack_frames[si->off + j]].attr_user && p->stack_lines[si->off + j]))
            j++;
        if (j == si->n) continue;
        uint32_t file = p->funcs[p->stack_frames[si->off + j]].file;
        uint32_t line = p->stack_lines[si->off + j];
        bool ins;
        uint32_t *slot = ospprof_map_put(&lm, file, line, (uint32_t)nhl, &ins);
        if (ins) {
            if (nhl == cap) {
                cap = cap ? cap * 2 : 64;
                hl = ospprof_xrealloc(hl, cap * sizeof *hl);
            }
            hl[nhl++] = (ospprof_hotline){file, line, p->strs.str[file], 0, 0, 0, 0};
        }
        ospprof_hotline *h = &hl[*slot];
        h->w += si->on_w;
        h->n += si->on_n;
        if (j == 0) { /* the leaf itself is on that line */
            h->self_w += si->on_w;
            h->self_n += si->on_n;
        }
    }
    ospprof_map_free(&lm);
    if (nhl > 1) qsort(hl, nhl, sizeof *hl, hotline_cmp);
    *out = hl;
    return nhl;
}
