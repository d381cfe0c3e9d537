/* process.c — see process.h. */
#include "output.h"
#include "process.h"

#include "ospprof.h"
#include "xalloc.h"

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif
#ifdef __linux__
#include <linux/perf_event.h>
#endif

extern char **environ;

/* ---- signals (see process.h) -------------------------------------------------------- */

/* State shared with the signal thread, under g_lock. Nothing allocates with the xalloc.h
 * helpers while holding it: their out-of-memory exit takes it (proc_exit_cleaned). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_scratch; /* registered scratch directory */
static char *g_temp;    /* registered temporary output outside the scratch directory */
static pid_t g_child;   /* the running child, 0 while none */
static bool g_spawning; /* between "about to spawn" and g_child being known */
static proc_kind g_child_kind;
static int g_forward;    /* SIGTERM/SIGHUP that arrived while spawning: forward it */
static int g_pending;    /* terminating signal to die of once the tool has exited */
static int g_interrupt;  /* PROC_PROFILED: first SIGINT/SIGTERM/SIGHUP the driver received */
static bool g_capturing; /* between proc_capture_begin and proc_capture_end */
/* When the last PROC_PROFILED child was reaped (CLOCK_MONOTONIC ns) after it died of an
 * interrupt signal, and which (0: none). A terminal's Ctrl-C reaches the program and the
 * driver at once; when the program handles its copy first, the driver's may be taken only
 * after the program was reaped, while the profile is post-processed: a copy of the signal
 * the program died of, that soon, is the same interrupt, not a second one. Any other
 * signal (a SIGTERM while the exports are written) still ends the driver. */
static uint64_t g_profiled_end_ns;
static int g_profiled_end_sig;
#define OSP_INTERRUPT_COPY_NS 1000000000u /* how late a copy of that interrupt may come */
static _Atomic int g_capture_sig;         /* first stopping signal received while capturing */

static void signal_set(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGQUIT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGPIPE);
}

static void remove_tree(const char *dir, int depth);

/* Remove what is registered. Called with g_lock held. */
static void cleanup_locked(void) {
    if (g_temp) unlink(g_temp);
    if (g_scratch) remove_tree(g_scratch, 0);
    ospprof_remove_temporaries();
}

_Noreturn void die_by_signal(int sig) {
    pthread_mutex_lock(&g_lock);
    cleanup_locked();
    /* Keep the lock: nothing may register new files while the process goes down. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig);                               /* pending on this thread while blocked ... */
    pthread_sigmask(SIG_UNBLOCK, &one, NULL); /* ... delivered here: the process ends */
    _exit(128 + sig);                         /* not reached for the signals we handle */
}

_Noreturn void proc_exit_cleaned(int status) {
    pthread_mutex_lock(&g_lock);
    cleanup_locked();
    _exit(status); /* keeps the lock, as die_by_signal does */
}

/* The signals a profiled run forwards and remembers (docs/spec/profiler.md §(l.5)). */
static bool is_interrupt(int sig) {
    return sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
}

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *signal_thread(void *arg) {
    (void)arg;
    sigset_t set;
    /* SIGCHLD is never taken here: --attach reads its tracees' reports through a signalfd
     * on the capturing thread (driver/attach.c), which only sees a SIGCHLD that no other
     * thread could take (and drop: its default action is to ignore it). This thread never
     * starts programs, so the blocked signal is inherited by none. */
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal_set(&set);
    for (;;) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        int sig = sigwaitinfo(&set, &info);
        if (sig < 0) continue;
        pthread_mutex_lock(&g_lock);
        if (g_capturing) {
            /* --attach: stop sampling and detach; the capture loop polls the flag. */
            int none = 0;
            if (sig != SIGPIPE) atomic_compare_exchange_strong(&g_capture_sig, &none, sig);
            pthread_mutex_unlock(&g_lock);
            continue;
        }
        bool child = g_child > 0 || g_spawning;
        if (child) {
            bool forward = sig == SIGTERM || sig == SIGHUP;
            if (g_child_kind == PROC_PROFILED && is_interrupt(sig)) {
                if (!g_interrupt) g_interrupt = sig;
                /* A terminal's signal (Ctrl-C, hang-up) went to the whole foreground
                 * process group, the program included: do not deliver it twice. */
                forward = info.si_code != SI_KERNEL;
            }
            if (forward) {
                if (g_child > 0)
                    kill(g_child, sig);
                else
                    g_forward = sig;
            }
            /* A tool was interrupted: die of the signal once it has exited (proc_run).
             * The program's own status is the driver's: carry on when it exits. */
            if (g_child_kind == PROC_TOOL && !g_pending) g_pending = sig;
            pthread_mutex_unlock(&g_lock);
            continue;
        }
        if (sig == g_profiled_end_sig && mono_ns() - g_profiled_end_ns < OSP_INTERRUPT_COPY_NS) {
            pthread_mutex_unlock(&g_lock); /* the program's interrupt, taken late: keep going */
            continue;
        }
        pthread_mutex_unlock(&g_lock);
        die_by_signal(sig);
    }
    return NULL;
}

int proc_signals_init(void) {
    sigset_t set;
    signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_t t;
    int rc = pthread_create(&t, NULL, signal_thread, NULL);
    if (rc != 0) {
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        drv_diag("osprey: warning: cannot start the signal thread: %s", strerror(rc));
        return -1;
    }
    pthread_detach(t);
    return 0;
}

/* Wait for `pid`; with `duration_ns` > 0, send it SIGINT after that long and SIGKILL
 * OSP_DURATION_KILL_NS later if it is still running (*expired set). Returns waitpid's
 * result with the status in *ws. */
static pid_t wait_child(pid_t pid, int *ws, uint64_t duration_ns, bool *expired) {
    if (duration_ns > 0) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t start_ns = (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec;
        uint64_t deadline_ns = start_ns + duration_ns;
        int stage = 0; /* 0: running, 1: SIGINT sent, 2: SIGKILL sent */
#ifdef SYS_pidfd_open
        int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
        int pfd = -1;
#endif
        for (;;) {
            pid_t w = waitpid(pid, ws, WNOHANG);
            if (w != 0 && !(w < 0 && errno == EINTR)) {
                if (pfd >= 0) close(pfd);
                return w;
            }
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
            if (now_ns >= deadline_ns && stage < 2) {
                kill(pid, stage == 0 ? SIGINT : SIGKILL);
                if (stage == 0) *expired = true;
                stage++;
                deadline_ns = now_ns + OSP_DURATION_KILL_NS;
                continue;
            }
            uint64_t left_ns = stage < 2 ? deadline_ns - now_ns : 1000000000u;
            int ms = (int)(left_ns / 1000000u) + 1;
            if (pfd >= 0) {
                struct pollfd p = {.fd = pfd, .events = POLLIN};
                poll(&p, 1, ms); /* readable when the child has ended */
            } else {
                struct timespec nap = {0, 10 * 1000 * 1000}; /* no pidfd: 10 ms polling */
                if (ms < 10) nap.tv_nsec = (long)ms * 1000000;
                nanosleep(&nap, NULL);
            }
        }
    }
    pid_t w;
    do w = waitpid(pid, ws, 0);
    while (w < 0 && errno == EINTR);
    return w;
}

static int run_child(char *const argv[], char *const envp[], proc_kind kind, uint64_t duration_ns,
                     int *termsig, int *interrupt_sig, bool *expired) {
    if (termsig) *termsig = 0;
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t def, none;
    signal_set(&def);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

    pthread_mutex_lock(&g_lock);
    g_spawning = true;
    g_child_kind = kind;
    g_forward = 0;
    g_interrupt = 0;
    pthread_mutex_unlock(&g_lock);

    pid_t pid;
    int rc = strchr(argv[0], '/')
                 ? posix_spawn(&pid, argv[0], NULL, &attr, argv, envp ? envp : environ)
                 : posix_spawnp(&pid, argv[0], NULL, &attr, argv, envp ? envp : environ);
    posix_spawnattr_destroy(&attr);

    pthread_mutex_lock(&g_lock);
    g_spawning = false;
    if (rc == 0) {
        g_child = pid;
        if (g_forward) kill(pid, g_forward);
    }
    pthread_mutex_unlock(&g_lock);

    int status = -1, died_of = 0;
    bool exp = false;
    if (rc != 0) {
        drv_diag("osprey: error: %s: cannot run: %s", argv[0], strerror(rc));
    } else {
        int ws;
        pid_t w = wait_child(pid, &ws, duration_ns, &exp);
        if (w < 0) {
            drv_diag("osprey: error: waiting for '%s' failed: %s", argv[0], strerror(errno));
        } else if (WIFEXITED(ws)) {
            status = WEXITSTATUS(ws);
        } else if (WIFSIGNALED(ws)) {
            status = 128 + WTERMSIG(ws);
            died_of = WTERMSIG(ws);
            if (termsig) *termsig = WTERMSIG(ws);
        }
    }
    pthread_mutex_lock(&g_lock);
    g_child = 0;
    if (kind == PROC_PROFILED && is_interrupt(died_of)) {
        g_profiled_end_ns = mono_ns();
        g_profiled_end_sig = died_of;
    }
    int pending = g_pending;
    g_pending = 0;
    if (interrupt_sig) *interrupt_sig = g_interrupt;
    g_interrupt = 0;
    pthread_mutex_unlock(&g_lock);
    if (expired) *expired = exp;
    if (pending) die_by_signal(pending);
    return status;
}

int proc_run(char *const argv[], char *const envp[], proc_kind kind, int *termsig) {
    return run_child(argv, envp, kind, 0, termsig, NULL, NULL);
}

/* Linux switches its per-task perf_event hooks on (code patched on every CPU) when the
 * first per-task perf event of the whole system is made, and off about a second after the
 * last one is closed: measured 9-20 ms on a 2-vCPU virtual machine. The profiled
 * program's runtime makes one per thread as it starts (the perf_event engine), so on an
 * otherwise idle machine that cost fell inside the program's run. A counter the driver
 * holds on itself from before the program starts until it has ended takes the cost here,
 * before the program runs, as perf record does by opening its events before the exec.
 * Counting only, never enabled, user mode only (allowed at perf_event_paranoid 2; where
 * it is refused nothing is lost: the program's runtime is refused too and uses its
 * CPU-time timers). Returns the descriptor (close-on-exec) or -1. */
static int perf_hooks_hold(void) {
#if defined(__linux__) && defined(SYS_perf_event_open)
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
#else
    return -1;
#endif
}

int proc_run_profiled(char *const argv[], char *const envp[], uint64_t duration_ns,
                      proc_outcome *out) {
    memset(out, 0, sizeof *out);
    int hold = perf_hooks_hold();
    out->status = run_child(argv, envp, PROC_PROFILED, duration_ns, &out->termsig,
                            &out->interrupt_sig, &out->duration_expired);
    if (hold >= 0) close(hold);
    return out->status;
}

void proc_capture_begin(void) {
    pthread_mutex_lock(&g_lock);
    atomic_store(&g_capture_sig, 0);
    g_capturing = true;
    pthread_mutex_unlock(&g_lock);
}

int proc_capture_signal(void) {
    return atomic_load(&g_capture_sig);
}

int proc_capture_end(void) {
    pthread_mutex_lock(&g_lock);
    g_capturing = false;
    int sig = atomic_exchange(&g_capture_sig, 0);
    pthread_mutex_unlock(&g_lock);
    return sig;
}

char *scratch_create(void) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    char *path = drv_xasprintf("%s/osprey-XXXXXX", tmp);
    char *copy = drv_xstrdup(path); /* the registered copy, made before taking the lock */
    /* Registered in the same critical section, so a signal never finds it unregistered. */
    pthread_mutex_lock(&g_lock);
    char *made = mkdtemp(path);
    int e = errno;
    if (made) {
        strcpy(copy, path);
        free(g_scratch);
        g_scratch = copy;
        copy = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    free(copy);
    if (!made) {
        drv_diag("osprey: error: cannot create a temporary directory in %s: %s", tmp, strerror(e));
        free(path);
        return NULL;
    }
    return path;
}

static void remove_tree(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            size_t n = strlen(dir) + strlen(de->d_name) + 2;
            char *p = malloc(n); /* plain malloc: runs under g_lock, on the way out too */
            if (!p) continue;
            snprintf(p, n, "%s/%s", dir, de->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && depth < 8)
                remove_tree(p, depth + 1); /* e.g. a .dSYM bundle */
            else
                unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

void scratch_remove(const char *dir) {
    if (!dir) return;
    pthread_mutex_lock(&g_lock);
    remove_tree(dir, 0);
    if (g_scratch && strcmp(g_scratch, dir) == 0) {
        free(g_scratch);
        g_scratch = NULL;
    }
    pthread_mutex_unlock(&g_lock);
}

void cleanup_temp(const char *path) {
    char *copy = path ? drv_xstrdup(path) : NULL; /* before taking the lock */
    pthread_mutex_lock(&g_lock);
    char *old = g_temp;
    g_temp = copy;
    pthread_mutex_unlock(&g_lock);
    free(old);
}

char *self_dir(void) {
    char buf[PATH_MAX];
#ifdef __APPLE__
    uint32_t size = sizeof buf;
    if (_NSGetExecutablePath(buf, &size) != 0) return NULL;
    char *real = realpath(buf, NULL);
    if (!real) return NULL;
    strncpy(buf, real, sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    free(real);
#else
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return NULL;
    buf[n] = 0;
#endif
    char *slash = strrchr(buf, '/');
    if (!slash) return NULL;
    *slash = 0;
    return drv_xstrdup(buf);
}

char *read_file(const char *path, size_t max, size_t *len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        errno = EISDIR;
        return NULL;
    }
    if (st.st_size > 0 && (uint64_t)st.st_size > max) {
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
    char *buf = drv_xmalloc(cap + 1);
    for (;;) {
        if (n > max) { /* e.g. /dev/zero or a pipe that never ends */
            free(buf);
            close(fd);
            errno = EFBIG;
            return NULL;
        }
        if (n == cap) {
            buf = drv_xrealloc(buf, cap * 2 + 1);
            cap *= 2;
        }
        size_t want = cap - n;
        if (want > max + 1 - n) want = max + 1 - n; /* one byte past the limit tells */
        ssize_t r = read(fd, buf + n, want);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            free(buf);
            close(fd);
            errno = e;
            return NULL;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *len = n;
    return buf;
}

void random_hex(char out[9]) {
    unsigned v = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
        close(fd);
    }
    if (!v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = (unsigned)ts.tv_nsec ^ (unsigned)getpid();
    }
    snprintf(out, 9, "%08x", v);
}
