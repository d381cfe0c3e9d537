/*
 * test_plt.c — symbolization of PLT stubs and of addresses the symbol table cannot bound
 * (docs/spec/profiler.md §(f); docs/profile-formats.md "Symbolization"). Found by the tester: with
 * the symbol-table fallback, a sample in a PLT stub was named `_init` (the nearest
 * preceding symbol, size 0) — confidently wrong. Against plt_fixture.c built in the lazy
 * and in the IBT PLT layout:
 *  - every .plt.sec entry and every lazy .plt entry after the first is `<target>@plt`,
 *    and the targets are exactly the fixture's four libc calls;
 *  - the first .plt entry (the resolver trampoline) is `[plt]`;
 *  - no address in any PLT section is ever `_init`, every one is `…@plt` or `[plt]`;
 *  - an address in the padding after .init (in no section) is not named at all;
 *  - main is still main.
 */
#include "testutil.h"

#include <elf.h>

typedef struct section {
    char name[32];
    uint64_t addr, size, entsize;
} section;

/* The section headers of a 64-bit ELF file (the test's own reader). */
static int read_sections(const char *path, section *out, int cap) {
    size_t n = 0;
    char *img = tu_slurp(path, &n);
    assert_non_null(img);
    assert_true(n > sizeof(Elf64_Ehdr));
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    assert_memory_equal(eh->e_ident, ELFMAG, SELFMAG);
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    const char *names = img + sh[eh->e_shstrndx].sh_offset;
    int k = 0;
    for (int i = 0; i < eh->e_shnum && k < cap; i++, k++) {
        snprintf(out[k].name, sizeof out[k].name, "%s", names + sh[i].sh_name);
        out[k].addr = sh[i].sh_addr;
        out[k].size = sh[i].sh_size;
        out[k].entsize = sh[i].sh_entsize ? sh[i].sh_entsize : 16;
    }
    free(img);
    return k;
}

/* The address of the symbol `name` in the file's .symtab; false when absent. */
static bool symbol_addr(const char *path, const char *name, uint64_t *addr) {
    size_t n = 0;
    char *img = tu_slurp(path, &n);
    assert_non_null(img);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    bool found = false;
    for (int i = 0; i < eh->e_shnum && !found; i++) {
        if (sh[i].sh_type != SHT_SYMTAB) continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
        const char *str = img + sh[sh[i].sh_link].sh_offset;
        for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++)
            if (strcmp(str + sym[k].st_name, name) == 0 && sym[k].st_value) {
                *addr = sym[k].st_value;
                found = true;
                break;
            }
    }
    free(img);
    return found;
}

static const section *find(const section *s, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(s[i].name, name) == 0) return &s[i];
    return NULL;
}

/* The outermost name LLVM + the corrections give `addr` in `object` (malloc'd; NULL when
 * no name). */
static char *name_at(ospprof_llvm *s, const char *object, uint64_t addr) {
    ospprof_symframe *f = NULL;
    int n = ospprof_llvm_symbolize(s, object, addr, &f);
    char *name = n > 0 && f[n - 1].name ? strdup(f[n - 1].name) : NULL;
    ospprof_symframes_free(f, n);
    return name;
}

static const char *const targets[] = {"getpid", "getppid", "getuid", "rand"};

/* Check every entry of a PLT section whose first `skip` entries are not stubs of a call;
 * adds the targets seen to `seen` (bit i = targets[i]). */
static void check_stubs(ospprof_llvm *s, const char *object, const section *sec, int skip,
                        unsigned *seen) {
    for (uint64_t a = sec->addr + (uint64_t)skip * sec->entsize; a < sec->addr + sec->size;
         a += sec->entsize) {
        char *name = name_at(s, object, a + 5); /* inside the stub, not at its start */
        assert_non_null(name);
        size_t len = strlen(name);
        assert_true(len > 4 && strcmp(name + len - 4, "@plt") == 0);
        bool known = false;
        for (unsigned i = 0; i < 4; i++)
            if (strncmp(name, targets[i], len - 4) == 0 && strlen(targets[i]) == len - 4) {
                *seen |= 1u << i;
                known = true;
            }
        if (!known)
            fail_msg("%s: unexpected PLT target %s at 0x%llx", sec->name, name,
                     (unsigned long long)a);
        free(name);
    }
}

static void check_fixture(const char *object, bool ibt) {
    section secs[64];
    int n = read_sections(object, secs, 64);
    const section *plt = find(secs, n, ".plt"), *sec = find(secs, n, ".plt.sec");
    const section *init = find(secs, n, ".init");
    assert_non_null(plt);
    assert_non_null(init);
    if (ibt) assert_non_null(sec);
    ospprof_llvm *s = ospprof_llvm_new();
    assert_non_null(s);

    unsigned seen = 0;
    check_stubs(s, object, plt, 1, &seen); /* entry 0 is the resolver trampoline */
    assert_int_equal(seen, 0xF);
    if (sec) {
        seen = 0;
        check_stubs(s, object, sec, 0, &seen);
        assert_int_equal(seen, 0xF);
    }
    char *name = name_at(s, object, plt->addr + 2);
    assert_non_null(name);
    assert_string_equal(name, "[plt]");
    free(name);

    /* never _init anywhere in a PLT section */
    const char *plts[] = {".plt", ".plt.sec", ".plt.got"};
    for (int k = 0; k < 3; k++) {
        const section *p = find(secs, n, plts[k]);
        if (!p) continue;
        for (uint64_t a = p->addr; a < p->addr + p->size; a++) {
            name = name_at(s, object, a);
            assert_non_null(name);
            size_t len = strlen(name);
            if (strcmp(name, "[plt]") != 0 && !(len > 4 && strcmp(name + len - 4, "@plt") == 0))
                fail_msg("%s+0x%llx named %s", plts[k], (unsigned long long)(a - p->addr), name);
            free(name);
        }
    }

    /* .init is _init; the padding after it lies in no section and gets no name */
    name = name_at(s, object, init->addr + 1);
    assert_non_null(name);
    assert_string_equal(name, "_init");
    free(name);
    if (init->addr + init->size < plt->addr) {
        name = name_at(s, object, init->addr + init->size);
        if (name) fail_msg("padding after .init named %s", name);
    }

    /* an ordinary function keeps its name */
    uint64_t main_addr = 0;
    assert_true(symbol_addr(object, "main", &main_addr));
    name = name_at(s, object, main_addr + 1);
    assert_non_null(name);
    assert_string_equal(name, "main");
    free(name);
    ospprof_llvm_free(s);
}

static void test_lazy_plt(void **st) {
    (void)st;
    check_fixture(PLT_LAZY, false);
}

static void test_ibt_plt(void **st) {
    (void)st;
    check_fixture(PLT_IBT, true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lazy_plt),
        cmocka_unit_test(test_ibt_plt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
