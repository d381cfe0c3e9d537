/*
 * GPU buffers and their combinators, run on the host (docs/spec/language.md §9.9).
 *
 * A buffer is its length and a pointer to its words (an int, a float's bits or a bool 0/1
 * each): a new buffer is one pointer-free heap block holding both, its words after the
 * header; toGpu of a list is a small scanned header that shares the list's words (they
 * never change), so it copies nothing. Generated code fills new buffers through
 * osp_gpu_data and runs kernels through osp_gpu_run, which splits [0, n) into chunks.
 *
 * Threads: the GPU workers, made on the first parallel run (one fewer than the online CPUs,
 * at most OSP_GPU_MAX_WORKERS; OSPREY_GPU_THREADS=<n> sets the total, caller included, and 1
 * turns parallel runs off). Each is created through the collector (GC_pthread_create, so
 * kernels may allocate), registers with the profiler as fiber -3 "gpu" (docs/spec/profiler.md
 * §(d)), and waits for work inside a blocking region. Lock: `pool.lock` guards the job
 * fields and both condition variables; chunks are claimed with an atomic counter outside it.
 * One parallel run at a time: a run that finds the pool busy (another fiber's) or that is
 * made on a worker (a kernel calling a GPU built-in) runs on its own thread instead.
 */
#include "rt_internal.h"
#include "osp_prof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct osp_gpu {
    int64_t len;
    osp_word *data; /* w, or a list's words (toGpu) */
    osp_word w[];
};

/* ---- buffers -------------------------------------------------------------------------- */

osp_gpu *osp_gpu_alloc(int64_t n) {
    if (n < 0) n = 0;
    if ((uint64_t)n > (SIZE_MAX - sizeof(osp_gpu)) / sizeof(osp_word)) osp_fatal_oom();
    /* pointer-free: `data` points into the block itself, which needs no scanning */
    osp_gpu *b = osp_gc_alloc_atomic(sizeof(osp_gpu) + (size_t)n * sizeof(osp_word));
    b->len = n;
    b->data = b->w;
    return b;
}

osp_word *osp_gpu_data(osp_gpu *b) {
    return b->data;
}

void osp_gpu_truncate(osp_gpu *b, int64_t n) {
    if (n >= 0 && n <= b->len) b->len = n;
}

int64_t osp_gpu_length(const osp_gpu *b) {
    return b->len;
}

osp_rres osp_gpu_get(const osp_gpu *b, int64_t i) {
    if (i < 0 || i >= b->len)
        return (osp_rres){OSP_RESULT_ERROR, (osp_word)(uintptr_t)"gpuGet: index out of bounds"};
    return (osp_rres){OSP_RESULT_SUCCESS, b->data[i]};
}

osp_gpu *osp_gpu_iota(int64_t n) {
    osp_gpu *b = osp_gpu_alloc(n);
    for (int64_t i = 0; i < b->len; i++) b->w[i] = (osp_word)i;
    return b;
}

osp_gpu *osp_gpu_from_list(const osp_list *xs) {
    const osp_word *words = osp_list_words(xs);
    if (words == NULL) return osp_gpu_alloc(0);
    /* a scanned header (its pointer keeps the list's backing alive) sharing the words */
    osp_gpu *b = osp_gc_alloc(sizeof(osp_gpu));
    b->len = osp_list_length(xs);
    b->data = (osp_word *)words;
    return b;
}

osp_list *osp_gpu_to_list(const osp_gpu *b) {
    return osp_list_new_scalar(b->len, b->data);
}

const char *osp_gpu_device(void) {
    return "host";
}

osp_gpu *osp_gpu_compact(const osp_gpu *b, const osp_word *flags) {
    int64_t n = 0;
    for (int64_t i = 0; i < b->len; i++) n += flags[i] != 0;
    osp_gpu *out = osp_gpu_alloc(n);
    int64_t k = 0;
    for (int64_t i = 0; i < b->len; i++)
        if (flags[i]) out->w[k++] = b->data[i];
    return out;
}

/* ---- the worker pool ------------------------------------------------------------------- */

enum {
    OSP_GPU_MAX_WORKERS = 15,
    OSP_GPU_MIN_PARALLEL = 4096, /* elements: below this a run stays on its thread */
    OSP_GPU_MIN_CHUNK = 2048,
    /* small enough that a thread the scheduler preempts holding the last chunk keeps the
     * others waiting only briefly (a loaded machine), large enough that claiming is rare */
    OSP_GPU_MAX_CHUNK = 65536,
};
#define OSP_GPU_STACK ((size_t)64 << 20) /* address space; recursive kernels as in a fiber */

typedef struct gpu_job {
    osp_gpu_chunk_fn fn;
    void *ctx;
    int64_t n, chunk;
    _Atomic int64_t next; /* first element not yet claimed */
} gpu_job;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work; /* a new job (generation changed) */
    pthread_cond_t done; /* active fell to 0 */
    int nworkers;
    uint64_t generation;
    int active; /* workers still in the current job */
    gpu_job *job;
    atomic_flag busy; /* a parallel run is under way */
} pool = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL,
    ATOMIC_FLAG_INIT};

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
/* the workers' small-object free lists: static data, so the collector scans them */
static osp_heap_cache worker_caches[OSP_GPU_MAX_WORKERS];
static _Thread_local bool on_worker;

static void run_chunks(gpu_job *j) {
    for (;;) {
        int64_t lo = atomic_fetch_add_explicit(&j->next, j->chunk, memory_order_relaxed);
        if (lo >= j->n) return;
        int64_t hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
        j->fn(j->ctx, lo, hi);
    }
}

static void *worker_main(void *arg) {
    osp_heap_cache *cache = arg;
    osp_crash_thread_begin();
    osp_heap_thread_begin(cache);
    on_worker = true;
    /* kernels perform no effects: an empty handler stack */
    osp_eff_entry *volatile handlers = NULL;
    osp_eff_bind_slot((osp_eff_entry **)&handlers);
    osp_prof_thread_register(-3, "gpu");
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        if (pool.generation == seen) {
            osp_prof_block_begin();
            while (pool.generation == seen) pthread_cond_wait(&pool.work, &pool.lock);
            osp_prof_block_end();
        }
        seen = pool.generation;
        gpu_job *j = pool.job;
        pthread_mutex_unlock(&pool.lock);
        run_chunks(j);
        pthread_mutex_lock(&pool.lock);
        if (--pool.active == 0) pthread_cond_signal(&pool.done);
    }
    return NULL;
}

/* Total threads of a parallel run, the caller included: OSPREY_GPU_THREADS, else the CPUs. */
static int wanted_threads(void) {
    const char *env = getenv("OSPREY_GPU_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == 0 && v >= 1)
            return v > OSP_GPU_MAX_WORKERS + 1 ? OSP_GPU_MAX_WORKERS + 1 : (int)v;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    return cpus > OSP_GPU_MAX_WORKERS + 1 ? OSP_GPU_MAX_WORKERS + 1 : (int)cpus;
}

static void pool_start(void) {
    int want = wanted_threads() - 1;
    for (int i = 0; i < want; i++) {
        pthread_attr_t attr;
        int rc = pthread_attr_init(&attr);
        if (rc == 0) rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (rc == 0) rc = pthread_attr_setstacksize(&attr, OSP_GPU_STACK);
        if (rc == 0) rc = pthread_attr_setguardsize(&attr, OSP_THREAD_GUARD);
        pthread_t t;
        if (rc == 0) rc = GC_pthread_create(&t, &attr, worker_main, &worker_caches[i]);
        pthread_attr_destroy(&attr);
        if (rc != 0) break; /* fewer workers: the runs still complete */
        pool.nworkers++;
    }
}

void osp_gpu_run(int64_t n, osp_gpu_chunk_fn fn, void *ctx, int64_t parallel) {
    if (n <= 0) return;
    if (!parallel || n < OSP_GPU_MIN_PARALLEL || on_worker) {
        fn(ctx, 0, n);
        return;
    }
    pthread_once(&pool_once, pool_start);
    if (pool.nworkers == 0 || atomic_flag_test_and_set(&pool.busy)) {
        fn(ctx, 0, n);
        return;
    }
    int threads = pool.nworkers + 1;
    int64_t chunk = n / ((int64_t)threads * 64);
    if (chunk < OSP_GPU_MIN_CHUNK) chunk = OSP_GPU_MIN_CHUNK;
    if (chunk > OSP_GPU_MAX_CHUNK) chunk = OSP_GPU_MAX_CHUNK;
    gpu_job job = {fn, ctx, n, chunk, 0};
    pthread_mutex_lock(&pool.lock);
    pool.job = &job;
    pool.active = pool.nworkers;
    pool.generation++;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.lock);
    run_chunks(&job);
    pthread_mutex_lock(&pool.lock);
    if (pool.active > 0) {
        osp_prof_block_begin();
        while (pool.active > 0) pthread_cond_wait(&pool.done, &pool.lock);
        osp_prof_block_end();
    }
    pool.job = NULL;
    pthread_mutex_unlock(&pool.lock);
    atomic_flag_clear(&pool.busy);
}
