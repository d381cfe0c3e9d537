"""Run COMMAND and send it SIG one second after it has a child process named NAME (the
program the driver runs), or SECONDS after start with --after; pass its stdout through,
then print "exit=<n>" (128 + N for death by signal N). With --group, COMMAND runs in a
process group of its own and SIG goes to the whole group, as a terminal's Ctrl-C or
`kill -INT -<pgid>` does: the program gets it from the sender and again from the driver.
usage: signal_after.py [--group] SIG NAME|--after SECONDS COMMAND...
(test/postprocess/e2e/profile-interrupt*.test)"""
import glob
import os
import signal
import subprocess
import sys
import time


def has_child(pid, name):
    for path in glob.glob("/proc/%d/task/*/children" % pid):
        try:
            with open(path) as f:
                kids = f.read().split()
        except OSError:
            continue
        for k in kids:
            try:
                with open("/proc/%s/comm" % k) as f:
                    if f.read().strip() == name:
                        return True
            except OSError:
                pass
    return False


group = sys.argv[1] == "--group"
if group:
    del sys.argv[1]
sig = getattr(signal, "SIG" + sys.argv[1])
if sys.argv[2] == "--after":
    name, delay, cmd = None, float(sys.argv[3]), sys.argv[4:]
else:
    name, delay, cmd = sys.argv[2], 1.0, sys.argv[3:]
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=group)
if name is not None:
    deadline = time.time() + 120
    while not has_child(p.pid, name) and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
time.sleep(delay)
if group:
    os.killpg(p.pid, sig)
else:
    p.send_signal(sig)
out = p.stdout.read()
rc = p.wait(timeout=120)
sys.stdout.write(out)
print("exit=%d" % (128 - rc if rc < 0 else rc))
