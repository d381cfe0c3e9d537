/*
 * restrict.h — the Tier 1 restrictions checked on the finished, typed program
 * (docs/spec/language.md §10: Iterators are consumed where they are built).
 *
 * Runs after check_program (every type resolved) and before the effect check. It marks
 * the `let`s bound to compile-time-known values (Sym.static_kind: STATIC_FN for a
 * function codegen calls directly, STATIC_ITER for an Iterator pipeline it compiles to a
 * loop) and reports an Iterator that is passed, returned, stored in a `mut`, captured by a
 * lambda, `spawn` or `handle`, or read from file scope inside a function. Diagnostics go
 * to `d`; returns the number of errors.
 */
#ifndef OSP_FE_RESTRICT_H
#define OSP_FE_RESTRICT_H

#include "ast.h"

int restrict_program(Program *prog, Diags *d);

#endif
