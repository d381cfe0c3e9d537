"""Run an `osprey --attach` scenario (test/postprocess/e2e/attach-*.test).

usage: attach_run.py [--signal SIG --after SECONDS] -- TARGET... ++ OSPREY-ARGS...

Starts TARGET (stdout to a pipe), waits for its "ready" line, runs osprey with OSPREY-ARGS
where "{pid}" is replaced by the target's pid, optionally sends osprey SIG after SECONDS,
then prints, one per line: "osprey-exit=<n>", and right after osprey ended,
"target-tracer=<TracerPid>" and "target-state=<letter>" if the target still runs; then
sends the target SIGUSR1 (attach_target.c finishes at once) and prints the rest of its
stdout and "target-exit=<n>". osprey's stdout and stderr are
passed through unchanged (before those lines).
"""
import os
import signal
import subprocess
import sys
import time

args = sys.argv[1:]
sig, after = None, 0.0
while args and args[0] != "--":
    if args[0] == "--signal":
        sig = getattr(signal, "SIG" + args[1])
        args = args[2:]
    elif args[0] == "--after":
        after = float(args[1])
        args = args[2:]
    else:
        sys.exit("attach_run.py: unknown option " + args[0])
split = args.index("++")
target_cmd, osprey_args = args[1:split], args[split + 1:]

target = subprocess.Popen(target_cmd, stdout=subprocess.PIPE, text=True)
first = target.stdout.readline()
if first.strip() != "ready":
    sys.exit("attach_run.py: target did not become ready: %r" % first)
cmd = [a.replace("{pid}", str(target.pid)) for a in osprey_args]
osp = subprocess.Popen(cmd)
if sig is not None:
    time.sleep(after)
    osp.send_signal(sig)
rc = osp.wait(timeout=120)
sys.stdout.flush()
lines = ["osprey-exit=%d" % (128 - rc if rc < 0 else rc)]
if target.poll() is None:
    try:
        with open("/proc/%d/status" % target.pid) as f:
            status = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        lines.append("target-tracer=%s" % status["TracerPid"].strip())
        lines.append("target-state=%s" % status["State"].strip()[0])
    except OSError:
        pass
if target.poll() is None:
    try:
        target.send_signal(signal.SIGUSR1)
    except ProcessLookupError:
        pass
rest = target.stdout.read()
trc = target.wait(timeout=120)
print("\n".join(lines))
sys.stdout.write(rest)
print("target-exit=%d" % (128 - trc if trc < 0 else trc))
