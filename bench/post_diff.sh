#!/usr/bin/env bash
# `osprey --diff` speed (issue 14 target: two 100k-sample profiles in <= 1 s): two synthetic
# raw profiles of 100,000 samples each (different seeds, 5,000 stacks, 8 threads) against a
# real executable (build/bin/ospprof-cli, symbolized by LLVM from its DWARF), compared from
# the raw files (both symbolized) and from their .folded files. Prints the wall times and, as a
# peer in the same run, `osprey --postprocess` of one of the two raw files.
# Usage: bench/post_diff.sh [samples] [stacks] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
osprey=build/bin/osprey cli=build/bin/ospprof-cli
[ -x "$osprey" ] && [ -x "$cli" ] || { echo "build first (make build)"; exit 1; }
n=${1:-100000} s=${2:-5000} t=${3:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
POST_GEN_SEED=42 python3 bench/post_gen.py "$PWD/$cli" "$tmp/base.json" "$n" "$s" "$t"
POST_GEN_SEED=7 python3 bench/post_gen.py "$PWD/$cli" "$tmp/new.json" "$n" "$s" "$t"
"$osprey" --postprocess "$tmp/base.json" -o "$tmp/base" 2> /dev/null
"$osprey" --postprocess "$tmp/new.json" -o "$tmp/new" 2> /dev/null
python3 - "$osprey" "$tmp" "$n" "$s" "$t" <<'PY'
import os, resource, subprocess, sys, time
osprey, tmp, n, s, t = sys.argv[1:]
def best(argv, runs=3):
    """best wall time and best CPU time (user + sys) of `runs`"""
    b = c = None
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dt = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        b = dt if b is None else min(b, dt)
        c = cpu if c is None else min(c, cpu)
    return b, c
raw = best([osprey, "--diff", f"{tmp}/base.json", f"{tmp}/new.json", "-o", f"{tmp}/d1"])
fold = best([osprey, "--diff", f"{tmp}/base.folded", f"{tmp}/new.folded", "-o", f"{tmp}/d2"])
peer = best([osprey, "--postprocess", f"{tmp}/base.json", "-o", f"{tmp}/p"])
lines = sum(1 for _ in open(f"{tmp}/d1.diff.folded"))
print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times stretch under load; CPU times do not)")
print(f"two raw profiles: {int(n):,} samples each, {int(s):,} stacks, {t} threads; "
      f"{lines:,} stacks in the diff")
print(f"osprey --diff raw raw (both symbolized): wall {raw[0]:.3f} s, CPU {raw[1]:.3f} s"
      f"  [target <= 1 s: {'ok' if min(raw) <= 1 else 'MISSED'}]")
print(f"osprey --diff folded folded: wall {fold[0]:.3f} s, CPU {fold[1]:.3f} s"
      f"  [target <= 1 s: {'ok' if min(fold) <= 1 else 'MISSED'}]")
print(f"peer: osprey --postprocess of one raw file (5 exports + report): wall {peer[0]:.3f} s, "
      f"CPU {peer[1]:.3f} s (diff of two / postprocess of one, CPU: {raw[1] / peer[1]:.2f}x)")
PY
