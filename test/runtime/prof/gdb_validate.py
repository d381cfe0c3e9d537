#!/usr/bin/env python3
"""gdb_validate.py — the unwinder against gdb (docs/spec/profiler.md §(l.1) target): the
frame sequence the profiler's walk gives at a sampled pc equals gdb's backtrace there for
at least 99 % of the samples.

1. Profile gdb_target (OSPREY_PROFILE, 997 Hz): its on-CPU samples of the main thread give
   the sampled leaf pcs, as (image, offset) pairs, with their sample counts.
2. Run gdb_target under gdb in batch mode with a breakpoint at each sampled pc (the 200 most
   sampled; image bases from the inferior's /proc/<pid>/maps). At each hit, gdb's frames
   (inline and tail-call frames skipped: the profiler records physical frames), and the
   runtime's own
   walk from the same pc, sp and rbp (osp_test_gdb_walk, run by the target's SIGUSR2
   handler: gdb resumes the stopped thread with that signal, scheduler-locking on, and
   reads the frames at osp_test_gdb_walked), are recorded; each pc is checked at up to 3 hits. gdb's stops
   take the program's wall time (much more of it on a loaded machine), so the program may run
   up to 300 s and is killed as soon as every breakpoint is done or the pcs hit so far cover
   97 % of the sampled weight (a pc sampled only during start-up is never hit again).
3. A pc agrees when every hit's two sequences are equal, address for address. Prints the
   share of the sampled weight at agreeing pcs and exits 1 below 99 %, or when fewer than
   70 % of the sampled weight could be checked.

Usage: gdb_validate.py <gdb_target>
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

MAX_PCS = 200
HITS_PER_PC = 3

GDB_SCRIPT = r'''
import gdb, json, os
targets = json.load(open(os.environ["GDBV_TARGETS"]))
out = open(os.environ["GDBV_OUT"], "w")
hits = {}
bps = {}
state = {"skip": None}
def bases(pid):
    b = {}
    for line in open("/proc/%d/maps" % pid):
        f = line.split()
        if len(f) >= 6 and f[5].startswith("/"):
            lo = int(f[0].split("-")[0], 16)
            off = int(f[2], 16)
            path = os.path.realpath(f[5])
            if path not in b or lo - off < b[path]:
                b[path] = lo - off
    return b
def record(pc):
    key, bp = bps[pc]
    frames = []
    f = gdb.newest_frame()
    while f is not None and len(frames) < 128:
        # Physical frames only: gdb adds inline frames from DWARF, and tail-call frames it
        # infers from call-site information (a function that jumped to its callee left
        # no frame on the stack, so no walk of the stack can show it).
        if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            frames.append(int(f.pc()))
        try:
            f = f.older()
        except gdb.error:
            break
    # Our walk from the same registers: the thread is resumed with SIGUSR2, whose handler
    # walks from the interrupted (the stop's) pc, sp and rbp and stops at
    # osp_test_gdb_walked. No inferior call: on some kernels gdb cannot restore a thread's
    # extended register state after one ("Couldn't write extended state status").
    on = [bp for _, bp in bps.values() if bp.enabled]
    for x in on:
        x.enabled = False
    walked.enabled = True
    gdb.execute("set scheduler-locking on")
    n = None
    try:
        gdb.execute("signal SIGUSR2", to_string=True)
        if gdb.selected_frame().name() == "osp_test_gdb_walked":
            n = int(gdb.parse_and_eval("osp_test_gdb_nframes"))
    except gdb.error as e:
        out.write(json.dumps({"key": key, "error": str(e)}) + "\n")
    gdb.execute("set scheduler-locking off")
    walked.enabled = False
    for x in on:
        x.enabled = True
    state["skip"] = pc  # the handler returns to pc: its breakpoint hits again once
    if n is None:
        return
    ours = [int(gdb.parse_and_eval("osp_test_gdb_frames[%d]" % i)) for i in range(max(n, 0))]
    out.write(json.dumps({"key": key, "gdb": frames, "ours": ours}) + "\n")
    out.flush()
    hits[key] = hits.get(key, 0) + 1
    if hits[key] >= int(os.environ["GDBV_HITS"]):
        bp.enabled = False
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set displaced-stepping off")  # a signal delivered while a breakpoint is stepped over out of line returned to the scratch copy (SIGSEGV)
gdb.execute("set backtrace past-main on")
gdb.execute("set backtrace past-entry on")
gdb.execute("handle SIGALRM nostop noprint pass")
gdb.execute("handle SIGPROF nostop noprint pass")
gdb.execute("handle SIGUSR2 nostop noprint pass")
start = gdb.Breakpoint("gdb_target_format", internal=True)  # after the setup in main
gdb.execute("run " + os.environ["GDBV_ARGS"], to_string=True)
start.delete()
walked = gdb.Breakpoint("osp_test_gdb_walked", internal=True)
walked.silent = True
walked.enabled = False
b = bases(gdb.selected_inferior().pid)
for t in targets:
    base = b.get(t["path"])
    if base is None:
        continue
    addr = base + t["offset"]
    bp = gdb.Breakpoint("*0x%x" % addr, internal=True)
    bp.silent = True
    bps[addr] = ("%s+0x%x" % (t["path"], t["offset"]), bp)
weight = {"%s+0x%x" % (t["path"], t["offset"]): t["n"] for t in targets}
total = sum(weight.values())
failures = 0
while bps and any(bp.enabled for _, bp in bps.values()) and failures < 20:
    if sum(weight[k] for k in hits) >= 0.97 * total:
        break
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error as e:
        # a stop gdb could not handle: note it and carry on while the program runs
        out.write(json.dumps({"key": None, "error": str(e)}) + "\n")
        failures += 1
    if not gdb.selected_inferior().pid:
        break
    try:
        pc = int(gdb.parse_and_eval("$pc"))
    except gdb.error:
        failures += 1
        continue
    skip, state["skip"] = state["skip"], None
    if pc in bps and pc != skip:
        try:
            record(pc)
        except Exception as e:  # one bad stop loses that hit, not the rest of the run
            out.write(json.dumps({"key": None, "error": repr(e)}) + "\n")
            failures += 1
            try:
                gdb.execute("set scheduler-locking off")
                walked.enabled = False
                for _, x in bps.values():
                    x.enabled = True
            except gdb.error:
                pass
out.write(json.dumps({"key": None, "end": [len(bps), sum(1 for _, bp in bps.values() if bp.enabled), failures, bool(gdb.selected_inferior().pid)]}) + "\n")
out.close()
if gdb.selected_inferior().pid:
    gdb.execute("kill")
'''


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    target = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="gdbv-")
    raw_path = os.path.join(work, "run.osprof.json")
    env = dict(os.environ, OSPREY_PROFILE=raw_path, OSPREY_PROFILE_HZ="997")
    subprocess.run([target, "3"], env=env, check=True, stdout=subprocess.DEVNULL)
    raw = json.load(open(raw_path))
    images = sorted(raw["images"], key=lambda im: im["base"])

    def locate(pc):
        for im in images:
            if im["path"].startswith("/") and im["text"] <= pc < im["text"] + im["text_size"]:
                return os.path.realpath(im["path"]), pc - im["base"]
        return None

    counts = collections.Counter()
    main_row = 0  # the main thread registers first (§(d))
    for s in raw["samples"]:
        if s[1] != main_row or s[3] != 0:
            continue
        loc = locate(raw["stacks"][s[2]][0])
        if loc:
            counts[loc] += 1
    total = sum(counts.values())
    if total < 100:
        sys.exit("gdb_validate: only %d on-CPU samples of the main thread" % total)
    chosen = counts.most_common(MAX_PCS)
    tfile = os.path.join(work, "targets.json")
    json.dump([{"path": p, "offset": o, "n": n} for (p, o), n in chosen], open(tfile, "w"))
    sfile = os.path.join(work, "gdb.py")
    open(sfile, "w").write(GDB_SCRIPT)
    ofile = os.path.join(work, "hits.jsonl")
    genv = {k: v for k, v in os.environ.items() if not k.startswith("OSPREY_PROFILE")}
    genv.update(GDBV_TARGETS=tfile, GDBV_OUT=ofile, GDBV_HITS=str(HITS_PER_PC), GDBV_ARGS="300")
    g = subprocess.run(["gdb", "-nx", "-batch", "-x", sfile, target], env=genv,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    open(os.path.join(work, "gdb.out"), "wb").write(g.stdout + g.stderr)
    results = collections.defaultdict(list)
    call_errors = 0
    errors = []
    if os.path.exists(ofile):
        for line in open(ofile):
            h = json.loads(line)
            if "end" in h:  # why gdb's loop ended
                bps_set, bps_left, gdb_failures, alive = h["end"]
                print("gdb_validate: gdb stopped with %d of %d breakpoints left, %d errors, program %s"
                      % (bps_left, bps_set, gdb_failures, "running" if alive else "gone"))
                continue
            if "error" in h:
                call_errors += 1
                errors.append(h["error"])
                continue
            results[h["key"]].append(h)
    checked = agree = 0
    shown = 0
    for (path, off), n in chosen:
        key = "%s+0x%x" % (path, off)
        hs = results.get(key)
        if not hs:
            continue
        checked += n
        if all(h["gdb"] == h["ours"] for h in hs):
            agree += n
        elif shown < 5:
            shown += 1
            h = next(h for h in hs if h["gdb"] != h["ours"])
            print("gdb_validate: differs at %s (%d samples)\n  gdb:  %s\n  ours: %s" % (
                key, n, " ".join("%x" % a for a in h["gdb"]), " ".join("%x" % a for a in h["ours"])))
    print("gdb_validate: %d main-thread on-CPU samples, %d distinct leaf pcs; checked %d pcs "
          "covering %.1f %% of the samples" % (total, len(counts), len(results), 100.0 * checked / total))
    if call_errors:
        print("gdb_validate: %d breakpoint hits could not call the walker (gdb error), not checked" % call_errors)
    share = agree / checked if checked else 0.0
    print("gdb_validate: our frame sequence equals gdb's backtrace for %.2f %% of the checked samples" % (100 * share))
    ok = checked >= 0.7 * total and share >= 0.99
    print("target frame sequence equals gdb bt >= 99 %%: %s" % ("ok" if ok else "MISSED"))
    if not ok:  # say why gdb stopped short
        for e in errors[:5]:
            print("gdb_validate: gdb error: %s" % e)
        sys.stdout.write("gdb_validate: gdb's output (all in %s/gdb.out) ends:\n" % work
                         + (g.stdout + g.stderr).decode(errors="replace")[-2000:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
