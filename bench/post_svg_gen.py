#!/usr/bin/env python3
"""Generate a raw profile (docs/spec/profiler.md §(e)) with many distinct frames, for the SVG
flame graph's scale checks (test/consumers/svg.test.mjs, bench/post_svg.sh).

usage: post_svg_gen.py <out.json> [stacks] [depth]

`stacks` stacks of `depth` frames each, every address distinct (so stacks x depth distinct
frames when post-processed with OSPREY_PROFILE_SYMBOLIZER=none: each becomes its own hex
frame), one on-CPU sample of equal weight per stack, stacks sharing nothing below a common
root. With the defaults (1000 x 200) every frame is exactly 0.1 % wide, the narrowest the SVG
still draws: 200,000 drawn frames, the worst case for the viewer. Deterministic."""
import json, sys

out = sys.argv[1]
nstacks = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
depth = int(sys.argv[3]) if len(sys.argv) > 3 else 200
base = 0x7f0000000000  # in no image: hex frames whatever the symbolizer
stacks = []
for s in range(nstacks):
    # leaf first; distinct addresses everywhere (16 bytes apart)
    stacks.append([base + (s * depth + d) * 16 for d in range(depth)])
samples = [[1000 * (i + 1), 0, i, 0] for i in range(nstacks)]
doc = {
    "version": 1, "pid": 1, "exe": "/nonexistent/many-frames", "rate_hz": 1000,
    "platform": "linux-x86_64", "start_unix_ns": 0, "end_unix_ns": 1000 * (nstacks + 1),
    "images": [], "threads": [{"fiber": 0, "label": "main"}], "stacks": stacks,
    "samples": samples, "dropped": 0, "sample_weights_ns": [1000000] * nstacks,
}
with open(out, "w") as f:
    json.dump(doc, f, separators=(",", ":"))
