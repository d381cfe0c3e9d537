#!/usr/bin/env python3
"""Check that every call instruction inside a function definition with a DISubprogram
carries a !dbg location (so return addresses map back to a source line).

Prints `calls with debug locations: <n>` or `MISSING !dbg: <line>` per offender (exit 1).
"""
import re
import sys

text = open(sys.argv[1]).read()
n, bad = 0, []
in_fn = False
for line in text.splitlines():
    if line.startswith("define "):
        in_fn = "!dbg" in line
        continue
    if line.startswith("}"):
        in_fn = False
        continue
    if in_fn and re.search(r"\bcall\b", line) and "@llvm.dbg." not in line:
        n += 1
        if "!dbg" not in line:
            bad.append(line.strip())
for b in bad:
    print("MISSING !dbg:", b)
print("calls with debug locations: %d" % (n - len(bad)))
sys.exit(1 if bad else 0)
