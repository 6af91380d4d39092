"""Kafka's own load tools (ProducerPerformance, ConsumerPerformance, TopicCommand,
GetOffsetShell) run as JVMs with the same settings against both brokers, and the parsing of
what they print."""

import datetime as dt
import os
import re
import subprocess
import threading
import time
from pathlib import Path

from .brokers import _kill_group
from .machine import taskset_prefix


class Tools:
    def __init__(self, lib_dir: Path, logs: Path, workroot: Path, client_heap: str, cpus=None):
        self.lib_dir = lib_dir
        self.cpus = cpus
        self.logs = logs
        self.client_heap = client_heap
        self.log4j_path = workroot / "client-log4j2.properties"
        self.log4j_path.write_text(
            "rootLogger.level=WARN\nrootLogger.appenderRef.out.ref=OUT\n"
            "appender.out.type=Console\nappender.out.name=OUT\nappender.out.target=SYSTEM_ERR\n"
            "appender.out.layout.type=PatternLayout\nappender.out.layout.pattern=[%d] %p %m (%c)%n\n"
        )

    def java(self, main_class: str, args):
        # BENCH_CLIENT_JAVA_OPTS adds JVM options to the load tools (e.g. a flight recording); LABEL
        # in it becomes the tool's class name and a timestamp.
        extra = os.environ.get("BENCH_CLIENT_JAVA_OPTS", "").replace(
            "LABEL", f"{main_class.rsplit('.', 1)[-1]}-{time.time_ns()}").split()
        return [
            *taskset_prefix(self.cpus), "java", f"-Xmx{self.client_heap}", f"-Xms{self.client_heap}", *extra,
            f"-Dlog4j2.configurationFile={self.log4j_path}",
            "-cp", f"{self.lib_dir}/*", main_class, *args,
        ]

    def run(self, label: str, main_class: str, args, timeout_s: float):
        """Runs a tool in its own process group; returns (exit code or None on timeout, output,
        the tool JVM's CPU seconds)."""
        cmd = self.java(main_class, args)
        log_path = self.logs / f"{label}.log"
        with open(log_path, "wb") as out:
            out.write(("$ " + " ".join(cmd) + "\n").encode())
            out.flush()
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            usage = {}
            waiter = threading.Thread(target=_reap, args=(proc, usage), daemon=True)
            waiter.start()
            waiter.join(timeout_s)
            if waiter.is_alive():
                _kill_group(proc, grace_s=5)
                waiter.join(30)
                code = None
            else:
                code = proc.returncode
        return code, log_path.read_text(errors="replace"), usage.get("cpu_s")


def _reap(proc: subprocess.Popen, usage: dict):
    """Waits for proc with wait4, keeping its CPU seconds (user + system, all threads)."""
    _, status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    usage["cpu_s"] = round(rusage.ru_utime + rusage.ru_stime, 2)


PRODUCER_SUMMARY_TAIL = (
    r"records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th"
)
PRODUCER_FINAL = re.compile(r"(\d+) " + PRODUCER_SUMMARY_TAIL)
PRODUCER_STEADY = re.compile(r"(\d+) steady state " + PRODUCER_SUMMARY_TAIL)
CONSUMER_DETAIL_HEADER = "time, threadId, data.consumed.in.MB"


def parse_producer(output: str):
    """The whole-run summary line and, when the run had warm-up records, the steady-state line
    ProducerPerformance prints after it ("N steady state records sent, ...", which the
    whole-run pattern cannot match: it wants digits right before "records sent")."""
    whole = PRODUCER_FINAL.findall(output)
    if not whole:
        return None
    sent, rps, mbps, avg, mx, p50, p95, p99, p999 = whole[-1]
    parsed = {
        "records": int(sent), "records_per_s": float(rps), "mb_per_s": float(mbps),
        "latency_avg_ms": float(avg), "latency_max_ms": float(mx), "latency_p50_ms": int(p50),
        "latency_p95_ms": int(p95), "latency_p99_ms": int(p99), "latency_p999_ms": int(p999),
    }
    steady = PRODUCER_STEADY.findall(output)
    if steady:
        sent, rps, mbps, avg, _mx, _p50, _p95, p99, _p999 = steady[-1]
        parsed.update({"steady_records": int(sent), "steady_records_per_s": float(rps),
                       "steady_mb_per_s": float(mbps), "steady_latency_avg_ms": float(avg),
                       "steady_latency_p99_ms": int(p99)})
    return parsed


def parse_consumer_detailed(output: str, warmup_records: int):
    """ConsumerPerformance --show-detailed-stats prints one cumulative line per reporting
    interval and no final summary. Whole-run fetch rate: the last line's megabytes over the
    fetch time of all printed intervals (group join excluded). Steady rate: megabytes consumed
    after the first line at or past warmup_records, over the wall time between the two lines."""
    rows = []
    header_seen = False
    for line in output.splitlines():
        if line.startswith(CONSUMER_DETAIL_HEADER):
            header_seen = True
            continue
        if not header_seen:
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != 10:
            continue
        try:
            at = dt.datetime.strptime(cells[0], "%Y-%m-%d %H:%M:%S:%f").timestamp()
            rows.append({"at": at, "mb": float(cells[2]), "records": int(cells[4]),
                         "rebalance_ms": int(cells[6]), "fetch_ms": int(cells[7])})
        except ValueError:
            continue
    if not rows:
        return None
    fetch_ms = sum(row["fetch_ms"] for row in rows)
    last = rows[-1]
    parsed = {
        "records_reported": last["records"], "mb_reported": last["mb"], "intervals": len(rows),
        "rebalance_ms": rows[0]["rebalance_ms"], "fetch_ms": fetch_ms,
        "fetch_mb_per_s": round(last["mb"] / (fetch_ms / 1000), 4) if fetch_ms > 0 else None,
    }
    start = next((row for row in rows if row["records"] >= warmup_records), None)
    if start is not None and last["at"] > start["at"]:
        seconds = last["at"] - start["at"]
        parsed.update({"steady_mb_per_s": round((last["mb"] - start["mb"]) / seconds, 4),
                       "steady_records_per_s": round((last["records"] - start["records"]) / seconds, 1),
                       "steady_records": last["records"] - start["records"]})
    return parsed


# Client-wide metrics (--client-metrics) that say how the client spent its time: request
# sizes and rates, time waiting on the network, time records waited in the producer.
CLIENT_METRICS = (
    "batch-size-avg", "records-per-request-avg", "request-size-avg", "request-latency-avg", "request-rate",
    "record-queue-time-avg", "io-wait-ratio", "io-ratio", "select-rate", "fetch-size-avg", "fetch-latency-avg",
    "fetch-rate",
)
METRIC_LINE = re.compile(r"^[\w-]+:([\w-]+):\{client-id=[^,}]+\}\s*:\s*([-\d.E]+)\s*$")


def parse_client_metrics(output: str):
    found = {}
    for line in output.splitlines():
        match = METRIC_LINE.match(line.strip())
        if match and match.group(1) in CLIENT_METRICS:
            try:
                found[match.group(1)] = round(float(match.group(2)), 3)
            except ValueError:
                pass
    return found


ERROR_LINE = re.compile(r"(Exception|ERROR|Error:|WARNING: Exiting)")


def error_lines(output: str, limit: int = 15):
    seen = []
    for line in output.splitlines():
        if ERROR_LINE.search(line) and line not in seen:
            seen.append(line.strip())
            if len(seen) >= limit:
                break
    return seen
