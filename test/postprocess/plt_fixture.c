/*
 * plt_fixture.c — a program whose calls to libc go through the PLT, for the
 * symbolization tests of PLT stubs (test_plt.c). Built at test-build time in two
 * layouts: the classic lazy `.plt`, and with IBT (`-fcf-protection=full -z ibtplt`:
 * `.plt` lazy stubs plus `.plt.sec`). The four libc functions below are the PLT targets.
 */
#include <stdlib.h>
#include <unistd.h>

int main(void) {
    int r = (int)getpid() + (int)getppid() + (int)getuid() + rand();
    return r & 1;
}
