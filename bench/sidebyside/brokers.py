"""The two brokers under test as processes: Shale and Apache Kafka (KRaft, combined single node),
each fresh in a temporary directory on free loopback ports, always stopped at the end."""

import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import os
from pathlib import Path

from .common import BenchError, free_port, kafka_combined_node, log
from .machine import proc_cpu_seconds, proc_status_kib, taskset_prefix


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

    def __init__(self, workroot: Path, logs: Path, cpus=None):
        self.cpus = cpus
        self.quota = None  # a CpuQuota the broker runs in (--broker-cpu-quota), set before start
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
        cmd = taskset_prefix(self.cpus) + (self.quota.prefix() if self.quota else []) + self.command()
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
        if self.quota is not None and not self.quota.remove():
            log(f"{self.name}: the CPU quota cgroup {self.quota.path} could not be removed")


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

    def __init__(self, workroot: Path, logs: Path, binary: Path, cpus=None):
        super().__init__(workroot, logs, cpus)
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

    def __init__(self, workroot: Path, logs: Path, lib_dir: Path, kafka_version: str, cpus=None):
        super().__init__(workroot, logs, cpus)
        self.lib_dir = lib_dir
        self.version = f"Apache Kafka {kafka_version}"
        self.props_path = self.workdir / "server.properties"
        self.log4j_path = self.workdir / "log4j2.properties"

    def prepare(self) -> dict:
        self.port, node = kafka_combined_node(self.workdir / "data")
        props = {
            **node,
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
