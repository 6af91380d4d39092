#!/usr/bin/env python3
"""Replication figures (issue 8): a three-node Shale cluster beside a three-node Apache Kafka
cluster, one after the other in the same run, on the same machine.

1. Produce throughput: Kafka's ProducerPerformance, 1 KiB records, acks=all, into a
   one-partition topic with replication factor 3 (min.insync.replicas=2) and into one with
   replication factor 1, both led by node 1 (after an unreported warm-up run).
2. Failover: an idempotent acks=all producer (confluent-kafka, linger.ms=0) writes one record
   every 2 ms; the partition leader is killed with SIGKILL; the figure is the time from the
   kill to the next acknowledged write (the first successful delivery report). Each round uses
   a fresh topic (RF 3, min.insync.replicas=2) whose leader is a node that is not the active
   controller, so the figure is partition failover, not a controller election. The killed node
   is restarted before the next round. Broker settings are the defaults of each broker
   (broker.session.timeout.ms, broker.heartbeat.interval.ms, replica.lag.time.max.ms, ...).
   With --failover-signal term the leader gets SIGTERM instead: a controlled shutdown, in which
   it still answers (NOT_LEADER_OR_FOLLOWER once leadership moved, with the new leader named
   from Produce v10 on, KIP-951) and keeps acknowledging writes until then. The figure is then
   the time from the signal to the acknowledgement of the first write the new leader appended:
   the partition is read back after the round (raw Fetch), and the first offset in a batch of a
   later leader epoch marks it. With --java-client a Java producer (bench/FailoverProducer.java)
   writes beside the confluent-kafka one and is measured the same way.

Every node is a combined broker + controller (KRaft), on free loopback ports, in a temporary
directory; the script stops everything it started. Kafka nodes run with -Xmx1g.

    cargo build --release -p shale
    compat-tests/.venv/bin/python bench/replication.py --shale-bin target/release/shale \\
        [--records 200000] [--failovers 5] [--only shale|kafka] [--failover-signal kill|term] [--java-client]
    # several Shale builds in one run, each labelled in the tables:
    ... --shale-bin hints=PATH --shale-bin nohints=OTHER_PATH --skip-throughput --failover-signal term
"""

import argparse
import datetime as dt
import json
import logging
import os
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import kafkawire as kw
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parent.parent
KAFKA_LIB = ROOT / "compat-tests" / ".deps" / "kafka" / "lib"
START_TIMEOUT_S = 120
TOOL_TIMEOUT_S = 300
FAILOVER_TIMEOUT_S = 120
SEND_INTERVAL_S = 0.002
# Delivery reports read within this long after the kill are answers the killed leader had
# already sent (still in the client's socket buffer), not writes acknowledged by a new leader.
IN_FLIGHT_GUARD_S = 0.02


class BenchError(RuntimeError):
    pass


def log(msg):
    print(f"[replication {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_ports(count):
    """Distinct ports the kernel considers free now (all bound at once, then released)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def load_average():
    return float(Path("/proc/loadavg").read_text().split()[0])


# ---------------------------------------------------------------------------------------------
# DescribeQuorum v2 (flexible) through a broker: who is the active controller.


def _uvarint(data, pos):
    shift = value = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def active_controller(port):
    """The metadata quorum's leader id, asked of the broker on `port`; None when unknown."""
    topic = b"__cluster_metadata"
    client_id = b"replication-bench"
    header = struct.pack(">hhih", 55, 2, 7, len(client_id)) + client_id + b"\x00"
    body = bytes([2, len(topic) + 1]) + topic + bytes([2]) + struct.pack(">i", 0) + b"\x00\x00\x00"
    frame = header + body
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", _recv(sock, 4))[0]
            data = _recv(sock, size)
    except OSError:
        return None
    pos = 4  # correlation id
    _, pos = _uvarint(data, pos)  # header tagged fields (count 0)
    (error,) = struct.unpack_from(">h", data, pos)
    pos = _skip_compact_string(data, pos + 2)  # error message
    if error != 0:
        return None
    _, pos = _uvarint(data, pos)  # topics
    pos = _skip_compact_string(data, pos)  # topic name
    _, pos = _uvarint(data, pos)  # partitions
    _, partition_error = struct.unpack_from(">ih", data, pos)
    pos = _skip_compact_string(data, pos + 6)  # error message
    (leader_id,) = struct.unpack_from(">i", data, pos)
    return leader_id if partition_error == 0 and leader_id >= 0 else None


def _skip_compact_string(data, pos):
    length_plus_one, pos = _uvarint(data, pos)
    return pos + max(length_plus_one - 1, 0)


def _recv(sock, count):
    buf = b""
    while len(buf) < count:
        chunk = sock.recv(count - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


# ---------------------------------------------------------------------------------------------
# Three-node clusters


class Node:
    def __init__(self, node_id, client_port, controller_port, root):
        self.id = node_id
        self.client_port = client_port
        self.controller_port = controller_port
        self.dir = root / f"node-{node_id}"
        self.dir.mkdir(parents=True)
        self.proc = None
        self.log_path = None
        self.spawns = 0

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


class Cluster:
    name = "cluster"
    ready_marker = ""

    def __init__(self, root, logs):
        self.root = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=root))
        self.logs = logs
        ports = free_ports(6)
        self.nodes = {i + 1: Node(i + 1, ports[2 * i], ports[2 * i + 1], self.root) for i in range(3)}
        self.voters = ",".join(f"{n.id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())

    @property
    def bootstrap(self):
        return ",".join(f"127.0.0.1:{n.client_port}" for n in self.nodes.values() if n.alive())

    def format(self):
        raise NotImplementedError

    def command(self, node):
        raise NotImplementedError

    def spawn(self, node):
        node.spawns += 1
        node.log_path = self.logs / f"{self.name}-node-{node.id}-{node.spawns}.log"
        out = open(node.log_path, "wb")
        cmd = self.command(node)
        out.write(("$ " + " ".join(cmd) + "\n").encode())
        out.flush()
        node.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=node.dir, start_new_session=True)
        out.close()

    def wait_ready(self, node):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if node.proc.poll() is not None:
                raise BenchError(f"{self.name} node {node.id} exited with {node.proc.returncode}:\n{tail(node.log_path)}")
            if self.ready_marker in node.log_path.read_text(errors="replace"):
                return
            time.sleep(0.05)
        raise BenchError(f"{self.name} node {node.id} not ready in {START_TIMEOUT_S}s:\n{tail(node.log_path)}")

    def start(self):
        self.format()
        for node in self.nodes.values():
            self.spawn(node)
        for node in self.nodes.values():
            self.wait_ready(node)

    def kill(self, node):
        os.killpg(node.proc.pid, signal.SIGKILL)
        node.proc.wait()

    def terminate(self, node, wait=True, timeout=60):
        """SIGTERM: the node's controlled shutdown (its partitions' leadership moves to other
        replicas while it still answers, then it exits). SIGKILL after `timeout` seconds."""
        os.killpg(node.proc.pid, signal.SIGTERM)
        if wait:
            self.wait_exit(node, timeout)

    def wait_exit(self, node, timeout=60):
        try:
            node.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log(f"{self.name} node {node.id} still running {timeout}s after SIGTERM: SIGKILL")
            os.killpg(node.proc.pid, signal.SIGKILL)
            node.proc.wait()

    def restart(self, node):
        self.spawn(node)
        self.wait_ready(node)

    def stop(self):
        for node in self.nodes.values():
            if node.alive():
                try:
                    os.killpg(node.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for node in self.nodes.values():
            if node.proc is None:
                continue
            try:
                node.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(node.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                node.proc.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)

    def cpu_seconds(self):
        total = 0.0
        for node in self.nodes.values():
            if node.alive():
                stat = Path(f"/proc/{node.proc.pid}/stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def controller(self):
        for node in self.nodes.values():
            if node.alive():
                leader = active_controller(node.client_port)
                if leader is not None:
                    return leader
        return None


def tail(path, lines=30):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# Same non-default settings on both brokers: internal topics with one replica (no consumer
# groups or transactions run here), no initial rebalance delay. Replication and failure
# detection settings stay at their defaults.
COMMON = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
}


# --broker-config KEY=VALUE: set on every node of both brokers (empty by default).
EXTRA_CONFIG = {}


def node_properties(cluster, node):
    return {
        "node.id": str(node.id),
        "process.roles": "broker,controller",
        "controller.quorum.voters": cluster.voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{node.client_port},CONTROLLER://127.0.0.1:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.client_port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(node.dir / "data"),
        **COMMON,
        **EXTRA_CONFIG,
    }


class ShaleCluster(Cluster):
    name = "shale"
    ready_marker = "Shale server started"

    def __init__(self, root, logs, binary, label="shale"):
        self.name = label  # several Shale builds may run in one invocation; logs carry the label
        super().__init__(root, logs)
        self.binary = str(Path(binary).resolve())

    def overrides(self, node):
        args = []
        for key, value in node_properties(self, node).items():
            args += ["--override", f"{key}={value}"]
        return args

    def format(self):
        cluster_id = subprocess.run([self.binary, "random-uuid"], check=True, capture_output=True,
                                    text=True).stdout.strip()
        for node in self.nodes.values():
            subprocess.run([self.binary, "format", "--cluster-id", cluster_id] + self.overrides(node),
                           check=True, capture_output=True, timeout=60)

    def command(self, node):
        return [self.binary, "serve"] + self.overrides(node)


class KafkaCluster(Cluster):
    name = "kafka"
    ready_marker = "Kafka Server started"

    def __init__(self, root, logs, lib_dir):
        super().__init__(root, logs)
        self.lib_dir = lib_dir
        self.log4j = self.root / "log4j2.properties"
        self.log4j.write_text(
            "rootLogger.level=INFO\nrootLogger.appenderRef.out.ref=OUT\n"
            "appender.out.type=Console\nappender.out.name=OUT\n"
            "appender.out.layout.type=PatternLayout\nappender.out.layout.pattern=[%d] %p %m (%c)%n\n"
        )

    def props_path(self, node):
        return node.dir / "server.properties"

    def java(self, *args):
        return ["java", "-Xmx1g", f"-Dlog4j2.configurationFile={self.log4j}", "-cp", f"{self.lib_dir}/*", *args]

    def format(self):
        run = subprocess.run(self.java("kafka.tools.StorageTool", "random-uuid"), capture_output=True,
                             text=True, timeout=120)
        cluster_id = run.stdout.strip().splitlines()[-1]
        formats = []
        for node in self.nodes.values():
            props = node_properties(self, node)
            self.props_path(node).write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            # A static quorum (controller.quorum.voters): formatted without --standalone or
            # --initial-controllers.
            formats.append(subprocess.Popen(
                self.java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self.props_path(node))),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for proc in formats:
            out, _ = proc.communicate(timeout=180)
            if proc.returncode != 0:
                raise BenchError(f"StorageTool format failed:\n{out}")

    def command(self, node):
        return self.java("kafka.Kafka", str(self.props_path(node)))


# ---------------------------------------------------------------------------------------------
# Topics


def create_topic(bootstrap, name, assignment, min_isr):
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    deadline = time.monotonic() + 60
    while True:
        topic = NewTopic(name, num_partitions=1, replica_assignment=[assignment], config={"min.insync.replicas": str(min_isr)})
        try:
            admin.create_topics([topic], request_timeout=30)[name].result(40)
            break
        except Exception as err:  # a restarted broker may not be registered (unfenced) yet
            code = err.args[0].code() if err.args and isinstance(err.args[0], KafkaError) else None
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                break
            if time.monotonic() > deadline:
                raise BenchError(f"create topic {name}: {err}")
            time.sleep(0.5)
    # Wait until the partition has its preferred leader and every replica in the ISR.
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic=name, timeout=10)
        partition = meta.topics[name].partitions.get(0) if name in meta.topics else None
        if partition is not None and partition.leader == assignment[0] and sorted(partition.isrs) == sorted(assignment):
            return
        time.sleep(0.2)
    raise BenchError(f"topic {name}: leader {assignment[0]} with full ISR not reached in 60 s")


def producer_performance(bootstrap, topic, records, log_path):
    cmd = ["java", "-Xmx1g", "-Xms1g", "-cp", f"{KAFKA_LIB}/*", "org.apache.kafka.tools.ProducerPerformance",
           "--topic", topic, "--num-records", str(records), "--record-size", "1024", "--throughput", "-1",
           "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {TOOL_TIMEOUT_S}s"}
    log_path.write_text("$ " + " ".join(cmd) + "\n" + out.stdout + out.stderr)
    summary = [line for line in out.stdout.splitlines() if re.match(r"\d+ records sent, ", line)]
    if out.returncode != 0 or not summary:
        return {"ok": False, "exit_code": out.returncode, "tail": (out.stdout + out.stderr)[-800:]}
    m = re.match(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                 r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th", summary[-1])
    errors = [line for line in (out.stdout + out.stderr).splitlines() if "ERROR" in line or "Exception" in line]
    return {"ok": int(m.group(1)) == records and not errors, "records": int(m.group(1)),
            "records_per_s": float(m.group(2)), "mb_per_s": float(m.group(3)),
            "latency_avg_ms": float(m.group(4)), "latency_max_ms": float(m.group(5)),
            "latency_p50_ms": int(m.group(6)), "latency_p99_ms": int(m.group(8)), "errors": errors[:5]}


# ---------------------------------------------------------------------------------------------
# Failover


def watch_new_leader(bootstrap, topic, victim, elected):
    """Polls Metadata on the surviving nodes every 50 ms; records when another leader shows."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    deadline = time.monotonic() + FAILOVER_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            partition = admin.list_topics(topic=topic, timeout=2).topics[topic].partitions.get(0)
        except Exception:  # a node answering mid-election; the next poll decides
            partition = None
        if partition is not None and partition.leader not in (-1, victim):
            elected["at"] = time.monotonic()
            return
        time.sleep(0.05)


class ClientLog(logging.Handler):
    """librdkafka's debug lines (contexts broker and metadata) of one producer, to count the
    Produce answers NOT_LEADER_OR_FOLLOWER and the leader updates taken from them (KIP-951)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []  # (monotonic time the line was served by poll(), text)

    def emit(self, record):
        self.lines.append((time.monotonic(), record.getMessage()))

    def logger(self, name):
        lg = logging.getLogger(name)
        lg.propagate = False
        lg.setLevel(logging.DEBUG)
        lg.handlers = [self]
        return lg

    def counts(self, since):
        after = [text for t, text in self.lines if t >= since]
        return {"not_leader_answers": sum(1 for x in after if "REQERR" in x and "Not leader for partition" in x),
                "leader_updates_from_answers": sum(1 for x in after if "METADATAUPDATE" in x
                                                   and "updated with leader" in x)}


class JavaProducer:
    """bench/FailoverProducer.java (kafka-clients) writing beside the confluent-kafka producer:
    its delivery reports, timed on the same monotonic clock."""

    def __init__(self, bootstrap, topic, lib_dir, log_path):
        self.acks = []  # (monotonic time, offset)
        self.errors = []
        self.done = threading.Event()
        self.log_path = log_path
        self.log = open(log_path, "wb")
        # The Sender's warnings name each error answer it retries (NOT_LEADER_OR_FOLLOWER ...).
        log4j = log_path.with_suffix(".log4j2.properties")
        log4j.write_text(
            "rootLogger.level=ERROR\nrootLogger.appenderRef.err.ref=ERR\n"
            "logger.sender.name=org.apache.kafka.clients.producer.internals.Sender\nlogger.sender.level=WARN\n"
            "appender.err.type=Console\nappender.err.name=ERR\nappender.err.target=SYSTEM_ERR\n"
            "appender.err.layout.type=PatternLayout\nappender.err.layout.pattern=[%d] %p %m (%c)%n\n")
        cmd = ["java", "-Xmx256m", f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{lib_dir}/*",
               str(ROOT / "bench" / "FailoverProducer.java"), bootstrap, topic, str(SEND_INTERVAL_S * 1000)]
        self.log.write(("$ " + " ".join(cmd) + "\n").encode())
        self.log.flush()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            kind, _, rest = line.strip().partition(" ")
            if kind == "ack":
                at, offset = rest.split()
                self.acks.append((int(at) / 1e9, int(offset)))
            elif kind == "err":
                at, _, message = rest.partition(" ")
                self.errors.append((int(at) / 1e9, message))
            elif kind == "done":
                self.done.set()

    def stop(self):
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.reader.join(timeout=10)
        self.log.close()
        return self.done.is_set()

    def not_leader_answers(self):
        text = Path(self.log_path).read_text(errors="replace")
        return sum(1 for line in text.splitlines() if "Got error produce response" in line
                   and "NOT_LEADER_OR_FOLLOWER" in line)


def leader_epochs(port, topic):
    """(base offset, last offset, leader epoch) of every batch of partition 0, read with raw
    Fetch v12 requests from the broker on `port` up to its high watermark."""
    batches, offset = [], 0
    while True:
        body = kw.fetch_request(12, 0, fetch_offset=offset, topic=topic, max_bytes=4 << 20)
        answer = kw.decode_fetch_response(12, kw.call(port, kw.FETCH, 12, body))
        p = answer["topics"][0]["partitions"][0]
        if p["error_code"] != 0:
            raise BenchError(f"fetch {topic} at {offset} from port {port}: {kw.error_name(p['error_code'])}")
        found = kw.batch_headers(p["records"] or b"")
        batches += [b for b in found if b[1] >= offset]
        if found:
            offset = found[-1][1] + 1
        if offset >= p["high_watermark"] or not found:
            return batches, p["high_watermark"]


def handover(acks, signalled_at, first_new_offset):
    """One client's failover from its acknowledgements (time, offset): when the first write the
    new leader appended (an offset in a batch of a later leader epoch) was acknowledged, and the
    longest time the client went without any acknowledgement between the signal and then (an
    old-epoch write may still be acknowledged late, by the new leader's duplicate check on the
    client's retry)."""
    new = [(t, o) for t, o in acks if o >= first_new_offset]
    if not new:
        return None
    first_new, first_new_offset_acked = min(new)
    old = [t for t, o in acks if o < first_new_offset]
    times = sorted([signalled_at] + [t for t, _ in acks if signalled_at < t <= first_new])
    return {
        "failover_ms": round((first_new - signalled_at) * 1000, 1),
        "longest_gap_ms": round(max(b - a for a, b in zip(times, times[1:])) * 1000, 1),
        "last_old_epoch_ack_ms": round((max(old) - signalled_at) * 1000, 1) if old else None,
        "first_new_epoch_acked_offset": first_new_offset_acked,
    }


def failover_round(cluster, round_no, cfg):
    """Stops the leader of a fresh RF 3 partition under load: a node that is not the active
    controller, or with --kill-controller the node that is; with SIGKILL (default) or SIGTERM
    (--failover-signal term, a controlled shutdown). Returns the round's figures."""
    term = cfg.failover_signal == "term"
    controller = cluster.controller()
    if controller is None:
        raise BenchError("no active controller known")
    if cfg.kill_controller:
        victim = controller
    else:
        candidates = [i for i in cluster.nodes if i != controller]
        victim = candidates[round_no % len(candidates)]
    others = [i for i in cluster.nodes if i != victim]
    topic = f"failover-{round_no}"
    create_topic(cluster.bootstrap, topic, [victim] + others, 2)

    delivered = []  # (monotonic time, error or None, offset)
    conf = {
        "bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
        "linger.ms": 0, "client.id": f"failover-{round_no}", "log_level": 2,
    }
    client_log = None
    if term:
        # Whether the old leader's answers reached the client: librdkafka's debug lines.
        client_log = ClientLog()
        conf.update({"debug": "broker,metadata", "log_level": 7})
        producer = Producer(conf, logger=client_log.logger(f"rdkafka-{cluster.name}-{round_no}"))
    else:
        producer = Producer(conf)
    java = None
    if cfg.java_client:
        java = JavaProducer(cluster.bootstrap, topic, cfg.kafka_lib,
                            cluster.logs / f"{cluster.name}-failover-{round_no + 1}-java.log")

    def on_delivery(err, msg):
        delivered.append((time.monotonic(), err, msg.offset() if err is None else None))

    def send_for(seconds, stop_when=None):
        end = time.monotonic() + seconds
        next_send = time.monotonic()
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_send:
                producer.produce(topic, value=b"x" * 100, partition=0, on_delivery=on_delivery)
                next_send += SEND_INTERVAL_S
            producer.poll(max(0.0, min(next_send - time.monotonic(), 0.001)))
            if stop_when is not None and stop_when():
                return True
        return False

    try:
        if java is not None and not send_for(60, lambda: bool(java.acks) or java.proc.poll() is not None):
            raise BenchError(f"round {round_no}: the Java producer had no write acknowledged in 60 s")
        if java is not None and not java.acks:
            raise BenchError(f"round {round_no}: the Java producer exited:\n{tail(java.log.name)}")
        send_for(2.0)  # steady writes before the kill
        acked_before = sum(1 for _, err, _ in delivered if err is None)
        if acked_before == 0:
            raise BenchError(f"round {round_no}: no write acknowledged before the leader was stopped")
        state = kw.partition_state(cluster.nodes[victim].client_port, topic)
        old_epoch = state[1] if state else None
        before = len(delivered)
        survivors = ",".join(f"127.0.0.1:{cluster.nodes[i].client_port}" for i in others)
        elected = {}
        watcher = threading.Thread(target=watch_new_leader, args=(survivors, topic, victim, elected), daemon=True)
        killed_at = time.monotonic()
        if term:
            cluster.terminate(cluster.nodes[victim], wait=False)
        else:
            cluster.kill(cluster.nodes[victim])
        killed_done = time.monotonic()
        watcher.start()

        def acked_after():
            return any(err is None and t - killed_done > IN_FLIGHT_GUARD_S for t, err, _ in delivered[before:])

        settled = {}

        def handed_over():
            # SIGTERM: the old leader acknowledges writes until leadership moves, so no single
            # ack ends the round; it ends 1.5 s after the new leader shows and the node exited.
            if "at" not in elected or cluster.nodes[victim].alive():
                return False
            settled.setdefault("at", time.monotonic())
            return time.monotonic() - settled["at"] > 1.5

        if not send_for(FAILOVER_TIMEOUT_S, handed_over if term else acked_after):
            raise BenchError(f"round {round_no}: no {'handover' if term else 'write acknowledged'} within "
                             f"{FAILOVER_TIMEOUT_S}s of the {'SIGTERM' if term else 'kill'}")
        send_for(1.0)
        remaining = producer.flush(30)
        java_clean = java.stop() if java is not None else None
        watcher.join(timeout=FAILOVER_TIMEOUT_S)
    finally:
        if java is not None and java.proc.poll() is None:
            java.stop()
    errors = [str(err) for _, err, _ in delivered if err is not None]
    meta = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2}).list_topics(topic=topic, timeout=10)
    new_leader = meta.topics[topic].partitions[0].leader
    result = {
        "round": round_no + 1, "controller": controller, "killed": victim, "signal": "SIGTERM" if term else "SIGKILL",
        "new_leader": new_leader, "old_leader_epoch": old_epoch,
        "new_leader_in_metadata_ms": round((elected["at"] - killed_at) * 1000, 1) if "at" in elected else None,
        "kill_syscall_ms": round((killed_done - killed_at) * 1000, 1),
        "records_acked": sum(1 for _, err, _ in delivered if err is None),
        "delivery_errors": len(errors), "first_errors": errors[:3], "undelivered_at_end": remaining,
    }
    acks = [(t, offset) for t, err, offset in delivered if err is None]
    if term:
        # Which writes the new leader acknowledged: those in batches of a later leader epoch.
        batches, high_watermark = leader_epochs(cluster.nodes[new_leader].client_port, topic)
        epochs = sorted({e for _, _, e in batches})
        later = [base for base, _, e in batches if old_epoch is not None and e > old_epoch]
        if not later:
            raise BenchError(f"round {round_no}: no batch of an epoch past {old_epoch} (epochs {epochs})")
        first_new_offset = min(later)
        result.update({"batch_epochs": epochs, "first_new_epoch_offset": first_new_offset,
                       "high_watermark": high_watermark})
        figures = handover(acks, killed_at, first_new_offset)
        if figures is None:
            raise BenchError(f"round {round_no}: confluent-kafka had no write acknowledged by the new leader")
        result.update(figures)
        result.update(client_log.counts(killed_at))
        (cluster.logs / f"{cluster.name}-failover-{round_no + 1}-librdkafka.log").write_text(
            "".join(f"{t - killed_at:+.4f} {text}\n" for t, text in client_log.lines))
    else:
        first_ack = next(t for t, _ in acks if t > killed_done + IN_FLIGHT_GUARD_S)
        result["failover_ms"] = round((first_ack - killed_at) * 1000, 1)
    if java is not None:
        java_result = {"records_acked": len(java.acks), "delivery_errors": len(java.errors),
                       "first_errors": [m for _, m in java.errors[:3]], "clean_exit": java_clean}
        if term:
            figures = handover(java.acks, killed_at, first_new_offset)
            if figures is None:
                raise BenchError(f"round {round_no}: the Java producer had no write acknowledged by the new leader")
            java_result.update(figures)
            java_result["not_leader_answers"] = java.not_leader_answers()
        else:
            first = [t for t, _ in java.acks if t > killed_done + IN_FLIGHT_GUARD_S]
            if not first:
                raise BenchError(f"round {round_no}: the Java producer had no write acknowledged after the kill")
            java_result["failover_ms"] = round((min(first) - killed_at) * 1000, 1)
        result["java"] = java_result
    what = "SIGTERM to" if term else "killed"
    extra = f", Java next ack after {result['java']['failover_ms']:.0f} ms" if java is not None else ""
    stall = f" (longest time without an ack {result['longest_gap_ms']} ms)" if term else ""
    log(f"{cluster.name} failover {round_no + 1}: {what} node {victim} (controller {controller}), next ack "
        f"{'by the new leader ' if term else ''}after {result['failover_ms']:.0f} ms{stall}{extra} (new leader in "
        f"Metadata after {result['new_leader_in_metadata_ms']} ms), new leader {new_leader}, delivery errors {len(errors)}")
    if term:
        cluster.wait_exit(cluster.nodes[victim])
    cluster.restart(cluster.nodes[victim])
    return result


# ---------------------------------------------------------------------------------------------


def measure(cluster, cfg, out):
    out["load_start"] = load_average()
    cluster.start()
    try:
        if not cfg.skip_throughput:
            create_topic(cluster.bootstrap, "warmup", [1, 2, 3], 2)
            producer_performance(cluster.bootstrap, "warmup", max(10_000, cfg.records // 10),
                                 cluster.logs / f"{cluster.name}-warmup.log")
        for rf, assignment in () if cfg.skip_throughput else ((1, [1]), (3, [1, 2, 3])):
            topic = f"rf{rf}"
            create_topic(cluster.bootstrap, topic, assignment, min(rf, 2))
            cpu_before = cluster.cpu_seconds()
            load_before = load_average()
            result = producer_performance(cluster.bootstrap, topic, cfg.records,
                                          cluster.logs / f"{cluster.name}-produce-rf{rf}.log")
            result["brokers_cpu_s"] = round(cluster.cpu_seconds() - cpu_before, 2)
            result["load_before"] = load_before
            out[f"produce_rf{rf}"] = result
            log(f"{cluster.name} RF {rf}: {result.get('mb_per_s')} MB/s, {result.get('records_per_s')} records/s")
        rounds = out["failover_rounds"] = []
        for round_no in range(cfg.failovers):
            rounds.append(failover_round(cluster, round_no, cfg))
        out["failover_signal"] = "SIGTERM" if cfg.failover_signal == "term" else "SIGKILL"
        spread(out, "failover", [r["failover_ms"] for r in rounds])
        spread(out, "longest_gap", [r.get("longest_gap_ms") for r in rounds])
        spread(out, "java_failover", [r.get("java", {}).get("failover_ms") for r in rounds])
        spread(out, "java_longest_gap", [r.get("java", {}).get("longest_gap_ms") for r in rounds])
        if cfg.failover_signal == "term":
            # Rounds in which the old leader answered a Produce NOT_LEADER_OR_FOLLOWER before it
            # closed the client's connection (only such an answer can carry a leader hint).
            out["not_leader_rounds"] = sum(1 for r in rounds if r.get("not_leader_answers"))
            if cfg.java_client:
                out["java_not_leader_rounds"] = sum(1 for r in rounds if r["java"].get("not_leader_answers"))
        seen = [r["new_leader_in_metadata_ms"] for r in rounds if r["new_leader_in_metadata_ms"] is not None]
        out["new_leader_in_metadata_median_ms"] = statistics.median(seen) if seen else None
    finally:
        out["load_end"] = load_average()
        cluster.stop()


def spread(out, name, values):
    """`<name>_median_ms`, `_min_ms` and `_max_ms` of the rounds' values (left out when none)."""
    values = [v for v in values if v is not None]
    if values:
        out[f"{name}_median_ms"] = statistics.median(values)
        out[f"{name}_min_ms"] = min(values)
        out[f"{name}_max_ms"] = max(values)


def fmt(value, digits=1):
    return "n/a" if value is None else f"{value:,.{digits}f}"


def table(results):
    s, k = results.get((results.get("shale_labels") or ["shale"])[0], {}), results.get("kafka", {})

    def value(r, run, key):
        entry = r.get(run) or {}
        return entry.get(key)

    def ratio(a, b):
        return None if a is None or not b else a / b

    rows = ["| Metric | Shale | Kafka | Shale/Kafka |", "|---|---:|---:|---:|"]
    throughput = any("produce_rf3" in r for r in (s, k))
    for rf in (3, 1) if throughput else ():
        for key, unit in (("mb_per_s", "MB/s"), ("records_per_s", "records/s")):
            sv, kv = value(s, f"produce_rf{rf}", key), value(k, f"produce_rf{rf}", key)
            label = "RF 3, min.insync.replicas=2" if rf == 3 else "RF 1"
            digits = 1 if unit == "MB/s" else 0
            rows.append(f"| Produce 1 KiB, acks=all, 1 partition, {label} ({unit}) | {fmt(sv, digits)} | {fmt(kv, digits)} | "
                        f"{fmt(ratio(sv, kv), 2)} |")
    for key, name in (("latency_avg_ms", "avg"), ("latency_p99_ms", "p99")) if throughput else ():
        sv, kv = value(s, "produce_rf3", key), value(k, "produce_rf3", key)
        rows.append(f"| Produce RF 3 acks=all latency {name} (ms) | {fmt(sv)} | {fmt(kv)} | {fmt(ratio(sv, kv), 2)} |")
    for rf in (3, 1) if throughput else ():
        sv, kv = value(s, f"produce_rf{rf}", "brokers_cpu_s"), value(k, f"produce_rf{rf}", "brokers_cpu_s")
        rows.append(f"| CPU seconds of the three brokers, RF {rf} run | {fmt(sv, 2)} | {fmt(kv, 2)} | "
                    f"{fmt(ratio(sv, kv), 2)} |")
    sv, kv = s.get("failover_median_ms"), k.get("failover_median_ms")
    r = ratio(sv, kv)
    met = "n/a" if r is None else ("yes" if r < 1 / 3 else "**no**")
    who = "also" if results.get("killed_leader_is_controller") else "not"
    if results.get("failover_signal") == "term":
        rows.append(f"| Failover, leader ({who} the active controller) SIGTERM to the first write acknowledged by the "
                    f"new leader, median (ms) | {fmt(sv, 0)} | {fmt(kv, 0)} | {fmt(r, 2)} |")
    else:
        rows.append(f"| Failover, leader ({who} the active controller) kill -9 to next acknowledged write, median (ms);"
                    f" goal Shale/Kafka < 1/3: {met} | "
                    f"{fmt(sv, 0)} | {fmt(kv, 0)} | {fmt(r, 2)} |")
    sv, kv = s.get("new_leader_in_metadata_median_ms"), k.get("new_leader_in_metadata_median_ms")
    signal_name = "SIGTERM" if results.get("failover_signal") == "term" else "kill"
    rows.append(f"| of which: {signal_name} to the new leader in Metadata, median (ms) | {fmt(sv, 0)} | {fmt(kv, 0)} | "
                f"{fmt(ratio(sv, kv), 2)} |")
    for key, name in (("failover_min_ms", "min"), ("failover_max_ms", "max")):
        rows.append(f"| Failover {name} (ms) | {fmt(s.get(key), 0)} | {fmt(k.get(key), 0)} | - |")
    loads = []
    for name, r in (("Shale", s), ("Kafka", k)):
        if r:
            during = "/".join(fmt(value(r, f"produce_rf{rf}", "load_before"), 2) for rf in (1, 3))
            during = f", {during} before the RF 1/RF 3 runs" if throughput else ""
            loads.append(f"{name} {fmt(r.get('load_start'), 2)} at start{during}, {fmt(r.get('load_end'), 2)} at end")
    rows.append("")
    rows.append("1-minute load average: " + "; ".join(loads) + ".")
    return "\n".join(rows)


def failover_table(results):
    """One row per broker run and client: the failover figures of every Shale build and Kafka."""
    term = results.get("failover_signal") == "term"
    what = "SIGTERM to the first write acknowledged by the new leader" if term else "kill -9 to the next acknowledged write"
    head = f"| Broker | Client | {what}, median / max (ms) |"
    sep = "|---|---|---:|"
    if term:
        head += (" longest time without an acknowledgement, median / max (ms) | rounds the old leader answered "
                 "NOT_LEADER_OR_FOLLOWER |")
        sep += "---:|---:|"
    head += " new leader in Metadata, median (ms) |"
    sep += "---:|"
    rows = [head, sep]
    for label in (results.get("shale_labels") or []) + ["kafka"]:
        r = results.get(label)
        if not r or "failover_median_ms" not in r:
            continue
        clients = [("confluent-kafka (librdkafka)", "")]
        if "java_failover_median_ms" in r:
            clients.append(("Java (kafka-clients)", "java_"))
        for client, prefix in clients:
            row = (f"| {label} | {client} | {fmt(r.get(prefix + 'failover_median_ms'), 0)} / "
                   f"{fmt(r.get(prefix + 'failover_max_ms'), 0)} |")
            if term:
                answered = r.get(prefix + "not_leader_rounds")
                answered = "n/a" if answered is None else f"{answered}/{len(r.get('failover_rounds', []))}"
                row += (f" {fmt(r.get(prefix + 'longest_gap_median_ms'), 0)} / "
                        f"{fmt(r.get(prefix + 'longest_gap_max_ms'), 0)} | {answered} |")
            row += f" {fmt(r.get('new_leader_in_metadata_median_ms'), 0)} |"
            rows.append(row)
    return "\n".join(rows)


def shale_builds(args):
    """`--shale-bin [LABEL=]PATH` values as (label, path); unlabelled ones are shale, shale-2, ..."""
    out = []
    for i, arg in enumerate(args):
        label, sep, path = arg.partition("=")
        if not sep or "/" in label or not label:
            label, path = ("shale" if i == 0 else f"shale-{i + 1}"), arg
        if label in [l for l, _ in out] or label == "kafka":
            raise SystemExit(f"--shale-bin label {label} given twice (or named kafka)")
        out.append((label, path))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shale-bin", action="append", metavar="[LABEL=]PATH",
                    help="a Shale binary (default target/release/shale); repeat it to measure several builds in "
                         "one run, each labelled in the table")
    ap.add_argument("--kafka-lib", default=str(KAFKA_LIB))
    ap.add_argument("--records", type=int, default=200_000, help="records per produce run")
    ap.add_argument("--failovers", type=int, default=5, help="leader kills per broker")
    ap.add_argument("--only", choices=["shale", "kafka"])
    ap.add_argument("--kill-controller", action="store_true",
                    help="the killed partition leader is also the active controller (default: it is not)")
    ap.add_argument("--skip-throughput", action="store_true", help="failover rounds only")
    ap.add_argument("--failover-signal", choices=["kill", "term"], default="kill",
                    help="stop the partition leader with SIGKILL (default) or SIGTERM (a controlled shutdown: the "
                         "old leader answers NOT_LEADER_OR_FOLLOWER while leadership moves)")
    ap.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for every node of both brokers (repeatable), e.g. replica.fetch.backoff.ms=100")
    ap.add_argument("--java-client", action="store_true",
                    help="a Java producer (kafka-clients, bench/FailoverProducer.java) writes beside the "
                         "confluent-kafka one in every failover round")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    cfg = ap.parse_args()
    builds = shale_builds(cfg.shale_bin or [str(ROOT / "target" / "release" / "shale")])
    for setting in cfg.broker_config:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise SystemExit(f"--broker-config {setting}: KEY=VALUE expected")
        EXTRA_CONFIG[key] = value

    def on_signal(signum, _frame):
        raise SystemExit(f"interrupted by signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    cfg.results.mkdir(parents=True, exist_ok=True)
    logs = cfg.results / f"replication-{stamp}-logs"
    logs.mkdir(parents=True)
    workroot = Path(tempfile.mkdtemp(prefix="replication-bench-"))
    results = {"timestamp_utc": stamp, "records_per_produce_run": cfg.records, "failovers": cfg.failovers,
               "killed_leader_is_controller": cfg.kill_controller, "failover_signal": cfg.failover_signal,
               "java_client": cfg.java_client, "broker_config": dict(EXTRA_CONFIG), "nproc": os.cpu_count(),
               "shale_labels": [] if cfg.only == "kafka" else [label for label, _ in builds],
               "shale_bins": {} if cfg.only == "kafka" else {label: str(Path(path).resolve()) for label, path in builds}}
    failures = []
    try:
        for label, path in builds if cfg.only != "kafka" else ():
            try:
                measure(ShaleCluster(workroot, logs, path, label), cfg, results.setdefault(label, {}))
            except BenchError as err:
                failures.append(f"{label}: {err}")
                log(f"{label} FAILED: {err}")
        if cfg.only != "shale":
            try:
                measure(KafkaCluster(workroot, logs, cfg.kafka_lib), cfg, results.setdefault("kafka", {}))
            except BenchError as err:
                failures.append(f"kafka: {err}")
                log(f"kafka FAILED: {err}")
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    results["failures"] = failures
    results["markdown"] = table(results) + "\n\n" + failover_table(results)
    json_path = cfg.results / f"replication-{stamp}.json"
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    print(results["markdown"])
    print(f"\nResults: {json_path}\nLogs:    {logs}")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
