"""Readings of this machine and its processes from /proc."""

import os
import platform
import subprocess
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024


def proc_status_kib(pid: int, field: str):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _stat_fields(stat_path: Path):
    """The fields of a /proc/<pid>/stat line after the command name (which may hold spaces and
    parentheses), from the state on: minflt is [7], majflt [9], utime [11], stime [12]."""
    stat = stat_path.read_text()
    return stat[stat.rindex(")") + 2 :].split()


def proc_cpu_seconds(pid: int):
    """utime + stime of the process (all its threads), in seconds."""
    try:
        fields = _stat_fields(Path(f"/proc/{pid}/stat"))
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, ValueError, IndexError):
        return None



def proc_counters(pid: int, proc_root: Path = Path("/proc")):
    """What a process has cost so far, or None once it is gone: user and system CPU and page
    faults (every thread, exited ones included), and context switches and the time its threads
    were runnable but waited for a CPU (summed over the threads alive now: a thread that exited
    takes its share along). System CPU and minor faults grow where the kernel's work for the
    process grows (page cache, memory); runqueue waiting grows where it competes for a core."""
    base = proc_root / str(pid)
    try:
        fields = _stat_fields(base / "stat")
        counters = {"user_cpu_s": int(fields[11]) / CLK_TCK, "system_cpu_s": int(fields[12]) / CLK_TCK,
                    "minor_faults": int(fields[7]), "major_faults": int(fields[9]),
                    "voluntary_switches": 0, "involuntary_switches": 0, "runqueue_wait_s": 0.0}
        threads = list((base / "task").iterdir())
    except (OSError, ValueError, IndexError):
        return None
    for thread in threads:
        try:
            for line in (thread / "status").read_text().splitlines():
                name, _, value = line.partition(":")
                if name == "voluntary_ctxt_switches":
                    counters["voluntary_switches"] += int(value)
                elif name == "nonvoluntary_ctxt_switches":
                    counters["involuntary_switches"] += int(value)
            # schedstat: time on a CPU, time waiting on a runqueue (ns), timeslices.
            counters["runqueue_wait_s"] += int((thread / "schedstat").read_text().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            continue  # the thread exited between the listing and the reading
    return counters


def counters_delta(before, after):
    """How much each counter grew between two proc_counters readings (None if either is)."""
    if before is None or after is None:
        return None
    return {name: round(after[name] - before[name], 3) if isinstance(after[name], float) else after[name] - before[name]
            for name in after if name in before}


def steal_seconds():
    """CPU time the hypervisor gave to others while this machine wanted it, all CPUs, so far
    (the steal column of /proc/stat), or None where that is not available. A run during which
    it grows competed with work outside the machine."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
        return int(fields[8]) / CLK_TCK if fields[0] == "cpu" and len(fields) > 8 else None
    except (OSError, ValueError, IndexError):
        return None


class CpuQuota:
    """A cgroup that holds one broker to a share of one CPU's time (`--broker-cpu-quota`): with
    both brokers on the same budget, a throughput figure measures the broker, not the client
    that shares its cores. Uses cgroup v2's cpu.max where the cpu controller is there, else
    v1's CFS quota."""

    PERIOD_US = 100_000

    def __init__(self, name: str, fraction: float, v2_root: Path = Path("/sys/fs/cgroup"),
                 v1_root: Path = Path("/sys/fs/cgroup/cpu")):
        if not 0 < fraction <= (os.cpu_count() or 1):
            raise ValueError(f"a CPU quota must be above 0 and at most the CPU count, not {fraction}")
        quota_us = max(1000, round(fraction * self.PERIOD_US))
        controllers = v2_root / "cgroup.controllers"
        if controllers.exists() and "cpu" in controllers.read_text().split():
            self.path = v2_root / name
            settings = {"cpu.max": f"{quota_us} {self.PERIOD_US}"}
            enable = v2_root / "cgroup.subtree_control"
        elif (v1_root / "cpu.cfs_quota_us").exists():
            self.path = v1_root / name
            settings = {"cpu.cfs_period_us": str(self.PERIOD_US), "cpu.cfs_quota_us": str(quota_us)}
            enable = None
        else:
            raise ValueError("no cgroup cpu controller found (cgroup v2 cpu.max or v1 cpu.cfs_quota_us)")
        try:
            if enable is not None:
                enable.write_text("+cpu")
            self.path.mkdir()
        except OSError as err:
            raise ValueError(f"cannot create the CPU quota cgroup {self.path}: {err}") from err
        try:
            for setting, value in settings.items():
                (self.path / setting).write_text(value)
        except OSError as err:
            # A cgroup without its quota would let the broker run unbounded: none is left behind.
            self.remove(wait_s=0)
            raise ValueError(f"cannot set the CPU quota in {self.path}: {err}") from err

    def prefix(self):
        """Command prefix that moves the process into the cgroup, then runs the command."""
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs")]

    def stat(self):
        """The cgroup's throttling counters (nr_periods, nr_throttled, ...), or None."""
        try:
            return {key: int(value) for key, value in
                    (line.split() for line in (self.path / "cpu.stat").read_text().splitlines())}
        except (OSError, ValueError):
            return None

    def remove(self, wait_s: float = 5.0) -> bool:
        """Removes the cgroup; a process that just exited can keep it busy for a moment, so
        this tries again for up to `wait_s`. False when it is still there."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.05)


def parse_cpu_list(text: str):
    """A CPU list in taskset's notation ("0", "0,2", "1-3") as a sorted list of CPU numbers."""
    cpus = set()
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        first, last = int(low), int(high or low)
        if first < 0 or last < first:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.update(range(first, last + 1))
    if not cpus:
        raise ValueError("no CPUs given")
    return sorted(cpus)


def pinning(client_cpus_text):
    """The CPUs for the load tools and for the brokers when the tools are pinned: the given
    list, and every other CPU this process may use. None when not pinned."""
    if not client_cpus_text:
        return None
    client = parse_cpu_list(client_cpus_text)
    usable = sorted(os.sched_getaffinity(0))
    if any(cpu not in usable for cpu in client):
        raise ValueError(f"CPUs {client} are not all usable here (usable: {usable})")
    brokers = [cpu for cpu in usable if cpu not in client]
    if not brokers:
        raise ValueError(f"pinning the tools to {client} leaves no CPU for the brokers")
    return {"client_cpus": client, "broker_cpus": brokers}


def taskset_prefix(cpus):
    """Command prefix that runs a program on the given CPUs only (empty when cpus is None)."""
    return [] if cpus is None else ["taskset", "-c", ",".join(str(cpu) for cpu in cpus)]


def vmstat_counters(text=None):
    """The kernel's memory counters (/proc/vmstat, or the given text in its format) as a dict,
    or None where they are not available."""
    try:
        text = Path("/proc/vmstat").read_text() if text is None else text
        return {name: int(value) for name, value in (line.split() for line in text.splitlines()
                                                       if line.count(" ") == 1)}
    except (OSError, ValueError):
        return None


def disk_traffic_mib(before, after):
    """MiB read from and written to block devices between two vmstat readings (pgpgin and
    pgpgout count KiB, kernel-wide), or None where they are not available."""
    keys = ("pgpgin", "pgpgout")
    if before is None or after is None or any(k not in before or k not in after for k in keys):
        return None
    return tuple(round((after[k] - before[k]) / 1024, 1) for k in keys)


# Pages the kernel scanned to free memory: by the writing process itself (direct reclaim, whose
# CPU is charged to whoever allocates, a broker writing its log included) and by kswapd.
RECLAIM_COUNTERS = ("pgscan_direct", "pgscan_kswapd", "allocstall_normal", "allocstall_movable")


def reclaim_delta(before, after):
    """How much of RECLAIM_COUNTERS grew between two vmstat readings (those both have)."""
    if before is None or after is None:
        return None
    return {name: after[name] - before[name] for name in RECLAIM_COUNTERS if name in before and name in after}


def load_average():
    """1-minute load average: other work on the machine skews every figure, so it is recorded."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def machine_facts(lib_dir: Path):
    mem_kib = None
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    cpu_model = None
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_gib": round(mem_kib / MIB, 1) if mem_kib else None,
        "kernel": platform.release(),
        "os": platform.platform(),
        "java": (java.stderr.strip().splitlines() or ["unknown"])[0],
        "loadavg_at_start": load_average(),
        "kafka_lib_dir": str(lib_dir),
    }
