/*
 * prof_preload.c — only in libosprey_prof.so: profile an unmodified program built with
 * frame pointers by preloading the runtime (docs/profiler-runtime.md):
 *
 *   OSPREY_PROFILE=out.json LD_PRELOAD=/path/to/libosprey_prof.so ./program
 *
 * The library's load-time constructor boots the profiler and registers the main thread
 * (prof_session.c, prof_registry.c). pthread_create is interposed by prof_interpose.c (in
 * every build): every thread the program starts afterwards is registered as it starts
 * (label "thread", fiber ids 1, 2, ... in creation order here) and unregistered when its
 * start routine returns; pthread_exit and cancellation are covered by the thread-exit
 * destructor.
 *
 * The library also wraps the common sleeping calls (nanosleep, clock_nanosleep, usleep,
 * sleep, poll, ppoll, select, pselect, epoll_wait, epoll_pwait, pause, sigsuspend,
 * sigwaitinfo, sigtimedwait, sem_wait, sem_timedwait, sem_clockwait, and syscall() of the
 * same calls and of futex waits) in blocking regions: a thread waiting in them is sampled
 * as waiting with the stack it captured on entry and is never signalled, so those calls
 * do not return early with EINTR because of the profiler (docs/spec/profiler.md §(l.3)),
 * whatever the engine: a request the sampler thread committed to before the region began
 * is answered before the call blocks (osp_prof_block_begin). A call with a zero
 * timeout does not wait: it runs outside any region, so a busy poll(..., 0) loop is
 * on-CPU (§(l.3)).
 *
 * Ends that run no atexit handler keep their profile too: `_exit`, `_Exit` and `daemon` have the
 * sampler thread write the raw file first (osp_prof__exit_now), and `execve`, `execv`,
 * `execvp`, `execvpe`, `execl`, `execlp` and `execle` by the profiled process itself (not a
 * forked child) give the new program OSPREY_PROFILE and OSPREY_PROFILE_HZ back, so a
 * program that becomes another (`env ./prog`, a shell's last command) is followed: the new
 * program, which inherits LD_PRELOAD, profiles into the same file (what ran before the exec
 * is not kept). An exec that fails changes nothing. Before every exec, no SIGPROF request
 * of the session may be sent or stay pending (osp_prof__exec_prepare): the new image has
 * no handler for it, and its default action ends the process.
 */
#define _GNU_SOURCE
#include "prof_internal.h"

#if OSP_PROF_SAMPLER

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <semaphore.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#define OSP_PROF_WRAPPER_FILE 1 /* its functions wrap the program's calls */
#include "prof_session.h"
#include "prof_own_text.h"

/* Resolve the next definition of `name` once; NULL if there is none. */
static void *next_symbol(_Atomic(void *) *cache, const char *name) {
    void *f = atomic_load_explicit(cache, memory_order_acquire);
    if (f == NULL) {
        f = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(cache, f, memory_order_release);
    }
    return f;
}

/* A wrapper that runs the real call inside a blocking region. The region is entered
 * from the wrapper's own frame, so the waiting stack reads caller -> <name> (this
 * library) and keeps the caller's frames. errno is the real call's. */
#define OSP_PROF_WAIT_WRAPPER_IF(ret, name, params, args, fail, waits) \
    OSP_PROF_PUBLIC ret name params {                                  \
        static _Atomic(void *) real_;                                  \
        ret(*real) params = (ret(*) params)next_symbol(&real_, #name); \
        if (real == NULL) {                                            \
            errno = ENOSYS;                                            \
            return fail;                                               \
        }                                                              \
        if (!(waits)) return real args;                                \
        osp_prof_block_begin();                                        \
        ret result = real args;                                        \
        int saved = errno;                                             \
        osp_prof_block_end();                                          \
        errno = saved;                                                 \
        return result;                                                 \
    }
#define OSP_PROF_WAIT_WRAPPER(ret, name, params, args, fail) \
    OSP_PROF_WAIT_WRAPPER_IF(ret, name, params, args, fail, 1)

/* Whether a timeout argument can make the call wait (NULL: forever). */
#define TV_WAITS(tv) ((tv) == NULL || (tv)->tv_sec != 0 || (tv)->tv_usec != 0)
#define TS_WAITS(ts) ((ts) == NULL || (ts)->tv_sec != 0 || (ts)->tv_nsec != 0)

OSP_PROF_WAIT_WRAPPER(int, nanosleep, (const struct timespec *req, struct timespec *rem),
                      (req, rem), -1)
OSP_PROF_WAIT_WRAPPER(int, clock_nanosleep,
                      (clockid_t clock, int flags, const struct timespec *req,
                       struct timespec *rem),
                      (clock, flags, req, rem), ENOSYS)
OSP_PROF_WAIT_WRAPPER(int, usleep, (useconds_t usec), (usec), -1)
OSP_PROF_WAIT_WRAPPER(unsigned, sleep, (unsigned seconds), (seconds), seconds)
OSP_PROF_WAIT_WRAPPER_IF(int, poll, (struct pollfd * fds, nfds_t n, int timeout), (fds, n, timeout),
                         -1, timeout != 0)
OSP_PROF_WAIT_WRAPPER_IF(int, ppoll,
                         (struct pollfd * fds, nfds_t n, const struct timespec *timeout,
                          const sigset_t *mask),
                         (fds, n, timeout, mask), -1, TS_WAITS(timeout))
OSP_PROF_WAIT_WRAPPER_IF(int, select,
                         (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout),
                         (n, r, w, e, timeout), -1, TV_WAITS(timeout))
OSP_PROF_WAIT_WRAPPER_IF(int, pselect,
                         (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                          const sigset_t *mask),
                         (n, r, w, e, timeout, mask), -1, TS_WAITS(timeout))
OSP_PROF_WAIT_WRAPPER_IF(int, epoll_wait, (int fd, struct epoll_event *ev, int max, int timeout),
                         (fd, ev, max, timeout), -1, timeout != 0)
OSP_PROF_WAIT_WRAPPER_IF(int, epoll_pwait,
                         (int fd, struct epoll_event *ev, int max, int timeout,
                          const sigset_t *mask),
                         (fd, ev, max, timeout, mask), -1, timeout != 0)
OSP_PROF_WAIT_WRAPPER(int, pause, (void), (), -1)
OSP_PROF_WAIT_WRAPPER(int, sigsuspend, (const sigset_t *mask), (mask), -1)
OSP_PROF_WAIT_WRAPPER(int, sigwaitinfo, (const sigset_t *set, siginfo_t *info), (set, info), -1)
OSP_PROF_WAIT_WRAPPER_IF(int, sigtimedwait,
                         (const sigset_t *set, siginfo_t *info, const struct timespec *timeout),
                         (set, info, timeout), -1, TS_WAITS(timeout))

/* Semaphores: a semaphore that can be taken at once is taken without a region (no walk on
 * the uncontended path); only a wait that may block runs inside one. sem_trywait first is
 * what the wait itself does: the same outcome, and an invalid deadline is not looked at
 * when the semaphore is available (POSIX). */
#define OSP_PROF_SEM_WRAPPER(name, params, args)                       \
    OSP_PROF_PUBLIC int name params {                                  \
        static _Atomic(void *) real_;                                  \
        int(*real) params = (int(*) params)next_symbol(&real_, #name); \
        if (real == NULL) {                                            \
            errno = ENOSYS;                                            \
            return -1;                                                 \
        }                                                              \
        int saved = errno;                                             \
        if (sem_trywait(sem) == 0) return 0;                           \
        if (errno != EAGAIN) return real args;                         \
        errno = saved;                                                 \
        osp_prof_block_begin();                                        \
        int result = real args;                                        \
        saved = errno;                                                 \
        osp_prof_block_end();                                          \
        errno = saved;                                                 \
        return result;                                                 \
    }
OSP_PROF_SEM_WRAPPER(sem_wait, (sem_t * sem), (sem))
OSP_PROF_SEM_WRAPPER(sem_timedwait, (sem_t * sem, const struct timespec *abstime), (sem, abstime))
OSP_PROF_SEM_WRAPPER(sem_clockwait, (sem_t * sem, clockid_t clock, const struct timespec *abstime),
                     (sem, clock, abstime))

/* ---- syscall(2) ------------------------------------------------------------------------ */

/* Whether a raw system call made through syscall() is one of the sleeping calls above
 * (or a futex wait) that can wait: those run inside a blocking region, like their libc
 * wrappers, so a raw syscall(SYS_nanosleep, ...) is not ended early either (§(l.3)). */
static bool syscall_waits(long n, const long a[6]) {
#define TSP(i) ((const struct timespec *)a[i])
#define TVP(i) ((const struct timeval *)a[i])
    switch (n) {
#ifdef SYS_nanosleep
    case SYS_nanosleep:
#endif
#ifdef SYS_pause
    case SYS_pause:
#endif
    case SYS_clock_nanosleep:
    case SYS_rt_sigsuspend: return true;
    case SYS_futex: {
        int op = (int)a[1] & 127; /* FUTEX_CMD_MASK: without the private and clock flags */
        return op == 0 /* WAIT */ || op == 6 /* LOCK_PI */ || op == 9 /* WAIT_BITSET */ ||
               op == 11 /* WAIT_REQUEUE_PI */ || op == 13 /* LOCK_PI2 */;
    }
#ifdef SYS_poll
    case SYS_poll: return (int)a[2] != 0;
#endif
    case SYS_ppoll: return TS_WAITS(TSP(2));
#ifdef SYS_select
    case SYS_select: return TV_WAITS(TVP(4));
#endif
    case SYS_pselect6: return TS_WAITS(TSP(4));
#ifdef SYS_epoll_wait
    case SYS_epoll_wait: return (int)a[3] != 0;
#endif
    case SYS_epoll_pwait: return (int)a[3] != 0;
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2: return TS_WAITS(TSP(3));
#endif
    case SYS_rt_sigtimedwait: return TS_WAITS(TSP(2));
    default: return false;
    }
#undef TSP
#undef TVP
}

typedef long (*syscall_fn)(long, ...);
static _Atomic(void *) g_real_syscall;

/* Resolved at load, before any thread or handler runs: syscall() is async-signal-safe,
 * and this wrapper must stay so (dlsym is not); the runtime's own calls come here too. */
__attribute__((constructor(101))) static void resolve_syscall(void) {
    (void)next_symbol(&g_real_syscall, "syscall");
}

/* Six arguments are always passed on, as the C library's syscall() reads them. */
OSP_PROF_PUBLIC long syscall(long number, ...) {
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    syscall_fn real = (syscall_fn)next_symbol(&g_real_syscall, "syscall");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    if (!syscall_waits(number, a)) return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
    osp_prof_block_begin();
    long result = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
    int saved = errno;
    osp_prof_block_end();
    errno = saved;
    return result;
}

/* ---- _exit ----------------------------------------------------------------------------- */

#define OSP_PROF_EXIT_WRAPPER(name)                                    \
    OSP_PROF_PUBLIC __attribute__((noreturn)) void name(int status) {  \
        static _Atomic(void *) real_;                                  \
        void (*real)(int) = (void (*)(int))next_symbol(&real_, #name); \
        osp_prof__exit_now();                                          \
        if (real != NULL) real(status);                                \
        for (;;) syscall(SYS_exit_group, status);                      \
    }
OSP_PROF_EXIT_WRAPPER(_exit)
OSP_PROF_EXIT_WRAPPER(_Exit)

/* ---- daemon ---------------------------------------------------------------------------- */

/* glibc's daemon() forks and ends the parent -- the profiled process -- with its internal
 * _exit, which the interposer above never sees, so a program that daemonizes lost its
 * profile. The same steps here (glibc's misc/daemon.c), through fork and the interposed
 * _exit: the parent writes its profile; the child, forked, is inert as after any fork. */
OSP_PROF_PUBLIC int daemon(int nochdir, int noclose) {
    switch (fork()) {
    case -1: return -1;
    case 0: break;
    default: _exit(0);
    }
    if (setsid() == -1) return -1;
    if (!nochdir) (void)chdir("/");
    if (!noclose) {
        int fd = open("/dev/null", O_RDWR);
        if (fd == -1) return -1;
        struct stat st;
        if (fstat(fd, &st) != 0) {
            close(fd);
            return -1;
        }
        if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
            close(fd);
            errno = ENODEV;
            return -1;
        }
        (void)dup2(fd, STDIN_FILENO);
        (void)dup2(fd, STDOUT_FILENO);
        (void)dup2(fd, STDERR_FILENO);
        if (fd > 2) close(fd);
    }
    return 0;
}

/* ---- dlclose --------------------------------------------------------------------------- */

/* The raw file lists the images loaded when it is written; one the program unloads before
 * (a plugin dlopen'd, used and dlclose'd) is remembered here first, so its samples keep
 * their names (docs/spec/profiler.md §(l.6) "Unnamed code"). The sampler's ticks remember
 * images too; this catches one loaded and unloaded between two ticks. */
OSP_PROF_PUBLIC int dlclose(void *handle) {
    static _Atomic(void *) real_;
    int (*real)(void *) = (int (*)(void *))next_symbol(&real_, "dlclose");
    if (real == NULL) return -1;
    if (osp_prof__active()) osp_prof__images_note();
    return real(handle);
}

/* ---- exec ------------------------------------------------------------------------------ */

/* `envp` with this session's OSPREY_PROFILE and OSPREY_PROFILE_HZ in place of any it
 * has, or NULL (no session to follow, or no memory: the exec goes ahead unchanged).
 * Free with free(); the two strings live in the same block. */
static char **follow_env(char *const envp[]) {
    char prof[OSP_PROF_PATH_MAX + 32], hz[48];
    if (!osp_prof__exec_follow(prof, sizeof prof, hz, sizeof hz)) return NULL;
    size_t n = 0;
    while (envp != NULL && envp[n] != NULL) n++;
    size_t plen = strlen(prof) + 1, hlen = strlen(hz) + 1;
    char **out = malloc((n + 3) * sizeof *out + plen + hlen);
    if (out == NULL) return NULL;
    char *text = (char *)(out + n + 3);
    memcpy(text, prof, plen);
    memcpy(text + plen, hz, hlen);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], "OSPREY_PROFILE=", 15) != 0 &&
            strncmp(envp[i], "OSPREY_PROFILE_HZ=", 18) != 0)
            out[k++] = envp[i];
    out[k++] = text;
    out[k++] = text + plen;
    out[k] = NULL;
    return out;
}

extern char **environ;

OSP_PROF_PUBLIC int execve(const char *path, char *const argv[], char *const envp[]) {
    static _Atomic(void *) real_;
    int (*real)(const char *, char *const[], char *const[]) =
        (int (*)(const char *, char *const[], char *const[]))next_symbol(&real_, "execve");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    char **env = follow_env(envp);
    struct osp_prof_exec_hold hold;
    osp_prof__exec_prepare(&hold);
    int rc = real(path, argv, env != NULL ? env : envp);
    osp_prof__exec_failed(&hold);
    int saved = errno;
    free(env);
    errno = saved;
    return rc;
}

OSP_PROF_PUBLIC int execvpe(const char *file, char *const argv[], char *const envp[]) {
    static _Atomic(void *) real_;
    int (*real)(const char *, char *const[], char *const[]) =
        (int (*)(const char *, char *const[], char *const[]))next_symbol(&real_, "execvpe");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    char **env = follow_env(envp);
    struct osp_prof_exec_hold hold;
    osp_prof__exec_prepare(&hold);
    int rc = real(file, argv, env != NULL ? env : envp);
    osp_prof__exec_failed(&hold);
    int saved = errno;
    free(env);
    errno = saved;
    return rc;
}

OSP_PROF_PUBLIC int execv(const char *path, char *const argv[]) {
    return execve(path, argv, environ);
}

OSP_PROF_PUBLIC int execvp(const char *file, char *const argv[]) {
    return execvpe(file, argv, environ);
}

/* glibc's execl, execlp and execle call its internal __execve, not the execve above: they
 * are interposed too, their arguments collected into an argv array on the stack (counted
 * first, as glibc does) and passed on through execve/execvpe. More arguments than any
 * source can write in one call (OSP_PROF_EXECL_MAX_ARGS) fail with E2BIG. */
enum { OSP_PROF_EXECL_MAX_ARGS = 4096 };

/* The number of arguments from `arg` up to the terminating NULL, or -1 past the limit. */
static int execl_count(const char *arg, va_list *ap) {
    if (arg == NULL) return 0;
    int n = 1;
    while (va_arg(*ap, const char *) != NULL)
        if (++n >= OSP_PROF_EXECL_MAX_ARGS) return -1;
    return n;
}

/* argv[0..n] = `arg`, the next n - 1 arguments and NULL; the terminating NULL is read from
 * *ap too, so what follows it (execle's envp) is next. */
static void execl_fill(char **argv, int n, const char *arg, va_list *ap) {
    argv[0] = (char *)arg;
    for (int i = 1; i < n; i++) argv[i] = va_arg(*ap, char *);
    if (n > 0) (void)va_arg(*ap, char *);
    argv[n] = NULL;
}

OSP_PROF_PUBLIC int execl(const char *path, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    int n = execl_count(arg, &ap);
    va_end(ap);
    if (n < 0) {
        errno = E2BIG;
        return -1;
    }
    char *argv[n + 1];
    va_start(ap, arg);
    execl_fill(argv, n, arg, &ap);
    va_end(ap);
    return execve(path, argv, environ);
}

OSP_PROF_PUBLIC int execlp(const char *file, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    int n = execl_count(arg, &ap);
    va_end(ap);
    if (n < 0) {
        errno = E2BIG;
        return -1;
    }
    char *argv[n + 1];
    va_start(ap, arg);
    execl_fill(argv, n, arg, &ap);
    va_end(ap);
    return execvpe(file, argv, environ);
}

OSP_PROF_PUBLIC int execle(const char *path, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    int n = execl_count(arg, &ap);
    va_end(ap);
    if (n < 0) {
        errno = E2BIG;
        return -1;
    }
    char *argv[n + 1];
    va_start(ap, arg);
    execl_fill(argv, n, arg, &ap);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}

#endif
