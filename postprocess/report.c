/*
 * report.c — the terminal report (docs/spec/profiler.md §(h) as revised by §(l.7)): on the
 * stream the CLI chooses (stderr by default), rows cut to the terminal's width, up to 5 hot
 * lines with their source text, every printed name and path filtered for control characters.
 */
#include "internal.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The on-CPU samples a run got against what its rate asks for its on-CPU time (the
 * weights are measured CPU time, so times and percentages stay exact either way): one
 * note line when fewer than four fifths came, with the engine's reason
 * (docs/profiler-runtime.md "Sampling engines"). Nothing for short runs (under 50 samples
 * asked) or a raw file that does not name its engine. */
static void report_rate_note(ospprof_buf *b, const ospprof_profile *p) {
    double asked = (double)p->on_w / 1e9 * (double)p->rate_hz;
    if (asked < 50 || (double)p->on_n >= 0.8 * asked) return;
    const char *why = NULL;
    char buf[160];
    if (strcmp(p->engine, "cpu_timer") == 0) {
        const char *forced = getenv("OSPREY_PROFILE_ENGINE");
        int paranoid = -1;
        FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
        if (f) {
            if (fscanf(f, "%d", &paranoid) != 1) paranoid = -1;
            fclose(f);
        }
        if (forced && strcmp(forced, "cpu_timer") == 0)
            why = "OSPREY_PROFILE_ENGINE=cpu_timer: CPU-time timers fire at most once per "
                  "kernel tick";
        else if (paranoid >= 3) {
            snprintf(buf, sizeof buf,
                     "perf events refused (kernel.perf_event_paranoid is %d; 2 allows them): "
                     "CPU-time timers fire at most once per kernel tick",
                     paranoid);
            why = buf;
        } else
            why = "perf events refused (a seccomp filter, or a kernel without them): CPU-time "
                  "timers fire at most once per kernel tick";
    } else if (strcmp(p->engine, "sampler") == 0) {
        why = "the sampler thread fell behind (more busy threads than cores, or perf events "
              "and CPU-time timers both unavailable)";
    } else if (p->engine[0] == '\0') {
        return;
    }
    ospprof_buf_printf(b,
                       "note: %llu of about %.0f on-CPU samples at %lluHz%s%s; times stay exact\n",
                       (unsigned long long)p->on_n, asked, (unsigned long long)p->rate_hz,
                       why ? ": " : "", why ? why : "");
}

bool ospprof_color_wanted(FILE *out) {
    const char *nc = getenv("NO_COLOR");
    if (nc && nc[0]) return false;
    return out && isatty(fileno(out));
}

int ospprof_terminal_columns(FILE *out) {
    if (!out || !isatty(fileno(out))) return 0;
    const char *c = getenv("COLUMNS");
    if (c && *c) {
        char *end;
        long v = strtol(c, &end, 10);
        if (*end == 0 && v > 0 && v < 100000) return (int)v;
    }
#ifdef TIOCGWINSZ
    struct winsize ws;
    if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
#endif
    return 80;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The name of signal `sig` ("SIGINT"), or "signal N". */
static void signal_name(ospprof_buf *b, int sig) {
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGINT, "SIGINT"},   {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"},
                 {SIGQUIT, "SIGQUIT"}, {SIGKILL, "SIGKILL"}, {SIGSEGV, "SIGSEGV"},
                 {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
                 {SIGILL, "SIGILL"},   {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},
                 {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGXCPU, "SIGXCPU"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig) {
            ospprof_buf_puts(b, names[i].name);
            return;
        }
    ospprof_buf_printf(b, "signal %d", sig);
}

/* Terminal cells of code point cp: 0 for combining marks and zero-width characters, 2 for
 * East Asian wide and fullwidth characters and emoji shown as pictures, 1 otherwise. The
 * ranges are the main blocks of those kinds (Unicode's East Asian Width property, as
 * terminals apply it); ambiguous-width characters (the report's bars, …) count 1. */
static unsigned cp_cells(uint32_t cp) {
    static const uint32_t zero[][2] = {
        {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A},
        {0x064B, 0x065F}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF}, {0x200B, 0x200F},
        {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xE0100, 0xE01EF},
    };
    static const uint32_t wide[][2] = {
        {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
        {0x23F0, 0x23F0},   {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},
        {0x2648, 0x2653},   {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},
        {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},
        {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
        {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},
        {0x2728, 0x2728},   {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},
        {0x2757, 0x2757},   {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},
        {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x303E},
        {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
        {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE10, 0xFE19},
        {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x18CFF},
        {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E},
        {0x1F191, 0x1F19A}, {0x1F200, 0x1F251}, {0x1F300, 0x1F64F}, {0x1F680, 0x1F6FF},
        {0x1F7E0, 0x1F7EB}, {0x1F90C, 0x1F9FF}, {0x1FA70, 0x1FAFF}, {0x20000, 0x2FFFD},
        {0x30000, 0x3FFFD},
    };
    if (cp < 0x0300) return 1;
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        if (cp >= zero[i][0] && cp <= zero[i][1]) return 0;
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        if (cp >= wide[i][0] && cp <= wide[i][1]) return 2;
    return 1;
}

/* The next character of s[i..n): its byte length (1 for a byte that is not UTF-8) and, in
 * *cells, its terminal cells. */
static size_t next_char(const char *s, size_t i, size_t n, unsigned *cells) {
    uint32_t cp;
    size_t len = ospprof_utf8_decode((const unsigned char *)s + i, n - i, &cp);
    if (!len) {
        *cells = 1;
        return 1;
    }
    *cells = cp_cells(cp);
    return len;
}

/* Terminal cells of UTF-8 text. */
static size_t cells_of(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned c;
        i += next_char(s, i, n, &c);
        k += c;
    }
    return k;
}

void ospprof_term_cut(ospprof_buf *b, const char *text, size_t n, size_t room) {
    if (room == 0) room = OSPPROF_REPORT_MAX_CELLS;
    if (cells_of(text, n) <= room) {
        ospprof_buf_put(b, text, n);
        return;
    }
    /* "…" takes the last cell; a wide character that would straddle it is left out */
    size_t keep = room > 1 ? room - 1 : 0, cells = 0, i = 0;
    while (i < n) {
        unsigned c;
        size_t len = next_char(text, i, n, &c);
        if (cells + c > keep) break;
        cells += c;
        i += len;
    }
    ospprof_buf_put(b, text, i);
    ospprof_buf_puts(b, "…");
}

/* Line `line` (1-based) of `path`, trimmed, control characters (tabs included) as spaces or
 * '?'; NULL when the file cannot be read, is shorter or is not a regular file. At most
 * 16 MiB are read. The path comes from debug info: a FIFO there used to block the report
 * for good (in open), a device such as /dev/zero to fill memory (one endless line). */
static char *source_line(const char *path, uint32_t line) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, total = 0;
    ssize_t len = 0;
    uint32_t at = 0;
    while ((len = getline(&buf, &cap, f)) >= 0) {
        total += (size_t)len;
        if (++at == line || total > (16u << 20)) break;
    }
    fclose(f);
    if (at != line || len < 0) {
        free(buf);
        return NULL;
    }
    size_t a = 0, e = (size_t)len;
    while (a < e && (buf[a] == ' ' || buf[a] == '\t')) a++;
    while (e > a &&
           (buf[e - 1] == '\n' || buf[e - 1] == '\r' || buf[e - 1] == ' ' || buf[e - 1] == '\t'))
        e--;
    for (size_t i = a; i < e; i++)
        if (buf[i] == '\t') buf[i] = ' ';
    buf[e] = 0;
    ospprof_buf t = {0};
    ospprof_term_text(&t, buf + a);
    free(buf);
    return t.p ? t.p : ospprof_xstrdup("");
}

int ospprof_report(const ospprof_profile *p, const char *prefix, bool color, FILE *out) {
    ospprof_options style = {.color = color};
    return ospprof_report_ex(p, prefix, &style, out);
}

int ospprof_report_ex(const ospprof_profile *p, const char *prefix, const ospprof_options *style,
                      FILE *out) {
    static const char *const eighths[8] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    bool color = style && style->color;
    size_t columns = style && style->columns > 0 ? (size_t)style->columns : 0;
    ospprof_buf b = {0}, cell = {0};
    size_t k = 0;
    for (size_t r = 0; r < p->nrows; r++)
        if (p->rows[r].n) k++;
    ospprof_buf_puts(&b, "");
    ospprof_term_text(&b, p->pname);
    ospprof_buf_printf(&b, " · %.2fs wall · %.2fs CPU", p->wall_s, (double)p->on_w / 1e9);
    /* The profiler's own CPU that no sample carries (start-up, sampler thread, file write):
     * accounted beside the program's, never in it. */
    if (p->profiler_cpu_ns > 0)
        ospprof_buf_printf(&b, " (+%.3fs profiler)", (double)p->profiler_cpu_ns / 1e9);
    ospprof_buf_printf(&b, " · %zu samples @ %lluHz · %zu %s", p->nsamples,
                       (unsigned long long)p->rate_hz, k, k == 1 ? "fiber" : "fibers");
    if (style && style->interrupted_signal > 0) {
        ospprof_buf_puts(&b, " (interrupted by ");
        signal_name(&b, style->interrupted_signal);
        ospprof_buf_putc(&b, ')');
    }
    if (p->filter_desc) {
        ospprof_buf_puts(&b, "\nfiltered: ");
        ospprof_buf_puts(&b, p->filter_desc);
    }
    ospprof_buf_puts(&b, "\nfibers:");
    bool first = true;
    for (size_t r = 0; r < p->nrows; r++) {
        const ospprof_rowinfo *ri = &p->rows[r];
        if (!ri->n) continue;
        ospprof_buf_puts(&b, first ? " " : " · ");
        first = false;
        ospprof_term_text(&b, ri->label);
        if (ri->on_n)
            ospprof_buf_printf(&b, " %.0f%% on-cpu", (double)ri->on_n * 100.0 / (double)ri->n);
        else
            ospprof_buf_puts(&b, " waiting");
    }
    if (first) ospprof_buf_puts(&b, " none");
    ospprof_buf_puts(&b, "\n\n        SELF%  TOTAL%     SELF    TOTAL  FUNCTION  LOCATION\n");

    /* the bar and the four numbers take 41 cells; FUNCTION  LOCATION gets the rest */
    size_t room = columns > 41 ? columns - 41 : columns ? 1 : 0;
    uint32_t *hf;
    size_t nhf = ospprof_hot_functions(p, &hf);
    for (size_t i = 0; i < nhf && i < 10; i++) {
        const ospprof_func *f = &p->funcs[hf[i]];
        double share = p->on_w ? (double)f->self_w / (double)p->on_w : 0.0;
        unsigned e = (unsigned)floor(share * 48.0 + 0.5);
        if (e > 48) e = 48;
        unsigned cells = 0;
        for (unsigned c = 0; c < e / 8; c++, cells++) ospprof_buf_puts(&b, "█");
        if (e % 8) {
            ospprof_buf_puts(&b, eighths[e % 8]);
            cells++;
        }
        for (; cells < 6; cells++) ospprof_buf_putc(&b, ' ');
        char selfp[32];
        snprintf(selfp, sizeof selfp, "%6.1f%%", share * 100.0);
        double shown = strtod(selfp, NULL);
        const char *on = shown >= 5.0 ? "\x1b[1;31m" : shown >= 0.5 ? "\x1b[33m" : "\x1b[2m";
        if (color) ospprof_buf_puts(&b, on);
        ospprof_buf_puts(&b, selfp);
        ospprof_buf_printf(&b, "%7.1f%%%8.2fs%8.2fs  ",
                           p->on_w ? (double)f->total_w * 100.0 / (double)p->on_w : 0.0,
                           (double)f->self_w / 1e9, (double)f->total_w / 1e9);
        cell.n = 0;
        ospprof_term_text(&cell, p->strs.str[f->name]);
        const char *file = p->strs.str[f->file];
        if (file[0]) {
            ospprof_buf_puts(&cell, "  ");
            ospprof_term_text(&cell, base_name(file));
            if (f->line) ospprof_buf_printf(&cell, ":%u", f->line);
        }
        ospprof_term_cut(&b, cell.p ? cell.p : "", cell.n, room);
        if (color) ospprof_buf_puts(&b, "\x1b[0m");
        ospprof_buf_putc(&b, '\n');
    }
    free(hf);

    /* hot lines (§(l.7)): attributed weight, at least 0.5 % like hotLines */
    ospprof_hotline *hl;
    size_t nhl = ospprof_hot_lines(p, &hl), shown_lines = 0;
    for (size_t i = 0; i < nhl && shown_lines < 5; i++) {
        if (hl[i].w * 200 < p->on_w) continue;
        if (shown_lines++ == 0) ospprof_buf_puts(&b, "\nhot lines:\n");
        ospprof_buf_printf(&b, "%6.1f%%  ",
                           p->on_w ? (double)hl[i].w * 100.0 / (double)p->on_w : 0.0);
        cell.n = 0;
        ospprof_term_text(&cell, base_name(hl[i].file_s));
        ospprof_buf_printf(&cell, ":%u", hl[i].line);
        char *src = source_line(hl[i].file_s, hl[i].line);
        if (src && src[0]) {
            ospprof_buf_puts(&cell, "  ");
            ospprof_buf_puts(&cell, src);
        }
        free(src);
        /* 9 cells of percentage; without a terminal, very long source lines stop at 160 */
        ospprof_term_cut(&b, cell.p ? cell.p : "", cell.n,
                         columns > 9 ? columns - 9
                         : columns   ? 1
                                     : 160);
        ospprof_buf_putc(&b, '\n');
    }
    free(hl);
    ospprof_buf_free(&cell);

    if (p->on_n < 100) {
        double m = p->on_n ? 100.0 / sqrt((double)p->on_n) : 100.0;
        ospprof_buf_printf(&b,
                           "note: only %llu on-CPU %s — percentages are uncertain by about "
                           "±%.1f%%; run longer or raise OSPREY_PROFILE_HZ\n",
                           (unsigned long long)p->on_n, p->on_n == 1 ? "sample" : "samples", m);
    }
    report_rate_note(&b, p);
    ospprof_buf safe = {0};
    ospprof_term_text(&safe, prefix);
    const char *sp = safe.p ? safe.p : "";
    ospprof_buf_puts(&b, "\nprofile: ");
    for (int i = 0; i < OSPPROF_NEXPORTS; i++)
        ospprof_buf_printf(&b, "%s%s%s", i ? " · " : "", sp, ospprof_export_ext[i]);
    if (style && style->pprof) ospprof_buf_printf(&b, " · %s%s", sp, OSPPROF_PPROF_EXT);
    ospprof_buf_printf(&b,
                       "\nview: open %s.svg in a browser, drag %s.speedscope.json onto "
                       "https://www.speedscope.app or open %s.cpuprofile in VS Code\n",
                       sp, sp, sp);
    ospprof_buf_free(&safe);
    int rc = 0;
    if (fwrite(b.p, 1, b.n, out) != b.n || fflush(out) != 0) rc = -1;
    ospprof_buf_free(&b);
    return rc;
}
