#!/usr/bin/env bash
# Profiler runtime benchmarks (runtime/prof). Prints measured figures (`make bench` keeps
# them in bench/results/prof_overhead.txt).
#
#  1. Overhead, in-process A/B (bench/prof_ab.c): one process alternates short windows
#     of the same CPU-bound work (fib with frame pointers) unprofiled, at 997 Hz and at
#     10 kHz, and with bare tgkill() SIGPROFs to an empty handler at the same rates (the
#     floor of a sampler that directs signals to threads), shuffled per round; medians
#     of wall time and of the working threads' own CPU time per unit of work, as ratios
#     to unprofiled, with the quartiles of the rounds' wall ratios. It measures the cost
#     inside the profiled threads only: session start/stop and the file write are
#     outside the windows, the CPU figure leaves out the sampler thread, and with one
#     working thread the sampler runs on the free core. One thread, then two.
#  2. Overhead, whole processes (bench/prof_workload.c): the same work as separate runs
#     unprofiled, at 997 Hz, at 10 kHz, and under `perf record -F 997 --call-graph fp`,
#     in interleaved rounds (a shuffled order per round). Medians as ratios to the
#     unprofiled median of the same run, with the quartiles of each round's ratio to the
#     unprofiled run of that round:
#       wall  the workload's own wall time (start of work to end of work);
#       cpu   CPU time of the whole process (user + sys, sampler thread included; for
#             perf, perf's own process too; clock-tick resolution).
#  3. Rate fidelity: on-CPU samples per CPU-second of each busy thread, against the
#     requested rate, at 997 Hz and 10 kHz.
#  4. Accuracy with more threads than cores (docs/spec/profiler.md (k) 7): 8 equally busy threads
#     at 997 Hz; the on-CPU weight of each against the CPU time it measured itself, and
#     each thread's share of the total (ideal 1/8).
#  5. Inactive hooks: ns per hook pair with OSPREY_PROFILE unset, against empty calls.
#
# Then one line per target and configuration, `target ...: ok` or `target ...: MISSED (...)`:
#   wall-time overhead <= 1.01 at 997 Hz (issue 3; docs/spec/profiler.md (k) 18 requires < 1.05), for
#     the A/B and the whole-process runs, 1 and 2 threads, perf's figure beside ours; a
#     miss is "beyond noise" when the lower quartile of the rounds' ratios is above 1.01;
#   rate within +-3 % at 997 Hz and 10 kHz, 1 and 2 threads (the worst thread).
#
# Usage: bench/prof_overhead.sh            (after `make build`)
#   REPS=<n>   rounds (default 5)      SECONDS_PER_RUN=<s>  CPU per thread (default 0.6)
# (bench/accuracy.sh measures whole-process overhead again, on more workloads and against
# gperftools too; the defaults here are kept short so that `make bench` stays quick.)
#   BUILD=<d>  build directory (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPS=${REPS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-0.6}
LIB="$BUILD/lib/libosprey_rt.a"
[ -f "$LIB" ] || { echo "prof_overhead: $LIB missing; run make build first" >&2; exit 1; }
BIN="$BUILD/bench"
mkdir -p "$BIN"
CFLAGS=(-O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Iruntime/prof)
LIBS=("$LIB" -lgc -lm -lpthread)
clang-19 "${CFLAGS[@]}" bench/prof_workload.c "${LIBS[@]}" -o "$BIN/prof_workload"
clang-19 "${CFLAGS[@]}" bench/prof_hooks.c "${LIBS[@]}" -o "$BIN/prof_hooks"
clang-19 "${CFLAGS[@]}" bench/prof_ab.c "${LIBS[@]}" -o "$BIN/prof_ab"
AB_ROUNDS=${AB_ROUNDS:-31}
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
echo "prof_overhead: in-process A/B, $AB_ROUNDS shuffled rounds of ~0.15 s windows, load average $(cut -d' ' -f1 /proc/loadavg)"
echo "  (the cost inside the profiled threads only: session start/stop and the file write are outside"
echo "  the windows, the thread CPU figure leaves out the sampler thread, and with one thread the"
echo "  sampler runs on the free core; the whole-process runs below include all of it)"
for n in 1 2; do
  echo " $n thread(s):"
  "$BIN/prof_ab" "$n" "$AB_ROUNDS" 1200 "$SCRATCH" | tee "$SCRATCH/ab$n.txt"
done

PERF_OK=1
if ! command -v perf >/dev/null 2>&1 || ! perf record -q -F 997 --call-graph fp -o /dev/null -- true >/dev/null 2>&1; then
  PERF_OK=0
fi

echo
"$BIN/prof_hooks" 50000000

python3 - "$BIN" "$REPS" "$SECONDS_PER_RUN" "$PERF_OK" "$SCRATCH" <<'PY'
import json, os, random, re, statistics, subprocess, sys, tempfile, time

bin_dir, reps, secs, perf_ok = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
ab_dir = sys.argv[5]
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

def quartiles(v):
    """Lower and upper quartile (statistics.quantiles, n=4, method='inclusive')."""
    if len(v) < 2:
        return v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]

TARGET_OV, TARGET_RATE = 1.01, 0.03
verdicts = []  # (line, ok)
overhead = {}  # (threads, mode) -> (median ratio, q1, q3)
for threads in (1, 2):
    res = results[threads]
    base_w = statistics.median(r["wall"] for r in res[None])
    base_c = statistics.median(r["pcpu"] for r in res[None])
    print(f"\n{threads} thread{'s' if threads > 1 else ''}: median wall {base_w:.3f} s, "
          f"median process CPU {base_c:.3f} s unprofiled")
    print(f"  {'mode':<16} {'wall':>7} {'ratio':>6} {'(rounds q1..q3)':>16} {'cpu':>7} {'ratio':>6}")
    for m in modes:
        # Each round's ratio to the unprofiled run of the same round (runs of a round go
        # back to back): their quartiles show the noise of the median ratio.
        q1, q3 = quartiles([r["wall"] / b["wall"] for r, b in zip(res[m], res[None])])
        w = statistics.median(r["wall"] for r in res[m])
        c = statistics.median(r["pcpu"] for r in res[m])
        overhead[threads, m] = (w / base_w, q1, q3)
        print(f"  {name[m]:<16} {w:7.3f} {w / base_w:6.3f} {q1:7.3f}..{q3:6.3f} "
              f"{c:7.3f} {c / base_c:6.3f}")
    for m in (997, 10000):
        per_thread = list(zip(*[r["rate"] for r in res[m]]))
        meds = [statistics.median(x) for x in per_thread]
        late = statistics.median(r["late"] for r in res[m])
        drops = sum(r["dropped"] for r in res[m])
        desc = ", ".join(f"thread {i}: {v:.0f}/s ({v / m:.3f}, {100 * (v / m - 1):+.1f}%)" for i, v in enumerate(meds))
        print(f"  rate {name[m]}: on-CPU samples per CPU-second, median: {desc}; "
              f"late ticks {100 * late:.1f}%, dropped {drops} in {reps} runs")
        worst = max(meds, key=lambda v: abs(v / m - 1))
        dev = worst / m - 1
        verdicts.append((f"rate within +-3 % at {name[m]}, {threads} thread{'s' if threads > 1 else ''} "
                         f"(worst thread)", abs(dev) <= TARGET_RATE, f"{worst:.0f}/s, {100 * dev:+.1f} %"))

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

# Verdicts. Overhead: wall time at 997 Hz over unprofiled, for each configuration; a miss
# is beyond noise when even the lower quartile of the rounds' ratios is above the target.
def ab_rows(path):
    rows = {}
    for line in open(path):
        m = re.match(r"\s+(\S+(?: \S+)?)\s+wall/unit\s+\S+ us\s+ratio (\S+) \(rounds (\S+)\.\.(\S+)\)"
                     r"\s+thread CPU/unit\s+\S+ us\s+ratio (\S+)", line)
        if m:
            rows[m.group(1)] = tuple(float(m.group(i)) for i in range(2, 6))
    return rows

ov_lines = []
for threads in (1, 2):
    ab = ab_rows(os.path.join(ab_dir, f"ab{threads}.txt"))
    t = f"{threads} thread{'s' if threads > 1 else ''}"
    if "997 Hz" in ab:
        w, q1, q3, c = ab["997 Hz"]
        bw, _, _, bc = ab.get("bare 997", (float("nan"),) * 4)
        ov_lines.append((f"overhead <= {TARGET_OV:.3f} at 997 Hz, in-process A/B, {t}", w, q1, q3,
                         f"thread CPU {c:.3f}; bare tgkill 997 Hz: wall {bw:.3f}, thread CPU {bc:.3f}"))
    w, q1, q3 = overhead[threads, 997]
    peer = ""
    if perf_ok:
        pw, pq1, pq3 = overhead[threads, "perf"]
        peer = f"perf -F 997: {pw:.3f} (rounds {pq1:.3f}..{pq3:.3f})"
    ov_lines.append((f"overhead <= {TARGET_OV:.3f} at 997 Hz, whole process, {t}", w, q1, q3, peer))

print("\ntargets (issue 3: wall-time overhead at most 1.01 at 997 Hz; rate within +-3 % at 997 Hz and 10 kHz;")
print("  docs/spec/profiler.md (k) 18 only requires < 1.05).")
print("  An overhead miss is 'beyond noise' when even the lower quartile of the rounds' ratios is above")
print("  the target, 'within noise' otherwise. With two busy threads on two cores the sampler thread's")
print("  own CPU competes with the program; that is part of the real cost and is counted.")
for what, w, q1, q3, extra in ov_lines:
    extra = f"; {extra}" if extra else ""
    if w <= TARGET_OV:
        print(f"target {what}: ok ({w:.3f}, rounds {q1:.3f}..{q3:.3f}{extra})")
    else:
        noise = "beyond noise" if q1 > TARGET_OV else "within noise"
        print(f"target {what}: MISSED ({w:.3f}, rounds {q1:.3f}..{q3:.3f}, {noise}{extra})")
for what, ok, fig in verdicts:
    print(f"target {what}: {'ok' if ok else 'MISSED'} ({fig})")

print(f"\nload average {loadavg()} at end; {time.time() - t_start:.0f} s")
PY
