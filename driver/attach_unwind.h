/*
 * attach_unwind.h — walking another process's stack through a memory-read callback
 * (docs/spec/profiler.md §(c), §(l.9)). The walker never touches memory itself: `read`
 * copies bytes out of the target (process_vm_readv for --attach, a buffer in tests), so the
 * same walker serves any source of memory. `step` is the plug for call-frame information
 * (§(l.1)): when set, it is asked first for every frame and may recover the caller's
 * registers from CFI; frames it declines are walked by frame pointers.
 */
#ifndef OSPREY_ATTACH_UNWIND_H
#define OSPREY_ATTACH_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The registers an unwind step needs. `lr` is the link register (arm64; 0 on x86-64). */
typedef struct osp_unwind_regs {
    uint64_t pc, sp, fp, lr;
} osp_unwind_regs;

/* Copy `len` bytes at target address `addr` into `buf`. 0 on success, -1 if any byte is
 * unreadable. */
typedef int (*osp_unwind_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Recover the caller's registers of the frame described by *regs (regs->pc is the frame's
 * PC: precise for frame 0, a return address otherwise). Returns 1 with *regs updated to the
 * caller (its pc the return address), 0 to let the frame-pointer rule handle this frame, -1
 * to end the walk. */
typedef int (*osp_unwind_step_fn)(void *ctx, osp_unwind_regs *regs, bool is_leaf);

typedef struct osp_unwinder {
    osp_unwind_read_fn read; /* required */
    void *read_ctx;
    osp_unwind_step_fn step; /* NULL: frame pointers only */
    void *step_ctx;
} osp_unwinder;

/*
 * Walk from `regs` into frames[0..max): frames[0] is regs->pc, every later entry a return
 * address, leaf first. Frame-pointer rule (x86-64 and arm64 frame records alike): the caller's
 * frame pointer is at [fp] and the return address at [fp + 8]. Returns the number of frames;
 * *truncated (may be NULL) says the walk stopped at `max` with frames left. Stops (each
 * commented in the code) at a zero, misaligned or non-increasing frame pointer, a frame
 * pointer below the stack pointer, an unreadable record, a zero return address, or `max`.
 */
size_t osp_unwind_walk(const osp_unwinder *u, const osp_unwind_regs *regs, uint64_t *frames,
                       size_t max, bool *truncated);

#endif
