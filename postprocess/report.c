/*
 * report.c — the terminal report (docs/spec/profiler.md §(h), [PROF-CLI-REPORT]) and ospprof_run(),
 * the single entry point the driver calls (§(i)).
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool ospprof_color_wanted(FILE *out) {
    const char *nc = getenv("NO_COLOR");
    if (nc && nc[0]) return false;
    return out && isatty(fileno(out));
}

/* Name for the terminal: control characters as '?', invalid UTF-8 as U+FFFD. */
static void term_name(ospprof_buf *b, const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str), i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = ospprof_utf8_decode(s + i, n - i, &cp);
        if (len == 0) {
            ospprof_buf_put(b, "\xEF\xBF\xBD", 3);
            i++;
        } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
            ospprof_buf_putc(b, '?');
            i += len;
        } else {
            ospprof_buf_put(b, s + i, len);
            i += len;
        }
    }
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int ospprof_report(const ospprof_profile *p, const char *prefix, bool color, FILE *out) {
    static const char *const eighths[8] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    ospprof_buf b = {0};
    size_t k = 0;
    for (size_t r = 0; r < p->nrows; r++)
        if (p->rows[r].n) k++;
    ospprof_buf_puts(&b, "");
    term_name(&b, p->pname);
    ospprof_buf_printf(&b, " · %.2fs wall · %.2fs CPU · %zu samples @ %lluHz · %zu %s\n", p->wall_s,
                       (double)p->on_w / 1e9, p->nsamples, (unsigned long long)p->rate_hz, k,
                       k == 1 ? "fiber" : "fibers");
    ospprof_buf_puts(&b, "fibers:");
    bool first = true;
    for (size_t r = 0; r < p->nrows; r++) {
        const ospprof_rowinfo *ri = &p->rows[r];
        if (!ri->n) continue;
        ospprof_buf_puts(&b, first ? " " : " · ");
        first = false;
        term_name(&b, ri->label);
        if (ri->on_n)
            ospprof_buf_printf(&b, " %.0f%% on-cpu", (double)ri->on_n * 100.0 / (double)ri->n);
        else
            ospprof_buf_puts(&b, " waiting");
    }
    if (first) ospprof_buf_puts(&b, " none");
    ospprof_buf_puts(&b, "\n\n        SELF%  TOTAL%     SELF    TOTAL  FUNCTION  LOCATION\n");

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
        term_name(&b, p->strs.str[f->name]);
        const char *file = p->strs.str[f->file];
        if (file[0]) {
            ospprof_buf_puts(&b, "  ");
            term_name(&b, base_name(file));
            if (f->line) ospprof_buf_printf(&b, ":%u", f->line);
        }
        if (color) ospprof_buf_puts(&b, "\x1b[0m");
        ospprof_buf_putc(&b, '\n');
    }
    free(hf);
    if (p->on_n < 100) {
        double m = p->on_n ? 100.0 / sqrt((double)p->on_n) : 100.0;
        ospprof_buf_printf(&b,
                           "note: only %llu on-CPU %s — percentages are uncertain by about "
                           "±%.1f%%; run longer or raise OSPREY_PROFILE_HZ\n",
                           (unsigned long long)p->on_n, p->on_n == 1 ? "sample" : "samples", m);
    }
    ospprof_buf_puts(&b, "\nprofile: ");
    ospprof_buf_printf(&b, "%s.speedscope.json · %s.cpuprofile · %s.folded · %s.profile.json\n",
                       prefix, prefix, prefix, prefix);
    ospprof_buf_printf(&b,
                       "view: drag %s.speedscope.json onto https://www.speedscope.app or open "
                       "%s.cpuprofile in VS Code\n",
                       prefix, prefix);
    int rc = 0;
    if (fwrite(b.p, 1, b.n, out) != b.n || fflush(out) != 0) rc = -1;
    ospprof_buf_free(&b);
    return rc;
}

int ospprof_run(const ospprof_options *o, char *err, size_t errlen) {
    if (!o || !o->raw_path || !o->output_prefix) {
        ospprof_seterr(err, errlen, "no raw profile or output given");
        return -1;
    }
    ospprof_raw *raw = ospprof_raw_load(o->raw_path, err, errlen);
    if (!raw) return -1;
    ospprof_profile *p =
        ospprof_profile_build(raw, o->program, o->binary, o->symbolizer, err, errlen);
    ospprof_raw_free(raw);
    if (!p) return -1;
    static const char *const ext[4] = {".speedscope.json", ".cpuprofile", ".folded",
                                       ".profile.json"};
    int (*const wfn[4])(const ospprof_profile *, const char *, char *,
                        size_t) = {ospprof_write_speedscope, ospprof_write_cpuprofile,
                                   ospprof_write_folded, ospprof_write_summary};
    size_t plen = strlen(o->output_prefix);
    char *path = malloc(plen + 32);
    if (!path) abort();
    int rc = 0;
    for (int i = 0; i < 4 && rc == 0; i++) {
        memcpy(path, o->output_prefix, plen);
        strcpy(path + plen, ext[i]);
        rc = wfn[i](p, path, err, errlen);
    }
    free(path);
    if (rc == 0 && o->report && ospprof_report(p, o->output_prefix, o->color, o->report) != 0) {
        ospprof_seterr(err, errlen, "cannot write the report");
        rc = -1;
    }
    ospprof_profile_free(p);
    return rc;
}
