/*
 * builtin_types.h — record types the language declares itself (docs/spec/language.md §4):
 * `HttpResponse` (§9.7).
 */
#ifndef OSP_BUILTIN_TYPES_H
#define OSP_BUILTIN_TYPES_H

#include "ast.h"

/*
 * Put the built-in record declarations first in prog->tdecls (marked `builtin`, allocated
 * in prog->arena), as if the program declared
 *   type HttpResponse = { status: int, headers: string, contentType: string,
 *                         streamFd: int, isComplete: bool, partialBody: string }
 * The field order is the runtime's layout (osp_http_response in runtime/core/osprey_rt.h).
 * Being first, they are what the name means even in a program that also declares it (name
 * resolution reports that redeclaration). Call after parsing and before resolve_program.
 */
void builtin_types_add(Program *prog);

#endif
