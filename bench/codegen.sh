#!/usr/bin/env bash
# Generated code vs C (issue 19): every bench/codegen/<name>.osp is built with `osprey -o`
# (-O2) and its twin bench/codegen/<name>.c with `clang-19 -O2`; both run interleaved
# RUNS times and the median CPU time (user + sys of the child, getrusage RUSAGE_CHILDREN) of each is kept.
# Prints each ratio osprey / C, their geometric mean, and one line per target:
#   geomean <= 1.30, no program above 2.50, compile time of the largest test program
#   <= 1.20x the baseline compiler's (OSPREY_BASELINE=<path to an older osprey>; without it
#   the compile time is printed but not judged).
# The two twins of a pair must print the same checksum (stdout): a mismatch fails the run.
# Programs whose C twin runs under 0.1 s (the empty program) are run several times per
# sample, the same number of times for both twins, and the figure is the CPU time per run.
# Usage: bench/codegen.sh [runs] [name...]   (default 5 runs, every program; needs `make build`)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
shift || true
osprey=${OSPREY:-build/bin/osprey}
[ -x "$osprey" ] || { echo "bench/codegen.sh: $osprey not built (make build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" "$runs" "$osprey" "${OSPREY_BASELINE:-}" "$@" <<'PY'
import glob, math, os, resource, statistics, subprocess, sys, time

work, runs, osprey, baseline = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
names = sys.argv[5:] or sorted(os.path.basename(p)[:-4] for p in glob.glob("bench/codegen/*.osp"))

def child_cpu(argv, reps=1):
    """Run argv reps times; CPU seconds (user+sys, this child and its own children) per run,
    wall seconds per run, and the last run's stdout."""
    cpu = 0.0
    t0 = time.perf_counter()
    out = b""
    for _ in range(reps):
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate()
        if p.returncode != 0:
            sys.exit("bench/codegen: %s exited with %d: %s" % (argv[0], p.returncode,
                     err.decode(errors="replace").strip()))
        cpu += ru_cpu()
    return cpu / reps, (time.perf_counter() - t0) / reps, out

# subprocess reaps the child itself, so take its CPU time from RUSAGE_CHILDREN deltas.
_last = [resource.getrusage(resource.RUSAGE_CHILDREN)]
def ru_cpu():
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    prev, _last[0] = _last[0], now
    return (now.ru_utime - prev.ru_utime) + (now.ru_stime - prev.ru_stime)

def build(name):
    exe_o, exe_c = "%s/%s-osprey" % (work, name), "%s/%s-c" % (work, name)
    for argv in ([osprey, "bench/codegen/%s.osp" % name, "-o", exe_o],
                 ["clang-19", "-O2", "bench/codegen/%s.c" % name, "-o", exe_c]):
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("bench/codegen: building %s failed:\n%s" % (" ".join(argv), r.stderr))
    ru_cpu()
    return exe_o, exe_c

try:
    load = os.getloadavg()[0]
except OSError:
    load = float("nan")
print("codegen: osprey -O2 vs clang-19 -O2, median CPU time of %d interleaved runs; "
      "%d programs; load average %.2f at start" % (runs, len(names), load))
print("%-14s %12s %12s %8s %5s" % ("program", "osprey CPU s", "clang CPU s", "ratio", "reps"))
ratios = {}
for name in names:
    exe_o, exe_c = build(name)
    t_c, _, out_c = child_cpu([exe_c])                     # calibration and checksum
    t_o, _, out_o = child_cpu([exe_o])
    if out_o != out_c:
        sys.exit("bench/codegen: %s: checksums differ: osprey printed %r, C printed %r"
                 % (name, out_o[:200], out_c[:200]))
    reps = 1 if t_c >= 0.1 else min(400, int(math.ceil(0.1 / max(t_c, 0.0005))))
    samples = {"o": [], "c": []}
    for _ in range(runs):                                  # interleaved
        for k, exe in (("o", exe_o), ("c", exe_c)):
            t, _, out = child_cpu([exe], reps)
            if out != out_c:
                sys.exit("bench/codegen: %s: output changed between runs" % name)
            samples[k].append(t)
    mo, mc = statistics.median(samples["o"]), statistics.median(samples["c"])
    ratios[name] = mo / mc if mc > 0 else float("inf")
    print("%-14s %12.4f %12.4f %7.2fx %5d" % (name, mo, mc, ratios[name], reps), flush=True)

geo = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
worst = max(ratios, key=ratios.get)
above = sorted(n for n, r in ratios.items() if r > 2.5)
print("geometric mean %.2fx over %d programs; worst %s %.2fx" % (geo, len(ratios), worst, ratios[worst]))
others = [r for n, r in ratios.items() if not n.startswith("map_")]
if len(others) < len(ratios) and others:
    # Informational: string-keyed maps wait for the runtime's hash array mapped trie.
    print("geometric mean without the map_* programs %.2fx over %d programs (not a target)"
          % (math.exp(sum(math.log(r) for r in others) / len(others)), len(others)))
print("target geometric mean <= 1.30x: %s (%.2fx)" % ("ok" if geo <= 1.30 else "MISSED", geo))
print("target no program above 2.50x: %s%s" % ("ok" if not above else "MISSED",
      "" if not above else " (" + ", ".join("%s %.2fx" % (n, ratios[n]) for n in above) + ")"))

# Compile time of the largest test program (by source size) that compiles.
progs = sorted(glob.glob("test/programs/*.osp"), key=os.path.getsize, reverse=True)
largest = next(p for p in progs if "compile-error:" not in open(p, encoding="utf-8",
               errors="replace").read())
def compile_times(compiler):
    cpu, wall, _ = child_cpu([compiler, largest, "-o", "%s/largest" % work])
    return cpu, wall
cur, base = [], []
for _ in range(runs):
    cur.append(compile_times(osprey))
    if baseline:
        base.append(compile_times(baseline))
c_cpu = statistics.median(c for c, _ in cur)
c_wall = statistics.median(w for _, w in cur)
print("compile %s (%d bytes): %.3f s CPU, %.3f s wall (median of %d, compiler and linker)"
      % (largest, os.path.getsize(largest), c_cpu, c_wall, runs))
if baseline:
    b_cpu = statistics.median(c for c, _ in base)
    print("  baseline %s: %.3f s CPU; ratio %.2fx" % (baseline, b_cpu, c_cpu / b_cpu))
    print("target compile time <= 1.20x baseline: %s (%.2fx)"
          % ("ok" if c_cpu <= 1.2 * b_cpu else "MISSED", c_cpu / b_cpu))
else:
    print("target compile time <= 1.20x baseline: not judged (set OSPREY_BASELINE=<older osprey>)")
PY
