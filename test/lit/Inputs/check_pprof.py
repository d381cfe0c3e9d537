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
# The function cell runs to the two spaces before the location (or the line's end): C++
# names hold single spaces ("f(char const*, int)").
row = re.compile(r"^\S*\s+(\d+\.\d)%\s+(\d+\.\d)%\s+\S+\s+\S+\s+(.+?)(?:  .*)?$")


def simplify(name):
    """A C++ name as pprof -top shortens it: template arguments and the parameter list
    dropped ("ns::A<int>::f(char const*)" -> "ns::A::f"); other names unchanged."""
    out, depth = [], 0
    for i, ch in enumerate(name):
        if ch == "(" and depth == 0 and i > 0 and not name.startswith("operator", max(0, i - 8)):
            break
        if ch == "<" and i > 0 and (name[i - 1].isalnum() or name[i - 1] in "_>"):
            depth += 1
            continue
        if ch == ">" and depth > 0:
            depth -= 1
            continue
        if depth == 0:
            out.append(ch)
    return "".join(out).strip()


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
# Compared by simplified name, summed on both sides (two overloads shorten to one name).
theirs_s, ours_s = {}, {}
for name, pct in theirs.items():
    theirs_s[simplify(name)] = theirs_s.get(simplify(name), 0.0) + pct
for name, pct in ours.items():
    ours_s[simplify(name)] = ours_s.get(simplify(name), 0.0) + pct
for name, pct in ours_s.items():
    if name not in theirs_s:
        bad.append(f"{name}: in our report ({pct:.1f}%) but not listed by pprof")
    elif abs(theirs_s[name] - pct) > 0.1 + 0.05 * len([n for n in ours if simplify(n) == name]):
        bad.append(f"{name}: self {pct:.1f}% in our report, {theirs_s[name]}% in pprof")
if "Type: cpu" not in out.stdout:
    bad.append("pprof does not show the cpu sample type by default")
for b in bad:
    print("mismatch:", b)
if bad:
    sys.exit(1)
print(f"ok pprof: {len(ours)} functions agree on self %")
