/*
 * test_exports.c — the profile model (§(g.1)), the four exports (§(g.2)–(g.5)) and the
 * terminal report (§(h)) against golden files: the running example of docs/spec/profiler.md §(e)
 * (its expected outputs are printed in the spec), an empty and a single-sample profile,
 * sanitising and escaping, and the report with and without colour.
 *
 * Symbolization is replaced by a table resolver so the goldens do not depend on any
 * object file; the mapping in front of it (image choice, −1 on return addresses, slide)
 * is the real one.
 */
#include "testutil.h"

#include <pty.h>

/* rel address → frames (innermost first) for the running example's /w/demo */
typedef struct fake {
    uint64_t rel;
    const char *name[3], *file[3];
    uint32_t line[3];
    int n;
} fake;

static const fake demo_table[] = {
    {4400, {"crunch"}, {"/w/demo.osp"}, {7}, 1},
    {4418, {"crunch"}, {"/w/demo.osp"}, {8}, 1},
    {4516, {"main"}, {"/w/demo.osp"}, {12}, 1}, /* 93824992235941 − 1 − slide */
    {8208, {"osp_sleep_ms"}, {"/opt/osprey/runtime/core/sleep.c"}, {31}, 1},
    {4703, {"nap"}, {"/w/demo.osp"}, {20}, 1},
    {0, {NULL}, {NULL}, {0}, 0},
};

static char *dupz(const char *s) {
    return s ? strdup(s) : NULL;
}

static int table_resolver(void *ctx, const ospprof_image *im, uint64_t rel,
                          ospprof_symframe **out) {
    const fake *t = ctx;
    for (; t->n; t++) {
        if (t->rel != rel) continue;
        ospprof_symframe *f = calloc((size_t)t->n, sizeof *f);
        for (int i = 0; i < t->n; i++) {
            f[i].name = dupz(t->name[i]);
            f[i].file = dupz(t->file[i]);
            f[i].line = t->line[i];
        }
        *out = f;
        return t->n;
    }
    (void)im;
    return 0;
}

typedef struct run {
    char *dir;
    char prefix[4200];
} run;

/* Load raw text, build with the table, write the four exports under a fresh dir. */
static ospprof_profile *build(const char *raw_text, const fake *table, const char *program,
                              run *r) {
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *raw = ospprof_raw_parse("raw.json", raw_text, strlen(raw_text), err, sizeof err);
    if (!raw) fail_msg("%s", err);
    ospprof_profile *p =
        ospprof_profile_build_ex(raw, program, NULL, NULL, table_resolver, (void *)table);
    ospprof_raw_free(raw);
    assert_non_null(p);
    r->dir = tu_tmpdir();
    snprintf(r->prefix, sizeof r->prefix, "%s/out", r->dir);
    if (ospprof_write_exports(p, r->prefix, err, sizeof err) != 0) fail_msg("%s", err);
    return p;
}

static void expect_golden(run *r, const char *ext, const char *golden) {
    char path[4300], gpath[4300];
    snprintf(path, sizeof path, "%s%s", r->prefix, ext);
    snprintf(gpath, sizeof gpath, "%s/%s", GOLDEN_DIR, golden);
    char *got = tu_slurp(path, NULL);
    assert_non_null(got);
    if (getenv("OSPPROF_UPDATE_GOLDEN")) tu_write(gpath, got); /* then review the diff */
    char *want = tu_slurp(gpath, NULL);
    assert_non_null(want);
    if (strcmp(got, want) != 0)
        fail_msg("%s differs from %s\n got: %s\nwant: %s", path, gpath, got, want);
    free(got);
    free(want);
}

static char *report_text(const ospprof_profile *p, const char *prefix, bool color) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_int_equal(ospprof_report(p, prefix, color, f), 0);
    fclose(f);
    return buf;
}

static void test_running_example(void **st) {
    (void)st;
    char *raw = tu_slurp(GOLDEN_DIR "/demo.raw.json", NULL);
    assert_non_null(raw);
    run r;
    ospprof_profile *p = build(raw, demo_table, "demo.osp", &r);
    expect_golden(&r, ".speedscope.json", "demo.speedscope.json");
    expect_golden(&r, ".cpuprofile", "demo.cpuprofile");
    expect_golden(&r, ".folded", "demo.folded");
    expect_golden(&r, ".profile.json", "demo.profile.json");
    /* report, colour off: the low-confidence note of §(h) for 3 on-CPU samples */
    char *rep = report_text(p, "demo", false);
    if (getenv("OSPPROF_UPDATE_GOLDEN")) tu_write(GOLDEN_DIR "/demo.report.txt", rep);
    char *want = tu_slurp(GOLDEN_DIR "/demo.report.txt", NULL);
    assert_non_null(want);
    assert_string_equal(rep, want);
    assert_null(strchr(rep, '\x1b'));
    assert_non_null(strstr(rep, "note: only 3 on-CPU samples — percentages are uncertain by about "
                                "±57.7%; run longer or raise OSPREY_PROFILE_HZ\n"));
    free(want);
    free(rep);
    /* colour on: crunch (100 %) bold red, main (0.0 %) dim, the bar never coloured */
    rep = report_text(p, "demo", true);
    if (getenv("OSPPROF_UPDATE_GOLDEN")) tu_write(GOLDEN_DIR "/demo.report.color.txt", rep);
    want = tu_slurp(GOLDEN_DIR "/demo.report.color.txt", NULL);
    assert_non_null(want);
    assert_string_equal(rep, want);
    assert_non_null(strstr(
        rep, "██████\x1b[1;31m 100.0%  100.0%    0.00s    0.00s  crunch  demo.osp:7\x1b[0m\n"));
    assert_non_null(strstr(rep, "\x1b[2m   0.0%  100.0%"));
    free(want);
    free(rep);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
    free(raw);
}

#define EMPTY_RAW                                                                                  \
    "{\"version\":1,\"pid\":1,\"exe\":\"/w/empty\",\"rate_hz\":997,\"platform\":\"linux-x86_64\"," \
    "\"start_unix_ns\":1000,\"end_unix_ns\":2501000,\"images\":[],\"threads\":[{\"fiber\":0,"      \
    "\"label\":\"main\"}],\"stacks\":[],\"samples\":[],\"dropped\":4}"

/* "profiler_cpu_ns" (the profiler's own CPU that no sample carries) is shown beside the
 * program's CPU in the report's header, never added to it; absent or 0: not shown. */
static void test_report_profiler_cpu(void **st) {
    (void)st;
    char doc[sizeof EMPTY_RAW + 64];
    snprintf(doc, sizeof doc, "%.*s,\"profiler_cpu_ns\":4600000}", (int)strlen(EMPTY_RAW) - 1,
             EMPTY_RAW);
    run r;
    ospprof_profile *p = build(doc, demo_table, "/w/empty.osp", &r);
    char *rep = report_text(p, "empty", false);
    assert_non_null(strstr(
        rep,
        "empty.osp · 0.00s wall · 0.00s CPU (+0.005s profiler) · 0 samples @ 997Hz · 0 fibers\n"));
    free(rep);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
}

static void test_empty_profile(void **st) {
    (void)st;
    run r;
    ospprof_profile *p = build(EMPTY_RAW, demo_table, "/w/empty.osp", &r);
    expect_golden(&r, ".speedscope.json", "empty.speedscope.json");
    expect_golden(&r, ".cpuprofile", "empty.cpuprofile");
    expect_golden(&r, ".folded", "empty.folded");
    expect_golden(&r, ".profile.json", "empty.profile.json");
    char *rep = report_text(p, "empty", false);
    assert_non_null(
        strstr(rep, "empty.osp · 0.00s wall · 0.00s CPU · 0 samples @ 997Hz · 0 fibers\n"));
    assert_non_null(
        strstr(rep, "note: only 0 on-CPU samples — percentages are uncertain by about ±100.0%"));
    free(rep);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
}

/* One on-CPU sample whose only address resolves to a two-level inline chain. */
#define SINGLE_RAW                                                                               \
    "{\"version\":1,\"pid\":1,\"exe\":\"/w/one\",\"rate_hz\":100,\"platform\":\"linux-x86_64\"," \
    "\"start_unix_ns\":0,\"end_unix_ns\":0,\"images\":[{\"path\":\"/w/one\",\"base\":65536,"     \
    "\"slide\":65536,\"text\":69632,\"text_size\":4096}],\"threads\":[{\"fiber\":0,\"label\":"   \
    "\"main\"}],\"stacks\":[[69700]],\"samples\":[[1500,0,0,0]],\"dropped\":0,"                  \
    "\"sample_weights_ns\":[1234567]}"

static const fake single_table[] = {
    {4164, {"inner", "outer"}, {"/w/one.osp", "/w/one.osp"}, {9, 3}, 2},
    {0, {NULL}, {NULL}, {0}, 0},
};

static void test_single_sample(void **st) {
    (void)st;
    run r;
    ospprof_profile *p = build(SINGLE_RAW, single_table, "one.osp", &r);
    expect_golden(&r, ".speedscope.json", "one.speedscope.json");
    expect_golden(&r, ".cpuprofile", "one.cpuprofile");
    expect_golden(&r, ".folded", "one.folded");
    expect_golden(&r, ".profile.json", "one.profile.json");
    char *rep = report_text(p, "one", false);
    assert_non_null(
        strstr(rep, "note: only 1 on-CPU sample — percentages are uncertain by about ±100.0%"));
    /* a full-width bar: 48 eighths = six full cells */
    assert_non_null(strstr(rep, "██████ 100.0%  100.0%    0.00s    0.00s  inner  one.osp:9\n"));
    free(rep);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
}

/* Names that need sanitising and escaping; hex frames; truncated root; effect label. */
#define ODD_RAW                                                                                   \
    "{\"version\":1,\"pid\":1,\"exe\":\"/w/odd\",\"rate_hz\":1000,\"platform\":\"linux-x86_64\"," \
    "\"start_unix_ns\":0,\"end_unix_ns\":0,\"images\":[{\"path\":\"/w/odd\",\"base\":4096,"       \
    "\"slide\":0,\"text\":4096,\"text_size\":4096}],\"threads\":[{\"fiber\":-1,\"label\":"        \
    "\"eff;ect x\"},{\"fiber\":3,\"label\":\"fiber\"}],\"stacks\":[[4100,4200,999999],[4100]],"   \
    "\"samples\":[[5,0,0,0],[6,1,1,0],[7,0,0,1]],\"dropped\":0,\"truncated_stacks\":[0]}"

static const fake odd_table[] = {
    {4100, {"a b;c\x01\xff\xc3\xa9"}, {"/w/Q.OSPML"}, {2}, 1},
    {4199, {""}, {"/w/x.c"}, {0}, 1}, /* empty name → hex */
    {0, {NULL}, {NULL}, {0}, 0},
};

static void test_sanitising(void **st) {
    (void)st;
    run r;
    ospprof_profile *p = build(ODD_RAW, odd_table, "odd.osp", &r);
    char path[4300];
    snprintf(path, sizeof path, "%s.folded", r.prefix);
    char *folded = tu_slurp(path, NULL);
    /* fiber label cut of row 0 is "eff;ect x-0" → "eff_ect_x-0"; invalid byte → U+FFFD; the
     * unnamed address inside /w/odd is the image frame [odd], the one in no image stays hex;
     * the waiting sample of row 0 is not in the folded file (§(l.6)) */
    assert_string_equal(folded,
                        "eff_ect_x-0;[truncated];0xf423f;[odd];a_b_c_\xef\xbf\xbd\xc3\xa9 1\n"
                        "fiber-3;a_b_c_\xef\xbf\xbd\xc3\xa9 1\n");
    free(folded);
    snprintf(path, sizeof path, "%s.speedscope.json", r.prefix);
    char *ss = tu_slurp(path, NULL);
    assert_non_null(strstr(ss, "\"name\":\"a b;c\\u0001\xef\xbf\xbd\xc3\xa9\""));
    assert_non_null(strstr(ss, "{\"file\":\"\",\"line\":0,\"name\":\"[truncated]\"}"));
    assert_non_null(strstr(ss, "\"name\":\"eff;ect x-0\""));
    free(ss);
    snprintf(path, sizeof path, "%s.profile.json", r.prefix);
    char *sum = tu_slurp(path, NULL);
    /* .OSPML in any case is user code */
    assert_non_null(strstr(sum, "\"file\":\"/w/Q.OSPML\",\"kind\":\"user\",\"line\":2"));
    free(sum);
    char *rep = report_text(p, "odd", false);
    assert_non_null(strstr(rep, "  a b;c?\xef\xbf\xbd\xc3\xa9  Q.OSPML:2\n"));
    assert_non_null(strstr(rep, "fibers: eff;ect x-0 50% on-cpu · fiber-3 100% on-cpu\n"));
    free(rep);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
}

static void test_json_numbers(void **st) {
    (void)st;
    ospprof_buf b = {0};
    uint64_t ns[] = {1,         10,         1000000,    1234567,
                     999999999, 1000000000, 1500000000, 123456789012345ull};
    const char *want[] = {"1e-09",       "1e-08", "0.001", "0.001234567",
                          "0.999999999", "1",     "1.5",   "123456.789012345"};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        b.n = 0;
        ospprof_json_seconds(&b, ns[i]);
        assert_string_equal(b.p, want[i]);
        /* the fast path agrees with the general shortest round-trip search */
        ospprof_buf g = {0};
        ospprof_json_double(&g, (double)ns[i] / 1e9);
        assert_string_equal(b.p, g.p);
        ospprof_buf_free(&g);
    }
    b.n = 0;
    ospprof_json_double(&b, 0.1 + 0.2);
    assert_string_equal(b.p, "0.30000000000000004");
    b.n = 0;
    ospprof_json_str(&b, "q\"\\\n\x7f\xc2\x85\xed\xa0\x80ok");
    assert_string_equal(b.p,
                        "\"q\\\"\\\\\\u000a\\u007f\\u0085\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdok\"");
    ospprof_buf_free(&b);
}

static void test_atomic_write(void **st) {
    (void)st;
    char *raw = tu_slurp(GOLDEN_DIR "/demo.raw.json", NULL);
    run r;
    ospprof_profile *p = build(raw, demo_table, "demo.osp", &r);
    char err[OSPPROF_ERR_MAX];
    /* an unwritable target leaves the good file in place and no temporary behind */
    char path[4300];
    snprintf(path, sizeof path, "%s/missing-dir/x.folded", r.dir);
    assert_int_equal(ospprof_write_folded(p, path, err, sizeof err), -1);
    char want[4400];
    snprintf(want, sizeof want, "cannot write %s: No such file or directory", path);
    assert_string_equal(err, want);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 5", r.dir);
    assert_int_equal(system(cmd), 0);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
    free(raw);
}

/* ---- the report example of docs/spec/profiler.md §(h), reproduced exactly ------------------------- */

static const fake spec_table[] = {
    {0x100, {"fib"}, {"/w/demo.osp"}, {3}, 1},
    {0x11f, {"fib"}, {"/w/demo.osp"}, {5}, 1}, /* fib calling step */
    {0x200, {"step"}, {"/w/demo.osp"}, {9}, 1},
    {0x300, {"osp_gc_alloc"}, {"/opt/osprey/runtime/core/alloc.c"}, {41}, 1},
    {0x3ff, {"main"}, {"/w/demo.osp"}, {14}, 1},
    {0x410, {"main"}, {"/w/demo.osp"}, {14}, 1},
    {0, {NULL}, {NULL}, {0}, 0},
};

/* Append `n` samples on `stack` of `row` whose weights sum to exactly `total` ns. */
static void spec_samples(ospprof_buf *s, ospprof_buf *w, uint64_t *t, int row, int stack, int state,
                         int n, uint64_t total) {
    for (int i = 0; i < n; i++) {
        uint64_t wi = total / (uint64_t)n + (i == 0 ? total % (uint64_t)n : 0);
        ospprof_buf_printf(s, "%s[%llu,%d,%d,%d]", s->n > 1 ? "," : "", (unsigned long long)*t, row,
                           stack, state);
        ospprof_buf_printf(w, "%s%llu", w->n > 1 ? "," : "", (unsigned long long)wi);
        *t += 400000;
    }
}

static void test_spec_report_example(void **st) {
    (void)st;
    /* 3.10 s of on-CPU weight: fib 2.17 s self (+ step 0.62 s below it), osp_gc_alloc 0.28 s,
     * main 0.03 s; 5556 samples: main 2910/3000 on-CPU, fiber-1 1980/2000, fiber-2 waiting */
    ospprof_buf s = {0}, w = {0}, doc = {0};
    ospprof_buf_putc(&s, '[');
    ospprof_buf_putc(&w, '[');
    uint64_t t = 0;
    spec_samples(&s, &w, &t, 0, 0, 0, 2000, 1400000000); /* fib ← main */
    spec_samples(&s, &w, &t, 0, 2, 0, 460, 280000000);   /* osp_gc_alloc ← main */
    spec_samples(&s, &w, &t, 0, 3, 0, 50, 30000000);     /* main */
    spec_samples(&s, &w, &t, 0, 0, 0, 400, 770000000);   /* fib ← main */
    spec_samples(&s, &w, &t, 0, 3, 1, 90, 90000000);     /* main, waiting */
    spec_samples(&s, &w, &t, 1, 1, 0, 980, 620000000);   /* step ← fib ← main */
    spec_samples(&s, &w, &t, 1, 0, 0, 1000, 0);          /* zero-weight on-CPU samples */
    spec_samples(&s, &w, &t, 1, 1, 1, 20, 20000000);
    spec_samples(&s, &w, &t, 2, 3, 1, 556, 500000000);
    ospprof_buf_putc(&s, ']');
    ospprof_buf_putc(&w, ']');
    ospprof_buf_printf(
        &doc,
        "{\"version\":1,\"pid\":1,\"exe\":\"/w/"
        "demo\",\"rate_hz\":997,\"platform\":\"linux-x86_64\","
        "\"start_unix_ns\":1000000000,\"end_unix_ns\":3400000000,\"images\":[{\"path\":\"/w/demo\","
        "\"base\":65536,\"slide\":65536,\"text\":65536,\"text_size\":4096}],\"threads\":["
        "{\"fiber\":0,\"label\":\"main\"},{\"fiber\":1,\"label\":\"fiber\"},{\"fiber\":2,\"label\":"
        "\"fiber\"}],"
        "\"stacks\":[[65792,66560],[66048,65824,66560],[66304,66560],[66576]],\"samples\":%s,"
        "\"dropped\":0,\"sample_weights_ns\":%s}",
        s.p, w.p);
    run r;
    ospprof_profile *p = build(doc.p, spec_table, "demo.osp", &r);
    char *rep = report_text(p, "demo", false);
    /* docs/spec/profiler.md §(h)'s example plus §(l.7): the hot lines (fib:3; step's line 9 for
     * step ← fib; main:14 for osp_gc_alloc ← main and main itself) and the five files */
    if (getenv("OSPPROF_UPDATE_GOLDEN")) tu_write(GOLDEN_DIR "/spec.report.txt", rep);
    char *want = tu_slurp(GOLDEN_DIR "/spec.report.txt", NULL);
    assert_non_null(want);
    assert_string_equal(rep, want);
    free(rep);
    /* with colour: the first three rows bold red, main yellow; bars uncoloured */
    rep = report_text(p, "demo", true);
    assert_non_null(
        strstr(rep, "████▎ \x1b[1;31m  70.0%   90.0%    2.17s    2.79s  fib  demo.osp:3\x1b[0m\n"));
    assert_non_null(strstr(rep, "█▎    \x1b[1;31m  20.0%"));
    assert_non_null(strstr(rep, "▌     \x1b[1;31m   9.0%"));
    assert_non_null(
        strstr(rep, "      \x1b[33m   1.0%  100.0%    0.03s    3.10s  main  demo.osp:14\x1b[0m\n"));
    free(rep);
    free(want);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
    ospprof_buf_free(&s);
    ospprof_buf_free(&w);
    ospprof_buf_free(&doc);
}

static void test_report_bars(void **st) {
    (void)st;
    /* eighths: floor(share × 48 + 0.5), capped at 48, padded to six cells */
    static const struct {
        uint64_t self, rest;
        const char *bar;
    } cases[] = {
        {1, 0, "██████"},  {1, 1, "███   "},  {1, 47, "▏     "},  {1, 200, "      "},
        {6, 42, "▊     "}, {7, 41, "▉     "}, {15, 33, "█▉    "}, {47, 1, "█████▉"},
        {3, 45, "▍     "}, {5, 43, "▋     "}, {2, 46, "▎     "},  {4, 44, "▌     "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char doc[1024];
        snprintf(
            doc, sizeof doc,
            "{\"version\":1,\"pid\":1,\"exe\":\"/w/b\",\"rate_hz\":10,\"platform\":\"p\","
            "\"start_unix_ns\":0,\"end_unix_ns\":0,\"images\":[{\"path\":\"/w/b\",\"base\":65536,"
            "\"slide\":65536,\"text\":65536,\"text_size\":4096}],\"threads\":[{\"fiber\":0,"
            "\"label\":\"main\"}],\"stacks\":[[65792],[66048]],\"samples\":[[0,0,0,0],[1,0,1,0]],"
            "\"dropped\":0,\"sample_weights_ns\":[%llu,%llu]}",
            (unsigned long long)cases[i].self, (unsigned long long)cases[i].rest);
        run r;
        ospprof_profile *p = build(doc, spec_table, "b.osp", &r);
        char *rep = report_text(p, "b", false);
        char line[256];
        snprintf(line, sizeof line, "\n%s", cases[i].bar);
        /* the fib row (self = cases[i].self) carries the bar */
        char *row = strstr(rep, "  fib  demo.osp:3\n");
        if (!row) fail_msg("no fib row in:\n%s", rep);
        char *start = row;
        while (start > rep && start[-1] != '\n') start--;
        if (strncmp(start, cases[i].bar, strlen(cases[i].bar)) != 0)
            fail_msg("case %zu: row %.*s", i, (int)(row - start + 17), start);
        free(rep);
        ospprof_profile_free(p);
        tu_rmtree(r.dir);
        free(r.dir);
    }
}

static void test_color_decision(void **st) {
    (void)st;
    /* colour only on a terminal, and only when NO_COLOR is unset or empty (§(h).5) */
    int master, slave;
    assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
    FILE *tty = fdopen(slave, "w");
    assert_non_null(tty);
    char *mem = NULL;
    size_t n = 0;
    FILE *pipe_like = open_memstream(&mem, &n);
    unsetenv("NO_COLOR");
    assert_true(ospprof_color_wanted(tty));
    assert_false(ospprof_color_wanted(pipe_like));
    setenv("NO_COLOR", "", 1);
    assert_true(ospprof_color_wanted(tty));
    setenv("NO_COLOR", "1", 1);
    assert_false(ospprof_color_wanted(tty));
    unsetenv("NO_COLOR");
    fclose(pipe_like);
    free(mem);
    fclose(tty);
    close(master);
}

/* <stem>.svg (docs/spec/profiler.md §(l.6)): self-contained, the title, the editor's colours
 * (the values below come from the §(j) formula computed independently), frames under 0.1 %
 * not drawn, and the UTF-16 order the colour ranks use. */
static void test_svg(void **st) {
    (void)st;
    char *raw = tu_slurp(GOLDEN_DIR "/demo.raw.json", NULL);
    run r;
    ospprof_profile *p = build(raw, demo_table, "demo.osp", &r);
    char(*colors)[8] = calloc(p->nframes, sizeof *colors);
    ospprof_frame_colors(p, colors);
    static const char *const want[][2] = {{"crunch", "#9db866"},
                                          {"main", "#4bb997"},
                                          {"osp_sleep_ms", "#8792a1"},
                                          {"nap", "#726fb9"}};
    assert_int_equal(p->nframes, 4);
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(p->strs.str[p->frames[i].name], want[i][0]);
        assert_string_equal(colors[i], want[i][1]);
    }
    free(colors);
    char path[4300];
    snprintf(path, sizeof path, "%s.svg", r.prefix);
    char *svg = tu_slurp(path, NULL);
    assert_non_null(svg);
    assert_non_null(strstr(svg, "<title>demo.osp · 0.00s CPU · 3 samples</title>"));
    /* on-CPU only: crunch and main are drawn (user colours), the waiting nap is not */
    assert_non_null(strstr(svg, "fill=\"#9db866\""));
    assert_non_null(strstr(svg, "fill=\"#4bb997\""));
    assert_null(strstr(svg, "#726fb9"));
    assert_null(strstr(svg, "\"nap\""));
    /* nothing fetched: the only URIs are the two XML namespaces */
    assert_null(strstr(svg, "href"));
    assert_null(strstr(svg, "@import"));
    const char *at = svg;
    int uris = 0;
    while ((at = strstr(at, "http")) != NULL) uris++, at++;
    assert_int_equal(uris, 3); /* svg, the search box's xhtml, and the script's SVG namespace */
    free(svg);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
    free(raw);

    /* a frame under 0.1 % of the on-CPU weight is merged into its parent (not drawn) */
    const char *doc =
        "{\"version\":1,\"pid\":1,\"exe\":\"/w/demo\",\"rate_hz\":1000,\"platform\":\"p\","
        "\"start_unix_ns\":0,\"end_unix_ns\":0,\"images\":[{\"path\":\"/w/demo\",\"base\":"
        "93824992231424,\"slide\":93824992231424,\"text\":93824992231424,\"text_size\":"
        "65536}],\"threads\":[{\"fiber\":0,\"label\":\"main\"}],\"stacks\":[[93824992235824,"
        "93824992235941],[93824992235842,93824992235941]],\"samples\":[[1,0,0,0],[2,0,1,0]],"
        "\"dropped\":0,\"sample_weights_ns\":[1000000000,999999]}";
    p = build(doc, demo_table, "tiny.osp", &r);
    snprintf(path, sizeof path, "%s.svg", r.prefix);
    svg = tu_slurp(path, NULL);
    /* both stacks are crunch <- main: one crunch frame; a 999999 ns sample of 1000999999 is
     * under 0.1 %, yet it is inside the same function, so crunch stays one frame at 100 % */
    assert_non_null(strstr(svg, "[\"crunch\",\"/w/demo.osp:7\"]"));
    free(svg);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
    const char *doc2 =
        "{\"version\":1,\"pid\":1,\"exe\":\"/w/demo\",\"rate_hz\":1000,\"platform\":\"p\","
        "\"start_unix_ns\":0,\"end_unix_ns\":0,\"images\":[{\"path\":\"/w/demo\",\"base\":"
        "93824992231424,\"slide\":93824992231424,\"text\":93824992231424,\"text_size\":"
        "65536}],\"threads\":[{\"fiber\":0,\"label\":\"main\"}],\"stacks\":[[93824992235824,"
        "93824992235941],[93824992239632,93824992235941]],\"samples\":[[1,0,0,0],[2,0,1,0]],"
        "\"dropped\":0,\"sample_weights_ns\":[1000000000,999999]}";
    p = build(doc2, demo_table, "tiny.osp", &r);
    snprintf(path, sizeof path, "%s.svg", r.prefix);
    svg = tu_slurp(path, NULL);
    /* now the small sample is in osp_sleep_ms (another function): under 0.1 %, not drawn */
    assert_non_null(strstr(svg, "[\"crunch\","));
    assert_null(strstr(svg, "osp_sleep_ms"));
    free(svg);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);

    /* JavaScript's code-unit order: U+1F600 (D83D DE00) before U+FFFD, unlike UTF-8 bytes */
    assert_int_equal(ospprof_utf16_cmp("\xf0\x9f\x98\x80", "\xef\xbf\xbd"), -1);
    assert_int_equal(ospprof_utf16_cmp("ab", "abc"), -1);
    assert_int_equal(ospprof_utf16_cmp("b", "ab"), 1);
    assert_int_equal(ospprof_utf16_cmp("\xff", "\xef\xbf\xbd"), 0); /* invalid byte = U+FFFD */
}

/* The report of docs/spec/profiler.md §(l.7): hot lines with their source text (trimmed,
 * tabs as spaces), rows and hot lines cut with "…" to the terminal width, the header saying
 * the program was interrupted, control characters in printed paths shown as '?'. */
static void test_report_revision2(void **st) {
    (void)st;
    char *dir = tu_tmpdir(), src[4200];
    snprintf(src, sizeof src, "%s/demo.osp", dir);
    tu_write(src, "// demo\n\n\n\n\n\n   \tlet x = crunch(40)\t \n"
                  "   a much longer line that does not fit in a narrow terminal at all\n");
    fake table[] = {
        {4400, {"crunch"}, {src}, {7}, 1},
        {4418, {"crunch"}, {src}, {8}, 1},
        {4516, {"main"}, {src}, {12}, 1},
        {8208, {"osp_sleep_ms"}, {"/opt/osprey/runtime/core/sleep.c"}, {31}, 1},
        {4703, {"nap"}, {src}, {20}, 1},
        {0, {NULL}, {NULL}, {0}, 0},
    };
    char *raw = tu_slurp(GOLDEN_DIR "/demo.raw.json", NULL);
    run r;
    ospprof_profile *p = build(raw, table, "demo.osp", &r);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ospprof_options style = {.columns = 0, .interrupted_signal = 2};
    assert_int_equal(ospprof_report_ex(p, "out/de\x1bmo", &style, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, " · 2 fibers (interrupted by SIGINT)\n"));
    assert_non_null(strstr(buf, "\nhot lines:\n  66.7%  demo.osp:7  let x = crunch(40)\n"
                                "  33.3%  demo.osp:8  a much longer line that does not fit in a "
                                "narrow terminal at all\n"));
    assert_non_null(strstr(buf, "profile: out/de?mo.speedscope.json · out/de?mo.cpuprofile · "
                                "out/de?mo.folded · out/de?mo.profile.json · out/de?mo.svg\n"));
    assert_null(strchr(buf, '\x1b'));
    free(buf);
    /* 50 columns: 41 for the bar and numbers, 9 left for "crunch  demo.osp:7" */
    buf = NULL;
    f = open_memstream(&buf, &n);
    style = (ospprof_options){.columns = 50};
    assert_int_equal(ospprof_report_ex(p, "demo", &style, f), 0);
    fclose(f);
    if (!strstr(buf, "    0.00s    0.00s  crunch  …\n")) fail_msg("%s", buf);
    if (!strstr(buf, "  33.3%  demo.osp:8  a much longer line that does…\n")) fail_msg("%s", buf);
    free(buf);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
    free(raw);
    tu_rmtree(dir);
    free(dir);
}

/* A name of megabytes (a generated symbol, a frame read from a file) never floods the
 * report: without a terminal the FUNCTION  LOCATION part stops at OSPPROF_REPORT_MAX_CELLS
 * cells with "…"; bytes that are not UTF-8 are U+FFFD and control bytes '?' first. */
static void test_report_long_names(void **st) {
    (void)st;
    static char longname[5000];
    memset(longname, 'y', sizeof longname - 1);
    memcpy(longname, "\xff\xfe\x1b", 3);
    fake table[] = {
        {4400, {longname}, {NULL}, {0}, 1}, {4418, {longname}, {NULL}, {0}, 1},
        {4516, {"main"}, {NULL}, {0}, 1},   {8208, {"osp_sleep_ms"}, {NULL}, {0}, 1},
        {4703, {"nap"}, {NULL}, {0}, 1},    {0, {NULL}, {NULL}, {0}, 0},
    };
    char *raw = tu_slurp(GOLDEN_DIR "/demo.raw.json", NULL);
    run r;
    ospprof_profile *p = build(raw, table, "demo.osp", &r);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ospprof_options style = {.columns = 0};
    assert_int_equal(ospprof_report_ex(p, "demo", &style, f), 0);
    fclose(f);
    /* 2 × U+FFFD, '?', then y up to 399 cells, then "…" */
    char want[1200];
    int k = snprintf(want, sizeof want, "  \xEF\xBF\xBD\xEF\xBF\xBD?");
    memset(want + k, 'y', (size_t)(OSPPROF_REPORT_MAX_CELLS - 1 - 3));
    k += OSPPROF_REPORT_MAX_CELLS - 1 - 3;
    snprintf(want + k, sizeof want - (size_t)k, "…\n");
    if (!strstr(buf, want)) fail_msg("%.600s", buf);
    assert_null(strchr(buf, '\x1b'));
    assert_null(strstr(buf, "\xff"));
    assert_true(n < 4000);
    free(buf);
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
    free(raw);
}

/* The cut counts terminal cells, not code points: CJK, fullwidth forms and emoji take two,
 * combining marks none, so a cut row or hot line fills at most `room` cells and never wraps
 * (docs/spec/profiler.md §(l.7)). */
static void expect_cut(const char *text, size_t room, const char *want) {
    ospprof_buf b = {0};
    ospprof_term_cut(&b, text, strlen(text), room);
    if (b.n != strlen(want) || memcmp(b.p, want, b.n) != 0)
        fail_msg("cut of '%s' to %zu cells: '%.*s', expected '%s'", text, room, (int)b.n, b.p,
                 want);
    ospprof_buf_free(&b);
}

static void test_term_cut_wide(void **st) {
    (void)st;
    /* 7 wide characters (14 cells) and ".osp:4" (6) */
    const char *cjk = "\u8a08\u7b97\u30d7\u30ed\u30b0\u30e9\u30e0.osp:4";
    expect_cut(cjk, 20, cjk);
    expect_cut(cjk, 19, "\u8a08\u7b97\u30d7\u30ed\u30b0\u30e9\u30e0.osp\u2026");
    expect_cut(cjk, 10, "\u8a08\u7b97\u30d7\u30ed\u2026");
    expect_cut(cjk, 9, "\u8a08\u7b97\u30d7\u30ed\u2026");
    expect_cut(cjk, 8, "\u8a08\u7b97\u30d7\u2026");
    /* fullwidth letters, Hangul and an emoji are wide; an accent on e adds no cell */
    expect_cut("\uff21\uff22\uff23", 6, "\uff21\uff22\uff23");
    expect_cut("\uff21\uff22\uff23", 5, "\uff21\uff22\u2026");
    expect_cut("\ud55c\uae00 ok", 7, "\ud55c\uae00 ok");
    expect_cut("done \u2705!", 8, "done \u2705!");
    expect_cut("done \u2705!", 7, "done \u2026");
    expect_cut("cafe\u0301 latte", 10, "cafe\u0301 latte");
    expect_cut("cafe\u0301 latte", 6, "cafe\u0301 \u2026");
}

/* C++ (and Rust) linkage names are demangled by LLVM's demangler, a PLT suffix kept; plain
 * C names and names that only look mangled stay as they are (docs/spec/profiler.md §(l.6)). */
static void test_demangled_names(void **st) {
    (void)st;
    static const fake cxx_table[] = {
        {4400,
         {"_ZNSt6vectorIiSaIiEE9push_backERKi"},
         {"/usr/include/c++/12/bits/stl_vector.h"},
         {1280},
         1},
        {4516, {"_Znwm@plt"}, {NULL}, {0}, 1},
        {8208, {"_ZN4core3fmt5write17h0123456789abcdefE"}, {NULL}, {0}, 1},
        {4703, {"_Z_x_not_mangled"}, {NULL}, {0}, 1},
        {0, {NULL}, {NULL}, {0}, 0},
    };
    char *raw = tu_slurp(GOLDEN_DIR "/demo.raw.json", NULL);
    run r;
    ospprof_profile *p = build(raw, cxx_table, "demo.cc", &r);
    const char *want[] = {"std::vector<int, std::allocator<int>>::push_back(int const&)",
                          "operator new(unsigned long)@plt", "core::fmt::write::h0123456789abcdef",
                          "_Z_x_not_mangled"};
    assert_int_equal(p->nframes, 5); /* and [demo] for 4418, which the table does not name */
    for (size_t i = 0; i < 4; i++) {
        bool found = false;
        for (size_t f = 0; f < p->nframes; f++)
            if (strcmp(p->strs.str[p->frames[f].name], want[i]) == 0) found = true;
        if (!found) fail_msg("no frame %s", want[i]);
    }
    char *d = ospprof_demangle("main");
    assert_null(d);
    /* Rust's legacy mangling (rustc's default) is Itanium-shaped; its escapes are decoded and
     * the hash kept, as rustc-demangle's default form (LLVM alone left "$LT$f64$GT$"). A C++
     * name whose last element only looks like a hash, or with parameters, stays C++. */
    static const char *const rust[][2] = {
        {"_ZN1r4work14Acc$LT$f64$GT$3add17h3cc997bb3c24bfedE",
         "r::work::Acc<f64>::add::h3cc997bb3c24bfed"},
        {"_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$"
         "17h4e752abcd47eff30E",
         "core::ops::function::FnOnce::call_once{{vtable.shim}}::h4e752abcd47eff30"},
        {"_ZN102_$LT$core..iter..adapters..map..Map$LT$I$C$F$GT$$u20$as$u20$core..iter..traits.."
         "iterator..Iterator$GT$4fold17h5e530b336831bdbdE",
         "<core::iter::adapters::map::Map<I,F> as core::iter::traits::iterator::Iterator>::fold"
         "::h5e530b336831bdbd"},
        {"_ZN3std6thread9lifecycle15spawn_unchecked28_$u7b$$u7b$closure$u7d$$u7d$"
         "17hb9b616cb750b18b1E.llvm.1234",
         "std::thread::lifecycle::spawn_unchecked::{{closure}}::hb9b616cb750b18b1"},
        {"_ZN3foo3barEv", "foo::bar()"},
        {"_ZN3foo17h0123456789abcdefEv", "foo::h0123456789abcdef()"},
    };
    for (size_t i = 0; i < sizeof rust / sizeof rust[0]; i++) {
        d = ospprof_demangle(rust[i][0]);
        if (!d) fail_msg("%s not demangled", rust[i][0]);
        assert_string_equal(d, rust[i][1]);
        free(d);
    }
    ospprof_profile_free(p);
    tu_rmtree(r.dir);
    free(r.dir);
    free(raw);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_running_example),
        cmocka_unit_test(test_empty_profile),
        cmocka_unit_test(test_report_profiler_cpu),
        cmocka_unit_test(test_single_sample),
        cmocka_unit_test(test_sanitising),
        cmocka_unit_test(test_json_numbers),
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_spec_report_example),
        cmocka_unit_test(test_report_bars),
        cmocka_unit_test(test_color_decision),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_report_revision2),
        cmocka_unit_test(test_report_long_names),
        cmocka_unit_test(test_term_cut_wide),
        cmocka_unit_test(test_demangled_names),
    };
    return cmocka_run_group_tests_name("postprocess_exports", tests, NULL, NULL);
}
