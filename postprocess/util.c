/*
 * util.c — buffers, string interning, UTF-8, JSON literals, atomic file output.
 * Source: docs/spec/profiler.md §(g.1) (JSON output rules), §(g.4) (folded sanitising), §(i)
 * (temporary name + rename; a character device or FIFO is written in place).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

void ospprof_seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static _Noreturn void out_of_memory(void) {
    fputs("osprey: out of memory\n", stderr);
    abort();
}

void *ospprof_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory();
    return q;
}

void *ospprof_xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) out_of_memory();
    return p;
}

char *ospprof_xstrndup(const char *s, size_t n) {
    char *c = ospprof_xrealloc(NULL, n + 1);
    memcpy(c, s, n);
    c[n] = 0;
    return c;
}

char *ospprof_xstrdup(const char *s) {
    return ospprof_xstrndup(s, strlen(s));
}

/* ---- buffer -------------------------------------------------------------------- */

static void buf_reserve(ospprof_buf *b, size_t extra) {
    if (b->n + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra) cap *= 2;
    b->p = ospprof_xrealloc(b->p, cap);
    b->cap = cap;
}

void ospprof_buf_put(ospprof_buf *b, const void *s, size_t n) {
    buf_reserve(b, n + 1);
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void ospprof_buf_puts(ospprof_buf *b, const char *s) {
    ospprof_buf_put(b, s, strlen(s));
}

void ospprof_buf_putc(ospprof_buf *b, char c) {
    buf_reserve(b, 2);
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
    buf_reserve(b, (size_t)n + 1);
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

/* ---- string table ---------------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

uint32_t ospprof_intern(ospprof_strtab *t, const char *s, size_t len) {
    if (t->nslots == 0 || (t->n + 1) * 2 > t->nslots) {
        size_t ns = t->nslots ? t->nslots * 2 : 1024;
        uint32_t *slots = calloc(ns, sizeof *slots);
        if (!slots) abort();
        for (size_t i = 0; i < t->n; i++) {
            size_t h = hash_bytes(t->str[i], t->len[i]) & (ns - 1);
            while (slots[h]) h = (h + 1) & (ns - 1);
            slots[h] = (uint32_t)i + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->nslots = ns;
    }
    size_t h = hash_bytes(s, len) & (t->nslots - 1);
    while (t->slots[h]) {
        uint32_t id = t->slots[h] - 1;
        if (t->len[id] == len && memcmp(t->str[id], s, len) == 0) return id;
        h = (h + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 256;
        t->str = ospprof_xrealloc(t->str, t->cap * sizeof *t->str);
        t->len = ospprof_xrealloc(t->len, t->cap * sizeof *t->len);
    }
    char *c = ospprof_xstrndup(s, len);
    t->str[t->n] = c;
    t->len[t->n] = len;
    t->slots[h] = (uint32_t)t->n + 1;
    return (uint32_t)t->n++;
}

void ospprof_strtab_free(ospprof_strtab *t) {
    for (size_t i = 0; i < t->n; i++) free(t->str[i]);
    free(t->str);
    free(t->len);
    free(t->slots);
    memset(t, 0, sizeof *t);
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

static bool is_control(uint32_t cp) {
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
    buf_reserve(b, n + 3);
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
        } else if (is_control(cp)) {
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

void ospprof_folded_name(ospprof_buf *b, const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str);
    if (n == 0) {
        ospprof_buf_puts(b, "[unknown]");
        return;
    }
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = ospprof_utf8_decode(s + i, n - i, &cp);
        if (len == 0) {
            ospprof_buf_put(b, "\xEF\xBF\xBD", 3);
            i++;
        } else if (cp == ';' || is_space(cp) || is_control(cp)) {
            ospprof_buf_putc(b, '_');
            i += len;
        } else {
            ospprof_buf_put(b, s + i, len);
            i += len;
        }
    }
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

/* ---- atomic output ------------------------------------------------------------------ */

/* Temporaries being written, for ospprof_remove_temporaries() (a driver terminated by a
 * signal removes them). Registered in the same critical section as they are created and
 * unregistered as they are renamed or removed, so the list is never stale. */
enum { MAX_TEMPS = 8 };
static pthread_mutex_t g_temps_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_temps[MAX_TEMPS];

static void temps_forget_locked(const char *tmp) {
    for (int i = 0; i < MAX_TEMPS; i++)
        if (g_temps[i] == tmp) g_temps[i] = NULL;
}

void ospprof_remove_temporaries(void) {
    pthread_mutex_lock(&g_temps_lock);
    for (int i = 0; i < MAX_TEMPS; i++) {
        if (g_temps[i]) unlink(g_temps[i]);
        g_temps[i] = NULL; /* the owner still frees the string */
    }
    pthread_mutex_unlock(&g_temps_lock);
}

/* Decide how `path` is written (see internal.h): sets o->dest (rename target) or leaves it
 * NULL for a stream written in place. Returns 0 or an errno-style code; *what gets a
 * wording for the codes strerror does not describe well. */
static int out_resolve(ospprof_out *o, const char *path, const char **what) {
    struct stat lst, st;
    *what = NULL;
    if (lstat(path, &lst) != 0) {
        if (errno != ENOENT) return errno;
        o->dest = ospprof_xstrdup(path);
        return 0; /* a new file */
    }
    st = lst;
    if (S_ISLNK(lst.st_mode) && stat(path, &st) != 0) {
        if (errno == ENOENT) *what = "it is a symbolic link to a missing file";
        return errno;
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return 0; /* e.g. /dev/null: in place */
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (!S_ISREG(st.st_mode)) {
        *what = "not a regular file, character device or FIFO";
        return EINVAL;
    }
    if (S_ISLNK(lst.st_mode)) {
        /* Replace the file the link points to, in its own directory; the link stays. */
        o->dest = realpath(path, NULL);
        if (!o->dest) return errno;
    } else {
        o->dest = ospprof_xstrdup(path);
    }
    return 0;
}

static void out_free(ospprof_out *o) {
    free(o->tmp);
    free(o->dest);
    free(o->path);
    memset(o, 0, sizeof *o);
}

int ospprof_out_open(ospprof_out *o, const char *path, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    size_t n = strlen(path);
    o->path = ospprof_xstrndup(path, n);
    const char *what = NULL;
    int e = out_resolve(o, path, &what);
    if (e) {
        if (what)
            ospprof_seterr(err, errlen, "cannot write %s: %s", path, what);
        else
            ospprof_seterr(err, errlen, "cannot write %s: %s", path, strerror(e));
        out_free(o);
        return -1;
    }
    int fd;
    if (!o->dest) {
        /* A character device or FIFO is written in place, never replaced by a file. */
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            ospprof_seterr(err, errlen, "cannot write %s: %s", path, strerror(errno));
            out_free(o);
            return -1;
        }
    } else {
        /* temporary beside the target: "<dir>/.<base>.XXXXXX" */
        size_t dn = strlen(o->dest);
        const char *slash = strrchr(o->dest, '/');
        size_t dirlen = slash ? (size_t)(slash - o->dest) + 1 : 0;
        const char *base = o->dest + dirlen;
        o->tmp = ospprof_xrealloc(NULL, dn + 16);
        snprintf(o->tmp, dn + 16, "%.*s.%s.XXXXXX", (int)dirlen, o->dest, base);
        pthread_mutex_lock(&g_temps_lock);
        fd = mkstemp(o->tmp);
        e = errno;
        if (fd >= 0) {
            for (int i = 0; i < MAX_TEMPS; i++)
                if (!g_temps[i]) {
                    g_temps[i] = o->tmp;
                    break;
                }
        }
        pthread_mutex_unlock(&g_temps_lock);
        if (fd < 0) {
            ospprof_seterr(err, errlen, "cannot write %s: %s", path, strerror(e));
            out_free(o);
            return -1;
        }
        mode_t mask = umask(0);
        umask(mask);
        (void)fchmod(fd, 0666 & ~mask);
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        ospprof_seterr(err, errlen, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        ospprof_out_abort(o);
        return -1;
    }
    setvbuf(o->f, NULL, _IOFBF, 1 << 16);
    return 0;
}

int ospprof_out_write(ospprof_out *o, const void *p, size_t n) {
    if (n == 0) return 0;
    return fwrite(p, 1, n, o->f) == n ? 0 : -1;
}

void ospprof_out_abort(ospprof_out *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) {
        pthread_mutex_lock(&g_temps_lock);
        unlink(o->tmp);
        temps_forget_locked(o->tmp);
        pthread_mutex_unlock(&g_temps_lock);
    }
    out_free(o);
}

int ospprof_out_commit(ospprof_out *o, char *err, size_t errlen) {
    int e = 0;
    if (ferror(o->f)) e = errno ? errno : EIO;
    if (fflush(o->f) != 0 && !e) e = errno;
    if (fclose(o->f) != 0 && !e) e = errno;
    o->f = NULL;
    if (!e && o->tmp) {
        pthread_mutex_lock(&g_temps_lock);
        if (rename(o->tmp, o->dest) != 0)
            e = errno;
        else
            temps_forget_locked(o->tmp);
        pthread_mutex_unlock(&g_temps_lock);
    }
    if (e) {
        ospprof_seterr(err, errlen, "cannot write %s: %s", o->path, strerror(e));
        ospprof_out_abort(o);
        return -1;
    }
    out_free(o);
    return 0;
}

bool ospprof_is_user_file(const char *file) {
    size_t n = strlen(file);
    if (n >= 4 && strcasecmp(file + n - 4, ".osp") == 0) return true;
    if (n >= 6 && strcasecmp(file + n - 6, ".ospml") == 0) return true;
    return false;
}

/* ---- two-word hash map ------------------------------------------------------------ */

static size_t map_hash(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return (size_t)h;
}

static void map_grow(ospprof_map *m) {
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    uint64_t *ka = calloc(ncap, sizeof *ka), *kb = calloc(ncap, sizeof *kb);
    uint32_t *val = calloc(ncap, sizeof *val);
    uint8_t *used = calloc(ncap, 1);
    if (!ka || !kb || !val || !used) abort();
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        size_t h = map_hash(m->ka[i], m->kb[i]) & (ncap - 1);
        while (used[h]) h = (h + 1) & (ncap - 1);
        ka[h] = m->ka[i], kb[h] = m->kb[i], val[h] = m->val[i], used[h] = 1;
    }
    free(m->ka), free(m->kb), free(m->val), free(m->used);
    m->ka = ka, m->kb = kb, m->val = val, m->used = used, m->cap = ncap;
}

uint32_t *ospprof_map_put(ospprof_map *m, uint64_t a, uint64_t b, uint32_t fresh, bool *inserted) {
    if ((m->n + 1) * 2 > m->cap) map_grow(m);
    size_t h = map_hash(a, b) & (m->cap - 1);
    while (m->used[h]) {
        if (m->ka[h] == a && m->kb[h] == b) {
            if (inserted) *inserted = false;
            return &m->val[h];
        }
        h = (h + 1) & (m->cap - 1);
    }
    m->ka[h] = a, m->kb[h] = b, m->val[h] = fresh, m->used[h] = 1;
    m->n++;
    if (inserted) *inserted = true;
    return &m->val[h];
}

bool ospprof_map_get(const ospprof_map *m, uint64_t a, uint64_t b, uint32_t *v) {
    if (!m->cap) return false;
    size_t h = map_hash(a, b) & (m->cap - 1);
    while (m->used[h]) {
        if (m->ka[h] == a && m->kb[h] == b) {
            *v = m->val[h];
            return true;
        }
        h = (h + 1) & (m->cap - 1);
    }
    return false;
}

void ospprof_map_free(ospprof_map *m) {
    free(m->ka), free(m->kb), free(m->val), free(m->used);
    memset(m, 0, sizeof *m);
}
