#!/usr/bin/env bash
# `osprey --diff` speed (issue 14 target: two 100k-sample profiles in <= 1 s wall): two synthetic
# raw profiles of 100,000 samples each (different seeds, 5,000 stacks, 8 threads) against a
# real executable (build/bin/ospprof-cli, symbolized by LLVM from its DWARF), compared from
# the raw files (both symbolized) and from their .folded files. Random stacks share almost no
# prefix and every address is new, so this is the worst case for the merge and the
# symbolizer: 71,474 distinct stacks, 1.6 M frames, a 113 MB .diff.folded.
# Beside it, a realistic case (not the target's input; reported for comparison): the same
# sizes with POST_GEN_SHAPE=tree (bench/post_gen.py): one program's call tree run twice, stacks
# sharing prefixes and addresses, samples on a few hot stacks, one stack in 20 changed.
# Each case runs 5 times; prints the best and the median wall time and the best CPU time
# (user + sys, all threads), with one verdict line per case on the best wall time against
# the 1 s target, and, as a peer in the same run, `osprey --postprocess` of one of the raw
# files. Wall times stretch with the machine's load (printed); CPU times do not.
# `make bench` keeps the output in bench/results/post_diff.txt.
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
POST_GEN_SHAPE=tree POST_GEN_SEED=42 python3 bench/post_gen.py "$PWD/$cli" "$tmp/tbase.json" "$n" "$s" "$t"
POST_GEN_SHAPE=tree POST_GEN_SEED=7 python3 bench/post_gen.py "$PWD/$cli" "$tmp/tnew.json" "$n" "$s" "$t"
for f in base new tbase tnew; do
  "$osprey" --postprocess "$tmp/$f.json" -o "$tmp/$f" 2> /dev/null
done
python3 - "$osprey" "$tmp" "$n" "$s" "$t" <<'PY'
import os, resource, subprocess, sys, time
osprey, tmp, n, s, t = sys.argv[1:]
def measure(argv, runs=5):
    """(best wall, median wall, best CPU = user + sys of all threads) over `runs` runs"""
    walls, cpus = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    walls.sort()
    return walls[0], walls[len(walls) // 2], min(cpus)
load0 = os.getloadavg()[0]
raw = measure([osprey, "--diff", f"{tmp}/base.json", f"{tmp}/new.json", "-o", f"{tmp}/d1"])
fold = measure([osprey, "--diff", f"{tmp}/base.folded", f"{tmp}/new.folded", "-o", f"{tmp}/d2"])
traw = measure([osprey, "--diff", f"{tmp}/tbase.json", f"{tmp}/tnew.json", "-o", f"{tmp}/t1"])
tfold = measure([osprey, "--diff", f"{tmp}/tbase.folded", f"{tmp}/tnew.folded", "-o", f"{tmp}/t2"])
peer = measure([osprey, "--postprocess", f"{tmp}/base.json", "-o", f"{tmp}/p"])
load1 = os.getloadavg()[0]
lines = sum(1 for _ in open(f"{tmp}/d1.diff.folded"))
size = os.path.getsize(f"{tmp}/d1.diff.folded") / 1e6
same = open(f"{tmp}/d1.diff.folded", "rb").read() == open(f"{tmp}/d2.diff.folded", "rb").read()
print(f"load average: {load0:.1f} before, {load1:.1f} after, on {os.cpu_count()} CPUs "
      f"(wall times stretch under load; CPU times do not)")
print(f"two raw profiles: {int(n):,} samples each, {int(s):,} stacks, {t} threads; "
      f"{lines:,} stacks in the diff ({size:.0f} MB .diff.folded; raw and folded inputs give "
      f"{'the same' if same else 'DIFFERENT'} file)")
for name, m in (("raw raw (both symbolized)", raw), ("folded folded", fold)):
    print(f"osprey --diff {name}: wall best {m[0]:.3f} s, median {m[1]:.3f} s; CPU {m[2]:.3f} s")
tlines = sum(1 for _ in open(f"{tmp}/t1.diff.folded"))
tsize = os.path.getsize(f"{tmp}/t1.diff.folded") / 1e6
print(f"realistic case (call-tree stacks, Zipf samples): {tlines:,} stacks in the diff "
      f"({tsize:.0f} MB .diff.folded)")
for name, m in (("raw raw", traw), ("folded folded", tfold)):
    print(f"  osprey --diff {name}: wall best {m[0]:.3f} s, median {m[1]:.3f} s; CPU {m[2]:.3f} s")
print(f"peer: osprey --postprocess of one raw file (5 exports + report): wall best {peer[0]:.3f} s, "
      f"CPU {peer[2]:.3f} s (diff of two / postprocess of one, CPU: {raw[2] / peer[2]:.2f}x)")
for name, m in (("raw raw", raw), ("folded folded", fold)):
    print(f"target: --diff {name} of two {int(n) // 1000}k-sample profiles <= 1 s wall "
          f"(best of 5): {m[0]:.3f} s: {'ok' if m[0] <= 1 else 'MISSED'}")
PY
