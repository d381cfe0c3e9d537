/*
 * parser.h — recursive-descent parser for the brace syntax (docs/spec/language.md §1–§7).
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
 * The most operators of left-associative chains (binary operators, `|>`, calls, `.`,
 * indexing, record update) on any path from an expression's root to a leaf; one flat
 * chain `1 + 1 + ... + 1` may have this many operators. Beyond it the parser reports
 * `expression has more than 10000 operators in one chain; split it with `let`
 * bindings`. Together with the nesting limit (400 levels of parentheses, blocks,
 * arguments, prefix operators, ...) this bounds the height of the syntax tree that
 * the later passes walk recursively (docs/compiler.md "Limits").
 */
#define OSP_MAX_CHAIN 10000

/*
 * Parse a whole file into `prog->stmts` / `prog->fns`. Returns the number of
 * syntax errors (unsupported-feature errors are reported to `d` but not counted:
 * type checking still runs so their neighbours get diagnosed).
 */
int parse_program(Program *prog, Diags *d, const char *src, size_t len);

#endif
