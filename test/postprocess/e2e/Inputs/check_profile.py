#!/usr/bin/env python3
"""Check the four exports of `osprey fib.osp --profile` (docs/spec/profiler.md §(g), issue 4).

usage: check_profile.py <dir> <stem> <source.osp> <min-samples>

fib must be the hottest function, with the .osp file and its definition line; every hot
line must fall inside fib; speedscope and profile.json must show two fibers with samples;
the sample count must reach the minimum; the folded file must be well formed."""
import json, os, sys

d, stem, src, minimum = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
base = os.path.join(d, stem)
lines = open(src).read().splitlines()
def_line = next(i + 1 for i, l in enumerate(lines) if l.startswith("fn fib("))
end_line = next(i + 1 for i, l in enumerate(lines) if i + 1 > def_line and l.startswith("}"))

def fail(msg):
    sys.exit(f"check_profile: {msg}")

summary = json.load(open(base + ".profile.json"))
if summary["sampleCount"] < minimum:
    fail(f"only {summary['sampleCount']} samples (need {minimum})")
hot = summary["hotFunctions"]
if not hot or hot[0]["name"] != "fib":
    fail(f"hottest function is {hot[0]['name'] if hot else None}, not fib")
fib = hot[0]
if not fib["file"].endswith("/fib.osp") or fib["kind"] != "user":
    fail(f"fib has file {fib['file']!r} kind {fib['kind']}")
if fib["line"] != def_line:
    fail(f"fib at line {fib['line']}, defined at {def_line}")
if fib["selfPct"] < 50:
    fail(f"fib self {fib['selfPct']}%")
if not summary["hotLines"]:
    fail("no hot lines")
# Hot lines are attributed lines (docs/spec/profiler.md §(l.6)): a caller's line gets the time
# spent below it in the runtime (the spawn line, more so in sanitizer builds), so at least
# 90 % of the source file's hot-line weight, not all of it, lies inside fib.
in_file = [hl for hl in summary["hotLines"] if hl["file"] == fib["file"]]
inside = sum(hl["samples"] for hl in in_file if def_line <= hl["line"] <= end_line)
total_hl = sum(hl["samples"] for hl in in_file)
if not total_hl or inside < 0.9 * total_hl:
    fail(f"hot lines inside fib ({def_line}-{end_line}) hold {inside} of {total_hl} samples")
# (the collector's marker threads, gc-<n>, are not the program's fibers)
busy = [f for f in summary["fibers"] if f["samples"] > 0 and not f["label"].startswith("gc-")]
if [f["label"] for f in busy][:2] != ["main", "fiber-1"]:
    fail(f"fibers with samples: {busy}")

ss = json.load(open(base + ".speedscope.json"))
if ss["$schema"] != "https://www.speedscope.app/file-format-schema.json":
    fail("speedscope $schema")
names = [p["name"] for p in ss["profiles"] if not p["name"].startswith("gc-")]
if names[:2] != ["main", "fiber-1"]:
    fail(f"speedscope profiles {names}")
frames = ss["shared"]["frames"]
for p in ss["profiles"]:
    if len(p["samples"]) != len(p["weights"]):
        fail("samples/weights lengths differ")
    for s in p["samples"]:
        if not all(0 <= f < len(frames) for f in s):
            fail("frame index out of range")
    # every fiber's samples include fib, root first (main / the fiber entry before fib)
    if p["name"].startswith("gc-"):
        continue
    if not any(frames[s[-1]]["name"] == "fib" for s in p["samples"]):
        fail(f"no sample of {p['name']} ends in fib")

cpu = json.load(open(base + ".cpuprofile"))
ids = {n["id"] for n in cpu["nodes"]}
if cpu["nodes"][0]["callFrame"]["functionName"] != "(root)" or not set(cpu["samples"]) <= ids:
    fail("cpuprofile nodes/samples")
if sum(cpu["timeDeltas"]) != cpu["endTime"] - cpu["startTime"] or min(cpu["timeDeltas"]) < 0:
    fail("cpuprofile timeDeltas")
fibnodes = [n for n in cpu["nodes"] if n["callFrame"]["functionName"] == "fib"]
if not fibnodes or any(n["callFrame"]["lineNumber"] < def_line - 1 for n in fibnodes):
    fail("cpuprofile fib nodes / 0-based lines")

folded = open(base + ".folded").read()
if not folded.endswith("\n"):
    fail("folded does not end with a newline")
for line in folded.splitlines():
    stack, _, count = line.rpartition(" ")
    if not count.isdigit() or not stack or ";;" in stack or stack.endswith(";"):
        fail(f"bad folded line {line!r}")
if not any(l.startswith("fiber-1;") and ";fib " in l for l in folded.splitlines()):
    fail("no folded fiber-1 stack ending in fib")
print(f"check_profile: ok ({summary['sampleCount']} samples, fib {fib['selfPct']}% self)")
