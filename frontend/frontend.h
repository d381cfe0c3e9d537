/*
 * frontend.h — the front end's public face: source text → typed AST, or diagnostics.
 *
 * Pipeline: lexer (lexer.h) → parser (parser.h) → name resolution (resolve.h) →
 * type inference, ending with every type resolved (check.h) → the Iterator restrictions
 * (restrict.h) → the effect check (effects.h). Diagnostics are printed as
 * `path:line:col: error: message`, the source line and a caret (docs/spec/language.md
 * preamble, docs/ARCHITECTURE.md "Error handling").
 */
#ifndef OSP_FRONTEND_H
#define OSP_FRONTEND_H

#include <stddef.h>
#include <stdio.h>

#include "ast.h"

/*
 * Stack size of the compile thread: 256 MiB of address space, committed only as far as
 * it is used. Every pass after the parser (resolution, inference, effects, code
 * generation) walks the syntax tree recursively; the parser bounds the tree's height
 * (OSP_MAX_CHAIN chain operators plus 400 levels of nesting, parser.h) and this stack
 * holds that height in every pass, also in sanitizer builds, whatever `ulimit -s` is.
 */
#define OSP_COMPILE_STACK ((size_t)256 << 20)

/*
 * Call fn(arg) on a thread whose stack is OSP_COMPILE_STACK bytes and wait for it to
 * return. Called on such a thread already, it calls fn directly; when no thread can be
 * created it also calls fn directly (on the caller's stack). The driver runs its whole
 * compile (front end and code generation) this way; osp_frontend_run uses it itself,
 * so other callers (fuzzers, tests) are covered too.
 */
void osp_run_on_compile_stack(void (*fn)(void *), void *arg);

/*
 * Compile `len` bytes of `src` (need not be NUL-terminated; may contain NULs). One
 * leading UTF-8 byte order mark (EF BB BF) is skipped: positions count from after it.
 * `path` is used in diagnostics, `abs_path` (may be NULL) in debug info.
 * Diagnostics are printed to `diag_out` (if not NULL) and counted in *nerrors.
 * Returns the program (owned by the caller, free with osp_program_free) — also on
 * errors, so tools can inspect partial results; use it for codegen only when
 * *nerrors is 0. Never returns NULL.
 */
Program *osp_frontend_run(const char *path, const char *abs_path, const char *src, size_t len,
                          FILE *diag_out, int *nerrors);

/* Free a program and everything it owns. NULL is allowed. */
void osp_program_free(Program *prog);

#endif
