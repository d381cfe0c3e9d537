/*
 * osp_raw_format.h — the names and numbers of the raw profile format, version 1: the
 * top-level keys (in the writer's order), the keys of thread rows and image objects, the
 * sample states and the drop reasons. Plain C (macros and enums only, no includes), so the
 * runtime writer (prof_raw_writer.c, prof_images.c), the post-processor's reader
 * (postprocess/reader.c) and the test readers under test/ spell the format one way.
 *
 * Every key macro is a string literal, so it can be pasted into a larger literal:
 * `"{\"" OSP_RAW_KEY_VERSION "\":"`.
 *
 * Source: docs/spec/profiler.md §(e) "Raw JSON format, version 1", §(b.5) (drop reasons).
 */
#ifndef OSP_RAW_FORMAT_H
#define OSP_RAW_FORMAT_H

/* The value of the "version" key this runtime writes and the reader accepts. */
#define OSP_RAW_VERSION 1

/* Required top-level keys, in the order §(e) gives them. */
#define OSP_RAW_KEY_VERSION            "version"
#define OSP_RAW_KEY_PID                "pid"
#define OSP_RAW_KEY_EXE                "exe"
#define OSP_RAW_KEY_RATE_HZ            "rate_hz"
#define OSP_RAW_KEY_PLATFORM           "platform"
#define OSP_RAW_KEY_START_UNIX_NS      "start_unix_ns"
#define OSP_RAW_KEY_END_UNIX_NS        "end_unix_ns"
#define OSP_RAW_KEY_IMAGES             "images"
#define OSP_RAW_KEY_THREADS            "threads"
#define OSP_RAW_KEY_STACKS             "stacks"
#define OSP_RAW_KEY_SAMPLES            "samples"
/* Optional in §(e) (the reader accepts its absence); this runtime always writes it. */
#define OSP_RAW_KEY_DROPPED            "dropped"
/* Additional keys this runtime writes after "dropped", in this order (§(e) allows
 * additional keys; the reader uses sample_weights_ns and truncated_stacks). */
#define OSP_RAW_KEY_SAMPLE_WEIGHTS_NS  "sample_weights_ns"
#define OSP_RAW_KEY_TICKS              "ticks"
#define OSP_RAW_KEY_LATE_TICKS         "late_ticks"
#define OSP_RAW_KEY_DROPPED_REASONS    "dropped_reasons"
#define OSP_RAW_KEY_THREADS_OVER_LIMIT "threads_over_limit"
#define OSP_RAW_KEY_TRUNCATED_STACKS   "truncated_stacks"
/* Which sampling engine ran (§(l.3)): one of the OSP_RAW_ENGINE_* strings. */
#define OSP_RAW_KEY_ENGINE             "engine"

/* Values of "engine" (§(l.3)). */
#define OSP_RAW_ENGINE_PERF_EVENT   "perf_event"
#define OSP_RAW_ENGINE_CPU_TIMER    "cpu_timer"
#define OSP_RAW_ENGINE_SAMPLER      "sampler"
/* written by `osprey --attach` (driver/attach.c), §(l.9) */
#define OSP_RAW_ENGINE_ATTACH       "attach"
/* {"chain_end":N,"root":N,"no_rule":N,"bad_stack":N,"cap":N,"blocked_reads":N,
 * "blocked_skips":N}: how the walks of the stored samples ended, how many blocked threads'
 * stacks were read without a signal, and how many on-CPU requests were not sent because
 * the thread had blocked (docs/profiler-runtime.md "The unwinder"; §(l.1), §(l.4)). */
#define OSP_RAW_KEY_UNWIND          "unwind"
/* A non-negative integer, after "unwind": CPU time in ns the profiler used that no sample
 * can carry, because it ran where nothing is sampled: the session owner's start-up before
 * it registered (the CFI tables, the engine), the sampler thread, and the session owner's
 * stop and file write after sampling ended (measured up to this key, written last).
 * Profile CPU accounts for the process's CPU as the on-CPU weights plus this. */
#define OSP_RAW_KEY_PROFILER_CPU_NS "profiler_cpu_ns"

/* Keys of one row of "threads" (§(e), §(d)). */
#define OSP_RAW_THREAD_FIBER "fiber"
#define OSP_RAW_THREAD_LABEL "label"
#define OSP_RAW_THREAD_TID   "tid"

/* Keys of one object of "images" and of its "symbols" entries (§(e) "Images"). */
#define OSP_RAW_IMAGE_PATH      "path"
#define OSP_RAW_IMAGE_BASE      "base"
#define OSP_RAW_IMAGE_SLIDE     "slide"
#define OSP_RAW_IMAGE_TEXT      "text"
#define OSP_RAW_IMAGE_TEXT_SIZE "text_size"
#define OSP_RAW_IMAGE_ARCH      "arch"
#define OSP_RAW_IMAGE_BUILD_ID  "build_id"
#define OSP_RAW_IMAGE_SYMBOLS   "symbols"
#define OSP_RAW_SYMBOL_NAME     "name"
#define OSP_RAW_SYMBOL_ADDR     "addr"
#define OSP_RAW_SYMBOL_SIZE     "size"

/* The state field of a sample `[t_rel_ns, row, stack, state]` (§(e)). */
enum osp_raw_sample_state {
    OSP_RAW_STATE_ON_CPU = 0,
    OSP_RAW_STATE_WAITING = 1,
};

/* Reasons a sample is lost (§(b.5)): the keys of "dropped_reasons", in the writer's order,
 * which is this enum's order. */
enum osp_raw_drop_reason {
    OSP_RAW_DROP_ALLOC,
    OSP_RAW_DROP_NO_ANSWER,
    OSP_RAW_DROP_RING_FULL,
    OSP_RAW_DROP_STORE_FULL,
    OSP_RAW_DROP_THREAD_GONE,
    OSP_RAW_DROP_CPU_UNSAMPLED,
    OSP_RAW_DROP_HANDLER_REPLACED,
    OSP_RAW_DROP_NO_STACK,
    OSP_RAW_DROP_COUNT
};
#define OSP_RAW_DROP_NAME_ALLOC            "alloc"
#define OSP_RAW_DROP_NAME_NO_ANSWER        "no_answer"
#define OSP_RAW_DROP_NAME_RING_FULL        "ring_full"
#define OSP_RAW_DROP_NAME_STORE_FULL       "store_full"
#define OSP_RAW_DROP_NAME_THREAD_GONE      "thread_gone"
/* §(l.3) "any shortfall is counted": an on-CPU sample whose weight covers k >= 2 periods
 * stands for k - 1 samples that were not taken. */
#define OSP_RAW_DROP_NAME_CPU_UNSAMPLED    "cpu_unsampled"
/* §(l.3): samples (one per period of CPU time) lost after the program replaced the
 * profiler's SIGPROF action. */
#define OSP_RAW_DROP_NAME_HANDLER_REPLACED "handler_replaced"
/* A waiting tick of a thread blocked in foreign code whose stack could not be taken
 * without signalling it (§(l.3), §(l.4)). */
#define OSP_RAW_DROP_NAME_NO_STACK         "no_stack"
/* Initializer of a `const char *const [OSP_RAW_DROP_COUNT]` table, indexed by the enum. */
#define OSP_RAW_DROP_NAMES               \
    {OSP_RAW_DROP_NAME_ALLOC,            \
     OSP_RAW_DROP_NAME_NO_ANSWER,        \
     OSP_RAW_DROP_NAME_RING_FULL,        \
     OSP_RAW_DROP_NAME_STORE_FULL,       \
     OSP_RAW_DROP_NAME_THREAD_GONE,      \
     OSP_RAW_DROP_NAME_CPU_UNSAMPLED,    \
     OSP_RAW_DROP_NAME_HANDLER_REPLACED, \
     OSP_RAW_DROP_NAME_NO_STACK}

/* How a stack walk ended: the keys of "unwind", in the writer's order, which is the order
 * of enum osp_unwind_end (runtime/prof/prof_cfi.h). */
#define OSP_RAW_UNWIND_COUNT         5
#define OSP_RAW_UNWIND_NAMES         {"chain_end", "root", "no_rule", "bad_stack", "cap"}
#define OSP_RAW_UNWIND_BLOCKED_READS "blocked_reads"
/* On-CPU requests the sampler did not send because the thread was blocked by then. */
#define OSP_RAW_UNWIND_BLOCKED_SKIPS "blocked_skips"

#endif /* OSP_RAW_FORMAT_H */
