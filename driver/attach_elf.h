/*
 * attach_elf.h — what `osprey --attach` reads from the ELF images mapped in the target
 * (docs/spec/profiler.md §(e) "Images", §(l.9)): base, slide, executable range, machine,
 * GNU build-id, and the vDSO's dynamic function symbols; and, for `osprey --record`,
 * whether a program defines a symbol (attach_elf_defines). The bytes come from another
 * process (or its files) and are untrusted: every offset and size is checked, nothing is
 * read through a cast pointer (memcpy only), and the fuzz target test/fuzz/fuzz_attach_elf.c
 * feeds this module arbitrary bytes.
 */
#ifndef OSPREY_ATTACH_ELF_H
#define OSPREY_ATTACH_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copy `len` bytes of the image: at target address `addr`, which is file offset `file_off`
 * of the image. 0 on success, -1 if unreadable. */
typedef int (*attach_elf_read_fn)(void *ctx, uint64_t addr, uint64_t file_off, void *buf,
                                  size_t len);

typedef struct attach_elf_info {
    uint64_t base, slide, text, text_size; /* text_size 0: no executable segment known */
    unsigned machine;                      /* e_machine (EM_X86_64, EM_AARCH64, ...) */
    char build_id[129];                    /* lowercase hex, "" if none */
} attach_elf_info;

/*
 * Describe the 64-bit ELF image whose file offset 0 is mapped at `base`: base = `base`,
 * slide = base − the first PT_LOAD's page-aligned p_vaddr (that segment has p_offset 0),
 * text = the span of the PF_X PT_LOAD segments, slid; build_id from a PT_NOTE (≤ 4 KiB).
 * Returns false (out unspecified) when the header is not a 64-bit ELF header with
 * 1..512 program headers of the right size, or they cannot be read.
 */
bool attach_elf_describe(attach_elf_read_fn read, void *ctx, uint64_t base, attach_elf_info *out);

/*
 * The dynamic function symbols of a complete ELF image copied into image[0..size) (the
 * vDSO), as the JSON array of §(e) `images[].symbols`: `[{"name","addr","size"}, ...]`,
 * `addr` as the image describes it. Names that are not plain identifiers ([A-Za-z0-9_.@])
 * are skipped. Returns a malloc'd NUL-terminated string (free it), or NULL when the section
 * headers are unusable or out of memory.
 */
char *attach_elf_symbols_json(const unsigned char *image, size_t size);

/* Where an image's `.eh_frame` section is (docs/spec/profiler.md §(l.1)): its link-time
 * address, file offset and size. */
typedef struct attach_elf_section {
    uint64_t addr, offset, size;
} attach_elf_section;

/*
 * Find the `.eh_frame` section (SHT_PROGBITS or SHT_X86_64_UNWIND, allocated, 1 byte to
 * 64 MiB) of a 64-bit ELF image through its section headers, read with `read` at file
 * offsets (`addr` is passed equal to the offset). At most 4096 section headers and 64 KiB of
 * section names are read. Returns false when the image has no such section or its headers
 * are unusable (an image without section headers: no CFI from the file).
 */
bool attach_elf_eh_frame(attach_elf_read_fn read, void *ctx, attach_elf_section *out);

/*
 * Whether a 64-bit ELF image, read with `read` at file offsets (`addr` equal to the
 * offset), defines symbol `name` (NUL-terminated) in its symbol table or dynamic symbols
 * (any type, not SHN_UNDEF). Tables over 64 MiB are skipped. False when it does not, or
 * its section headers are unusable (a stripped program without `name` in .dynsym).
 */
bool attach_elf_defines(attach_elf_read_fn read, void *ctx, const char *name);

#endif
