#!/usr/bin/env python3
"""Side-by-side benchmark of Shale and Apache Kafka on this machine (issue #4).

Started by bench/run.sh, which resolves the Shale binary and the Kafka jars first.
Both brokers run fresh, in temporary directories on free loopback ports, and stay up; every
load run goes to each in turn, for several rounds, alternating which goes first. Each broker
is always stopped (SIGTERM to its own process group, then SIGKILL).

Measured per broker:
  * start-up: process spawn -> ready line, and spawn -> first successful ApiVersions +
    Metadata answer on the listener;
  * resident memory (VmRSS) after ~5 s idle, after creating a topic, and peak (VmHWM) at the end;
  * ProducerPerformance, 1 KiB records, acks=1 and acks=all, 1 and 8 partitions, with the
    tool's own --warmup-records: the steady-state line after the warm-up is the figure, the
    whole-run line is kept beside it;
  * ConsumerPerformance over the same topics, with --show-detailed-stats: the rate after the
    same share of warm-up records is the figure, the whole run's fetch rate is kept beside it;
  * broker CPU seconds used by every load run (from /proc/<pid>/stat).
"""

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
MIB = 1024 * 1024


class BenchError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# /proc readings


def proc_status_kib(pid: int, field: str):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def proc_cpu_seconds(pid: int):
    """utime + stime of the process (all its threads), in seconds."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


# ---------------------------------------------------------------------------------------------
# Minimal Kafka wire probe: ApiVersions v0, then Metadata v4 must list at least one broker.


def _request(sock: socket.socket, api_key: int, api_version: int, correlation_id: int, body: bytes) -> bytes:
    client_id = b"shale-bench"
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id
    payload = header + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
    response = _recv_exact(sock, size)
    if struct.unpack(">i", response[:4])[0] != correlation_id:
        raise BenchError("correlation id mismatch")
    return response[4:]


def _recv_exact(sock: socket.socket, count: int) -> bytes:
    chunks = []
    while count > 0:
        chunk = sock.recv(count)
        if not chunk:
            raise ConnectionError("connection closed")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def probe_ready(port: int, timeout_s: float = 2.0) -> bool:
    """True when the broker answers ApiVersions without error and Metadata lists a broker."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            api_versions = _request(sock, 18, 0, 1, b"")
            if struct.unpack(">h", api_versions[:2])[0] != 0:
                return False
            # Metadata v4: topics = null (all), allow_auto_topic_creation = false.
            metadata = _request(sock, 3, 4, 2, struct.pack(">ib", -1, 0))
            broker_count = struct.unpack(">i", metadata[4:8])[0]
            return broker_count > 0
    except (OSError, ConnectionError, struct.error, BenchError):
        return False


# ---------------------------------------------------------------------------------------------
# Broker processes


class Broker:
    name = "broker"
    ready_marker = ""

    def __init__(self, workroot: Path, logs: Path):
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=workroot))
        self.log_path = logs / f"{self.name}-broker.log"
        self.proc = None
        self.port = None
        self.version = "unknown"
        self.ready_line_at = None
        self._log_file = None
        self._reader = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self):
        raise NotImplementedError

    def prepare(self) -> dict:
        """One-time set-up before the timed start (e.g. storage format). Returns extra facts."""
        return {}

    def _pump_output(self):
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            now = time.monotonic()
            self._log_file.write(raw)
            self._log_file.flush()
            if self.ready_line_at is None and self.ready_marker.encode() in raw:
                self.ready_line_at = now

    def start(self, timeout_s: float) -> dict:
        """Spawns the broker and returns start-up timings in milliseconds."""
        cmd = self.command()
        self._log_file = open(self.log_path, "ab")
        self._log_file.write(("$ " + " ".join(cmd) + "\n").encode())
        self._log_file.flush()
        spawned_at = time.monotonic()
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.workdir,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._pump_output, daemon=True)
        self._reader.start()
        deadline = spawned_at + timeout_s
        answered_at = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited with code {self.proc.returncode} during start-up:\n{self.tail()}")
            if answered_at is None and probe_ready(self.port, timeout_s=1.0):
                answered_at = time.monotonic()
            if answered_at is not None and self.ready_line_at is not None:
                break
            time.sleep(0.002)
        else:
            raise BenchError(
                f"{self.name} not ready within {timeout_s:.0f}s (ready line seen: {self.ready_line_at is not None},"
                f" Metadata answered: {answered_at is not None}):\n{self.tail()}"
            )
        return {
            "ready_line_ms": round((self.ready_line_at - spawned_at) * 1000, 1),
            "first_metadata_ms": round((answered_at - spawned_at) * 1000, 1),
        }

    def rss_mib(self):
        kib = proc_status_kib(self.proc.pid, "VmRSS")
        return None if kib is None else round(kib / 1024, 1)

    def hwm_mib(self):
        kib = proc_status_kib(self.proc.pid, "VmHWM")
        return None if kib is None else round(kib / 1024, 1)

    def cpu_seconds(self):
        return proc_cpu_seconds(self.proc.pid)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            _kill_group(self.proc, grace_s=30)
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        shutil.rmtree(self.workdir, ignore_errors=True)


def _kill_group(proc: subprocess.Popen, grace_s: float):
    """SIGTERM the process group this script created for proc, SIGKILL it if it lingers."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


class ShaleBroker(Broker):
    name = "shale"
    ready_marker = "Shale server started"

    def __init__(self, workroot: Path, logs: Path, binary: Path):
        super().__init__(workroot, logs)
        self.binary = binary
        try:
            out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10)
            self.version = (out.stdout.strip() or out.stderr.strip() or "shale").splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            self.version = "shale (version unknown)"

    def command(self):
        self.port = free_port()
        overrides = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.workdir / "data"),
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.replication.factor": "1",
        }
        cmd = [str(self.binary), "serve"]
        for key, value in overrides.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd


class KafkaBroker(Broker):
    name = "kafka"
    ready_marker = "Kafka Server started"

    def __init__(self, workroot: Path, logs: Path, lib_dir: Path, kafka_version: str):
        super().__init__(workroot, logs)
        self.lib_dir = lib_dir
        self.version = f"Apache Kafka {kafka_version}"
        self.props_path = self.workdir / "server.properties"
        self.log4j_path = self.workdir / "log4j2.properties"

    def prepare(self) -> dict:
        self.port = free_port()
        controller_port = free_port()
        while controller_port == self.port:
            controller_port = free_port()
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        self.props_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.log4j_path.write_text(
            "rootLogger.level=INFO\nrootLogger.appenderRef.out.ref=OUT\n"
            "appender.out.type=Console\nappender.out.name=OUT\n"
            "appender.out.layout.type=PatternLayout\nappender.out.layout.pattern=[%d] %p %m (%c)%n\n"
        )
        started = time.monotonic()
        cp = f"{self.lib_dir}/*"
        java = ["java", f"-Dlog4j2.configurationFile={self.log4j_path}", "-cp", cp, "kafka.tools.StorageTool"]
        uuid_run = subprocess.run(java + ["random-uuid"], capture_output=True, text=True, timeout=120)
        if uuid_run.returncode != 0:
            raise BenchError(f"StorageTool random-uuid failed:\n{uuid_run.stdout}\n{uuid_run.stderr}")
        cluster_id = uuid_run.stdout.strip().splitlines()[-1]
        fmt = subprocess.run(
            java + ["format", "--standalone", "-t", cluster_id, "-c", str(self.props_path)],
            capture_output=True, text=True, timeout=180,
        )
        if fmt.returncode != 0:
            raise BenchError(f"StorageTool format failed:\n{fmt.stdout}\n{fmt.stderr}")
        return {"storage_format_ms": round((time.monotonic() - started) * 1000, 1)}

    def command(self):
        return [
            "java", "-Xmx1g",
            f"-Dlog4j2.configurationFile={self.log4j_path}",
            "-cp", f"{self.lib_dir}/*", "kafka.Kafka", str(self.props_path),
        ]


# ---------------------------------------------------------------------------------------------
# Kafka's own client tools, with the same JVM settings against both brokers


class Tools:
    def __init__(self, lib_dir: Path, logs: Path, workroot: Path, client_heap: str):
        self.lib_dir = lib_dir
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
            "java", f"-Xmx{self.client_heap}", f"-Xms{self.client_heap}", *extra,
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


# ---------------------------------------------------------------------------------------------
# Optional profiling of Shale with perf (bench/run.sh --perf)


def start_profiler(broker: Broker, label: str):
    data = broker.log_path.parent / f"{broker.name}-{label}.perf.data"
    cmd = ["perf", "record", "-F", "499", "-g", "-p", str(broker.proc.pid), "-o", str(data)]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as err:
        log(f"perf not started: {err}")
        return None
    return proc, data


def finish_profiler(profiler, broker: Broker, label: str):
    proc, data = profiler
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        _kill_group(proc, grace_s=5)
    report = broker.log_path.parent / f"{broker.name}-{label}.perf.txt"
    with open(report, "wb") as out:
        try:
            subprocess.run(["perf", "report", "--stdio", "--no-children", "--percent-limit", "1.5",
                            "-g", "none", "-i", str(data)],
                           stdout=out, stderr=subprocess.DEVNULL, timeout=180)
        except (OSError, subprocess.TimeoutExpired) as err:
            out.write(f"perf report failed: {err}\n".encode())


# ---------------------------------------------------------------------------------------------
# One broker's measurements. Both brokers are started first; every load run then alternates
# between them (Shale then Kafka, Kafka then Shale in the next round) and is repeated
# `--repeat` times, so that drifting load on the machine and the client JVM's noise treat both
# alike; the report shows the median of the rounds.


class Session:
    def __init__(self, broker: Broker, tools: "Tools", cfg):
        self.broker = broker
        self.tools = tools
        self.cfg = cfg
        self.out = {}
        self.samples = {}
        self.others = []
        self.round_error = None

    def setup(self):
        broker, out = self.broker, self.out
        out["version"] = broker.version
        log(f"{broker.name}: preparing")
        out["prepare"] = broker.prepare()
        log(f"{broker.name}: starting")
        out["startup"] = broker.start(timeout_s=self.cfg.start_timeout_s)
        log(f"{broker.name}: ready {out['startup']}; idling {self.cfg.idle_s}s")
        time.sleep(self.cfg.idle_s)
        memory = {"idle_rss_mib": broker.rss_mib()}
        out["memory"] = memory
        self.create("bench-rss", 1)
        time.sleep(2)
        memory["after_topic_rss_mib"] = broker.rss_mib()
        self.create("bench-warmup", 1)
        log(f"{broker.name}: memory {memory}")
        out["runs"] = {}
        out["samples"] = self.samples

    def topic(self, partitions, round_index):
        return f"bench-p{partitions}-r{round_index + 1}"

    def begin_round(self, round_index):
        """Every round writes into topics of its own, deleted when it ends: the disk holds one
        round's data, and no round reads another's. Without its topics the round's runs are
        failed rounds: producing anyway would auto-create them with one partition."""
        self.round_error = None
        try:
            for partitions in (1, 8):
                self.create(self.topic(partitions, round_index), partitions)
        except BenchError as err:
            self.round_error = f"round {round_index + 1}: {err}"
            log(f"{self.broker.name}: {self.round_error}")

    def end_round(self, round_index):
        for partitions in (1, 8):
            topic = self.topic(partitions, round_index)
            code, output, _ = self.tools.run(
                f"{self.broker.name}-delete-{topic}", "org.apache.kafka.tools.TopicCommand",
                ["--bootstrap-server", self.broker.bootstrap, "--delete", "--topic", topic], timeout_s=120)
            if code != 0:
                log(f"{self.broker.name}: deleting {topic} failed (exit {code}); its data stays on disk")

    def create(self, topic, partitions):
        code, output, _ = self.tools.run(
            f"{self.broker.name}-create-{topic}", "org.apache.kafka.tools.TopicCommand",
            ["--bootstrap-server", self.broker.bootstrap, "--create", "--topic", topic,
             "--partitions", str(partitions), "--replication-factor", "1"],
            timeout_s=120,
        )
        if code != 0:
            raise BenchError(f"{self.broker.name}: creating {topic} failed (exit {code}):\n"
                             + "\n".join(output.splitlines()[-20:]))

    def warm_up(self):
        """Not reported: the broker's JIT (Kafka) and page cache see load before the rounds."""
        self.produce("warmup", "bench-warmup", "1", self.cfg.warmup_records, record=False)

    def measured(self, label, fn, record=True):
        broker = self.broker
        if not broker.alive():
            result = {"ok": False, "error": "broker not running", "broker_log_tail": broker.tail()}
            self.samples.setdefault(label, []).append(result)
            return
        # Write back what earlier runs (of either broker) left dirty, so that this run does not
        # pay for their writeback; the flush is not part of the run.
        os.sync()
        disk_before = disk_traffic_kib()
        cpu_before = broker.cpu_seconds()
        others_before = [other.cpu_seconds() for other in self.others]
        started = time.monotonic()
        profiler = start_profiler(broker, label) if self.cfg.perf and broker.name == "shale" else None
        try:
            result = fn()
        finally:
            if profiler is not None:
                finish_profiler(profiler, broker, label)
        result["wall_s"] = round(time.monotonic() - started, 2)
        cpu_after = broker.cpu_seconds()
        if cpu_before is not None and cpu_after is not None:
            result["broker_cpu_s"] = round(cpu_after - cpu_before, 2)
        # The other broker idles meanwhile; what it costs is kept beside the run.
        idle = [after - before for before, after in zip(others_before, (o.cpu_seconds() for o in self.others))
                if before is not None and after is not None]
        if idle:
            result["other_broker_idle_cpu_s"] = round(sum(idle), 2)
        disk_after = disk_traffic_kib()
        if disk_before is not None and disk_after is not None:
            # Reads mean the page cache no longer held the data; both count every process.
            result["disk_read_mib"] = round((disk_after[0] - disk_before[0]) / 1024, 1)
            result["disk_written_mib"] = round((disk_after[1] - disk_before[1]) / 1024, 1)
        result["broker_rss_mib_after"] = broker.rss_mib()
        # Other work on the 2-core machine moves every figure: keep the load beside each run.
        result["loadavg_1m_after"] = load_average()
        if not broker.alive():
            result["ok"] = False
            result["error"] = f"broker exited with code {broker.proc.returncode}"
            result["broker_log_tail"] = broker.tail()
        summary = {k: result.get(k) for k in ("ok", "steady_mb_per_s", "mb_per_s", "fetch_mb_per_s", "broker_cpu_s", "client_cpu_s",
                                              "wall_s", "disk_read_mib", "loadavg_1m_after")}
        log(f"{broker.name}: {label} {summary}")
        if record:
            self.samples.setdefault(label, []).append(result)

    def produce(self, label, topic, acks, records, record=True):
        broker, cfg, tools = self.broker, self.cfg, self.tools

        def go():
            warmup = cfg.steady_warmup_records if record else 0
            code, output, client_cpu = tools.run(
                f"{broker.name}-{label}", "org.apache.kafka.tools.ProducerPerformance",
                ["--topic", topic, "--num-records", str(records), "--record-size", "1024",
                 "--throughput", "-1", "--producer-props", f"bootstrap.servers={broker.bootstrap}", f"acks={acks}",
                 *(["--warmup-records", str(warmup)] if warmup else []),
                 *(["--print-metrics"] if cfg.client_metrics else [])],
                timeout_s=cfg.tool_timeout_s,
            )
            parsed = parse_producer(output)
            errors = error_lines(output)
            ok = (code == 0 and parsed is not None and parsed["records"] == records and not errors
                  and (not warmup or "steady_mb_per_s" in parsed))
            result = {"ok": ok, "exit_code": code, "errors": errors, "client_cpu_s": client_cpu, **(parsed or {})}
            if cfg.client_metrics:
                result["client_metrics"] = parse_client_metrics(output)
            if code is None:
                result["error"] = f"timed out after {cfg.tool_timeout_s}s"
            return result
        self.measured(label, go, record)

    def end_offsets_total(self, topic):
        """Records in the topic (sum of log-end offsets), so a short produce run cannot stall the consumer."""
        code, output, _ = self.tools.run(
            f"{self.broker.name}-offsets-{topic}", "org.apache.kafka.tools.GetOffsetShell",
            ["--bootstrap-server", self.broker.bootstrap, "--topic", topic, "--time", "-1"], timeout_s=60,
        )
        total = 0
        found = False
        for line in output.splitlines():
            match = re.fullmatch(rf"{re.escape(topic)}:\d+:(\d+)", line.strip())
            if match:
                total += int(match.group(1))
                found = True
        return total if code == 0 and found else None

    def consume(self, label, topic, wanted):
        broker, cfg, tools = self.broker, self.cfg, self.tools
        held = self.end_offsets_total(topic) if broker.alive() else None
        records = wanted if held is None else min(held, wanted)
        if records < wanted:
            log(f"{broker.name}: {topic} holds {records} records, not {wanted}; consuming {records}")

        def go():
            code, output, client_cpu = tools.run(
                f"{broker.name}-{label}", "org.apache.kafka.tools.ConsumerPerformance",
                ["--bootstrap-server", broker.bootstrap, "--topic", topic, "--num-records", str(records),
                 "--timeout", "30000", "--group", f"bench-{label}-{time.time_ns()}",
                 "--show-detailed-stats", "--reporting-interval", str(cfg.consumer_interval_ms),
                 *(["--print-metrics"] if cfg.client_metrics else [])],
                timeout_s=cfg.tool_timeout_s,
            )
            # The consumer warms up over the same share of its records as the producers do.
            warmup = records * cfg.steady_warmup_records // cfg.records
            parsed = parse_consumer_detailed(output, warmup)
            errors = error_lines(output)
            # The tool exits 0 after its --timeout with a warning (an error line) when it read
            # fewer records than asked.
            ok = code == 0 and parsed is not None and "steady_mb_per_s" in parsed and not errors
            result = {"ok": ok, "exit_code": code, "errors": errors, "records_wanted": records,
                      "client_cpu_s": client_cpu, **(parsed or {})}
            if cfg.client_metrics:
                result["client_metrics"] = parse_client_metrics(output)
            if records < wanted:
                result["note"] = f"topic held {records} of the {wanted} records produced into it"
            if code is None:
                result["error"] = f"timed out after {cfg.tool_timeout_s}s"
            return result
        self.measured(label, go)

    def load_run(self, label, round_index):
        """One round of one load run (see RUNS)."""
        if self.round_error is not None:
            self.samples.setdefault(label, []).append({"ok": False, "error": self.round_error})
            return
        n = self.cfg.records
        partitions = int(label.split("-")[1][1:])
        topic = self.topic(partitions, round_index)
        if label.startswith("produce-"):
            acks = label.split("-")[2]
            self.produce(label, topic, "1" if acks == "acks1" else "all", n)
        else:
            # Every round reads its two produce runs back, with a new group.
            self.consume(label, topic, 2 * n)

    def summarize(self):
        """The median round of every load run becomes its reported figure."""
        runs = self.out["runs"]
        for label, samples in self.samples.items():
            runs[label] = median_run(samples)

    def finish(self):
        broker, out = self.broker, self.out
        out.setdefault("memory", {})
        out["memory"]["peak_rss_mib"] = broker.hwm_mib()
        out["memory"]["final_rss_mib"] = broker.rss_mib()
        out["broker_alive_at_end"] = broker.alive()
        out["broker_cpu_s_total"] = broker.cpu_seconds()
        out["broker_error_lines"] = error_lines(broker.log_path.read_text(errors="replace"), limit=30)


RUNS = ("produce-p1-acks1", "produce-p1-acksall", "produce-p8-acks1", "produce-p8-acksall", "consume-p1", "consume-p8")


def median_run(samples):
    """The round with the median throughput (a failed round counts as the lowest), with every
    round's throughput beside it; failed rounds make the figure flawed."""
    key = "steady_mb_per_s"

    def value(sample):
        return sample.get(key) if sample.get("ok") and sample.get(key) is not None else float("-inf")

    ordered = sorted(samples, key=value)
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["rounds"] = len(samples)
    chosen["round_values"] = {k: [s.get(k) for s in samples] for k in ("steady_mb_per_s", "mb_per_s", "fetch_mb_per_s",
                                                                       "broker_cpu_s", "client_cpu_s", "wall_s",
                                                                       "disk_read_mib")
                              if any(k in s for s in samples)}
    if not all(s.get("ok") for s in samples):
        chosen["ok"] = False
        chosen.setdefault("error", "a round failed: " + "; ".join(
            str(s.get("error") or "client errors") for s in samples if not s.get("ok")))
    return chosen


# ---------------------------------------------------------------------------------------------
# Report


def ratio(shale, kafka):
    if shale is None or kafka is None or kafka == 0:
        return None
    return shale / kafka


def fmt_num(value, digits=1):
    if value is None:
        return "n/a"
    if isinstance(value, int) or value >= 1000:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def get(d, *path):
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def run_value(result, broker, run, key):
    """The figure of a run that finished (even with client errors, which table() marks)."""
    entry = get(result, "brokers", broker, "runs", run)
    if not entry or entry.get("exit_code") is None:
        return None
    return entry.get(key)


def run_flawed(result, broker, run) -> bool:
    entry = get(result, "brokers", broker, "runs", run)
    return bool(entry) and not entry.get("ok")


def table(result) -> str:
    rows = []

    # (metric, shale, kafka, goal kind, run): "le" = ratio <= 1/20 wanted, "ge" = ratio >= 1.5 wanted.
    def add(metric, shale, kafka, goal, run=None):
        rows.append((metric, shale, kafka, goal, run))

    for key, name in (("ready_line_ms", "Start-up to ready line (ms)"),
                      ("first_metadata_ms", "Start-up to first ApiVersions+Metadata answer (ms)")):
        add(name, get(result, "brokers", "shale", "startup", key), get(result, "brokers", "kafka", "startup", key), "le")
    for key, name in (("idle_rss_mib", "Idle RSS after ~5 s (MiB)"),
                      ("after_topic_rss_mib", "RSS after creating a topic (MiB)")):
        add(name, get(result, "brokers", "shale", "memory", key), get(result, "brokers", "kafka", "memory", key), "le")
    for partitions in (1, 8):
        for acks, acks_name in (("acks1", "acks=1"), ("acksall", "acks=all")):
            run = f"produce-p{partitions}-{acks}"
            for key, unit in (("steady_mb_per_s", "MB/s"), ("steady_records_per_s", "records/s")):
                add(f"Produce 1 KiB, {partitions} partition{'s' if partitions > 1 else ''}, {acks_name} ({unit})",
                    run_value(result, "shale", run, key), run_value(result, "kafka", run, key), "ge", run)
    for partitions in (1, 8):
        run = f"consume-p{partitions}"
        label = f"{partitions} partition{'s' if partitions > 1 else ''}"
        for key, unit in (("steady_mb_per_s", "MB/s"), ("steady_records_per_s", "records/s")):
            add(f"Consume 1 KiB, {label} ({unit})",
                run_value(result, "shale", run, key), run_value(result, "kafka", run, key), "ge", run)

    lines = ["| Metric | Shale | Kafka | Shale/Kafka | Goal | Met? |", "|---|---:|---:|---:|---|---|"]
    met_count = total = 0
    flawed_seen = False
    for metric, shale, kafka, goal, run in rows:
        r = ratio(shale, kafka)
        goal_text = "<= 0.05 (1/20)" if goal == "le" else ">= 1.5"
        flawed = {name: run is not None and run_flawed(result, name, run) for name in ("shale", "kafka")}
        if r is None:
            met = "n/a"
        else:
            ok = (r <= 0.05 if goal == "le" else r >= 1.5) and not any(flawed.values())
            met = "yes" if ok else "**no**"
            met_count += ok
            total += 1
        ratio_text = "n/a" if r is None else (f"{r:.3f}" if r < 0.1 else f"{r:.2f}")
        cells = {}
        for name, value in (("shale", shale), ("kafka", kafka)):
            text = fmt_num(value)
            if flawed[name]:
                text += " †" if value is not None else " (failed †)"
                flawed_seen = True
            cells[name] = text
        lines.append(f"| {metric} | {cells['shale']} | {cells['kafka']} | {ratio_text} | {goal_text} | {met} |")
    lines.append("")
    if flawed_seen:
        lines.append("† the load tool reported errors (see Failures), or timed out; a figure shown is the tool's own"
                     " summary of a run that finished despite them and cannot meet a goal.")
        lines.append("")
    lines.append(f"Goals met: {met_count} of {total} measured.")
    # Information rows without a goal.
    info = ["", "| Other figures (no goal) | Shale | Kafka |", "|---|---:|---:|"]
    info.append(f"| Peak RSS over the run, VmHWM (MiB) | {fmt_num(get(result, 'brokers', 'shale', 'memory', 'peak_rss_mib'))}"
                f" | {fmt_num(get(result, 'brokers', 'kafka', 'memory', 'peak_rss_mib'))} |")
    info.append(f"| Kafka storage format before start (ms, not in start-up) | - | "
                f"{fmt_num(get(result, 'brokers', 'kafka', 'prepare', 'storage_format_ms'))} |")
    for run in RUNS:
        key = "fetch_mb_per_s" if run.startswith("consume") else "mb_per_s"
        what = "fetch MB/s over all printed intervals" if run.startswith("consume") else "MB/s"
        info.append(f"| Whole run incl. warm-up, {run} ({what}) | {fmt_num(run_value(result, 'shale', run, key))}"
                    f" | {fmt_num(run_value(result, 'kafka', run, key))} |")
    for partitions in (1, 8):
        for acks, acks_name in (("acks1", "acks=1"), ("acksall", "acks=all")):
            run = f"produce-p{partitions}-{acks}"
            for key, name in (("latency_avg_ms", "avg"), ("latency_p99_ms", "p99")):
                info.append(f"| Produce {partitions}p {acks_name} latency {name} (ms) | "
                            f"{fmt_num(run_value(result, 'shale', run, key))} | {fmt_num(run_value(result, 'kafka', run, key))} |")
    for run in RUNS:
        info.append(f"| Broker CPU seconds, {run} | {fmt_num(get(result, 'brokers', 'shale', 'runs', run, 'broker_cpu_s'), 2)}"
                    f" | {fmt_num(get(result, 'brokers', 'kafka', 'runs', run, 'broker_cpu_s'), 2)} |")
    for run in RUNS:
        info.append(f"| Client JVM CPU seconds, {run} | {fmt_num(get(result, 'brokers', 'shale', 'runs', run, 'client_cpu_s'), 2)}"
                    f" | {fmt_num(get(result, 'brokers', 'kafka', 'runs', run, 'client_cpu_s'), 2)} |")
    for run in ("consume-p1", "consume-p8"):
        cells = []
        for name in ("shale", "kafka"):
            values = get(result, "brokers", name, "runs", run, "round_values", "disk_read_mib") or []
            cells.append(" / ".join(fmt_num(v, 1) for v in values) or "n/a")
        info.append(f"| Disk reads during every round, {run} (MiB, whole machine) | {cells[0]} | {cells[1]} |")
    for run in RUNS:
        cells = []
        for name in ("shale", "kafka"):
            values = get(result, "brokers", name, "runs", run, "round_values", "steady_mb_per_s") or []
            cells.append(" / ".join(fmt_num(v) for v in values) or "n/a")
        info.append(f"| Every round, {run} (steady MB/s) | {cells[0]} | {cells[1]} |")
    shown = {"produce": ("records-per-request-avg", "request-latency-avg", "record-queue-time-avg", "io-wait-ratio"),
             "consume": ("fetch-size-avg", "fetch-latency-avg", "io-wait-ratio")}
    for run in RUNS:
        for metric in shown[run.split("-")[0]]:
            values = [get(result, "brokers", name, "runs", run, "client_metrics", metric) for name in ("shale", "kafka")]
            if any(v is not None for v in values):
                info.append(f"| Client {metric}, {run} | {fmt_num(values[0], 3)} | {fmt_num(values[1], 3)} |")
    for name, other in (("shale", "Kafka"), ("kafka", "Shale")):
        idle = [get(result, "brokers", name, "runs", run, "other_broker_idle_cpu_s") for run in RUNS]
        idle = [v for v in idle if v is not None]
        if idle:
            info.append(f"| Idle {other} broker's CPU seconds during {name.capitalize()}'s median runs (sum) | "
                        f"{fmt_num(sum(idle), 2) if name == 'shale' else '-'} | {fmt_num(sum(idle), 2) if name == 'kafka' else '-'} |")
    return "\n".join(lines + info)


def disk_traffic_kib():
    """Kernel-wide KiB read from and written to block devices so far (/proc/vmstat pgpgin and
    pgpgout), or None where that is not available."""
    try:
        counters = dict(line.split() for line in Path("/proc/vmstat").read_text().splitlines() if line.count(" ") == 1)
        return int(counters["pgpgin"]), int(counters["pgpgout"])
    except (OSError, ValueError, KeyError):
        return None


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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--shale-bin", required=True, type=Path)
    parser.add_argument("--kafka-lib", required=True, type=Path)
    parser.add_argument("--kafka-version", required=True)
    parser.add_argument("--results", required=True, type=Path)
    parser.add_argument("--git-commit", default="unknown")
    parser.add_argument("--only", choices=["shale", "kafka"], help="benchmark one broker only")
    parser.add_argument("--perf", action="store_true", help="profile Shale with perf during every load run")
    parser.add_argument("--records", type=int, help="records per produce run (overrides the mode's default)")
    parser.add_argument("--client-metrics", action="store_true",
                        help="run the load tools with --print-metrics and keep their request/wait metrics in the JSON")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of every load run, alternating the brokers; the median is reported (default 3)")
    parser.add_argument("--render", type=Path, help="only print the table of an earlier results JSON")
    if "--render" in sys.argv:
        index = sys.argv.index("--render")
        if index + 1 >= len(sys.argv):
            parser.error("--render needs a results JSON")
        print(table(json.loads(Path(sys.argv[index + 1]).read_text())))
        return 0
    cfg = parser.parse_args()

    mode = "quick" if cfg.quick else "full"
    if cfg.records is None:
        cfg.records = 200_000 if cfg.quick else 2_000_000
    cfg.warmup_records = max(10_000, min(cfg.records // 10, 100_000))
    # The client JVMs spend their first seconds compiling (4-13 CPU-s of JIT per run, measured
    # with a flight recording), on the same 2 cores as the broker: the figure is the rate after
    # the first half of each run, the whole-run rate is kept beside it.
    cfg.steady_warmup_records = cfg.records // 2
    # The steady consume rate needs reports after the warm-up half: a quick run's consume
    # lasts about a second.
    cfg.consumer_interval_ms = 100 if cfg.quick else 250
    cfg.idle_s = 5
    cfg.start_timeout_s = 120
    cfg.tool_timeout_s = 60 if cfg.quick else 300
    client_heap = "1g"

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    cfg.results.mkdir(parents=True, exist_ok=True)
    logs = cfg.results / f"{stamp}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    workroot = Path(tempfile.mkdtemp(prefix="shale-bench-"))

    result = {
        "timestamp_utc": stamp,
        "mode": mode,
        "settings": {
            "records_per_produce_run": cfg.records, "record_size_bytes": 1024, "warmup_records": cfg.warmup_records,
            "steady_warmup_records_per_produce_run": cfg.steady_warmup_records,
            "records_per_consume_run": 2 * cfg.records, "idle_s": cfg.idle_s, "client_jvm": f"-Xmx{client_heap} -Xms{client_heap}",
            "kafka_jvm": "-Xmx1g", "tool_timeout_s": cfg.tool_timeout_s, "rounds": cfg.repeat,
        },
        "machine": machine_facts(cfg.kafka_lib),
        "shale_git_commit": cfg.git_commit,
        "brokers": {},
    }

    brokers = []

    def on_signal(signum, _frame):
        raise SystemExit(f"interrupted by signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    tools = Tools(cfg.kafka_lib, logs, workroot, client_heap)
    failures = []
    sessions = []
    try:
        order = [("shale", lambda: ShaleBroker(workroot, logs, cfg.shale_bin)),
                 ("kafka", lambda: KafkaBroker(workroot, logs, cfg.kafka_lib, cfg.kafka_version))]
        # Both brokers start (one after the other, so each start-up is timed alone) and stay up:
        # the load runs then alternate between them.
        for name, make in order:
            if cfg.only and cfg.only != name:
                continue
            broker = make()
            brokers.append(broker)
            session = Session(broker, tools, cfg)
            result["brokers"][name] = session.out
            try:
                session.setup()
                sessions.append(session)
            except BenchError as err:
                log(f"{name}: FAILED: {err}")
                session.out["error"] = str(err)
                failures.append(f"{name}: {err}")
                broker.stop()
        for session in sessions:
            session.others = [other.broker for other in sessions if other is not session]
            session.warm_up()
        for round_index in range(cfg.repeat):
            log(f"round {round_index + 1} of {cfg.repeat}")
            for session in sessions:
                session.begin_round(round_index)
            for run in RUNS:
                # Who goes first alternates between rounds.
                turn = sessions if round_index % 2 == 0 else list(reversed(sessions))
                for session in turn:
                    session.load_run(run, round_index)
            for session in sessions:
                session.end_round(round_index)
        for session in sessions:
            session.summarize()
            session.finish()
    finally:
        for broker in brokers:
            broker.stop()
        shutil.rmtree(workroot, ignore_errors=True)

    for name, out in result["brokers"].items():
        for run, entry in (out.get("runs") or {}).items():
            if not entry.get("ok"):
                first = [line[:400] for line in (entry.get("errors") or [])[:2]]
                failures.append(f"{name} {run}: {entry.get('error') or 'client errors'}; first lines: {first}")
    result["machine"]["loadavg_at_end"] = load_average()
    result["failures"] = failures
    result["markdown"] = table(result)
    json_path = cfg.results / f"{stamp}.json"
    json_path.write_text(json.dumps(result, indent=2) + "\n")

    m = result["machine"]
    print()
    print(f"## Shale vs Apache Kafka ({mode} run, {stamp})")
    print()
    print(f"Machine: {m['nproc']} cores ({m['cpu_model']}), {m['memory_gib']} GiB RAM, Linux {m['kernel']}; {m['java']}.")
    print(f"Load average (1 min) at start / end: {m['loadavg_at_start']} / {m['loadavg_at_end']}"
          " (the benchmark needs the machine otherwise idle; a load above ~0.5 makes the figures noisy).")
    print(f"Versions: {get(result, 'brokers', 'shale', 'version') or 'n/a'} (commit {cfg.git_commit}); "
          f"{get(result, 'brokers', 'kafka', 'version') or 'n/a'} (KRaft combined single node, -Xmx1g).")
    print(f"Load: Kafka's ProducerPerformance / ConsumerPerformance, {cfg.records:,} records of 1 KiB per produce run "
          f"(acks=1 then acks=all into the same topic), {2 * cfg.records:,} per consume run; client JVM -Xmx{client_heap}. "
          f"Figures are steady-state rates after the first {cfg.steady_warmup_records:,} records of a produce run "
          f"(--warmup-records) and the first {2 * cfg.steady_warmup_records:,} of a consume run.")
    print(f"Rounds: {cfg.repeat}, alternating the brokers (both stay up); every figure is the median round.")
    print()
    print(result["markdown"])
    print()
    if failures:
        print("Failures:")
        for failure in failures:
            print(f"- {failure}")
        print()
    print(f"Results: {json_path}")
    print(f"Logs:    {logs}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
