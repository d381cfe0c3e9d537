/*
 * measure.c — a tiny LD_PRELOAD library for bench/accuracy.sh that measures a run
 * independently of any profiler:
 *
 *   OSPREY_BENCH_MEASURE=<file> LD_PRELOAD=.../libbench_measure.so ./program
 *
 * At exit it writes one line to <file>:
 *   blocked_ns=<n> sampler_cpu_ns=<n>
 *   blocked   wall time all threads together spent inside the waiting calls below when
 *             they were called from the main executable (the program's own code and the
 *             statically linked Osprey runtime; not libgc's marker threads, not another
 *             preloaded library) — the truth of the "waiting" share of an unprofiled run
 *             (sleeps, joins, condition waits). Preload this library first, so the
 *             program's calls reach it directly. The waits of our profiler's sampler
 *             thread (named "osprey-sampler") are never counted.
 *   sampler_cpu  CPU time of our profiler's sampler thread, read each time it sleeps
 *             (0 when it is not running): the part of utime + stime that belongs to no
 *             profiled thread.
 * The variable is read once, in the constructor, and left in place; under `perf record`
 * the library is preloaded into the workload only (perf runs `env LD_PRELOAD=...`).
 * Wall and CPU time come from bench/accuracy/clock.c, preloaded last so that its window
 * also holds a preloaded profiler's start-up and its stop and file write (this library's
 * constructor runs after theirs and its destructor before).
 *
 * Wrapped calls: nanosleep, clock_nanosleep, usleep, pthread_join, pthread_cond_wait,
 * pthread_cond_timedwait. Each forwards to the next definition (RTLD_NEXT), so it
 * composes with other preloaded libraries (ours wraps the sleeps too).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static char g_path[4096];
static _Atomic uint64_t g_blocked;
static _Atomic uint64_t g_sampler_cpu;

/* The main executable's loadable segments: [lo, hi) pairs. */
static uintptr_t g_exe[8][2];
static int g_nexe;

static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    for (int i = 0; i < info->dlpi_phnum && g_nexe < 8; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        g_exe[g_nexe][0] = info->dlpi_addr + ph->p_vaddr;
        g_exe[g_nexe][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        g_nexe++;
    }
    return 1; /* the first object reported is the main program */
}

static int from_exe(const void *ret) {
    uintptr_t a = (uintptr_t)ret;
    for (int i = 0; i < g_nexe; i++)
        if (a >= g_exe[i][0] && a < g_exe[i][1]) return 1;
    return 0;
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((constructor)) static void measure_start(void) {
    const char *p = getenv("OSPREY_BENCH_MEASURE");
    if (p != NULL) snprintf(g_path, sizeof g_path, "%s", p);
    dl_iterate_phdr(first_object, NULL);
}

__attribute__((destructor)) static void measure_end(void) {
    if (g_path[0] == '\0') return;
    FILE *f = fopen(g_path, "w");
    if (f == NULL) return;
    fprintf(f, "blocked_ns=%llu sampler_cpu_ns=%llu\n", (unsigned long long)atomic_load(&g_blocked),
            (unsigned long long)atomic_load(&g_sampler_cpu));
    fclose(f);
}

static void *next(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (f == NULL) {
        fprintf(stderr, "measure: no %s\n", name);
        abort();
    }
    return f;
}

/* Our profiler's sampler thread: record its CPU time, never count its sleeps. */
static int is_sampler(void) {
    char name[16] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    if (strcmp(name, "osprey-sampler") != 0) return 0;
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint64_t old = atomic_load(&g_sampler_cpu);
    while (cpu > old && !atomic_compare_exchange_weak(&g_sampler_cpu, &old, cpu)) {
    }
    return 1;
}

#define TIMED(call)                                                          \
    if (is_sampler() || !from_exe(__builtin_return_address(0))) return call; \
    uint64_t t0_ = mono_ns();                                                \
    __typeof__(call) r_ = call;                                              \
    int e_ = errno;                                                          \
    atomic_fetch_add(&g_blocked, mono_ns() - t0_);                           \
    errno = e_;                                                              \
    return r_;

int nanosleep(const struct timespec *req, struct timespec *rem) {
    static int (*real)(const struct timespec *, struct timespec *);
    if (!real) real = next("nanosleep");
    TIMED(real(req, rem))
}

int clock_nanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem) {
    static int (*real)(clockid_t, int, const struct timespec *, struct timespec *);
    if (!real) real = next("clock_nanosleep");
    TIMED(real(c, flags, req, rem))
}

int usleep(useconds_t us) {
    static int (*real)(useconds_t);
    if (!real) real = next("usleep");
    TIMED(real(us))
}

int pthread_join(pthread_t t, void **ret) {
    static int (*real)(pthread_t, void **);
    if (!real) real = next("pthread_join");
    TIMED(real(t, ret))
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
    static int (*real)(pthread_cond_t *, pthread_mutex_t *);
    if (!real)
        real = (int (*)(pthread_cond_t *, pthread_mutex_t *))dlvsym(RTLD_NEXT, "pthread_cond_wait",
                                                                    "GLIBC_2.3.2");
    if (!real) real = next("pthread_cond_wait");
    TIMED(real(c, m))
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t) {
    static int (*real)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    if (!real)
        real = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))dlvsym(
            RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
    if (!real) real = next("pthread_cond_timedwait");
    TIMED(real(c, m, t))
}
