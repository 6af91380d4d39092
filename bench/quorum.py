#!/usr/bin/env python3
"""Metadata quorum figures on three real Shale processes (combined nodes on loopback).

  bench/quorum.py [--shale PATH] [--failovers N] [--seconds S] [--clients C]

1. Failover: kill -9 of the active controller to the next committed record. A CreateTopics
   is sent to a surviving node right after the kill; that node waits for a new leader and
   forwards the request to it, so the answer marks the first commit after the crash. The killed
   node is restarted (and caught up) before the next round.
2. Throughput: C connections spread over the three nodes send CreateTopics (one topic of one
   partition each: a topic record and a partition record) back to back for S seconds;
   records/s counts the metadata records committed. Each answer also waits for the broker to
   host the new partition, so this is the rate clients see, not the quorum's ceiling (for that:
   `cargo bench -p shale-metadata -- quorum3`).

Speaks just enough of Kafka's protocol (CreateTopics v4) to need no client library.
"""

import argparse
import os
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READY = "Shale server started"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kafka_string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.correlation = 0

    def create_topic(self, name):
        """CreateTopics v4 with one topic; returns its error code."""
        self.correlation += 1
        body = struct.pack(">i", 1) + kafka_string(name) + struct.pack(">ihii", 1, 1, 0, 0)
        body += struct.pack(">ib", 60000, 0)
        header = struct.pack(">hhi", 19, 4, self.correlation) + kafka_string("bench")
        frame = header + body
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self._read(4))[0]
        data = self._read(size)
        # correlation id, throttle time, topic count, name, error code
        (name_len,) = struct.unpack(">h", data[12:14])
        (error,) = struct.unpack(">h", data[14 + name_len:16 + name_len])
        return error

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def close(self):
        self.sock.close()


class Node:
    def __init__(self, node_id, shale, root, voters, client_port, controller_port):
        self.id = node_id
        self.shale = shale
        self.client_port = client_port
        self.controller_port = controller_port
        self.data = os.path.join(root, f"node-{node_id}")
        self.log_path = os.path.join(root, f"node-{node_id}.log")
        self.args = [
            "--override", f"node.id={node_id}",
            "--override",
            f"listeners=PLAINTEXT://127.0.0.1:{client_port},CONTROLLER://127.0.0.1:{controller_port}",
            "--override", f"controller.quorum.voters={voters}",
            "--override", f"log.dirs={self.data}",
        ]
        self.proc = None

    def format(self, cluster_id):
        subprocess.run([self.shale, "format", "--cluster-id", cluster_id] + self.args,
                       check=True, stdout=subprocess.DEVNULL)

    def spawn(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([self.shale, "serve"] + self.args, stdout=log,
                                     stderr=subprocess.STDOUT)
        self.log_offset = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(self.log_path) as f:
                if READY in f.read():
                    return
            if self.proc.poll() is not None:
                sys.exit(f"node {self.id} exited:\n{open(self.log_path).read()[-3000:]}")
            time.sleep(0.05)
        sys.exit(f"node {self.id} not ready")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        # A restarted node prints the ready line again: start from a fresh log.
        os.replace(self.log_path, self.log_path + ".old")

    def leader_seen(self):
        """The newest leader this node logged, or None."""
        with open(self.log_path) as f:
            leaders = re.findall(r"the metadata quorum has a leader leader_id=(\d+)",
                                 ANSI.sub("", f.read()))
        return int(leaders[-1]) if leaders else None


def create_until_ok(port, name):
    while True:
        try:
            conn = Conn(port)
            error = conn.create_topic(name)
            conn.close()
        except OSError:
            error = -1
        if error in (0, 36):  # 36: TOPIC_ALREADY_EXISTS (an earlier attempt committed)
            return
        time.sleep(0.01)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shale", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "release", "shale"))
    parser.add_argument("--failovers", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=12)
    args = parser.parse_args()
    if not os.path.exists(args.shale):
        sys.exit(f"no binary at {args.shale}: cargo build --release -p shale")

    root = tempfile.mkdtemp(prefix="shale-quorum-bench-")
    ports = [(free_port(), free_port()) for _ in range(3)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{c}" for i, (_, c) in enumerate(ports))
    nodes = [Node(i + 1, args.shale, root, voters, p, c) for i, (p, c) in enumerate(ports)]
    cluster_id = subprocess.run([args.shale, "random-uuid"], check=True, capture_output=True,
                                text=True).stdout.strip()
    try:
        for n in nodes:
            n.format(cluster_id)
        for n in nodes:
            n.spawn()
        for n in nodes:
            n.wait_ready()
        create_until_ok(nodes[0].client_port, "warm-up")

        times = []
        for round_no in range(args.failovers):
            # Every node logs leader changes; all run now, so any one knows the current leader.
            leader_id = nodes[0].leader_seen()
            leader = next(n for n in nodes if n.id == leader_id)
            survivor = next(n for n in nodes if n.id != leader_id)
            leader.kill()
            started = time.monotonic()
            create_until_ok(survivor.client_port, f"after-failover-{round_no}")
            elapsed = time.monotonic() - started
            times.append(elapsed)
            print(f"failover {round_no + 1}: controller {leader_id} killed, next commit after "
                  f"{elapsed * 1000:.0f} ms", flush=True)
            leader.spawn()
            leader.wait_ready()
            create_until_ok(leader.client_port, f"rejoined-{round_no}")
        times.sort()
        print(f"failover: median {times[len(times) // 2] * 1000:.0f} ms, "
              f"max {times[-1] * 1000:.0f} ms over {len(times)} kills")

        created = [0] * args.clients
        stop_at = time.monotonic() + args.seconds

        def client(k):
            conn = Conn(nodes[k % 3].client_port)
            i = 0
            while time.monotonic() < stop_at:
                if conn.create_topic(f"load-{k}-{i}") == 0:
                    created[k] += 1
                i += 1
            conn.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        topics = sum(created)
        print(f"throughput: {topics / elapsed:.0f} CreateTopics/s = "
              f"{2 * topics / elapsed:.0f} metadata records/s committed "
              f"({args.clients} connections over 3 nodes, {elapsed:.1f} s)")
    finally:
        for n in nodes:
            if n.proc and n.proc.poll() is None:
                n.proc.send_signal(signal.SIGKILL)
                n.proc.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
