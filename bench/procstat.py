"""bench/procstat.py: what the benchmarks read of a running process from /proc, in one place
(bench/rpc, bench/handshake and bench/scale import it)."""
import os

TICKS = os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    """The resident set size of process PID now, in KiB (VmRSS)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_seconds(pid):
    """User + system time of process PID (all its threads, those gone too), in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS
