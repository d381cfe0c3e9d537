/*
 * helper.c — a program linked with the profiler runtime that never calls it: the
 * load-time constructor boots from the environment, as in any Osprey program. Driven by
 * test_env.c. Reports on stdout; the profiler's own messages go to stderr.
 *
 *   helper busy <ms>             burn <ms> of CPU in helper_hot
 *   helper chdir <dir> <ms>      chdir, then burn
 *   helper worker-exit <ms>      a registered worker burns, then calls exit(0)
 *   helper fork <path> <ms>      a forked child burns and exits; report whether <path>
 *                                exists after it ended; then burn
 *
 * Every mode first prints "samplers=<n>" (running sampler threads) and the two variables as seen after boot.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "osp_prof.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double helper_hot(double ms) {
    volatile double x = 1;
    double end = cpu_now() + ms / 1000.0;
    while (cpu_now() < end)
        for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

/* Threads named "osprey-sampler" (sanitizer runtimes add threads of their own). */
static int samplers(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[128], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fgets(comm, sizeof comm, f) && strcmp(comm, "osprey-sampler\n") == 0) n++;
        fclose(f);
    }
    if (d) closedir(d);
    return n;
}

static double g_ms;

static void *exiting_worker(void *arg) {
    (void)arg;
    osp_prof_thread_register(1, "fiber");
    helper_hot(g_ms);
    fflush(stdout);
    exit(0); /* from a worker, while main waits in pthread_join */
}

int main(int argc, char **argv) {
    const char *p = getenv("OSPREY_PROFILE"), *hz = getenv("OSPREY_PROFILE_HZ");
    printf("samplers=%d\nOSPREY_PROFILE=%s\nOSPREY_PROFILE_HZ=%s\n", samplers(), p ? p : "<unset>",
           hz ? hz : "<unset>");
    fflush(stdout);
    if (argc < 2) return 2;
    if (strcmp(argv[1], "busy") == 0 && argc == 3) {
        helper_hot(atof(argv[2]));
    } else if (strcmp(argv[1], "chdir") == 0 && argc == 4) {
        if (chdir(argv[2]) != 0) return 3;
        helper_hot(atof(argv[3]));
    } else if (strcmp(argv[1], "worker-exit") == 0 && argc == 3) {
        g_ms = atof(argv[2]);
        pthread_t t;
        if (pthread_create(&t, NULL, exiting_worker, NULL) != 0) return 4;
        pthread_join(t, NULL);
        return 5; /* not reached */
    } else if (strcmp(argv[1], "fork") == 0 && argc == 4) {
        pid_t pid = fork();
        if (pid < 0) return 6;
        if (pid == 0) {
            printf("child-samplers=%d\n", samplers());
            helper_hot(atof(argv[3]) / 2);
            exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        printf("after-child=%s\n", access(argv[2], F_OK) == 0 ? "present" : "absent");
        helper_hot(atof(argv[3]));
    } else {
        return 2;
    }
    return 0;
}
