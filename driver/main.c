/*
 * main.c — the `osprey` compiler driver (docs/compiler.md).
 *
 *   osprey <file.osp> [--run | --emit-llvm | --build] [-o <path>] [--debug | --profile] [-- args...]
 *
 * Pipeline: front end → LLVM module → pass pipeline → .o (target machine) → link with
 * the runtime archive (<bindir>/../lib/libosprey_rt.a) using `cc` (or $OSPREY_CC) →
 * dsymutil on macOS → optionally run. Exit statuses: 0 success; 1 compile, I/O or
 * link error; 2 command-line error; with --run/--profile the program's own status
 * (128 + N when it was killed by signal N, reported as one line on stderr).
 * Outputs: output.h (temporary + rename; devices and FIFOs written in place; never the
 * source file). Signals: process.h (the scratch directory is removed at any phase).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <llvm-c/Core.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_output.h"
#include "codegen.h"
#include "config.h"
#include "frontend.h"
#include "ospprof.h"
#include "output.h"
#include "process.h"
#include "profiling.h"
#include "xalloc.h"

typedef enum Mode { MODE_DEFAULT, MODE_BUILD, MODE_RUN, MODE_EMIT_LLVM } Mode;

typedef struct Options {
    const char *input;
    const char *output;
    Mode mode;
    bool debug;
    bool profile;
    bool run_flag;
    const char *postprocess; /* --postprocess <raw.json> */
    const char *binary;      /* --binary <exe> */
    bool record;             /* --record -- <program> [args...] */
    const char *attach;      /* --attach <pid> */
    const char *duration;    /* --duration <seconds> */
    uint64_t duration_ns;
    bool report_to_stdout; /* --report-to-stdout: the report on stdout instead of stderr */
    bool pprof;            /* --pprof: also <stem>.pb.gz */
    const char *diff[2];   /* --diff <base> <new> */
    const char *focus;     /* --focus <regex> */
    const char *ignore;    /* --ignore <regex> */
    const char **fibers;   /* --fiber <label>, repeatable (argc-sized array) */
    size_t nfibers;
    char **prog_args;
    int nprog_args;
} Options;

static void usage(FILE *out) {
    fputs("usage: osprey <file.osp> [options] [-- program arguments]\n"
          "\n"
          "Compile an Osprey program to a native executable.\n"
          "\n"
          "options:\n"
          "  --run          compile, then run the program; its exit status is osprey's\n"
          "  --emit-llvm    write the optimised LLVM IR (to stdout, or to -o <path>)\n"
          "  --build        compile to an executable only (the default mode)\n"
          "  -o <path>      output path (executable or IR; `-o -` is stdout for --emit-llvm);\n"
          "                 with --profile, the directory and stem of the exports\n"
          "  --debug        build at -O0 with full debug info\n"
          "  --profile      build at -O2 with DWARF line tables and frame pointers and run the\n"
          "                 program under the sampling profiler (implies --run)\n"
          "  --duration <s> with --profile, --record or --attach: stop after that many seconds\n"
          "                 (the program gets SIGINT; the profile is kept)\n"
          "  --postprocess <raw.json> [--binary <exe>] [-o <out>]\n"
          "                 turn a raw profile into the five exports and the report\n"
          "  --pprof        with --profile/--postprocess, also write <stem>.pb.gz (pprof)\n"
          "  --focus <regex>, --ignore <regex>, --fiber <label> (repeatable)\n"
          "                 with --profile/--postprocess: keep only samples with a frame (or\n"
          "                 image) matching, drop those matching, keep only these fibers\n"
          "  --diff <base> <new> [-o <out>]\n"
          "                 compare two profiles (.folded or raw): <out>.diff.svg,\n"
          "                 <out>.diff.folded and the largest changes in self/total share\n"
          "  --report-to-stdout\n"
          "                 print the profile report on stdout (default: stderr, so the\n"
          "                 program's own output stays its own)\n"
          "  --record [-o <out>] -- <program> [args...]\n"
          "                 run any native program under the profiler (preloaded) and\n"
          "                 post-process its profile\n"
          "  --attach <pid> [--duration <s>] [-o <out>]\n"
          "                 sample a running process from outside (ptrace) until the\n"
          "                 duration, Ctrl-C or its exit, then post-process\n"
          "  --help         show this help\n"
          "  --version      show the version\n"
          "\n"
          "environment: OSPREY_PROFILE_HZ (sampling rate for --profile and --record, 10 to\n"
          "             10000 Hz, default 997; for --attach 10 to 1000 Hz, default 99),\n"
          "             OSPREY_CC (link compiler, default " OSPREY_DEFAULT_CC "), TMPDIR\n",
          out);
}

static int usage_error(const char *fmt, const char *arg) {
    char *what = drv_xasprintf(fmt, arg);
    drv_diag("osprey: error: %s (see osprey --help)", what);
    free(what);
    return 2;
}

/* Parse the command line; returns -1 to continue, else an exit status. */
static int parse_args(int argc, char **argv, Options *o) {
    bool emit = false, build = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            o->prog_args = argv + i + 1;
            o->nprog_args = argc - i - 1;
            break;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            unsigned ma, mi, pa;
            LLVMGetVersion(&ma, &mi, &pa);
            printf("osprey %s (LLVM %u.%u.%u)\n", OSPREY_VERSION, ma, mi, pa);
            return 0;
        } else if (strcmp(a, "--run") == 0) {
            o->run_flag = true;
        } else if (strcmp(a, "--emit-llvm") == 0) {
            emit = true;
        } else if (strcmp(a, "--build") == 0) {
            build = true;
        } else if (strcmp(a, "--debug") == 0) {
            o->debug = true;
        } else if (strcmp(a, "--profile") == 0) {
            o->profile = true;
        } else if (strcmp(a, "--record") == 0) {
            o->record = true;
        } else if (strcmp(a, "--attach") == 0 || strcmp(a, "--duration") == 0) {
            if (i + 1 >= argc) return usage_error("%s needs an argument", a);
            if (strcmp(a, "--attach") == 0)
                o->attach = argv[++i];
            else
                o->duration = argv[++i];
        } else if (strcmp(a, "--report-to-stdout") == 0) {
            o->report_to_stdout = true;
        } else if (strcmp(a, "--diff") == 0) {
            if (i + 2 >= argc) return usage_error("%s", "--diff needs two profiles: <base> <new>");
            o->diff[0] = argv[++i];
            o->diff[1] = argv[++i];
        } else if (strcmp(a, "--pprof") == 0) {
            o->pprof = true;
        } else if (strcmp(a, "--focus") == 0 || strcmp(a, "--ignore") == 0 ||
                   strcmp(a, "--fiber") == 0) {
            if (i + 1 >= argc) return usage_error("%s needs an argument", a);
            if (a[2] == 'f' && a[3] == 'o')
                o->focus = argv[++i];
            else if (a[2] == 'i')
                o->ignore = argv[++i];
            else {
                if (!o->fibers) o->fibers = drv_xcalloc((size_t)argc, sizeof *o->fibers);
                o->fibers[o->nfibers++] = argv[++i];
            }
        } else if (strcmp(a, "--postprocess") == 0 || strcmp(a, "--binary") == 0) {
            if (i + 1 >= argc) return usage_error("%s needs an argument", a);
            if (strcmp(a, "--postprocess") == 0)
                o->postprocess = argv[++i];
            else
                o->binary = argv[++i];
        } else if (strcmp(a, "-o") == 0) {
            if (i + 1 >= argc) return usage_error("%s needs an argument", a);
            o->output = argv[++i];
        } else if (a[0] == '-' && a[1] != 0) {
            return usage_error("unknown option '%s'", a);
        } else {
            if (o->input) return usage_error("more than one input file ('%s')", a);
            o->input = a;
        }
    }
    if (o->output && strcmp(o->output, "-") == 0) {
        if (!emit || o->postprocess) {
            fputs("osprey: error: -o - (standard output) is only supported with --emit-llvm\n",
                  stderr);
            return 2;
        }
    } else if (o->output && !*o->output) {
        fputs("osprey: error: -o '' is an empty path; give a file name\n", stderr);
        return 2;
    } else if (o->output) {
        /* "dir/", "." and ".." name a directory, never a file (nor an export stem). */
        const char *slash = strrchr(o->output, '/');
        const char *base = slash ? slash + 1 : o->output;
        if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
            drv_diag("osprey: error: -o '%s' names a directory; give a file name", o->output);
            return 2;
        }
    }
    /* An empty path names nothing: said as such (exit 2), not as "error: : cannot read". */
    const char *const named[][2] = {
        {"--postprocess", o->postprocess},
        {"--binary", o->binary},
        {"--diff", o->diff[0]},
        {"--diff", o->diff[1]},
        {"the input file", o->input},
        {"the program after --", o->record && o->nprog_args > 0 ? o->prog_args[0] : NULL}};
    for (size_t k = 0; k < sizeof named / sizeof *named; k++)
        if (named[k][1] && !named[k][1][0]) {
            drv_diag("osprey: error: %s '' is an empty path; give a file name", named[k][0]);
            return 2;
        }
    if (o->diff[0]) {
        if (o->input || o->postprocess || o->profile || o->run_flag || emit || build || o->debug ||
            o->binary || o->pprof || o->focus || o->ignore || o->nfibers || o->nprog_args ||
            o->record || o->attach || o->duration)
            return usage_error("%s", "--diff takes only -o and --report-to-stdout");
        return -1;
    }
    if (o->duration && prof_parse_duration(o->duration, &o->duration_ns) != 0)
        return usage_error("--duration '%s' is not a number of seconds greater than 0",
                           o->duration);
    if (o->record || o->attach) {
        const char *m = o->record ? "--record" : "--attach";
        if (o->record && o->attach) return usage_error("%s", "choose one of --record and --attach");
        if (o->record && o->nprog_args == 0)
            return usage_error("%s", "--record needs the program after --: osprey --record "
                                     "[-o <out>] -- <program> [args...]");
        if (o->input || o->run_flag || emit || build || o->debug || o->profile || o->postprocess ||
            o->binary || o->pprof || o->focus || o->ignore || o->nfibers)
            return usage_error("%s takes only --duration and -o", m);
        if (o->attach && o->prog_args)
            return usage_error("%s", "--attach takes no program arguments");
        return -1;
    }
    if (o->duration && !o->profile)
        return usage_error("%s", "--duration needs --profile, --record or --attach");
    bool post_opts = o->pprof || o->focus || o->ignore || o->nfibers;
    if (post_opts && !o->postprocess && !o->profile)
        return usage_error("%s", "--pprof, --focus, --ignore and --fiber need --profile or "
                                 "--postprocess");
    if (o->focus || o->ignore) {
        /* docs/spec/profiler.md §(l.8): a bad pattern is refused before anything runs */
        ospprof_options po = {.focus = o->focus, .ignore = o->ignore};
        char err[OSPPROF_ERR_MAX];
        if (ospprof_filter_check(&po, err, sizeof err) != 0) {
            drv_diag("osprey: error: %s", err);
            return 2;
        }
    }
    if (o->postprocess) {
        if (o->input || o->run_flag || emit || build || o->debug || o->profile)
            return usage_error("%s", "--postprocess takes only --binary, -o, --pprof and the "
                                     "filters");
        return -1;
    }
    if (o->binary) return usage_error("%s", "--binary needs --postprocess");
    if (!o->input) return usage_error("%s", "no input file");
    if ((emit && (o->run_flag || build)) || (build && o->run_flag))
        return usage_error("%s", "choose one of --run, --emit-llvm and --build");
    if (o->profile && o->debug) {
        fputs("osprey: error: --profile cannot be combined with --debug\n", stderr);
        return 2;
    }
    o->mode = emit ? MODE_EMIT_LLVM : build ? MODE_BUILD : o->run_flag ? MODE_RUN : MODE_DEFAULT;
    if (o->mode == MODE_DEFAULT) o->mode = o->profile ? MODE_RUN : MODE_BUILD;
    /* Here -o names the executable or the .ll file (with --profile and a run it is the
     * exports' stem, and "dir" gives dir.speedscope.json… beside an existing directory): an
     * existing directory is refused as "dir/" is, before the source is even read. */
    if (o->output && strcmp(o->output, "-") != 0 && !(o->mode == MODE_RUN && o->profile)) {
        struct stat st;
        if (stat(o->output, &st) == 0 && S_ISDIR(st.st_mode)) {
            drv_diag("osprey: error: -o '%s' names a directory; give a file name", o->output);
            return 2;
        }
    }
    return -1;
}

static char *path_join(const char *a, const char *b) {
    return drv_xasprintf("%s/%s", a, b);
}

/* The source file's name without directory and last extension ("demo.osp" -> "demo"). */
static char *source_stem(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *s = drv_xstrdup(base);
    char *dot = strrchr(s, '.');
    if (dot && dot != s) *dot = 0;
    if (!*s) {
        free(s);
        s = drv_xstrdup("a.out");
    }
    return s;
}

/* True if `prog` names an executable: a path, or a name found in $PATH. */
static bool on_path(const char *prog) {
    if (strchr(prog, '/')) return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        char buf[PATH_MAX];
        if (n > 0 && n + strlen(prog) + 2 < sizeof buf) {
            memcpy(buf, path, n);
            snprintf(buf + n, sizeof buf - n, "/%s", prog);
            if (access(buf, X_OK) == 0) return true;
        }
        if (!end) break;
        path = end + 1;
    }
    return false;
}

/* The link compiler: $OSPREY_CC, else the configured default, else the first of
 * clang-19, clang, gcc found in PATH (a fresh system may have no `cc`). */
static const char *link_compiler(void) {
    const char *cc = getenv("OSPREY_CC");
    if (cc && *cc) return cc;
    if (on_path(OSPREY_DEFAULT_CC)) return OSPREY_DEFAULT_CC;
    static const char *const fallbacks[] = {"clang-19", "clang", "gcc"};
    for (size_t i = 0; i < sizeof fallbacks / sizeof *fallbacks; i++)
        if (on_path(fallbacks[i])) return fallbacks[i];
    return OSPREY_DEFAULT_CC;
}

/* The driver's environment with `name` set to `value` (any earlier `name=` removed).
 * Free with env_free. */
static char **env_with(const char *name, const char *value) {
    extern char **environ;
    size_t n = 0, nl = strlen(name);
    while (environ[n]) n++;
    char **env = drv_xcalloc(n + 2, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!(strncmp(environ[i], name, nl) == 0 && environ[i][nl] == '=')) env[k++] = environ[i];
    env[k] = drv_xasprintf("%s=%s", name, value);
    env[k + 1] = NULL;
    return env;
}

/* Free an env_with() result (only the entry it added is its own). */
static void env_free(char **env) {
    if (!env) return;
    size_t n = 0;
    while (env[n]) n++;
    if (n) free(env[n - 1]);
    free(env);
}

/* True if the linker can find `-l<name>` in `dir`: lib<name>.so or lib<name>.a (or, for
 * `-l:file`, that file). */
static bool lib_in_dir(const char *dir, const char *name) {
    char path[4096];
    if (name[0] == ':') {
        snprintf(path, sizeof path, "%s/%s", dir, name + 1);
        return access(path, R_OK) == 0;
    }
    static const char *const ext[] = {".so", ".a"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/lib%s%s", dir, name, ext[i]);
        if (access(path, R_OK) == 0) return true;
    }
    return false;
}

/*
 * docs/spec/language.md §3.5: before linking, every `// @link:` library must be in a
 * `// @linkdir:` directory, in $LIBRARY_PATH, or in the system's library directories;
 * otherwise one diagnostic at the directive's line and exit 1 (the linker's own message
 * would not say which line asked for it). Returns 0 or 1.
 */
static int check_link_libs(const Program *prog) {
    static const char *const sys_dirs[] = {
        "/lib",
        "/usr/lib",
        "/usr/local/lib",
        "/lib64",
        "/usr/lib64",
#if defined(__x86_64__)
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
#endif
    };
    int errors = 0;
    for (int i = 0; i < prog->nlink_args; i++) {
        const char *a = prog->link_args[i];
        if (strncmp(a, "-l", 2) != 0) continue;
        const char *name = a + 2;
        bool found = false;
        for (int k = 0; k < prog->nlink_args && !found; k++)
            if (strncmp(prog->link_args[k], "-L", 2) == 0)
                found = lib_in_dir(prog->link_args[k] + 2, name);
        const char *lp = getenv("LIBRARY_PATH");
        if (!found && lp) {
            char *copy = drv_xstrdup(lp), *save = NULL;
            for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save))
                found = lib_in_dir(d, name);
            free(copy);
        }
        for (size_t k = 0; !found && k < sizeof sys_dirs / sizeof *sys_dirs; k++)
            found = lib_in_dir(sys_dirs[k], name);
        if (!found) {
            drv_diag("%s:%d:1: error: library `%s` (from `// @link: %s`) was not found in the "
                     "`// @linkdir:` directories, $LIBRARY_PATH or the system library "
                     "directories",
                     prog->path, prog->link_lines[i], name, name);
            errors++;
        }
    }
    return errors ? 1 : 0;
}

/* Link `obj` with the runtime into `exe`. The link compiler's own temporaries go to the
 * scratch directory (TMPDIR), so an interrupted link leaves nothing behind. Returns 0 or 1
 * (message printed). */
static int link_program(const char *obj, const char *exe, const char *scratch, bool profile,
                        const char *const *user_args, int nuser) {
    char *bindir = self_dir();
    if (!bindir) {
        fputs("osprey: error: cannot locate the osprey executable (needed to find its runtime)\n",
              stderr);
        return 1;
    }
    char *libdir = path_join(bindir, "../lib");
    char *rt = path_join(libdir, "libosprey_rt.a");
    free(bindir);
    free(libdir);
    if (access(rt, R_OK) != 0) {
        drv_diag("osprey: error: cannot find the runtime library '%s': %s", rt, strerror(errno));
        free(rt);
        return 1;
    }
    const char *cc = link_compiler();
    const char *extra[] = OSPREY_LINK_EXTRA_FLAGS;
    const char **argv = drv_xmalloc(sizeof(char *) * (size_t)(32 + nuser));
    int n = 0;
    argv[n++] = cc;
    argv[n++] = "-o";
    argv[n++] = exe;
    argv[n++] = obj;
    /* the program's `// @link:` / `// @linkdir:` arguments, in source order, after the object
     * that references their symbols (docs/spec/language.md §3.5) */
    for (int i = 0; i < nuser; i++) argv[n++] = user_args[i];
    argv[n++] = rt;
#ifdef __linux__
    /* The collector is linked statically: its allocation fast path then reaches its
     * thread-local free lists without __tls_get_addr and its calls need no PLT, and the
     * program starts without loading and relocating libgc.so (docs/compiler.md). */
    argv[n++] = "-Wl,-Bstatic";
    argv[n++] = "-lgc";
    argv[n++] = "-Wl,-Bdynamic";
#else
    argv[n++] = "-lgc";
#endif
    argv[n++] = "-lpthread";
    argv[n++] = "-lm";
    argv[n++] = "-g";
    argv[n++] = "-fno-omit-frame-pointer";
    (void)profile; /* the profiling link flags are harmless for every build */
    for (size_t i = 0; i < sizeof extra / sizeof *extra && extra[i] && n < 30 + nuser; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    int sig = 0;
    char **env = env_with("TMPDIR", scratch);
    int st = proc_run((char *const *)argv, env, PROC_TOOL, &sig);
    env_free(env);
    free(argv);
    free(rt);
    if (st != 0) {
        if (sig > 0)
            drv_diag("osprey: error: linking failed ('%s' was killed by signal %d, %s)", cc, sig,
                     strsignal(sig));
        else if (st > 0)
            drv_diag("osprey: error: linking failed ('%s' exited with status %d)", cc, st);
        return 1;
    }
#ifdef __APPLE__
    const char *ds[] = {"dsymutil", exe, NULL};
    if (proc_run((char *const *)ds, NULL, PROC_TOOL, NULL) != 0)
        drv_diag("osprey: warning: dsymutil failed for '%s'", exe);
#endif
    return 0;
}

/* "<prefix><ext>" (malloc'd). */
static char *export_path(const char *prefix, const char *ext) {
    return drv_xasprintf("%s%s", prefix, ext);
}

/* Write the report to stdout or stderr (docs/spec/profiler.md §(l.7)). Returns 0 or the
 * errno of the failing write. */
static int write_report(bool to_stdout, const char *text, size_t len) {
    FILE *f = to_stdout ? stdout : stderr;
    if (fflush(f) != 0) return errno ? errno : EIO;
    return write_all(to_stdout ? STDOUT_FILENO : STDERR_FILENO, text, len);
}

/* Colour and width of the report for the stream it goes to. */
static void report_style(ospprof_options *po, bool to_stdout) {
    FILE *f = to_stdout ? stdout : stderr;
    po->color = ospprof_color_wanted(f);
    po->columns = ospprof_terminal_columns(f);
}

/* Run the post-processor with the report captured in memory (written by the caller, so
 * a closed or full stdout is told apart from a failed post-processing). */
static int postprocess_capture(ospprof_options *po, char **report, size_t *report_len, char *err,
                               size_t errlen) {
    *report = NULL;
    *report_len = 0;
    FILE *mem = open_memstream(report, report_len);
    po->report = mem ? mem : stdout;
    int rc = ospprof_run(po, err, errlen);
    if (mem) fclose(mem);
    return rc;
}

/*
 * Post-processing (docs/spec/profiler.md §(e)–(i), §(l.6), §(l.7)): turn the raw profile into
 * <prefix>.{speedscope.json,cpuprofile,folded,profile.json,svg} and print the report to
 * stderr (stdout with `to_stdout`). `prefix` is -o as written, or the source stem. A failure
 * is one warning line and never changes the exit status (nor does a closed stream); the
 * caller removes the raw file and the scratch directory whatever happens.
 */
/* The post-processing options of the command line (profiling.h). */
static prof_post_options post_options_of(const Options *o) {
    return (prof_post_options){.report_to_stdout = o->report_to_stdout,
                               .pprof = o->pprof,
                               .focus = o->focus,
                               .ignore = o->ignore,
                               .fibers = o->fibers,
                               .nfibers = o->nfibers};
}

/* The run's raw profile, which the caller deletes, copied to `<prefix>.osprof.json` through
 * the atomic-output helper (temporary + rename: an older file of that name is replaced whole
 * or not at all; a symbolic link stays a link; an interrupt removes the temporary) when its
 * post-processing failed, so a long run is not lost with it; one note line says where. Never
 * over the program or source being profiled (`protect`, either may be NULL): one warning line
 * instead. Nothing when the copy cannot be made (the export directory is what failed). Mode
 * 0600, as the runtime writes it (the run's paths and addresses). */
static void keep_raw(const char *raw_path, const char *prefix, const char *protect0,
                     const char *protect1) {
    char *dst = drv_xasprintf("%s.osprof.json", prefix);
    const char *protect[2] = {protect0, protect1};
    for (int i = 0; i < 2; i++)
        if (protect[i] && out_same_file(dst, protect[i])) {
            drv_diag("osprey: warning: the raw profile is not kept: '%s' is the program being "
                     "profiled",
                     dst);
            free(dst);
            return;
        }
    char reason[256];
    osp_atomic_out o = {.fd = -1};
    int in = open(raw_path, O_RDONLY | O_CLOEXEC);
    bool ok = in >= 0 && osp_atomic_open(&o, dst, reason, sizeof reason) == 0;
    if (ok && o.tmp && fchmod(o.fd, 0600) != 0) ok = false;
    char buf[65536];
    while (ok) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        ok = osp_atomic_write(&o, buf, (size_t)n, reason, sizeof reason) == 0;
    }
    if (in >= 0) close(in);
    if (ok)
        ok = osp_atomic_commit(&o, reason, sizeof reason) == 0;
    else
        osp_atomic_abort(&o);
    if (ok)
        drv_diag("osprey: note: the raw profile is kept as '%s' (osprey --postprocess '%s' "
                 "processes it again)",
                 dst, dst);
    free(dst);
}

void run_postprocess(const char *raw_path, const char *exe_path, const char *program,
                     const char *prefix, int interrupted_signal, const prof_post_options *post) {
    bool to_stdout = post->report_to_stdout;
    /* Checked before the run too (prof_check_export_dir); this is for a file that became
     * an export's path while the program ran. */
    char *clash = prof_export_clash(prefix, post->pprof, program);
    if (clash) {
        drv_diag("osprey: warning: profile not processed: the export '%s' would overwrite the "
                 "source file",
                 clash);
        free(clash);
        keep_raw(raw_path, prefix, program, exe_path);
        return;
    }
    fflush(stdout); /* the program's output (none of ours) comes first */
    ospprof_options po = {.raw_path = raw_path,
                          .binary = exe_path,
                          .program = program,
                          .output_prefix = prefix,
                          .pprof = post->pprof,
                          .focus = post->focus,
                          .ignore = post->ignore,
                          .fibers = post->fibers,
                          .nfibers = post->nfibers};
    report_style(&po, to_stdout);
    po.interrupted_signal = interrupted_signal;
    char err[OSPPROF_ERR_MAX];
    char *report;
    size_t report_len;
    if (postprocess_capture(&po, &report, &report_len, err, sizeof err) != 0) {
        drv_diag("osprey: warning: profile not processed: %s", err);
        keep_raw(raw_path, prefix, program, exe_path);
    } else {
        int e = write_report(to_stdout, report, report_len);
        /* A closed pipe (`| head`) is the reader's choice: nothing to say. */
        if (e && e != EPIPE)
            drv_diag("osprey: warning: cannot write the report to standard %s: %s",
                     to_stdout ? "output" : "error", strerror(e));
    }
    free(report);
}

/* osprey --postprocess <raw.json> [--binary <exe>] [-o <out>]: exit 0, or 1 with
 * "osprey: error: <message>" (2 when an export would overwrite the raw file or the
 * binary). Default prefix: the raw file's name without .osprof.json or .json, in the
 * current directory. */
static int postprocess_main(const Options *o) {
    /* --binary must exist (it was silently ignored); the raw file's own error comes first. */
    if (o->binary && access(o->postprocess, F_OK) == 0) {
        struct stat st;
        int e = 0;
        if (stat(o->binary, &st) != 0)
            e = errno;
        else if (S_ISDIR(st.st_mode))
            e = EISDIR;
        else if (access(o->binary, R_OK) != 0)
            e = errno;
        if (e) {
            drv_diag("osprey: error: %s: cannot read: %s", o->binary, strerror(e));
            return 1;
        }
    }
    char *prefix = NULL;
    if (o->output) {
        prefix = drv_xstrdup(o->output);
    } else {
        const char *slash = strrchr(o->postprocess, '/');
        prefix = drv_xstrdup(slash ? slash + 1 : o->postprocess);
        size_t n = strlen(prefix);
        if (n > 12 && strcmp(prefix + n - 12, ".osprof.json") == 0)
            prefix[n - 12] = 0;
        else if (n > 5 && strcmp(prefix + n - 5, ".json") == 0)
            prefix[n - 5] = 0;
    }
    const char *inputs[2][2] = {{o->postprocess, "raw profile"}, {o->binary, "binary"}};
    for (int i = 0; i < 2; i++) {
        char *clash = prof_export_clash(prefix, o->pprof, inputs[i][0]);
        if (clash) {
            drv_diag("osprey: error: the export '%s' would overwrite the %s '%s'", clash,
                     inputs[i][1], inputs[i][0]);
            free(clash);
            free(prefix);
            return 2;
        }
    }
    ospprof_options po = {.raw_path = o->postprocess,
                          .binary = o->binary,
                          .output_prefix = prefix,
                          .pprof = o->pprof,
                          .focus = o->focus,
                          .ignore = o->ignore,
                          .fibers = o->fibers,
                          .nfibers = o->nfibers};
    report_style(&po, o->report_to_stdout);
    char err[OSPPROF_ERR_MAX];
    char *report;
    size_t report_len;
    int rc = postprocess_capture(&po, &report, &report_len, err, sizeof err);
    free(prefix);
    if (rc != 0) {
        drv_diag("osprey: error: %s", err);
        free(report);
        return 1;
    }
    int e = write_report(o->report_to_stdout, report, report_len);
    free(report);
    if (e == EPIPE) die_by_signal(SIGPIPE); /* like any filter whose reader went away */
    if (e) {
        drv_diag("osprey: error: cannot write standard %s: %s",
                 o->report_to_stdout ? "output" : "error", strerror(e));
        return 1;
    }
    return 0;
}

/* osprey --diff <base> <new> [-o <out>] (docs/spec/profiler.md §(l.8)): exit 0, or 1 with
 * "osprey: error: <file>:<line>: <problem>". Default stem: the new file's name without
 * .diff.folded/.folded/.osprof.json/.json, in the current directory. */
static int diff_main(const Options *o) {
    char *prefix;
    if (o->output) {
        prefix = drv_xstrdup(o->output);
    } else {
        const char *slash = strrchr(o->diff[1], '/');
        prefix = drv_xstrdup(slash ? slash + 1 : o->diff[1]);
        static const char *const sfx[] = {".diff.folded", ".folded", ".osprof.json", ".json"};
        size_t n = strlen(prefix);
        for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
            size_t k = strlen(sfx[i]);
            if (n > k && strcmp(prefix + n - k, sfx[i]) == 0) {
                prefix[n - k] = 0;
                break;
            }
        }
    }
    /* The two inputs are read at once, on two threads: a pipe or a device named twice
     * (`--diff /dev/stdin /dev/stdin`) would be split between them at random. */
    struct stat st[2];
    if (stat(o->diff[0], &st[0]) == 0 && stat(o->diff[1], &st[1]) == 0 &&
        st[0].st_dev == st[1].st_dev && st[0].st_ino == st[1].st_ino && !S_ISREG(st[0].st_mode) &&
        !S_ISDIR(st[0].st_mode)) {
        const char *what = S_ISFIFO(st[0].st_mode)   ? "pipe"
                           : S_ISSOCK(st[0].st_mode) ? "socket"
                                                     : "device";
        drv_diag("osprey: error: --diff: '%s' and '%s' are the same %s, which cannot be read "
                 "for both sides; save it to a file first",
                 o->diff[0], o->diff[1], what);
        free(prefix);
        return 2;
    }
    static const char *const ext[] = {".diff.svg", ".diff.folded"};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++) {
            char *p = export_path(prefix, ext[k]);
            if (p && out_same_file(p, o->diff[i])) {
                drv_diag("osprey: error: the output '%s' would overwrite the input '%s'", p,
                         o->diff[i]);
                free(p);
                free(prefix);
                return 2;
            }
            free(p);
        }
    char err[OSPPROF_ERR_MAX];
    char *report = NULL;
    size_t report_len = 0;
    FILE *mem = open_memstream(&report, &report_len);
    int rc = ospprof_diff_run(o->diff[0], o->diff[1], prefix, mem ? mem : stdout,
                              ospprof_terminal_columns(stdout), err, sizeof err);
    if (mem) fclose(mem);
    free(prefix);
    if (rc != 0) {
        drv_diag("osprey: error: %s", err);
        free(report);
        return 1;
    }
    /* the report is the command's result: stdout */
    int e = write_report(true, report ? report : "", report_len);
    free(report);
    if (e == EPIPE) die_by_signal(SIGPIPE);
    if (e) {
        drv_diag("osprey: error: cannot write standard output: %s", strerror(e));
        return 1;
    }
    return 0;
}

/* One line when the program was killed by a signal, like a shell's job report (none for
 * SIGINT and SIGPIPE, which the user or the reader caused, as bash does). */
void report_signal(int sig) {
    if (sig <= 0 || sig == SIGINT || sig == SIGPIPE) return;
    fflush(stdout);
    drv_diag("osprey: program terminated by signal %d (%s)", sig, strsignal(sig));
}

static int run_program(const Options *o, const char *exe, const char *scratch, const char *stem) {
    char **argv = drv_xcalloc((size_t)o->nprog_args + 2, sizeof *argv);
    argv[0] = (char *)exe;
    for (int i = 0; i < o->nprog_args; i++) argv[i + 1] = o->prog_args[i];
    int status, sig = 0;
    if (!o->profile) {
        status = proc_run(argv, NULL, PROC_PROGRAM, &sig);
        report_signal(sig);
    } else {
        prof_post_options post = post_options_of(o);
        status = prof_run_and_postprocess(argv, NULL, scratch, stem, o->duration_ns, exe, o->input,
                                          o->output ? o->output : stem, NULL, &post);
    }
    free(argv);
    return status < 0 ? 1 : status;
}

static int compile_with(Options *po);

static int compile_main(int argc, char **argv) {
    Options o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc < 0) rc = compile_with(&o);
    free(o.fibers);
    return rc;
}

static int compile_with(Options *po) {
    Options o = *po;
    if (o.postprocess) return postprocess_main(&o);
    prof_post_options post = post_options_of(&o);
    if (o.record)
        return prof_record_main(o.prog_args, o.nprog_args, o.output, o.duration_ns, &post);
    if (o.attach) return prof_attach_main(o.attach, o.output, o.duration_ns, &post);
    if (o.diff[0]) return diff_main(&o);

    size_t len = 0;
    char *src = read_file(o.input, OSP_SOURCE_MAX, &len);
    if (!src) {
        if (errno == EFBIG)
            drv_diag("osprey: error: cannot read '%s': larger than %zu MiB (the limit for a source "
                     "file)",
                     o.input, OSP_SOURCE_MAX >> 20);
        else
            drv_diag("osprey: error: cannot read '%s': %s", o.input, strerror(errno));
        return 1;
    }

    /* The output file, checked before any work: never the source, always writable. */
    bool run = o.mode == MODE_RUN;
    char *stem = source_stem(o.input);
    const char *dest = NULL; /* executable or .ll written for the user; NULL: none */
    if (o.mode == MODE_EMIT_LLVM)
        dest = o.output && strcmp(o.output, "-") != 0 ? o.output : NULL;
    else if (!(run && (o.profile || !o.output)))
        dest = o.output ? o.output : stem;
    out_target out = {0};
    /* docs/spec/profiler.md §(l.5): what can fail after the run is checked before it (an
     * export that is the source file included). */
    if (run && o.profile &&
        prof_check_export_dir(o.output ? o.output : stem, o.pprof, o.input, "source file") != 0) {
        free(stem);
        free(src);
        return 2;
    }
    if (dest) {
        char msg[PATH_MAX + 128];
        if (out_same_file(dest, o.input)) {
            drv_diag("osprey: error: the output '%s' would overwrite the source file", dest);
            free(stem);
            free(src);
            return 2;
        }
        if (out_check(dest, &out, msg, sizeof msg) != 0) {
            drv_diag("osprey: error: %s", msg);
            free(stem);
            free(src);
            return 1;
        }
    }

    char *abs = realpath(o.input, NULL);
    int nerrors = 0;
    Program *prog = osp_frontend_run(o.input, abs ? abs : o.input, src, len, stderr, &nerrors);
    if (nerrors > 0) {
        osp_program_free(prog);
        out_target_free(&out);
        free(stem);
        free(src);
        free(abs);
        return 1;
    }

    int opt = o.debug ? 0 : 2;
    char *err = NULL;
    int status = 1;
    char *scratch = NULL, *obj = NULL, *exe = NULL, *tmp_exe = NULL;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = NULL;
    LLVMTargetMachineRef tm = osp_target_machine(opt, &err);
    if (!tm) goto fail;
    osp_cg_options cgo = {.opt_level = opt, .full_debug = o.debug};
    mod = osp_codegen(ctx, prog, tm, &cgo, &err);
    if (!mod) goto fail;
    if (osp_optimize(mod, tm, opt, &err) != 0) goto fail;

    if (o.mode == MODE_EMIT_LLVM) {
        char *text = osp_module_text(mod);
        size_t tlen = strlen(text);
        if (dest) {
            char msg[PATH_MAX + 128];
            status = out_write(&out, text, tlen, msg, sizeof msg) == 0 ? 0 : 1;
            if (status) drv_diag("osprey: error: %s", msg);
        } else {
            int e = write_all(STDOUT_FILENO, text, tlen);
            if (e == EPIPE) die_by_signal(SIGPIPE); /* the reader went away: like cat */
            if (e) drv_diag("osprey: error: cannot write standard output: %s", strerror(e));
            status = e ? 1 : 0;
        }
        LLVMDisposeMessage(text);
        goto done;
    }

    scratch = scratch_create();
    if (!scratch) goto done;
    obj = path_join(scratch, "program.o");
    if (osp_emit_object(mod, tm, obj, &err) != 0) goto fail;
    LLVMDisposeModule(mod);
    mod = NULL;

    if (!dest || !out.dest) {
        /* Run from the scratch directory; a device or FIFO destination gets a copy. */
        exe = path_join(scratch, stem);
    } else {
        exe = drv_xstrdup(out.dest);
        tmp_exe = drv_xasprintf("%s.tmp.%ld", out.dest, (long)getpid());
        cleanup_temp(tmp_exe);
    }
    if (check_link_libs(prog) != 0 || link_program(obj, tmp_exe ? tmp_exe : exe, scratch, o.profile,
                                                   prog->link_args, prog->nlink_args) != 0) {
        if (tmp_exe) unlink(tmp_exe);
        cleanup_temp(NULL);
        goto done;
    }
    if (tmp_exe) {
        int e = rename(tmp_exe, exe) == 0 ? 0 : errno;
        if (e) unlink(tmp_exe);
        cleanup_temp(NULL);
        if (e) {
            drv_diag("osprey: error: cannot write '%s': %s", dest, strerror(e));
            goto done;
        }
    } else if (dest) {
        char msg[PATH_MAX + 128];
        if (out_copy_into(&out, exe, msg, sizeof msg) != 0) {
            drv_diag("osprey: error: %s", msg);
            goto done;
        }
    }
    if (!run) {
        status = 0;
        goto done;
    }
    if (exe[0] != '/' && !strchr(exe, '/')) {
        char *rel = path_join(".", exe);
        free(exe);
        exe = rel;
    }
    status = run_program(&o, exe, scratch, stem);
    goto done;

fail:
    drv_diag("osprey: error: %s", err ? err : "internal error");
    status = 1;
done:
    free(err);
    if (mod) LLVMDisposeModule(mod);
    if (tm) LLVMDisposeTargetMachine(tm);
    LLVMContextDispose(ctx);
    if (scratch) scratch_remove(scratch);
    out_target_free(&out);
    free(scratch);
    free(stem);
    free(obj);
    free(exe);
    free(tmp_exe);
    osp_program_free(prog);
    free(src);
    free(abs);
    LLVMShutdown();
    return status;
}

typedef struct {
    int argc;
    char **argv;
    int status;
} main_job;

static void main_job_run(void *p) {
    main_job *m = p;
    m->status = compile_main(m->argc, m->argv);
}

int main(int argc, char **argv) {
    proc_signals_init(); /* first: the compile thread inherits the blocked signals */
    /* Compile (and run) on a thread with a large stack: the front end and code generation
     * recurse over the syntax tree, whose height the parser bounds (frontend.h). */
    main_job m = {argc, argv, 1};
    osp_run_on_compile_stack(main_job_run, &m);
    return m.status;
}
