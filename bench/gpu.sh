#!/usr/bin/env bash
# GPU built-ins on the host (issue 18, docs/spec/language.md §9.9): gpuMap then gpuFold over
# 10M elements against a plain list fold doing the same work (bench/gpu/*.osp: the same
# 10M-int List, the same kernel — KERNEL_ROUNDS rounds of `(a * 31 + k) % 1000003` — summed).
# Every program is built once with `osprey -o` (-O2); then, interleaved RUNS times:
#   base          builds the List only (its time is subtracted from the other two)
#   list_fold     fold(range(0, n), 0, fn(acc, i) => acc + kernel(xs[i]))
#   gpu 1 thread  toGpu(xs) |> gpuMap(kernel) |> gpuFold(+), OSPREY_GPU_THREADS=1 (sequential)
#   gpu           the same with the runtime's worker threads (one per online CPU)
# and the median wall and CPU time (user + sys) of each is kept. Prints the work's wall time
# (median minus base's median) of each, the ratio list_fold / gpu (wall: the target, the GPU
# path must be faster, ratio >= 1.0 -> ok, else MISSED), list_fold / gpu-1-thread (what the
# dense buffer alone gives) and the load average before and after: on a loaded machine the
# workers get no spare core and the parallel figure shows it. All three must print the same
# checksum. Usage: bench/gpu.sh [runs] [kernel rounds]   (default 5 runs, 32 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
rounds=${2:-32}
osprey=${OSPREY:-build/bin/osprey}
[ -x "$osprey" ] || { echo "bench/gpu.sh: $osprey not built (make build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for p in base list_fold gpu_map_fold; do
  sed "s/KERNEL_ROUNDS/$rounds/" "bench/gpu/$p.osp" > "$work/$p.osp"
  "$osprey" "$work/$p.osp" -o "$work/$p"
done
python3 - "$work" "$runs" "$rounds" <<'PY'
import os, resource, statistics, subprocess, sys, time

work, runs, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
variants = [("base", "base", None), ("list_fold", "list_fold", None),
            ("gpu 1 thread", "gpu_map_fold", "1"), ("gpu", "gpu_map_fold", None)]

def run(exe, threads):
    env = dict(os.environ)
    env.pop("OSPREY_GPU_THREADS", None)
    if threads:
        env["OSPREY_GPU_THREADS"] = threads
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([os.path.join(work, exe)], capture_output=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("bench/gpu: %s exited with %d: %s" % (exe, p.returncode, p.stderr.decode()))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stdout

load0 = os.getloadavg()
print("gpu: gpuMap + gpuFold vs a plain list fold over 10M elements, kernel of %d rounds; "
      "median of %d interleaved runs; %d online CPUs; load average %.2f %.2f %.2f at start"
      % (rounds, runs, os.cpu_count() or 0, *load0))
samples = {name: ([], []) for name, _, _ in variants}
checksum = None
for _ in range(runs):
    for name, exe, threads in variants:
        wall, cpu, out = run(exe, threads)
        if name != "base":
            if checksum is None:
                checksum = out
            elif out != checksum:
                sys.exit("bench/gpu: %s printed %r, expected %r" % (name, out, checksum))
        samples[name][0].append(wall)
        samples[name][1].append(cpu)
med = {name: (statistics.median(w), statistics.median(c)) for name, (w, c) in samples.items()}
base_w, base_c = med["base"]
print("%-14s %10s %10s %12s %12s" % ("variant", "wall s", "CPU s", "work wall s", "work CPU s"))
work_w = {}
for name, _, _ in variants:
    w, c = med[name]
    work_w[name] = max(w - base_w, 1e-6)
    print("%-14s %10.3f %10.3f %12.3f %12.3f" % (name, w, c, w - base_w, c - base_c))
ratio = work_w["list_fold"] / work_w["gpu"]
ratio1 = work_w["list_fold"] / work_w["gpu 1 thread"]
speedup = work_w["gpu 1 thread"] / work_w["gpu"]
load1 = os.getloadavg()
print("ratio list_fold / gpu (wall, work only): %.2f   list_fold / gpu 1 thread: %.2f   "
      "gpu 1 thread / gpu: %.2f" % (ratio, ratio1, speedup))
print("load average %.2f %.2f %.2f at end" % load1)
print("gpu.map_fold_ratio %.2f (target >= 1.00): %s" % (ratio, "ok" if ratio >= 1.0 else "MISSED"))
PY
