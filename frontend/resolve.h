/*
 * resolve.h — name resolution (docs/spec/language.md §2, §3.2, §5.4, §11.1).
 *
 * Links every identifier to its Sym, hoists functions, types (constructors) and
 * effects, builds code units (functions, lambdas, spawn thunks, handler arms, the bodies
 * of handles with a resuming arm) with their `<enclosing>$lambda<k>` / `$spawn<k>` /
 * `$<Effect>.<op><k>` / `$handle<k>` numbering, computes captures (by value for lambdas
 * and spawns; `mut` cells by reference for handle groups), marks file-scope bindings that
 * need global storage, records the call graph, decides which arms resume, and rejects
 * reads of file-scope bindings before their initialiser has run, `resume` outside an arm
 * and assignments other than by handler arms. Returns the number of errors.
 */
#ifndef OSP_FE_RESOLVE_H
#define OSP_FE_RESOLVE_H

#include "ast.h"

int resolve_program(Program *prog, Diags *d);

#endif
