/*
 * resolve.h — name resolution (LANGUAGE.md §2, §3.2, §5.4, §11.1).
 *
 * Links every identifier to its Sym, hoists functions, builds code units
 * (functions, lambdas, spawn thunks) with their `<enclosing>$lambda<k>` /
 * `$spawn<k>` numbering, computes spawn captures, marks file-scope bindings that
 * need global storage, records the call graph, and rejects reads of file-scope
 * bindings before their initialiser has run. Returns the number of errors.
 */
#ifndef OSP_FE_RESOLVE_H
#define OSP_FE_RESOLVE_H

#include "ast.h"

int resolve_program(Program *prog, Diags *d);

#endif
