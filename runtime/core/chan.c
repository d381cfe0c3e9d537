/*
 * Channels (docs/spec/language.md §11.3, §14.4): a bounded FIFO of boxed words shared by threads,
 * with an id from the handle table (the counter fibers use). A sender waits while the
 * channel is full and a receiver while it is empty, each inside a profiler blocking
 * region (docs/spec/profiler.md §(d)), entered only when the call really has to wait.
 */
#include "rt_internal.h"
#include "osp_prof.h"

#include <pthread.h>
#include <time.h>

typedef struct osp_chan {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    int64_t cap, head, count;
    osp_word *ring; /* collector memory: the values may be pointers */
} osp_chan;

int64_t osp_chan_new(int64_t cap) {
    if (cap <= 0) osp_fatalf("Channel capacity must be positive (got %lld)", (long long)cap);
    if ((uint64_t)cap > SIZE_MAX / sizeof(osp_word) / 2) osp_fatal_oom();
    osp_chan *c = osp_gc_alloc(sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->not_empty, NULL);
    pthread_cond_init(&c->not_full, NULL);
    c->cap = cap;
    c->ring = osp_gc_alloc((size_t)cap * sizeof(osp_word));
    return osp_handle_register(OSP_HANDLE_CHANNEL, c);
}

static osp_chan *chan_of(int64_t id, const char *what) {
    osp_chan *c = osp_handle_lookup(id, OSP_HANDLE_CHANNEL);
    if (c == NULL) osp_fatalf("%s on unknown channel %lld", what, (long long)id);
    return c;
}

void osp_chan_put(int64_t id, osp_word v) {
    osp_chan *c = chan_of(id, "send");
    pthread_mutex_lock(&c->lock);
    bool waited = c->count == c->cap;
    if (waited) {
        osp_gate_block_begin(); /* callbacks of processes this thread spawned may run (§16.8) */
        osp_prof_block_begin();
        while (c->count == c->cap) pthread_cond_wait(&c->not_full, &c->lock);
        osp_prof_block_end();
    }
    c->ring[(c->head + c->count) % c->cap] = v;
    c->count++;
    pthread_cond_signal(&c->not_empty);
    pthread_mutex_unlock(&c->lock);
    /* after the unlock: closing the gate waits for callbacks, which may use this channel */
    if (waited) osp_gate_block_end();
}

osp_word osp_chan_take(int64_t id) {
    osp_chan *c = chan_of(id, "recv");
    pthread_mutex_lock(&c->lock);
    bool waited = c->count == 0;
    if (waited) {
        osp_gate_block_begin(); /* callbacks of processes this thread spawned may run (§16.8) */
        osp_prof_block_begin();
        while (c->count == 0) pthread_cond_wait(&c->not_empty, &c->lock);
        osp_prof_block_end();
    }
    osp_word v = c->ring[c->head];
    c->ring[c->head] = 0;
    c->head = (c->head + 1) % c->cap;
    c->count--;
    pthread_cond_signal(&c->not_full);
    pthread_mutex_unlock(&c->lock);
    if (waited) osp_gate_block_end(); /* after the unlock, as in osp_chan_put */
    return v;
}
