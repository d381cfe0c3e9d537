/*
 * The testing framework's runtime side (docs/spec/language.md §13): soft assertions, TAP lines on
 * the program's one stdout stream, the plan and summary, and the exit status.
 *
 * Generated code calls, for `test(name, body)`:
 *     if (osp_tap_case_begin(name)) { body; [osp_tap_verdict(kind, reason);] osp_tap_case_end(); }
 * and `return osp_tap_finish();` at the end of `main`. Test state belongs to the main
 * thread (§13.1); a mutex still keeps it consistent if a fiber asserts.
 */
#include "rt_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool running;       /* a case body is running */
    const char *name;   /* its name (kept alive: static data is a collector root) */
    bool failed;        /* an assertion failed in it, or a nested test() was attempted */
    int64_t verdict;    /* OSP_VERDICT_* returned by the body [T2] */
    const char *reason; /* Fail / Skip reason */
    int64_t numbered;   /* cases numbered so far (N) */
    int64_t passed, failed_cases, skipped;
    bool outside_failed; /* an assertion outside any case failed */
} tap;

/* `OSPREY_TEST_FILTER`: unset or empty selects every case. */
static bool filtered_out(const char *name) {
    const char *filter = getenv("OSPREY_TEST_FILTER");
    return filter != NULL && filter[0] != '\0' && strcmp(filter, name) != 0;
}

int osp_tap_case_begin(const char *name) {
    if (name == NULL) name = "";
    /* The filter comes first: a case whose name does not match prints nothing, even
     * when it is nested (it would not run either way). */
    if (filtered_out(name)) return 0;
    pthread_mutex_lock(&tap_lock);
    if (tap.running) {
        osp_stream_printf_line(
            "# nested test '%s' skipped: test() inside a test body is not supported", name);
        tap.failed = true;
        pthread_mutex_unlock(&tap_lock);
        return 0;
    }
    tap.running = true;
    tap.name = name;
    tap.failed = false;
    tap.verdict = OSP_VERDICT_PASS;
    tap.reason = NULL;
    pthread_mutex_unlock(&tap_lock);
    return 1;
}

void osp_tap_check(const char *label, bool ok, const char *expected, const char *actual) {
    if (ok) return;
    if (expected == NULL) expected = "";
    if (actual == NULL) actual = "";
    pthread_mutex_lock(&tap_lock);
    if (label != NULL)
        osp_stream_printf_line("# check '%s' failed: expected %s, got %s", label, expected, actual);
    else
        osp_stream_printf_line("# expect failed: expected %s, got %s", expected, actual);
    if (tap.running)
        tap.failed = true;
    else
        tap.outside_failed = true;
    pthread_mutex_unlock(&tap_lock);
}

void osp_tap_verdict(int64_t kind, const char *reason) {
    pthread_mutex_lock(&tap_lock);
    if (tap.running &&
        (kind == OSP_VERDICT_PASS || kind == OSP_VERDICT_FAIL || kind == OSP_VERDICT_SKIP)) {
        tap.verdict = kind;
        tap.reason = reason;
    }
    pthread_mutex_unlock(&tap_lock);
}

void osp_tap_case_end(void) {
    pthread_mutex_lock(&tap_lock);
    if (!tap.running) {
        pthread_mutex_unlock(&tap_lock);
        return;
    }
    int64_t n = ++tap.numbered;
    long long nn = (long long)n;
    const char *reason = tap.reason ? tap.reason : "";
    if (tap.verdict == OSP_VERDICT_FAIL) osp_stream_printf_line("# fail: %s", reason);
    if (tap.failed || tap.verdict == OSP_VERDICT_FAIL) {
        /* A failed assertion wins over a returned Skip or Pass. */
        osp_stream_printf_line("not ok %lld - %s", nn, tap.name);
        tap.failed_cases++;
    } else if (tap.verdict == OSP_VERDICT_SKIP) {
        if (reason[0] != '\0')
            osp_stream_printf_line("ok %lld - %s # SKIP %s", nn, tap.name, reason);
        else
            osp_stream_printf_line("ok %lld - %s # SKIP", nn, tap.name);
        tap.skipped++;
    } else {
        osp_stream_printf_line("ok %lld - %s", nn, tap.name);
        tap.passed++;
    }
    tap.running = false;
    tap.name = NULL;
    tap.reason = NULL;
    pthread_mutex_unlock(&tap_lock);
}

int osp_tap_finish(void) {
    pthread_mutex_lock(&tap_lock);
    osp_stream_printf_line("1..%lld", (long long)tap.numbered);
    osp_stream_printf_line("# tests=%lld passed=%lld failed=%lld skipped=%lld",
                           (long long)tap.numbered, (long long)tap.passed,
                           (long long)tap.failed_cases, (long long)tap.skipped);
    int status = (tap.failed_cases > 0 || tap.outside_failed) ? 1 : 0;
    pthread_mutex_unlock(&tap_lock);
    return status;
}
