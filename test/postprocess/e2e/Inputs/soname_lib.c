/* A library reached through its soname's symlink (libwt.so.1 -> libwt.so.1.2.3), stripped,
 * with its time in a static function no symbol names: an image frame (image-names.test). */
static volatile unsigned long sink;

__attribute__((noinline)) static void spin(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink += i * 7;
}

void wt_work(unsigned long n) {
    spin(n);
    __asm__ volatile("" ::: "memory");
}
