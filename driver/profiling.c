/* profiling.c — see profiling.h. */
#include "profiling.h"

#include "attach.h"
#include "attach_elf.h"
#include "ospprof.h"
#include "output.h"
#include "process.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

int prof_parse_duration(const char *text, uint64_t *duration_ns) {
    /* digits [ "." digits ]: parsed by hand so "1e3", " 2", "0x10" and "inf" are refused */
    uint64_t whole = 0, frac_ns = 0, scale = 100000000u;
    const char *p = text;
    if (!(*p >= '0' && *p <= '9') && !(*p == '.' && p[1] >= '0' && p[1] <= '9')) return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (uint64_t)(*p - '0');
        if (whole > 10000000u) return -1;
    }
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return -1;
        for (; *p >= '0' && *p <= '9'; p++) {
            frac_ns += (uint64_t)(*p - '0') * scale;
            scale /= 10;
        }
    }
    if (*p) return -1;
    uint64_t ns = whole * 1000000000u + frac_ns;
    if (ns == 0) return -1;
    *duration_ns = ns;
    return 0;
}

char *prof_export_clash(const char *prefix, bool pprof, const char *protect) {
    if (!protect) return NULL;
    for (int i = 0; i < OSPPROF_NEXPORTS + (pprof ? 1 : 0); i++) {
        char *p = drv_xasprintf("%s%s", prefix,
                                i < OSPPROF_NEXPORTS ? ospprof_export_ext[i] : OSPPROF_PPROF_EXT);
        if (out_same_file(p, protect)) return p;
        free(p);
    }
    return NULL;
}

int prof_check_export_dir(const char *prefix, bool pprof, const char *protect,
                          const char *protect_what) {
    const char *slash = strrchr(prefix, '/');
    char *dir = slash ? drv_xasprintf("%.*s", (int)(slash - prefix) + 1, prefix) : drv_xstrdup(".");
    struct stat st;
    int e = 0;
    if (stat(dir, &st) != 0)
        e = errno;
    else if (!S_ISDIR(st.st_mode))
        e = ENOTDIR;
    if (e) {
        bool has_slash = dir[strlen(dir) - 1] == '/';
        drv_diag("osprey: error: cannot write the profile to '%s%s': %s", dir, has_slash ? "" : "/",
                 strerror(e));
        free(dir);
        return -1;
    }
    free(dir);
    /* An input that is one of the exports (`osprey a.folded --profile`) would be replaced by
     * the run's result: refused now, before it is built or run, not found after the run. */
    char *clash = prof_export_clash(prefix, pprof, protect);
    if (clash) {
        drv_diag("osprey: error: the export '%s' would overwrite the %s '%s'", clash, protect_what,
                 protect);
        free(clash);
        return -1;
    }
    /* The directory is there: each export is tried as its atomic write will make it (a
     * temporary created and removed), since access() says yes to root almost everywhere
     * (/proc, /sys, a read-only mount); an export path that is a directory fails here too. */
    for (int i = 0; i < OSPPROF_NEXPORTS + (pprof ? 1 : 0); i++) {
        char *p = drv_xasprintf("%s%s", prefix,
                                i < OSPPROF_NEXPORTS ? ospprof_export_ext[i] : OSPPROF_PPROF_EXT);
        out_target t = {0};
        char msg[PATH_MAX + 128];
        int bad = out_check(p, &t, msg, sizeof msg);
        out_target_free(&t);
        free(p);
        if (bad) {
            drv_diag("osprey: error: %s (the profile exports)", msg);
            return -1;
        }
    }
    return 0;
}

/* The driver's environment plus name=value pairs (earlier definitions of those names
 * removed). `pairs` is {name, value, name, value, ..., NULL}. Free with env_free_added. */
static char **env_plus(const char *const *pairs, size_t *nadded) {
    size_t n = 0, k = 0, np = 0;
    while (environ[n]) n++;
    while (pairs[2 * np]) np++;
    char **env = drv_xcalloc(n + np + 1, sizeof *env);
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t j = 0; j < np && !replaced; j++) {
            size_t nl = strlen(pairs[2 * j]);
            replaced = strncmp(environ[i], pairs[2 * j], nl) == 0 && environ[i][nl] == '=';
        }
        if (!replaced) env[k++] = environ[i];
    }
    for (size_t j = 0; j < np; j++) {
        env[k++] = drv_xasprintf("%s=%s", pairs[2 * j], pairs[2 * j + 1]);
    }
    env[k] = NULL;
    *nadded = np;
    return env;
}

static void env_free_added(char **env, size_t nadded) {
    if (!env) return;
    size_t n = 0;
    while (env[n]) n++;
    for (size_t i = 0; i < nadded && i < n; i++) free(env[n - 1 - i]);
    free(env);
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
    }
}

int prof_run_and_postprocess(char *const argv[], const char *preload, const char *scratch,
                             const char *stem, uint64_t duration_ns, const char *binary,
                             const char *program, const char *prefix, const char *no_raw_hint,
                             const prof_post_options *post) {
    char rnd[9];
    random_hex(rnd);
    char *raw = drv_xasprintf("%s/%s-%ld-%s.osprof.json", scratch, stem, (long)getpid(), rnd);
    /* §(l.5): the raw path can be created (probed and removed before the program starts). */
    int fd = open(raw, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        drv_diag("osprey: error: cannot create the raw profile '%s': %s", raw, strerror(errno));
        free(raw);
        return 2;
    }
    close(fd);
    unlink(raw);

    char *ld_preload = NULL;
    if (preload) {
        const char *old = getenv("LD_PRELOAD");
        ld_preload = drv_xasprintf("%s%s%s", preload, old && *old ? ":" : "", old ? old : "");
    }
    const char *pairs[] = {"OSPREY_PROFILE", raw, ld_preload ? "LD_PRELOAD" : NULL, ld_preload,
                           NULL};
    size_t nadded = 0;
    char **env = env_plus(pairs, &nadded);
    proc_outcome out;
    int status = proc_run_profiled(argv, env, duration_ns, &out);
    env_free_added(env, nadded);
    free(ld_preload);
    report_signal(out.termsig);
    /* What the report header says ended the run (§(l.5)). */
    int interrupted = out.interrupt_sig;
    if (!interrupted && out.duration_expired) interrupted = SIGINT;
    if (!interrupted && (out.termsig == SIGINT || out.termsig == SIGTERM || out.termsig == SIGHUP ||
                         out.termsig == SIGPIPE))
        interrupted = out.termsig;
    if (status >= 0) {
        if (access(raw, F_OK) == 0) {
            run_postprocess(raw, binary, program, prefix, interrupted, post);
            unlink(raw);
        } else if (out.duration_expired && out.termsig == SIGKILL) {
            /* It ignored (or handled and outlived) the SIGINT of --duration. */
            fputs("osprey: warning: no profile was written (the program did not end within 5 s "
                  "of the SIGINT sent at --duration and was killed with SIGKILL)\n",
                  stderr);
        } else if (interrupted && out.termsig) {
            drv_diag("osprey: warning: no profile was written (the program was ended by %s "
                     "before its profiler wrote one)",
                     signal_name(interrupted));
        } else if (no_raw_hint && !out.termsig) {
            drv_diag("osprey: warning: no profile was written (%s)", no_raw_hint);
        } else {
            fputs("osprey: warning: no profile was written (the program did not exit normally)\n",
                  stderr);
        }
    }
    free(raw);
    if (status < 0) return 126; /* it could not be started (the error is said): as a shell */
    return out.interrupt_sig ? 128 + out.interrupt_sig : status;
}

/* argv[0] resolved like posix_spawnp: a path as given, else the first executable in PATH.
 * Returns a malloc'd path, or NULL with errno (ENOENT, EACCES). */
static char *find_program(const char *prog) {
    if (strchr(prog, '/')) {
        if (access(prog, X_OK) != 0) return NULL;
        struct stat st;
        if (stat(prog, &st) == 0 && S_ISDIR(st.st_mode)) {
            errno = EISDIR;
            return NULL;
        }
        return drv_xstrdup(prog);
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    int e = ENOENT;
    while (*path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        char buf[PATH_MAX];
        if (n + strlen(prog) + 2 < sizeof buf) {
            if (n == 0)
                snprintf(buf, sizeof buf, "./%s", prog);
            else
                snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, prog);
            struct stat st;
            if (stat(buf, &st) == 0 && !S_ISDIR(st.st_mode)) {
                if (access(buf, X_OK) == 0) return drv_xstrdup(buf);
                e = EACCES;
            }
        }
        if (!end) break;
        path = end + 1;
    }
    errno = e;
    return NULL;
}

/* Why a program the driver preloaded may have written no profile, for the warning: a
 * setuid/setgid file or a static ELF cannot be preloaded at all; anything else (a dynamic
 * ELF, a script) did load the profiler and then ended without writing -- a raw exit
 * system call, or an exec of a program that cannot be preloaded or with a cleared
 * environment (an exec of a preloadable one is followed, docs/profiler-runtime.md). */
static const char *no_profile_reason(const char *exe) {
    struct stat st;
    if (stat(exe, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
        return "did not load the profiler: a setuid or setgid program cannot be preloaded";
    unsigned char h[64];
    int fd = open(exe, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, h, sizeof h) : -1;
    bool is_static = false;
    if (n == (ssize_t)sizeof h &&
        memcmp(h,
               "\x7f"
               "ELF",
               4) == 0 &&
        h[4] == 2 && h[5] == 1) {
        /* ELF64 little-endian: a program without PT_INTERP has no dynamic loader. */
        uint64_t phoff;
        uint16_t phentsize, phnum;
        memcpy(&phoff, h + 32, 8);
        memcpy(&phentsize, h + 54, 2);
        memcpy(&phnum, h + 56, 2);
        is_static = true;
        for (uint16_t i = 0; i < phnum && phentsize >= 4; i++) {
            uint32_t type;
            if (pread(fd, &type, 4, (off_t)(phoff + (uint64_t)i * phentsize)) != 4) break;
            if (type == 3 /* PT_INTERP */) {
                is_static = false;
                break;
            }
        }
    }
    if (fd >= 0) close(fd);
    if (is_static) return "did not load the profiler: a static program cannot be preloaded";
    /* The profiler reports a write it could not make itself ("osprey profiler: cannot
     * write ..."), on the program's stderr, which the driver does not see: the causes
     * below are only the ones that leave no such line. */
    return "loaded the profiler but ended without writing a profile: unless an 'osprey "
           "profiler:' line above says why, a raw exit system call, or an exec of a static or "
           "setuid program or with a cleared environment";
}

/* attach_elf_read_fn over an open file (file offsets). */
static int file_read(void *ctx, uint64_t addr, uint64_t file_off, void *buf, size_t len) {
    (void)addr;
    return pread(*(const int *)ctx, buf, len, (off_t)file_off) == (ssize_t)len ? 0 : -1;
}

/* Whether `exe` defines `osp_prof_boot` in its symbol table or dynamic symbols: a program
 * linked with the Osprey runtime (every program osprey builds, or C linked with
 * libosprey_rt.a), whose own profiler runs from OSPREY_PROFILE alone. Preloading
 * libosprey_prof.so into it made a second profiler that took the session from the
 * program's own, so fibers and the collector's threads were plain `thread-N` rows. False
 * when unsure (stripped, not ELF). */
static bool links_osprey_profiler(const char *exe) {
    int fd = open(exe, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    bool found = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                 attach_elf_defines(file_read, &fd, "osp_prof_boot");
    close(fd);
    return found;
}

int prof_record_main(char **args, int nargs, const char *output, uint64_t duration_ns,
                     const prof_post_options *post) {
    (void)nargs;
    char *bindir = self_dir();
    if (!bindir) {
        fputs("osprey: error: cannot locate the osprey executable (needed to find its profiler "
              "runtime)\n",
              stderr);
        return 1;
    }
    char *lib = drv_xasprintf("%s/../lib/libosprey_prof.so", bindir);
    free(bindir);
    char *lib_abs = realpath(lib, NULL);
    if (!lib_abs || access(lib_abs, R_OK) != 0) {
        drv_diag("osprey: error: cannot find the profiler runtime '%s': %s", lib, strerror(errno));
        free(lib_abs);
        free(lib);
        return 1;
    }
    free(lib);
    char *exe = find_program(args[0]);
    if (!exe) {
        int e = errno;
        drv_diag("osprey: error: %s: cannot run: %s", args[0],
                 e == ENOENT && !strchr(args[0], '/') ? "command not found" : strerror(e));
        free(lib_abs);
        return e == ENOENT ? 127 : 126; /* as a shell: not found, or found but not runnable */
    }
    /* Default stem: the program's file name ("./bin/server" -> "server"). */
    const char *base = strrchr(args[0], '/');
    base = base ? base + 1 : args[0];
    const char *prefix = output ? output : base;
    if (prof_check_export_dir(prefix, false, exe, "program") != 0) {
        free(exe);
        free(lib_abs);
        return 2;
    }
    char *scratch = scratch_create();
    if (!scratch) { /* before the run, like the raw path's and the exports' checks: 2 */
        free(exe);
        free(lib_abs);
        return 2;
    }
    char hint[PATH_MAX + 200];
    snprintf(hint, sizeof hint, "'%s' %s", args[0], no_profile_reason(exe));
    /* A program with the Osprey runtime profiles itself (links_osprey_profiler). */
    const char *preload = links_osprey_profiler(exe) ? NULL : lib_abs;
    int status = prof_run_and_postprocess(args, preload, scratch, base, duration_ns, exe, args[0],
                                          prefix, hint, post);
    scratch_remove(scratch);
    free(scratch);
    free(exe);
    free(lib_abs);
    return status;
}

/* OSPREY_PROFILE_HZ for --attach: 99 by default, clamped to 10..1000 (§(l.9)) with one
 * warning line when it is outside. */
static unsigned attach_rate_hz(void) {
    const char *v = getenv("OSPREY_PROFILE_HZ");
    if (!v || !*v) return OSP_ATTACH_DEFAULT_HZ;
    char *end;
    errno = 0;
    long long hz = strtoll(v, &end, 10);
    if (*end || end == v || v[0] == ' ') {
        drv_diag("osprey: warning: OSPREY_PROFILE_HZ=\"%s\" is not an integer; using %d", v,
                 OSP_ATTACH_DEFAULT_HZ);
        return OSP_ATTACH_DEFAULT_HZ;
    }
    unsigned used = errno == ERANGE          ? (hz < 0 ? OSP_ATTACH_MIN_HZ : OSP_ATTACH_MAX_HZ)
                    : hz > OSP_ATTACH_MAX_HZ ? OSP_ATTACH_MAX_HZ
                    : hz < OSP_ATTACH_MIN_HZ ? OSP_ATTACH_MIN_HZ
                                             : (unsigned)hz;
    if (errno == ERANGE || hz > OSP_ATTACH_MAX_HZ || hz < OSP_ATTACH_MIN_HZ)
        drv_diag("osprey: warning: OSPREY_PROFILE_HZ=\"%s\" is out of range %d..%d for --attach; "
                 "using %u",
                 v, OSP_ATTACH_MIN_HZ, OSP_ATTACH_MAX_HZ, used);
    return used;
}
int prof_attach_main(const char *pid_text, const char *output, uint64_t duration_ns,
                     const prof_post_options *post) {
    char *end;
    errno = 0;
    long pid = strtol(pid_text, &end, 10);
    if (*pid_text < '0' || *pid_text > '9' || *end || errno || pid <= 0 || pid > INT_MAX) {
        drv_diag("osprey: error: --attach '%s' is not a process id (see osprey --help)", pid_text);
        return 2;
    }
    unsigned hz = attach_rate_hz();
    /* The export directory first: nothing is attached if the result could not be written. */
    char comm[64] = "";
    {
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/comm", pid);
        FILE *f = fopen(path, "re");
        if (f) {
            if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
            fclose(f);
        }
        comm[strcspn(comm, "\n")] = 0;
        for (char *c = comm; *c; c++)
            if (*c == '/' || *c == ' ' || (unsigned char)*c < 0x20) *c = '_';
    }
    char def_prefix[96];
    snprintf(def_prefix, sizeof def_prefix, "%s-%ld", comm[0] ? comm : "process", pid);
    const char *prefix = output ? output : def_prefix;
    /* The process's executable, as far as /proc shows it before attaching: an export
     * that is that file is refused now rather than after the sampling. */
    char exe_link[PATH_MAX];
    const char *protect = NULL;
    {
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/exe", pid);
        ssize_t n = readlink(path, exe_link, sizeof exe_link - 1);
        if (n > 0) {
            exe_link[n] = 0;
            protect = exe_link;
        }
    }
    if (prof_check_export_dir(prefix, false, protect, "program") != 0) return 2;
    char *scratch = scratch_create();
    if (!scratch) return 2; /* nothing attached yet */

    char err[PATH_MAX + 256];
    /* From here until the threads are detached, SIGINT/SIGTERM/SIGHUP/SIGQUIT only stop the
     * capture: the driver never exits with a thread of the target in an interrupt stop. */
    proc_capture_begin();
    osp_attach *a = osp_attach_open((pid_t)pid, err, sizeof err);
    if (!a) {
        proc_capture_end();
        drv_diag("osprey: error: %s", err);
        scratch_remove(scratch);
        free(scratch);
        return 2;
    }
    osp_attach_options opts = {.rate_hz = hz,
                               .duration_ns = duration_ns,
                               .stop_requested = proc_capture_signal,
                               .progress = isatty(STDERR_FILENO) ? stderr : NULL};
    osp_attach_end why = osp_attach_capture(a, &opts);
    /* Detached: from here a signal ends the driver as usual (scratch removed). */
    int sig = proc_capture_end();
    osp_attach_stats st;
    osp_attach_get_stats(a, &st);
    if (why == OSP_ATTACH_END_EXITED)
        drv_diag("osprey: process %ld exited after %.1fs; profiling stopped", pid,
                 (double)st.elapsed_ns / 1e9);
    drv_diag("osprey: sampled process %ld for %.1fs at %u Hz: %llu %s, %zu %s; "
             "sampled threads were stopped %.2f%% of the time; sampling used %.2f%% of a CPU",
             pid, (double)st.elapsed_ns / 1e9, hz, (unsigned long long)st.samples,
             st.samples == 1 ? "sample" : "samples", st.threads_seen,
             st.threads_seen == 1 ? "thread" : "threads",
             st.thread_ns ? 100.0 * (double)st.stopped_ns / (double)st.thread_ns : 0.0,
             st.elapsed_ns ? 100.0 * (double)st.cpu_ns / (double)st.elapsed_ns : 0.0);
    if (st.samples == 0 && st.ended_stopped)
        drv_diag("osprey: warning: process %ld is stopped (SIGSTOP or Ctrl-Z) and was not sampled; "
                 "continue it with 'kill -CONT %ld'",
                 pid, pid);
    char *raw = drv_xasprintf("%s/attach-%ld.osprof.json", scratch, pid);
    int status = sig ? 128 + sig : 0;
    {
        char werr[PATH_MAX + 128];
        if (osp_attach_write_raw(a, raw, werr, sizeof werr) != 0) {
            drv_diag("osprey: warning: profile not processed: %s", werr);
        } else {
            const char *exe = osp_attach_exe(a);
            /* An executable deleted or replaced since the process started (an upgrade;
             * /proc gives its path as "<path> (deleted)") is still readable, as long as the
             * process runs, through /proc/<pid>/exe: it stands in for the main image (the
             * build-id check still applies, §(f) 3). */
            char self_exe[64];
            const char *binary = NULL;
            if (exe[0] && access(exe, R_OK) != 0) {
                snprintf(self_exe, sizeof self_exe, "/proc/%ld/exe", pid);
                if (access(self_exe, R_OK) == 0) binary = self_exe;
            }
            /* Ctrl-C ends the capture, not the program: the header does not say "interrupted". */
            run_postprocess(raw, binary, exe[0] ? exe : NULL, prefix, 0, post);
        }
        unlink(raw);
        free(raw);
    }
    osp_attach_close(a);
    scratch_remove(scratch);
    free(scratch);
    return status;
}
