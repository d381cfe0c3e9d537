#!/usr/bin/env python3
"""Generate a synthetic raw profile (docs/spec/profiler.md §(e)) against a real executable.

usage: post_gen.py <exe> <out.json> [samples] [stacks] [threads]

Stacks are built from the executable's real function symbols (nm), each address at a
random offset inside its function, as if the executable had been loaded PIE at the usual
Linux x86-64 bias; so the post-processor really symbolizes them with LLVM against the
file's DWARF and symbol table. Deterministic (seed 42, or POST_GEN_SEED)."""
import json, os, random, subprocess, sys

exe, out = sys.argv[1], sys.argv[2]
nsamples = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
nstacks = int(sys.argv[4]) if len(sys.argv) > 4 else 10_000
nthreads = int(sys.argv[5]) if len(sys.argv) > 5 else 8
rnd = random.Random(int(os.environ.get("POST_GEN_SEED", "42")))

funcs = []
for line in subprocess.run(["nm", "--defined-only", "-S", exe], capture_output=True, text=True,
                           check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 4 and parts[2] in ("t", "T") and int(parts[1], 16) > 1:
        funcs.append((int(parts[0], 16), int(parts[1], 16)))
if len(funcs) < 20:
    sys.exit(f"{exe}: too few function symbols ({len(funcs)})")

lo = hi = None
for line in subprocess.run(["readelf", "-lW", exe], capture_output=True, text=True,
                           check=True).stdout.splitlines():
    parts = line.split()
    if parts and parts[0] == "LOAD" and "E" in parts[6:-1]:
        vaddr, memsz = int(parts[2], 16), int(parts[5], 16)
        lo = vaddr if lo is None else min(lo, vaddr)
        hi = vaddr + memsz if hi is None else max(hi, vaddr + memsz)
bias = 0x555555554000

def addr():
    a, size = rnd.choice(funcs)
    return bias + a + rnd.randrange(size)

stacks, seen = [], set()
while len(stacks) < nstacks:
    s = tuple(addr() for _ in range(rnd.randint(4, 40)))
    if s not in seen:
        seen.add(s)
        stacks.append(list(s))

start = 1_700_000_000_000_000_000
samples, weights, t = [], [], 0
for i in range(nsamples):
    t += rnd.randint(50_000, 150_000)
    samples.append([t, i % nthreads, rnd.randrange(nstacks), 0 if rnd.random() < 0.9 else 1])
    weights.append(rnd.randint(700_000, 1_300_000))

doc = {
    "version": 1, "pid": 4242, "exe": exe, "rate_hz": 997, "platform": "linux-x86_64",
    "start_unix_ns": start, "end_unix_ns": start + t + 1_000_000,
    "images": [{"path": exe, "base": bias, "slide": bias, "text": bias + lo,
                "text_size": hi - lo, "arch": "x86_64"}],
    "threads": [{"fiber": 0, "label": "main"}] +
               [{"fiber": k, "label": "fiber"} for k in range(1, nthreads)],
    "stacks": stacks, "samples": samples, "dropped": 0, "sample_weights_ns": weights,
    "ticks": nsamples, "late_ticks": 0, "truncated_stacks": [],
}
with open(out, "w") as f:
    json.dump(doc, f, separators=(",", ":"))
