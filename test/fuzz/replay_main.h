/*
 * replay_main.h — the contract between a libFuzzer target and replay_main.c, the plain main
 * that replays a target's kept corpus in every build (ctest), sanitizers included.
 */
#ifndef OSPREY_FUZZ_REPLAY_MAIN_H
#define OSPREY_FUZZ_REPLAY_MAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The target: run one input of `size` bytes (borrowed for the call). Returns 0; a finding
 * aborts (or is reported by a sanitizer). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Optional, defined by a target that needs it: called once after the last input, with the
 * summary line ("replayed N inputs") still open on `out`, to append to it (e.g. ", 3 built a
 * table") and to clean up (temporary directories). 0, or non-zero to fail the replay. */
int fuzz_replay_finish(FILE *out) __attribute__((weak));

#endif
