/*
 * Processes (docs/spec/language.md §9.6, §16.8): spawnProcess, awaitProcess, cleanupProcess.
 *
 * Threads. spawnProcess starts `/bin/sh -c command` with posix_spawn (stdout and stderr are
 * pipes, stdin is inherited) and one detached monitor thread per process. The monitor (and
 * only it) reads the pipes, reaps the child and calls the program's callback; it registers
 * with the profiler as fiber -2, label `process`, so time in callbacks is sampled there.
 *
 * Delivery gate (§16.8). A callback never runs while the thread that spawned the process is
 * running Osprey code: every blocking wait of the runtime (await, sleep, channels,
 * awaitProcess) brackets itself with osp_gate_block_begin/end, and a monitor delivers only
 * while its spawner's gate is open (blocked, or the spawner has finished). Leaving a
 * blocking wait waits for callbacks in progress to return, so the spawner and a callback
 * never overlap. Each spawning thread has one gate, allocated on first use and never freed
 * (monitors may outlive the thread).
 *
 * Order. Chunks are single reads of at most 1023 bytes; when both pipes have data, stdout is
 * read first. The exit event (kind 3) comes after all output (both pipes at end of file and
 * the child reaped), so it is always last. awaitProcess returns after the exit callback has
 * returned.
 *
 * Locks: `table_lock` guards the id table; each process's `lock` guards its `done` and
 * `status`; each gate's `lock` guards its counters. No thread holds two of them at once.
 */
#define _GNU_SOURCE /* pipe2 */
#include "rt_internal.h"
#include "osp_prof.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { OSP_PROCESS_MAX = 1000, OSP_PROCESS_CHUNK = 1023 };
enum { EVENT_STDOUT = 1, EVENT_STDERR = 2, EVENT_EXIT = 3 };

/* ---- the delivery gate ---------------------------------------------------------------- */

struct osp_gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int blocked;   /* > 0 while the owner waits inside the runtime */
    int running;   /* callbacks in progress */
    bool finished; /* the owner thread has ended */
};

static _Thread_local osp_gate *my_gate;

static osp_gate *gate_of_current_thread(void) {
    if (my_gate == NULL) {
        osp_gate *g = GC_MALLOC_UNCOLLECTABLE(sizeof *g);
        if (g == NULL) osp_fatal_oom();
        pthread_mutex_init(&g->lock, NULL);
        pthread_cond_init(&g->cond, NULL);
        my_gate = g;
    }
    return my_gate;
}

void osp_gate_block_begin(void) {
    osp_gate *g = my_gate;
    if (g == NULL) return; /* this thread never spawned a process */
    pthread_mutex_lock(&g->lock);
    g->blocked++;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

void osp_gate_block_end(void) {
    osp_gate *g = my_gate;
    if (g == NULL) return;
    pthread_mutex_lock(&g->lock);
    while (g->running > 0 && g->blocked == 1) pthread_cond_wait(&g->cond, &g->lock);
    g->blocked--;
    pthread_mutex_unlock(&g->lock);
}

void osp_gate_thread_end(void) {
    osp_gate *g = my_gate;
    if (g == NULL) return;
    pthread_mutex_lock(&g->lock);
    g->finished = true;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* ---- the process table ------------------------------------------------------------------ */

typedef int64_t (*event_fn)(void *closure, int64_t id, int64_t kind, const char *text);

typedef struct process {
    int64_t id;
    pid_t pid;
    int out_fd, err_fd;
    osp_closure callback;
    osp_gate *gate;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    int64_t status;
} process;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static process **table; /* [OSP_PROCESS_MAX], uncollectable: keeps records alive */
static int64_t next_id = 1;

static process *lookup(int64_t id) {
    process *p = NULL;
    pthread_mutex_lock(&table_lock);
    if (table && id >= 1 && id < OSP_PROCESS_MAX) p = table[id];
    pthread_mutex_unlock(&table_lock);
    return p;
}

static void deliver(process *p, int64_t kind, const char *text) {
    osp_gate *g = p->gate;
    pthread_mutex_lock(&g->lock);
    while (g->blocked == 0 && !g->finished) pthread_cond_wait(&g->cond, &g->lock);
    g->running++;
    pthread_mutex_unlock(&g->lock);
    event_fn code = *(event_fn *)p->callback;
    code(p->callback, p->id, kind, text);
    pthread_mutex_lock(&g->lock);
    g->running--;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* One read of at most OSP_PROCESS_CHUNK bytes from `*fd`, delivered; closes it at EOF. */
static void read_chunk(process *p, int *fd, int64_t kind) {
    char buf[OSP_PROCESS_CHUNK + 1];
    ssize_t n;
    do n = read(*fd, buf, OSP_PROCESS_CHUNK);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        return;
    }
    buf[n] = 0;
    deliver(p, kind, osp_str_dup_n(buf, (size_t)n));
}

static void *monitor_entry(void *arg) {
    process *p = arg;
    osp_crash_thread_begin();
    osp_eff_entry *volatile handlers = NULL; /* callbacks run with no effect handlers */
    osp_eff_bind_slot((osp_eff_entry **)&handlers);
    osp_prof_thread_register(-2, "process");
    while (p->out_fd >= 0 || p->err_fd >= 0) {
        struct pollfd fds[2] = {{p->out_fd, POLLIN, 0}, {p->err_fd, POLLIN, 0}};
        int rc = poll(fds, 2, -1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) break;
        bool out_ready = p->out_fd >= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR));
        bool err_ready = p->err_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR));
        if (out_ready) read_chunk(p, &p->out_fd, EVENT_STDOUT); /* stdout first */
        if (err_ready) read_chunk(p, &p->err_fd, EVENT_STDERR);
    }
    if (p->out_fd >= 0) close(p->out_fd);
    if (p->err_fd >= 0) close(p->err_fd);
    int ws = 0;
    pid_t r;
    osp_prof_block_begin();
    do r = waitpid(p->pid, &ws, 0);
    while (r < 0 && errno == EINTR);
    osp_prof_block_end();
    int64_t status = r < 0 ? -1 : WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    char text[24];
    snprintf(text, sizeof text, "%lld", (long long)status);
    deliver(p, EVENT_EXIT, osp_str_dup_n(text, strlen(text)));
    osp_prof_thread_unregister();
    pthread_mutex_lock(&p->lock);
    p->status = status;
    p->done = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    osp_crash_thread_end();
    return NULL;
}

static osp_rres spawn_failed(void) {
    return (osp_rres){OSP_RESULT_ERROR, 0}; /* §9.6: an Error with no message */
}

osp_rres osp_process_spawn(const char *command, osp_closure on_event) {
    osp_rt_heap_init();
    if (command == NULL) command = "";
    pthread_mutex_lock(&table_lock);
    if (table == NULL) {
        table = GC_MALLOC_UNCOLLECTABLE(OSP_PROCESS_MAX * sizeof *table);
        if (table == NULL) osp_fatal_oom();
    }
    int64_t id = next_id < OSP_PROCESS_MAX ? next_id++ : -1;
    pthread_mutex_unlock(&table_lock);
    if (id < 0) return spawn_failed();

    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) return spawn_failed();
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        return spawn_failed();
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    char *argv[] = {"sh", "-c", (char *)command, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    close(err[1]);
    if (rc != 0) {
        close(out[0]);
        close(err[0]);
        return spawn_failed();
    }
    process *p = osp_gc_alloc(sizeof *p);
    p->id = id;
    p->pid = pid;
    p->out_fd = out[0];
    p->err_fd = err[0];
    p->callback = on_event;
    p->gate = gate_of_current_thread();
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    pthread_mutex_lock(&table_lock);
    table[id] = p;
    pthread_mutex_unlock(&table_lock);

    pthread_attr_t attr;
    pthread_t thread;
    rc = pthread_attr_init(&attr);
    if (rc == 0) rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (rc == 0) rc = pthread_attr_setguardsize(&attr, OSP_THREAD_GUARD);
    if (rc == 0) rc = GC_pthread_create(&thread, &attr, monitor_entry, p);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        /* no monitor: nobody would read the pipes; let the child see EOF/EPIPE and reap it */
        close(p->out_fd);
        close(p->err_fd);
        waitpid(pid, NULL, 0);
        pthread_mutex_lock(&table_lock);
        table[id] = NULL;
        pthread_mutex_unlock(&table_lock);
        return spawn_failed();
    }
    return (osp_rres){OSP_RESULT_SUCCESS, (osp_word)id};
}

int64_t osp_process_await(int64_t id) {
    process *p = lookup(id);
    if (p == NULL) return -1;
    osp_gate_block_begin();
    osp_prof_block_begin();
    pthread_mutex_lock(&p->lock);
    while (!p->done) pthread_cond_wait(&p->cond, &p->lock);
    int64_t status = p->status;
    pthread_mutex_unlock(&p->lock);
    osp_prof_block_end();
    osp_gate_block_end();
    return status;
}

void osp_process_cleanup(int64_t id) {
    pthread_mutex_lock(&table_lock);
    if (table && id >= 1 && id < OSP_PROCESS_MAX) table[id] = NULL;
    pthread_mutex_unlock(&table_lock);
}
