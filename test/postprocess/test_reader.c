/*
 * test_reader.c — the raw reader's validation (docs/spec/profiler.md §(e)): every rejected input
 * gets its exact one-line message; accepted inputs are normalised as listed.
 */
#include "testutil.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define BASE_HEAD                                                    \
    "{\"version\":1,\"pid\":7,\"exe\":\"/x/prog\",\"rate_hz\":1000," \
    "\"platform\":\"linux-x86_64\",\"start_unix_ns\":100,\"end_unix_ns\":5000100,"
#define IMAGES                                                                   \
    "\"images\":[{\"path\":\"/x/prog\",\"base\":4096,\"slide\":0,\"text\":4096," \
    "\"text_size\":4096,\"arch\":\"x86_64\"}],"
#define THREADS "\"threads\":[{\"fiber\":0,\"label\":\"main\"},{\"fiber\":1,\"label\":\"fiber\"}],"
#define STACKS  "\"stacks\":[[4100,4200],[4300]],"
#define SAMPLES "\"samples\":[[10,0,0,0],[20,1,1,1]],"
#define TAIL    "\"dropped\":0}"
#define VALID   BASE_HEAD IMAGES THREADS STACKS SAMPLES TAIL

static ospprof_raw *parse_str(const char *s, char *err) {
    return ospprof_raw_parse("t.json", s, strlen(s), err, OSPPROF_ERR_MAX);
}

/* Parse `doc`, expect failure with exactly `msg`. */
static void expect_error(const char *doc, const char *msg) {
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = parse_str(doc, err);
    if (r) {
        ospprof_raw_free(r);
        fail_msg("accepted: %s (expected: %s)", doc, msg);
    }
    if (strcmp(err, msg) != 0) fail_msg("for %s\n got: %s\nwant: %s", doc, err, msg);
}

/* Replace the first occurrence of `from` in VALID by `to`. */
static char *variant(const char *from, const char *to) {
    const char *base = VALID;
    const char *at = strstr(base, from);
    assert_non_null(at);
    size_t n = strlen(base) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    return s;
}

static void expect_variant(const char *from, const char *to, const char *msg) {
    char *doc = variant(from, to);
    expect_error(doc, msg);
    free(doc);
}

/* "profiler_cpu_ns" (docs/spec/profiler.md §(e), additional keys): optional, 0 when
 * absent, a non-negative integer. */
static void test_profiler_cpu(void **st) {
    (void)st;
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = parse_str(VALID, err);
    assert_non_null(r);
    assert_int_equal(r->profiler_cpu_ns, 0);
    ospprof_raw_free(r);
    char *doc = variant(TAIL, "\"dropped\":0,\"profiler_cpu_ns\":123456789}");
    r = parse_str(doc, err);
    assert_non_null(r);
    assert_int_equal(r->profiler_cpu_ns, 123456789);
    ospprof_raw_free(r);
    free(doc);
    expect_variant(TAIL, "\"dropped\":0,\"profiler_cpu_ns\":-5}",
                   "t.json: key \"profiler_cpu_ns\" must be a non-negative integer");
    expect_variant(TAIL, "\"dropped\":0,\"profiler_cpu_ns\":\"1\"}",
                   "t.json: key \"profiler_cpu_ns\" must be a non-negative integer");
}

/* "dropped_reasons" (§(e), informative): its cpu_unsampled is read; a value that is not an
 * object, or members that are not non-negative integers, are passed over without an error.
 * The profile warns of CPU time the rate asked samples for and got none, when it is at
 * least 10 periods and a tenth of the CPU time. */
static void test_dropped_reasons(void **st) {
    (void)st;
    char err[OSPPROF_ERR_MAX] = "";
    static const struct {
        const char *tail;
        uint64_t unsampled;
        bool warned;
    } cases[] = {
        {"\"dropped\":0}", 0, false},
        {"\"dropped\":105,\"dropped_reasons\":{\"ring_full\":5,\"cpu_unsampled\":100}}", 100, true},
        {"\"dropped\":9,\"dropped_reasons\":{\"cpu_unsampled\":9}}", 9, false},
        {"\"dropped\":0,\"dropped_reasons\":[1,2]}", 0, false},
        {"\"dropped\":0,\"dropped_reasons\":{\"cpu_unsampled\":-3,\"x\":{\"y\":[]}}}", 0, false},
        {"\"dropped\":0,\"dropped_reasons\":{\"cpu_unsampled\":\"7\"}}", 0, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *doc = variant(TAIL, cases[i].tail);
        ospprof_raw *r = parse_str(doc, err);
        if (!r) fail_msg("rejected %s: %s", doc, err);
        assert_int_equal(r->cpu_unsampled, cases[i].unsampled);
        ospprof_profile *p = ospprof_profile_build(r, "x.osp", NULL, "none", err, sizeof err);
        assert_non_null(p);
        bool warned = false;
        for (size_t w = 0; w < p->nwarnings; w++)
            if (strstr(p->warnings[w], "of CPU time is not in this profile")) warned = true;
        if (warned != cases[i].warned) fail_msg("case %zu: warned %d", i, warned);
        if (warned)
            assert_string_equal(p->warnings[0],
                                "about 0.10s of CPU time is not in this profile (100 on-CPU "
                                "samples the rate asked for were not taken: cpu_unsampled)");
        ospprof_profile_free(p);
        ospprof_raw_free(r);
        free(doc);
    }
    expect_variant(TAIL, "\"dropped\":0,\"dropped_reasons\":{},\"dropped_reasons\":{}}",
                   "t.json: duplicate key \"dropped_reasons\"");
}

static void test_valid_document(void **st) {
    (void)st;
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = parse_str(VALID, err);
    assert_non_null(r);
    assert_int_equal(r->version, 1);
    assert_int_equal(r->pid, 7);
    assert_string_equal(r->exe, "/x/prog");
    assert_int_equal(r->rate_hz, 1000);
    assert_int_equal(r->nimages, 1);
    assert_int_equal(r->nthreads, 2);
    assert_string_equal(r->threads[1].label, "fiber");
    assert_int_equal(r->nstacks, 2);
    assert_int_equal(r->stack_off[1] - r->stack_off[0], 2);
    assert_int_equal(r->addrs[1], 4200);
    assert_int_equal(r->addrs[2], 4300);
    assert_int_equal(r->nsamples, 2);
    assert_int_equal(r->samples[1].state, 1);
    assert_int_equal(r->samples[1].stack, 1);
    assert_int_equal(r->samples[0].weight_ns, 1000000); /* floor(1e9 / 1000) */
    assert_false(r->has_weights);
    ospprof_raw_free(r);
}

static void test_unreadable(void **st) {
    (void)st;
    char err[OSPPROF_ERR_MAX];
    assert_null(ospprof_raw_load("/nonexistent/dir/raw.json", err, sizeof err));
    assert_string_equal(err, "/nonexistent/dir/raw.json: cannot read: No such file or directory");
    assert_null(ospprof_raw_load("/", err, sizeof err));
    assert_string_equal(err, "/: cannot read: Is a directory");
}

static void test_not_json(void **st) {
    (void)st;
    expect_error("", "t.json: not valid JSON at byte 0");
    expect_error("   ", "t.json: not valid JSON at byte 3");
    expect_error("hello", "t.json: not valid JSON at byte 0");
    expect_error("{\"version\":1,", "t.json: not valid JSON at byte 13");
    expect_error("{\"version\":1 \"pid\":2}", "t.json: not valid JSON at byte 13");
    expect_error("{\"version\":01}", "t.json: not valid JSON at byte 12");
    expect_error("{\"version\":1.}", "t.json: not valid JSON at byte 13");
    expect_error("{\"version\":-}", "t.json: not valid JSON at byte 12");
    expect_error("{\"version\":1} x", "t.json: not valid JSON at byte 14");
    expect_error("{\"a\":[1,2}", "t.json: not valid JSON at byte 9");
    expect_error("{\"a\":\"\\q\"}", "t.json: not valid JSON at byte 6");
    expect_error("{version:1}", "t.json: not valid JSON at byte 1");
    /* truncation anywhere in a valid file is reported as invalid JSON, never as a
     * semantic problem and never accepted */
    const char *v = VALID;
    for (size_t cut = 0; cut < strlen(v); cut++) {
        char err[OSPPROF_ERR_MAX] = "";
        ospprof_raw *r = ospprof_raw_parse("t.json", v, cut, err, sizeof err);
        assert_null(r);
        if (!strstr(err, "not valid JSON at byte")) fail_msg("cut %zu: %s", cut, err);
    }
}

static void test_top_level(void **st) {
    (void)st;
    expect_error("[1,2]", "t.json: top level is not a JSON object");
    expect_error(" \"s\" ", "t.json: top level is not a JSON object");
    expect_error("42", "t.json: top level is not a JSON object");
    expect_error("null", "t.json: top level is not a JSON object");
}

static void test_missing_keys(void **st) {
    (void)st;
    static const char *const keys[][2] = {
        {"\"version\":1,", "version"},
        {"\"pid\":7,", "pid"},
        {"\"exe\":\"/x/prog\",", "exe"},
        {"\"rate_hz\":1000,", "rate_hz"},
        {"\"platform\":\"linux-x86_64\",", "platform"},
        {"\"start_unix_ns\":100,", "start_unix_ns"},
        {"\"end_unix_ns\":5000100,", "end_unix_ns"},
        {IMAGES, "images"},
        {THREADS, "threads"},
        {STACKS, "stacks"},
        {SAMPLES, "samples"},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char msg[256];
        snprintf(msg, sizeof msg, "t.json: missing key \"%s\"", keys[i][1]);
        expect_variant(keys[i][0], "", msg);
    }
}

static void test_wrong_types(void **st) {
    (void)st;
    expect_variant("\"version\":1", "\"version\":\"1\"",
                   "t.json: key \"version\" must be an integer");
    expect_variant("\"version\":1", "\"version\":1.0",
                   "t.json: key \"version\" must be an integer");
    expect_variant("\"pid\":7", "\"pid\":7e0", "t.json: key \"pid\" must be an integer");
    expect_variant("\"pid\":7", "\"pid\":null", "t.json: key \"pid\" must be an integer");
    expect_variant("\"exe\":\"/x/prog\"", "\"exe\":3", "t.json: key \"exe\" must be a string");
    expect_variant("\"platform\":\"linux-x86_64\"", "\"platform\":[]",
                   "t.json: key \"platform\" must be a string");
    expect_variant("\"rate_hz\":1000", "\"rate_hz\":-5",
                   "t.json: key \"rate_hz\" must be a non-negative integer");
    expect_variant("\"rate_hz\":1000", "\"rate_hz\":997.5",
                   "t.json: key \"rate_hz\" must be a non-negative integer");
    expect_variant("\"dropped\":0", "\"dropped\":-1",
                   "t.json: key \"dropped\" must be a non-negative integer");
    expect_variant("\"start_unix_ns\":100", "\"start_unix_ns\":99999999999999999999",
                   "t.json: key \"start_unix_ns\" must be an integer");
    expect_variant("\"end_unix_ns\":5000100", "\"end_unix_ns\":true",
                   "t.json: key \"end_unix_ns\" must be an integer");
    expect_variant(IMAGES, "\"images\":{},", "t.json: key \"images\" must be an array");
    expect_variant(THREADS, "\"threads\":\"x\",", "t.json: key \"threads\" must be an array");
    expect_variant(STACKS, "\"stacks\":1,", "t.json: key \"stacks\" must be an array");
    expect_variant(SAMPLES, "\"samples\":{\"a\":1},", "t.json: key \"samples\" must be an array");
    expect_variant("\"base\":4096", "\"base\":18446744073709551616",
                   "t.json: image 0: key \"base\" must be a non-negative integer");
    expect_variant("\"text\":4096", "\"text\":-4096",
                   "t.json: image 0: key \"text\" must be a non-negative integer");
    expect_variant("\"path\":\"/x/prog\"", "\"path\":1",
                   "t.json: image 0: key \"path\" must be a string");
    expect_variant("{\"fiber\":0,", "{\"fiber\":0.5,",
                   "t.json: thread 0: key \"fiber\" must be an integer");
    expect_variant("\"label\":\"main\"", "\"label\":null",
                   "t.json: thread 0: key \"label\" must be a string");
    expect_variant(TAIL, "\"dropped\":0,\"sample_weights_ns\":[1,-2]}",
                   "t.json: sample_weights_ns: element 1 must be a non-negative integer");
    expect_variant(TAIL, "\"dropped\":0,\"sample_weights_ns\":{}}",
                   "t.json: key \"sample_weights_ns\" must be an array");
    expect_variant(TAIL, "\"dropped\":0,\"pid\":8}", "t.json: duplicate key \"pid\"");
}

static void test_version_and_rate(void **st) {
    (void)st;
    expect_variant("\"version\":1", "\"version\":2",
                   "t.json: unsupported raw profile version 2 (expected 1)");
    expect_variant("\"version\":1", "\"version\":-3",
                   "t.json: unsupported raw profile version -3 (expected 1)");
    /* a different version wins over layout problems */
    expect_variant("\"version\":1,", "\"version\":2,\"samples\":7,",
                   "t.json: unsupported raw profile version 2 (expected 1)");
    expect_variant("\"rate_hz\":1000", "\"rate_hz\":0", "t.json: rate_hz must be at least 1");
}

static void test_images_threads(void **st) {
    (void)st;
    expect_variant("\"path\":\"/x/prog\",", "", "t.json: image 0: missing key \"path\"");
    expect_variant("\"base\":4096,", "", "t.json: image 0: missing key \"base\"");
    expect_variant("{\"fiber\":1,", "{", "t.json: thread 1: missing key \"fiber\"");
    expect_variant(",\"label\":\"fiber\"", "", "t.json: thread 1: missing key \"label\"");
    expect_variant(IMAGES, "\"images\":[3],", "t.json: image 0 must be an object");
    expect_variant(
        "\"arch\":\"x86_64\"}",
        "\"symbols\":[{\"name\":\"a\",\"addr\":1}],\"symbols\":[{\"name\":\"b\",\"addr\":2}]}",
        "t.json: image 0: duplicate key \"symbols\"");
    expect_variant("\"arch\":\"x86_64\"}", "\"symbols\":[{\"addr\":1}]}",
                   "t.json: image 0: symbol 0: missing key \"name\"");
    expect_variant("\"arch\":\"x86_64\"}", "\"symbols\":[{\"name\":\"a\",\"addr\":-1}]}",
                   "t.json: image 0: symbol 0: key \"addr\" must be a non-negative integer");
    expect_variant(THREADS, "\"threads\":[[]],", "t.json: thread 0 must be an object");
}

static void test_stacks(void **st) {
    (void)st;
    expect_variant(STACKS, "\"stacks\":[[4100],[]],", "t.json: stack 1 is empty");
    expect_variant(STACKS, "\"stacks\":[[4100,-1]],",
                   "t.json: stack 0: element 1 is not a 64-bit address");
    expect_variant(STACKS, "\"stacks\":[[4100],[1.5]],",
                   "t.json: stack 1: element 0 is not a 64-bit address");
    expect_variant(STACKS, "\"stacks\":[[\"0x10\"]],",
                   "t.json: stack 0: element 0 is not a 64-bit address");
    expect_variant(STACKS, "\"stacks\":[[18446744073709551616]],",
                   "t.json: stack 0: element 0 is not a 64-bit address");
    expect_variant(STACKS, "\"stacks\":[[1e3]],",
                   "t.json: stack 0: element 0 is not a 64-bit address");
    expect_variant(STACKS, "\"stacks\":[[[1]]],",
                   "t.json: stack 0: element 0 is not a 64-bit address");
    expect_variant(STACKS, "\"stacks\":[7],", "t.json: stack 0 must be an array of addresses");
}

static void test_samples(void **st) {
    (void)st;
    const char *m0 = "t.json: sample 0 must be an array of exactly 4 integers";
    expect_variant(SAMPLES, "\"samples\":[[10,0,0]],", m0);
    expect_variant(SAMPLES, "\"samples\":[[10,0,0,0,0]],", m0);
    expect_variant(SAMPLES, "\"samples\":[[10,0,\"0\",0]],", m0);
    expect_variant(SAMPLES, "\"samples\":[[10.5,0,0,0]],", m0);
    expect_variant(SAMPLES, "\"samples\":[{}],", m0);
    expect_variant(SAMPLES, "\"samples\":[[10,0,0,0],[10,5,0,0]],",
                   "t.json: sample 1: thread index 5 out of range (profile has 2 threads)");
    expect_variant(SAMPLES, "\"samples\":[[10,-1,0,0]],",
                   "t.json: sample 0: thread index -1 out of range (profile has 2 threads)");
    expect_variant(SAMPLES, "\"samples\":[[10,0,2,0]],",
                   "t.json: sample 0: stack index 2 out of range (profile has 2 stacks)");
    expect_variant(SAMPLES, "\"samples\":[[10,0,0,2]],",
                   "t.json: sample 0: state 2 must be 0 (on-CPU) or 1 (waiting)");
    expect_variant(SAMPLES, "\"samples\":[[-10,0,0,0]],", "t.json: sample 0: time -10 is negative");
    expect_variant(TAIL, "\"dropped\":0,\"sample_weights_ns\":[1,2,3]}",
                   "t.json: sample_weights_ns has 3 entries, expected 2");
}

/* Every string the reader keeps is a C string, so an escaped U+0000 is refused instead of
 * cutting the label or path short; a key with one names no known key. */
static void test_nul_in_strings(void **st) {
    (void)st;
    expect_variant("\"label\":\"main\"", "\"label\":\"ma\\u0000in\"",
                   "t.json: thread 0: key \"label\" must be a string without \\u0000");
    expect_variant("\"path\":\"/x/prog\"", "\"path\":\"/x/prog\\u0000.so\"",
                   "t.json: image 0: key \"path\" must be a string without \\u0000");
    expect_variant("\"exe\":\"/x/prog\"", "\"exe\":\"\\u0000\"",
                   "t.json: key \"exe\" must be a string without \\u0000");
    /* an escaped backslash followed by the text u0000 is no NUL */
    char *doc = variant("\"label\":\"main\"", "\"label\":\"a\\\\u0000\"");
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = parse_str(doc, err);
    free(doc);
    assert_non_null(r);
    assert_string_equal(r->threads[0].label, "a\\u0000");
    ospprof_raw_free(r);
    /* a key with \u0000 is an unknown key, ignored */
    doc = variant("\"dropped\":0", "\"dropped\":0,\"lab\\u0000el\":\"x\"");
    r = parse_str(doc, err);
    free(doc);
    assert_non_null(r);
    ospprof_raw_free(r);
}

/* JSON forbids raw control bytes inside strings (RFC 8259 §7): a raw NUL, tab or newline in
 * a label, a path or a key is invalid JSON at that byte, never a shortened C string. */
static void test_raw_control_bytes(void **st) {
    (void)st;
    static const struct {
        const char *from, *to;
    } cases[] = {
        {"\"label\":\"main\"", "\"label\":\"ma\x01in\""},
        {"\"label\":\"main\"", "\"label\":\"ma\tin\""},
        {"\"path\":\"/x/prog\"", "\"path\":\"/x/pr\nog\""},
        {"\"dropped\":0", "\"dr\x1fopped\":0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *doc = variant(cases[i].from, cases[i].to);
        size_t at = (size_t)(strpbrk(doc, "\x01\t\n\x1f") - doc);
        char want[128];
        snprintf(want, sizeof want, "t.json: not valid JSON at byte %zu", at);
        expect_error(doc, want);
        free(doc);
    }
    /* a raw NUL (the buffer has an explicit length) */
    char *doc = variant("\"label\":\"main\"", "\"label\":\"maXin\"");
    size_t n = strlen(doc), at = (size_t)(strchr(doc, 'X') - doc);
    doc[at] = 0;
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = ospprof_raw_parse("t.json", doc, n, err, sizeof err);
    assert_null(r);
    char want[128];
    snprintf(want, sizeof want, "t.json: not valid JSON at byte %zu", at);
    assert_string_equal(err, want);
    free(doc);
    /* escaped control characters stay valid */
    doc = variant("\"label\":\"main\"", "\"label\":\"a\\tb\"");
    r = parse_str(doc, err);
    assert_non_null(r);
    assert_string_equal(r->threads[0].label, "a\tb");
    ospprof_raw_free(r);
    free(doc);
}

/* An input longer than the limit is refused in one line (a file by its size, a pipe once the
 * limit is passed); anything that does not start like a JSON object is refused at once. */
static void test_size_limit(void **st) {
    (void)st;
    setenv("OSPREY_PROFILE_MAX_RAW_BYTES", "4096", 1);
    assert_int_equal(ospprof_raw_max_bytes(), 4096);
    char *dir = tu_tmpdir();
    char path[4200], err[OSPPROF_ERR_MAX];
    snprintf(path, sizeof path, "%s/big.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(VALID, f);
    for (int i = 0; i < 5000; i++) fputc(' ', f);
    fclose(f);
    assert_null(ospprof_raw_load(path, err, sizeof err));
    char want[4400];
    snprintf(want, sizeof want, "%s: larger than the limit of 4096 bytes for a raw profile", path);
    assert_string_equal(err, want);
    /* an endless pipe: "{" then whitespace forever */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        signal(SIGPIPE, SIG_DFL);
        char chunk[512];
        memset(chunk, ' ', sizeof chunk);
        chunk[0] = '{';
        while (write(fds[1], chunk, sizeof chunk) > 0) chunk[0] = ' ';
        _exit(0);
    }
    close(fds[1]);
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    assert_null(ospprof_raw_load(path, err, sizeof err));
    snprintf(want, sizeof want, "%s: larger than the limit of 4096 bytes for a raw profile", path);
    assert_string_equal(err, want);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    /* `yes` is refused at its first byte */
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "  y\ny\n", 6), 6);
    close(fds[1]);
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    assert_null(ospprof_raw_load(path, err, sizeof err));
    snprintf(want, sizeof want, "%s: not valid JSON at byte 2", path);
    assert_string_equal(err, want);
    close(fds[0]);
    unsetenv("OSPREY_PROFILE_MAX_RAW_BYTES");
    assert_int_equal(ospprof_raw_max_bytes(), OSPPROF_RAW_MAX_BYTES);
    tu_rmtree(dir);
    free(dir);
}

/* Weights whose total passes 2^63-1 ns would wrap the sums the exports are built from. */
static void test_weight_total(void **st) {
    (void)st;
    expect_variant(
        TAIL, "\"dropped\":0,\"sample_weights_ns\":[9223372036854775807,1]}",
        "t.json: sample_weights_ns: the weights add up to more than 2^63-1 ns (at sample 1)");
    expect_variant(
        TAIL, "\"dropped\":0,\"sample_weights_ns\":[18446744073709551615,0]}",
        "t.json: sample_weights_ns: the weights add up to more than 2^63-1 ns (at sample 0)");
    char *doc = variant(TAIL, "\"dropped\":0,\"sample_weights_ns\":[9223372036854775806,1]}");
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = parse_str(doc, err);
    free(doc);
    assert_non_null(r);
    ospprof_raw_free(r);
}

static void test_exact_addresses(void **st) {
    (void)st;
    /* 2^64 - 1 and 2^53 + 1 survive exactly (a double would round both) */
    char *doc = variant(STACKS, "\"stacks\":[[18446744073709551615,9007199254740993],[0]],");
    char err[OSPPROF_ERR_MAX];
    ospprof_raw *r = parse_str(doc, err);
    free(doc);
    assert_non_null(r);
    assert_true(r->addrs[0] == UINT64_MAX);
    assert_true(r->addrs[1] == 9007199254740993ull);
    assert_true(r->addrs[2] == 0);
    ospprof_raw_free(r);
}

static void test_normalised(void **st) {
    (void)st;
    /* unknown keys (of any shape), missing slide/text/text_size/arch/dropped, samples out
     * of order (stable), end < start, measured weights, escapes in strings */
    const char *doc =
        "{\"zzz\":{\"deep\":[1,[2,{\"x\":null}]]},\"version\":1,\"pid\":1,\"exe\":\"/a\\/"
        "b\\u00e9\","
        "\"rate_hz\":3,\"platform\":\"p\",\"start_unix_ns\":50,\"end_unix_ns\":10,"
        "\"images\":[{\"path\":\"/a/b\",\"base\":7,\"extra\":[1]}],"
        "\"threads\":[{\"fiber\":-1,\"label\":\"effect\",\"tid\":9}],\"stacks\":[[1],[2]],"
        "\"samples\":[[30,0,0,0],[10,0,1,1],[10,0,0,0],[20,0,1,0]],"
        "\"sample_weights_ns\":[4,3,2,1],\"truncated_stacks\":[1,99],\"ticks\":4}";
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = parse_str(doc, err);
    if (!r) fail_msg("%s", err);
    assert_string_equal(r->exe, "/a/b\xc3\xa9");
    assert_int_equal(r->images[0].slide, 0);
    assert_int_equal(r->images[0].text, 0);
    assert_int_equal(r->images[0].text_size, 0);
    assert_string_equal(r->images[0].arch, "");
    assert_null(r->images[0].build_id);
    assert_int_equal(r->dropped, 0);
    assert_int_equal(r->threads[0].fiber, -1);
    assert_true(r->truncated[1]);
    assert_false(r->truncated[0]);
    /* stable sort by time: (10,stack1,w3) before (10,stack0,w2) as in the file */
    uint64_t t[4], w[4], s[4];
    for (int i = 0; i < 4; i++)
        t[i] = r->samples[i].t_ns, w[i] = r->samples[i].weight_ns, s[i] = r->samples[i].stack;
    assert_int_equal(t[0], 10), assert_int_equal(w[0], 3), assert_int_equal(s[0], 1);
    assert_int_equal(t[1], 10), assert_int_equal(w[1], 2), assert_int_equal(s[1], 0);
    assert_int_equal(t[2], 20), assert_int_equal(w[2], 1);
    assert_int_equal(t[3], 30), assert_int_equal(w[3], 4);
    assert_true(r->has_weights);
    ospprof_raw_free(r);

    /* nominal weight floor(1e9 / rate) without sample_weights_ns */
    char *d2 = variant("\"rate_hz\":1000", "\"rate_hz\":997");
    r = parse_str(d2, err);
    free(d2);
    assert_non_null(r);
    assert_int_equal(r->samples[0].weight_ns, 1003009);
    ospprof_raw_free(r);
}

static void test_whitespace_everywhere(void **st) {
    (void)st;
    const char *doc =
        " \n{ \"version\" : 1 , \"pid\" : 1 , \"exe\" : \"/a\" , \"rate_hz\" : 10 , "
        "\"platform\" : \"p\" , \"start_unix_ns\" : 0 , \"end_unix_ns\" : 0 , \"images\" : [ ] ,"
        " \"threads\" : [ { \"fiber\" : 0 , \"label\" : \"main\" } ] , \"stacks\" : [ [ 1 , 2 ] ] ,"
        " \"samples\" : [ [ 0 , 0 , 0 , 0 ] ] , \"dropped\" : 0 }\r\n";
    char err[OSPPROF_ERR_MAX] = "";
    ospprof_raw *r = parse_str(doc, err);
    if (!r) fail_msg("%s", err);
    assert_int_equal(r->nsamples, 1);
    ospprof_raw_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_document),
        cmocka_unit_test(test_unreadable),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_top_level),
        cmocka_unit_test(test_missing_keys),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_version_and_rate),
        cmocka_unit_test(test_images_threads),
        cmocka_unit_test(test_stacks),
        cmocka_unit_test(test_samples),
        cmocka_unit_test(test_exact_addresses),
        cmocka_unit_test(test_normalised),
        cmocka_unit_test(test_nul_in_strings),
        cmocka_unit_test(test_raw_control_bytes),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_weight_total),
        cmocka_unit_test(test_whitespace_everywhere),
        cmocka_unit_test(test_profiler_cpu),
        cmocka_unit_test(test_dropped_reasons),
    };
    return cmocka_run_group_tests_name("postprocess_reader", tests, NULL, NULL);
}
