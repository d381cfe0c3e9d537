/*
 * attach_unwind.h — walking another process's stack through a memory-read callback
 * (docs/spec/profiler.md §(c), §(l.1), §(l.9)). The walker never touches memory itself:
 * `read` copies bytes out of the target (process_vm_readv for --attach, a buffer in tests),
 * so the same walker serves any source of memory. `step` is the plug for call-frame
 * information (§(l.1)): when set, it is asked first for every frame and may recover the
 * caller's registers from CFI; frames it declines are walked by frame pointers.
 * osp_unwind_cfi_step is that plug over the runtime's CFI tables (runtime/prof/prof_cfi.h,
 * built from the target's images by driver/attach.c).
 */
#ifndef OSPREY_ATTACH_UNWIND_H
#define OSPREY_ATTACH_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct osp_cfi_table;

/* The registers an unwind step needs. `lr` is the link register (arm64; 0 on x86-64).
 * `precise`: pc is the instruction the thread was stopped at (frame 0, or a frame a signal
 * interrupted), not a return address; a return address is looked up at pc − 1 (the call). */
typedef struct osp_remote_regs {
    uint64_t pc, sp, fp, lr;
    bool precise;
} osp_remote_regs;

/* Copy `len` bytes at target address `addr` into `buf`. 0 on success, -1 if any byte is
 * unreadable. */
typedef int (*osp_unwind_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* What a step did with a frame. */
enum osp_unwind_step_result {
    OSP_STEP_CALLER = 1, /* *regs now describes the caller (its pc a return address) */
    OSP_STEP_FP = 0,     /* declined: the frame-pointer rule handles this frame */
    OSP_STEP_ROOT = -1,  /* the outermost frame (CFI marks the return address undefined) */
    OSP_STEP_FAIL = -2,  /* cannot unwind further (no rule, a rule pointing at unreadable or
                          * non-increasing stack): the walk ends and the stack is truncated */
};

/* Recover the caller's registers of the frame described by *regs. Returns an
 * enum osp_unwind_step_result; *regs is changed only with OSP_STEP_CALLER. */
typedef int (*osp_unwind_step_fn)(void *ctx, osp_remote_regs *regs);

typedef struct osp_unwinder {
    osp_unwind_read_fn read; /* required */
    void *read_ctx;
    osp_unwind_step_fn step; /* NULL: frame pointers only */
    void *step_ctx;
    /* The stack being walked, [stack_lo, stack_hi) (--attach: the mapping that holds the
     * thread's sp); both 0 when unknown. A return address inside it is a stack word taken
     * for one (code that neither its chain nor its CFI describes at that instant), not a
     * frame: the walk ends there, as the runtime's walker does (prof_unwind.c
     * code_addr_in). */
    uint64_t stack_lo, stack_hi;
} osp_unwinder;

/*
 * Walk from `regs` into frames[0..max): frames[0] is regs->pc, every later entry a return
 * address, leaf first. Frame-pointer rule (x86-64 and arm64 frame records alike): the caller's
 * frame pointer is at [fp] and the return address at [fp + 8]. Returns the number of frames.
 * *truncated (may be NULL) says the root end is missing: the walk stopped at `max` with frames
 * left, or a step returned OSP_STEP_FAIL. The frame-pointer rule stops (each commented in the
 * code) at a zero, misaligned or non-increasing frame pointer, a frame pointer below the stack
 * pointer, an unreadable record, a return address below 4096 or inside [stack_lo, stack_hi):
 * the chain's end, not a truncation (a signal frame whose interrupted pc is inside the stack
 * is a truncation: the frames below the handler are lost).
 * Every step moves sp strictly up, so the walk always ends.
 */
size_t osp_unwind_walk(const osp_unwinder *u, const osp_remote_regs *regs, uint64_t *frames,
                       size_t max, bool *truncated);

/* The CFI tables of a target's images, for osp_unwind_cfi_step. `tables` are sorted by
 * their `lo` and do not overlap; they and `read` are the caller's. */
typedef struct osp_unwind_cfi {
    const struct osp_cfi_table *const *tables;
    size_t ntables;
    osp_unwind_read_fn read; /* the same reader as the walk's */
    void *read_ctx;
    size_t last; /* index of the last table that matched (a lookup hint), any value is safe */
} osp_unwind_cfi;

/*
 * osp_unwind_step_fn over CFI tables (`ctx` is an osp_unwind_cfi), x86-64: the row covering
 * the frame's lookup address decides. A range whose rule is the frame-pointer rule
 * (CFA = rbp + 16), a range no FDE covers, or an address outside every table: OSP_STEP_FP.
 * An FDE marking the return address undefined (_start, clone3): OSP_STEP_ROOT. A rule the
 * table cannot express, a CFA that does not move up, an unreadable slot: OSP_STEP_FAIL.
 * Otherwise CFA = rsp or rbp + offset (PLT stubs: their standard expression), the return
 * address and rbp read from their slots. A signal trampoline (CIE augmentation "S", the code
 * bytes checked to be rt_sigreturn) continues from the ucontext the kernel saved on the
 * stack, with a precise pc. On other architectures it always returns OSP_STEP_FP (frame
 * records are kept there). Reads memory only through `read`; never faults on any table or
 * memory contents.
 */
int osp_unwind_cfi_step(void *ctx, osp_remote_regs *regs);

#endif
