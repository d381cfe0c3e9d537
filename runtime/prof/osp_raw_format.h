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
/* Which sampling engine wrote the file (docs/spec/profiler.md §(l.3), §(l.9)); the value
 * OSP_RAW_ENGINE_ATTACH is written by `osprey --attach` (driver/attach.c). */
#define OSP_RAW_KEY_ENGINE             "engine"
#define OSP_RAW_ENGINE_ATTACH          "attach"

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
    OSP_RAW_DROP_COUNT
};
#define OSP_RAW_DROP_NAME_ALLOC       "alloc"
#define OSP_RAW_DROP_NAME_NO_ANSWER   "no_answer"
#define OSP_RAW_DROP_NAME_RING_FULL   "ring_full"
#define OSP_RAW_DROP_NAME_STORE_FULL  "store_full"
#define OSP_RAW_DROP_NAME_THREAD_GONE "thread_gone"
/* Initializer of a `const char *const [OSP_RAW_DROP_COUNT]` table, indexed by the enum. */
#define OSP_RAW_DROP_NAMES                                                              \
    {OSP_RAW_DROP_NAME_ALLOC, OSP_RAW_DROP_NAME_NO_ANSWER, OSP_RAW_DROP_NAME_RING_FULL, \
     OSP_RAW_DROP_NAME_STORE_FULL, OSP_RAW_DROP_NAME_THREAD_GONE}

#endif /* OSP_RAW_FORMAT_H */
