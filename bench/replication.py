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

Every node is a combined broker + controller (KRaft), on free loopback ports, in a temporary
directory; the script stops everything it started. Kafka nodes run with -Xmx1g.

    cargo build --release -p shale
    compat-tests/.venv/bin/python bench/replication.py --shale-bin target/release/shale \\
        [--records 200000] [--failovers 5] [--only shale|kafka]
"""

import argparse
import datetime as dt
import json
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
    }


class ShaleCluster(Cluster):
    name = "shale"
    ready_marker = "Shale server started"

    def __init__(self, root, logs, binary):
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


def failover_round(cluster, round_no, kill_controller):
    """Kills the leader of a fresh RF 3 partition under load: a node that is not the active
    controller, or with `kill_controller` the node that is; returns the round's figures."""
    controller = cluster.controller()
    if controller is None:
        raise BenchError("no active controller known")
    if kill_controller:
        victim = controller
    else:
        candidates = [i for i in cluster.nodes if i != controller]
        victim = candidates[round_no % len(candidates)]
    others = [i for i in cluster.nodes if i != victim]
    topic = f"failover-{round_no}"
    create_topic(cluster.bootstrap, topic, [victim] + others, 2)

    delivered = []  # (monotonic time, error or None)
    producer = Producer({
        "bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
        "linger.ms": 0, "client.id": f"failover-{round_no}", "log_level": 2,
    })

    def on_delivery(err, _msg):
        delivered.append((time.monotonic(), err))

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

    send_for(2.0)  # steady writes before the kill
    acked_before = sum(1 for _, err in delivered if err is None)
    if acked_before == 0:
        raise BenchError(f"round {round_no}: no write acknowledged before the kill")
    before = len(delivered)
    survivors = ",".join(f"127.0.0.1:{cluster.nodes[i].client_port}" for i in others)
    elected = {}
    killed_at = time.monotonic()
    cluster.kill(cluster.nodes[victim])
    killed_done = time.monotonic()
    watcher = threading.Thread(target=watch_new_leader, args=(survivors, topic, victim, elected), daemon=True)
    watcher.start()

    def acked_after():
        return any(err is None and t - killed_done > IN_FLIGHT_GUARD_S for t, err in delivered[before:])

    if not send_for(FAILOVER_TIMEOUT_S, acked_after):
        raise BenchError(f"round {round_no}: no write acknowledged within {FAILOVER_TIMEOUT_S}s of the kill")
    first_ack = next(t for t, err in delivered[before:] if err is None and t - killed_done > IN_FLIGHT_GUARD_S)
    send_for(1.0)
    remaining = producer.flush(30)
    watcher.join(timeout=FAILOVER_TIMEOUT_S)
    errors = [str(err) for _, err in delivered if err is not None]
    meta = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2}).list_topics(topic=topic, timeout=10)
    new_leader = meta.topics[topic].partitions[0].leader
    result = {
        "round": round_no + 1, "controller": controller, "killed": victim, "new_leader": new_leader,
        "failover_ms": round((first_ack - killed_at) * 1000, 1),
        "new_leader_in_metadata_ms": round((elected["at"] - killed_at) * 1000, 1) if "at" in elected else None,
        "kill_syscall_ms": round((killed_done - killed_at) * 1000, 1),
        "records_acked": sum(1 for _, err in delivered if err is None),
        "delivery_errors": len(errors), "first_errors": errors[:3], "undelivered_at_end": remaining,
    }
    log(f"{cluster.name} failover {round_no + 1}: killed node {victim} (controller {controller}), next ack after "
        f"{result['failover_ms']:.0f} ms (new leader in Metadata after {result['new_leader_in_metadata_ms']} ms), "
        f"new leader {new_leader}, delivery errors {len(errors)}")
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
            rounds.append(failover_round(cluster, round_no, cfg.kill_controller))
        times = [r["failover_ms"] for r in rounds]
        out["failover_median_ms"] = statistics.median(times)
        out["failover_min_ms"] = min(times)
        out["failover_max_ms"] = max(times)
        seen = [r["new_leader_in_metadata_ms"] for r in rounds if r["new_leader_in_metadata_ms"] is not None]
        out["new_leader_in_metadata_median_ms"] = statistics.median(seen) if seen else None
    finally:
        out["load_end"] = load_average()
        cluster.stop()


def fmt(value, digits=1):
    return "n/a" if value is None else f"{value:,.{digits}f}"


def table(results):
    s, k = results.get("shale", {}), results.get("kafka", {})

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
    rows.append(f"| Failover, leader ({who} the active controller) kill -9 to next acknowledged write, median (ms);"
                f" goal Shale/Kafka < 1/3: {met} | "
                f"{fmt(sv, 0)} | {fmt(kv, 0)} | {fmt(r, 2)} |")
    sv, kv = s.get("new_leader_in_metadata_median_ms"), k.get("new_leader_in_metadata_median_ms")
    rows.append(f"| of which: kill to the new leader in Metadata, median (ms) | {fmt(sv, 0)} | {fmt(kv, 0)} | "
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shale-bin", default=str(ROOT / "target" / "release" / "shale"))
    ap.add_argument("--kafka-lib", default=str(KAFKA_LIB))
    ap.add_argument("--records", type=int, default=200_000, help="records per produce run")
    ap.add_argument("--failovers", type=int, default=5, help="leader kills per broker")
    ap.add_argument("--only", choices=["shale", "kafka"])
    ap.add_argument("--kill-controller", action="store_true",
                    help="the killed partition leader is also the active controller (default: it is not)")
    ap.add_argument("--skip-throughput", action="store_true", help="failover rounds only")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    cfg = ap.parse_args()

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
               "killed_leader_is_controller": cfg.kill_controller, "nproc": os.cpu_count()}
    failures = []
    try:
        if cfg.only != "kafka":
            try:
                measure(ShaleCluster(workroot, logs, cfg.shale_bin), cfg, results.setdefault("shale", {}))
            except BenchError as err:
                failures.append(f"shale: {err}")
                log(f"shale FAILED: {err}")
        if cfg.only != "shale":
            try:
                measure(KafkaCluster(workroot, logs, cfg.kafka_lib), cfg, results.setdefault("kafka", {}))
            except BenchError as err:
                failures.append(f"kafka: {err}")
                log(f"kafka FAILED: {err}")
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    results["failures"] = failures
    results["markdown"] = table(results)
    json_path = cfg.results / f"replication-{stamp}.json"
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    print(results["markdown"])
    print(f"\nResults: {json_path}\nLogs:    {logs}")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
