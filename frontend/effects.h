/*
 * effects.h — the effect check (docs/spec/language.md §3.1 effect rows, §12.2): after type
 * inference, compute which effect operations may escape each function and function
 * value, then require every operation performed by the program to be handled before
 * program entry, and every function with a declared effect row to perform only effects
 * its row lists. Generic effects are keyed by their instantiation (`Stash<int>` and
 * `Stash<string>` differ); a type variable of a polymorphic function matches any
 * instantiation.
 *
 * Function values carry the effects of their body in their type (an EffSet merged when
 * two function types unify), so a lambda's effects count where it is called (by a user
 * function or a built-in that takes a callback), not where it is written. Returns the
 * number of errors.
 */
#ifndef OSP_FE_EFFECTS_H
#define OSP_FE_EFFECTS_H

#include "ast.h"

int effects_program(Program *prog, Diags *d);

#endif
