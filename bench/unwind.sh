#!/usr/bin/env bash
# bench/unwind.sh — the unwinder's figures (docs/spec/profiler.md §(l.1), §(l.4)):
#  1. bench/unwind.py: share of on-CPU and waiting weight in stacks that reach their
#     thread's root, on an Osprey program (maps, strings, allocation, a fiber) and a C
#     program (qsort + strcmp + snprintf, threads blocked in cond_wait / join / sem_wait /
#     pipe read), and whether the blocked threads' stacks show the program's callers;
#  2. bench/unwind_cost.c: the SIGPROF handler's cost per sample with the frame-pointer
#     walk (before) and the hybrid walk (now), on a frame-pointer stack and under qsort.
# Each prints its figures and one 'target ...: ok / MISSED' line per target.
# Usage: bench/unwind.sh   (after make build; BUILD=<dir> to use another build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LIB="$BUILD/lib/libosprey_rt.a"
[ -f "$LIB" ] || { echo "unwind: $LIB missing; run make build first" >&2; exit 1; }
BIN="$BUILD/bench"
mkdir -p "$BIN"
python3 bench/unwind.py --build "$BUILD" --seconds "${SECONDS_PER_RUN:-3}"
clang-19 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Iruntime/prof \
  bench/unwind_cost.c "$LIB" -lgc -lm -lpthread -o "$BIN/unwind_cost"
"$BIN/unwind_cost" "${SIGNALS_PER_ROUND:-20000}" "${ROUNDS:-31}"
