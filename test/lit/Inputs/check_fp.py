#!/usr/bin/env python3
"""Check that every function *definition* in an LLVM IR file carries "frame-pointer"="all".

Prints `frame-pointer ok: <n> definitions: name1 name2 ...` (sorted), or
`MISSING frame-pointer: <name>` for each offender, and exits 1 in that case.
"""
import re
import sys

text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
groups = {}
for m in re.finditer(r'^attributes #(\d+) = \{(.*)\}$', text, re.M):
    groups[m.group(1)] = m.group(2)
names, bad = [], []
for m in re.finditer(r'^define [^@]*@("?[^"(]+"?)\((.*)$', text, re.M):
    name = m.group(1).strip('"')
    rest = m.group(2)
    ids = re.findall(r'#(\d+)', rest)
    ok = any('"frame-pointer"="all"' in groups.get(i, '') for i in ids)
    names.append(name)
    if not ok:
        bad.append(name)
for b in bad:
    print("MISSING frame-pointer:", b)
print("frame-pointer ok: %d definitions: %s" % (len(names) - len(bad), " ".join(sorted(names))))
sys.exit(1 if bad else 0)
