/* Leaves a zombie: forks a child that exits at once, never collects it, writes the
 * child's pid and waits (at most 20 s) until it is killed. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    pid_t child = fork();
    if (child == 0) _exit(0);
    if (child < 0) return 1;
    printf("%d\n", (int)child);
    fflush(stdout);
    sleep(20);
    return 0;
}
