/*
 * frontend.h — the front end's public face: source text → typed AST, or diagnostics.
 *
 * Pipeline: lexer (lexer.h) → parser (parser.h) → name resolution (resolve.h) →
 * type inference and Tier 1 restrictions (check.h). Diagnostics are printed as
 * `path:line:col: error: message`, the source line and a caret (LANGUAGE.md
 * preamble, DESIGN.md "Error handling").
 */
#ifndef OSP_FRONTEND_H
#define OSP_FRONTEND_H

#include <stddef.h>
#include <stdio.h>

#include "ast.h"

/*
 * Compile `len` bytes of `src` (need not be NUL-terminated; may contain NULs).
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
