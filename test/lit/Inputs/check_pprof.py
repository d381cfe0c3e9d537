#!/usr/bin/env python3
"""Check <stem>.pb.gz with the real consumer (docs/spec/profiler.md §(l.6)): `go tool pprof
-top` must load it and list every function of our report's table with the same self share
within 0.1 point. Usage: check_pprof.py <file.pb.gz> <report.txt>. Prints one "ok" line or
the mismatches, exit 1 on any."""
import re
import subprocess
import sys

pb, report = sys.argv[1], sys.argv[2]
ours = {}
row = re.compile(r"^\S*\s+(\d+\.\d)%\s+(\d+\.\d)%\s+\S+\s+\S+\s+(\S+)\s")
in_table = False
for line in open(report, encoding="utf-8"):
    if "SELF%" in line and "FUNCTION" in line:
        in_table = True
        continue
    if in_table:
        m = row.match(line)
        if not m:
            if not line.strip():
                break
            continue
        ours[m.group(3)] = float(m.group(1))
if not ours:
    sys.exit("no function table in " + report)

out = subprocess.run(["go", "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=100000", pb],
                     capture_output=True, text=True)
if out.returncode != 0:
    sys.exit("go tool pprof failed: " + out.stderr)
theirs = {}
prow = re.compile(r"^\s*\S+\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+[\d.]+%\s+(.+?)\s*$")
for line in out.stdout.splitlines():
    m = prow.match(line)
    if m:
        name = m.group(2)
        if name.endswith(" (inline)"):  # pprof marks functions it saw inlined somewhere
            name = name[: -len(" (inline)")]
        theirs[name] = theirs.get(name, 0.0) + float(m.group(1))
bad = []
for name, pct in ours.items():
    if name not in theirs and name.count("(") > name.count(")"):
        # A C++ signature with spaces ("f(char const*, int)"), cut at its first space by
        # the row pattern above: the one pprof name it begins, or the name without its
        # parameters, which is how pprof -top shortens C++ names
        # ("__asan::Allocator::Allocate(unsigned long, ...)" -> "__asan::Allocator::Allocate").
        whole = [n for n in theirs if n.startswith(name)]
        if len(whole) == 1:
            name = whole[0]
        elif name.split("(", 1)[0] in theirs:
            name = name.split("(", 1)[0]
    if name not in theirs:
        bad.append(f"{name}: in our report ({pct}%) but not listed by pprof")
    elif abs(theirs[name] - pct) > 0.1 + 0.05:  # ours is rounded to 0.1
        bad.append(f"{name}: self {pct}% in our report, {theirs[name]}% in pprof")
if "Type: cpu" not in out.stdout:
    bad.append("pprof does not show the cpu sample type by default")
for b in bad:
    print("mismatch:", b)
if bad:
    sys.exit(1)
print(f"ok pprof: {len(ours)} functions agree on self %")
