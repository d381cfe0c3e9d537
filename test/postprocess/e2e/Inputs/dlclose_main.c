/* dlopen a plugin, spend time in it, dlclose it, then go on in the main program: the
 * plugin is no longer loaded when the profile is written. `dlclose_main <plugin> <n>
 * <iterations>`: n loop turns in the plugin per load, `iterations` loads. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

volatile double main_sink;

__attribute__((noinline)) static void main_spin(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    main_sink = x;
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    long n = atol(argv[2]);
    int iterations = atoi(argv[3]);
    for (int k = 0; k < iterations; k++) {
        void *h = dlopen(argv[1], RTLD_NOW);
        if (h == NULL) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        double (*f)(long) = (double (*)(long))dlsym(h, "plugin_spin");
        if (f == NULL) return 1;
        f(n);
        dlclose(h);
    }
    main_spin(20000000);
    return 0;
}
