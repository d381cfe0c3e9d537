/*
 * fuzz_frontend.c — libFuzzer target for the front end (lexer, parser, resolver,
 * type checker and diagnostic printer). Build and run with test/fuzz/run.sh.
 * Any crash, sanitizer report, leak or hang is a bug.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frontend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    int nerrors = 0;
    Program *p =
        osp_frontend_run("fuzz.osp", "/fuzz/fuzz.osp", (const char *)data, size, sink, &nerrors);
    osp_program_free(p);
    return 0;
}
