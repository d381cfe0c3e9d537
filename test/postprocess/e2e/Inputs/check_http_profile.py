#!/usr/bin/env python3
"""Check that a profiled HTTP server shows its handler's frames (docs/spec/language.md §9.7,
§14.5): in <stem>.folded, the server's fiber (a `fiber-<id>` root, not `main`) has stacks
running through the runtime's server loop into the handler `serve` and its callee `fib`, and
they hold most of the samples; profile.json lists `serve` and `fib` as user functions of the
.osp file.

usage: check_http_profile.py <dir> <stem>"""
import json, os, sys

d, stem = sys.argv[1], sys.argv[2]
base = os.path.join(d, stem)

def fail(msg):
    sys.exit(f"check_http_profile: {msg}")

total = handler = 0
for line in open(base + ".folded"):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames, n = stack.split(";"), int(count)
    total += n
    if not frames[0].startswith("fiber-"):
        continue
    if "server_main" in frames and "serve" in frames and "fib" in frames:
        i, j, k = frames.index("server_main"), frames.index("serve"), frames.index("fib")
        if i < j < k:
            handler += n
if total == 0:
    fail("no samples")
if handler < 0.5 * total:
    fail(f"only {handler} of {total} samples in the server fiber's handler (serve → fib)")

summary = json.load(open(base + ".profile.json"))
hot = summary["hotFunctions"]
names = {f["name"]: f for f in hot}
# hotFunctions holds the first 50 functions by self weight. `serve` has almost none of
# its own (fib has it), so where more than 50 functions have self samples (the runtime's
# and a sanitizer's, in an ASan build) it may fall off the list: then the full list must
# end below it, and the .cpuprofile must name its .osp file.
for fn in ("serve", "fib"):
    f = names.get(fn)
    if f is None and fn == "serve" and len(hot) == 50 and hot[-1]["selfSamples"] <= 1:
        urls = {n["callFrame"]["url"] for n in json.load(open(base + ".cpuprofile"))["nodes"]
                if n["callFrame"]["functionName"] == fn}
        if any(u.endswith(".osp") for u in urls):
            continue
        fail(f"{fn} is not in profile.json's full hotFunctions, nor of the .osp file in the .cpuprofile: {urls}")
    if f is None or f["kind"] != "user" or not f["file"].endswith(".osp"):
        fail(f"{fn} is not a user function of the .osp file in profile.json: {f}")
print(f"check_http_profile: {handler} of {total} samples in the handler on the server's fiber")
