/*
 * test_symbolize.c — image mapping and symbolization (docs/spec/profiler.md §(f)).
 *
 * Mapping is tested on hand-made raw profiles with a recording resolver (text ranges,
 * greatest text among overlaps, greatest base for images without a range, addresses in
 * no image, −1 on return addresses only, slide, negative unslid address). Symbolization
 * is tested with LLVM against a real program (symbolize_fixture.c, built with
 * clang-19 -g -O2): the three-deep inline chain in root-to-leaf order with each level's
 * line, the call line in main, the dynamic loader and libc named from their symbol
 * tables, the moved main image substituted by the given binary only, build-id,
 * architecture and text-size checks with their one warning, image frames for unnamed code
 * (docs/spec/profiler.md §(l.6)), OSPREY_PROFILE_SYMBOLIZER=none, and the names-only build
 * of `--diff` (the same names per stack, no file or line); an address on DWARF line 0
 * takes the line of the code before it in its function (line0_fixture.s).
 */
#include "testutil.h"

#include <dlfcn.h>
#include <sys/wait.h>

/* ---- mapping ------------------------------------------------------------------------ */

#define MAP_RAW(images, stacks)                                                                \
    "{\"version\":1,\"pid\":1,\"exe\":\"/m/main\",\"rate_hz\":1000,\"platform\":\"p\","        \
    "\"start_unix_ns\":0,\"end_unix_ns\":0,\"images\":[" images "],\"threads\":[{\"fiber\":0," \
    "\"label\":\"main\"}],\"stacks\":[" stacks "],\"samples\":[[0,0,0,0]],\"dropped\":0}"

static ospprof_raw *parse(const char *s) {
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = ospprof_raw_parse("m.json", s, strlen(s), err, sizeof err);
    if (!r) fail_msg("%s", err);
    return r;
}

static void test_image_for(void **st) {
    (void)st;
    ospprof_raw *r = parse(MAP_RAW(
        "{\"path\":\"/a\",\"base\":4096,\"text\":8192,\"text_size\":4096},"  /* 0: [8192,12288) */
        "{\"path\":\"/b\",\"base\":4096,\"text\":10240,\"text_size\":4096}," /* 1: overlaps 0 */
        "{\"path\":\"/c\",\"base\":65536,\"text\":0,\"text_size\":0},"       /* 2: no range */
        "{\"path\":\"/d\",\"base\":1048576,\"text\":0,\"text_size\":0},"     /* 3: no range */
        "{\"path\":\"/e\",\"base\":2097152,\"text\":2097152,\"text_size\":16}", /* 4 */
        "[1]"));
    assert_int_equal(ospprof_image_for(r, 8192), 0);
    assert_int_equal(ospprof_image_for(r, 10239), 0);
    assert_int_equal(ospprof_image_for(r, 10240), 1); /* both contain it: greatest text */
    assert_int_equal(ospprof_image_for(r, 14335), 1);
    /* not in any range: the greatest base at or below, among images without a range only */
    assert_int_equal(ospprof_image_for(r, 14336), -1); /* below /c's base; /a /b have ranges */
    assert_int_equal(ospprof_image_for(r, 65536), 2);
    assert_int_equal(ospprof_image_for(r, 1048575), 2);
    assert_int_equal(ospprof_image_for(r, 1048576), 3);
    assert_int_equal(ospprof_image_for(r, 2097152), 4);
    assert_int_equal(ospprof_image_for(r, 2097168), 3); /* past /e's range: falls back */
    assert_int_equal(ospprof_image_for(r, 100), -1);
    ospprof_raw_free(r);
}

typedef struct rec {
    char seen[16][64];
    int n;
} rec;

static int recording_resolver(void *ctx, const ospprof_image *im, uint64_t rel,
                              ospprof_symframe **out) {
    rec *r = ctx;
    if (r->n < 16) snprintf(r->seen[r->n++], 64, "%s+%llu", im->path, (unsigned long long)rel);
    ospprof_symframe *f = calloc(1, sizeof *f);
    char name[64];
    snprintf(name, sizeof name, "f%llu", (unsigned long long)rel);
    f->name = strdup(name);
    *out = f;
    return 1;
}

static const char *frame_name(const ospprof_profile *p, size_t k, size_t j) {
    const ospprof_stackinfo *si = &p->stacks[k];
    assert_true(j < si->n);
    return p->strs.str[p->frames[p->stack_frames[si->off + j]].name];
}

static void test_return_addresses_and_slide(void **st) {
    (void)st;
    /* image text [8192, 8192+4096) with slide 4096. Stack leaf-first:
     *   8200 (leaf, looked up exactly) → 8200 − 4096
     *   12288 (return address at the end of the range: 12287 is inside) → 12287 − 4096
     *   8192 (return address at the start: 8191 is outside every image) → hex
     *   20500 in an image without a range whose slide is above it → hex */
    ospprof_raw *r = parse(
        MAP_RAW("{\"path\":\"/a\",\"base\":4096,\"slide\":4096,\"text\":8192,\"text_size\":4096},"
                "{\"path\":\"/z\",\"base\":20000,\"slide\":30000,\"text\":0,\"text_size\":0}",
                "[8200,12288,8192,20500]"));
    rec seen = {0};
    ospprof_profile *p =
        ospprof_profile_build_ex(r, "x.osp", NULL, NULL, recording_resolver, &seen);
    assert_non_null(p);
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.seen[0], "/a+4104");
    assert_string_equal(seen.seen[1], "/a+8191");
    assert_string_equal(frame_name(p, 0, 0), "f4104");
    assert_string_equal(frame_name(p, 0, 1), "f8191");
    assert_string_equal(frame_name(p, 0, 2), "0x2000"); /* raw address, not −1 */
    assert_string_equal(frame_name(p, 0, 3), "0x5014");
    ospprof_profile_free(p);
    ospprof_raw_free(r);
}

static void test_symbols_table_and_truncation(void **st) {
    (void)st;
    /* the vDSO resolves through its recorded symbols (name only); an address between its
     * symbols stays hex; callers stay intact; a truncated stack gets a [truncated] root */
    const char *doc =
        "{\"version\":1,\"pid\":1,\"exe\":\"/m/main\",\"rate_hz\":1000,\"platform\":\"p\","
        "\"start_unix_ns\":0,\"end_unix_ns\":0,\"images\":[{\"path\":\"[vdso]\",\"base\":"
        "140737353879552,\"slide\":140737353879552,\"text\":140737353879552,\"text_size\":4096,"
        "\"symbols\":[{\"name\":\"__vdso_clock_gettime\",\"addr\":2624,\"size\":736},"
        "{\"name\":\"__vdso_time\",\"addr\":3500,\"size\":20}]}],\"threads\":[{\"fiber\":0,"
        "\"label\":\"main\"}],\"stacks\":[[140737353882200,140737353883450,4096]],"
        "\"samples\":[[0,0,0,0]],\"dropped\":0,\"truncated_stacks\":[0]}";
    ospprof_raw *r = parse(doc);
    char err[OSPPROF_ERR_MAX];
    ospprof_profile *p = ospprof_profile_build(r, "x.osp", NULL, "llvm", err, sizeof err);
    assert_non_null(p);
    assert_int_equal(p->stacks[0].n, 4);
    assert_string_equal(frame_name(p, 0, 0), "__vdso_clock_gettime"); /* 140737353882200: +2648 */
    /* +3897, between symbols: unnamed code inside a known image is that image's frame */
    assert_string_equal(frame_name(p, 0, 1), "[vdso]");
    assert_string_equal(frame_name(p, 0, 2), "0x1000");
    assert_string_equal(frame_name(p, 0, 3), "[truncated]");
    ospprof_profile_free(p);
    ospprof_raw_free(r);
}

/* ---- LLVM against the fixture ------------------------------------------------------- */

static int marker_line(const char *marker) {
    FILE *f = fopen(FIXTURE_SRC, "r");
    assert_non_null(f);
    char line[512];
    int n = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        if (strstr(line, marker)) found = n;
    }
    fclose(f);
    if (!found) fail_msg("marker %s not found", marker);
    return found;
}

static char *run_fixture(const char *dir) {
    char path[4200], cmd[8600];
    snprintf(path, sizeof path, "%s/fixture.osprof.json", dir);
    snprintf(cmd, sizeof cmd, "'%s' '%s'", FIXTURE_BIN, path);
    assert_int_equal(system(cmd), 0);
    return tu_slurp(path, NULL);
}

/* Replace every occurrence of `from` by `to`. */
static char *replace_all(const char *s, const char *from, const char *to) {
    ospprof_buf b = {0};
    size_t fl = strlen(from);
    const char *at;
    while ((at = strstr(s, from))) {
        ospprof_buf_put(&b, s, (size_t)(at - s));
        ospprof_buf_puts(&b, to);
        s = at + fl;
    }
    ospprof_buf_puts(&b, s);
    return b.p;
}

static ospprof_profile *build_text(const char *text, const char *binary, const char *mode) {
    ospprof_raw *r = parse(text);
    char err[OSPPROF_ERR_MAX];
    ospprof_profile *p = ospprof_profile_build(r, "fixture.c", binary, mode, err, sizeof err);
    ospprof_raw_free(r);
    assert_non_null(p);
    return p;
}

static void expect_fixture_chain(const ospprof_profile *p) {
    static const char *const names[] = {"fixture_capture", "leaf3", "mid2", "top1",
                                        "fixture_outer",   "main"};
    int lines[] = {0,
                   marker_line("MARK:LEAF3"),
                   marker_line("MARK:MID2"),
                   marker_line("MARK:TOP1"),
                   marker_line("MARK:OUTER"),
                   marker_line("MARK:MAINCALL")};
    const ospprof_stackinfo *si = &p->stacks[0];
    if (si->n < 6) fail_msg("stack 0 has %zu frames", si->n);
    for (size_t j = 0; j < 6; j++) {
        const ospprof_frame *f = &p->frames[p->stack_frames[si->off + j]];
        const char *name = p->strs.str[f->name], *file = p->strs.str[f->file];
        if (strcmp(name, names[j]) != 0)
            fail_msg("frame %zu is %s, expected %s", j, name, names[j]);
        const char *slash = strrchr(file, '/');
        assert_non_null(slash);
        assert_string_equal(slash + 1, "symbolize_fixture.c");
        assert_true(file[0] == '/'); /* absolute, as in the debug info */
        if (j > 0 && (int)f->line != lines[j])
            fail_msg("frame %zu (%s) at line %u, expected %d", j, name, f->line, lines[j]);
    }
}

static void test_fixture_inline_chain(void **st) {
    (void)st;
    char *dir = tu_tmpdir();
    char *text = run_fixture(dir);
    assert_non_null(text);
    ospprof_profile *p = build_text(text, NULL, "llvm");
    expect_fixture_chain(p);
    /* root-to-leaf order in speedscope: main, fixture_outer, top1, mid2, leaf3, capture */
    char path[4300], err[OSPPROF_ERR_MAX];
    snprintf(path, sizeof path, "%s/x.folded", dir);
    assert_int_equal(ospprof_write_folded(p, path, err, sizeof err), 0);
    char *folded = tu_slurp(path, NULL);
    assert_non_null(strstr(folded, "main;main;fixture_outer;top1;mid2;leaf3;fixture_capture 1\n"));
    free(folded);
    /* the dynamic loader and libc come out named from their symbol tables */
    assert_string_equal(frame_name(p, 1, 0), "__tls_get_addr");
    const char *gp = frame_name(p, 2, 0);
    if (!strstr(gp, "getpid")) fail_msg("libc frame named %s", gp);

    /* names only (what `--diff` builds): the same names in the same stacks (the inline
     * chain, symbol-table names and image frames included), with no file or line */
    ospprof_raw *r = parse(text);
    ospprof_profile *q = ospprof_profile_build_names(r, "llvm");
    ospprof_raw_free(r);
    assert_non_null(q);
    assert_int_equal(q->nstacks, p->nstacks);
    for (size_t k = 0; k < p->nstacks; k++) {
        assert_int_equal(q->stacks[k].n, p->stacks[k].n);
        for (size_t j = 0; j < p->stacks[k].n; j++) {
            assert_string_equal(frame_name(q, k, j), frame_name(p, k, j));
            const ospprof_frame *f = &q->frames[q->stack_frames[q->stacks[k].off + j]];
            const char *file = q->strs.str[f->file];
            /* an image frame keeps its image path as its file; a named frame has none */
            if (frame_name(q, k, j)[0] != '[') assert_string_equal(file, "");
            if (frame_name(q, k, j)[0] != '[') assert_int_equal(f->line, 0);
        }
    }
    ospprof_profile_free(q);
    ospprof_profile_free(p);

    /* OSPREY_PROFILE_SYMBOLIZER=none: every frame is hex */
    p = build_text(text, NULL, "none");
    for (size_t k = 0; k < p->nstacks; k++)
        for (size_t j = 0; j < p->stacks[k].n; j++)
            assert_memory_equal(frame_name(p, k, j), "0x", 2);
    ospprof_profile_free(p);
    free(text);
    tu_rmtree(dir);
    free(dir);
}

static void test_fixture_moved_and_build_id(void **st) {
    (void)st;
    char *dir = tu_tmpdir();
    char *text = run_fixture(dir);
    char real[4096];
    assert_non_null(realpath(FIXTURE_BIN, real));

    /* the main image moved: its image frame and one warning suggesting --binary, unless the
     * given binary substitutes for it */
    char *moved = replace_all(text, real, "/nonexistent/moved/fixture");
    ospprof_profile *p = build_text(moved, NULL, "llvm");
    assert_string_equal(frame_name(p, 0, 0), "[fixture]");
    assert_int_equal(p->nwarnings, 1);
    assert_string_equal(p->warnings[0], "cannot read '/nonexistent/moved/fixture': No such file or "
                                        "directory; its frames are unnamed (pass --binary)");
    ospprof_profile_free(p);
    p = build_text(moved, FIXTURE_BIN, "llvm");
    expect_fixture_chain(p);
    assert_int_equal(p->nwarnings, 0);
    ospprof_profile_free(p);

    /* a substitute that cannot be used says so once and names nothing: another
     * architecture, or (without a build-id) an executable range of another size */
    char *arm = replace_all(moved, "\"arch\":\"x86_64\"", "\"arch\":\"arm64\"");
    p = build_text(arm, FIXTURE_BIN, "llvm");
    assert_string_equal(frame_name(p, 0, 0), "[fixture]");
    assert_int_equal(p->nwarnings, 1);
    if (!strstr(p->warnings[0], "built for x86_64, but the profile was recorded on arm64"))
        fail_msg("warning: %s", p->warnings[0]);
    ospprof_profile_free(p);
    free(arm);
    const char *ts = strstr(moved, "/nonexistent/moved/fixture\"");
    assert_non_null(ts);
    ts = strstr(ts, "\"text_size\":");
    assert_non_null(ts);
    unsigned long long size = strtoull(ts + 12, NULL, 10);
    char from_ts[64], to_ts[64];
    snprintf(from_ts, sizeof from_ts, "\"text_size\":%llu,", size);
    snprintf(to_ts, sizeof to_ts, "\"text_size\":%llu,", size + 4096);
    char *rebuilt = replace_all(moved, from_ts, to_ts);
    p = build_text(rebuilt, FIXTURE_BIN, "llvm");
    assert_string_equal(frame_name(p, 0, 0), "[fixture]");
    assert_int_equal(p->nwarnings, 1);
    if (!strstr(p->warnings[0], "its executable range is")) fail_msg("warning: %s", p->warnings[0]);
    ospprof_profile_free(p);
    free(rebuilt);
    free(moved);

    /* a moved image that is not the main executable is never substituted; it warns once
     * (without suggesting --binary) */
    char *libc_moved = replace_all(text, "libc.so.6", "libc-gone.so.6");
    p = build_text(libc_moved, FIXTURE_BIN, "llvm");
    assert_string_equal(frame_name(p, 2, 0), "[libc-gone.so.6]");
    assert_int_equal(p->nwarnings, 1);
    if (!strstr(p->warnings[0], "libc-gone.so.6': No such file or directory; its frames are "
                                "unnamed") ||
        strstr(p->warnings[0], "--binary"))
        fail_msg("warning: %s", p->warnings[0]);
    ospprof_profile_free(p);
    free(libc_moved);

    /* build ids: a mismatch names nothing (image frames) and warns once, a match resolves */
    char *id = ospprof_llvm_build_id(FIXTURE_BIN);
    assert_non_null(id);
    char from[4200], to[4400];
    snprintf(from, sizeof from, "{\"path\":\"%s\",", real);
    snprintf(to, sizeof to, "{\"path\":\"%s\",\"build_id\":\"00112233\",", real);
    char *bad = replace_all(text, from, to);
    p = build_text(bad, NULL, "llvm");
    assert_string_equal(frame_name(p, 0, 0), "[symbolize_fixture.exe]");
    assert_int_equal(p->nwarnings, 1);
    if (!strstr(p->warnings[0], "does not match the profile's 00112233"))
        fail_msg("warning: %s", p->warnings[0]);
    ospprof_profile_free(p);
    free(bad);
    snprintf(to, sizeof to, "{\"path\":\"%s\",\"build_id\":\"%s\",", real, id);
    char *good = replace_all(text, from, to);
    p = build_text(good, NULL, "llvm");
    expect_fixture_chain(p);
    ospprof_profile_free(p);
    free(good);
    free(id);
    free(text);
    tu_rmtree(dir);
    free(dir);
}

/* ---- line 0 --------------------------------------------------------------------------- */

/* The line of `sym` + `off` in the line-0 fixture, and its innermost frame's name. */
static uint32_t line0_line(ospprof_llvm *s, void *so, const char *sym, uint64_t off, char *name,
                           size_t cap) {
    void *a = dlsym(so, sym);
    assert_non_null(a);
    Dl_info info;
    assert_true(dladdr(a, &info) != 0);
    uint64_t rel = (uint64_t)((uintptr_t)a - (uintptr_t)info.dli_fbase) + off;
    ospprof_symframe *f = NULL;
    int n = ospprof_llvm_symbolize(s, LINE0_SO, rel, &f);
    assert_int_equal(n, 1);
    snprintf(name, cap, "%s", f[0].name ? f[0].name : "");
    uint32_t line = f[0].line;
    ospprof_symframes_free(f, n);
    return line;
}

/* An address on DWARF line 0 (code the compiler made or merged: at -O2 most Osprey
 * functions have some) takes the line of the code before it in the same function, as
 * llvm-symbolizer --skip-line-zero does; it used to keep line 0, so its samples' attributed
 * line (§(l.6)) was the caller's call line. Line 0 at a function's start stays 0: the code
 * before it is another function's. */
static void test_line_zero_takes_the_line_before(void **st) {
    (void)st;
    void *so = dlopen(LINE0_SO, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(so);
    ospprof_llvm *s = ospprof_llvm_new();
    assert_non_null(s);
    char name[64];
    static const struct {
        const char *sym;
        uint64_t off;
        uint32_t line;
    } cases[] = {{"line0_func", 0, 10}, {"line0_func", 3, 10}, {"line0_func", 4, 10},
                 {"line0_func", 7, 10}, {"line0_func", 8, 12}, {"line0_func", 9, 12},
                 {"line0_first", 0, 0}, {"line0_first", 3, 0}, {"line0_first", 4, 20}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t line = line0_line(s, so, cases[i].sym, cases[i].off, name, sizeof name);
        print_message("%s+%llu: %s line %u\n", cases[i].sym, (unsigned long long)cases[i].off, name,
                      line);
        assert_string_equal(name, cases[i].sym);
        assert_int_equal(line, cases[i].line);
    }
    ospprof_llvm_free(s);
    dlclose(so);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_for),
        cmocka_unit_test(test_return_addresses_and_slide),
        cmocka_unit_test(test_symbols_table_and_truncation),
        cmocka_unit_test(test_fixture_inline_chain),
        cmocka_unit_test(test_fixture_moved_and_build_id),
        cmocka_unit_test(test_line_zero_takes_the_line_before),
    };
    return cmocka_run_group_tests_name("postprocess_symbolize", tests, NULL, NULL);
}
