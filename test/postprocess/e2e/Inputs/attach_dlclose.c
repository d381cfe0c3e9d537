/* attach-dlclose.test: prints "ready", then spends about `plugin_s` seconds of CPU in a
 * plugin it dlopen()s and dlclose()s, then about `main_s` seconds in itself, and exits.
 * `attach_dlclose <plugin.so> <plugin_s> <main_s>`. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile double main_sink;

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void main_spin(double seconds) {
    double x = 1, until = cpu_s() + seconds;
    while (cpu_s() < until)
        for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 0.5;
    main_sink = x;
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    printf("ready\n");
    fflush(stdout);
    void *h = dlopen(argv[1], RTLD_NOW);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    double (*f)(long) = (double (*)(long))dlsym(h, "plugin_spin");
    if (f == NULL) return 1;
    double until = cpu_s() + atof(argv[2]);
    while (cpu_s() < until) f(1000000);
    dlclose(h);
    main_spin(atof(argv[3]));
    return 0;
}
