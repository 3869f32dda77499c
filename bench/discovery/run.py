#!/usr/bin/env python3
"""Discovery latency: from publishing a service to the browser's line about it.

Each round starts `rivet-browse --type T` and `avahi-browse -rp T` on a fresh service type,
gives both a second to start browsing, then publishes one service with a canonical Rivet TXT
record (`avahi-publish`) and times, from the moment avahi-publish is started, the arrival of
rivet-browse's "added" line and of avahi-browse's resolved ("=") line for it. Both browsers run
at the same time against the same avahi-daemon, so they see the same network.

Prints each round, the median of each, and the ratio rivet-browse / avahi-browse (target:
at most 1.1). Needs avahi-daemon running (`.ci/services start`) and a built rivet-browse:

    swift build -c release --product rivet-browse
    python3 bench/discovery/run.py --rivet-browse .build/release/rivet-browse --rounds 9
"""

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time


def read_until(processes, wanted, deadline):
    """Waits until `wanted[name](line)` is true for a line of every process.

    One thread per process blocks on its stdout and stamps each line the moment it is read,
    so neither browser's timing waits on the other's. Returns {name: monotonic arrival time}.
    Raises TimeoutError past `deadline`."""
    arrived = {}
    lock = threading.Lock()

    def reader(name):
        for raw in processes[name].stdout:
            now = time.monotonic()
            if wanted[name](raw.decode(errors="replace")):
                with lock:
                    arrived[name] = now
                return

    threads = [threading.Thread(target=reader, args=(name,), daemon=True) for name in processes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        missing = sorted(set(processes) - set(arrived))
        if missing:
            raise TimeoutError(f"no line from {missing}")
        return dict(arrived)


def stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def one_round(rivet_browse, index):
    service_type = f"_rvbench-{secrets.token_hex(3)}._tcp"
    name = f"Rivet bench {index} {secrets.token_hex(2)}"
    escaped = name.replace(" ", "\\032")
    hint = secrets.token_hex(8)
    browsers = {
        "rivet-browse": subprocess.Popen(
            [rivet_browse, "--type", service_type], stdout=subprocess.PIPE, stderr=subprocess.PIPE),
        "avahi-browse": subprocess.Popen(
            ["avahi-browse", "-rp", service_type], stdout=subprocess.PIPE, stderr=subprocess.PIPE),
    }
    wanted = {
        "rivet-browse": lambda line: '"event":"added"' in line and f'"name":"{name}"' in line,
        "avahi-browse": lambda line: line.startswith(f"=;") and f";{escaped};" in line,
    }
    publisher = None
    try:
        time.sleep(1.0)
        for browser, process in browsers.items():
            if process.poll() is not None:
                raise RuntimeError(f"{browser} exited early: {process.stderr.read().decode(errors='replace')}")
        start = time.monotonic()
        publisher = subprocess.Popen(
            ["avahi-publish", "-s", name, service_type, "7000", "v=1", f"h={hint}", "proto=rvd1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        arrived = read_until(browsers, wanted, start + 15)
        return {browser: (arrived[browser] - start) * 1000 for browser in browsers}
    finally:
        for process in list(browsers.values()) + ([publisher] if publisher else []):
            stop(process)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rivet-browse", default=".build/release/rivet-browse")
    parser.add_argument("--rounds", type=int, default=9)
    arguments = parser.parse_args()
    if not os.access(arguments.rivet_browse, os.X_OK):
        sys.exit(f"run.py: {arguments.rivet_browse} is not an executable; build it first "
                 "(swift build -c release --product rivet-browse)")

    times = {"rivet-browse": [], "avahi-browse": []}
    for index in range(1, arguments.rounds + 1):
        result = one_round(arguments.rivet_browse, index)
        for browser, milliseconds in result.items():
            times[browser].append(milliseconds)
        print(f"round {index}: rivet-browse {result['rivet-browse']:7.1f} ms   "
              f"avahi-browse {result['avahi-browse']:7.1f} ms", flush=True)

    ours = statistics.median(times["rivet-browse"])
    theirs = statistics.median(times["avahi-browse"])
    ratio = ours / theirs
    print(f"median over {arguments.rounds} rounds: rivet-browse {ours:.1f} ms, avahi-browse {theirs:.1f} ms")
    print(f"ratio rivet-browse / avahi-browse: {ratio:.3f} (target <= 1.1): {'ok' if ratio <= 1.1 else 'OVER TARGET'}")
    return 0 if ratio <= 1.1 else 1


if __name__ == "__main__":
    sys.exit(main())
