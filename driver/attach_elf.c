/* attach_elf.c — see attach_elf.h. */
#include "attach_elf.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PHDRS = 512, MAX_NOTE = 4096, MAX_SHDRS = 4096, MAX_SHSTR = 65536 };

/* Largest .eh_frame read (libc's is about 100 KiB; a large C++ program's a few MiB). */
#define MAX_EH_FRAME ((uint64_t)64 << 20)

/* Largest symbol or string table read (a large program's .symtab is a few MiB). */
#define MAX_SYMTAB ((uint64_t)64 << 20)

#ifndef SHT_X86_64_UNWIND
#define SHT_X86_64_UNWIND 0x70000001
#endif

/* The GNU build-id note in notes[0..size), hex into out (2 * 64 + 1 bytes). */
static void build_id_hex(const unsigned char *p, size_t size, char *out) {
    size_t off = 0;
    out[0] = 0;
    while (size >= sizeof(Elf64_Nhdr) && off <= size - sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr nh;
        memcpy(&nh, p + off, sizeof nh);
        uint64_t name_off = off + sizeof nh;
        uint64_t name_sz = ((uint64_t)nh.n_namesz + 3) & ~(uint64_t)3;
        uint64_t desc_off = name_off + name_sz;
        uint64_t desc_sz = ((uint64_t)nh.n_descsz + 3) & ~(uint64_t)3;
        if (desc_off > size || nh.n_descsz > size - desc_off) return;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            memcmp(p + name_off, "GNU", 4) == 0) {
            static const char hex[] = "0123456789abcdef";
            size_t n = nh.n_descsz < 64 ? nh.n_descsz : 64;
            for (size_t k = 0; k < n; k++) {
                out[2 * k] = hex[p[desc_off + k] >> 4];
                out[2 * k + 1] = hex[p[desc_off + k] & 15];
            }
            out[2 * n] = 0;
            return;
        }
        if (desc_sz > size - desc_off) return;
        off = (size_t)(desc_off + desc_sz);
    }
}

bool attach_elf_describe(attach_elf_read_fn read, void *ctx, uint64_t base, attach_elf_info *out) {
    memset(out, 0, sizeof *out);
    Elf64_Ehdr eh;
    if (read(ctx, base, 0, &eh, sizeof eh) != 0) return false;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS ||
        eh.e_phoff > UINT64_MAX - base)
        return false;
    Elf64_Phdr *ph = malloc((size_t)eh.e_phnum * sizeof *ph);
    if (!ph) return false;
    if (read(ctx, base + eh.e_phoff, eh.e_phoff, ph, (size_t)eh.e_phnum * sizeof *ph) != 0) {
        free(ph);
        return false;
    }
    uint64_t first_vaddr = UINT64_MAX, text_lo = UINT64_MAX, text_hi = 0;
    for (unsigned i = 0; i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0 && first_vaddr == UINT64_MAX)
            first_vaddr = ph[i].p_vaddr & ~(uint64_t)4095;
    if (first_vaddr == UINT64_MAX) first_vaddr = 0;
    out->base = base;
    out->slide = base - first_vaddr; /* wraps for a non-PIE image: addresses are unsigned */
    out->machine = eh.e_machine;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X)) continue;
        uint64_t s = out->slide + ph[i].p_vaddr;
        if (ph[i].p_memsz > UINT64_MAX - s) continue; /* a segment past the address space */
        if (s < text_lo) text_lo = s;
        if (s + ph[i].p_memsz > text_hi) text_hi = s + ph[i].p_memsz;
    }
    if (text_lo < text_hi) {
        out->text = text_lo;
        out->text_size = text_hi - text_lo;
    }
    for (unsigned i = 0; i < eh.e_phnum && !out->build_id[0]; i++) {
        if (ph[i].p_type != PT_NOTE || ph[i].p_memsz == 0 || ph[i].p_memsz > MAX_NOTE) continue;
        unsigned char note[MAX_NOTE];
        if (read(ctx, out->slide + ph[i].p_vaddr, ph[i].p_offset, note, ph[i].p_memsz) != 0)
            continue;
        build_id_hex(note, ph[i].p_memsz, out->build_id);
    }
    free(ph);
    return true;
}

static bool plain_name(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(c == '_' || c == '.' || c == '@' || (c >= '0' && c <= '9') ||
              (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return false;
    }
    return true;
}

char *attach_elf_symbols_json(const unsigned char *b, size_t size) {
    Elf64_Ehdr eh;
    if (size < sizeof eh) return NULL;
    memcpy(&eh, b, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        eh.e_shoff > size || (size_t)eh.e_shnum * sizeof(Elf64_Shdr) > size - eh.e_shoff)
        return NULL;
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    if (!f) return NULL;
    fputc('[', f);
    bool first = true;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr ss, st;
        memcpy(&ss, b + eh.e_shoff + (size_t)i * sizeof ss, sizeof ss);
        if (ss.sh_type != SHT_DYNSYM || ss.sh_link >= eh.e_shnum) continue;
        memcpy(&st, b + eh.e_shoff + (size_t)ss.sh_link * sizeof st, sizeof st);
        if (ss.sh_entsize != sizeof(Elf64_Sym) || ss.sh_offset > size ||
            ss.sh_size > size - ss.sh_offset || st.sh_offset > size ||
            st.sh_size > size - st.sh_offset)
            continue;
        const char *str = (const char *)(b + st.sh_offset);
        for (size_t k = 0; k < ss.sh_size / sizeof(Elf64_Sym); k++) {
            Elf64_Sym sym;
            memcpy(&sym, b + ss.sh_offset + k * sizeof sym, sizeof sym);
            if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
                sym.st_name >= st.sh_size)
                continue;
            const char *nm = str + sym.st_name;
            size_t len = strnlen(nm, st.sh_size - sym.st_name);
            if (!plain_name(nm, len)) continue; /* vDSO names are identifiers */
            fprintf(f, "%s{\"name\":\"%.*s\",\"addr\":%llu,\"size\":%llu}", first ? "" : ",",
                    (int)len, nm, (unsigned long long)sym.st_value,
                    (unsigned long long)sym.st_size);
            first = false;
        }
    }
    fputc(']', f);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* The ELF header and section headers (at most MAX_SHDRS) of an image read at file
 * offsets; *sh is malloc'd (free it). False when they are not a 64-bit ELF's or cannot be
 * read. */
static bool read_shdrs(attach_elf_read_fn read, void *ctx, Elf64_Ehdr *eh, Elf64_Shdr **sh) {
    *sh = NULL;
    if (read(ctx, 0, 0, eh, sizeof *eh) != 0) return false;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 || eh->e_shnum > MAX_SHDRS ||
        eh->e_shstrndx >= eh->e_shnum || eh->e_shoff == 0 ||
        eh->e_shoff > UINT64_MAX - (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))
        return false;
    size_t nbytes = (size_t)eh->e_shnum * sizeof(Elf64_Shdr);
    *sh = malloc(nbytes);
    if (*sh && read(ctx, eh->e_shoff, eh->e_shoff, *sh, nbytes) == 0) return true;
    free(*sh);
    *sh = NULL;
    return false;
}

bool attach_elf_eh_frame(attach_elf_read_fn read, void *ctx, attach_elf_section *out) {
    memset(out, 0, sizeof *out);
    Elf64_Ehdr eh;
    Elf64_Shdr *sh;
    if (!read_shdrs(read, ctx, &eh, &sh)) return false;
    bool found = false;
    char *names = NULL;
    const Elf64_Shdr *ss = &sh[eh.e_shstrndx];
    if (ss->sh_type != SHT_STRTAB || ss->sh_size == 0 || ss->sh_size > MAX_SHSTR) goto done;
    names = malloc((size_t)ss->sh_size + 1);
    if (!names || read(ctx, ss->sh_offset, ss->sh_offset, names, (size_t)ss->sh_size) != 0)
        goto done;
    names[ss->sh_size] = 0; /* every name below is NUL-terminated inside the copy */
    for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
        const Elf64_Shdr *s = &sh[i];
        if (s->sh_name >= ss->sh_size || strcmp(names + s->sh_name, ".eh_frame") != 0) continue;
        if (s->sh_type != SHT_PROGBITS && s->sh_type != SHT_X86_64_UNWIND) continue;
        if (!(s->sh_flags & SHF_ALLOC) || s->sh_size == 0 || s->sh_size > MAX_EH_FRAME ||
            s->sh_offset > UINT64_MAX - s->sh_size || s->sh_addr > UINT64_MAX - s->sh_size)
            continue;
        out->addr = s->sh_addr;
        out->offset = s->sh_offset;
        out->size = s->sh_size;
        found = true;
    }
done:
    free(names);
    free(sh);
    return found;
}

bool attach_elf_defines(attach_elf_read_fn read, void *ctx, const char *name) {
    Elf64_Ehdr eh;
    Elf64_Shdr *sh;
    if (!read_shdrs(read, ctx, &eh, &sh)) return false;
    bool found = false;
    for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
        const Elf64_Shdr *ss = &sh[i];
        if ((ss->sh_type != SHT_SYMTAB && ss->sh_type != SHT_DYNSYM) ||
            ss->sh_entsize != sizeof(Elf64_Sym) || ss->sh_link >= eh.e_shnum ||
            ss->sh_size > MAX_SYMTAB)
            continue;
        const Elf64_Shdr *st = &sh[ss->sh_link];
        if (st->sh_size == 0 || st->sh_size > MAX_SYMTAB) continue;
        Elf64_Sym *syms = malloc(ss->sh_size ? (size_t)ss->sh_size : 1);
        char *strs = malloc((size_t)st->sh_size + 1);
        if (syms && strs &&
            read(ctx, ss->sh_offset, ss->sh_offset, syms, (size_t)ss->sh_size) == 0 &&
            read(ctx, st->sh_offset, st->sh_offset, strs, (size_t)st->sh_size) == 0) {
            strs[st->sh_size] = 0; /* every name below is NUL-terminated inside the copy */
            for (size_t k = 0; k < ss->sh_size / sizeof(Elf64_Sym) && !found; k++)
                found = syms[k].st_shndx != SHN_UNDEF && syms[k].st_name < st->sh_size &&
                        strcmp(strs + syms[k].st_name, name) == 0;
        }
        free(syms);
        free(strs);
    }
    free(sh);
    return found;
}
