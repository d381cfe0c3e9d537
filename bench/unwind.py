#!/usr/bin/env python3
"""bench/unwind.py — how much of the profile's weight is in stacks that reach their
thread's root (docs/spec/profiler.md §(l.1) target), on real programs:

  (a) bench/unwind/maps.osp: an Osprey program whose time is in maps of strings, string
      building and allocation, on the main thread and in a fiber;
  (b) bench/unwind/c_workload.c: a C program (frame pointers, as a user's build) whose
      time is in qsort + strcmp + snprintf, with four threads blocked in
      pthread_cond_wait, pthread_join, sem_wait and a pipe read under functions of its own.

Each is profiled at 997 Hz (Osprey: the binary `osprey --build --profile` makes, run with
OSPREY_PROFILE; C: libosprey_prof.so preloaded), post-processed with
`osprey --postprocess`, and every sample's stack is read from the speedscope export
(frame names, root first) beside the raw file (state and weight per sample). A stack
reaches the root when its outermost frame is the process entry (`_start`), a thread
entry (`clone3` / `clone`, which mark the return address undefined) or the runtime's
fiber or continuation entry (`osp_fiber_entry`, `cont_entry`). Prints, per workload,
the on-CPU and waiting weight in such stacks, the blocked threads' calling functions
found, the raw file's unwind counters, and one 'target ...: ok / MISSED' line per figure.

Usage: bench/unwind.py [--seconds S] [--build DIR]   (the build must exist: make build)
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Thread roots: the process entry, the kernel thread entries (their CFI marks the return
# address undefined), and the runtime's fiber and continuation entries (which end their
# stacks on purpose, runtime/core/fiber.c).
ROOTS = {"_start", "clone3", "__clone3", "clone", "__clone", "osp_fiber_entry", "cont_entry"}


def run(cmd, env=None):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("bench/unwind: %s failed (%d): %s" % (cmd[0], p.returncode, p.stderr.strip()[-400:]))
    return p


def profile(exe, args, raw, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSPREY_PROFILE")}
    env.update(env_extra)
    env["OSPREY_PROFILE"] = raw
    env["OSPREY_PROFILE_HZ"] = "997"
    run([exe] + args, env=env)


def analyse(raw_path, speedscope_path):
    raw = json.load(open(raw_path))
    sp = json.load(open(speedscope_path))
    frames = sp["shared"]["frames"]
    by_row = collections.defaultdict(list)
    for s in raw["samples"]:
        by_row[s[1]].append(s)
    weights = raw["sample_weights_ns"]
    index_of = {id(s): i for i, s in enumerate(raw["samples"])}
    rows = [r for r in range(len(raw["threads"])) if by_row.get(r)]
    profiles = sp["profiles"]
    if len(rows) != len(profiles):
        sys.exit("bench/unwind: %d thread rows with samples, %d speedscope profiles" % (len(rows), len(profiles)))
    tot = {0: 0, 1: 0}
    rooted = {0: 0, 1: 0}
    unrooted = collections.Counter()
    waiting_names = collections.defaultdict(set)  # row -> names in its waiting stacks
    for row, prof in zip(rows, profiles):
        samples = by_row[row]
        if len(samples) != len(prof["samples"]):
            sys.exit("bench/unwind: row %d: %d raw samples, %d speedscope samples" % (row, len(samples), len(prof["samples"])))
        for s, st in zip(samples, prof["samples"]):
            state = s[3]
            w = weights[index_of[id(s)]]
            names = [frames[i]["name"] for i in st]
            tot[state] += w
            if names and names[0] in ROOTS:
                rooted[state] += w
            else:
                unrooted[(state, ";".join(names[:4]) + (" ... " + names[-1] if len(names) > 4 else ""))] += w
            if state == 1:
                waiting_names[row].update(names)
    return raw, tot, rooted, unrooted, waiting_names


def report(name, raw, tot, rooted, unrooted, target=0.99):
    ok = True
    for state, label in ((0, "on-CPU"), (1, "waiting")):
        if tot[state] == 0:
            print("  %-8s no weight" % label)
            continue
        f = rooted[state] / tot[state]
        print("  %-8s %6.2f %% of %.3f s in stacks reaching the root" % (label, 100 * f, tot[state] / 1e9))
        good = f >= target
        ok &= good
        print("target %s %s weight rooted >= %.0f %%: %s (%.2f %%)" % (name, label, 100 * target, "ok" if good else "MISSED", 100 * f))
    print("  unwind counters: %s" % json.dumps(raw.get("unwind", {})))
    print("  dropped: %s" % json.dumps(raw.get("dropped_reasons", {})))
    for (state, k), w in unrooted.most_common(5):
        print("    not rooted (%s) %.4f s: %s" % ("waiting" if state else "on-CPU", w / 1e9, k))
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    osprey = os.path.join(a.build, "bin", "osprey")
    preload = os.path.join(a.build, "lib", "libosprey_prof.so")
    for f in (osprey, preload):
        if not os.path.exists(f):
            sys.exit("bench/unwind: %s is missing (make build)" % f)
    work = tempfile.mkdtemp(prefix="osprey-unwind-")
    all_ok = True

    # (a) Osprey: maps, strings, allocation, a fiber.
    exe = os.path.join(work, "maps")
    run([osprey, os.path.join(HERE, "unwind", "maps.osp"), "--build", "--profile", "-o", exe])
    raw = os.path.join(work, "maps.osprof.json")
    profile(exe, [], raw, {})
    run([osprey, "--postprocess", raw, "--binary", exe, "-o", os.path.join(work, "maps")])
    print("(a) Osprey maps/strings/allocation with a fiber (bench/unwind/maps.osp)")
    r, tot, rooted, unrooted, _ = analyse(raw, os.path.join(work, "maps.speedscope.json"))
    all_ok &= report("osprey-maps", r, tot, rooted, unrooted)

    # (b) C: qsort + strcmp + snprintf, four blocked threads.
    exe = os.path.join(work, "c_workload")
    run(["clang-19", "-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
         os.path.join(HERE, "unwind", "c_workload.c"), "-o", exe, "-lpthread"])
    raw = os.path.join(work, "c.osprof.json")
    profile(exe, [str(a.seconds)], raw, {"LD_PRELOAD": preload})
    run([osprey, "--postprocess", raw, "--binary", exe, "-o", os.path.join(work, "c")])
    print("(b) C qsort/strcmp/snprintf with threads blocked in libc (bench/unwind/c_workload.c)")
    r, tot, rooted, unrooted, waiting = analyse(raw, os.path.join(work, "c.speedscope.json"))
    all_ok &= report("c-libc", r, tot, rooted, unrooted)
    callers = ["wait_for_work_cond", "wait_for_child_join", "wait_for_work_sem", "wait_for_input_pipe"]
    found = {c: any(c in names for names in waiting.values()) for c in callers}
    for c in callers:
        print("  blocked thread's caller %-22s %s" % (c, "in its waiting stack" if found[c] else "MISSING"))
    good = all(found.values())
    all_ok &= good
    print("target c-libc blocked stacks show the program's callers: %s (%d/%d)" % ("ok" if good else "MISSED", sum(found.values()), len(callers)))
    print("unwind: all targets %s" % ("met" if all_ok else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
