#!/usr/bin/env python3
"""Generate a synthetic raw profile (docs/spec/profiler.md §(e)) against a real executable.

usage: post_gen.py <exe> <out.json> [samples] [stacks] [threads]

Stacks are built from the executable's real function symbols (nm), each address at a
random offset inside its function, as if the executable had been loaded PIE at the usual
Linux x86-64 bias; so the post-processor really symbolizes them with LLVM against the
file's DWARF and symbol table. Deterministic (seed 42, or POST_GEN_SEED).

POST_GEN_SHAPE=random (the default): every stack 4-40 random addresses, samples spread
evenly over the stacks (no shared prefix, every address new: the worst case).
POST_GEN_SHAPE=tree: stacks shaped like a real program's: each stack is an earlier stack
(its caller's) deepened by 1-3 frames, under a common _start/main-like root, so stacks share
prefixes and addresses; samples fall on the stacks by a Zipf law (a few hot stacks). The
tree and the hot order come from POST_GEN_TREE_SEED (default 1), so two profiles with the
same tree seed are two runs of one program; POST_GEN_SEED then picks the samples and makes
one stack in 20 between 3x lighter and 3x heavier (the changes a diff should show)."""
import bisect, json, os, random, subprocess, sys

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

shape = os.environ.get("POST_GEN_SHAPE", "random")
stacks, seen = [], set()
if shape == "tree":
    trnd = random.Random(int(os.environ.get("POST_GEN_TREE_SEED", "1")))
    def taddr():
        a, size = trnd.choice(funcs)
        return bias + a + trnd.randrange(size)
    root = [taddr() for _ in range(3)]  # leaf first: ..., main, __libc_start_main, _start
    while len(stacks) < nstacks:
        caller = trnd.choice(stacks) if stacks and trnd.random() < 0.9 else root
        if len(caller) >= 60:
            continue
        s = tuple([taddr() for _ in range(trnd.randint(1, 3))] + list(caller))
        if s not in seen:
            seen.add(s)
            stacks.append(list(s))
    hot = list(range(nstacks))
    trnd.shuffle(hot)
    cum, total = [], 0.0
    for rank, k in enumerate(hot):
        w = 1.0 / (rank + 1) ** 1.1
        if rnd.random() < 0.05:
            w *= rnd.choice([1 / 3, 1 / 2, 2, 3])
        total += w
        cum.append(total)
    def pick():
        return hot[bisect.bisect_left(cum, rnd.random() * total)]
elif shape == "random":
    while len(stacks) < nstacks:
        s = tuple(addr() for _ in range(rnd.randint(4, 40)))
        if s not in seen:
            seen.add(s)
            stacks.append(list(s))
    def pick():
        return rnd.randrange(nstacks)
else:
    sys.exit(f"POST_GEN_SHAPE={shape}: expected random or tree")

start = 1_700_000_000_000_000_000
samples, weights, t = [], [], 0
for i in range(nsamples):
    t += rnd.randint(50_000, 150_000)
    samples.append([t, i % nthreads, pick(), 0 if rnd.random() < 0.9 else 1])
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
