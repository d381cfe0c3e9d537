/*
 * prof_images.c — the `images` array of the raw profile, docs/spec/profiler.md §(e) "Images":
 * every object the dynamic linker reports (main executable under its real absolute
 * path, shared objects, the dynamic loader, the vDSO as `[vdso]` with its dynamic
 * symbols), each with base, slide, executable range, arch and GNU build id.
 * Only reads ELF structures that are mapped in memory.
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>
#include "prof_cfi.h"
#include "prof_own_text.h"

const char *osp_prof__platform(void) {
#if defined(__x86_64__)
    return "linux-x86_64";
#elif defined(__aarch64__)
    return "linux-arm64";
#else
    return "";
#endif
}

const char *osp_prof__arch_of_machine(unsigned machine) {
    switch (machine) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "arm64";
    default: return "";
    }
}

struct image {
    char *path; /* owned copy */
    uintptr_t base, slide, text, text_end, hdr_size;
    unsigned machine;
    bool is_vdso;
    unsigned char build_id[64];
    size_t build_id_len;
};

struct image_list {
    struct image *v;
    size_t n, cap;
    bool failed;
    const char *exe_path;
    uintptr_t vdso_ehdr, loader_base;
    bool no_main; /* set while adding an image that is not the main program */
};

/* Find the NT_GNU_BUILD_ID note of a PT_NOTE segment mapped at [p, p + size). */
static size_t find_build_id(const unsigned char *p, size_t size, size_t align, unsigned char *out,
                            size_t cap) {
    if (align < 4) align = 4;
    size_t off = 0;
    while (off + sizeof(ElfW(Nhdr)) <= size) {
        ElfW(Nhdr) nh;
        memcpy(&nh, p + off, sizeof nh);
        size_t name_off = off + sizeof nh;
        size_t name_sz = (nh.n_namesz + align - 1) & ~(align - 1);
        size_t desc_off = name_off + name_sz;
        size_t desc_sz = (nh.n_descsz + align - 1) & ~(align - 1);
        if (name_sz < nh.n_namesz || desc_off > size || nh.n_descsz > size - desc_off) break;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            memcmp(p + name_off, "GNU", 4) == 0) {
            size_t k = nh.n_descsz < cap ? nh.n_descsz : cap;
            memcpy(out, p + desc_off, k);
            return k;
        }
        off = desc_off + desc_sz;
    }
    return 0;
}

static int collect(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct image_list *L = data;
    if (L->n == L->cap) {
        size_t c = L->cap ? L->cap * 2 : 32;
        struct image *q = realloc(L->v, c * sizeof *q);
        if (!q) {
            L->failed = true;
            return 1;
        }
        L->v = q;
        L->cap = c;
    }
    struct image *im = &L->v[L->n];
    memset(im, 0, sizeof *im);
    im->slide = info->dlpi_addr;
    bool have_base = false;
    uintptr_t lowest = UINTPTR_MAX, text_lo = UINTPTR_MAX, text_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_offset == 0 && !have_base) {
            im->base = start;
            im->hdr_size = ph->p_memsz;
            have_base = true;
        }
        /* Where file offset 0 would be mapped, should no segment start there. */
        if (ph->p_offset <= start && start - ph->p_offset < lowest) lowest = start - ph->p_offset;
        if (ph->p_flags & PF_X) {
            if (start < text_lo) text_lo = start;
            if (start + ph->p_memsz > text_hi) text_hi = start + ph->p_memsz;
        }
    }
    if (!have_base) im->base = lowest != UINTPTR_MAX ? lowest : info->dlpi_addr;
    if (text_lo < text_hi) {
        im->text = text_lo;
        im->text_end = text_hi;
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        im->build_id_len =
            find_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz,
                          ph->p_align, im->build_id, sizeof im->build_id);
        if (im->build_id_len) break;
    }
    if (have_base) {
        const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)im->base;
        if (im->hdr_size >= sizeof *eh && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0)
            im->machine = eh->e_machine;
    }
    im->is_vdso = L->vdso_ehdr != 0 && have_base && im->base == L->vdso_ehdr;
    const char *name = info->dlpi_name;
    if (L->n == 0 && !L->no_main && (name == NULL || name[0] == '\0'))
        name = L->exe_path; /* the first entry is the main program */
    else if (im->is_vdso)
        name = "[vdso]";
    else if (name == NULL)
        name = "";
    im->path = strdup(name);
    if (!im->path) {
        L->failed = true;
        return 1;
    }
    L->n++;
    return 0;
}

/* The dynamic loader is in glibc's list; add it from AT_BASE if a libc ever omits it. */
static void add_loader_if_missing(struct image_list *L) {
    if (L->loader_base == 0 || L->failed) return;
    for (size_t i = 0; i < L->n; i++)
        if (L->v[i].base == L->loader_base || L->v[i].slide == L->loader_base) return;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)L->loader_base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return;
    struct dl_phdr_info info;
    memset(&info, 0, sizeof info);
    info.dlpi_phdr = (const ElfW(Phdr) *)(L->loader_base + eh->e_phoff);
    info.dlpi_phnum = eh->e_phnum;
    uintptr_t first_vaddr = 0;
    for (int i = 0; i < info.dlpi_phnum; i++)
        if (info.dlpi_phdr[i].p_type == PT_LOAD && info.dlpi_phdr[i].p_offset == 0) {
            first_vaddr = info.dlpi_phdr[i].p_vaddr;
            break;
        }
    info.dlpi_addr = L->loader_base - first_vaddr;
    /* Its path: the main program's PT_INTERP. */
    char interp[256];
    interp[0] = '\0';
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    size_t phnum = getauxval(AT_PHNUM);
    if (ph && L->n > 0) {
        for (size_t i = 0; i < phnum; i++)
            if (ph[i].p_type == PT_INTERP && ph[i].p_filesz < sizeof interp) {
                memcpy(interp, (const char *)(L->v[0].slide + ph[i].p_vaddr), ph[i].p_filesz);
                interp[ph[i].p_filesz] = '\0';
            }
    }
    info.dlpi_name = interp[0] ? interp : "[loader]";
    L->no_main = true;
    collect(&info, sizeof info, L);
    L->no_main = false;
}

static void write_symbols(struct osp_prof_out *o, const struct image *im) {
    /* The vDSO is a complete ELF image in memory; read its section headers for the
     * dynamic symbol table. Everything is bounds-checked against the mapped size. */
    const unsigned char *b = (const unsigned char *)im->base;
    /* Its section headers follow the loadable part within the same mapped pages. */
    size_t page = (size_t)getpagesize();
    size_t size = (im->hdr_size + page - 1) & ~(page - 1);
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)b;
    osp_prof__out_str(o, ",\"" OSP_RAW_IMAGE_SYMBOLS "\":[");
    bool first = true;
    if (size < sizeof *eh || eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > size ||
        (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > size - eh->e_shoff)
        goto done;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(b + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
        const ElfW(Shdr) *ss = &sh[i], *st = &sh[ss->sh_link];
        if (ss->sh_entsize != sizeof(ElfW(Sym)) || ss->sh_offset > size ||
            ss->sh_size > size - ss->sh_offset || st->sh_offset > size ||
            st->sh_size > size - st->sh_offset)
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(b + ss->sh_offset);
        const char *str = (const char *)(b + st->sh_offset);
        size_t nsym = ss->sh_size / sizeof *sym;
        for (size_t k = 0; k < nsym; k++) {
            if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || sym[k].st_shndx == SHN_UNDEF ||
                sym[k].st_name >= st->sh_size)
                continue;
            const char *nm = str + sym[k].st_name;
            size_t len = strnlen(nm, st->sh_size - sym[k].st_name);
            if (len == 0) continue;
            osp_prof__out_str(o, first ? "{\"" OSP_RAW_SYMBOL_NAME "\":"
                                       : ",{\"" OSP_RAW_SYMBOL_NAME "\":");
            first = false;
            osp_prof__out_json_string(o, nm, len);
            osp_prof__out_str(o, ",\"" OSP_RAW_SYMBOL_ADDR "\":");
            osp_prof__out_u64(o, sym[k].st_value);
            osp_prof__out_str(o, ",\"" OSP_RAW_SYMBOL_SIZE "\":");
            osp_prof__out_u64(o, sym[k].st_size);
            osp_prof__out_str(o, "}");
        }
    }
done:
    osp_prof__out_str(o, "]");
}

/* ---- images unloaded during the session ------------------------------------------------- */

/* Every image osp_prof__images_note saw while the session ran (not the main program or
 * the vDSO, which cannot be unloaded), under g_seen_lock: the sampler thread notes at its
 * ticks, a program thread in dlclose (libosprey_prof.so), the writer reads and frees. A
 * leaf lock: nothing else is taken under it but the loader's lock and the allocator's. */
static pthread_mutex_t g_seen_lock = PTHREAD_MUTEX_INITIALIZER;
static struct image_list g_seen;
static unsigned long long g_seen_adds = ~0ull, g_seen_subs = ~0ull;

static bool same_image(const struct image *a, const struct image *b) {
    return a->base == b->base && a->slide == b->slide && a->text == b->text &&
           a->text_end == b->text_end && strcmp(a->path, b->path) == 0;
}

void osp_prof__images_note(void) {
    unsigned long long v[2];
    osp_prof__loader_counts(v);
    pthread_mutex_lock(&g_seen_lock);
    if (v[0] != ~0ull && v[0] == g_seen_adds && v[1] == g_seen_subs) {
        pthread_mutex_unlock(&g_seen_lock);
        return;
    }
    struct image_list L;
    memset(&L, 0, sizeof L);
    L.exe_path = "";
    L.vdso_ehdr = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    dl_iterate_phdr(collect, &L);
    for (size_t i = 0; i < L.n; i++) {
        struct image *im = &L.v[i];
        bool keep = !L.failed && im->path[0] != '\0' && !im->is_vdso && im->text < im->text_end;
        for (size_t j = 0; keep && j < g_seen.n; j++)
            if (same_image(&g_seen.v[j], im)) keep = false;
        if (keep && g_seen.n == g_seen.cap) {
            size_t c = g_seen.cap ? g_seen.cap * 2 : 16;
            struct image *q = realloc(g_seen.v, c * sizeof *q);
            if (q == NULL) {
                keep = false;
            } else {
                g_seen.v = q;
                g_seen.cap = c;
            }
        }
        if (keep)
            g_seen.v[g_seen.n++] = *im; /* takes the path */
        else
            free(im->path);
    }
    free(L.v);
    if (!L.failed) {
        g_seen_adds = v[0];
        g_seen_subs = v[1];
    }
    pthread_mutex_unlock(&g_seen_lock);
}

/* Whether [lo, hi) overlaps the executable range of one of the first `n` images of `v`. */
static bool text_overlaps(const struct image *v, size_t n, uintptr_t lo, uintptr_t hi) {
    for (size_t i = 0; i < n; i++)
        if (v[i].text < v[i].text_end && lo < v[i].text_end && v[i].text < hi) return true;
    return false;
}

static void write_image(struct osp_prof_out *o, const struct image *im, bool first) {
    static const char hex[] = "0123456789abcdef";
    osp_prof__out_str(o, first ? "{\"" OSP_RAW_IMAGE_PATH "\":" : ",{\"" OSP_RAW_IMAGE_PATH "\":");
    osp_prof__out_json_string(o, im->path, strlen(im->path));
    osp_prof__out_str(o, ",\"" OSP_RAW_IMAGE_BASE "\":");
    osp_prof__out_u64(o, im->base);
    osp_prof__out_str(o, ",\"" OSP_RAW_IMAGE_SLIDE "\":");
    osp_prof__out_u64(o, im->slide);
    osp_prof__out_str(o, ",\"" OSP_RAW_IMAGE_TEXT "\":");
    osp_prof__out_u64(o, im->text);
    osp_prof__out_str(o, ",\"" OSP_RAW_IMAGE_TEXT_SIZE "\":");
    osp_prof__out_u64(o, im->text_end - im->text);
    osp_prof__out_str(o, ",\"" OSP_RAW_IMAGE_ARCH "\":\"");
    osp_prof__out_str(o, im->machine ? osp_prof__arch_of_machine(im->machine)
                                     : osp_prof__arch_of_machine(
#if defined(__x86_64__)
                                           EM_X86_64
#else
                                           EM_AARCH64
#endif
                                           ));
    osp_prof__out_str(o, "\"");
    if (im->build_id_len) {
        char idhex[2 * sizeof im->build_id];
        for (size_t k = 0; k < im->build_id_len; k++) {
            idhex[2 * k] = hex[im->build_id[k] >> 4];
            idhex[2 * k + 1] = hex[im->build_id[k] & 15];
        }
        osp_prof__out_str(o, ",\"" OSP_RAW_IMAGE_BUILD_ID "\":\"");
        osp_prof__out_bytes(o, idhex, 2 * im->build_id_len);
        osp_prof__out_str(o, "\"");
    }
    if (im->is_vdso) write_symbols(o, im);
    osp_prof__out_str(o, "}");
}

void osp_prof__write_images(struct osp_prof_out *o, const char *exe_path) {
    struct image_list L;
    memset(&L, 0, sizeof L);
    L.exe_path = exe_path;
    L.vdso_ehdr = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    L.loader_base = (uintptr_t)getauxval(AT_BASE);
    dl_iterate_phdr(collect, &L);
    add_loader_if_missing(&L);
    osp_prof__out_str(o, "[");
    for (size_t i = 0; i < L.n; i++) write_image(o, &L.v[i], i == 0);
    /* Images unloaded before now (a plugin the program dlclose'd): their samples keep
     * their names. One whose executable range overlaps an image already written (its
     * addresses reused by a later load) is left out, so an address never maps to two. A
     * thread stopped inside osp_prof__images_note (by a signal whose handler called _exit)
     * cannot hold the file up: after about 100 ms they are left out. */
    bool locked = false;
    for (int tries = 0; tries < 100 && !(locked = pthread_mutex_trylock(&g_seen_lock) == 0);
         tries++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (locked) {
        size_t written = 0;
        for (size_t i = 0; i < g_seen.n; i++) {
            struct image *im = &g_seen.v[i];
            bool gone = !text_overlaps(L.v, L.n, im->text, im->text_end) &&
                        !text_overlaps(g_seen.v, written, im->text, im->text_end);
            if (gone) {
                write_image(o, im, L.n == 0 && written == 0);
                struct image t = g_seen.v[written];
                g_seen.v[written++] = *im; /* the written ones first, for the overlap test */
                *im = t;
            }
        }
        for (size_t i = 0; i < g_seen.n; i++) free(g_seen.v[i].path);
        free(g_seen.v);
        memset(&g_seen, 0, sizeof g_seen);
        g_seen_adds = g_seen_subs = ~0ull;
        pthread_mutex_unlock(&g_seen_lock);
    }
    osp_prof__out_str(o, "]");
    for (size_t i = 0; i < L.n; i++) free(L.v[i].path);
    free(L.v);
}

#endif /* OSP_PROF_SAMPLER */
