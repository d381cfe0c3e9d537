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
 * a last pass defaults what is left and resolves every type the program holds (the
 * declarations, every expression, binding, instantiation and scheme): no type variable
 * link is left, each type is its representative and is marked `resolved` (types.h). The
 * checker's scratch state (Tarjan's numbering, which functions are checked) is its own and
 * freed before it returns. The Iterator restrictions are a separate pass (restrict.h).
 * Returns the number of errors.
 */
#ifndef OSP_FE_CHECK_H
#define OSP_FE_CHECK_H

#include "ast.h"

int check_program(Program *prog, Diags *d);

#endif
