/*
 * text.c — growable byte buffers and the text forms every export shares: UTF-8 decoding,
 * JSON string literals and numbers (docs/spec/profiler.md §(g.1) "JSON output"), folded-stack
 * frame sanitising (§(g.4)).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- buffer -------------------------------------------------------------------- */

void ospprof_buf_reserve(ospprof_buf *b, size_t extra) {
    if (b->n + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra) cap *= 2;
    b->p = ospprof_xrealloc(b->p, cap);
    b->cap = cap;
}

void ospprof_buf_put(ospprof_buf *b, const void *s, size_t n) {
    ospprof_buf_reserve(b, n + 1);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void ospprof_buf_puts(ospprof_buf *b, const char *s) {
    ospprof_buf_put(b, s, strlen(s));
}

void ospprof_buf_putc(ospprof_buf *b, char c) {
    ospprof_buf_reserve(b, 2);
    b->p[b->n++] = c;
    b->p[b->n] = 0;
}

void ospprof_buf_printf(ospprof_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        ospprof_buf_put(b, tmp, (size_t)n);
        return;
    }
    ospprof_buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void ospprof_buf_free(ospprof_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ---- UTF-8 ------------------------------------------------------------------------ */

size_t ospprof_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

bool ospprof_is_control(uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

static bool is_space(uint32_t cp) {
    switch (cp) {
    case ' ':
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
    }
}

void ospprof_json_str(ospprof_buf *b, const char *str) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str);
    ospprof_buf_reserve(b, n + 3);
    b->p[b->n++] = '"';
    size_t i = 0;
    while (i < n) {
        /* fast run of plain ASCII */
        size_t j = i;
        while (j < n && s[j] >= 0x20 && s[j] < 0x7F && s[j] != '"' && s[j] != '\\') j++;
        if (j > i) {
            ospprof_buf_put(b, s + i, j - i);
            i = j;
            continue;
        }
        uint32_t cp;
        size_t len = ospprof_utf8_decode(s + i, n - i, &cp);
        if (len == 0) {
            ospprof_buf_put(b, "\xEF\xBF\xBD", 3);
            i++;
        } else if (cp == '"' || cp == '\\') {
            char e[2] = {'\\', (char)cp};
            ospprof_buf_put(b, e, 2);
            i++;
        } else if (ospprof_is_control(cp)) {
            char e[6] = {'\\', 'u', '0', '0', hex[cp >> 4], hex[cp & 15]};
            ospprof_buf_put(b, e, 6);
            i += len;
        } else {
            ospprof_buf_put(b, s + i, len);
            i += len;
        }
    }
    ospprof_buf_putc(b, '"');
}

/* str appended to b with each byte that does not start well-formed UTF-8 as U+FFFD and each
 * code point `replace` picks as the character `with`: the one loop behind every filtered
 * name (terminal text, folded frames). */
static void put_mapped(ospprof_buf *b, const char *str, bool (*replace)(uint32_t), char with) {
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str), i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = ospprof_utf8_decode(s + i, n - i, &cp);
        if (len == 0) {
            ospprof_buf_put(b, "\xEF\xBF\xBD", 3);
            i++;
        } else if (replace(cp)) {
            ospprof_buf_putc(b, with);
            i += len;
        } else {
            ospprof_buf_put(b, s + i, len);
            i += len;
        }
    }
}

static bool folded_special(uint32_t cp) {
    return cp == ';' || is_space(cp) || ospprof_is_control(cp);
}

void ospprof_folded_name(ospprof_buf *b, const char *str) {
    if (str[0] == 0) {
        ospprof_buf_puts(b, "[unknown]");
        return;
    }
    put_mapped(b, str, folded_special, '_');
}

void ospprof_term_text(ospprof_buf *b, const char *str) {
    put_mapped(b, str, ospprof_is_control, '?');
}

char *ospprof_term_string(const char *s) {
    ospprof_buf b = {0};
    ospprof_term_text(&b, s);
    ospprof_buf_putc(&b, 0);
    return b.p;
}

/* ---- numbers ---------------------------------------------------------------------- */

void ospprof_json_double(ospprof_buf *b, double v) {
    char tmp[40];
    if (v != v || v == 1.0 / 0.0 || v == -1.0 / 0.0) { /* never produced; stay valid JSON */
        ospprof_buf_puts(b, "0");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, v);
        if (strtod(tmp, NULL) == v) break;
    }
    ospprof_buf_puts(b, tmp);
}

void ospprof_buf_u64(ospprof_buf *b, uint64_t v) {
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    ospprof_buf_put(b, tmp + i, (size_t)(24 - i));
}

void ospprof_json_seconds(ospprof_buf *b, uint64_t ns) {
    /* For ns < 9e15 the exact decimal ns·10^-9 is the shortest string that reads back as
     * the correctly rounded quotient ns/1e9 (any shorter decimal differs by at least
     * 1e-9, far more than half an ulp), so p = the significant digits of ns, and %.<p>g
     * prints exactly that decimal. It is written directly when %g would choose fixed
     * notation (exponent X in [-4, p)); otherwise snprintf does it. */
    if (ns == 0) {
        ospprof_buf_putc(b, '0');
        return;
    }
    if (ns >= 9000000000000000ull) {
        ospprof_json_double(b, (double)ns / 1e9);
        return;
    }
    int digits = 0, sig = 0;
    uint64_t m = ns;
    while (m % 10 == 0) m /= 10;
    for (uint64_t k = m; k; k /= 10) sig++;
    for (uint64_t k = ns; k; k /= 10) digits++;
    int x = digits - 10; /* decimal exponent of ns / 1e9 */
    if (x >= -4 && x < sig) {
        ospprof_buf_u64(b, ns / 1000000000u);
        uint64_t frac = ns % 1000000000u;
        if (frac) {
            char f[10];
            f[0] = '.';
            for (int i = 9; i >= 1; i--, frac /= 10) f[i] = (char)('0' + frac % 10);
            int end = 10;
            while (f[end - 1] == '0') end--;
            ospprof_buf_put(b, f, (size_t)end);
        }
        return;
    }
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%.*g", sig, (double)ns / 1e9);
    ospprof_buf_puts(b, tmp);
}
