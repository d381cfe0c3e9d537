/*
 * fuzz_attach_elf.c — libFuzzer target for driver/attach_elf.c, the parser of the ELF
 * images `osprey --attach` reads out of another process (untrusted bytes): the input is
 * an image mapped at a fixed base, described (header, program headers, build-id note) and
 * searched for dynamic symbols as for the vDSO; its `.eh_frame` is located through the
 * section headers, decoded by the runtime's CFI table builder (runtime/prof/prof_cfi.c) as
 * --attach does, and the table drives walks (driver/attach_unwind.c) over a stack made of
 * the input's own bytes: corrupt tables and stacks end walks, never fault. Fuzzing: test/fuzz/attach_elf_fuzz.sh; the
 * kept corpus test/fuzz/attach_elf_corpus is replayed by ctest (driver_attach_elf_corpus)
 * through replay_main.c in every build.
 */
#include "attach_elf.h"
#include "attach_unwind.h"
#include "prof_cfi.h"
#include "replay_main.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FUZZ_BASE = 0x400000 };

struct image {
    const uint8_t *data;
    size_t size;
};

static int read_image(void *ctx, uint64_t addr, uint64_t file_off, void *buf, size_t len) {
    const struct image *im = ctx;
    (void)file_off;
    if (addr < FUZZ_BASE || addr - FUZZ_BASE > im->size || len > im->size - (addr - FUZZ_BASE))
        return -1;
    memcpy(buf, im->data + (addr - FUZZ_BASE), len);
    return 0;
}

/* attach_elf_read_fn over the input as a file (file offsets). */
static int read_file(void *ctx, uint64_t addr, uint64_t file_off, void *buf, size_t len) {
    const struct image *im = ctx;
    (void)addr;
    if (file_off > im->size || len > im->size - file_off) return -1;
    memcpy(buf, im->data + file_off, len);
    return 0;
}

/* The walk's memory: the input again, as a stack at FUZZ_STACK. */
enum { FUZZ_STACK = 0x7f0000 };
static int read_stack(void *ctx, uint64_t addr, void *buf, size_t len) {
    const struct image *im = ctx;
    if (addr < FUZZ_STACK || addr - FUZZ_STACK > im->size || len > im->size - (addr - FUZZ_STACK))
        return -1;
    memcpy(buf, im->data + (addr - FUZZ_STACK), len);
    return 0;
}

static void walk_cfi(struct image *im) {
    attach_elf_section sec;
    if (!attach_elf_eh_frame(read_file, im, &sec)) return;
    if (sec.offset > im->size || sec.size > im->size - sec.offset) return;
    struct osp_cfi_table t;
    if (!osp_prof__cfi_build(im->data + sec.offset, (size_t)sec.size,
                             (uintptr_t)(FUZZ_BASE + sec.addr), FUZZ_BASE, &t, NULL))
        return;
    const struct osp_cfi_table *tables[] = {&t};
    osp_unwind_cfi cfi = {.tables = tables, .ntables = 1, .read = read_stack, .read_ctx = im};
    osp_unwinder u = {
        .read = read_stack, .read_ctx = im, .step = osp_unwind_cfi_step, .step_ctx = &cfi};
    uint64_t frames[128];
    /* a few starting points: each row's start, the stack at its base and in its middle */
    for (size_t i = 0; i < t.nrows && i < 16; i++) {
        osp_remote_regs r = {.pc = t.lo + t.rows[i].pc_off,
                             .sp = FUZZ_STACK + (i & 1 ? im->size / 2 : 0),
                             .fp = FUZZ_STACK + 16 * i};
        bool trunc;
        size_t n = osp_unwind_walk(&u, &r, frames, 128, &trunc);
        if (n == 0 || n > 128) abort();
    }
    osp_prof__cfi_table_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct image im = {data, size};
    attach_elf_info info;
    if (attach_elf_describe(read_image, &im, FUZZ_BASE, &info)) {
        /* what the raw writer prints: the fields must be self-consistent */
        if (strlen(info.build_id) % 2 != 0) abort();
    }
    char *json = attach_elf_symbols_json(data, size);
    if (json && (json[0] != '[' || json[strlen(json) - 1] != ']')) abort();
    free(json);
    (void)attach_elf_defines(read_file, &im, "osp_prof_boot");
    walk_cfi(&im);
    return 0;
}
