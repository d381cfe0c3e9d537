"""closed_stdout.py <command...>: run the command with its stdout a pipe whose reading end
is already closed (like `| head -1` after head has exited, without the race), stderr
inherited; print "exit=<status>" (negative: killed by that signal)."""
import os
import subprocess
import sys

r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w)  # restores SIGPIPE's default in the child
os.close(w)
print(f"exit={p.returncode}")
