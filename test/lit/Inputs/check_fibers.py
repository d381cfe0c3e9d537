#!/usr/bin/env python3
"""Check the exports of `osprey examples/effects_demo.osp --profile` (docs/spec/profiler.md §(g)):
three fibers with on-CPU samples -- main, the spawned fiber-1 and the effect continuation
(fiber id -1, label effect-<row>) -- and one waiting fiber, fiber-2 (it only sleeps).

  check_fibers.py <dir> <stem> [<report>] [--sanitizer]

--sanitizer (a sanitizer build, whose instrumented runtime makes thread start and exit
and each wake-up from sleep cost more CPU): fiber-2 may also have on-CPU samples, as long
as each is in osp_sleep_ms or outside its own code (`nap`, `fib`); everything else is
checked the same.

With <report> (the driver's stdout), its `fibers:` line is checked too (rows appear in
registration order, which depends on thread start-up, so the order is not checked).

profile.json: per-fiber oncpuSamples; speedscope.json: one profile per fiber, on-CPU
stacks end in user code (`fib`), fiber-2's all pass through osp_sleep_ms; folded: the
same per label; cpuprofile (on-CPU samples only): hits under main's `main`, under a
fiber entry and under the continuation entry `cont_entry`, none under `nap`.
Prints one `ok ...` line per export, or `FAIL: ...` and exits 1.
"""
import json
import os
import sys

args = [a for a in sys.argv[1:] if a != "--sanitizer"]
sanitizer = "--sanitizer" in sys.argv[1:]
d, stem = args[0], args[1]
report_path = args[2] if len(args) > 2 else None
failed = []


# libc's sleep calls: a sample taken inside one (no frame pointer there) skips the frame of
# its caller, so `nap;clock_nanosleep` is osp_sleep_ms waking up.
LIBC_SLEEP = {"clock_nanosleep", "__clock_nanosleep", "nanosleep", "__nanosleep"}


def idle_stack(names):
    """A stack the sleeping fiber may have: in osp_sleep_ms, or (sanitizer builds) in libc's
    sleep call or in the runtime's thread start or exit, outside the fiber's own code."""
    if "osp_sleep_ms" in names:
        return True
    if not sanitizer:
        return False
    return any(n in LIBC_SLEEP for n in names) or ("nap" not in names and "fib" not in names)


def fail(msg):
    failed.append(msg)
    print("FAIL:", msg)


def load(ext):
    with open(os.path.join(d, stem + ext), encoding="utf-8") as f:
        return f.read()


# --- profile.json -------------------------------------------------------------------
prof = json.loads(load(".profile.json"))
# The collector's marker threads (label gc-<n>, one per extra core, §(l.2)) run during
# collections and wait otherwise: present or not, on-CPU or not, they are not the program's
# fibers and are left out of the checks below.
prof["fibers"] = [f for f in prof["fibers"] if not f["label"].startswith("gc-")]
fibers = {f["label"]: f for f in prof["fibers"]}
effect = [f for f in prof["fibers"] if f["id"] == -1]
if len(effect) != 1 or not effect[0]["label"].startswith("effect-"):
    fail("profile.json: expected one effect-continuation row (id -1, label effect-<row>): %r" % prof["fibers"])
effect_label = effect[0]["label"] if effect else "effect-?"
oncpu = sorted(f["label"] for f in prof["fibers"] if f["oncpuSamples"] > 0)
waiting = sorted(f["label"] for f in prof["fibers"] if f["samples"] > 0 and f["oncpuSamples"] == 0)
if sanitizer and "fiber-2" in oncpu and fibers["fiber-2"]["samples"] > fibers["fiber-2"]["oncpuSamples"]:
    oncpu.remove("fiber-2")  # its few on-CPU samples are checked in the stacks below
    waiting = sorted(waiting + ["fiber-2"])
if oncpu != sorted(["main", "fiber-1", effect_label]):
    fail("profile.json: fibers with on-CPU samples %r" % oncpu)
if waiting != ["fiber-2"]:
    fail("profile.json: waiting fibers %r" % waiting)
if not failed:
    print("ok profile.json: on-CPU %s; waiting %s" % (" ".join(oncpu), " ".join(waiting)))

# --- speedscope.json ----------------------------------------------------------------
n = len(failed)
sp = json.loads(load(".speedscope.json"))
frames = [fr["name"] for fr in sp["shared"]["frames"]]
profiles = {p["name"]: p for p in sp["profiles"] if not p["name"].startswith("gc-")}
for label in ("main", "fiber-1", effect_label):
    p = profiles.get(label)
    if not p or not any(frames[s[-1]] == "fib" for s in p["samples"] if s):
        fail("speedscope.json: %s has no sample in `fib`" % label)
p2 = profiles.get("fiber-2")
if not p2 or not p2["samples"] or not all(idle_stack([frames[i] for i in s]) for s in p2["samples"]):
    fail("speedscope.json: fiber-2 is not waiting in osp_sleep_ms")
if len(failed) == n:
    print("ok speedscope.json: %d profiles" % len(profiles))

# --- folded ---------------------------------------------------------------------------
n = len(failed)
by = {}
for line in load(".folded").splitlines():
    stack, count = line.rsplit(" ", 1)
    parts = stack.split(";")
    if parts[0].startswith("gc-"):
        continue  # the collector's marker threads (see profile.json above)
    by.setdefault(parts[0], []).append((parts[1:], int(count)))
for label in ("main", "fiber-1", effect_label):
    if not any(fr and fr[-1] == "fib" for fr, _ in by.get(label, [])):
        fail("folded: %s has no stack ending in fib" % label)
# .folded holds on-CPU samples only (docs/spec/profiler.md §(l.6)): the sleeping fiber-2 has no
# line, or in a sanitizer build only its thread start or exit (never its own code)
if by.get("fiber-2") and not (sanitizer and all(idle_stack(fr) for fr, _ in by["fiber-2"])):
    fail("folded: fiber-2 has on-CPU stacks %r" % by["fiber-2"])
if any(fr and fr[-1] == "fib" for fr, _ in by.get("fiber-2", [])):
    fail("folded: fiber-2 computes")
if len(failed) == n:
    print("ok folded: on-CPU stacks of %d fibers" % len([k for k in by if k != "fiber-2"]))

# --- cpuprofile -----------------------------------------------------------------------
n = len(failed)
cp = json.loads(load(".cpuprofile"))
nodes = {nd["id"]: nd for nd in cp["nodes"]}
parent = {}
for nd in cp["nodes"]:
    for ch in nd["children"]:
        parent[ch] = nd["id"]


def path(i):
    out = []
    while i in nodes:
        out.append(nodes[i]["callFrame"]["functionName"])
        i = parent.get(i)
    return out


roots = {"main": 0, "fiber": 0, "effect": 0, "nap": 0}
for s in cp["samples"]:
    names = path(s)
    if "nap" in names and not (sanitizer and idle_stack(names)):
        roots["nap"] += 1
    if "cont_entry" in names:
        roots["effect"] += 1
    elif "osp_fiber_entry" in names:
        roots["fiber"] += 1
    elif "main" in names:
        roots["main"] += 1
for k in ("main", "fiber", "effect"):
    if roots[k] == 0:
        fail("cpuprofile: no on-CPU sample under the %s thread" % k)
if roots["nap"]:
    fail("cpuprofile: %d on-CPU samples in the sleeping fiber" % roots["nap"])
if len(failed) == n:
    print("ok cpuprofile: on-CPU samples under main, a fiber and the effect continuation")
# --- the terminal report ----------------------------------------------------------------
if report_path:
    n = len(failed)
    with open(report_path, encoding="utf-8") as f:
        lines = [ln for ln in f.read().splitlines() if ln.startswith("fibers: ")]
    if len(lines) != 1:
        fail("report: expected one `fibers:` line, found %d" % len(lines))
    else:
        states = {}
        for part in lines[0][len("fibers: "):].split(" \u00b7 "):
            label, _, state = part.partition(" ")
            if not label.startswith("gc-"):
                states[label] = state
        for label in ("main", "fiber-1", effect_label):
            st = states.get(label, "")
            if not (st.endswith("% on-cpu") and st[:-len("% on-cpu")].isdigit() and int(st[:-len("% on-cpu")]) > 0):
                fail("report: %s is %r, expected a positive on-cpu share" % (label, st))
        st2 = states.get("fiber-2", "")
        if sanitizer and st2.endswith("% on-cpu"):
            st2 = "waiting"  # its on-CPU samples were checked in the exports above
        if st2 != "waiting":
            fail("report: fiber-2 is %r, expected waiting" % states.get("fiber-2"))
        if len(states) != 4:
            fail("report: %d fibers listed" % len(states))
        if len(failed) == n:
            print("ok report: %d fibers, fiber-2 waiting" % len(states))
sys.exit(1 if failed else 0)
