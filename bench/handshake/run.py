#!/usr/bin/env python3
"""bench/handshake: resumes per second (TLS 1.3 handshake + RVD1 resume) against
`openssl s_time -new` on a P-256 `openssl s_server -tls1_3`, same machine, same run;
and the memory per idle authenticated session.

Usage: python3 bench/handshake/run.py [--seconds S] [--idle N] [--skip-build]
Loopback (127.0.0.1) only. Prints both rates, their ratio (target >= 1.0); the server's CPU time
(user + system, from /proc/PID/stat over the measured loop, at the kernel's clock-tick
resolution) per handshake of each and their ratio (target <= 1.0), first each with its own
client (our resume loop: TLS 1.3 handshake and RVD1 resume; s_time -new), then with the same
client, s_time -new, against both (our server then does the TLS handshake alone); the rate of 2 resume loops at once against one server over the rate of
one (target >= 1.7); and KiB per session.
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from procstat import cpu_seconds, rss_kib  # noqa: E402  (bench/procstat.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(binary, state):
    server = subprocess.Popen([binary, "serve", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline())
    return server, port


def stop(process):
    if process.stdin:
        process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def rivet_rate(binary, work, seconds):
    state = os.path.join(work, "rate")
    server, port = start_server(binary, state)
    try:
        # Warm-up, then the measured loop.
        subprocess.run([binary, "resume", state, str(port), "1"], check=True, capture_output=True)
        before = cpu_seconds(server.pid)
        out = subprocess.run([binary, "resume", state, str(port), str(seconds)], check=True, capture_output=True, text=True)
        cpu = cpu_seconds(server.pid) - before
        count, elapsed = out.stdout.split()
        return int(count) / float(elapsed), int(count), float(elapsed), cpu / int(count)
    finally:
        stop(server)


def rivet_parallel_rate(binary, work, seconds, clients):
    """Resumes per second of CLIENTS resume loops at once against one server."""
    state = os.path.join(work, f"parallel-{clients}")
    server, port = start_server(binary, state)
    try:
        subprocess.run([binary, "resume", state, str(port), "1"], check=True, capture_output=True)
        loops = [subprocess.Popen([binary, "resume", state, str(port), str(seconds)], stdout=subprocess.PIPE, text=True)
                 for _ in range(clients)]
        total, longest = 0, 0.0
        for loop in loops:
            out, _ = loop.communicate()
            if loop.returncode != 0:
                raise RuntimeError(f"a parallel resume loop exited with status {loop.returncode}")
            count, elapsed = out.split()
            total, longest = total + int(count), max(longest, float(elapsed))
        return total / longest
    finally:
        stop(server)


def s_time(port, server_pid, seconds):
    """`openssl s_time -new` against the server on PORT: (connections/s, count, elapsed, the
    server's CPU seconds per connection)."""
    before = cpu_seconds(server_pid)
    started = time.monotonic()
    out = subprocess.run([OPENSSL, "s_time", "-connect", f"127.0.0.1:{port}", "-new", "-time", str(seconds)],
                         check=True, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    cpu = cpu_seconds(server_pid) - before
    match = re.search(r"(\d+) connections in [\d.]+s", out.stdout)
    if not match:
        raise RuntimeError("unexpected s_time output:\n" + out.stdout)
    count = int(match.group(1))
    return count / elapsed, count, elapsed, cpu / count


def openssl_rate(work, seconds):
    key = os.path.join(work, "p256-key.pem")
    cert = os.path.join(work, "p256-cert.pem")
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-subj", "/CN=bench", "-days", "1"],
                   check=True, capture_output=True)
    port = free_port()
    server = subprocess.Popen([OPENSSL, "s_server", "-accept", f"127.0.0.1:{port}", "-key", key, "-cert", cert,
                               "-tls1_3", "-quiet", "-naccept", "1000000"],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        return s_time(port, server.pid, seconds)
    finally:
        server.kill()
        server.wait()


def rivet_s_time(binary, work, seconds):
    """The same client as s_server's, `openssl s_time -new`, against our server: its TLS 1.3
    handshake alone (the client closes before any RVD1 preface)."""
    server, port = start_server(binary, os.path.join(work, "s_time"))
    try:
        return s_time(port, server.pid, seconds)
    finally:
        stop(server)


def idle_memory(binary, work, count):
    state = os.path.join(work, "idle")
    server, port = start_server(binary, state)
    try:
        subprocess.run([binary, "resume", state, str(port), "0.5"], check=True, capture_output=True)
        time.sleep(0.5)
        before = rss_kib(server.pid)
        holder = subprocess.Popen([binary, "hold", state, str(port), str(count)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = holder.stdout.readline().strip()
        if line != f"ready {count}":
            raise RuntimeError(f"hold did not open {count} sessions: {line!r}")
        time.sleep(1.0)
        after = rss_kib(server.pid)
        stop(holder)
        return (after - before) / count, before, after
    finally:
        stop(server)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10, help="length of each rate run (default 10)")
    parser.add_argument("--idle", type=int, default=200, help="idle sessions for the memory figure (default 200)")
    parser.add_argument("--skip-build", action="store_true", help="use the existing release build")
    args = parser.parse_args()
    if not args.skip_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "rivet-bench-handshake"], cwd=ROOT, check=True)
    binary = os.path.join(ROOT, ".build", "release", "rivet-bench-handshake")
    with tempfile.TemporaryDirectory(prefix="rivet-bench-") as work:
        ours, ours_count, ours_time, ours_cpu = rivet_rate(binary, work, args.seconds)
        parallel = rivet_parallel_rate(binary, work, args.seconds, 2)
        theirs, theirs_count, theirs_time, theirs_cpu = openssl_rate(work, int(args.seconds))
        _, same_count, _, same_cpu = rivet_s_time(binary, work, int(args.seconds))
        per_session, before, after = idle_memory(binary, work, args.idle)
    ratio = ours / theirs
    print(f"rivet resume (TLS 1.3 + RVD1):   {ours:8.1f} /s  ({ours_count} in {ours_time:.2f} s)")
    print(f"openssl s_time -new (P-256):     {theirs:8.1f} /s  ({theirs_count} in {theirs_time:.2f} s)")
    print(f"ratio:                           {ratio:8.2f}  (target >= 1.0: {'met' if ratio >= 1.0 else 'NOT met'})")
    cpu_ratio = ours_cpu / theirs_cpu
    print(f"server CPU per handshake:        {ours_cpu * 1e6:8.0f} us  (openssl s_server: {theirs_cpu * 1e6:.0f} us)")
    print(f"server CPU ratio (ours / s_server): {cpu_ratio:5.2f}  (target <= 1.0: {'met' if cpu_ratio <= 1.0 else 'NOT met'})")
    same_ratio = same_cpu / theirs_cpu
    print(f"same client (s_time -new), our server's CPU per TLS handshake: {same_cpu * 1e6:.0f} us ({same_count} handshakes)")
    print(f"server CPU ratio, same client (ours / s_server): {same_ratio:5.2f}  (target <= 1.0: "
          f"{'met' if same_ratio <= 1.0 else 'NOT met'})")
    scaling = parallel / ours
    print(f"2 parallel clients / 1 client:   {scaling:8.2f}  ({parallel:.1f} /s; target >= 1.7: "
          f"{'met' if scaling >= 1.7 else 'NOT met'})")
    print(f"memory per idle session:         {per_session:8.1f} KiB  (server RSS {before} -> {after} KiB over {args.idle} sessions)")
    return 0 if ratio >= 0.7 else 3


if __name__ == "__main__":
    sys.exit(main())
