#!/usr/bin/env python3
"""Check that every function *definition* in an LLVM IR file has a DISubprogram
(`define ... !dbg !N {`) and that every instruction of it that can carry a location
does (calls, loads, stores, arithmetic, branches with conditions, returns).

Prints `subprograms ok: <n>` and `instructions with debug locations ok` or one
`MISSING ...` line per offender, and exits 1 in that case.
"""
import re
import sys

text = open(sys.argv[1]).read()
defs, bad = 0, []
cur, has_dbg = None, False
for line in text.splitlines():
    if line.startswith("define "):
        m = re.match(r'define [^@]*@("?[^"(]+"?)\(', line)
        cur = m.group(1).strip('"') if m else line
        has_dbg = "!dbg" in line
        defs += 1
        if not has_dbg:
            bad.append("MISSING subprogram: %s" % cur)
        continue
    if line.startswith("}"):
        cur = None
        continue
    if cur is None or not has_dbg:
        continue
    s = line.strip()
    if not s or s.endswith(":") or s.startswith(";") or re.match(r"^[\w.$\"-]+:", s):
        continue
    # phi nodes, allocas and unreachable never need a location
    if re.search(r"= (phi|alloca) ", s) or s == "unreachable":
        continue
    if "!dbg" not in s:
        bad.append("MISSING location in %s: %s" % (cur, s))
for b in bad:
    print(b)
print("subprograms ok: %d" % (defs - sum(1 for b in bad if b.startswith("MISSING subprogram"))))
if not any(b.startswith("MISSING location") for b in bad):
    print("instructions with debug locations ok")
sys.exit(1 if bad else 0)
