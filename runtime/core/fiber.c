/*
 * Fibers, the shared handle-id table, yield and sleep (docs/spec/language.md §11.1, §11.2, §14.5;
 * docs/spec/profiler.md §(d) registration sites and blocking regions, §(b.3) "No early returns").
 *
 * A fiber is one detached OS thread created through the collector (GC_pthread_create),
 * so its stack is scanned and it may allocate. Its record lives on the Osprey heap and
 * stays reachable from the handle table for the life of the process: ids are never
 * reused and awaiting a fiber again returns the same value. Nobody joins fiber threads;
 * a fiber that is never awaited simply ends (no zombie thread) or is discarded at exit.
 */
#include "rt_internal.h"
#include "osp_prof.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* ---- handle table --------------------------------------------------------------------- */

/*
 * Two levels: a directory of chunk pointers, each chunk holding OSP_HANDLE_CHUNK entries
 * indexed by id. Both levels are uncollectable collector memory, so they are scanned
 * as roots and keep the registered objects alive. Guarded by one mutex: lookups happen
 * on await / fiberDone / channel operations, never in a hot loop of generated code.
 */
#define OSP_HANDLE_CHUNK 1024

typedef struct {
    void *object;
    int64_t kind;
} handle_entry;

static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static handle_entry **handle_dir;
static size_t handle_dir_len;
static int64_t handle_next = 1;

int64_t osp_handle_register(int kind, void *object) {
    osp_rt_heap_init();
    pthread_mutex_lock(&handle_lock);
    int64_t id = handle_next;
    size_t chunk = (size_t)id / OSP_HANDLE_CHUNK;
    if (chunk >= handle_dir_len) {
        size_t len = handle_dir_len ? handle_dir_len * 2 : 16;
        while (len <= chunk) len *= 2;
        handle_entry **dir = GC_MALLOC_UNCOLLECTABLE(len * sizeof *dir);
        if (dir == NULL) osp_fatal_oom();
        if (handle_dir_len) memcpy(dir, handle_dir, handle_dir_len * sizeof *dir);
        if (handle_dir) GC_FREE(handle_dir);
        handle_dir = dir;
        handle_dir_len = len;
    }
    if (handle_dir[chunk] == NULL) {
        handle_dir[chunk] = GC_MALLOC_UNCOLLECTABLE(OSP_HANDLE_CHUNK * sizeof(handle_entry));
        if (handle_dir[chunk] == NULL) osp_fatal_oom();
    }
    handle_dir[chunk][(size_t)id % OSP_HANDLE_CHUNK] = (handle_entry){object, kind};
    handle_next = id + 1;
    pthread_mutex_unlock(&handle_lock);
    return id;
}

void *osp_handle_lookup(int64_t id, int kind) {
    void *object = NULL;
    pthread_mutex_lock(&handle_lock);
    if (id >= 1 && id < handle_next) {
        handle_entry e = handle_dir[(size_t)id / OSP_HANDLE_CHUNK][(size_t)id % OSP_HANDLE_CHUNK];
        if (e.kind == kind) object = e.object;
    }
    pthread_mutex_unlock(&handle_lock);
    return object;
}

/* ---- fibers ------------------------------------------------------------------------------ */

typedef struct osp_fiber {
    osp_thunk_fn thunk;
    void *env;                 /* owned by the fiber; cleared once the thunk has it */
    osp_eff_entry *handlers;   /* copy of the spawner's effect-handler stack (osp_eff_copy) */
    osp_heap_cache heap_cache; /* the fiber thread's small-object free lists (start.c) */
    osp_word result;
    int64_t id;
    atomic_int done; /* 1 once `result` is published */
    bool abandoned;  /* a resuming effect handler abandoned its computation */
    bool queued;     /* deterministic mode: spawned but not started (on run_queue) */
    struct osp_fiber *next_queued;
} osp_fiber;

/*
 * Deterministic mode (docs/spec/language.md §11.4): spawn appends to run_queue instead of
 * starting a thread; await runs queued fibers, in spawn order, on the awaiting thread. The
 * queue is guarded by queue_lock; a fiber is taken off the queue before it runs, so it runs
 * exactly once even when several threads await.
 */
static atomic_bool det_mode;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static osp_fiber *queue_head, *queue_tail;

int64_t fiber_set_deterministic_mode(bool enabled) {
    atomic_store(&det_mode, enabled);
    return 0;
}

/*
 * Completion is signalled on one of a few striped (mutex, condition) pairs chosen by
 * id, rather than one pair per fiber: records stay small (a program may spawn millions
 * of fibers over its life and every record is kept), and waiters on other fibers of the
 * same stripe just re-check their own flag.
 */
#define OSP_FIBER_STRIPES 64
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
} stripes[OSP_FIBER_STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;

static void stripes_init(void) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int i = 0; i < OSP_FIBER_STRIPES; i++) {
        pthread_mutex_init(&stripes[i].lock, NULL);
        pthread_cond_init(&stripes[i].cond, &ca);
    }
    pthread_condattr_destroy(&ca);
}

static _Thread_local int64_t current_fiber_id;

int64_t osp_fiber_current_id(void) {
    return current_fiber_id;
}

/* Thread entry of every fiber (docs/spec/profiler.md §(d): register before the body, unregister
 * after it and before completion is signalled).
 *
 * While the body runs, this frame's return-address slot holds 0, which ends every
 * frame-pointer walk here (docs/spec/profiler.md §(c): a return address below 4096 is not
 * recorded): fiber stacks end at osp_fiber_entry instead of continuing into the
 * collector's start routine, which has no frame pointer or symbol and showed as a hex
 * frame. Debuggers see the same outermost frame. The slot is restored before returning. */
static void *osp_fiber_entry(void *arg) {
#if defined(__x86_64__) || defined(__aarch64__)
    void *volatile *ret_slot = (void *volatile *)__builtin_frame_address(0) + 1;
    void *ret = *ret_slot;
    *ret_slot = NULL;
#endif
    osp_fiber *const f = arg;
    osp_crash_thread_begin();              /* alternate signal stack, stack guard bounds */
    osp_heap_thread_begin(&f->heap_cache); /* small-object free lists, scanned: in f */
    current_fiber_id = f->id;
    /* The spawner's handler stack, in a variable of this frame so the collector sees it
     * for the thread's whole life (docs/spec/language.md §12.2: a fiber inherits the handlers). */
    osp_eff_entry *volatile handlers = f->handlers;
    osp_eff_bind_slot((osp_eff_entry **)&handlers);
    osp_prof_thread_register(f->id, "fiber");
    void *env = f->env;
    f->env = NULL;
    jmp_buf jb;
    osp_thread_set_unwind(&jb);
    osp_word value = 0;
    bool abandoned = false;
    if (setjmp(jb) == 0)
        value = f->thunk(env);
    else
        abandoned = true; /* a resuming handler abandoned a perform of this fiber */
    osp_thread_set_unwind(NULL);
    osp_gate_thread_end();
    osp_prof_thread_unregister();

    size_t s = (size_t)f->id % OSP_FIBER_STRIPES;
    pthread_mutex_lock(&stripes[s].lock);
    f->abandoned = abandoned;
    f->result = value;
    atomic_store_explicit(&f->done, 1, memory_order_release);
    pthread_cond_broadcast(&stripes[s].cond);
    pthread_mutex_unlock(&stripes[s].lock);
    osp_heap_thread_end();
    osp_crash_thread_end();
#if defined(__x86_64__) || defined(__aarch64__)
    *ret_slot = ret;
#endif
    return NULL;
}

/*
 * Stack of a fiber thread: as generous as the main thread's, so recursion that works
 * in main works in a fiber — the stack limit (`ulimit -s`) when it is at least 8 MiB
 * (up to 1 GiB), else 8 MiB. Address space only: pages are committed as they are
 * touched. The 64 KiB guard below it makes an overflow fault there (and be reported as
 * one) rather than skip into a neighbouring mapping.
 */
#define OSP_FIBER_STACK_MIN ((size_t)8 << 20)
#define OSP_FIBER_STACK_MAX ((size_t)1 << 30)

static size_t fiber_stack_size(void) {
    static atomic_size_t cached;
    size_t size = atomic_load_explicit(&cached, memory_order_relaxed);
    if (size) return size;
    size = OSP_FIBER_STACK_MIN;
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > size)
        size = rl.rlim_cur < OSP_FIBER_STACK_MAX ? (size_t)rl.rlim_cur : OSP_FIBER_STACK_MAX;
    atomic_store_explicit(&cached, size, memory_order_relaxed);
    return size;
}

static osp_fiber *fiber_new(osp_thunk_fn thunk, void *env) {
    osp_rt_heap_init();
    pthread_once(&stripes_once, stripes_init);
    osp_fiber *f = osp_gc_alloc(sizeof *f);
    f->thunk = thunk;
    f->env = env;
    f->handlers = osp_eff_copy();
    f->id = osp_handle_register(OSP_HANDLE_FIBER, f);
    return f;
}

/* Start `f`'s detached thread; 0 or the pthread error. */
static int fiber_start(osp_fiber *f) {
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (rc == 0) rc = pthread_attr_setstacksize(&attr, fiber_stack_size());
    if (rc == 0) rc = pthread_attr_setguardsize(&attr, OSP_THREAD_GUARD);
    pthread_t thread;
    if (rc == 0) rc = GC_pthread_create(&thread, &attr, osp_fiber_entry, f);
    pthread_attr_destroy(&attr);
    return rc;
}

int64_t osp_fiber_spawn(osp_thunk_fn thunk, void *env) {
    osp_fiber *f = fiber_new(thunk, env);
    if (atomic_load(&det_mode)) {
        /* the record stays reachable from the handle table while it waits in the queue */
        pthread_mutex_lock(&queue_lock);
        f->queued = true;
        if (queue_tail)
            queue_tail->next_queued = f;
        else
            queue_head = f;
        queue_tail = f;
        pthread_mutex_unlock(&queue_lock);
        return f->id;
    }
    int rc = fiber_start(f);
    if (rc != 0) osp_fatalf("cannot start fiber: %s", strerror(rc));
    return f->id;
}

int64_t osp_fiber_spawn_thread(osp_thunk_fn thunk, void *env) {
    osp_fiber *f = fiber_new(thunk, env);
    if (fiber_start(f) == 0) return f->id;
    size_t s = (size_t)f->id % OSP_FIBER_STRIPES;
    pthread_mutex_lock(&stripes[s].lock);
    atomic_store_explicit(&f->done, 1, memory_order_release); /* awaiting it returns 0 */
    pthread_mutex_unlock(&stripes[s].lock);
    return -1;
}

/* Run queued fiber `f` to completion on the calling thread, as the fiber: its id, its
 * inherited handlers and its own abandonment point; the caller's are restored after. */
static void run_inline(osp_fiber *f) {
    int64_t saved_id = current_fiber_id;
    osp_eff_entry **saved_slot = osp_eff_bound_slot();
    void *saved_unwind = osp_thread_get_unwind();
    current_fiber_id = f->id;
    osp_eff_entry *volatile handlers = f->handlers;
    osp_eff_bind_slot((osp_eff_entry **)&handlers);
    void *env = f->env;
    f->env = NULL;
    jmp_buf jb;
    osp_thread_set_unwind(&jb);
    osp_word value = 0;
    bool abandoned = false;
    if (setjmp(jb) == 0)
        value = f->thunk(env);
    else
        abandoned = true;
    osp_thread_set_unwind(saved_unwind);
    osp_eff_bind_slot(saved_slot);
    current_fiber_id = saved_id;
    size_t s = (size_t)f->id % OSP_FIBER_STRIPES;
    pthread_mutex_lock(&stripes[s].lock);
    f->abandoned = abandoned;
    f->result = value;
    atomic_store_explicit(&f->done, 1, memory_order_release);
    pthread_cond_broadcast(&stripes[s].cond);
    pthread_mutex_unlock(&stripes[s].lock);
}

/* Deterministic mode: run the queued fibers one after another, in queue order, until `f` has
 * been started (fibers they spawn join the end of the queue). */
static void run_queue_through(osp_fiber *f) {
    for (;;) {
        pthread_mutex_lock(&queue_lock);
        if (!f->queued) {
            pthread_mutex_unlock(&queue_lock);
            return;
        }
        osp_fiber *q = queue_head;
        queue_head = q->next_queued;
        if (queue_head == NULL) queue_tail = NULL;
        q->next_queued = NULL;
        q->queued = false;
        pthread_mutex_unlock(&queue_lock);
        run_inline(q);
    }
}

osp_word osp_fiber_wait(int64_t id) {
    osp_fiber *f = osp_handle_lookup(id, OSP_HANDLE_FIBER);
    if (f == NULL) osp_fatalf("await of unknown fiber %lld", (long long)id);
    run_queue_through(f); /* deterministic mode: a queued fiber runs here (§11.4) */
    if (atomic_load_explicit(&f->done, memory_order_acquire)) {
        if (f->abandoned)
            osp_fatalf("fiber %lld was abandoned by an effect handler", (long long)id);
        return f->result;
    }
    if (id == current_fiber_id) osp_fatalf("fiber %lld awaits itself", (long long)id);

    size_t s = (size_t)id % OSP_FIBER_STRIPES;
    osp_gate_block_begin(); /* callbacks of processes this thread spawned may run (§16.8) */
    osp_prof_block_begin();
    pthread_mutex_lock(&stripes[s].lock);
    while (!atomic_load_explicit(&f->done, memory_order_acquire))
        pthread_cond_wait(&stripes[s].cond, &stripes[s].lock);
    osp_word value = f->result;
    bool abandoned = f->abandoned;
    pthread_mutex_unlock(&stripes[s].lock);
    osp_prof_block_end();
    osp_gate_block_end();
    if (abandoned) osp_fatalf("fiber %lld was abandoned by an effect handler", (long long)id);
    return value;
}

int64_t osp_fiber_state(int64_t id) {
    osp_fiber *f = osp_handle_lookup(id, OSP_HANDLE_FIBER);
    if (f == NULL) return -1;
    if (atomic_load(&det_mode)) return 1; /* §11.4: every known fiber counts as done */
    return atomic_load_explicit(&f->done, memory_order_acquire) ? 1 : 0;
}

void osp_fiber_yield(void) {
    if (atomic_load(&det_mode)) return; /* §11.4: yield does not switch */
    sched_yield();
}

/* ---- sleep ---------------------------------------------------------------------------- */

void osp_sleep_ms(int64_t ms) {
    if (ms <= 0) return;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    int64_t sec = ms / 1000;
    long nsec = (long)(ms % 1000) * 1000000L;
    if ((int64_t)deadline.tv_sec > INT64_MAX - sec - 1) {
        deadline.tv_sec = (time_t)INT64_MAX; /* ~292 billion years: forever */
        deadline.tv_nsec = 0;
    } else {
        deadline.tv_sec += (time_t)sec;
        deadline.tv_nsec += nsec;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec += 1;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    osp_gate_block_begin(); /* callbacks of processes this thread spawned may run (§16.8) */
    osp_prof_block_begin();
    int rc;
    /* An absolute deadline: a signal (profiler, collector, user) interrupts the call
     * with EINTR and we simply sleep again to the same instant, never returning early. */
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL)) == EINTR) {
    }
    osp_prof_block_end();
    osp_gate_block_end();
    if (rc != 0) osp_fatalf("sleep failed: %s", strerror(rc));
}
