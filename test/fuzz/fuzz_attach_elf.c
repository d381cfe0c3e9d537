/*
 * fuzz_attach_elf.c — libFuzzer target for driver/attach_elf.c, the parser of the ELF
 * images `osprey --attach` reads out of another process (untrusted bytes): the input is
 * an image mapped at a fixed base, described (header, program headers, build-id note) and
 * searched for dynamic symbols as for the vDSO. Fuzzing: test/fuzz/attach_elf_fuzz.sh; the
 * kept corpus test/fuzz/attach_elf_corpus is replayed by ctest (driver_attach_elf_corpus)
 * through replay_main.c in every build.
 */
#include "attach_elf.h"
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
    return 0;
}
