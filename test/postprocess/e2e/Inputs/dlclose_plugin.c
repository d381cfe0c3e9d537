/* A plugin that dlclose_main.c loads, calls and unloads. */
volatile double plugin_sink;

__attribute__((noinline)) double plugin_spin(long n) {
    double x = 1;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    plugin_sink = x;
    return x;
}
