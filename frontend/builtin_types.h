/*
 * builtin_types.h — record types the language declares itself (docs/spec/language.md §4):
 * `HttpResponse` (§9.7).
 */
#ifndef OSP_BUILTIN_TYPES_H
#define OSP_BUILTIN_TYPES_H

#include "ast.h"

/*
 * Append the built-in record declarations to prog->tdecls (after the program's own, marked
 * `builtin`, allocated in prog->arena), as if the program declared
 *   type HttpResponse = { status: int, headers: string, contentType: string,
 *                         streamFd: int, isComplete: bool, partialBody: string }
 * The field order is the runtime's layout (osp_http_response in runtime/core/osprey_rt.h).
 * A program that declares a type of the same name gets no built-in one (name resolution
 * reports the redeclaration). Call after parsing and before resolve_program.
 */
void builtin_types_add(Program *prog);

#endif
