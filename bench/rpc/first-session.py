#!/usr/bin/env python3
"""bench/rpc/first-session.py [SESSIONS]: where rivetd's memory for idle sessions goes, by
mapping. Starts rivetd as bench/rpc/run.py does, opens SESSIONS idle sessions (default 8) on the
fresh daemon ("cold"), closes them, opens SESSIONS again ("warm"), and prints how much each
mapping's RSS (/proc/PID/smaps) grew in each round. Needs the release build (`bench/run-all` or
`bench/rpc/run.py` makes it).
"""
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (bench/rpc/run.py: start_rivetd, hold, stop)


def rss_by_mapping(pid):
    """{file name, or [heap], [stack], [anon]: RSS KiB} of process PID."""
    sizes, name = collections.Counter(), None
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if len(fields) >= 5 and "-" in fields[0] and ":" in fields[3]:  # a mapping's first line
                name = os.path.basename(fields[5]) if len(fields) > 5 else "[anon]"
            elif fields[0] == "Rss:":
                sizes[name] += int(fields[1])
    return sizes


def main():
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    bins = os.path.join(run.ROOT, ".build", "release")
    home = tempfile.mkdtemp(prefix="rivet-bench-first-session-")
    try:
        state = os.path.join(home, "state", "rivet")
        os.makedirs(state, mode=0o700)
        subprocess.run([os.path.join(bins, "rivet-bench-rpc"), "provision", state], check=True)
        daemon, port = run.start_rivetd(bins, home, state)
        try:
            time.sleep(0.5)
            rounds = []
            for _ in range(2):
                before = rss_by_mapping(daemon.pid)
                holder = run.hold(bins, state, port, sessions)
                time.sleep(0.5)
                rounds.append((before, rss_by_mapping(daemon.pid)))
                run.stop(holder)
                time.sleep(0.5)
        finally:
            daemon.terminate()
            daemon.wait(timeout=20)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    (cold_before, cold), (warm_before, warm) = rounds
    print(f"rivetd RSS growth with {sessions} idle sessions, cold (fresh daemon) and warm (after they closed):")
    names = sorted(set(cold) | set(warm), key=lambda name: cold_before[name] - cold[name])
    for name in names:
        grown, regrown = cold[name] - cold_before[name], warm[name] - warm_before[name]
        if grown or regrown:
            print(f"  {name:<32} cold {grown:+6} KiB  warm {regrown:+6} KiB")
    total = sum(cold.values()) - sum(cold_before.values())
    again = sum(warm.values()) - sum(warm_before.values())
    print(f"  {'all':<32} cold {total:+6} KiB  warm {again:+6} KiB"
          f"  ({total / sessions:.0f} and {again / sessions:.0f} KiB per session)")


if __name__ == "__main__":
    main()
