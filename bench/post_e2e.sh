#!/usr/bin/env bash
# What `osprey prog.osp --profile` adds to `osprey prog.osp --run`, split into compile,
# run and post-process (issue 4 benchmark). Program: test/postprocess/e2e/Inputs/fib.osp
# (fib(38) on main, fib(37) in a fiber), or the file given.
#
# Every step runs ROUNDS times (default 7), the steps of a round back to back in a
# shuffled order, so that changes in the machine's other load hit all of them alike;
# the figures are medians, with the CPU time (user + system, from wait4) next to the
# wall time. On a shared machine the CPU time is the steadier figure: this program is
# two busy threads on a 2-core machine, so any other load stretches its wall time
# (consecutive unprofiled runs took 0.28 to 0.96 s of wall time for 0.28 s of CPU here),
# which is why an earlier best-of-3, one-step-after-the-other version of this script
# reported a profiled run 38-56 % slower on a loaded machine.
# Usage: bench/post_e2e.sh [program.osp]     ROUNDS=<n>
set -euo pipefail
cd "$(dirname "$0")/.."
osprey=$PWD/build/bin/osprey
prog=$(realpath "${1:-test/postprocess/e2e/Inputs/fib.osp}")
if [ ! -x "$osprey" ] || ! "$osprey" --help | grep -q -- '--postprocess'; then
  echo "post_e2e: needs build/bin/osprey with --profile/--postprocess wired (skipped)"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$osprey" "$prog" --build -o plain
"$osprey" "$prog" --build --profile -o prof
env OSPREY_PROFILE="$tmp/raw.osprof.json" ./prof >/dev/null
python3 - "$osprey" "$prog" "$tmp" "${ROUNDS:-7}" <<'PY'
import os, random, statistics, subprocess, sys, time
osprey, prog, tmp, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
base = {k: v for k, v in os.environ.items() if not k.startswith("OSPREY_PROFILE")}
steps = {
    "compile --run":     ([osprey, prog, "--build", "-o", "plain"], {}),
    "compile --profile": ([osprey, prog, "--build", "--profile", "-o", "prof"], {}),
    "run plain":         (["./plain"], {}),
    "run profiled":      (["./prof"], {"OSPREY_PROFILE": os.path.join(tmp, "r.osprof.json")}),
    "post-process":      ([osprey, "--postprocess", "raw.osprof.json", "--binary", "./prof", "-o", "post"], {}),
    "--run":             ([osprey, prog, "--run"], {}),
    "--profile":         ([osprey, prog, "--profile"], {}),
}
res = {k: [] for k in steps}
for _ in range(rounds):
    order = list(steps)
    random.shuffle(order)
    for k in order:
        argv, extra = steps[k]
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, env=dict(base, **extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        res[k].append((time.perf_counter() - t0, ru.ru_utime + ru.ru_stime))
wall = {k: statistics.median(w for w, _ in v) for k, v in res.items()}
cpu = {k: statistics.median(c for _, c in v) for k, v in res.items()}
rng = {k: (min(w for w, _ in v), max(w for w, _ in v)) for k, v in res.items()}
def line(label, a, b):
    return (f"{label:<11} {a:<17} {wall[a]:6.3f} s ({cpu[a]:5.3f} CPU)   {b:<17} {wall[b]:6.3f} s ({cpu[b]:5.3f} CPU)"
            f"   wall {wall[b] / wall[a]:.2f}x, CPU {cpu[b] / cpu[a]:.2f}x")
print(f"program: {os.path.basename(prog)}; medians of {rounds} interleaved rounds, wall (CPU) seconds; "
      f"load average {open('/proc/loadavg').read().split()[0]}")
print(line("compile", "compile --run", "compile --profile"))
print(line("run", "run plain", "run profiled"))
print(f"  run wall ranges: plain {rng['run plain'][0]:.3f}..{rng['run plain'][1]:.3f} s, "
      f"profiled {rng['run profiled'][0]:.3f}..{rng['run profiled'][1]:.3f} s")
print(f"post-process raw -> 4 files + report {wall['post-process']:6.3f} s ({cpu['post-process']:5.3f} CPU)")
print(line("end to end", "--run", "--profile"))
PY
