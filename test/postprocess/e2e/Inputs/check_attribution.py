#!/usr/bin/env python3
"""Check attributed lines and image frames on a program whose time is in the runtime
(docs/spec/profiler.md §(l.6); issue 13's targets).

usage: check_attribution.py <prefix> <source> <marker> <min-pct>

The source line containing <marker> (the one that calls mapSet) must have at least <min-pct>
% of the on-CPU weight in .profile.json's hotLines (today's leaf-only rule gave it 0 %); no
leaf frame named bare hex (0x...) may carry more than 1 % of the on-CPU weight in
.speedscope.json (unnamed code inside a library is its [<image>] frame); every function is
one frame; .folded holds on-CPU samples only; positionTicks are 1-based lines."""
import json, sys

prefix, src, marker, minimum = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
lines = open(src).read().splitlines()
line = next(i + 1 for i, l in enumerate(lines) if marker in l)

def fail(msg):
    sys.exit(f"check_attribution: {msg}")

summary = json.load(open(prefix + ".profile.json"))
hot = [h for h in summary["hotLines"] if h["file"].endswith("/" + src.split("/")[-1]) and h["line"] == line]
pct = hot[0]["pct"] if hot else 0.0
if pct < minimum:
    fail(f"line {line} ({marker}) has {pct}% of the on-CPU weight in hotLines, need {minimum}%: "
         f"{summary['hotLines'][:5]}")
for h in summary["hotLines"]:
    if not (0 <= h["selfSamples"] <= h["samples"]):
        fail(f"selfSamples {h}")

ss = json.load(open(prefix + ".speedscope.json"))
frames = ss["shared"]["frames"]
keys = [(f["name"], f["file"]) for f in frames]
if len(set(keys)) != len(keys):
    fail("a function is more than one frame")
leaf_w, total = {}, 0.0
for p in ss["profiles"]:
    for s, w in zip(p["samples"], p["weights"]):
        leaf_w[s[-1]] = leaf_w.get(s[-1], 0.0) + w
        total += w
cpu_total = summary["cpuSeconds"]
for f, w in leaf_w.items():
    name = frames[f]["name"]
    if name.startswith("0x") and cpu_total > 0 and w / cpu_total > 0.01 + 0.0005:
        fail(f"bare hex leaf frame {name} has {100 * w / cpu_total:.1f}% of the on-CPU weight")

on_cpu = sum(f["oncpuSamples"] for f in summary["fibers"])
folded = sum(int(l.rpartition(" ")[2]) for l in open(prefix + ".folded").read().splitlines())
if folded != on_cpu:
    fail(f".folded counts {folded} samples, the profile has {on_cpu} on-CPU samples")

cpu = json.load(open(prefix + ".cpuprofile"))
for n in cpu["nodes"]:
    ticks = n.get("positionTicks", [])
    if sum(t["ticks"] for t in ticks) > n["hitCount"] or any(t["line"] < 1 for t in ticks):
        fail(f"positionTicks of node {n['id']}: {ticks} (hitCount {n['hitCount']})")
    if [t["line"] for t in ticks] != sorted(t["line"] for t in ticks):
        fail(f"positionTicks of node {n['id']} not sorted by line")
print(f"check_attribution: ok (line {line}: {pct}% attributed)")
