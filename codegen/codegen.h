/*
 * codegen.h — lowering a checked Osprey program to LLVM IR through the LLVM C API,
 * plus the target machine, the pass pipeline and object/IR emission.
 *
 * Requirements implemented (docs/spec/language.md §14.2, docs/spec/profiler.md §(c), §(i)):
 * - every generated function carries "frame-pointer"="all";
 * - user functions keep their source names (`fib`); generated functions are named
 *   `<enclosing>$lambda<k>`, `<enclosing>$spawn<k>`, `<enclosing>$<Effect>.<op><k>`
 *   (handler arms), `<enclosing>$handle<k>` (bodies run on effect-continuation
 *   threads) and `<name>$closure` (functions, built-ins and constructors used as
 *   values); later instances of a polymorphic function are `<name>$2`, `<name>$3`, …;
 * - DWARF line tables: one compile unit naming the absolute source path, one
 *   DISubprogram per function at its declaration line, and a debug location on
 *   every instruction the code generator emits;
 * - the C entry point `main` calls osp_rt_start first (which boots the profiler).
 */
#ifndef OSP_CODEGEN_H
#define OSP_CODEGEN_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdbool.h>

#include "frontend.h"

typedef struct osp_cg_options {
    int opt_level;   /* 0 (--debug) or 2 */
    bool full_debug; /* DWARF emission kind Full (--debug) instead of line tables only */
} osp_cg_options;

/*
 * Create a target machine for the host triple (generic CPU, PIC). Returns NULL and
 * sets *err (malloc'd, free with LLVMDisposeMessage) on failure. Dispose with
 * LLVMDisposeTargetMachine.
 */
LLVMTargetMachineRef osp_target_machine(int opt_level, char **err);

/*
 * Lower `prog` (which must have no errors) into a new module in `ctx`, with the
 * data layout and triple of `tm`. Verifies the module; on an internal error
 * returns NULL and sets *err (malloc'd with strdup; free()). The module is owned by
 * the caller (LLVMDisposeModule).
 */
LLVMModuleRef osp_codegen(LLVMContextRef ctx, const Program *prog, LLVMTargetMachineRef tm,
                          const osp_cg_options *opts, char **err);

/* Run the new pass manager pipeline "default<O<level>>". 0 on success; else -1, *err (strdup). */
int osp_optimize(LLVMModuleRef m, LLVMTargetMachineRef tm, int opt_level, char **err);

/* Write an object file to `path`. 0 on success; else -1 and *err (strdup). */
int osp_emit_object(LLVMModuleRef m, LLVMTargetMachineRef tm, const char *path, char **err);

/* Textual IR of the module (free with LLVMDisposeMessage). */
char *osp_module_text(LLVMModuleRef m);

#endif
