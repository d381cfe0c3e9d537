#!/usr/bin/env bash
# `osprey --attach` benchmarks (docs/spec/profiler.md §(l.9), issue 15). Prints measured
# figures (`make bench` keeps them in bench/results/attach.txt):
#
#  1. Cost to the target: bench/attach_workload.c (2 busy threads, fixed work) run alone,
#     with `osprey --attach` at 99 Hz and at 997 Hz, in interleaved rounds (shuffled order
#     per round). The workload times its own work (after a 300 ms pause in which osprey
#     seizes it); medians as ratios to the unattached median of the same run, with the
#     quartiles of each round's ratio to that round's unattached run; and the share of
#     time osprey held a sampled thread stopped, as osprey itself reports it. On a loaded
#     machine the wall ratios carry the load's noise (ratios below 1 are that noise).
#  2. Agreement: self% per function (attach_a / attach_b / attach_c, expected 50 / 33.3 /
#     16.7) of the attached profile at 997 Hz against an in-process profile of the same
#     program (`osprey --record`, preloaded runtime, 997 Hz), both from the .folded export
#     (on-CPU stacks of the worker threads), per round and over all rounds.
#
# Then one line per target, `target ...: ok` or `target ...: MISSED (...)`:
#   wall time attached at 99 Hz <= 1.05 x unattached; at 997 Hz <= 1.25 x;
#   |self% attached - self% in-process| <= 3 points for every function (pooled rounds).
# (The SIGKILL fault-injection target is a ctest: test/postprocess/e2e/attach.test.)
#
# Usage: bench/attach.sh          (after `make build`)
#   REPS=<n> rounds (default 5)   UNITS=<n> work units per thread (default: ~3 s of work)
#   BUILD=<d> build directory (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPS=${REPS:-5}
OSPREY="$BUILD/bin/osprey"
[ -x "$OSPREY" ] || { echo "attach: $OSPREY missing; run make build first" >&2; exit 1; }
BIN="$BUILD/bench"
mkdir -p "$BIN"
clang-19 -O2 -g -fno-omit-frame-pointer -pthread bench/attach_workload.c -o "$BIN/attach_workload"
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
W="$BIN/attach_workload"

# Calibrate: ~3 s of work for two threads (on an idle machine; less on a loaded one).
if [ -z "${UNITS:-}" ]; then
  ns=$("$W" 200 2 0 | sed -n 's/^work_ns=//p')
  UNITS=$(( 200 * 3000000000 / (ns > 0 ? ns : 1) ))
  [ "$UNITS" -ge 100 ] || UNITS=100
fi
echo "attach: 2 busy threads, $UNITS units each, $REPS rounds, load average $(cut -d' ' -f1 /proc/loadavg), $(nproc) CPUs"

# run_one <mode> <round>: prints the workload's work_ns
run_one() {
  local mode=$1 r=$2 out="$SCRATCH/$1-$2"
  case $mode in
    plain)
      "$W" "$UNITS" 2 300 > "$out.txt" ;;
    attach99|attach997)
      local hz=${mode#attach}
      "$W" "$UNITS" 2 300 > "$out.txt" &
      local pid=$!
      # wait for "ready" so osprey attaches during the pause, before the work
      for _ in $(seq 200); do grep -q ready "$out.txt" 2>/dev/null && break; sleep 0.01; done
      OSPREY_PROFILE_HZ=$hz "$OSPREY" --attach "$pid" -o "$out" > "$out.report" 2>&1 || true
      wait "$pid" ;;
    record)
      "$OSPREY" --record -o "$out" -- "$W" "$UNITS" 2 300 > "$out.txt" 2> "$out.report" ;;
  esac
  sed -n 's/^work_ns=//p' "$out.txt"
}

: > "$SCRATCH/times.txt"
for r in $(seq "$REPS"); do
  for mode in $(printf '%s\n' plain attach99 attach997 record | shuf); do
    echo "$r $mode $(run_one "$mode" "$r")" >> "$SCRATCH/times.txt"
  done
done

python3 - "$SCRATCH" "$REPS" <<'PY'
import os, statistics, sys
scratch, reps = sys.argv[1], int(sys.argv[2])
t = {}
for line in open(os.path.join(scratch, "times.txt")):
    r, mode, ns = line.split()
    t[(int(r), mode)] = int(ns)

def q(v):
    v = sorted(v)
    if len(v) < 2:
        return v[0], v[0]
    qs = statistics.quantiles(v, n=4, method="inclusive")
    return qs[0], qs[2]

plain = [t[(r, "plain")] for r in range(1, reps + 1)]
print("\n1. cost to the target (its own work time; ratio to unattached)")
print("   %-22s %10s %8s %18s" % ("configuration", "median s", "ratio", "round ratios q1..q3"))
print("   %-22s %10.3f %8s" % ("unattached", statistics.median(plain) / 1e9, "1.000"))
ratios = {}
for mode, label in (("attach99", "attach 99 Hz"), ("attach997", "attach 997 Hz"),
                    ("record", "in-process 997 Hz")):
    v = [t[(r, mode)] for r in range(1, reps + 1)]
    rr = [t[(r, mode)] / t[(r, "plain")] for r in range(1, reps + 1)]
    ratio = statistics.median(v) / statistics.median(plain)
    ratios[mode] = (ratio, q(rr))
    lo, hi = q(rr)
    print("   %-22s %10.3f %8.3f %8.3f..%.3f" % (label, statistics.median(v) / 1e9, ratio, lo, hi))

import re
print("\n   time a sampled thread was held stopped by osprey (its own measure, stop seen -> continued):")
for mode, label in (("attach99", "attach 99 Hz"), ("attach997", "attach 997 Hz")):
    v = []
    for r in range(1, reps + 1):
        try:
            m = re.search(r"stopped ([0-9.]+)% of the time", open(os.path.join(scratch, "%s-%d.report" % (mode, r))).read())
        except OSError:
            m = None
        if m:
            v.append(float(m.group(1)))
    if v:
        print("   %-22s median %.3f%%, rounds %.3f..%.3f%%" % (label, statistics.median(v), min(v), max(v)))

def self_shares(path):
    w = {}
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        if "worker" not in frames:
            continue
        w[frames[-1]] = w.get(frames[-1], 0) + int(n)
    return w

funcs = ("attach_a", "attach_b", "attach_c")
print("\n2. self% of the worker threads' on-CPU samples (expected 50.0 / 33.3 / 16.7)")
print("   %-8s %-12s %9s %9s %9s %9s" % ("round", "profile", "samples", *funcs))
pooled = {"attach997": {}, "record": {}}
for r in range(1, reps + 1):
    for mode, label in (("attach997", "attach"), ("record", "in-process")):
        f = os.path.join(scratch, "%s-%d.folded" % (mode, r))
        if not os.path.exists(f):
            print("   %-8d %-12s (no profile)" % (r, label))
            continue
        w = self_shares(f)
        tot = sum(w.values()) or 1
        for k, v in w.items():
            pooled[mode][k] = pooled[mode].get(k, 0) + v
        print("   %-8d %-12s %9d %9.1f %9.1f %9.1f" % (r, label, tot, *(100 * w.get(k, 0) / tot for k in funcs)))
worst = 0.0
shares = {}
for mode in pooled:
    tot = sum(pooled[mode].values()) or 1
    shares[mode] = {k: 100 * pooled[mode].get(k, 0) / tot for k in funcs}
    print("   %-8s %-12s %9d %9.1f %9.1f %9.1f" % ("pooled", "attach" if mode == "attach997" else "in-process",
          sum(pooled[mode].values()), *(shares[mode][k] for k in funcs)))
diffs = {k: shares["attach997"][k] - shares["record"][k] for k in funcs}
worst = max(abs(d) for d in diffs.values())
print("   difference (attach - in-process): " + ", ".join("%s %+.1f" % (k, d) for k, d in diffs.items()))

print()
def verdict(name, ok, detail):
    print("target %s: %s (%s)" % (name, "ok" if ok else "MISSED", detail))
r99, (lo99, hi99) = ratios["attach99"]
r997, (lo997, hi997) = ratios["attach997"]
verdict("attach 99 Hz wall <= 1.05", r99 <= 1.05, "%.3f, rounds %.3f..%.3f" % (r99, lo99, hi99))
verdict("attach 997 Hz wall <= 1.25", r997 <= 1.25, "%.3f, rounds %.3f..%.3f" % (r997, lo997, hi997))
verdict("attach self% within 3 points of in-process", worst <= 3.0, "worst %.1f points" % worst)
PY
