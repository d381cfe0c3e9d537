/*
 * check.h — Hindley–Milner type inference (docs/spec/language.md §3–§13, Tier 1 and Tier 2, resuming
 * effects).
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
 * Declared types (records, unions, aliases) and effects are prepared first; explicit
 * type parameters are rigid variables while their function is checked. After inference
 * a pass defaults what is left, marks `let`s bound to compile-time-known functions (called
 * directly by codegen) and enforces that Iterators are consumed where they are built.
 * Returns the number of errors.
 */
#ifndef OSP_FE_CHECK_H
#define OSP_FE_CHECK_H

#include "ast.h"

int check_program(Program *prog, Diags *d);

#endif
