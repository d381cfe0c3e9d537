#!/usr/bin/env bash
# Post-processing throughput (issue 4 benchmark): a synthetic raw profile of 1,000,000
# samples over 10,000 distinct stacks on 8 threads, against a real executable
# (build/bin/ospprof-cli, symbolized by LLVM from its DWARF), from raw file to all five
# exports (the SVG flame graph included) and the terminal report. Prints wall time and peak RSS (target: <= 2 s,
# <= 200 MB) and, as a peer in the same run, Python's json.load of the same file.
# Usage: bench/post_throughput.sh [samples] [stacks] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/bin/ospprof-cli
[ -x "$cli" ] || { echo "build first (make build)"; exit 1; }
n=${1:-1000000} s=${2:-10000} t=${3:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 bench/post_gen.py "$PWD/$cli" "$tmp/raw.json" "$n" "$s" "$t"
size=$(stat -c %s "$tmp/raw.json")
python3 - "$cli" "$tmp" "$n" "$s" "$t" "$size" <<'PY'
import os, resource, subprocess, sys, time
cli, tmp, n, s, t, size = sys.argv[1:]
def run(argv, runs=3):
    """best wall time of `runs` and the peak RSS (MB) of the command itself"""
    best, rss = None, 0
    for _ in range(runs):
        r = subprocess.run(["python3", "-c", """
import resource, subprocess, sys, time
t0 = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
dt = time.perf_counter() - t0
print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""] + argv, capture_output=True, text=True, check=True)
        dt, kb = r.stdout.split()
        best = float(dt) if best is None else min(best, float(dt))
        rss = max(rss, int(kb) / 1024)
    return best, rss
ours, ours_rss = run([cli, f"{tmp}/raw.json", "-o", f"{tmp}/out", "--program", "bench.osp"])
peer, peer_rss = run(["python3", "-c", "import json,sys; json.load(open(sys.argv[1]))", f"{tmp}/raw.json"])
print(f"raw profile: {int(n):,} samples, {int(s):,} stacks, {t} threads, {int(size)/1e6:.1f} MB")
print(f"ospprof (raw -> 5 exports + report): {ours:.2f} s, peak RSS {ours_rss:.0f} MB"
      f"  [target <= 2 s, <= 200 MB: {'ok' if ours <= 2 and ours_rss <= 200 else 'MISSED'}]")
print(f"peer: python3 json.load of the same file: {peer:.2f} s, peak RSS {peer_rss:.0f} MB")
print(f"ratio ospprof / json.load: time {ours/peer:.2f}x, memory {ours_rss/peer_rss:.2f}x")
for ext in ("speedscope.json", "cpuprofile", "folded", "profile.json", "svg"):
    print(f"  out.{ext}: {os.path.getsize(f'{tmp}/out.{ext}')/1e6:.1f} MB")
PY
