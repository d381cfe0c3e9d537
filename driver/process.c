/* process.c — see process.h. */
#include "process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
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

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig) {
    if (child_pid > 0) kill((pid_t)child_pid, sig);
}

int proc_run(char *const argv[], char *const envp[]) {
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGQUIT);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGHUP);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);

    struct sigaction ign = {0}, fwd = {0}, old_int, old_quit, old_term, old_hup;
    ign.sa_handler = SIG_IGN;
    fwd.sa_handler = forward_signal;
    sigemptyset(&fwd.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    sigaction(SIGTERM, &fwd, &old_term);
    sigaction(SIGHUP, &fwd, &old_hup);

    pid_t pid;
    int rc = strchr(argv[0], '/') ? posix_spawn(&pid, argv[0], NULL, &attr, argv, envp ? envp : environ)
                                  : posix_spawnp(&pid, argv[0], NULL, &attr, argv, envp ? envp : environ);
    posix_spawnattr_destroy(&attr);
    int status = -1;
    if (rc != 0) {
        fprintf(stderr, "osprey: error: cannot run '%s': %s\n", argv[0], strerror(rc));
    } else {
        child_pid = pid;
        int ws;
        pid_t w;
        do w = waitpid(pid, &ws, 0);
        while (w < 0 && errno == EINTR);
        child_pid = 0;
        if (w < 0) {
            fprintf(stderr, "osprey: error: waiting for '%s' failed: %s\n", argv[0], strerror(errno));
        } else if (WIFEXITED(ws)) {
            status = WEXITSTATUS(ws);
        } else if (WIFSIGNALED(ws)) {
            status = 128 + WTERMSIG(ws);
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    return status;
}

char *scratch_create(void) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    size_t n = strlen(tmp) + 32;
    char *path = malloc(n);
    if (!path) return NULL;
    snprintf(path, n, "%s/osprey-XXXXXX", tmp);
    if (!mkdtemp(path)) {
        fprintf(stderr, "osprey: error: cannot create a temporary directory in %s: %s\n", tmp, strerror(errno));
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
            char *p = malloc(n);
            if (!p) continue;
            snprintf(p, n, "%s/%s", dir, de->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && depth < 8) remove_tree(p, depth + 1); /* e.g. a .dSYM bundle */
            else unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

void scratch_remove(const char *dir) {
    if (dir) remove_tree(dir, 0);
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
    return strdup(buf);
}

char *read_file(const char *path, size_t *len) {
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
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        errno = ENOMEM;
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                close(fd);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
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
