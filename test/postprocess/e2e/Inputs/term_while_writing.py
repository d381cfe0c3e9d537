"""term_while_writing.py <fifo> <stdout-file> <command...>: run the command (osprey, which
will write an export into <fifo>) and send it SIGTERM while it is provably blocked in the
middle of post-processing, then print "exit=<status>" (128 + N when killed by signal N).

Determinism without sleeps: the FIFO is opened for reading first (non-blocking) and its
buffer shrunk to one page, and nothing is ever read, so the writer blocks once the buffer
is full; the signal is sent only after FIONREAD shows a full buffer, i.e. the driver has
finished running the program and is stuck writing the export. If that never happens within
120 s the command is killed and the failure printed."""
import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import time

F_SETPIPE_SZ = 1031
fifo, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
size = fcntl.fcntl(fd, F_SETPIPE_SZ, 4096)
with open(out, "wb") as stdout:
    p = subprocess.Popen(cmd, stdout=stdout)
deadline = time.monotonic() + 120
while True:
    queued = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    if queued >= size:
        p.send_signal(signal.SIGTERM)
        break
    if p.poll() is not None:
        print("term_while_writing: the command ended before blocking on the FIFO")
        break
    if time.monotonic() > deadline:
        print("term_while_writing: the FIFO never filled up; killing the command")
        p.kill()
        break
    time.sleep(0.01)
rc = p.wait()
os.close(fd)
print(f"exit={128 - rc if rc < 0 else rc}")
