/*
 * preload_target.c — a plain pthread program that knows nothing about the profiler:
 * main and two threads burn CPU in target_hot, a third sleeps in one plain nanosleep
 * call, or another sleeping call (target_sleep) and prints "sleep_ret=<r> slept=<seconds>". test_preload.c runs it
 * with LD_PRELOAD=libosprey_prof.so. Built with frame pointers.
 *
 *   preload_target [<seconds> [<end>]]   <end>: how it ends after its work, printing
 *       "pid=<pid>" first: "_exit" (_exit(7)), "exec" (execv of itself with <seconds> / 2
 *       and no <end>), "execl", "execlp", "execle" (the same through that call; execle's
 *       environment is LD_PRELOAD alone plus PRELOAD_TARGET_MARK=execle), "forkexec" (a
 *       forked child execs itself the same way; the parent waits for it and returns 0);
 *       default: return 0 from main. Started with PRELOAD_TARGET_MARK set, it prints
 *       "mark=<value>" first. PRELOAD_TARGET_WAIT=sigtimedwait, sem_timedwait or
 *       syscall_nanosleep makes the sleeper wait in that call (timing out) instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double target_hot(double secs) {
    volatile double x = 1;
    double end = cpu_now() + secs;
    while (cpu_now() < end)
        for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) int target_sleep(double secs) {
    struct timespec req = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    const char *how = getenv("PRELOAD_TARGET_WAIT");
    int r;
    /* One call each, no EINTR loop; a timeout counts as success (0). */
    if (how && strcmp(how, "sigtimedwait") == 0) {
        sigset_t usr2;
        sigemptyset(&usr2);
        sigaddset(&usr2, SIGUSR2);
        pthread_sigmask(SIG_BLOCK, &usr2, NULL);
        r = sigtimedwait(&usr2, NULL, &req) == -1 && errno == EAGAIN ? 0 : -1;
    } else if (how && strcmp(how, "sem_timedwait") == 0) {
        sem_t sem;
        sem_init(&sem, 0, 0);
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += req.tv_sec;
        dl.tv_nsec += req.tv_nsec;
        if (dl.tv_nsec >= 1000000000) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000;
        }
        r = sem_timedwait(&sem, &dl) == -1 && errno == ETIMEDOUT ? 0 : -1;
        sem_destroy(&sem);
    } else if (how && strcmp(how, "syscall_nanosleep") == 0) {
        r = (int)syscall(SYS_nanosleep, &req, NULL);
    } else {
        r = nanosleep(&req, NULL);
    }
    __asm__ volatile("" ::: "memory");
    return r;
}

static void *sleeper(void *arg) {
    double secs = *(double *)arg, t0 = mono_now();
    int r = target_sleep(secs);
    printf("sleep_ret=%d slept=%.6f\n", r, mono_now() - t0);
    return NULL;
}

static void *worker(void *arg) {
    target_hot(*(double *)arg);
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    const char *mark = getenv("PRELOAD_TARGET_MARK");
    if (mark) printf("mark=%s\n", mark);
    pthread_t t[3];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, &secs) != 0) return 1;
    if (pthread_create(&t[2], NULL, sleeper, &secs) != 0) return 1;
    target_hot(secs / 2);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    if (argc > 2) {
        printf("pid=%d\n", (int)getpid());
        fflush(stdout);
        char half[32];
        snprintf(half, sizeof half, "%.3f", secs / 2);
        char *again[] = {argv[0], half, NULL};
        if (strcmp(argv[2], "_exit") == 0) _exit(7);
        if (strcmp(argv[2], "exec") == 0) {
            execv(argv[0], again);
            return 2;
        }
        if (strcmp(argv[2], "execl") == 0) {
            execl(argv[0], argv[0], half, (char *)NULL);
            return 2;
        }
        if (strcmp(argv[2], "execlp") == 0) {
            execlp(argv[0], argv[0], half, (char *)NULL);
            return 2;
        }
        if (strcmp(argv[2], "execle") == 0) {
            /* no OSPREY_PROFILE here: following the exec puts it back */
            char preload[4096];
            const char *lp = getenv("LD_PRELOAD");
            snprintf(preload, sizeof preload, "LD_PRELOAD=%s", lp ? lp : "");
            char *env[] = {preload, "PRELOAD_TARGET_MARK=execle", NULL};
            execle(argv[0], argv[0], half, (char *)NULL, env);
            return 2;
        }
        if (strcmp(argv[2], "forkexec") == 0) {
            pid_t c = fork();
            if (c == 0) {
                execv(argv[0], again);
                _exit(2);
            }
            int st;
            if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                return 3;
        }
    }
    return 0;
}
