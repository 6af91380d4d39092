#!/usr/bin/env python3
"""Online migration between the classic and consumer protocols (KIP-848) against both brokers,
in raw frames: a classic member forms a group, a ConsumerGroupHeartbeat member joins it (the
online upgrade), the classic member is told to rejoin, rejoins, revokes and syncs as a classic
member of a consumer group, then the consumer member leaves (the online downgrade) and the
classic member finds a classic group rebalancing. Every answer's error code and shape
(generations, protocol names, leader, sizes of assignments) must be the same on both brokers.

    python3 compat-tests/harness/cg_migration.py [--against shale|kafka|both]

Run after compat-tests/run.sh has installed its dependencies (it reads the Kafka jars from
there); exits 1 on any difference.
"""

import argparse
import os
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import KafkaBroker, ShaleBroker  # noqa: E402
from rawwire import connect, read_frame, request, string  # noqa: E402
from run import KAFKA_LIB, deps_var, shale_binary  # noqa: E402

TOPIC = "migrating-topic"
GROUP = "migrating-group"
BROKER_PROPERTIES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.min.session.timeout.ms": "2000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "1000",
}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def varint(self):
        shift, value = 0, 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def bytes(self):
        n = self.i32()
        return b"" if n < 0 else self.take(n)

    def compact_string(self):
        n = self.varint() - 1
        return None if n < 0 else self.take(n).decode()

    def tags(self):
        for _ in range(self.varint()):
            self.varint()
            self.take(self.varint())


def compact_string(s):
    data = s.encode()
    return varint(len(data) + 1) + data


def varint(value):
    out = b""
    while value >= 0x80:
        out += bytes([(value & 0x7F) | 0x80])
        value >>= 7
    return out + bytes([value])


def subscription(owned=()):
    """ConsumerProtocolSubscription v1: the topic, no user data, the owned partitions."""
    body = struct.pack(">h", 1) + struct.pack(">i", 1) + string(TOPIC) + struct.pack(">i", -1)
    if owned:
        body += struct.pack(">i", 1) + string(TOPIC) + struct.pack(">i", len(owned))
        body += b"".join(struct.pack(">i", p) for p in owned)
    else:
        body += struct.pack(">i", 0)
    return body


def assignment(partitions):
    body = struct.pack(">h", 1) + struct.pack(">i", 1) + string(TOPIC) + struct.pack(">i", len(partitions))
    return body + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1)


def assigned_partitions(data):
    if not data:
        return []
    r = Reader(data)
    r.i16()
    partitions = []
    for _ in range(r.i32()):
        r.string()
        partitions += [r.i32() for _ in range(r.i32())]
    return sorted(partitions)


def call(port, api_key, version, body, flexible=False):
    sock = connect(port)
    try:
        sock.sendall(request(api_key, version, 9, body, flexible=flexible, client_id="migration"))
        answer = read_frame(sock)
        if flexible:
            r = Reader(answer)
            r.tags()
            return answer[r.pos:]
        return answer
    finally:
        sock.close()


def create_topic(port):
    body = struct.pack(">i", 1) + string(TOPIC) + struct.pack(">ihii", 2, 1, 0, 0)
    body += struct.pack(">i?", 30000, False)
    call(port, 19, 4, body)


def find_coordinator(port):
    """FindCoordinator v1 for the group (Kafka creates __consumer_offsets on the first one)."""
    r = Reader(call(port, 10, 1, string(GROUP) + struct.pack(">b", 0)))
    r.i32()
    return r.i16()


def join(port, member_id, owned=()):
    """JoinGroup v5: (error, generation, protocol name, leader is the member, member count)."""
    meta = subscription(owned)
    body = string(GROUP) + struct.pack(">ii", 10000, 30000) + string(member_id) + struct.pack(">h", -1)
    body += string("consumer") + struct.pack(">i", 1) + string("range") + struct.pack(">i", len(meta)) + meta
    r = Reader(call(port, 11, 5, body))
    r.i32()
    error, generation = r.i16(), r.i32()
    protocol, leader, member = r.string(), r.string(), r.string()
    members = r.i32()
    return {"error": error, "generation": generation, "protocol": protocol,
            "leader": "self" if leader == member and leader else ("" if not leader else "other"),
            "members": members}, member


def sync(port, member_id, generation, assignments=()):
    """SyncGroup v3: (error, assigned partitions)."""
    body = string(GROUP) + struct.pack(">i", generation) + string(member_id) + struct.pack(">h", -1)
    body += struct.pack(">i", len(assignments))
    for target, data in assignments:
        body += string(target) + struct.pack(">i", len(data)) + data
    r = Reader(call(port, 14, 3, body))
    r.i32()
    return {"error": r.i16(), "assignment": assigned_partitions(r.bytes())}


def heartbeat(port, member_id, generation):
    body = string(GROUP) + struct.pack(">i", generation) + string(member_id) + struct.pack(">h", -1)
    r = Reader(call(port, 12, 3, body))
    r.i32()
    return r.i16()


def consumer_heartbeat(port, member_id, epoch, owned=None):
    """ConsumerGroupHeartbeat v1: (error, epoch, number of assigned partitions)."""
    body = compact_string(GROUP) + compact_string(member_id) + struct.pack(">i", epoch)
    body += b"\x00" + b"\x00"  # no instance id, no rack
    body += struct.pack(">i", 30000 if epoch == 0 else -1)
    body += (varint(2) + compact_string(TOPIC)) if epoch == 0 else b"\x00"
    body += b"\x00" + b"\x00"  # no regex, no server assignor
    if owned is None:
        body += b"\x00"
    else:
        body += varint(len(owned) + 1)
        for topic_id, partitions in owned:
            body += topic_id + varint(len(partitions) + 1)
            body += b"".join(struct.pack(">i", p) for p in partitions) + b"\x00"
    body += b"\x00"
    r = Reader(call(port, 68, 1, body, flexible=True))
    r.i32()
    error = r.i16()
    r.compact_string()
    r.compact_string()
    epoch = r.i32()
    r.i32()
    count = None
    if r.i8() >= 0:
        count = 0
        topics = r.varint() - 1
        for _ in range(max(topics, 0)):
            r.take(16)
            count += r.varint() - 1
            r.take(4 * 0)
    return {"error": error, "epoch": epoch, "assigned": count}


def describe(port):
    """DescribeGroups v4: (error, state, protocol type, members)."""
    body = struct.pack(">i", 1) + string(GROUP) + struct.pack(">?", False)
    r = Reader(call(port, 15, 4, body))
    r.i32()
    r.i32()
    error, _ = r.i16(), r.string()
    return {"error": error, "state": r.string(), "protocol_type": r.string()}


def wait_for(what, probe, done, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}: {value}")
        time.sleep(0.2)


def observe(port):
    seen = {}
    create_topic(port)
    wait_for("the group coordinator", lambda: find_coordinator(port), lambda error: error == 0)
    first, member = wait_for("the coordinator", lambda: join(port, ""), lambda v: v[0]["error"] == 79)
    seen["classic: first JoinGroup"] = first
    joined, _ = join(port, member)
    seen["classic: JoinGroup with its member id"] = joined
    generation = joined["generation"]
    seen["classic: leader's SyncGroup"] = sync(port, member, generation, [(member, assignment([0, 1]))])
    seen["classic: group"] = describe(port)

    consumer = uuid.uuid4().hex[:22]
    seen["upgrade: consumer member joins"] = consumer_heartbeat(port, consumer, 0, [])
    seen["upgrade: DescribeGroups of the consumer group"] = describe(port)
    seen["classic member: Heartbeat at its generation"] = heartbeat(port, member, generation)
    seen["classic member: Heartbeat at another generation"] = heartbeat(port, member, generation + 7)
    seen["classic member: SyncGroup at its old generation"] = sync(port, member, generation)
    rejoined, _ = join(port, member, owned=(0, 1))
    seen["classic member: rejoins owning both partitions"] = rejoined
    revoking = sync(port, member, rejoined["generation"])
    seen["classic member: SyncGroup while it must revoke"] = {
        "error": revoking["error"], "partitions": len(revoking["assignment"])}
    seen["classic member: Heartbeat while it must revoke"] = heartbeat(port, member, rejoined["generation"])
    again, _ = join(port, member, owned=tuple(revoking["assignment"]))
    seen["classic member: rejoins after revoking"] = again
    synced = sync(port, member, again["generation"])
    seen["classic member: SyncGroup at the group epoch"] = {
        "error": synced["error"], "partitions": len(synced["assignment"])}
    seen["classic member: Heartbeat at the group epoch"] = heartbeat(port, member, again["generation"])
    newcomer = join(port, "")[0]
    seen["new classic member: first JoinGroup"] = {"error": newcomer["error"]}

    left = consumer_heartbeat(port, consumer, -1)
    seen["downgrade: consumer member leaves"] = {"error": left["error"], "epoch": left["epoch"]}
    seen["downgrade: DescribeGroups"] = describe(port)
    seen["downgrade: classic member's Heartbeat"] = heartbeat(port, member, again["generation"])
    return seen


def observe_disabled(port):
    """`group.consumer.migration.policy=disabled`: no conversion of a live group either way,
    while classic members still join a live consumer group."""
    seen = {}
    create_topic(port)
    wait_for("the group coordinator", lambda: find_coordinator(port), lambda error: error == 0)
    _, member = wait_for("the coordinator", lambda: join(port, ""), lambda v: v[0]["error"] == 79)
    joined, _ = join(port, member)
    sync(port, member, joined["generation"], [(member, assignment([0, 1]))])
    consumer = uuid.uuid4().hex[:22]
    seen["disabled: consumer heartbeat on a live classic group"] = consumer_heartbeat(port, consumer, 0, [])
    left = []
    leave_body = string(GROUP) + struct.pack(">i", 1) + string(member) + struct.pack(">h", -1)
    r = Reader(call(port, 13, 3, leave_body))
    r.i32()
    left.append(r.i16())
    seen["disabled: the classic member leaves"] = left
    seen["disabled: a consumer member creates the group"] = consumer_heartbeat(port, consumer, 0, [])
    _, newcomer = join(port, "")
    classic_joined, _ = join(port, newcomer)
    seen["disabled: a classic member joins the consumer group"] = classic_joined
    left = consumer_heartbeat(port, consumer, -1)
    seen["disabled: the consumer member leaves"] = {"error": left["error"], "epoch": left["epoch"]}
    seen["disabled: the group is still a consumer group"] = describe(port)
    seen["disabled: the classic member's Heartbeat"] = heartbeat(port, newcomer, classic_joined["generation"])
    return seen


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", choices=["shale", "kafka", "both"], default="both")
    args = parser.parse_args()
    names = ["shale", "kafka"] if args.against == "both" else [args.against]
    results, failed = {}, False
    for name in names:
        log = Path(tempfile.mkdtemp(prefix="cg-migration-")) / "broker.log"
        broker = (KafkaBroker(log, KAFKA_LIB, deps_var("KAFKA_VERSION")) if name == "kafka"
                  else ShaleBroker(log, Path(os.environ.get("SHALE_BIN", shale_binary()))))
        try:
            broker.start(extra_properties=BROKER_PROPERTIES)
            results[name] = observe(broker.port)
        except Exception as exc:  # a broker that fails to start or answer is a failure
            print(f"{name}: {type(exc).__name__}: {exc}\n{broker.tail()}")
            failed = True
        finally:
            broker.stop()
        log = Path(tempfile.mkdtemp(prefix="cg-migration-")) / "broker.log"
        broker = (KafkaBroker(log, KAFKA_LIB, deps_var("KAFKA_VERSION")) if name == "kafka"
                  else ShaleBroker(log, Path(os.environ.get("SHALE_BIN", shale_binary()))))
        try:
            broker.start(extra_properties={**BROKER_PROPERTIES,
                                           "group.consumer.migration.policy": "disabled"})
            results.setdefault(name, {}).update(observe_disabled(broker.port))
        except Exception as exc:
            print(f"{name} (disabled): {type(exc).__name__}: {exc}\n{broker.tail()}")
            failed = True
        finally:
            broker.stop()
    checks = list(dict.fromkeys(k for seen in results.values() for k in seen))
    for check in checks:
        row = {name: seen.get(check) for name, seen in results.items()}
        ok = len({repr(v) for v in row.values()}) == 1 and None not in row.values()
        print(f"{check:60} {'ok' if ok else 'FAIL'}")
        for n, v in row.items():
            print(f"    {n:6} {v}")
        failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
