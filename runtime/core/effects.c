/*
 * Effect handlers and effect continuations (docs/spec/language.md §12, §14.4, §14.6; docs/spec/profiler.md
 * §(d) registration sites and blocking regions).
 *
 * Handler stack. Each thread has a stack of immutable entries (osp_eff_entry), one per
 * (effect, operation) arm of each active `handle`. The top pointer lives in a slot the
 * collector scans: a static for threads the runtime did not start, a local variable of
 * the entry function for fiber and continuation threads. Copying a stack (spawn) copies
 * the top pointer; the entries are shared.
 *
 * Continuations. A `handle` with a resuming arm runs its body on an effect-continuation
 * thread B; the thread D that entered `handle` drives: it waits for messages (a perform
 * of one of the handle's resuming operations, or the body's end), runs the arm, and on
 * resume hands the value back and waits again. A perform message lives on the
 * performer's stack; performers are queued and served one at a time, so only one of D
 * and the performers runs at once. Abandoning a perform makes the performer leave its
 * computation: it longjmps to its thread's entry function (continuation threads and
 * fibers set one up), which unregisters from the profiler and reports the exit. A body
 * thread's exit is reported to its handle, so a driver blocked on a body that belonged
 * to an abandoned computation leaves too; every body thread is joined by its driver.
 */
#include "rt_internal.h"
#include "osp_prof.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <string.h>

/* ---- per-thread state ------------------------------------------------------------------ */

static _Thread_local osp_eff_entry **top_slot; /* where this thread's stack top lives */
static _Thread_local jmp_buf *unwind_to;       /* entry function of a fiber / continuation thread */
static _Thread_local osp_cont *body_of;        /* the handle whose body this thread runs */

static osp_eff_entry **slot(void) {
    if (top_slot == NULL) {
        /* A thread the runtime did not start (the main thread, foreign threads): a small
         * uncollectable cell, scanned as a root, kept for the life of the process. */
        osp_rt_heap_init();
        top_slot = GC_MALLOC_UNCOLLECTABLE(sizeof *top_slot);
        if (top_slot == NULL) osp_fatal_oom();
    }
    return top_slot;
}

void osp_eff_bind_slot(osp_eff_entry **s) {
    top_slot = s;
}

osp_eff_entry **osp_eff_bound_slot(void) {
    return top_slot;
}

void osp_thread_set_unwind(void *jb) {
    unwind_to = jb;
}

void *osp_thread_get_unwind(void) {
    return unwind_to;
}

void osp_thread_abandon(void) {
    if (unwind_to == NULL)
        osp_fatalf("internal error: a computation on the main thread was abandoned");
    longjmp(*unwind_to, 1);
}

/* ---- handler stack ------------------------------------------------------------------------- */

void osp_eff_push(const char *effect, const char *op, void *fn, void *env, osp_cont *cont,
                  int64_t arm, osp_eff_entry *below) {
    osp_eff_entry **s = slot();
    osp_eff_entry *e = osp_gc_alloc(sizeof *e);
    e->effect = effect;
    e->op = op;
    e->fn = fn;
    e->env = env;
    e->cont = cont;
    e->arm = arm;
    e->below = below;
    e->next = *s;
    *s = e;
}

osp_eff_entry *osp_eff_top(void) {
    return *slot();
}

void osp_eff_pop(int64_t count) {
    osp_eff_entry **s = slot();
    while (count-- > 0 && *s) *s = (*s)->next;
}

static bool key_eq(const char *a, const char *b) {
    return a == b || strcmp(a, b) == 0;
}

static osp_eff_entry *find_from(osp_eff_entry *e, const char *effect, const char *op) {
    for (; e; e = e->next)
        if (key_eq(e->op, op) && key_eq(e->effect, effect)) return e;
    osp_stream_printf_line("unhandled effect: %s.%s", effect, op);
    osp_exit(1);
}

osp_eff_entry *osp_eff_find(const char *effect, const char *op) {
    return find_from(*slot(), effect, op);
}

osp_eff_entry *osp_eff_arm_enter(const osp_eff_entry *e) {
    osp_eff_entry **s = slot();
    osp_eff_entry *saved = *s;
    *s = e->below;
    return saved;
}

void osp_eff_arm_leave(osp_eff_entry *saved) {
    *slot() = saved;
}

osp_eff_entry *osp_eff_copy(void) {
    return *slot();
}

void osp_eff_adopt(osp_eff_entry *stack) {
    *slot() = stack;
}

/* ---- continuations ------------------------------------------------------------------------ */

/*
 * The hand-off between a body thread and its driver is strictly alternating and usually
 * answered within microseconds, while a futex sleep and wake-up costs tens of
 * microseconds on many machines. A waiter therefore polls for a short while (inside
 * its blocking region, so the profiler already counts it as waiting) before it sleeps
 * on the condition variable; a signaller whose partner is still polling makes no
 * system call.
 */
#define OSP_HANDOFF_SPINS 4000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Poll `*flag` until it differs from `unwanted` (or the spin budget is used up). */
static void spin_while_eq(_Atomic int *flag, int unwanted) {
    for (int i = 0; i < OSP_HANDOFF_SPINS; i++) {
        if (atomic_load_explicit(flag, memory_order_acquire) != unwanted) return;
        cpu_relax();
    }
}

enum { R_PENDING = 0, R_VALUE, R_ABANDON, R_GONE };
enum {
    C_NEW,      /* created, body not started */
    C_RUNNING,  /* body thread running (or blocked) */
    C_DONE,     /* body finished normally; `value` holds its result */
    C_EXITED,   /* body thread left because its computation was abandoned */
    C_FINISHED, /* body thread joined; the handle is still being driven */
    C_CLOSED,   /* the handle expression has finished */
};

typedef struct msg {
    struct msg *next;
    const osp_eff_entry *entry;
    const osp_word *args;
    int64_t n;
    _Atomic int reply;
    bool from_body; /* the performer belongs to this handle's body computation */
    osp_word value;
} msg;

struct osp_cont {
    pthread_mutex_t lock;
    osp_heap_cache heap_cache; /* the body thread's small-object free lists (start.c) */
    pthread_cond_t to_driver, to_performer;
    msg *_Atomic head;
    msg *tail;
    _Atomic int state;
    bool joined;
    bool abandon_sent; /* the driver itself abandoned a perform of the body */
    osp_word value;
    pthread_t thread;
    void *env;
    osp_arm_fn const *arms;
    int64_t narms;
    osp_cont *driver_body_of; /* body_of of the thread that entered the handle */
    osp_thunk_fn body;
    void *body_env;
    osp_eff_entry *stack; /* the handler stack the body starts with */
};

struct osp_cont_k {
    osp_cont *c;
    msg *m;
    bool resumed;
    bool tail;
};

/* Poll until a message is queued or the body's state leaves `state` (spin budget). */
static void spin_driver(osp_cont *c, int state) {
    for (int i = 0; i < OSP_HANDOFF_SPINS; i++) {
        if (atomic_load_explicit(&c->head, memory_order_acquire) ||
            atomic_load_explicit(&c->state, memory_order_acquire) != state)
            return;
        cpu_relax();
    }
}

osp_cont *osp_cont_new(void *env, osp_arm_fn const *arms, int64_t narms) {
    osp_cont *c = osp_gc_alloc(sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->to_driver, NULL);
    pthread_cond_init(&c->to_performer, NULL);
    c->state = C_NEW;
    c->env = env;
    c->arms = arms;
    c->narms = narms;
    c->driver_body_of = body_of;
    return c;
}

/* Like osp_fiber_entry (fiber.c): this frame's return-address slot holds 0 while the body
 * runs, so continuation stacks end here rather than in the collector's start routine (a
 * hex frame in reports); restored before returning. */
static void *cont_entry(void *arg) {
#if defined(__x86_64__) || defined(__aarch64__)
    void *volatile *ret_slot = (void *volatile *)__builtin_frame_address(0) + 1;
    void *ret = *ret_slot;
    *ret_slot = NULL;
#endif
    osp_cont *const c = arg;
    osp_crash_thread_begin();              /* alternate signal stack, stack guard bounds */
    osp_heap_thread_begin(&c->heap_cache); /* small-object free lists, scanned: in c */
    osp_eff_entry *volatile top =
        c->stack; /* this thread's handler stack (scanned: on the stack) */
    osp_eff_bind_slot((osp_eff_entry **)&top);
    body_of = c;
    jmp_buf jb;
    unwind_to = &jb;
    osp_prof_thread_register(-1, "effect");
    if (setjmp(jb) == 0) {
        osp_word v = c->body(c->body_env);
        osp_prof_thread_unregister();
        pthread_mutex_lock(&c->lock);
        c->value = v;
        c->state = C_DONE;
    } else {
        osp_prof_thread_unregister();
        pthread_mutex_lock(&c->lock);
        c->state = C_EXITED;
    }
    pthread_cond_broadcast(&c->to_driver);
    pthread_mutex_unlock(&c->lock);
    unwind_to = NULL;
    osp_heap_thread_end();
    osp_crash_thread_end();
#if defined(__x86_64__) || defined(__aarch64__)
    *ret_slot = ret;
#endif
    return NULL;
}

/* Continuation threads get a larger stack than the default: a handled body may recurse
 * as deeply as code on the main thread. Only touched pages are committed. */
#define OSP_CONT_STACK (64u * 1024u * 1024u)

void osp_cont_begin(osp_cont *c, osp_thunk_fn body, void *env) {
    c->body = body;
    c->body_env = env;
    c->stack = *slot();
    c->state = C_RUNNING;
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) rc = pthread_attr_setstacksize(&attr, OSP_CONT_STACK);
    if (rc == 0) rc = pthread_attr_setguardsize(&attr, OSP_THREAD_GUARD);
    if (rc == 0) rc = GC_pthread_create(&c->thread, &attr, cont_entry, c);
    pthread_attr_destroy(&attr);
    if (rc != 0) osp_fatalf("cannot start effect continuation: %s", strerror(rc));
}

static void join_body(osp_cont *c) {
    if (c->joined) return;
    c->joined = true;
    osp_prof_block_begin();
    GC_pthread_join(c->thread, NULL);
    osp_prof_block_end();
}

static void reply(osp_cont *c, msg *m, int kind, osp_word v) {
    pthread_mutex_lock(&c->lock);
    m->value = v;
    m->reply = kind;
    pthread_cond_broadcast(&c->to_performer);
    pthread_mutex_unlock(&c->lock);
}

void osp_cont_abandon(osp_cont_k *k) {
    if (k->resumed) return;
    k->resumed = true;
    osp_cont *c = k->c;
    msg *m = k->m;
    bool from_body = m->from_body;
    pthread_mutex_lock(&c->lock);
    m->reply = R_ABANDON;
    pthread_cond_broadcast(&c->to_performer);
    if (from_body) {
        /* The rest of the body is dead: wait until its thread has left (every thread of
         * the abandoned computation reports to its own driver), then join it. */
        c->abandon_sent = true;
        osp_prof_block_begin();
        while (c->state == C_RUNNING) pthread_cond_wait(&c->to_driver, &c->lock);
        osp_prof_block_end();
    }
    bool exited = c->state == C_EXITED || c->state == C_DONE;
    if (exited) c->state = C_FINISHED;
    pthread_mutex_unlock(&c->lock);
    if (exited) join_body(c);
}

/* Wait for the next message or the body's end; run the arm for a message. */
static osp_word drive(osp_cont *c) {
    pthread_mutex_lock(&c->lock);
    for (;;) {
        if (c->head) {
            msg *m = c->head;
            c->head = m->next;
            if (c->head == NULL) c->tail = NULL;
            pthread_mutex_unlock(&c->lock);
            osp_cont_k k = {.c = c, .m = m};
            osp_word v = c->arms[m->entry->arm](c->env, &k);
            if (k.tail) {
                /* resume in tail position: the arm's value is whatever the body does
                 * next, which this loop now waits for without nesting */
                pthread_mutex_lock(&c->lock);
                continue;
            }
            if (!k.resumed) osp_cont_abandon(&k);
            return v;
        }
        if (c->state == C_DONE) {
            c->state = C_FINISHED;
            osp_word v = c->value;
            pthread_mutex_unlock(&c->lock);
            join_body(c);
            /* A later drive (an arm that resumed and then returned, in an enclosing
             * drive) must see the same final value. */
            return v;
        }
        if (c->state == C_FINISHED) {
            osp_word v = c->value;
            pthread_mutex_unlock(&c->lock);
            return v;
        }
        if (c->state == C_EXITED) {
            /* The body left because an enclosing computation was abandoned; this driver
             * is part of that computation and leaves too. */
            c->state = C_FINISHED;
            pthread_mutex_unlock(&c->lock);
            join_body(c);
            osp_thread_abandon();
        }
        osp_prof_block_begin();
        int st = c->state;
        pthread_mutex_unlock(&c->lock);
        spin_driver(c, st);
        pthread_mutex_lock(&c->lock);
        if (!c->head && c->state == st) pthread_cond_wait(&c->to_driver, &c->lock);
        osp_prof_block_end();
    }
}

/* After the outermost drive: make sure the body thread is gone, then close the handle. */
static void finish(osp_cont *c) {
    pthread_mutex_lock(&c->lock);
    bool left = false;
    while (c->state == C_RUNNING || c->state == C_DONE || c->state == C_EXITED || c->head) {
        while (c->head) {
            msg *m = c->head;
            c->head = m->next;
            if (m->from_body) c->abandon_sent = true;
            m->reply = m->from_body ? R_ABANDON : R_GONE;
            pthread_cond_broadcast(&c->to_performer);
        }
        c->tail = NULL;
        if (c->state == C_DONE || c->state == C_EXITED) {
            left = c->state == C_EXITED && !c->abandon_sent;
            c->state = C_FINISHED;
            pthread_mutex_unlock(&c->lock);
            join_body(c);
            pthread_mutex_lock(&c->lock);
            continue;
        }
        if (c->state == C_RUNNING) {
            osp_prof_block_begin();
            pthread_cond_wait(&c->to_driver, &c->lock);
            osp_prof_block_end();
        }
    }
    c->state = C_CLOSED;
    pthread_mutex_unlock(&c->lock);
    if (left) osp_thread_abandon();
}

osp_word osp_cont_drive(osp_cont *c) {
    osp_word v = drive(c);
    finish(c);
    return v;
}

osp_word osp_cont_arg(osp_cont_k *k, int64_t i) {
    return i >= 0 && i < k->m->n ? k->m->args[i] : 0;
}

static void resume_check(osp_cont_k *k) {
    if (k->resumed) osp_fatalf("continuation already resumed (multi-shot resume is not supported)");
    k->resumed = true;
}

osp_word osp_cont_resume(osp_cont_k *k, osp_word v) {
    resume_check(k);
    reply(k->c, k->m, R_VALUE, v);
    return drive(k->c);
}

osp_word osp_cont_resume_tail(osp_cont_k *k, osp_word v) {
    resume_check(k);
    k->tail = true;
    reply(k->c, k->m, R_VALUE, v);
    return 0;
}

osp_eff_entry *osp_cont_suspend(osp_eff_entry *e, const osp_word *args, int64_t n, osp_word *out) {
    osp_cont *c = e->cont;
    msg m = {.entry = e, .args = args, .n = n};
    for (osp_cont *x = body_of; x; x = x->driver_body_of)
        if (x == c) m.from_body = true;
    pthread_mutex_lock(&c->lock);
    if (c->state == C_CLOSED) {
        pthread_mutex_unlock(&c->lock);
        return find_from(e->next, e->effect, e->op);
    }
    if (c->tail)
        c->tail->next = &m;
    else
        c->head = &m;
    c->tail = &m;
    pthread_cond_broadcast(&c->to_driver);
    osp_prof_block_begin();
    pthread_mutex_unlock(&c->lock);
    spin_while_eq(&m.reply, R_PENDING);
    pthread_mutex_lock(&c->lock);
    while (m.reply == R_PENDING) pthread_cond_wait(&c->to_performer, &c->lock);
    osp_prof_block_end();
    int r = m.reply;
    osp_word v = m.value;
    pthread_mutex_unlock(&c->lock);
    if (r == R_VALUE) {
        *out = v;
        return NULL;
    }
    if (r == R_GONE) return find_from(e->next, e->effect, e->op);
    osp_thread_abandon();
}
