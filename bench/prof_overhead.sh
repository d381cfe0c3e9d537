#!/usr/bin/env bash
# Profiler runtime benchmarks (runtime/prof). Prints measured figures and writes them to
# bench/results/prof_overhead.txt.
#
#  1. Overhead, in-process A/B (bench/prof_ab.c): one process alternates short windows
#     of the same CPU-bound work (fib with frame pointers) unprofiled, at 997 Hz and at
#     10 kHz, shuffled per round; medians of wall time and of the working threads' own
#     CPU time per unit of work, as ratios to unprofiled. The most precise figure on a
#     machine whose load drifts. One thread, then two.
#  2. Overhead, whole processes (bench/prof_workload.c): the same work as separate runs
#     unprofiled, at 997 Hz, at 10 kHz, and under `perf record -F 997 --call-graph fp`,
#     in interleaved rounds (a shuffled order per round). Medians as ratios to the
#     unprofiled median of the same run:
#       wall  the workload's own wall time (start of work to end of work);
#       cpu   CPU time of the whole process (user + sys, sampler thread included; for
#             perf, perf's own process too; clock-tick resolution).
#     Target: <= 1.01 at 997 Hz (PROFILER.md (k) 18 requires < 1.05).
#  3. Rate fidelity: on-CPU samples per CPU-second of each busy thread, against the
#     requested rate, at 997 Hz and 10 kHz. Target: within +-3 %.
#  4. Accuracy with more threads than cores (PROFILER.md (k) 7): 8 equally busy threads
#     at 997 Hz; the on-CPU weight of each against the CPU time it measured itself, and
#     each thread's share of the total (ideal 1/8).
#  5. Inactive hooks: ns per hook pair with OSPREY_PROFILE unset, against empty calls.
#
# Usage: bench/prof_overhead.sh            (after `make build`)
#   REPS=<n>   rounds (default 7)      SECONDS_PER_RUN=<s>  CPU per thread (default 1.0)
#   BUILD=<d>  build directory (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPS=${REPS:-7}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-1.0}
LIB="$BUILD/lib/libosprey_rt.a"
[ -f "$LIB" ] || { echo "prof_overhead: $LIB missing; run make build first" >&2; exit 1; }
BIN="$BUILD/bench"
mkdir -p "$BIN" bench/results
CFLAGS=(-O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Iruntime/prof)
LIBS=("$LIB" -lgc -lm -lpthread)
clang-19 "${CFLAGS[@]}" bench/prof_workload.c "${LIBS[@]}" -o "$BIN/prof_workload"
clang-19 "${CFLAGS[@]}" bench/prof_hooks.c "${LIBS[@]}" -o "$BIN/prof_hooks"
clang-19 "${CFLAGS[@]}" bench/prof_ab.c "${LIBS[@]}" -o "$BIN/prof_ab"
AB_ROUNDS=${AB_ROUNDS:-31}
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
{
  echo "prof_overhead: in-process A/B, $AB_ROUNDS shuffled rounds of ~0.15 s windows, load average $(cut -d' ' -f1 /proc/loadavg)"
  for n in 1 2; do
    echo " $n thread(s):"
    "$BIN/prof_ab" "$n" "$AB_ROUNDS" 1200 "$SCRATCH"
  done
} | tee bench/results/prof_overhead.txt

PERF_OK=1
if ! command -v perf >/dev/null 2>&1 || ! perf record -q -F 997 --call-graph fp -o /dev/null -- true >/dev/null 2>&1; then
  PERF_OK=0
fi

python3 - "$BIN" "$REPS" "$SECONDS_PER_RUN" "$PERF_OK" <<'PY' | tee -a bench/results/prof_overhead.txt
import json, os, random, statistics, subprocess, sys, tempfile, time

bin_dir, reps, secs, perf_ok = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
wl = os.path.join(bin_dir, "prof_workload")
scratch = tempfile.mkdtemp(prefix="osprey-prof-bench-")
base_env = {k: v for k, v in os.environ.items() if not k.startswith("OSPREY_PROFILE")}

def run(threads, units, mode):
    env = dict(base_env)
    raw = os.path.join(scratch, "raw.json")
    if os.path.exists(raw):
        os.unlink(raw)
    argv = [wl, str(threads), str(units)]
    if mode in (997, 10000):
        env["OSPREY_PROFILE"] = raw
        env["OSPREY_PROFILE_HZ"] = str(mode)
    elif mode == "perf":
        argv = ["perf", "record", "-q", "-F", "997", "--call-graph", "fp",
                "-o", os.path.join(scratch, "perf.data"), "--"] + argv
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"workload failed ({mode}): {err.decode()}")
    fields = dict(kv.split("=", 1) for kv in out.decode().split())
    res = {"wall": float(fields["wall_s"]),
           "tcpu": [float(x) for x in fields["cpu_s"].split(",")],
           "tid": [int(x) for x in fields["tid"].split(",")]}
    if mode in (997, 10000):
        with open(raw) as f:
            d = json.load(f)
        rows = {t["tid"]: i for i, t in enumerate(d["threads"])}
        on = {}
        for s in d["samples"]:
            if s[3] == 0:
                on[s[1]] = on.get(s[1], 0) + 1
        res["rate"] = [on.get(rows.get(tid, -1), 0) / c for tid, c in zip(res["tid"], res["tcpu"])]
        res["late"] = d["late_ticks"] / max(1, d["ticks"])
        res["dropped"] = d["dropped"]
        wsum = {}
        for s, w in zip(d["samples"], d["sample_weights_ns"]):
            if s[3] == 0:
                wsum[s[1]] = wsum.get(s[1], 0) + w
        res["weight"] = [wsum.get(rows.get(tid, -1), 0) / 1e9 for tid in res["tid"]]
    return res

def run_timed(threads, units, mode):
    # Process CPU (user+sys of the child and its children) from getrusage deltas.
    before = os.times()
    r = run(threads, units, mode)
    after = os.times()
    r["pcpu"] = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return r

# Calibrate: units for about `secs` of CPU per thread.
probe = run(1, 200, None)
units = max(200, int(200 * secs / max(1e-3, probe["tcpu"][0])))

def loadavg():
    return open("/proc/loadavg").read().split()[0]

print(f"\nprof_overhead: whole processes, {os.cpu_count()} CPUs, load average {loadavg()} at start, "
      f"{reps} interleaved rounds, {units} units (~{secs:.1f} s CPU) per thread")
modes = [None, 997, 10000] + (["perf"] if perf_ok else [])
name = {None: "unprofiled", 997: "997 Hz", 10000: "10 kHz", "perf": "perf -F 997 fp"}
results = {}
t_start = time.time()
for threads in (1, 2):
    res = {m: [] for m in modes}
    for _ in range(reps):
        order = modes[:]
        random.shuffle(order)
        for m in order:
            res[m].append(run_timed(threads, units, m))
    results[threads] = res

for threads in (1, 2):
    res = results[threads]
    base_w = statistics.median(r["wall"] for r in res[None])
    base_c = statistics.median(r["pcpu"] for r in res[None])
    print(f"\n{threads} thread{'s' if threads > 1 else ''}: median wall {base_w:.3f} s, "
          f"median process CPU {base_c:.3f} s unprofiled")
    print(f"  {'mode':<16} {'wall':>7} {'ratio':>6} {'(min..max)':>14} {'cpu':>7} {'ratio':>6}")
    for m in modes:
        ws = [r["wall"] / base_w for r in res[m]]
        w = statistics.median(r["wall"] for r in res[m])
        c = statistics.median(r["pcpu"] for r in res[m])
        print(f"  {name[m]:<16} {w:7.3f} {w / base_w:6.3f} {min(ws):6.3f}..{max(ws):6.3f} "
              f"{c:7.3f} {c / base_c:6.3f}")
    for m in (997, 10000):
        per_thread = list(zip(*[r["rate"] for r in res[m]]))
        meds = [statistics.median(x) for x in per_thread]
        late = statistics.median(r["late"] for r in res[m])
        drops = sum(r["dropped"] for r in res[m])
        desc = ", ".join(f"thread {i}: {v:.0f}/s ({v / m:.3f}, {100 * (v / m - 1):+.1f}%)" for i, v in enumerate(meds))
        print(f"  rate {name[m]}: on-CPU samples per CPU-second, median: {desc}; "
              f"late ticks {100 * late:.1f}%, dropped {drops} in {reps} runs")

# More runnable threads than cores.
n8 = 8
acc = run(n8, max(1, units // 4), 997)
tot_w, tot_c = sum(acc["weight"]), sum(acc["tcpu"])
shares = [w / tot_w for w in acc["weight"]]
ratios = [w / c for w, c in zip(acc["weight"], acc["tcpu"])]
print(f"\n{n8} busy threads on {os.cpu_count()} CPUs at 997 Hz: on-CPU weight {tot_w:.3f} s vs "
      f"{tot_c:.3f} s measured CPU ({tot_w / tot_c:.4f}); per thread weight/CPU "
      f"{min(ratios):.4f}..{max(ratios):.4f}; share of total {min(shares):.3f}..{max(shares):.3f} "
      f"(1/{n8} = {1 / n8:.3f}; CPU shares {min(acc['tcpu']) / tot_c:.3f}..{max(acc['tcpu']) / tot_c:.3f})")

print(f"\nload average {loadavg()} at end; {time.time() - t_start:.0f} s")
PY
"$BIN/prof_hooks" 50000000 | tee -a bench/results/prof_overhead.txt
