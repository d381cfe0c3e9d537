/* process.c — see process.h. */
#include "process.h"

#include "ospprof.h"
#include "xalloc.h"

#include <dirent.h>
#include <pthread.h>
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
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __APPLE__
#include <mach-o/dyld.h>
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
static int g_forward; /* SIGTERM/SIGHUP that arrived while spawning: forward it */
static int g_pending; /* terminating signal to die of once the tool has exited */

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

static void *signal_thread(void *arg) {
    (void)arg;
    sigset_t set;
    signal_set(&set);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        pthread_mutex_lock(&g_lock);
        bool child = g_child > 0 || g_spawning;
        if (child) {
            if (sig == SIGTERM || sig == SIGHUP) {
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
        fprintf(stderr, "osprey: warning: cannot start the signal thread: %s\n", strerror(rc));
        return -1;
    }
    pthread_detach(t);
    return 0;
}

int proc_run(char *const argv[], char *const envp[], proc_kind kind, int *termsig) {
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

    int status = -1;
    if (rc != 0) {
        fprintf(stderr, "osprey: error: cannot run '%s': %s\n", argv[0], strerror(rc));
    } else {
        int ws;
        pid_t w;
        do w = waitpid(pid, &ws, 0);
        while (w < 0 && errno == EINTR);
        if (w < 0) {
            fprintf(stderr, "osprey: error: waiting for '%s' failed: %s\n", argv[0],
                    strerror(errno));
        } else if (WIFEXITED(ws)) {
            status = WEXITSTATUS(ws);
        } else if (WIFSIGNALED(ws)) {
            status = 128 + WTERMSIG(ws);
            if (termsig) *termsig = WTERMSIG(ws);
        }
    }
    pthread_mutex_lock(&g_lock);
    g_child = 0;
    int pending = g_pending;
    g_pending = 0;
    pthread_mutex_unlock(&g_lock);
    if (pending) die_by_signal(pending);
    return status;
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
        fprintf(stderr, "osprey: error: cannot create a temporary directory in %s: %s\n", tmp,
                strerror(e));
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
