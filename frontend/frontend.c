/* frontend.c — see frontend.h. */
#include "frontend.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "effects.h"
#include "parser.h"
#include "resolve.h"

Program *osp_frontend_run(const char *path, const char *abs_path, const char *src, size_t len,
                          FILE *diag_out, int *nerrors) {
    Arena *a = arena_new();
    Program *prog = arena_alloc(a, sizeof *prog);
    prog->arena = a;
    types_init(&prog->types, a);
    prog->path = arena_strdup(a, path);
    prog->abs_path = arena_strdup(a, abs_path ? abs_path : path);
    Diags d = {.arena = a, .path = prog->path, .src = src, .src_len = len};
    int syntax = parse_program(prog, &d, src, len);
    if (syntax == 0) {
        int before = d.count;
        resolve_program(prog, &d);
        check_program(prog, &d);
        if (d.count == before) effects_program(prog, &d);
    }
    if (diag_out) diag_print(&d, diag_out);
    *nerrors = d.count;
    return prog;
}

void osp_program_free(Program *prog) {
    if (prog) arena_free(prog->arena);
}
