/*
 * parser.h — recursive-descent parser for the brace syntax (LANGUAGE.md §1–§7).
 *
 * Tier 1 and Tier 2 are parsed completely, as are resuming effects (`resume`). Other
 * Tier 3 constructs are recognised and reported as `not supported yet: <feature>
 * (Tier 3)`, so valid Osprey never meets an unexplained syntax error.
 */
#ifndef OSP_FE_PARSER_H
#define OSP_FE_PARSER_H

#include "ast.h"
#include "lexer.h"

/*
 * Parse a whole file into `prog->stmts` / `prog->fns`. Returns the number of
 * syntax errors (unsupported-feature errors are reported to `d` but not counted:
 * type checking still runs so their neighbours get diagnosed).
 */
int parse_program(Program *prog, Diags *d, const char *src, size_t len);

#endif
