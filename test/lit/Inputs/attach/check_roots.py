"""Share of on-CPU weight in stacks that reach their thread's root (test/lit/attach-cfi.test;
docs/spec/profiler.md §(l.1) target, for `osprey --attach`, §(l.9)).

usage: check_roots.py <speedscope.json> <min-percent> <function>...

Reads the speedscope export (per sample: frame names root first, weight, state), and counts a stack as reaching the
root when its outermost frame is the process entry (`_start`) or a thread entry (`clone3`,
`clone`: their CFI marks the return address undefined), and the stack holds `main` (main
thread) or `start_thread` (others) on the way. Prints the on-CPU weight share of such
stacks and for each <function> the on-CPU weight share of
stacks with a frame whose name contains it (strcmp: __strcmp_avx2, __strcmp_evex, ...); exits 1 when the share is below <min-percent> or a function is absent.
"""
import collections
import json
import sys

sp_path, min_pct = sys.argv[1], float(sys.argv[2])
funcs = sys.argv[3:]
sp = json.load(open(sp_path))
names = [f["name"] for f in sp["shared"]["frames"]]
ON_CPU = 0  # speedscope "states": 0 on-CPU, 1 waiting (the raw format's sample states)
ROOTS = {"_start", "clone3", "__clone3", "clone", "__clone"}
total = rooted = 0
per_func = collections.Counter()
bad = collections.Counter()
for prof in sp["profiles"]:
    for st, w, state in zip(prof["samples"], prof["weights"], prof["states"]):
        if state != ON_CPU:
            continue  # waiting
        stack = [names[f] for f in st]
        total += w
        for fn in funcs:
            if any(fn in name for name in stack):
                per_func[fn] += w
        if stack and stack[0] in ROOTS and ("main" in stack or "start_thread" in stack):
            rooted += w
        else:
            bad[";".join(stack[:3]) + (";..." if len(stack) > 3 else "")] += w
if total == 0:
    sys.exit("check_roots: no on-CPU samples")
share = 100.0 * rooted / total
print("on-CPU weight reaching the root: %.2f%% (target >= %.0f%%)" % (share, min_pct))
for fn in funcs:
    print("on-CPU weight under %s: %.1f%%" % (fn, 100.0 * per_func[fn] / total))
for s, w in bad.most_common(3):
    print("  not rooted: %.2f%% %s" % (100.0 * w / total, s))
ok = share >= min_pct and all(per_func[fn] > 0 for fn in funcs)
print("roots: %s" % ("ok" if ok else "MISSED"))
sys.exit(0 if ok else 1)
