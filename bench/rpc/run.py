#!/usr/bin/env python3
"""bench/rpc: round trips per second and p50/p99 latency through rivetd to a trivial backend,
for 1 and 8 sessions, against the same frames bounced by a minimal TLS echo (the same TLS 1.3
listener and RVD1 resume, then the connection answers each call itself: the physical floor of
TLS plus one hop); the ratio (targets: >= 0.9 of the echo's calls/s at 1 session, >= 1.0 at 8;
p99 at 1 session <= 1.5x the echo's); the server's CPU time per call (rivetd's, its backend's
reported apart, against the echo's: target <= 1.2x at 8 sessions; from /proc/PID/stat over each
whole load run, warm-up included, at the kernel's clock-tick resolution); and rivetd's memory per
idle session: from a daemon that never had one (what the target is about; it includes what the
first session touches once: code pages, allocator arenas), and, on a second daemon, after one
session came and went (what each further session costs).

Usage: python3 bench/rpc/run.py [--seconds S] [--debug] [--skip-build] [--bin-dir DIR]
Loopback (127.0.0.1) only. Builds release binaries unless --skip-build (or --debug).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from procstat import cpu_seconds, rss_kib  # noqa: E402  (bench/procstat.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRODUCTS = ["rivetd", "rivet-bench-rpc"]


def build(configuration):
    for product in PRODUCTS:
        subprocess.run(["swift", "build", "-c", configuration, "--product", product], cwd=ROOT, check=True)
    out = subprocess.run(["swift", "build", "-c", configuration, "--show-bin-path"], cwd=ROOT, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def environment(home):
    env = dict(os.environ)
    env.update({"HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_RUNTIME_DIR": home + "/run", "NO_COLOR": "1"})
    return env


def start_rivetd(bins, home, state):
    log_path = os.path.join(home, "rivetd.log")
    log = open(log_path, "w")
    daemon = subprocess.Popen(
        [os.path.join(bins, "rivetd"), "--listen", "127.0.0.1:0", "--schema",
         os.path.join(ROOT, "examples/schema/rivet.rktd"), "--application-id", "net.example.scoreboard",
         "--log-level", "warn", "--backend", os.path.join(bins, "rivet-bench-rpc"), "backend"],
        env=environment(home), stdout=subprocess.PIPE, stderr=log, text=True)
    # --log-level warn keeps per-session lines out of the measurement; the port comes from the
    # ready line rivetd prints on stdout once it accepts connections (docs/operations.md).
    line = daemon.stdout.readline()
    if not line:
        daemon.wait()
        raise RuntimeError("rivetd exited: " + open(log_path).read())
    ready = json.loads(line)
    if ready.get("event") != "ready":
        raise RuntimeError("rivetd printed no ready line: " + line)
    return daemon, ready["port"]


def children(pid):
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as listed:
            found += [int(child) for child in listed.read().split()]
    return found


def cpu_of(pids):
    """{pid: CPU seconds} of the processes in PIDS that still run."""
    times = {}
    for pid in pids:
        try:
            times[pid] = cpu_seconds(pid)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return times


def load(bins, state, port, sessions, seconds, server_pid, with_children=False):
    """Runs the load; its figures, and the server's CPU (and its children's: rivetd's backend)
    over the whole run, warm-up included, per call of the whole run."""
    before = cpu_seconds(server_pid)
    children_before = cpu_of(children(server_pid)) if with_children else {}
    out = subprocess.run([os.path.join(bins, "rivet-bench-rpc"), "load", state, str(port), str(sessions), str(seconds)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"load with {sessions} sessions failed: {out.stderr.strip()}")
    server_cpu = cpu_seconds(server_pid) - before
    children_after = cpu_of(children(server_pid)) if with_children else {}
    backend_cpu = sum(after - children_before.get(pid, 0.0) for pid, after in children_after.items())
    calls, secs, p50, p99, all_calls = out.stdout.split()
    return {"rate": int(calls) / int(secs), "p50": int(p50), "p99": int(p99), "all": int(all_calls),
            "cpu_us": server_cpu / int(all_calls) * 1e6, "backend_cpu_us": backend_cpu / int(all_calls) * 1e6}


def hold(bins, state, port, sessions):
    holder = subprocess.Popen([os.path.join(bins, "rivet-bench-rpc"), "hold", state, str(port), str(sessions)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if holder.stdout.readline().strip() != "ready":
        raise RuntimeError("hold did not get ready")
    return holder


def stop(process):
    if process.stdin:
        process.stdin.close()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def idle_memory_per_session(bins, state, port, pid, sessions=8):
    """rivetd's RSS growth (KiB) per session while SESSIONS idle sessions are open."""
    base = rss_kib(pid)
    holder = hold(bins, state, port, sessions)
    time.sleep(0.5)
    per_session = (rss_kib(pid) - base) / sessions
    stop(holder)
    return per_session


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--debug", action="store_true", help="use the debug build")
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--bin-dir", help="take rivetd and rivet-bench-rpc from this directory (for A/B runs)")
    args = parser.parse_args()
    configuration = "debug" if args.debug else "release"
    if args.bin_dir:
        bins = args.bin_dir
    elif args.skip_build:
        bins = os.path.join(ROOT, ".build", configuration)
    else:
        bins = build(configuration)

    home = tempfile.mkdtemp(prefix="rivet-bench-rpc-")
    state = os.path.join(home, "state", "rivet")
    os.makedirs(state, mode=0o700)
    subprocess.run([os.path.join(bins, "rivet-bench-rpc"), "provision", state], check=True)

    results = {}
    daemon, port = start_rivetd(bins, home, state)
    try:
        time.sleep(0.5)
        per_session = idle_memory_per_session(bins, state, port, daemon.pid)
        time.sleep(0.5)
        for sessions in (1, 8):
            results[("rivetd", sessions)] = load(bins, state, port, sessions, args.seconds, daemon.pid, with_children=True)
    finally:
        daemon.terminate()
        daemon.wait(timeout=20)

    # The same 8 idle sessions on a daemon that already served (and closed) one session.
    daemon, port = start_rivetd(bins, home, state)
    try:
        time.sleep(0.5)
        stop(hold(bins, state, port, 1))
        time.sleep(0.5)
        per_session_warm = idle_memory_per_session(bins, state, port, daemon.pid)
    finally:
        daemon.terminate()
        daemon.wait(timeout=20)

    echo = subprocess.Popen([os.path.join(bins, "rivet-bench-rpc"), "echo", state], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        echo_port = int(echo.stdout.readline())
        for sessions in (1, 8):
            results[("echo", sessions)] = load(bins, state, echo_port, sessions, args.seconds, echo.pid)
    finally:
        stop(echo)

    print(f"bench/rpc ({configuration} build, {args.seconds} s per run, loopback, {os.cpu_count()} cores)")
    print(f"{'path':<8} {'sessions':>8} {'calls/s':>10} {'p50 us':>8} {'p99 us':>8} {'CPU us/call':>11} {'backend':>8}")
    for (path, sessions), result in sorted(results.items()):
        backend = f"{result['backend_cpu_us']:>8.1f}" if path == "rivetd" else f"{'-':>8}"
        print(f"{path:<8} {sessions:>8} {result['rate']:>10.0f} {result['p50']:>8} {result['p99']:>8}"
              f" {result['cpu_us']:>11.1f} {backend}")
    print("(CPU us/call: the server process's user + system time over the whole run, warm-up included, per call;"
          " backend: rivetd's backend process, apart)")
    target = {1: 0.9, 8: 1.0}
    for sessions in (1, 8):
        ratio = results[("rivetd", sessions)]["rate"] / results[("echo", sessions)]["rate"]
        print(f"ratio rivetd/echo, {sessions} session{'s' if sessions > 1 else ''}: {ratio:.2f} (target >= {target[sessions]})")
    p99 = results[("rivetd", 1)]["p99"] / results[("echo", 1)]["p99"]
    print(f"p99 ratio rivetd/echo, 1 session: {p99:.2f} (target <= 1.5)")
    for sessions in (1, 8):
        cpu = results[("rivetd", sessions)]["cpu_us"] / results[("echo", sessions)]["cpu_us"]
        print(f"CPU per call ratio rivetd/echo, {sessions} session{'s' if sessions > 1 else ''}: {cpu:.2f}"
              + (" (target <= 1.2)" if sessions == 8 else ""))
    print(f"rivetd memory per idle session: {per_session:.0f} KiB (target <= 32)")
    print(f"rivetd memory per idle session after one came and went: {per_session_warm:.0f} KiB")


if __name__ == "__main__":
    sys.exit(main())
