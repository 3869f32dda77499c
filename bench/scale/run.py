#!/usr/bin/env python3
"""bench/scale: how rivetd and rivet-pair cost grows with the registry. Two registries, one of
10 paired devices and one of 10,000 (the real schema: `rivet-bench-rpc provision` makes the
registry through RivetDevicePairingStore with 8 devices whose credentials it keeps, then the rest
are inserted with SQLite directly in one transaction, each device with a scope and its `paired`
history entry, as RivetDevicePairingStore.insertPaired writes them). For each:
  - rivetd start to its ready line (START runs, median), from launching the process to reading
    the line, rivetd's CPU time by then (/proc/PID/stat, clock ticks) and its RSS when ready;
  - resume latency through rivetd, p50 and p99 of RESUMES resumes (TCP, TLS 1.3, RVD1 resume,
    close; one at a time, turn by turn as the 8 devices), and rivetd's RSS after them;
  - `rivet-pair --list --json` (LISTS runs, median): wall time, CPU time (user + system, from
    wait4) and peak RSS; its output must list every device. Beside it, the same listing (the same
    fields, one JSON object a device) by SQLite's own shell, `sqlite3 -readonly -json`, when it
    is installed: how the output's cost grows for a C program.
Target: each figure of the 10,000-device registry within 2x of the 10-device one's.

Usage: python3 bench/scale/run.py [--devices N] [--starts S] [--resumes R] [--lists L]
                                  [--skip-build] [--bin-dir DIR]
Loopback (127.0.0.1) only; the state lives in a temporary directory. Builds rivetd, rivet-pair
and rivet-bench-rpc in release mode unless --skip-build.
"""
import argparse
import json
import os
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from procstat import cpu_seconds, rss_kib  # noqa: E402  (bench/procstat.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRODUCTS = ["rivetd", "rivet-pair", "rivet-bench-rpc"]


def environment(home):
    env = dict(os.environ)
    env.update({"HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_RUNTIME_DIR": home + "/run", "NO_COLOR": "1"})
    return env


def fill(registry, count):
    """Adds COUNT devices to the registry at REGISTRY, in one transaction."""
    database = sqlite3.connect(registry, isolation_level=None)
    try:
        database.execute("PRAGMA foreign_keys = ON")
        fingerprint, application = database.execute(
            "SELECT server_fingerprint, application_id FROM paired_device LIMIT 1").fetchone()
        now_ms = int(time.time() * 1000)
        database.execute("BEGIN IMMEDIATE")
        for index in range(count):
            device = secrets.token_bytes(16)
            created = now_ms - (count - index) * 1000
            name = f"scale device {index}"
            database.execute(
                "INSERT INTO paired_device (device_id, display_name, application_id, server_fingerprint, created_ms,"
                " last_seen_ms, verifier) VALUES (?, ?, ?, ?, ?, NULL, ?)",
                (device, name, application, fingerprint, created, secrets.token_bytes(32)))
            database.execute("INSERT INTO device_scope (device_id, scope) VALUES (?, 'viewer')", (device,))
            database.execute(
                "INSERT INTO device_event (device_id, time_ms, kind, name, detail) VALUES (?, ?, 'paired', ?, ?)",
                (device, created, name, "how is not recorded"))
        database.execute("COMMIT")
    finally:
        database.close()


def start_rivetd(bins, home):
    started = time.monotonic()
    log = open(os.path.join(home, "rivetd.log"), "a")
    daemon = subprocess.Popen(
        [os.path.join(bins, "rivetd"), "--listen", "127.0.0.1:0", "--schema",
         os.path.join(ROOT, "examples/schema/rivet.rktd"), "--application-id", "net.example.scoreboard",
         "--log-level", "warn", "--backend", os.path.join(bins, "rivet-bench-rpc"), "backend"],
        env=environment(home), stdout=subprocess.PIPE, stderr=log, text=True)
    line = daemon.stdout.readline()
    elapsed = time.monotonic() - started
    if not line or json.loads(line).get("event") != "ready":
        daemon.wait()
        raise RuntimeError("rivetd printed no ready line: " + open(os.path.join(home, "rivetd.log")).read())
    return daemon, json.loads(line)["port"], elapsed


def stop(daemon):
    daemon.terminate()
    daemon.wait(timeout=20)


# The same listing by SQLite's own shell (C): one JSON object per device with the same fields.
FLOOR_QUERY = """
SELECT lower(hex(p.device_id)) AS device_id, p.display_name AS name, p.application_id,
       lower(hex(p.server_fingerprint)) AS server_fingerprint, json_group_array(s.scope) AS scopes,
       strftime('%Y-%m-%dT%H:%M:%fZ', p.created_ms / 1000.0, 'unixepoch') AS created, p.last_seen_ms AS last_seen
FROM paired_device p LEFT JOIN device_scope s USING (device_id) GROUP BY p.device_id ORDER BY p.created_ms, p.device_id
"""


def sqlite3_floor(registry, devices, runs):
    """Median wall and CPU ms of `sqlite3 -readonly -json` listing the registry (None when the
    sqlite3 shell is not installed): what the same output costs a C program."""
    if not shutil.which("sqlite3"):
        return None, None
    walls, cpus = [], []
    for _ in range(runs):
        started = time.monotonic()
        child = subprocess.Popen(["sqlite3", "-readonly", "-json", registry, FLOOR_QUERY], stdout=subprocess.PIPE)
        lines = child.stdout.read().count(b"\n")
        _, status, usage = os.wait4(child.pid, 0)
        walls.append(time.monotonic() - started)
        cpus.append(usage.ru_utime + usage.ru_stime)
        if status != 0 or lines != devices:
            raise RuntimeError(f"sqlite3 listed {lines} of {devices} devices (wait status {status})")
    return statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3


def measure(bins, devices, args):
    home = tempfile.mkdtemp(prefix=f"rivet-bench-scale-{devices}-")
    state = os.path.join(home, "state", "rivet")
    os.makedirs(state, mode=0o700)
    subprocess.run([os.path.join(bins, "rivet-bench-rpc"), "provision", state], check=True)
    fill(os.path.join(state, "pairing.sqlite3"), devices - 8)
    figures = {}

    starts, ready_rss, ready_cpu = [], [], []
    for _ in range(args.starts):
        daemon, port, elapsed = start_rivetd(bins, home)
        starts.append(elapsed)
        ready_rss.append(rss_kib(daemon.pid))
        ready_cpu.append(cpu_seconds(daemon.pid))
        stop(daemon)
    figures["start_cpu"] = statistics.median(ready_cpu) * 1e3
    figures["start"] = statistics.median(starts) * 1e3
    figures["start_spread"] = (min(starts) * 1e3, max(starts) * 1e3)
    figures["ready_rss"] = statistics.median(ready_rss)

    daemon, port, _ = start_rivetd(bins, home)
    try:
        out = subprocess.run([os.path.join(bins, "rivet-bench-rpc"), "resume", state, str(port), str(args.resumes)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"the resumes failed: {out.stderr.strip()}")
        _, p50, p99 = (int(field) for field in out.stdout.split())
        figures["resume_p50"], figures["resume_p99"] = p50, p99
        figures["rss"] = rss_kib(daemon.pid)
    finally:
        stop(daemon)

    walls, cpus, peaks = [], [], []
    with open(os.path.join(home, "list.json"), "wb") as listed:
        for _ in range(args.lists):
            listed.seek(0)
            listed.truncate()
            started = time.monotonic()
            child = subprocess.Popen([os.path.join(bins, "rivet-pair"), "--list", "--json"], env=environment(home),
                                     stdout=listed)
            _, status, usage = os.wait4(child.pid, 0)
            walls.append(time.monotonic() - started)
            if status != 0:
                raise RuntimeError(f"rivet-pair --list --json failed (wait status {status})")
            cpus.append(usage.ru_utime + usage.ru_stime)
            peaks.append(usage.ru_maxrss)
    with open(os.path.join(home, "list.json")) as listed:
        text = listed.read()
    listed_count = sum(1 for line in text.splitlines() if json.loads(line).get("device_id"))
    if listed_count != devices:
        raise RuntimeError(f"rivet-pair --list --json listed {listed_count} of {devices} devices")
    figures["list_wall"] = statistics.median(walls) * 1e3
    figures["floor_wall"], figures["floor_cpu"] = sqlite3_floor(os.path.join(state, "pairing.sqlite3"), devices, args.lists)
    figures["list_cpu"] = statistics.median(cpus) * 1e3
    figures["list_rss"] = statistics.median(peaks)
    subprocess.run(["rm", "-rf", home], check=True)
    return figures


def main():
    parser = argparse.ArgumentParser(description="rivetd and rivet-pair with 10 and with 10,000 paired devices")
    parser.add_argument("--devices", type=int, default=10_000, help="devices in the large registry (default 10000)")
    parser.add_argument("--starts", type=int, default=7, help="rivetd starts per registry (default 7)")
    parser.add_argument("--resumes", type=int, default=500, help="resumes per registry (default 500)")
    parser.add_argument("--lists", type=int, default=11, help="rivet-pair --list --json runs per registry (default 11)")
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--bin-dir", help="take the executables from this directory (for A/B runs)")
    args = parser.parse_args()
    if args.bin_dir:
        bins = args.bin_dir
    else:
        if not args.skip_build:
            for product in PRODUCTS:
                subprocess.run(["swift", "build", "-c", "release", "--product", product], cwd=ROOT, check=True,
                               stdout=sys.stderr)
        bins = os.path.join(ROOT, ".build", "release")
    os.umask(0o077)  # the registry's -wal and -shm files, as rivetd requires
    small, large = measure(bins, 10, args), measure(bins, args.devices, args)
    rows = [
        ("rivetd start to ready line (ms, median)", "start", "{:.1f}"),
        ("rivetd CPU to the ready line (ms, median)", "start_cpu", "{:.0f}"),
        ("rivetd RSS when ready (KiB)", "ready_rss", "{:.0f}"),
        ("resume p50 (us)", "resume_p50", "{:.0f}"),
        ("resume p99 (us)", "resume_p99", "{:.0f}"),
        ("rivetd RSS after the resumes (KiB)", "rss", "{:.0f}"),
        ("rivet-pair --list --json wall (ms, median)", "list_wall", "{:.1f}"),
        ("rivet-pair --list --json CPU (ms, median)", "list_cpu", "{:.1f}"),
        ("rivet-pair --list --json peak RSS (KiB)", "list_rss", "{:.0f}"),
    ]
    print(f"bench/scale: 10 devices against {args.devices}; {args.starts} starts, {args.resumes} resumes, "
          f"{args.lists} lists each; {os.cpu_count()} cores")
    print(f"{'figure':<44} {'10':>10} {args.devices:>10} {'ratio':>6}")
    for label, key, shape in rows:
        ratio = large[key] / small[key]
        print(f"{label:<44} {shape.format(small[key]):>10} {shape.format(large[key]):>10} {ratio:>6.2f}")
    if small["floor_wall"] is not None:
        for label, key in [("wall", "floor_wall"), ("CPU", "floor_cpu")]:
            print(f"{'the same list by sqlite3 -json, ' + label + ' (ms, median)':<44} {small[key]:>10.1f} {large[key]:>10.1f}"
                  f" {large[key] / small[key]:>6.2f}")
    print("rivetd start spread (ms): {:.1f}-{:.1f} and {:.1f}-{:.1f}".format(*small["start_spread"], *large["start_spread"]))
    for label, key in [("resume p99", "resume_p99"), ("rivet-pair --list --json time", "list_wall"),
                       ("rivetd start to ready", "start"), ("rivetd RSS", "rss")]:
        ratio = large[key] / small[key]
        print(f"scale ratio, {label}: {ratio:.2f} (target <= 2: {'met' if ratio <= 2 else 'NOT met'})")


if __name__ == "__main__":
    sys.exit(main())
