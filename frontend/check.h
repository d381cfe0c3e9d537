/*
 * check.h — Hindley–Milner type inference for Tier 1 (LANGUAGE.md §3–§13).
 *
 * Functions are checked by strongly connected component of the call graph and
 * generalised (let-polymorphism with levels). Operators whose typing depends on
 * operand types (checked arithmetic and Result flattening §6, comparisons,
 * printability §8) are deferred constraints solved when their operands are known;
 * constraints that mention a function's generalised variables become part of its
 * type scheme and are re-checked at every instantiation (each use of a polymorphic
 * function is later specialised by codegen). Unconstrained variables default to
 * `int` (or `Error` in a Result's error slot) at the end.
 *
 * After inference a restriction pass enforces Tier 1's static use of function and
 * Iterator values. Returns the number of errors.
 */
#ifndef OSP_FE_CHECK_H
#define OSP_FE_CHECK_H

#include "ast.h"

int check_program(Program *prog, Diags *d);

#endif
