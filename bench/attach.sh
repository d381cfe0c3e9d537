#!/usr/bin/env bash
# `osprey --attach` benchmarks (docs/spec/profiler.md §(l.9), issue 15). Prints measured
# figures (`make bench` keeps them in bench/results/attach.txt):
#
#  1. Cost to the target: bench/attach_workload.c (2 busy threads, fixed work) run alone
#     (twice per round), with `osprey --attach` at 99 Hz and at 997 Hz, and under the
#     in-process profiler, in interleaved rounds (a shuffled order per round). The workload
#     times its own work (after a 300 ms pause in which osprey seizes it): wall time and the
#     process's CPU time. Per configuration: the median wall time, the ratio of medians to
#     the unattached median, and each round's ratio to the mean of that round's two
#     unattached runs (paired, so load that drifts between rounds cancels): their median
#     and quartiles; the same paired median for the target's CPU time; and osprey's own
#     account of its cost: the share of time it held a sampled thread stopped and the CPU
#     it used while sampling (% of one CPU). On a loaded machine the wall ratios carry the
#     load's noise, and more: each continue after a stop is a wake-up, which the scheduler
#     favours over the CPU-bound programs around it, so an attached target can finish sooner
#     than an unattached one (ratios below 1). Beside the wall verdict, a cost bound that
#     load does not move: the share of time a sampled thread was held stopped plus osprey's
#     CPU as a share of one CPU (all of it taken from the target, as on a machine where the
#     target's threads have every CPU).
#  2. Agreement: self% per function (attach_a / attach_b / attach_c, expected 50 / 33.3 /
#     16.7) of the attached profile at 997 Hz against an in-process profile of the same
#     program (`osprey --record`, preloaded runtime, 997 Hz), both from the .folded export
#     (on-CPU stacks of the worker threads), per round and over all rounds.
#
# Then one line per target, `target ...: ok` or `target ...: MISSED (...)`:
#   wall time attached at 99 Hz <= 1.05 x unattached; at 997 Hz <= 1.25 x (the median of
#   the paired round ratios); the cost bound at 99 Hz <= 5 %, at 997 Hz <= 25 % (medians);
#   |self% attached - self% in-process| <= 3 points for every function (pooled rounds).
# (The SIGKILL fault-injection target is a ctest: test/postprocess/e2e/attach.test.)
#
# Usage: bench/attach.sh          (after `make build`)
#   REPS=<n> rounds (default 9)   UNITS=<n> work units per thread (default: ~3 s of work)
#   BUILD=<d> build directory (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPS=${REPS:-9}
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

# run_one <mode> <round>: prints the workload's work_ns and cpu_ns
run_one() {
  local mode=$1 r=$2 out="$SCRATCH/$1-$2"
  case $mode in
    plain|plain2)
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
  echo "$(sed -n 's/^work_ns=//p' "$out.txt") $(sed -n 's/^cpu_ns=//p' "$out.txt")"
}

: > "$SCRATCH/times.txt"
for r in $(seq "$REPS"); do
  for mode in $(printf '%s\n' plain plain2 attach99 attach997 record | shuf); do
    echo "$r $mode $(run_one "$mode" "$r")" >> "$SCRATCH/times.txt"
  done
done

echo "load average after the runs: $(cut -d' ' -f1 /proc/loadavg)"

python3 - "$SCRATCH" "$REPS" <<'PY'
import os, statistics, sys
scratch, reps = sys.argv[1], int(sys.argv[2])
t, c = {}, {}
for line in open(os.path.join(scratch, "times.txt")):
    r, mode, ns, cpu = line.split()
    t[(int(r), mode)] = int(ns)
    c[(int(r), mode)] = int(cpu)
R = range(1, reps + 1)

def q(v):
    v = sorted(v)
    if len(v) < 2:
        return v[0], v[0]
    qs = statistics.quantiles(v, n=4, method="inclusive")
    return qs[0], qs[2]

def base(d, r):
    return (d[(r, "plain")] + d[(r, "plain2")]) / 2

plain = [t[(r, m)] for r in R for m in ("plain", "plain2")]
plain_cpu = [c[(r, m)] for r in R for m in ("plain", "plain2")]
print("\n1. cost to the target (its own work time; ratios to unattached)")
print("   %-20s %9s %8s %8s %14s %8s" % ("configuration", "median s", "ratio", "paired", "paired q1..q3", "cpu"))
print("   %-20s %9.3f %8s %8s %14s %8s   (cpu %.3f s)" % ("unattached", statistics.median(plain) / 1e9,
      "1.000", "1.000", "", "1.000", statistics.median(plain_cpu) / 1e9))
rr_all = [t[(r, "plain2")] / t[(r, "plain")] for r in R]
lo, hi = q(rr_all)
print("   %-20s %9s %8s %8.3f %6.3f..%.3f   (noise: one unattached run over the other)" % (
      "unattached, 2nd run", "", "", statistics.median(rr_all), lo, hi))
ratios = {}
for mode, label in (("attach99", "attach 99 Hz"), ("attach997", "attach 997 Hz"),
                    ("record", "in-process 997 Hz")):
    v = [t[(r, mode)] for r in R]
    rr = [t[(r, mode)] / base(t, r) for r in R]
    cr = [c[(r, mode)] / base(c, r) for r in R]
    ratio = statistics.median(v) / statistics.median(plain)
    paired = statistics.median(rr)
    lo, hi = q(rr)
    ratios[mode] = (paired, lo, hi, ratio)
    print("   %-20s %9.3f %8.3f %8.3f %6.3f..%.3f %8.3f" % (label, statistics.median(v) / 1e9, ratio,
          paired, lo, hi, statistics.median(cr)))

import re
print("\n   osprey's own account (median over rounds, min..max): time a sampled thread was held")
print("   stopped (stop seen -> continued), and the CPU osprey used while sampling")
bounds = {}
for mode, label in (("attach99", "attach 99 Hz"), ("attach997", "attach 997 Hz")):
    held, used = [], []
    for r in R:
        try:
            text = open(os.path.join(scratch, "%s-%d.report" % (mode, r))).read()
        except OSError:
            continue
        m = re.search(r"stopped ([0-9.]+)% of the time; sampling used ([0-9.]+)% of a CPU", text)
        if m:
            held.append(float(m.group(1)))
            used.append(float(m.group(2)))
    if held:
        bound = [h + u for h, u in zip(held, used)]
        bounds[mode] = (statistics.median(bound), min(bound), max(bound))
        print("   %-20s held stopped %.3f%% (%.3f..%.3f), CPU %.2f%% of one (%.2f..%.2f); bound %.2f%%" % (
              label, statistics.median(held), min(held), max(held),
              statistics.median(used), min(used), max(used), statistics.median(bound)))

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
for mode, name, limit in (("attach99", "attach 99 Hz wall <= 1.05", 1.05),
                          ("attach997", "attach 997 Hz wall <= 1.25", 1.25)):
    paired, lo, hi, ratio = ratios[mode]
    verdict(name, paired <= limit, "paired median %.3f, quartiles %.3f..%.3f; ratio of medians %.3f" % (
            paired, lo, hi, ratio))
for mode, name, limit in (("attach99", "attach 99 Hz cost bound <= 5%", 5.0),
                          ("attach997", "attach 997 Hz cost bound <= 25%", 25.0)):
    if mode not in bounds:
        verdict(name, False, "osprey reported no figures")
        continue
    med, lo, hi = bounds[mode]
    verdict(name, med <= limit, "median %.2f%%, rounds %.2f..%.2f%%" % (med, lo, hi))
verdict("attach self% within 3 points of in-process", worst <= 3.0, "worst %.1f points" % worst)
PY
