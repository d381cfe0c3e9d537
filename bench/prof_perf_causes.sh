#!/usr/bin/env bash
# The perf_event engine's lost samples and per-sample CPU, cause by cause, on a bare
# task-clock counter (bench/prof_perf_causes.c; docs/profiler-runtime.md "Cost"):
#
#  1. Rate: signals per CPU-second over the rate, at 997 Hz and 10 kHz, interleaved
#     rounds, medians, for: exclude_kernel 1 (the engine) or 0; SIGPROF (coalesced while
#     pending) or a real-time signal (queued); no ioctl, or PERF_EVENT_IOC_PERIOD every
#     4 ms of CPU (the engine's period draws). exclude_kernel 0 needs
#     perf_event_paranoid <= 1 or CAP_PERFMON (root here); its rows are skipped otherwise.
#  2. Cost: CPU per signal of fixed work with no counter, with a counter whose handler
#     does nothing (the delivery alone), and with the handler reading the thread's CPU
#     clock (as the engine's does): (CPU - CPU without) / signals.
#
# Usage: bench/prof_perf_causes.sh   ROUNDS=<n> (default 5)  BUILD=<dir> (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
mkdir -p "$BUILD/bench"
clang-19 -O2 -g bench/prof_perf_causes.c -o "$BUILD/bench/prof_perf_causes"
echo "prof_perf_causes: $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid)"
BIN="$BUILD/bench/prof_perf_causes" ROUNDS="$ROUNDS" python3 - <<'PY'
import os, statistics, subprocess
BIN, ROUNDS = os.environ["BIN"], int(os.environ["ROUNDS"])
def run(*args):
    p = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True)
    return p.stdout.split() if p.returncode == 0 else None
print(f"\n1. Signals per CPU-second over the rate (1 s runs, {ROUNDS} interleaved rounds, medians)")
configs = [(1, 0, 0), (0, 0, 0), (1, 1, 0), (0, 1, 0), (1, 0, 1), (0, 1, 1)]
for hz in (997, 10000):
    every = max(1, 4000000 // (1000000000 // hz))
    got = {c: [] for c in configs}
    for r in range(ROUNDS):
        for c in configs:
            out = run("rate", hz, 1.0, c[0], c[1], every if c[2] else 0)
            if out: got[c].append(float(out[1]))
    for c in configs:
        if not got[c]:
            print(f"  {hz:>5} Hz exclude_kernel={c[0]} {'rt' if c[1] else 'SIGPROF':>7} {'ioctl/4ms' if c[2] else 'no ioctl':>9}: not allowed here")
            continue
        print(f"  {hz:>5} Hz exclude_kernel={c[0]} {'rt' if c[1] else 'SIGPROF':>7} {'ioctl/4ms' if c[2] else 'no ioctl':>9}: "
              f"{statistics.median(got[c]):.4f} (runs {min(got[c]):.4f}..{max(got[c]):.4f})")
print(f"\n2. CPU per signal ({ROUNDS} interleaved rounds, medians)")
for hz, units in ((997, 3000), (10000, 1500)):
    got = {m: [] for m in (0, 1, 2)}
    for r in range(ROUNDS):
        for m in (0, 1, 2):
            out = run("cost", hz, units, m)
            got[m].append((int(out[1]), int(out[2])))
    base = statistics.median(c for _, c in got[0])
    for m, what in ((1, "delivery only"), (2, "delivery + CPU clock read")):
        cpu = statistics.median(c for _, c in got[m])
        n = statistics.median(s for s, _ in got[m])
        print(f"  {hz:>5} Hz {what:>26}: CPU {cpu / base:.4f} of unprofiled, {n:.0f} signals, "
              f"{(cpu - base) / n / 1000:.1f} us per signal")
PY
echo "load average after: $(cut -d' ' -f1 /proc/loadavg)"
