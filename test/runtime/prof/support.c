/* support.c — see support.h. */
#define _GNU_SOURCE
#include "support.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    size_t k;
    while ((k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap + 1);
        }
    }
    fclose(f);
    b[n] = '\0';
    *len = n;
    return b;
}

/* Exact scan of the "stacks" array: integers must not go through a double (§(e)). */
static void scan_stacks(struct raw *r, const char *text) {
    const char *p = strstr(text, "\"stacks\":[");
    assert_non_null(p);
    p += strlen("\"stacks\":[");
    size_t k = 0;
    while (*p == '[' || *p == ',') {
        if (*p == ',') p++;
        assert_int_equal(*p, '[');
        p++;
        assert_true(k < r->nstacks);
        uint32_t j = 0;
        while (*p != ']') {
            if (*p == ',') p++;
            char *end;
            errno = 0;
            unsigned long long v = strtoull(p, &end, 10);
            assert_int_equal(errno, 0);
            assert_true(end > p);
            assert_true(j < r->stack_len[k]);
            r->stacks[k][j++] = v;
            p = end;
        }
        assert_int_equal(j, r->stack_len[k]);
        p++;
        k++;
    }
    assert_int_equal(*p, ']');
    assert_int_equal(k, r->nstacks);
}

static bool is_int(const cJSON *v) {
    return cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)v->valuedouble;
}

static void expect_key(const cJSON **it, const char *key) {
    if (*it == NULL || strcmp((*it)->string, key) != 0) {
        fail_msg("raw profile: expected key \"%s\" here, found \"%s\"", key,
                 *it ? (*it)->string : "(end)");
    }
}

void raw_load(struct raw *r, const char *path) {
    memset(r, 0, sizeof *r);
    size_t len = 0;
    char *text = slurp(path, &len);
    if (!text) fail_msg("cannot read raw profile %s: %s", path, strerror(errno));
    /* One line: the only newline is the final one. */
    assert_true(len > 2);
    assert_int_equal(text[len - 1], '\n');
    assert_null(memchr(text, '\n', len - 1));
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) fail_msg("raw profile %s is not valid JSON near: %.40s", path, cJSON_GetErrorPtr());
    assert_true(cJSON_IsObject(root));

    static const char *const order[] = {
        OSP_RAW_KEY_VERSION, OSP_RAW_KEY_PID, OSP_RAW_KEY_EXE, OSP_RAW_KEY_RATE_HZ,
        OSP_RAW_KEY_PLATFORM, OSP_RAW_KEY_START_UNIX_NS, OSP_RAW_KEY_END_UNIX_NS,
        OSP_RAW_KEY_IMAGES, OSP_RAW_KEY_THREADS, OSP_RAW_KEY_STACKS, OSP_RAW_KEY_SAMPLES,
        OSP_RAW_KEY_DROPPED,
        /* additional keys, in this writer's order */
        OSP_RAW_KEY_SAMPLE_WEIGHTS_NS, OSP_RAW_KEY_TICKS, OSP_RAW_KEY_LATE_TICKS,
        OSP_RAW_KEY_DROPPED_REASONS, OSP_RAW_KEY_THREADS_OVER_LIMIT, OSP_RAW_KEY_TRUNCATED_STACKS,
        OSP_RAW_KEY_ENGINE, OSP_RAW_KEY_UNWIND, OSP_RAW_KEY_PROFILER_CPU_NS};
    const cJSON *it = root->child;
    const cJSON *v[sizeof order / sizeof *order];
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        expect_key(&it, order[i]);
        v[i] = it;
        it = it->next;
    }
    assert_null(it); /* nothing after profiler_cpu_ns */
    assert_true(is_int(v[20]) && v[20]->valuedouble >= 0);
    r->profiler_cpu_ns = (uint64_t)v[20]->valuedouble;
    assert_true(cJSON_IsString(v[18]));
    snprintf(r->engine, sizeof r->engine, "%s", v[18]->valuestring);
    assert_true(strcmp(r->engine, OSP_RAW_ENGINE_PERF_EVENT) == 0 ||
                strcmp(r->engine, OSP_RAW_ENGINE_CPU_TIMER) == 0 ||
                strcmp(r->engine, OSP_RAW_ENGINE_SAMPLER) == 0);

    assert_true(is_int(v[0]) && v[0]->valuedouble == OSP_RAW_VERSION);
    assert_true(is_int(v[1]));
    r->pid = (int64_t)v[1]->valuedouble;
    assert_true(cJSON_IsString(v[2]) && v[2]->valuestring[0] == '/');
    snprintf(r->exe, sizeof r->exe, "%s", v[2]->valuestring);
    assert_true(is_int(v[3]));
    r->rate_hz = (uint32_t)v[3]->valuedouble;
    assert_true(r->rate_hz >= 10 && r->rate_hz <= 10000);
    assert_true(cJSON_IsString(v[4]));
    snprintf(r->platform, sizeof r->platform, "%s", v[4]->valuestring);
    assert_true(strcmp(r->platform, "linux-x86_64") == 0 ||
                strcmp(r->platform, "linux-arm64") == 0);
    assert_true(is_int(v[5]) && is_int(v[6]));
    r->start_unix_ns = (uint64_t)v[5]->valuedouble;
    r->end_unix_ns = (uint64_t)v[6]->valuedouble;
    assert_true(r->end_unix_ns >= r->start_unix_ns);

    /* images */
    assert_true(cJSON_IsArray(v[7]));
    r->nimages = (size_t)cJSON_GetArraySize(v[7]);
    assert_true(r->nimages >= 1);
    r->images = calloc(r->nimages, sizeof *r->images);
    size_t i = 0;
    for (const cJSON *im = v[7]->child; im; im = im->next, i++) {
        static const char *const ik[] = {OSP_RAW_IMAGE_PATH,      OSP_RAW_IMAGE_BASE,
                                         OSP_RAW_IMAGE_SLIDE,     OSP_RAW_IMAGE_TEXT,
                                         OSP_RAW_IMAGE_TEXT_SIZE, OSP_RAW_IMAGE_ARCH};
        const cJSON *f = im->child;
        const cJSON *iv[6];
        for (size_t q = 0; q < 6; q++) {
            expect_key(&f, ik[q]);
            iv[q] = f;
            f = f->next;
        }
        for (; f; f = f->next) {
            if (strcmp(f->string, OSP_RAW_IMAGE_BUILD_ID) == 0) {
                assert_true(cJSON_IsString(f));
                for (const char *c = f->valuestring; *c; c++)
                    assert_non_null(strchr("0123456789abcdef", *c));
            } else if (strcmp(f->string, OSP_RAW_IMAGE_SYMBOLS) == 0) {
                assert_true(cJSON_IsArray(f));
                r->images[i].has_symbols = true;
                r->images[i].nsymbols = (size_t)cJSON_GetArraySize(f);
                for (const cJSON *s = f->child; s; s = s->next) {
                    assert_true(
                        cJSON_IsString(cJSON_GetObjectItemCaseSensitive(s, OSP_RAW_SYMBOL_NAME)));
                    assert_true(is_int(cJSON_GetObjectItemCaseSensitive(s, OSP_RAW_SYMBOL_ADDR)));
                    assert_true(is_int(cJSON_GetObjectItemCaseSensitive(s, OSP_RAW_SYMBOL_SIZE)));
                }
            } else {
                fail_msg("unexpected image key %s", f->string);
            }
        }
        assert_true(cJSON_IsString(iv[0]) && iv[0]->valuestring[0] != '\0');
        snprintf(r->images[i].path, sizeof r->images[i].path, "%s", iv[0]->valuestring);
        for (size_t q = 1; q < 5; q++) assert_true(is_int(iv[q]) && iv[q]->valuedouble >= 0);
        r->images[i].base = (uint64_t)iv[1]->valuedouble;
        r->images[i].slide = (uint64_t)iv[2]->valuedouble;
        r->images[i].text = (uint64_t)iv[3]->valuedouble;
        r->images[i].text_size = (uint64_t)iv[4]->valuedouble;
        assert_true(cJSON_IsString(iv[5]));
        snprintf(r->images[i].arch, sizeof r->images[i].arch, "%s", iv[5]->valuestring);
    }

    /* threads */
    assert_true(cJSON_IsArray(v[8]));
    r->nthreads = (size_t)cJSON_GetArraySize(v[8]);
    r->threads = calloc(r->nthreads + 1, sizeof *r->threads);
    i = 0;
    for (const cJSON *t = v[8]->child; t; t = t->next, i++) {
        const cJSON *f = t->child;
        expect_key(&f, OSP_RAW_THREAD_FIBER);
        assert_true(is_int(f));
        r->threads[i].fiber = (int64_t)f->valuedouble;
        f = f->next;
        expect_key(&f, OSP_RAW_THREAD_LABEL);
        assert_true(cJSON_IsString(f));
        assert_true(strlen(f->valuestring) <= 15);
        snprintf(r->threads[i].label, sizeof r->threads[i].label, "%s", f->valuestring);
        f = f->next;
        expect_key(&f, OSP_RAW_THREAD_TID);
        assert_true(is_int(f) && f->valuedouble > 0);
        r->threads[i].tid = (int64_t)f->valuedouble;
        assert_null(f->next);
    }

    /* stacks */
    assert_true(cJSON_IsArray(v[9]));
    r->nstacks = (size_t)cJSON_GetArraySize(v[9]);
    r->stacks = calloc(r->nstacks + 1, sizeof *r->stacks);
    r->stack_len = calloc(r->nstacks + 1, sizeof *r->stack_len);
    r->truncated = calloc(r->nstacks + 1, sizeof *r->truncated);
    i = 0;
    for (const cJSON *s = v[9]->child; s; s = s->next, i++) {
        assert_true(cJSON_IsArray(s));
        int n = cJSON_GetArraySize(s);
        assert_true(n >= 1 && n <= 128);
        /* Any unsigned 64-bit value is an address; scan_stacks parses them exactly. */
        for (const cJSON *a = s->child; a; a = a->next)
            assert_true(cJSON_IsNumber(a) && a->valuedouble >= 0);
        r->stack_len[i] = (uint32_t)n;
        r->stacks[i] = calloc((size_t)n, sizeof **r->stacks);
    }
    scan_stacks(r, text);

    /* samples + weights */
    assert_true(cJSON_IsArray(v[10]));
    assert_true(cJSON_IsArray(v[12]));
    r->nsamples = (size_t)cJSON_GetArraySize(v[10]);
    assert_int_equal(cJSON_GetArraySize(v[12]), r->nsamples);
    r->samples = calloc(r->nsamples + 1, sizeof *r->samples);
    i = 0;
    const cJSON *w = v[12]->child;
    for (const cJSON *s = v[10]->child; s; s = s->next, w = w->next, i++) {
        assert_true(cJSON_IsArray(s));
        assert_int_equal(cJSON_GetArraySize(s), 4);
        for (const cJSON *a = s->child; a; a = a->next)
            assert_true(is_int(a) && a->valuedouble >= 0);
        r->samples[i].t = (uint64_t)cJSON_GetArrayItem(s, 0)->valuedouble;
        r->samples[i].row = (uint32_t)cJSON_GetArrayItem(s, 1)->valuedouble;
        r->samples[i].stack = (uint32_t)cJSON_GetArrayItem(s, 2)->valuedouble;
        r->samples[i].state = (uint32_t)cJSON_GetArrayItem(s, 3)->valuedouble;
        assert_true(r->samples[i].row < r->nthreads);
        assert_true(r->samples[i].stack < r->nstacks);
        assert_true(r->samples[i].state == OSP_RAW_STATE_ON_CPU ||
                    r->samples[i].state == OSP_RAW_STATE_WAITING);
        assert_true(is_int(w) && w->valuedouble >= 0);
        r->samples[i].weight = (uint64_t)w->valuedouble;
        if (i > 0) assert_true(r->samples[i].t >= r->samples[i - 1].t); /* time order */
    }

    assert_true(is_int(v[11]));
    r->dropped = (uint64_t)v[11]->valuedouble;
    assert_true(is_int(v[13]) && is_int(v[14]));
    r->ticks = (uint64_t)v[13]->valuedouble;
    r->late_ticks = (uint64_t)v[14]->valuedouble;
    assert_true(r->late_ticks <= r->ticks);
    assert_true(cJSON_IsObject(v[15]));
    static const char *const reasons[OSP_RAW_DROP_COUNT] = OSP_RAW_DROP_NAMES;
    const cJSON *f = v[15]->child;
    uint64_t sum = 0;
    for (size_t q = 0; q < OSP_RAW_DROP_COUNT; q++) {
        expect_key(&f, reasons[q]);
        assert_true(is_int(f) && f->valuedouble >= 0);
        r->dropped_reasons[q] = (uint64_t)f->valuedouble;
        sum += r->dropped_reasons[q];
        f = f->next;
    }
    assert_null(f);
    assert_int_equal(sum, r->dropped);
    assert_true(is_int(v[16]));
    r->threads_over_limit = (uint64_t)v[16]->valuedouble;
    assert_true(cJSON_IsArray(v[17]));
    for (const cJSON *t = v[17]->child; t; t = t->next) {
        assert_true(is_int(t) && t->valuedouble >= 0 && t->valuedouble < (double)r->nstacks);
        r->truncated[(size_t)t->valuedouble] = true;
    }
    /* unwind: how the walks ended, in the writer's order, and the blocked reads. */
    static const char *const ends[OSP_RAW_UNWIND_COUNT] = OSP_RAW_UNWIND_NAMES;
    assert_true(cJSON_IsObject(v[19]));
    const cJSON *u = v[19]->child;
    for (size_t i = 0; i < OSP_RAW_UNWIND_COUNT + 2; i++) {
        expect_key(&u, i < OSP_RAW_UNWIND_COUNT    ? ends[i]
                       : i == OSP_RAW_UNWIND_COUNT ? OSP_RAW_UNWIND_BLOCKED_READS
                                                   : OSP_RAW_UNWIND_BLOCKED_SKIPS);
        assert_true(is_int(u) && u->valuedouble >= 0);
        r->unwind[i] = (uint64_t)u->valuedouble;
        u = u->next;
    }
    assert_null(u);
    /* Stacks are interned: no two are equal. */
    for (size_t a = 0; a < r->nstacks && r->nstacks < 2000; a++)
        for (size_t b = a + 1; b < r->nstacks; b++)
            if (r->stack_len[a] == r->stack_len[b])
                assert_true(
                    memcmp(r->stacks[a], r->stacks[b], r->stack_len[a] * sizeof(uint64_t)) != 0);
    cJSON_Delete(root);
    free(text);
}

void raw_free(struct raw *r) {
    for (size_t i = 0; i < r->nstacks; i++) free(r->stacks[i]);
    free(r->stacks);
    free(r->stack_len);
    free(r->truncated);
    free(r->samples);
    free(r->threads);
    free(r->images);
    memset(r, 0, sizeof *r);
}

size_t raw_main_image(const struct raw *r) {
    for (size_t i = 0; i < r->nimages; i++)
        if (strcmp(r->images[i].path, r->exe) == 0) return i;
    fail_msg("no image for the executable %s", r->exe);
    return 0;
}

bool raw_in_text(const struct raw *r, size_t i, uint64_t addr) {
    return addr >= r->images[i].text && addr < r->images[i].text + r->images[i].text_size;
}

const char *sym_name(uint64_t addr, bool is_return) {
    Dl_info info;
    uint64_t a = is_return ? addr - 1 : addr;
    if (dladdr((void *)(uintptr_t)a, &info) == 0 || info.dli_sname == NULL) return "";
    return info.dli_sname;
}

bool raw_stack_has(const struct raw *r, uint32_t k, const char *fn) {
    for (uint32_t j = 0; j < r->stack_len[k]; j++)
        if (strcmp(sym_name(r->stacks[k][j], j > 0), fn) == 0) return true;
    return false;
}

long raw_row(const struct raw *r, const char *label, int64_t fiber) {
    for (size_t i = 0; i < r->nthreads; i++)
        if (r->threads[i].fiber == fiber && strcmp(r->threads[i].label, label) == 0) return (long)i;
    return -1;
}

double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double mono_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Not instrumented by ThreadSanitizer: its load and store hooks would otherwise be the leaf
 * of about half the samples, and the tests count samples whose leaf is this function. */
__attribute__((noinline, no_sanitize("thread"))) double hot_loop(long iterations) {
    volatile double x = 1.0;
    for (long i = 0; i < iterations; i++) x = x * 1.0000001 + 0.5;
    return x;
}

__attribute__((noinline)) double burn_cpu(double seconds) {
    double end = thread_cpu_seconds() + seconds, acc = 0;
    while (thread_cpu_seconds() < end) acc += hot_loop(100000);
    return acc;
}

void scratch_dir(char *out, size_t cap, const char *tag) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    snprintf(out, cap, "%s/osprey-prof-%s-XXXXXX", base, tag);
    assert_non_null(mkdtemp(out));
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void scratch_cleanup(const char *dir) {
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int run_child(char *const argv[], char *const env[], const char *cwd, const char *out_path,
              char *err, size_t cap) {
    int pipefd[2];
    assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int ofd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (ofd < 0) _exit(125);
        dup2(ofd, 1);
        dup2(pipefd[1], 2);
        if (cwd && chdir(cwd) != 0) _exit(126);
        execve(argv[0], argv, env);
        _exit(127);
    }
    close(pipefd[1]);
    size_t n = 0;
    for (;;) {
        ssize_t k = read(pipefd[0], err + n, cap - 1 - n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
        if (n == cap - 1) break;
    }
    err[n] = '\0';
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

int thread_count(void) {
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

long read_text(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = 0;
    for (;;) {
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
        if (n == cap - 1) break;
    }
    close(fd);
    buf[n] = '\0';
    return (long)n;
}

bool elf_symbol(const char *path, const char *name, uint64_t *addr, uint64_t *size) {
    size_t len = 0;
    char *img = slurp(path, &len);
    if (!img) return false;
    bool found = false;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shoff > len ||
        (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff)
        goto out;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
        if ((sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) ||
            sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *st = &sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > len || st->sh_offset + st->sh_size > len) continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++) {
            if (sym[k].st_name >= st->sh_size || sym[k].st_value == 0) continue;
            if (strcmp(img + st->sh_offset + sym[k].st_name, name) == 0) {
                *addr = sym[k].st_value;
                *size = sym[k].st_size;
                found = true;
                break;
            }
        }
    }
out:
    free(img);
    return found;
}

int sampler_count(void) {
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[128], comm[64];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if (read_text(path, comm, sizeof comm) > 0 && strcmp(comm, "osprey-sampler\n") == 0) n++;
    }
    closedir(d);
    return n;
}

void raw_print_dropped(const struct raw *r, const char *what) {
    static const char *const reasons[OSP_RAW_DROP_COUNT] = OSP_RAW_DROP_NAMES;
    char line[512];
    int n = snprintf(line, sizeof line, "%s [%s]: dropped %llu", what, r->engine,
                     (unsigned long long)r->dropped);
    for (size_t q = 0; q < OSP_RAW_DROP_COUNT && n > 0 && (size_t)n < sizeof line; q++)
        if (r->dropped_reasons[q])
            n += snprintf(line + n, sizeof line - (size_t)n, " %s=%llu", reasons[q],
                          (unsigned long long)r->dropped_reasons[q]);
    print_message("%s\n", line);
}

uint64_t raw_dropped_samples(const struct raw *r) {
    return r->dropped - r->dropped_reasons[OSP_RAW_DROP_NO_STACK] -
           r->dropped_reasons[OSP_RAW_DROP_CPU_UNSAMPLED];
}

double raw_engine_hz(const struct raw *r, double hz) {
    /* POSIX CPU-time timers expire at the kernel's scheduler tick (CONFIG_HZ, 100 to
     * 1000); measured here at 90-150 samples per CPU-second whatever the rate asked. */
    if (strcmp(r->engine, OSP_RAW_ENGINE_CPU_TIMER) == 0 && hz > 60) return 60;
    return hz;
}

double raw_wait_hz(const struct raw *r, double hz) {
    /* Beside a kernel timer the sampler thread ticks 100 times per second, more above
     * 3.2 kHz where the rings need it (osp_prof__tick_ns, prof_session.h). */
    if (strcmp(r->engine, OSP_RAW_ENGINE_SAMPLER) == 0) return hz;
    double t = hz / 32 > 100 ? hz / 32 : 100;
    return hz > t ? t : hz;
}

void plant(struct planted *p, size_t pages) {
    size_t pg = (size_t)getpagesize();
    p->map_len = (pages + 2) * pg;
    p->map = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p->map != MAP_FAILED);
    assert_int_equal(mprotect(p->map, pg, PROT_NONE), 0);
    assert_int_equal(mprotect(p->map + (pages + 1) * pg, pg, PROT_NONE), 0);
    p->lo = (uintptr_t)p->map + pg;
    p->hi = p->lo + pages * pg;
    memset((void *)p->lo, 0xEE, pages * pg);
}

void unplant(struct planted *p) {
    munmap(p->map, p->map_len);
}
