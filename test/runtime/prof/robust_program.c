/*
 * robust_program.c — a program linked with the profiler runtime (booted from the
 * environment like any Osprey program) that does what docs/spec/profiler.md §(l.3) and
 * §(l.5) say a program may do without noticing the profiler. Driven by test_robust.c;
 * failures are exit codes or messages on stdout.
 *
 *   robust_program spin               burn CPU on two threads until killed (SIGINT...)
 *   robust_program own-term           SIGTERM handler of its own; exit(7) once it ran
 *   robust_program rawfork            a child by syscall(SYS_fork) that calls exit(0);
 *                                     prints "child=<status>" (the child must not hang)
 *   robust_program altstack           SA_ONSTACK handler on an 8 KiB sigaltstack that
 *                                     burns CPU with 4 KiB of locals, 20 times
 *   robust_program cancel             threads with asynchronous cancellation that loop over
 *                                     the registry's hooks, cancelled at random moments
 *   robust_program lowfd              closes stdin while profiled threads block and run,
 *                                     then prints "fd=<n>" for the next open()
 *   robust_program longjmp            siglongjmp out of a wait inside a blocking region,
 *                                     then burns 0.3 s of CPU; prints "ok"
 *   robust_program poll0              a busy poll(NULL, 0, 0) loop inside a blocking region
 *                                     for 0.3 s of CPU, then 0.03 s of CPU outside it
 *   robust_program itimer             setitimer(ITIMER_PROF) with no handler, then burns
 *   robust_program ownprof            a SIGPROF handler of its own, installed by a
 *                                     constructor before the profiler's (which chains to
 *                                     it), doing ~300 us of work per signal under
 *                                     setitimer(ITIMER_PROF) every 2 ms for 0.6 s of CPU;
 *                                     prints "hits=<n>"
 *   robust_program ownprof-suspend    the same handler; main blocks SIGPROF, starts a busy
 *                                     thread (which inherits the mask), then waits 40 times
 *                                     for its ITIMER_PROF signal in sigsuspend; prints
 *                                     "woken=<n>"
 *   robust_program exec               3 ms of CPU, then execv("/bin/true") (exit 127 if it
 *                                     fails)
 *   robust_program exec-fail          an execv that fails between two bursts of CPU;
 *                                     prints "errno=<n> ok"
 *   robust_program exec-self          execv of itself as "sigprof-state" (not profiled:
 *                                     OSPREY_PROFILE is gone from the environment)
 *   robust_program sigprof-state      prints "sigprof=ign", "sigprof=dfl" or "sigprof=other"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "osp_prof.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static double robust_hot(double seconds) {
    volatile double x = 1;
    double end = cpu_now() + seconds;
    while (cpu_now() < end)
        for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

static void *spin_main(void *p) {
    (void)p;
    for (;;) robust_hot(1);
    return NULL;
}

static volatile sig_atomic_t g_term;
static void on_term(int sig) {
    (void)sig;
    g_term = 1;
}

static void on_usr1(int sig) {
    (void)sig;
    volatile char locals[4096];
    memset((char *)locals, 1, sizeof locals);
    robust_hot(0.01);
}

static void *cancel_main(void *p) {
    int fiber = (int)(intptr_t)p;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    for (;;) {
        osp_prof_thread_register(fiber, "cancel");
        osp_prof_block_begin();
        osp_prof_block_end();
        osp_prof_thread_unregister();
    }
    return NULL;
}

static void *read_main(void *p) {
    int fd = (int)(intptr_t)p;
    char c;
    while (read(fd, &c, 1) == 1) {
    }
    return NULL;
}

static sigjmp_buf g_jump;
static void on_alarm(int sig) {
    (void)sig;
    siglongjmp(g_jump, 1);
}

__attribute__((noinline)) static void wait_then_jump(void) {
    osp_prof_block_begin(); /* as a wrapped wait does */
    struct timespec ts = {0, 500000000};
    /* Left by siglongjmp after 50 ms. The loop resumes the sleep if a capture signal cuts it
     * short (the "sampler" engine still signals threads, and ThreadSanitizer's deferred
     * delivery can land one inside the sleep): this case is about the jump, not EINTR. */
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
    osp_prof_block_end();
}

/* ---- ownprof: the program's own SIGPROF handler, there before the profiler ------------- */

static volatile int g_own_hits;

__attribute__((noinline)) static void robust_own_handler_work(void) {
    robust_hot(0.0003);
}

static void on_own_sigprof(int sig) {
    (void)sig;
    g_own_hits++;
    robust_own_handler_work();
}

static atomic_int g_burner_done;

static void *suspend_burner(void *p) {
    (void)p;
    while (!atomic_load(&g_burner_done)) robust_hot(0.001);
    return NULL;
}

/* Before the profiler's constructor (default priority), as a library that installs its
 * handler at load time would be. glibc passes constructors argc and argv. */
__attribute__((constructor(102))) static void ownprof_early(int argc, char **argv) {
    if (argc != 2 || strncmp(argv[1], "ownprof", 7) != 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_own_sigprof;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *m = argv[1];
    setvbuf(stdout, NULL, _IONBF, 0);
    if (strcmp(m, "spin") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, spin_main, NULL);
        printf("ready\n");
        spin_main(NULL);
    }
    if (strcmp(m, "own-term") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        printf("ready\n");
        while (!g_term) robust_hot(0.01);
        exit(7);
    }
    if (strcmp(m, "rawfork") == 0) {
        robust_hot(0.05);
        pid_t pid = (pid_t)syscall(SYS_fork);
        if (pid == 0) {
            robust_hot(0.02);
            exit(0); /* atexit handlers run: the profiler's must do nothing here */
        }
        int status = -1;
        alarm(10); /* a hung child would hang the test */
        waitpid(pid, &status, 0);
        printf("child=%d\n", status);
        robust_hot(0.02);
        return 0;
    }
    if (strcmp(m, "altstack") == 0) {
        stack_t ss = {.ss_sp = malloc(8192), .ss_size = 8192, .ss_flags = 0};
        if (sigaltstack(&ss, NULL) != 0) return 3;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sa.sa_flags = SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, NULL);
        for (int i = 0; i < 20; i++) raise(SIGUSR1);
        printf("ok\n");
        return 0;
    }
    if (strcmp(m, "cancel") == 0) {
        alarm(30);
        srand(42);
        for (int round = 0; round < 40; round++) {
            pthread_t t[4];
            for (int i = 0; i < 4; i++)
                pthread_create(&t[i], NULL, cancel_main, (void *)(intptr_t)(100 + i));
            struct timespec ts = {0, (rand() % 5000 + 100) * 1000};
            nanosleep(&ts, NULL);
            for (int i = 0; i < 4; i++) pthread_cancel(t[i]);
            for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
        }
        printf("ok\n");
        return 0;
    }
    if (strcmp(m, "lowfd") == 0) {
        int p[2];
        if (pipe(p) != 0) return 3;
        pthread_t t[3];
        for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, read_main, (void *)(intptr_t)p[0]);
        robust_hot(0.3); /* the sampler examines the blocked readers meanwhile */
        close(0);
        int fd = open("/dev/null", O_RDONLY);
        printf("fd=%d\n", fd);
        close(p[1]);
        for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
        return 0;
    }
    if (strcmp(m, "longjmp") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 0}, {0, 50000}};
        if (sigsetjmp(g_jump, 1) == 0) {
            setitimer(ITIMER_REAL, &it, NULL);
            wait_then_jump();
            return 4; /* the jump did not happen */
        }
        robust_hot(0.3); /* on-CPU, though its region was never ended */
        printf("ok\n");
        return 0;
    }
    if (strcmp(m, "poll0") == 0) {
        osp_prof_block_begin();
        double end = cpu_now() + 0.3;
        while (cpu_now() < end) poll(NULL, 0, 0);
        osp_prof_block_end();
        robust_hot(0.03); /* ticks after the region: its time is not a wait either */
        printf("ok\n");
        return 0;
    }
    if (strcmp(m, "ownprof") == 0) {
        struct itimerval it = {{0, 2000}, {0, 2000}}, off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_PROF, &it, NULL);
        robust_hot(0.6);
        setitimer(ITIMER_PROF, &off, NULL);
        printf("hits=%d\n", g_own_hits);
        return 0;
    }
    if (strcmp(m, "ownprof-suspend") == 0) {
        sigset_t prof, old;
        sigemptyset(&prof);
        sigaddset(&prof, SIGPROF);
        pthread_sigmask(SIG_BLOCK, &prof, &old);
        pthread_t t;
        pthread_create(&t, NULL, suspend_burner, NULL);
        struct itimerval it = {{0, 5000}, {0, 5000}}, off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_PROF, &it, NULL);
        int woken = 0;
        for (int i = 0; i < 40; i++) {
            int before = g_own_hits;
            sigsuspend(&old);
            if (g_own_hits > before) woken++;
        }
        setitimer(ITIMER_PROF, &off, NULL);
        atomic_store(&g_burner_done, 1);
        pthread_join(t, NULL);
        printf("woken=%d\n", woken);
        return 0;
    }
    if (strcmp(m, "exec") == 0) {
        robust_hot(0.003);
        char *args[] = {"true", NULL};
        execv("/bin/true", args);
        return 127;
    }
    if (strcmp(m, "exec-fail") == 0) {
        robust_hot(0.05);
        char *args[] = {"missing", NULL};
        int rc = execv("/nonexistent/osprey-robust-missing", args);
        int e = errno;
        robust_hot(0.05);
        printf("errno=%d %s\n", e, rc == -1 ? "ok" : "returned");
        return 0;
    }
    if (strcmp(m, "exec-self") == 0) {
        robust_hot(0.01);
        char *args[] = {argv[0], "sigprof-state", NULL};
        execv("/proc/self/exe", args);
        return 127;
    }
    if (strcmp(m, "sigprof-state") == 0) {
        struct sigaction cur;
        if (sigaction(SIGPROF, NULL, &cur) != 0) return 3;
        bool info = (cur.sa_flags & SA_SIGINFO) != 0;
        printf("sigprof=%s\n", !info && cur.sa_handler == SIG_IGN   ? "ign"
                               : !info && cur.sa_handler == SIG_DFL ? "dfl"
                                                                    : "other");
        return 0;
    }
    if (strcmp(m, "itimer") == 0) {
        struct itimerval it = {{0, 10000}, {0, 10000}};
        setitimer(ITIMER_PROF, &it, NULL);
        robust_hot(3);
        printf("survived\n");
        return 0;
    }
    return 2;
}
