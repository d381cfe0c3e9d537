/* bench: Mandelbrot escape counts in doubles, as mandel.osp. */
#include <stdio.h>
static long escape(double cr, double ci) {
    double zr = 0.0, zi = 0.0;
    long n = 0;
    while (n < 200 && !(zr * zr + zi * zi > 4.0)) {
        double t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        n++;
    }
    return n;
}
int main(void) {
    long acc = 0;
    for (long y = 0; y < 1200; y++)
        for (long x = 0; x < 1800; x++) {
            double cr = (double)x * 3.0 / 1800.0, ci = (double)y * 2.0 / 1200.0;
            acc += escape(cr - 2.0, ci - 1.0);
        }
    printf("%ld\n", acc);
    return 0;
}
