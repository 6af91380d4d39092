"""Start and stop the broker under test: Shale or the Apache Kafka reference.

Both are started fresh in a temporary directory on free loopback ports, and are always
stopped (process group killed) when the harness exits.
"""

import os
import signal
import socket
import subprocess
import tempfile
import time
import shutil
from pathlib import Path

# Broker settings shared by both targets: single node, internal topics with replication
# factor 1, no initial rebalance delay, short group sessions allowed (Kafka property names).
# The consumer protocol's (KIP-848) session timeout and heartbeat interval are the broker's
# (clients cannot set them): Kafka's defaults, 45 s and 5 s with the same minimums, would make
# the cg848_* scenarios wait 45 s for an expired member and up to 5 s per reconciliation step.
COMMON_PROPERTIES = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "8000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "500",
    # Share groups (KIP-932): the state topic must fit one node; the share_* scenarios need a
    # member's expiry and a heartbeat quicker than Kafka's 45 s and 5 s (the minimums are lowered
    # with them), a lock duration a group may lower to a few seconds (Kafka's minimum is 15 s),
    # and a small delivery count limit (Kafka's default is 5, its minimum 2).
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.share.min.session.timeout.ms": "1000",
    "group.share.session.timeout.ms": "8000",
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.delivery.count.limit": "3",
}


# Linux's default range for outgoing connections' local ports, used when the kernel's own
# setting cannot be read.
EPHEMERAL_DEFAULT = (32768, 60999)
PORT_MIN = 10000
_next_port = [None]


def _ephemeral_range() -> tuple:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[:2]
        return int(low), int(high)
    except (OSError, ValueError):
        return EPHEMERAL_DEFAULT


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port nothing listens on now and that no outgoing connection will be given.

    A port bound to 0 and released comes from the kernel's ephemeral range, where an outgoing
    connection (a client, or one node dialing another) can take it before the broker binds it.
    Ports are picked below or above that range instead, walking from a per-process start.
    """
    low, high = _ephemeral_range()
    below, above = (PORT_MIN, low - 1), (high + 1, 65535)
    start, end = below if below[1] - below[0] >= above[1] - above[0] else above
    size = end - start + 1
    if size >= 1000:
        if _next_port[0] is None:
            _next_port[0] = (os.getpid() * 7919) % size
        for _ in range(size):
            port = start + _next_port[0] % size
            _next_port[0] += 1
            if _bindable(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kafka_combined_node(log_dir: Path, extra_listeners=None):
    """A single Apache Kafka node in KRaft combined mode (broker and controller) on loopback:
    its client port and the server properties that place it there, before any settings of the
    caller's own."""
    port = free_port()
    controller_port = free_port()
    while controller_port == port:
        controller_port = free_port()
    listeners = [f"PLAINTEXT://127.0.0.1:{port}"]
    protocols = ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"]
    for name, (extra_port, protocol) in (extra_listeners or {}).items():
        listeners.append(f"{name}://127.0.0.1:{extra_port}")
        protocols.append(f"{name}:{protocol}")
    return port, {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": ",".join(listeners + [f"CONTROLLER://127.0.0.1:{controller_port}"]),
        "advertised.listeners": ",".join(listeners),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": ",".join(protocols),
        "log.dirs": str(log_dir),
        **({"inter.broker.listener.name": "PLAINTEXT"} if extra_listeners else {}),
    }


class BrokerError(RuntimeError):
    pass


class Broker:
    """A broker process in its own process group, logging into log_path."""

    name = "broker"

    def __init__(self, log_path: Path):
        self.log_path = log_path
        self.proc = None
        self.port = None
        self.workdir = Path(tempfile.mkdtemp(prefix=f"compat-{self.name}-"))
        self.version = "unknown"
        # What _spawn last ran (command, ready line, timeout, environment), for restart().
        self._launch = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _spawn(self, cmd, ready_marker: str, timeout_s: float, env=None):
        self._launch = (cmd, ready_marker, timeout_s, env)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # A restarted broker appends to the same log: only what it writes counts as its ready line.
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        log_file = open(self.log_path, "ab")
        log_file.write(("$ " + " ".join(cmd) + "\n").encode())
        log_file.flush()
        self.proc = subprocess.Popen(
            cmd,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.workdir,
            env=env,
            start_new_session=True,
        )
        log_file.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerError(
                    f"{self.name} exited with code {self.proc.returncode} before it was ready;"
                    f" last log lines:\n{self.tail()}"
                )
            if ready_marker in self._log_since(log_start):
                self._wait_port(deadline)
                return
            time.sleep(0.1)
        raise BrokerError(
            f"{self.name} did not print {ready_marker!r} within {timeout_s}s; last log lines:\n{self.tail()}"
        )

    def _wait_port(self, deadline: float):
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise BrokerError(f"{self.name} printed its ready line but port {self.port} does not accept")

    def _log_since(self, offset: int) -> str:
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _end_process(self, first_signal=signal.SIGTERM, grace_s: float = 20):
        """`first_signal` to the broker's process group, SIGKILL if it lingers past `grace_s`."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, first_signal)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)

    def stop(self):
        """SIGTERM the broker's process group, SIGKILL it if it lingers, remove its data."""
        self._end_process()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def restart(self, kill: bool = False):
        """Stop the broker (SIGTERM and its controlled shutdown, or SIGKILL with `kill`) and start
        it again with the same command line, data and ports, so clients keep their bootstrap
        address. Answers once it printed its ready line again and its port accepts."""
        if self._launch is None:
            raise BrokerError(f"{self.name} was never started")
        self._end_process(signal.SIGKILL if kill else signal.SIGTERM, grace_s=10 if kill else 60)
        with open(self.log_path, "ab") as log_file:
            log_file.write(f"$ (restart after {'SIGKILL' if kill else 'SIGTERM'})\n".encode())
        cmd, ready_marker, timeout_s, env = self._launch
        self._spawn(cmd, ready_marker, timeout_s, env)


class KafkaBroker(Broker):
    """Apache Kafka in KRaft combined mode (broker + controller), single node."""

    name = "kafka"

    def __init__(self, log_path: Path, lib_dir: Path, kafka_version: str):
        super().__init__(log_path)
        self.lib_dir = lib_dir
        self.version = f"Apache Kafka {kafka_version}"

    def start(self, extra_properties=None, extra_listeners=None):
        """`extra_listeners`: {name: (port, security protocol)} beside PLAINTEXT."""
        self.port, node = kafka_combined_node(self.workdir / "data", extra_listeners)
        props = {
            **node,
            **COMMON_PROPERTIES,
            **(extra_properties or {}),
        }
        props_path = self.workdir / "server.properties"
        props_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        log4j_path = self.workdir / "log4j2.properties"
        log4j_path.write_text(
            "rootLogger.level=INFO\nrootLogger.appenderRef.out.ref=OUT\n"
            "appender.out.type=Console\nappender.out.name=OUT\n"
            "appender.out.layout.type=PatternLayout\nappender.out.layout.pattern=[%d] %p %m (%c)%n\n"
            "logger.kafka.name=org.apache.kafka\nlogger.kafka.level=INFO\n"
        )
        classpath = f"{self.lib_dir}/*"
        java_opts = [f"-Dlog4j2.configurationFile={log4j_path}"]
        uuid = subprocess.run(
            ["java", *java_opts, "-cp", classpath, "kafka.tools.StorageTool", "random-uuid"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout.strip().splitlines()[-1]
        fmt = subprocess.run(
            ["java", *java_opts, "-cp", classpath, "kafka.tools.StorageTool", "format",
             "--standalone", "-t", uuid, "-c", str(props_path)],
            capture_output=True, text=True, timeout=120,
        )
        if fmt.returncode != 0:
            raise BrokerError(f"StorageTool format failed:\n{fmt.stdout}\n{fmt.stderr}")
        self._spawn(
            ["java", "-Xmx1g", *java_opts, "-cp", classpath, "kafka.Kafka", str(props_path)],
            "Kafka Server started", timeout_s=120,
        )


class ShaleBroker(Broker):
    """Shale started through its documented command line with Kafka property overrides."""

    name = "shale"

    def __init__(self, log_path: Path, binary: Path):
        super().__init__(log_path)
        self.binary = binary.absolute()

    def start(self, extra_properties=None, extra_listeners=None):
        """`extra_listeners`: {name: (port, security protocol)} beside PLAINTEXT."""
        if not self.binary.exists():
            raise BrokerError(f"Shale binary not found at {self.binary}")
        try:
            out = subprocess.run([str(self.binary), "--version"], capture_output=True, text=True, timeout=10)
            self.version = (out.stdout.strip() or out.stderr.strip() or "shale").splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            self.version = "shale"
        self.port = free_port()
        listeners = [f"PLAINTEXT://127.0.0.1:{self.port}"]
        protocols = ["PLAINTEXT:PLAINTEXT"]
        for name, (extra_port, protocol) in (extra_listeners or {}).items():
            listeners.append(f"{name}://127.0.0.1:{extra_port}")
            protocols.append(f"{name}:{protocol}")
        listener = ",".join(listeners)
        props = {
            "node.id": "1",
            "listeners": listener,
            "advertised.listeners": listener,
            **({"listener.security.protocol.map": ",".join(protocols),
                "inter.broker.listener.name": "PLAINTEXT"} if extra_listeners else {}),
            "log.dirs": str(self.workdir / "data"),
            **COMMON_PROPERTIES,
            **(extra_properties or {}),
        }
        cmd = [str(self.binary), "serve"]
        for key, value in props.items():
            cmd += ["--override", f"{key}={value}"]
        env = dict(os.environ)
        env.setdefault("RUST_BACKTRACE", "1")
        self._spawn(cmd, "Shale server started", timeout_s=60, env=env)
