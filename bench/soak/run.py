#!/usr/bin/env python3
"""bench/soak: hours of use in minutes. rivetd with the example backend under churn for a fixed
time: DEVICES paired companions each loop (connect, call current-score, read and write state
home-team, call refresh-score and wait for its score-changed event, disconnect); every few
seconds a new companion pairs (rivet-pair --open, --connect, --confirm), makes one round, is
revoked and is refused once; now and then the backend is killed (rivetd restarts it). At each
minute the churn pauses until nothing is in flight, and rivetd's RSS, open descriptors and
threads are read. At the end rivetd stops and the registry gets `PRAGMA integrity_check`.

Each device runs in a network namespace of its own, with its own address in 198.18.0.0/24 (the
range RFC 2544 reserves for benchmarks) on a bridge this script creates and removes, and rivetd
listens on the bridge: as with phones on a LAN, every device has its own address, so rivetd's
per-address admission cap (4 pending connections) meets the load it was designed for. Needs
root (ip netns) and iproute2. Slots 0 to DEVICES-2 hold one device each for the whole run; the
last slot pairs a new device every PAIR_EVERY seconds, uses it, revokes it (its next session
must be refused) and pairs the next, so at most DEVICES sessions are open at once.

Targets: RSS after the first minute grows by at most 1 MiB, descriptors flat, no unexpected
failure (the only failure the design allows is rivet.backend-unavailable while the backend
restarts), integrity_check "ok". Exit status 0 when every target is met, 1 when one is not.

Usage: python3 bench/soak/run.py [--minutes M] [--devices N] [--pair-every S] [--kill-every S]
                                 [--skip-build] [--bin-dir DIR]
Loopback (127.0.0.1) only; everything lives in a temporary directory removed at the end.
"""
import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRODUCTS = ["rivetd", "rivet-pair", "scoreboard-backend", "scoreboard-companion"]
APPLICATION = "org.example.scoreboard"
ALLOWED = "rivet.backend-unavailable"


def build():
    for product in PRODUCTS:
        subprocess.run(["swift", "build", "-c", "release", "--product", product], cwd=ROOT, check=True,
                       stdout=sys.stderr)
    out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def make_home(base, name):
    home = os.path.join(base, name)
    for sub in ("", "/state", "/run"):
        os.makedirs(home + sub, mode=0o700, exist_ok=True)
    env = dict(os.environ)
    env.update({"HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_RUNTIME_DIR": home + "/run", "NO_COLOR": "1"})
    return env


def proc_status(pid):
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "Threads"):
                values[key] = int(rest.split()[0])
    values["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return values


def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


class Network:
    """A bridge with rivetd's address and one namespace per device slot, each with its own address."""

    SERVER = "198.18.0.1"

    def __init__(self, slots):
        tag = os.getpid() % 100000
        self.bridge = f"rvsoak{tag}"
        self.namespaces = [f"rvsoak{tag}-{slot}" for slot in range(slots)]
        self.made = []
        self.ip("link", "add", self.bridge, "type", "bridge")
        self.made.append(("link", self.bridge))
        self.ip("addr", "add", f"{self.SERVER}/24", "dev", self.bridge)
        self.ip("link", "set", self.bridge, "up")
        for slot, namespace in enumerate(self.namespaces):
            self.ip("netns", "add", namespace)
            self.made.append(("netns", namespace))
            host_end = f"rvs{tag}v{slot}"
            self.ip("link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", namespace)
            self.ip("link", "set", host_end, "master", self.bridge, "up")
            self.ip("-n", namespace, "addr", "add", f"198.18.0.{10 + slot}/24", "dev", "eth0")
            self.ip("-n", namespace, "link", "set", "eth0", "up")
            self.ip("-n", namespace, "link", "set", "lo", "up")

    @staticmethod
    def ip(*arguments):
        subprocess.run(["ip", *arguments], check=True, capture_output=True, text=True)

    def inside(self, slot, command):
        return ["ip", "netns", "exec", self.namespaces[slot], *command]

    def remove(self):
        for kind, name in reversed(self.made):
            subprocess.run(["ip", kind, "del", name], capture_output=True)


class Tally:
    """Counts shared by the worker threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {"rounds": 0, "allowed_failures": 0, "pairings": 0, "revocations": 0,
                       "refused_after_revoke": 0, "backend_kills": 0}
        self.unexpected = []

    def add(self, key, amount=1):
        with self.lock:
            self.counts[key] += amount

    def fail(self, what):
        with self.lock:
            self.unexpected.append(what)
        print(f"soak: unexpected: {what}", file=sys.stderr, flush=True)


class Gate:
    """Lets the minute sampler stop new work and wait until none is in flight."""

    def __init__(self):
        self.condition = threading.Condition()
        self.open = True
        self.busy = 0

    def enter(self):
        with self.condition:
            while not self.open:
                self.condition.wait()
            self.busy += 1

    def leave(self):
        with self.condition:
            self.busy -= 1
            self.condition.notify_all()

    def quiesce(self):
        with self.condition:
            self.open = False
            while self.busy:
                self.condition.wait()

    def reopen(self):
        with self.condition:
            self.open = True
            self.condition.notify_all()


class Soak:
    def __init__(self, args, bins, base, network):
        self.args, self.bins, self.base, self.network = args, bins, base, network
        self.tally, self.gate = Tally(), Gate()
        self.stop = threading.Event()
        self.desktop = make_home(base, "desktop")
        self.serial = 0

    def tool(self, name):
        return os.path.join(self.bins, name)

    def start_rivetd(self):
        self.log = open(os.path.join(self.base, "rivetd.log"), "w")
        self.rivetd = subprocess.Popen(
            [self.tool("rivetd"), "--listen", f"{Network.SERVER}:0", "--no-advertise", "--schema", os.path.join(ROOT, "examples/schema/rivet.rktd"),
             "--application-id", APPLICATION, "--log-level", "warn", "--backend", self.tool("scoreboard-backend")],
            env=self.desktop, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.rivetd.stdout.readline()
        ready = json.loads(line) if line else {}
        if ready.get("event") != "ready":
            raise RuntimeError("rivetd did not start: " + open(self.log.name).read())
        self.port = ready["port"]

    def pair(self, slot, name, scopes):
        """Pairs a companion called NAME, in SLOT's namespace and a home of its own; returns (device
        ID, credential file)."""
        env = make_home(self.base, name)
        opened = subprocess.run([self.tool("rivet-pair"), "--open"], env=self.desktop, capture_output=True, text=True, timeout=30)
        if opened.returncode != 0:
            raise RuntimeError(f"rivet-pair --open: {opened.stderr.strip()}")
        connect = subprocess.Popen(
            self.network.inside(slot, [self.tool("rivet-pair"), "--connect", f"{Network.SERVER}:{self.port}",
                                       "--application-id", APPLICATION, "--device-name", name, "--json"]),
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        confirm = None
        try:
            code = self.code_line(connect, "rivet-pair --connect")
            if not code:
                raise RuntimeError(f"rivet-pair --connect ended without a code: {connect.stderr.read().strip()}")
            command = [self.tool("rivet-pair"), "--confirm", "--code", code, "--json"]
            for scope in scopes:
                command += ["--scope", scope]
            confirm = subprocess.Popen(command, env=self.desktop, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if self.code_line(confirm, "rivet-pair --confirm") != code:
                raise RuntimeError("the two sides showed different codes")
            connect.stdin.write("y\n")
            connect.stdin.close()
            paired = json.loads(connect.stdout.read())
            if connect.wait(timeout=30) != 0 or confirm.wait(timeout=30) != 0:
                raise RuntimeError(f"pairing {name} failed: {connect.stderr.read()} {confirm.stderr.read()}")
        finally:
            for process in (connect, confirm):
                if process and process.poll() is None:
                    process.kill()
                    process.wait()
        self.tally.add("pairings")
        return paired["device_id"], paired["credential_file"]

    @staticmethod
    def code_line(process, what):
        for line in process.stderr:
            if line.startswith("code: "):
                return "".join(ch for ch in line if ch.isdigit())
        return ""

    def round(self, slot, credential, team):
        """One companion session from SLOT's namespace; returns (exit status, stderr)."""
        out = subprocess.run(
            self.network.inside(slot, [self.tool("scoreboard-companion"), "--gateway", f"{Network.SERVER}:{self.port}",
                                       "--credential", credential, "--home-team", "--set-home-team", team, "--refresh"]),
            env=self.desktop, capture_output=True, text=True, timeout=60)
        return out.returncode, out.stderr.strip()

    def count(self, what, status, err):
        if status == 0:
            self.tally.add("rounds")
        elif ALLOWED in err:
            self.tally.add("allowed_failures")
        else:
            self.tally.fail(f"{what}: status {status}: {err}")

    def device_loop(self, slot, credential):
        while not self.stop.is_set():
            self.gate.enter()
            try:
                self.count(f"device {slot}", *self.round(slot, credential, f"Team {slot}"))
            except Exception as error:  # a hang past the timeout counts too
                self.tally.fail(f"device {slot}: {error}")
            finally:
                self.gate.leave()
            time.sleep(random.uniform(0, 0.2))

    def churn_loop(self, slot):
        """The last slot: pair a new device, use it until the next pairing is due, revoke it, check
        that it is refused, and pair the next."""
        while not self.stop.is_set():
            self.gate.enter()
            try:
                self.serial += 1
                device, credential = self.pair(slot, f"churn-{self.serial}", ["viewer", "controller"])
            except Exception as error:
                self.tally.fail(f"pairing churn-{self.serial}: {error}")
                self.gate.leave()
                self.stop.wait(1)
                continue
            self.gate.leave()
            due = time.monotonic() + self.args.pair_every
            while not self.stop.is_set() and time.monotonic() < due:
                self.gate.enter()
                try:
                    self.count(f"churn-{self.serial}", *self.round(slot, credential, "Churn"))
                except Exception as error:
                    self.tally.fail(f"churn-{self.serial}: {error}")
                finally:
                    self.gate.leave()
            self.gate.enter()
            try:
                revoked = subprocess.run([self.tool("rivet-pair"), "--revoke", device], env=self.desktop,
                                         capture_output=True, text=True, timeout=30)
                if revoked.returncode != 0:
                    raise RuntimeError(f"rivet-pair --revoke: {revoked.stderr.strip()}")
                self.tally.add("revocations")
                status, err = self.round(slot, credential, "Revoked")
                if status == 0:
                    self.tally.fail(f"revoked device {device} was served")
                else:
                    self.tally.add("refused_after_revoke")
            except Exception as error:
                self.tally.fail(f"revoking churn-{self.serial}: {error}")
            finally:
                self.gate.leave()

    def kill_loop(self):
        """Kills the backend now and then, and waits (holding the gate) until rivetd started the next."""
        while not self.stop.wait(self.args.kill_every):
            self.gate.enter()
            try:
                killed = children(self.rivetd.pid)
                for pid in killed:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        self.tally.add("backend_kills")
                    except ProcessLookupError:
                        pass
                deadline = time.monotonic() + 30
                while not [pid for pid in children(self.rivetd.pid) if pid not in killed]:
                    if time.monotonic() > deadline:
                        self.tally.fail("rivetd did not restart the backend within 30 s")
                        break
                    time.sleep(0.05)
            finally:
                self.gate.leave()

    def sample(self):
        self.gate.quiesce()
        try:
            time.sleep(1.0)  # sessions that just ended are torn down
            if self.args.keep:  # what each descriptor is, to tell a leak from a transient
                with open(os.path.join(self.base, "descriptors"), "a") as out:
                    fds = sorted(os.listdir(f"/proc/{self.rivetd.pid}/fd"), key=int)
                    out.write(" ".join(f"{fd}:{os.readlink(f'/proc/{self.rivetd.pid}/fd/{fd}')}" for fd in fds) + "\n")
            return proc_status(self.rivetd.pid)
        finally:
            self.gate.reopen()

    def run(self):
        self.start_rivetd()
        steady = self.args.devices - 1
        credentials = [self.pair(slot, f"device-{slot}", ["viewer", "controller"])[1] for slot in range(steady)]
        workers = [threading.Thread(target=self.device_loop, args=(slot, credential), daemon=True)
                   for slot, credential in enumerate(credentials)]
        workers += [threading.Thread(target=self.churn_loop, args=(steady,), daemon=True),
                    threading.Thread(target=self.kill_loop, daemon=True)]
        start = time.monotonic()
        for worker in workers:
            worker.start()
        samples = [(0, self.sample())]
        print(f"{'minute':>6} {'RSS KiB':>8} {'fds':>5} {'threads':>7} {'rounds':>7} {'allowed':>7} {'pairings':>8} "
              f"{'kills':>5} {'unexpected':>10}", flush=True)
        self.print_row(0, samples[0][1])
        for minute in range(1, self.args.minutes + 1):
            time.sleep(max(0, start + 60 * minute - time.monotonic()))
            if self.rivetd.poll() is not None:
                self.tally.fail(f"rivetd exited with status {self.rivetd.returncode}")
                break
            samples.append((minute, self.sample()))
            self.print_row(minute, samples[-1][1])
        self.stop.set()
        self.gate.reopen()
        for worker in workers:
            worker.join(timeout=90)
        self.rivetd.terminate()
        status = self.rivetd.wait(timeout=30)
        if status != 0:
            self.tally.fail(f"rivetd exited with status {status} after SIGTERM")
        return samples

    def print_row(self, minute, values):
        counts = self.tally.counts
        print(f"{minute:>6} {values['VmRSS']:>8} {values['fds']:>5} {values['Threads']:>7} {counts['rounds']:>7} "
              f"{counts['allowed_failures']:>7} {counts['pairings']:>8} {counts['backend_kills']:>5} "
              f"{len(self.tally.unexpected):>10}", flush=True)

    def integrity(self):
        path = os.path.join(self.desktop["XDG_STATE_HOME"], "rivet", "pairing.sqlite3")
        database = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return database.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            database.close()


def main():
    parser = argparse.ArgumentParser(description="rivetd under churn for a fixed time (bench/soak)")
    parser.add_argument("--minutes", type=int, default=10, help="how long (default 10)")
    parser.add_argument("--devices", type=int, default=8, help="device slots, the last one for pairing churn (default 8)")
    parser.add_argument("--pair-every", type=float, default=5, help="seconds a churn device is used before revocation (default 5)")
    parser.add_argument("--kill-every", type=float, default=45, help="seconds between backend kills (default 45)")
    parser.add_argument("--skip-build", action="store_true", help="use .build/release as it is")
    parser.add_argument("--bin-dir", help="take the programs from this directory")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (rivetd.log; descriptors: rivetd's open files at each minute) and name it")
    args = parser.parse_args()
    if args.minutes < 2:
        parser.error("--minutes must be at least 2: RSS growth is measured after the first minute")
    if not 2 <= args.devices <= 8:
        parser.error("--devices must be 2 to 8 (rivetd serves 8 sessions at once)")
    if os.geteuid() != 0:
        parser.error("bench/soak needs root: each device runs in a network namespace of its own (ip netns)")
    bins = args.bin_dir or (os.path.join(ROOT, ".build", "release") if args.skip_build else build())
    base = tempfile.mkdtemp(prefix="rivet-soak-")
    network = Network(args.devices)
    soak = Soak(args, bins, base, network)
    try:
        samples = soak.run()
        integrity = soak.integrity()
    finally:
        if getattr(soak, "rivetd", None) and soak.rivetd.poll() is None:
            soak.rivetd.kill()
        network.remove()
        if args.keep:
            print(f"bench/soak: kept {base}", file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", base])

    counts = soak.tally.counts
    first = dict(samples)[1] if len(samples) > 1 else samples[-1][1]
    last = samples[-1][1]
    growth = last["VmRSS"] - first["VmRSS"]
    fd_values = [values["fds"] for minute, values in samples if minute >= 1]
    checks = [
        (f"RSS growth after minute 1: {growth} KiB", growth <= 1024, "<= 1024 KiB"),
        (f"descriptors from minute 1: {min(fd_values)}..{max(fd_values)}", max(fd_values) == min(fd_values), "flat"),
        (f"unexpected failures: {len(soak.tally.unexpected)}", not soak.tally.unexpected, "0"),
        (f"registry integrity_check: {integrity}", integrity == "ok", "ok"),
    ]
    print(f"bench/soak: {samples[-1][0]} min, {args.devices} devices; {counts['rounds']} rounds served, "
          f"{counts['allowed_failures']} failed with {ALLOWED}; {counts['pairings']} pairings, "
          f"{counts['revocations']} revocations ({counts['refused_after_revoke']} refused after), "
          f"{counts['backend_kills']} backend kills")
    for what, met, target in checks:
        print(f"{what}  (target {target}: {'met' if met else 'NOT met'})")
    for line in soak.tally.unexpected[:10]:
        print(f"  unexpected: {line}")
    return 0 if all(met for _, met, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
