/* Computes, writes its pid to the file named by argv[1], then waits in pause() for a
 * signal; unprofiled, a SIGTERM from outside ends it there (exit status 143) and
 * "after pause" is never printed. */
#include <stdio.h>
#include <unistd.h>

volatile double sink;

__attribute__((noinline)) static void spin_pause(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    spin_pause(40000000);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) return 1;
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    rename(tmp, argv[1]);
    pause();
    puts("after pause");
    return 0;
}
