#!/usr/bin/env python3
"""usage: folded_frames.py <file.folded> <thread-prefix> <frame>...

Prints `ok <frame>: <n> samples` for each frame that occurs in at least one stack of a thread
whose name starts with <thread-prefix> (the first field of a folded line), weighted by the
line's count, or `missing <frame>` (exit 1)."""
import sys

path, prefix, frames = sys.argv[1], sys.argv[2], sys.argv[3:]
counts = {f: 0 for f in frames}
for line in open(path, encoding="utf-8"):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    parts = stack.split(";")
    if not parts or not parts[0].startswith(prefix):
        continue
    for f in frames:
        if any(p == f or p.startswith(f + " ") for p in parts[1:]):
            counts[f] += int(n)
bad = 0
for f in frames:
    if counts[f] > 0:
        print("ok %s: %d samples" % (f, counts[f]))
    else:
        print("missing %s" % f)
        bad = 1
sys.exit(bad)
