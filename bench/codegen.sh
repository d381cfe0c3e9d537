#!/usr/bin/env bash
# Generated code vs C: run time of Osprey programs compiled by `osprey` (-O2) against
# equivalent C programs (same checked arithmetic) compiled with `clang-19 -O2`, in the
# same run. Prints each pair's best-of-N CPU times and the ratio osprey / C (aim <= 1.3).
# Usage: bench/codegen.sh [runs]   (default 7; needs build/bin/osprey: `make build`)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for b in fib fold; do
  build/bin/osprey "bench/codegen/$b.osp" -o "$work/$b-osprey"
  clang-19 -O2 -fno-omit-frame-pointer "bench/codegen/${b}_checked.c" -o "$work/$b-c"
done
python3 - "$work" "$runs" <<'PY'
import subprocess, sys, time
work, runs = sys.argv[1], int(sys.argv[2])
import os
def once(exe):
    # CPU time (user + sys) of the child from wait4: robust against other load on a
    # shared machine, and equal to wall time for these single-threaded programs.
    p = subprocess.Popen([exe], stdout=subprocess.PIPE)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit("%s failed with status %d" % (exe, status))
    return ru.ru_utime + ru.ru_stime, out
print("%-6s %12s %14s %8s" % ("bench", "osprey CPU s", "clang -O2 CPU s", "ratio"))
worst = 0.0
for b in ("fib", "fold"):
    best = {"osprey": float("inf"), "c": float("inf")}
    outs = {}
    for _ in range(runs):                      # interleaved, best of N
        for k in ("osprey", "c"):
            dt, out = once("%s/%s-%s" % (work, b, k))
            best[k] = min(best[k], dt)
            outs[k] = out
    if outs["osprey"] != outs["c"]:
        sys.exit("bench %s: outputs differ: %r vs %r" % (b, outs["osprey"], outs["c"]))
    ratio = best["osprey"] / best["c"]
    worst = max(worst, ratio)
    print("%-6s %12.3f %14.3f %8.2fx" % (b, best["osprey"], best["c"], ratio))
print("worst ratio %.2fx (target <= 1.30x)" % worst)
PY
