/*
 * test_unwind.c — the frame-pointer walk on planted frame chains (docs/spec/profiler.md §(c),
 * (k) item 10), and the per-architecture register extraction the handler starts from
 * (§(b.3)). The planted stack is one page between two PROT_NONE guard pages, and the
 * walker's bounds are exactly that page: a read outside [lo, hi) would crash the test
 * rather than go unnoticed.
 */
#define _GNU_SOURCE
#include "support.h"

#include "prof_session.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* Write a frame record {next, ret} at address fp. */
static void frame(uintptr_t fp, uintptr_t next, uintptr_t ret) {
    ((uintptr_t *)fp)[0] = next;
    ((uintptr_t *)fp)[1] = ret;
}

#define PC   0x400100u
#define R(i) (0x500000u + 0x10u * (i))

static size_t walk(const struct planted *p, uintptr_t fp, uintptr_t lr, uintptr_t *out,
                   bool *trunc) {
    return osp_prof__fp_walk(PC, fp, lr, p->lo, p->hi, out, OSP_PROF_MAX_FRAMES, trunc);
}

static void test_valid_chain(void **state) {
    (void)state;
    struct planted p;
    plant(&p, 1);
    uintptr_t f1 = p.lo + 0x100, f2 = p.lo + 0x200, f3 = p.lo + 0x380;
    frame(f1, f2, R(1));
    frame(f2, f3, R(2));
    frame(f3, 0, R(3)); /* next = 0 < fp: the walk ends after recording R(3) */
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool trunc = true;
    size_t n = walk(&p, f1, 0, out, &trunc);
    assert_int_equal(n, 4);
    assert_int_equal(out[0], PC);
    assert_int_equal(out[1], R(1));
    assert_int_equal(out[2], R(2));
    assert_int_equal(out[3], R(3));
    assert_false(trunc);
    unplant(&p);
}

static void test_frame_at_top_of_bounds(void **state) {
    (void)state;
    struct planted p;
    plant(&p, 1);
    /* The highest legal record occupies [hi - 16, hi); its next points at hi. */
    uintptr_t f1 = p.lo + 0x40, f2 = p.hi - 16;
    frame(f1, f2, R(1));
    frame(f2, p.hi, R(2));
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool trunc;
    size_t n = walk(&p, f1, 0, out, &trunc);
    assert_int_equal(n, 3); /* hi itself is out of bounds: the walk stops there */
    assert_int_equal(out[2], R(2));
    unplant(&p);
}

static void test_misaligned(void **state) {
    (void)state;
    struct planted p;
    plant(&p, 1);
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool trunc;
    /* Misaligned start: only pc. */
    frame(p.lo + 0x100, 0, R(1));
    assert_int_equal(walk(&p, p.lo + 0x104, 0, out, &trunc), 1);
    assert_int_equal(out[0], PC);
    /* Misaligned link in the middle: stops before following it. */
    uintptr_t f1 = p.lo + 0x100, f2 = p.lo + 0x201;
    frame(f1, f2, R(1));
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 2);
    assert_int_equal(out[1], R(1));
    unplant(&p);
}

static void test_out_of_bounds(void **state) {
    (void)state;
    struct planted p;
    plant(&p, 1);
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool trunc;
    /* Below lo (inside the guard page: reading it would fault). */
    assert_int_equal(walk(&p, p.lo - 64, 0, out, &trunc), 1);
    /* A record that would straddle hi. */
    assert_int_equal(walk(&p, p.hi - 8, 0, out, &trunc), 1);
    /* Beyond hi (guard page). */
    assert_int_equal(walk(&p, p.hi + 64, 0, out, &trunc), 1);
    /* A chain whose link leaves the bounds ends there without reading it. */
    uintptr_t f1 = p.lo + 0x100;
    frame(f1, p.hi + 0x100, R(1));
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 2);
    /* Null and wrap-around values. */
    assert_int_equal(walk(&p, 0, 0, out, &trunc), 1);
    assert_int_equal(walk(&p, UINTPTR_MAX - 7, 0, out, &trunc), 1);
    /* Unknown bounds (lo = hi = 0): pc only, never a read. */
    assert_int_equal(osp_prof__fp_walk(PC, f1, 0, 0, 0, out, OSP_PROF_MAX_FRAMES, &trunc), 1);
    /* Inverted or tiny bounds. */
    assert_int_equal(osp_prof__fp_walk(PC, f1, 0, p.hi, p.lo, out, OSP_PROF_MAX_FRAMES, &trunc), 1);
    assert_int_equal(
        osp_prof__fp_walk(PC, p.lo, 0, p.lo, p.lo + 8, out, OSP_PROF_MAX_FRAMES, &trunc), 1);
    unplant(&p);
}

static void test_non_increasing_and_self_loop(void **state) {
    (void)state;
    struct planted p;
    plant(&p, 1);
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool trunc;
    /* Going down: R(1) is recorded, then the walk stops. */
    uintptr_t f1 = p.lo + 0x200, f0 = p.lo + 0x100;
    frame(f1, f0, R(1));
    frame(f0, f1, R(2));
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 2);
    assert_int_equal(out[1], R(1));
    /* Self-loop. */
    frame(f1, f1, R(3));
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 2);
    assert_int_equal(out[1], R(3));
    assert_false(trunc);
    unplant(&p);
}

static void test_small_return_address_and_big_frame(void **state) {
    (void)state;
    struct planted p;
    plant(&p, 1);
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool trunc;
    /* A return address below 4096 is not code: not recorded, walk ends. */
    uintptr_t f1 = p.lo + 0x100, f2 = p.lo + 0x200;
    frame(f1, f2, R(1));
    frame(f2, p.lo + 0x300, 4095);
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 2);
#if defined(__x86_64__)
    /* Nor is a value beyond the user address space (a stack word read through a frame
     * without a frame record). */
    frame(f2, p.lo + 0x300, (uintptr_t)0x26f75f5c7f650b35ull);
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 2);
    frame(f2, p.lo + 0x300, ((uintptr_t)1 << 56) - 16);
    frame(p.lo + 0x300, 0, R(3));
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 4); /* 5-level paging user space */
#endif
    unplant(&p);

    /* Nor is an address inside the stack being walked (a stack word read as a return
     * address while a frame is neither a frame record nor described, e.g. inside
     * _Unwind_RaiseException): the walk ends before it. */
    plant(&p, 1);
    f1 = p.lo + 0x100;
    f2 = p.lo + 0x200;
    frame(f1, f2, R(1));
    frame(f2, p.lo + 0x300, p.lo + 0x280);
    frame(p.lo + 0x300, 0, R(3));
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 2);
    frame(f2, p.lo + 0x300, R(2)); /* the same chain with a code address goes on */
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 4);
    unplant(&p);

    /* A frame bigger than 1 MiB ends the walk (its return address is kept). */
    size_t pages = (2u << 20) / (size_t)getpagesize() + 2;
    plant(&p, pages);
    f1 = p.lo + 0x100;
    f2 = f1 + (1u << 20) + 16;
    frame(f1, f2, R(1));
    frame(f2, 0, R(2));
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 2);
    /* Exactly 1 MiB is still allowed. */
    f2 = f1 + (1u << 20);
    frame(f1, f2, R(1));
    frame(f2, 0, R(2));
    assert_int_equal(walk(&p, f1, 0, out, &trunc), 3);
    unplant(&p);
}

static void test_depth_cap(void **state) {
    (void)state;
    struct planted p;
    plant(&p, 1);
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool trunc;
    /* 200 chained frames: cut at 128 (pc + 127 return addresses) and marked. */
    for (int i = 0; i < 200; i++)
        frame(p.lo + 16u * (uintptr_t)i, p.lo + 16u * (uintptr_t)(i + 1), R(i));
    frame(p.lo + 16u * 200, 0, R(200));
    size_t n = walk(&p, p.lo, 0, out, &trunc);
    assert_int_equal(n, OSP_PROF_MAX_FRAMES);
    assert_true(trunc);
    assert_int_equal(out[127], R(126));
    /* Exactly 127 chained frames fill the 128 slots with nothing left: not truncated. */
    frame(p.lo + 16u * 126, 0, R(126));
    n = walk(&p, p.lo, 0, out, &trunc);
    assert_int_equal(n, OSP_PROF_MAX_FRAMES);
    assert_false(trunc);
    /* A chain that continues only into an invalid record is not truncated either. */
    frame(p.lo + 16u * 126, p.lo + 16u * 127 + 4, R(126));
    n = walk(&p, p.lo, 0, out, &trunc);
    assert_int_equal(n, OSP_PROF_MAX_FRAMES);
    assert_false(trunc);
    unplant(&p);
}

static void test_link_register(void **state) {
    (void)state;
    struct planted p;
    plant(&p, 1);
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool trunc;
    uintptr_t f1 = p.lo + 0x100;
    frame(f1, 0, R(1));
    /* lr differs from the first chained return address: inserted as frame 1. */
    assert_int_equal(walk(&p, f1, 0x600000, out, &trunc), 3);
    assert_int_equal(out[1], 0x600000);
    assert_int_equal(out[2], R(1));
    /* lr equal to it: deduplicated. */
    assert_int_equal(walk(&p, f1, R(1), out, &trunc), 2);
    /* lr equal to pc, or not code: ignored. */
    assert_int_equal(walk(&p, f1, PC, out, &trunc), 2);
    assert_int_equal(walk(&p, f1, 12, out, &trunc), 2);
    /* No usable chain: pc and lr. */
    assert_int_equal(osp_prof__fp_walk(PC, 0, 0x600000, 0, 0, out, OSP_PROF_MAX_FRAMES, &trunc), 2);
    assert_int_equal(out[1], 0x600000);
    unplant(&p);
}

/* A real chain: this code is built with frame pointers, so walking from here must name
 * our callers. */
__attribute__((noinline)) size_t walk_here(uintptr_t *out, bool *trunc) {
    pthread_attr_t a;
    void *addr;
    size_t size;
    assert_int_equal(pthread_getattr_np(pthread_self(), &a), 0);
    assert_int_equal(pthread_attr_getstack(&a, &addr, &size), 0);
    pthread_attr_destroy(&a);
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    return osp_prof__fp_walk((uintptr_t)&walk_here, fp, 0, fp, (uintptr_t)addr + size, out,
                             OSP_PROF_MAX_FRAMES, trunc);
}

__attribute__((noinline)) void real_chain_caller(void) {
    uintptr_t out[OSP_PROF_MAX_FRAMES];
    bool trunc;
    size_t n = walk_here(out, &trunc);
    assert_true(n >= 3);
    assert_string_equal(sym_name(out[0], false), "walk_here");
    assert_string_equal(sym_name(out[1], true), "real_chain_caller");
    assert_string_equal(sym_name(out[2], true), "test_real_chain");
    __asm__ volatile("" ::: "memory"); /* keep this frame (no tail call) */
}

void test_real_chain(void **state) {
    (void)state;
    real_chain_caller();
    __asm__ volatile("" ::: "memory");
}

/* The per-architecture register extraction (prof_arch_<arch>.c) reads pc, fp, sp, lr and
 * the system-call return register from the slots the kernel fills in a ucontext_t. Each
 * register gets a distinct value, so a swapped or wrong slot is seen. */
static void test_ucontext_regs(void **state) {
    (void)state;
    ucontext_t uc;
    memset(&uc, 0, sizeof uc);
    uintptr_t want_pc = 0x401234, want_fp = 0x7ffd1000, want_sp = 0x7ffd0f00;
    long want_ret = -4; /* -EINTR */
#if defined(__x86_64__)
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)want_pc;
    uc.uc_mcontext.gregs[REG_RBP] = (greg_t)want_fp;
    uc.uc_mcontext.gregs[REG_RSP] = (greg_t)want_sp;
    uc.uc_mcontext.gregs[REG_RAX] = (greg_t)want_ret;
    uc.uc_mcontext.gregs[REG_RBX] = 0x5555; /* not one of ours */
    uintptr_t want_lr = 0;
#elif defined(__aarch64__)
    uintptr_t want_lr = 0x402000;
    uc.uc_mcontext.pc = want_pc;
    uc.uc_mcontext.regs[29] = want_fp;
    uc.uc_mcontext.sp = want_sp;
    uc.uc_mcontext.regs[30] = want_lr;
    uc.uc_mcontext.regs[0] = (unsigned long long)want_ret;
    uc.uc_mcontext.regs[1] = 0x5555; /* not one of ours */
#endif
    struct osp_prof_regs r;
    memset(&r, 0xA5, sizeof r);
    osp_prof__ucontext_regs(&uc, &r);
    assert_int_equal(r.pc, want_pc);
    assert_int_equal(r.fp, want_fp);
    assert_int_equal(r.sp, want_sp);
    assert_int_equal(r.lr, want_lr);
    assert_int_equal(r.ret, want_ret);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_chain),
        cmocka_unit_test(test_frame_at_top_of_bounds),
        cmocka_unit_test(test_misaligned),
        cmocka_unit_test(test_out_of_bounds),
        cmocka_unit_test(test_non_increasing_and_self_loop),
        cmocka_unit_test(test_small_return_address_and_big_frame),
        cmocka_unit_test(test_depth_cap),
        cmocka_unit_test(test_link_register),
        cmocka_unit_test(test_ucontext_regs),
        cmocka_unit_test(test_real_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
