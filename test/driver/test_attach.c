/* test_attach.c — the --attach sampler (driver/attach.h) and its frame-pointer walker
 * (driver/attach_unwind.h), docs/spec/profiler.md §(c), §(e), §(l.9). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "attach.h"
#include "attach_unwind.h"
#include "ospprof.h"
#include "prof_cfi.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the walker over a fake stack ---------------------------------------------------- */

enum { FAKE_BASE = 0x10000, FAKE_WORDS = 64 };

typedef struct fake_stack {
    uint64_t w[FAKE_WORDS]; /* w[i] is at FAKE_BASE + 8 i */
    int reads;
} fake_stack;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len) {
    fake_stack *s = ctx;
    s->reads++;
    if (addr < FAKE_BASE || addr + len > FAKE_BASE + sizeof s->w) return -1;
    memcpy(buf, (const char *)s->w + (addr - FAKE_BASE), len);
    return 0;
}

/* A record at word i: caller fp, return address. */
static uint64_t rec(fake_stack *s, int i, uint64_t next_fp, uint64_t ret) {
    s->w[i] = next_fp;
    s->w[i + 1] = ret;
    return FAKE_BASE + 8u * (uint64_t)i;
}

static void walk_follows_the_chain_to_its_end(void **state) {
    (void)state;
    fake_stack s = {0};
    uint64_t f3 = rec(&s, 20, 0, 0x4003); /* outermost: caller fp 0 */
    uint64_t f2 = rec(&s, 12, f3, 0x4002);
    uint64_t f1 = rec(&s, 4, f2, 0x4001);
    osp_unwinder u = {.read = fake_read, .read_ctx = &s};
    osp_remote_regs r = {.pc = 0x4000, .sp = FAKE_BASE, .fp = f1};
    uint64_t out[16];
    bool trunc = true;
    size_t n = osp_unwind_walk(&u, &r, out, 16, &trunc);
    assert_int_equal(n, 4);
    assert_int_equal(out[0], 0x4000); /* the exact PC first */
    assert_int_equal(out[1], 0x4001);
    assert_int_equal(out[2], 0x4002);
    assert_int_equal(out[3], 0x4003);
    assert_false(trunc);
}

static void walk_stops_at_bad_records(void **state) {
    (void)state;
    fake_stack s = {0};
    osp_unwinder u = {.read = fake_read, .read_ctx = &s};
    uint64_t out[16];
    /* a frame pointer that does not move toward the stack base: two frames, then stop */
    uint64_t f1 = rec(&s, 8, FAKE_BASE + 8 * 2, 0x5001);
    osp_remote_regs r = {.pc = 0x5000, .sp = FAKE_BASE, .fp = f1};
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, NULL), 2);
    /* misaligned fp: only the PC */
    r.fp = FAKE_BASE + 3;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, NULL), 1);
    /* fp below sp: only the PC */
    r.fp = FAKE_BASE;
    r.sp = FAKE_BASE + 64;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, NULL), 1);
    /* unreadable record */
    r.sp = 0;
    r.fp = 0x900000;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, NULL), 1);
    /* zero return address ends the chain */
    uint64_t z = rec(&s, 30, 0, 0);
    r.fp = z;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, NULL), 1);
}

static void walk_truncates_at_max(void **state) {
    (void)state;
    fake_stack s = {0};
    /* records every 2 words, 20 of them */
    uint64_t next = 0;
    for (int i = 40; i >= 2; i -= 2) next = rec(&s, i, next, 0x6000 + (uint64_t)i);
    osp_unwinder u = {.read = fake_read, .read_ctx = &s};
    osp_remote_regs r = {.pc = 0x6000, .sp = FAKE_BASE, .fp = next};
    uint64_t out[5];
    bool trunc = false;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 5, &trunc), 5);
    assert_true(trunc);
    uint64_t big[64];
    assert_int_equal(osp_unwind_walk(&u, &r, big, 64, &trunc), 21);
    assert_false(trunc);
}

/* A CFI step that recovers frame 0's caller itself, then declines. */
static int step_once(void *ctx, osp_remote_regs *regs) {
    int *calls = ctx;
    (*calls)++;
    if (!regs->precise) return OSP_STEP_FP;
    regs->pc = 0x7777;
    regs->precise = false;
    return OSP_STEP_CALLER; /* fp unchanged: the chain continues from the same record */
}

static void walk_asks_the_cfi_step_first(void **state) {
    (void)state;
    fake_stack s = {0};
    uint64_t f1 = rec(&s, 4, 0, 0x4001);
    int calls = 0;
    osp_unwinder u = {.read = fake_read, .read_ctx = &s, .step = step_once, .step_ctx = &calls};
    osp_remote_regs r = {.pc = 0x4000, .sp = FAKE_BASE, .fp = f1};
    uint64_t out[8];
    size_t n = osp_unwind_walk(&u, &r, out, 8, NULL);
    assert_int_equal(n, 3);
    assert_int_equal(out[1], 0x7777); /* from the step */
    assert_int_equal(out[2], 0x4001); /* then frame pointers */
    assert_true(calls >= 2);
}

/* A CFI step that gives frame 0 the caller pc `st->pc`, precise (a signal frame's
 * interrupted pc) when `st->precise`. */
typedef struct stack_step {
    uint64_t pc;
    bool precise;
} stack_step;

static int step_to(void *ctx, osp_remote_regs *regs) {
    const stack_step *st = ctx;
    if (!regs->precise) return OSP_STEP_FP;
    regs->pc = st->pc;
    regs->sp += 64;
    regs->precise = st->precise;
    return OSP_STEP_CALLER;
}

/* A return address inside the stack being walked is a stack word, not a frame: the walk
 * ends there (the runtime's walker, prof_unwind.c code_addr_in); the stack is the one the
 * caller names (--attach: the mapping that holds the thread's sp). */
static void walk_rejects_return_addresses_into_the_stack(void **state) {
    (void)state;
    fake_stack s = {0};
    uint64_t in_stack = FAKE_BASE + 8 * 50;
    uint64_t f2 = rec(&s, 12, 0, 0x4002);
    uint64_t f1 = rec(&s, 4, f2, in_stack); /* a stack word where the return address goes */
    osp_unwinder u = {.read = fake_read, .read_ctx = &s};
    osp_remote_regs r = {.pc = 0x4000, .sp = FAKE_BASE, .fp = f1};
    uint64_t out[16];
    bool trunc = true;
    /* the stack unknown: the word is taken for a frame, as before */
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, &trunc), 3);
    assert_int_equal(out[1], in_stack);
    /* the stack known: the chain ends at it, which is not a truncation */
    u.stack_lo = FAKE_BASE;
    u.stack_hi = FAKE_BASE + sizeof s.w;
    trunc = true;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, &trunc), 1);
    assert_int_equal(out[0], 0x4000);
    assert_false(trunc);
    /* its ends: the word just past the stack is code as far as the walk knows, the first
     * word of the stack is not */
    s.w[5] = FAKE_BASE + sizeof s.w;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, &trunc), 3);
    s.w[5] = FAKE_BASE;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, &trunc), 1);
    /* a return address in the first page is not code either */
    s.w[5] = 0x800;
    u.stack_lo = u.stack_hi = 0;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, &trunc), 1);
    u.stack_lo = FAKE_BASE;
    u.stack_hi = FAKE_BASE + sizeof s.w;
    /* a CFI step's caller in the stack ends the walk; a signal frame's interrupted pc
     * there loses the frames below the handler: truncated */
    stack_step st = {in_stack, false};
    u.step = step_to;
    u.step_ctx = &st;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, &trunc), 1);
    assert_false(trunc);
    st.precise = true;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 16, &trunc), 1);
    assert_true(trunc);
    /* at the cap: a next "frame" in the stack is no frame, so nothing was cut */
    s.w[5] = 0x4001;
    rec(&s, 12, 0, in_stack);
    u.step = NULL;
    assert_int_equal(osp_unwind_walk(&u, &r, out, 2, &trunc), 2);
    assert_false(trunc);
    rec(&s, 12, 0, 0x4002);
    assert_int_equal(osp_unwind_walk(&u, &r, out, 2, &trunc), 2);
    assert_true(trunc);
}

#if defined(__x86_64__)
/* CFI rows over [0x1000, 0x3000): [0x1000, 0x2000) CFA = rsp + 16 (a function without a
 * frame pointer), [0x2000, 0x3000) the frame-pointer rule. */
static struct osp_cfi_row g_rows[3];
static struct osp_cfi_table g_table = {.lo = 0x1000, .hi = 0x3000, .rows = g_rows, .nrows = 3};

static void set_rows(uint8_t kind0, int32_t cfa_off0) {
    memset(g_rows, 0, sizeof g_rows);
    g_rows[0] = (struct osp_cfi_row){
        .pc_off = 0, .cfa_off = cfa_off0, .ra_off = -8, .kind = kind0, .cfa_reg = OSP_CFI_REG_SP};
    g_rows[1] = (struct osp_cfi_row){.pc_off = 0x1000,
                                     .cfa_off = 16,
                                     .ra_off = -8,
                                     .fp_off = -16,
                                     .kind = OSP_CFI_STEP,
                                     .cfa_reg = OSP_CFI_REG_FP,
                                     .fp_rule = OSP_CFI_FP_OFFSET};
    g_rows[2] = (struct osp_cfi_row){.pc_off = 0x2000, .kind = OSP_CFI_GAP};
}

static void walk_steps_with_cfi_rows(void **state) {
    (void)state;
    fake_stack s = {0};
    s.w[1] = 0x2100;                    /* frame 0's return address at CFA - 8 = sp + 8 */
    uint64_t f = rec(&s, 4, 0, 0x5000); /* the caller (frame-pointer rule): its record */
    const struct osp_cfi_table *tables[] = {&g_table};
    osp_unwind_cfi cfi = {.tables = tables, .ntables = 1, .read = fake_read, .read_ctx = &s};
    osp_unwinder u = {
        .read = fake_read, .read_ctx = &s, .step = osp_unwind_cfi_step, .step_ctx = &cfi};
    /* fp holds a value that is no frame record (code without frame pointers): CFI steps */
    osp_remote_regs r = {.pc = 0x1100, .sp = FAKE_BASE, .fp = f};
    uint64_t out[8];
    bool trunc = true;
    set_rows(OSP_CFI_STEP, 16);
    size_t n = osp_unwind_walk(&u, &r, out, 8, &trunc);
    assert_int_equal(n, 3);
    assert_int_equal(out[1], 0x2100); /* by CFI */
    assert_int_equal(out[2], 0x5000); /* by the frame chain, fp unchanged by frame 0 */
    assert_false(trunc);
    /* a rule the table cannot express: the walk ends there, the stack is truncated */
    set_rows(OSP_CFI_NONE, 16);
    assert_int_equal(osp_unwind_walk(&u, &r, out, 8, &trunc), 1);
    assert_true(trunc);
    /* the outermost frame: complete */
    set_rows(OSP_CFI_ROOT, 16);
    assert_int_equal(osp_unwind_walk(&u, &r, out, 8, &trunc), 1);
    assert_false(trunc);
    /* a CFA that does not move up, or one outside readable memory: truncated, no fault */
    set_rows(OSP_CFI_STEP, 0);
    assert_int_equal(osp_unwind_walk(&u, &r, out, 8, &trunc), 1);
    assert_true(trunc);
    set_rows(OSP_CFI_STEP, 1 << 20);
    assert_int_equal(osp_unwind_walk(&u, &r, out, 8, &trunc), 1);
    assert_true(trunc);
    /* a return address (not precise): looked up at pc - 1, so 0x1000 is the end of the
     * previous range (none here: the frame chain) */
    set_rows(OSP_CFI_STEP, 16);
    osp_remote_regs caller = {.pc = 0x1000, .sp = FAKE_BASE, .fp = f, .precise = false};
    assert_int_equal(osp_unwind_cfi_step(&cfi, &caller), OSP_STEP_FP);
    caller.precise = true;
    assert_int_equal(osp_unwind_cfi_step(&cfi, &caller), OSP_STEP_CALLER);
    assert_int_equal(caller.pc, 0x2100);
    assert_int_equal(caller.sp, FAKE_BASE + 16);
}
#endif

/* ---- attaching to a child ----------------------------------------------------------------- */

static volatile unsigned long sink;

__attribute__((noinline)) static void child_spin(double secs) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 100000; i++) sink += (unsigned long)i * 3;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

static pid_t spawn_spinner(double secs, int status) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_spin(secs);
        _exit(status);
    }
    return pid;
}

static long tracer_of(pid_t pid, char *state) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *s = strstr(buf, "\nState:");
    if (s && state) *state = s[8];
    char *t = strstr(buf, "\nTracerPid:");
    return t ? strtol(t + 11, NULL, 10) : -1;
}

static void attach_samples_and_writes_a_valid_raw_profile(void **state) {
    (void)state;
    pid_t child = spawn_spinner(20, 0);
    char err[512];
    osp_attach *a = osp_attach_open(child, err, sizeof err);
    assert_non_null(a);
    assert_int_equal(osp_attach_pid(a), child);
    assert_true(osp_attach_exe(a)[0] == '/');
    /* a second tracer is refused, naming the first */
    osp_attach *b = osp_attach_open(child, err, sizeof err);
    assert_null(b);
    assert_non_null(strstr(err, "already traced"));
    osp_attach_options o = {.rate_hz = 200, .duration_ns = 300 * 1000 * 1000};
    assert_int_equal(osp_attach_capture(a, &o), OSP_ATTACH_END_DURATION);
    osp_attach_stats st;
    osp_attach_get_stats(a, &st);
    assert_true(st.ticks > 0);
    assert_true(st.samples > 0);
    assert_int_equal(st.threads_seen, 1);
    /* detached and running */
    char s = '?';
    assert_int_equal(tracer_of(child, &s), 0);
    assert_true(s == 'R' || s == 'S');
    char path[] = "/tmp/osprey-attach-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(osp_attach_write_raw(a, path, err, sizeof err), 0);
    ospprof_raw *raw = ospprof_raw_load(path, err, sizeof err);
    if (!raw) fail_msg("%s", err);
    ospprof_raw_free(raw);
    FILE *f = fopen(path, "r");
    char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    assert_non_null(strstr(text, "\"engine\":\"attach\""));
    assert_non_null(strstr(text, "\"label\":\"main\""));
    assert_non_null(strstr(text, "\"platform\":\"linux-"));
    unlink(path);
    osp_attach_close(a);
    kill(child, SIGKILL);
    int ws;
    assert_int_equal(waitpid(child, &ws, 0), child);
    assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL); /* ours, not the sampler's */
}

static int stop_now(void) {
    return 1;
}

static void attach_stops_on_request_and_on_exit(void **state) {
    (void)state;
    char err[512];
    pid_t child = spawn_spinner(20, 0);
    osp_attach *a = osp_attach_open(child, err, sizeof err);
    assert_non_null(a);
    osp_attach_options o = {.rate_hz = 100, .stop_requested = stop_now};
    assert_int_equal(osp_attach_capture(a, &o), OSP_ATTACH_END_REQUESTED);
    assert_int_equal(tracer_of(child, NULL), 0);
    osp_attach_close(a);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);

    /* a process that exits on its own ends the capture (exit status untouched) */
    child = spawn_spinner(0.3, 7);
    a = osp_attach_open(child, err, sizeof err);
    assert_non_null(a);
    osp_attach_options o2 = {.rate_hz = 100};
    assert_int_equal(osp_attach_capture(a, &o2), OSP_ATTACH_END_EXITED);
    osp_attach_close(a);
}

static void attach_refusals(void **state) {
    (void)state;
    char err[512];
    assert_null(osp_attach_open(INT_MAX, err, sizeof err));
    assert_string_equal(err, "--attach 2147483647: no such process (check the id with 'ps'; it "
                             "may have exited)");
    assert_null(osp_attach_open(getpid(), err, sizeof err));
    assert_non_null(strstr(err, "this osprey process itself"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(walk_follows_the_chain_to_its_end),
        cmocka_unit_test(walk_stops_at_bad_records),
        cmocka_unit_test(walk_truncates_at_max),
        cmocka_unit_test(walk_asks_the_cfi_step_first),
        cmocka_unit_test(walk_rejects_return_addresses_into_the_stack),
#if defined(__x86_64__)
        cmocka_unit_test(walk_steps_with_cfi_rows),
#endif
        cmocka_unit_test(attach_samples_and_writes_a_valid_raw_profile),
        cmocka_unit_test(attach_stops_on_request_and_on_exit),
        cmocka_unit_test(attach_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
