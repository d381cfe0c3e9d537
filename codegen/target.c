/* target.c — target machine, pass pipeline and emission (see codegen.h). */
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

static char *dup_msg(const char *prefix, const char *msg) {
    size_t n = strlen(prefix) + strlen(msg) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s", prefix, msg);
    return s;
}

LLVMTargetMachineRef osp_target_machine(int opt_level, char **err) {
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
        *err = dup_msg("cannot find the LLVM target: ", msg ? msg : "unknown");
        LLVMDisposeMessage(msg);
        LLVMDisposeMessage(triple);
        return NULL;
    }
    LLVMCodeGenOptLevel level = opt_level > 0 ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelNone;
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, "generic", "", level,
                                                      LLVMRelocPIC, LLVMCodeModelDefault);
    LLVMDisposeMessage(triple);
    if (!tm) *err = dup_msg("cannot create the LLVM target machine", "");
    return tm;
}

int osp_optimize(LLVMModuleRef m, LLVMTargetMachineRef tm, int opt_level, char **err) {
    LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
    /* Osprey iterates by recursion; at -O0 self-recursive tail calls must still become loops
     * or a --debug build overflows the stack where the -O2 build runs. simplifycfg first
     * merges the blocks a nested `if`/`match` leaves before `ret`, so tailcallelim sees a
     * call two levels down as a tail call too. */
    const char *pipeline =
        opt_level > 0 ? "default<O2>" : "default<O0>,function(simplifycfg,tailcallelim)";
    LLVMErrorRef e = LLVMRunPasses(m, pipeline, tm, o);
    LLVMDisposePassBuilderOptions(o);
    if (e) {
        char *msg = LLVMGetErrorMessage(e);
        *err = dup_msg("optimisation failed: ", msg);
        LLVMDisposeErrorMessage(msg);
        return -1;
    }
    return 0;
}

int osp_emit_object(LLVMModuleRef m, LLVMTargetMachineRef tm, const char *path, char **err) {
    char *msg = NULL;
    if (LLVMTargetMachineEmitToFile(tm, m, path, LLVMObjectFile, &msg)) {
        *err = dup_msg("cannot write the object file: ", msg ? msg : "unknown error");
        LLVMDisposeMessage(msg);
        return -1;
    }
    return 0;
}

char *osp_module_text(LLVMModuleRef m) {
    return LLVMPrintModuleToString(m);
}
