/*
 * symbolize_fixture.c — a real program for the symbolization tests (built with
 * `clang-19 -g -O2` at test-build time). It records three stacks of its own and writes
 * them as a raw profile (docs/spec/profiler.md §(e)) to argv[1], with its images enumerated the way
 * the profiler runtime does (dl_iterate_phdr: slide = load bias, text = span of the PF_X
 * PT_LOAD segments):
 *   S0: fixture_capture (leaf, exact pc) ← a return address inside a three-deep
 *       always_inline chain inside fixture_outer ← the return address of the call in main;
 *   S1: an address inside __tls_get_addr, which lives in the dynamic loader;
 *   S2: an address inside getpid in libc.
 * The test finds the expected lines by the markers in the comments below.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile uintptr_t ra_in_outer, ra_in_main;
volatile int fixture_sink;

__attribute__((noinline)) void fixture_capture(void) {
    ra_in_outer = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) int leaf3(int x) {
    fixture_capture(); /* MARK:LEAF3 */
    return x * 3 + 1;
}

static inline __attribute__((always_inline)) int mid2(int x) {
    return leaf3(x) ^ 5; /* MARK:MID2 */
}

static inline __attribute__((always_inline)) int top1(int x) {
    return mid2(x) + 7; /* MARK:TOP1 */
}

__attribute__((noinline)) int fixture_outer(int x) {
    ra_in_main = (uintptr_t)__builtin_return_address(0);
    int r = top1(x); /* MARK:OUTER */
    fixture_sink = r;
    return r * 2;
}

static FILE *out;
static int nimg;

static int image_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size, (void)data;
    char path[PATH_MAX];
    const char *name = info->dlpi_name;
    if (!name || !name[0]) {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0) return 0;
        path[n] = 0;
        name = path;
    } else if (strncmp(name, "linux-vdso", 10) == 0) {
        name = "[vdso]";
    }
    uint64_t base = 0, lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        if (ph->p_offset == 0) base = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_flags & PF_X) {
            if (ph->p_vaddr < lo) lo = ph->p_vaddr;
            if (ph->p_vaddr + ph->p_memsz > hi) hi = ph->p_vaddr + ph->p_memsz;
        }
    }
    uint64_t text = lo == UINT64_MAX ? 0 : info->dlpi_addr + lo;
    uint64_t text_size = lo == UINT64_MAX ? 0 : hi - lo;
    fprintf(out,
            "%s{\"path\":\"%s\",\"base\":%llu,\"slide\":%llu,\"text\":%llu,\"text_size\":%llu,"
            "\"arch\":\"x86_64\"}",
            nimg++ ? "," : "", name, (unsigned long long)base, (unsigned long long)info->dlpi_addr,
            (unsigned long long)text, (unsigned long long)text_size);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int r = fixture_outer(argc); /* MARK:MAINCALL */
    fixture_sink += r;
    uintptr_t tls = (uintptr_t)dlsym(RTLD_DEFAULT, "__tls_get_addr");
    uintptr_t gp = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
    if (!tls || !gp) return 3;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 4;
    exe[n] = 0;
    out = fopen(argv[1], "w");
    if (!out) return 5;
    fprintf(
        out,
        "{\"version\":1,\"pid\":%d,\"exe\":\"%s\",\"rate_hz\":1000,\"platform\":\"linux-x86_64\","
        "\"start_unix_ns\":0,\"end_unix_ns\":3000000,\"images\":[",
        (int)getpid(), exe);
    dl_iterate_phdr(image_cb, NULL);
    fprintf(out,
            "],\"threads\":[{\"fiber\":0,\"label\":\"main\"}],\"stacks\":[[%llu,%llu,%llu],[%llu],"
            "[%llu]],\"samples\":[[1000000,0,0,0],[2000000,0,1,0],[3000000,0,2,0]],\"dropped\":0}",
            (unsigned long long)(uintptr_t)fixture_capture, (unsigned long long)ra_in_outer,
            (unsigned long long)ra_in_main, (unsigned long long)(tls + 2),
            (unsigned long long)(gp + 1));
    return fclose(out) == 0 ? 0 : 6;
}
