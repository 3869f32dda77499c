#!/usr/bin/env python3
"""timed.py COMMAND [ARGUMENT...]: runs COMMAND with its standard output on /dev/null and prints
`WALL_S CPU_S`: its wall time and its CPU time (user + system, all its threads, from wait4's
resource usage), in seconds."""
import os
import subprocess
import sys
import time

with open(os.devnull, "wb") as null:
    started = time.monotonic()
    child = subprocess.Popen(sys.argv[1:], stdout=null)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
    sys.exit(f"timed.py: {sys.argv[1]} failed (wait status {status})")
print(f"{wall:.6f} {usage.ru_utime + usage.ru_stime:.6f}")
