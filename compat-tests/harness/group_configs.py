#!/usr/bin/env python3
"""Group configs (KIP-848's GROUP config resource, type 32) against both brokers: the same
DescribeConfigs (v3), IncrementalAlterConfigs (v0) and AlterConfigs (v0) exchanges in raw
frames on Shale and on Apache Kafka, then Kafka's own kafka-configs tool.

Both brokers start with lowered consumer-group bounds (group.consumer.min.session.timeout.ms
2000, group.consumer.min.heartbeat.interval.ms 1000, group.consumer.heartbeat.interval.ms 3000)
so that the check "session timeout above heartbeat interval" can be reached, and so that a
describe shows which heartbeat interval a group inherits.

Checks, on each broker:
- DescribeConfigs of a group that does not exist: the keys listed, their values, sources,
  types and read-only flags, with and without synonyms, one key asked by name, an empty name;
- IncrementalAlterConfigs SET of consumer.session.timeout.ms and consumer.heartbeat.interval.ms,
  then described (source and value); DELETE back to the default; validate_only stores nothing;
- refusals with Kafka's codes and texts: an unknown key, a value below or above the broker's
  bounds, not a number, a session timeout not above the heartbeat interval, APPEND on an int,
  a null value, an empty group name;
- the legacy AlterConfigs on a group;
- a group's configs stay after DeleteGroups of the group (as on Kafka 4.4);
- `kafka-configs --entity-type groups --alter --add-config` and `--describe`.

By design Shale refuses (INVALID_CONFIG, naming the key) a SET of the keys it does not act on
(share.*, streams.*, consumer.assignment.interval.ms, consumer.assignor.offload.enable,
errors.deadletterqueue.*), which Kafka stores; those checks are listed in BY_DESIGN.

    python3 compat-tests/harness/group_configs.py [--against shale|kafka|both] [--no-cli]

Prints each broker's answers side by side; exits 1 when a check fails or the brokers differ.
"""

import argparse
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import KafkaBroker, ShaleBroker  # noqa: E402
from run import KAFKA_LIB, deps_var, shale_binary  # noqa: E402

WAIT_S = 15.0
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
CREATE_TOPICS, FIND_COORDINATOR, OFFSET_COMMIT, DELETE_GROUPS = 19, 10, 8, 42
GROUP = 32
SET, DELETE, APPEND = 0, 1, 2

BROKER_PROPERTIES = {
    "group.consumer.min.session.timeout.ms": "2000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "3000",
}


def string(s):
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def nullable(s):
    return struct.pack(">h", -1) if s is None else string(s)


def array(items):
    return struct.pack(">i", len(items)) + b"".join(items)


def nullable_array(items):
    return struct.pack(">i", -1) if items is None else array(items)


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def array(self, item):
        n = self.take(">i")
        return None if n < 0 else [item() for _ in range(n)]


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        self.sock.settimeout(WAIT_S)
        self.correlation = 0

    def call(self, api_key, version, body):
        self.correlation += 1
        header = struct.pack(">hhi", api_key, version, self.correlation) + string("group-configs-check")
        frame = header + body
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        (length,) = struct.unpack(">i", self.sock.recv(4, socket.MSG_WAITALL))
        data = b""
        while len(data) < length:
            chunk = self.sock.recv(length - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return Reader(data[4:])

    def describe(self, name, keys=None, synonyms=False):
        """DescribeConfigs v3 of one group -> (code, message, [(name, value, read_only, source,
        sensitive, synonyms, type)] sorted by name)."""
        body = array([struct.pack(">b", GROUP) + string(name)
                      + nullable_array(None if keys is None else [string(k) for k in keys])])
        body += struct.pack(">??", synonyms, False)
        r = self.call(DESCRIBE_CONFIGS, 3, body)
        r.take(">i")

        def entry():
            name_, value = r.string(), r.string()
            read_only, source, sensitive = r.take(">?"), r.take(">b"), r.take(">?")
            syns = r.array(lambda: (r.string(), r.string(), r.take(">b")))
            config_type = r.take(">b")
            r.string()  # documentation, not asked for
            return (name_, value, read_only, source, sensitive, tuple(syns), config_type)

        results = r.array(lambda: (r.take(">h"), r.string(), r.take(">b"), r.string(), r.array(entry)))
        code, message, _, _, configs = results[0]
        return code, message, sorted(configs or [])

    def incremental(self, name, ops, validate_only=False):
        """IncrementalAlterConfigs v0 of one group -> (code, message)."""
        body = array([struct.pack(">b", GROUP) + string(name)
                      + array([string(k) + struct.pack(">b", op) + nullable(v) for k, op, v in ops])])
        body += struct.pack(">?", validate_only)
        r = self.call(INCREMENTAL_ALTER_CONFIGS, 0, body)
        r.take(">i")
        out = r.array(lambda: (r.take(">h"), r.string(), r.take(">b"), r.string()))
        return out[0][0], out[0][1]

    def group_with_offsets(self, group, topic):
        """Makes `group` exist: creates `topic` (CreateTopics v2), waits for the coordinator
        (FindCoordinator v1), commits an offset (OffsetCommit v2, no generation) -> its code."""
        body = (array([string(topic) + struct.pack(">ih", 1, 1) + array([]) + array([])])
                + struct.pack(">i?", 10_000, False))
        r = self.call(CREATE_TOPICS, 2, body)
        r.take(">i")
        r.array(lambda: (r.string(), r.take(">h"), r.string()))
        code = None
        deadline = time.monotonic() + WAIT_S
        while code != 0 and time.monotonic() < deadline:
            r = self.call(FIND_COORDINATOR, 1, string(group) + struct.pack(">b", 0))
            r.take(">i")
            code = r.take(">h")
            if code == 0:
                body = (string(group) + struct.pack(">i", -1) + string("") + struct.pack(">q", -1)
                        + array([string(topic) + array([struct.pack(">iq", 0, 5) + string("")])]))
                r = self.call(OFFSET_COMMIT, 2, body)
                code = r.array(lambda: (r.string(), r.array(lambda: (r.take(">i"), r.take(">h")))))[0][1][0][1]
            if code != 0:
                time.sleep(0.1)
        return code

    def delete_group(self, group):
        """DeleteGroups v0 of one group -> its code."""
        r = self.call(DELETE_GROUPS, 0, array([string(group)]))
        r.take(">i")
        return r.array(lambda: (r.string(), r.take(">h")))[0][1]

    def legacy_alter(self, name, configs):
        """AlterConfigs v0 of one group -> (code, message)."""
        body = array([struct.pack(">b", GROUP) + string(name)
                      + array([string(k) + nullable(v) for k, v in configs])])
        body += struct.pack(">?", False)
        r = self.call(ALTER_CONFIGS, 0, body)
        r.take(">i")
        out = r.array(lambda: (r.take(">h"), r.string(), r.take(">b"), r.string()))
        return out[0][0], out[0][1]


def value_of(answer, key):
    return next((c[1] for c in answer[2] if c[0] == key), None)


def settled(c, group, key, until):
    """DescribeConfigs once `until(value)` holds: Kafka answers an alter when its controller
    committed it, before the broker's own image has it."""
    deadline = time.monotonic() + WAIT_S
    while True:
        answer = c.describe(group)
        if until(value_of(answer, key)) or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


SESSION, HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
# Keys Kafka 4.4 stores for a group and Shale refuses, with a value Kafka accepts.
UNSERVED = [
    ("share.assignment.interval.ms", "1000"),
    ("consumer.assignment.interval.ms", "1000"),
    ("consumer.assignor.offload.enable", "false"),
    ("streams.num.standby.replicas", "0"),
    ("errors.deadletterqueue.topic.name", "dlq"),
]


def observe(port):
    c = Conn(port)
    seen = {}
    seen["describe unknown group"] = c.describe("no-such-group")
    seen["describe with synonyms"] = c.describe("no-such-group", synonyms=True)
    seen["describe one key"] = c.describe("no-such-group", keys=[SESSION])
    seen["describe an unknown key"] = c.describe("no-such-group", keys=["bogus"])
    seen["describe empty name"] = c.describe("")
    seen["set session"] = c.incremental("g1", [(SESSION, SET, "50000")])
    seen["described after set"] = settled(c, "g1", SESSION, lambda v: v == "50000")
    seen["described after set, synonyms"] = c.describe("g1", keys=[SESSION], synonyms=True)
    seen["set heartbeat, validate only"] = c.incremental("g1", [(HEARTBEAT, SET, "6000")], validate_only=True)
    seen["set both"] = c.incremental("g2", [(SESSION, SET, "20000"), (HEARTBEAT, SET, "2000")])
    seen["described both"] = settled(c, "g2", HEARTBEAT, lambda v: v == "2000")
    for check, ops in [
        ("unknown key", [("bogus", SET, "1")]),
        ("session below the broker's min", [(SESSION, SET, "1000")]),
        ("session above the broker's max", [(SESSION, SET, "70000")]),
        ("heartbeat below the broker's min", [(HEARTBEAT, SET, "500")]),
        ("heartbeat above the broker's max", [(HEARTBEAT, SET, "20000")]),
        ("session zero", [(SESSION, SET, "0")]),
        ("session not a number", [(SESSION, SET, "abc")]),
        ("session not above the inherited heartbeat", [(SESSION, SET, "2500")]),
        ("heartbeat not below session", [(SESSION, SET, "3000"), (HEARTBEAT, SET, "3000")]),
        ("append to an int", [(SESSION, APPEND, "1")]),
        ("null value", [(SESSION, SET, None)]),
        ("key twice", [(SESSION, SET, "50000"), (SESSION, SET, "51000")]),
        ("a refused key drops the others", [(SESSION, SET, "52000"), ("bogus", SET, "1")]),
    ]:
        seen[f"refused: {check}"] = c.incremental("g3", ops)
    # Above the broker's heartbeat interval (3000), below GroupConfig's own default (5000):
    # Kafka checks against the value the group inherits.
    seen["session above the inherited heartbeat"] = c.incremental("g6", [(SESSION, SET, "4000")])
    seen["heartbeat against a stored session"] = c.incremental("g2", [(HEARTBEAT, SET, "15000")])
    seen["empty group name"] = c.incremental("", [(SESSION, SET, "50000")])
    for key, value in UNSERVED:
        seen[f"unserved: {key}"] = c.incremental("g4", [(key, SET, value)])
    seen["delete an unserved key"] = c.incremental("g4", [("streams.num.standby.replicas", DELETE, None)])
    seen["delete an unknown key"] = c.incremental("g4", [("bogus", DELETE, None)])
    seen["legacy AlterConfigs"] = c.legacy_alter("g5", [(SESSION, "50000")])
    seen["delete session"] = c.incremental("g1", [(SESSION, DELETE, None)])
    seen["described after delete"] = settled(c, "g1", SESSION, lambda v: v != "50000")
    seen["delete a key not set"] = c.incremental("g1", [(HEARTBEAT, DELETE, None)])
    # Made after the refusals: once it shows, anything they had stored would too.
    seen["a last set"] = c.incremental("g3", [(HEARTBEAT, SET, "4000")])
    seen["nothing stored by refusals or validate only"] = settled(c, "g3", HEARTBEAT, lambda v: v == "4000")
    seen["validate only stored nothing"] = c.describe("g1", keys=[HEARTBEAT])
    # A group that exists, with a config, then deleted: Kafka keeps the group's configs.
    seen["a group with offsets"] = c.group_with_offsets("dg", "dg-topic")
    seen["set on an existing group"] = c.incremental("dg", [(SESSION, SET, "50000")])
    settled(c, "dg", SESSION, lambda v: v == "50000")
    seen["delete the group"] = c.delete_group("dg")
    seen["configs kept after DeleteGroups"] = c.describe("dg", keys=[SESSION])
    c.sock.close()
    return seen


def configs_cli(bootstrap, *args):
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{KAFKA_LIB}/*",
           "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    lines = [line for line in proc.stdout.splitlines() if line.strip() and not line.startswith(("SLF4J", "WARN"))]
    return proc.returncode, lines


def observe_cli(bootstrap):
    seen = {}
    seen["cli alter group"] = configs_cli(bootstrap, "--alter", "--add-config", "consumer.heartbeat.interval.ms=7000",
                                          "--entity-type", "groups", "--entity-name", "cli-g")
    seen["cli describe group"] = configs_cli(bootstrap, "--describe", "--entity-type", "groups",
                                             "--entity-name", "cli-g")
    seen["cli refused out of bounds"] = configs_cli(bootstrap, "--alter", "--add-config",
                                                    "consumer.session.timeout.ms=1",
                                                    "--entity-type", "groups", "--entity-name", "cli-g")
    return seen


# The group configs Shale serves, in the order its refusals list them.
SERVED = [
    "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms",
    "share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
    "share.delivery.count.limit", "share.partition.max.record.locks", "share.auto.offset.reset",
    "share.isolation.level", "share.renew.acknowledge.enable",
]


def shale_refusal(key):
    return (40, f"Shale does not serve the group config {key}; only {', '.join(SERVED)} "
                f"can be set on a group")


# Where Shale answers differently on purpose: {check: {broker: expected}}.
BY_DESIGN = {
    f"unserved: {key}": {"kafka": (0, None), "shale": shale_refusal(key)} for key, _ in UNSERVED
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", choices=["shale", "kafka", "both"], default="both")
    parser.add_argument("--no-cli", action="store_true", help="skip kafka-configs (ConfigCommand)")
    args = parser.parse_args()
    names = ["shale", "kafka"] if args.against == "both" else [args.against]
    results, failed = {}, False
    for name in names:
        log = Path(tempfile.mkdtemp(prefix="group-configs-")) / "broker.log"
        broker = (KafkaBroker(log, KAFKA_LIB, deps_var("KAFKA_VERSION")) if name == "kafka"
                  else ShaleBroker(log, Path(os.environ.get("SHALE_BIN", shale_binary()))))
        try:
            broker.start(extra_properties=BROKER_PROPERTIES)
            seen = observe(broker.port)
            if not args.no_cli:
                seen.update(observe_cli(broker.bootstrap))
            results[name] = seen
        except Exception as exc:  # a broker that fails to start or answer is a failure
            print(f"{name}: {type(exc).__name__}: {exc}\n{broker.tail()}")
            failed = True
        finally:
            broker.stop()
    checks = list(dict.fromkeys(k for seen in results.values() for k in seen))
    for check in checks:
        row = {name: seen.get(check) for name, seen in results.items()}
        if check in BY_DESIGN:
            ok = all(row[n] == BY_DESIGN[check][n] for n in row)
        else:
            ok = len({repr(v) for v in row.values()}) == 1 and None not in row.values()
        print(f"{check:60} {'ok' if ok else 'FAIL'}")
        for n, v in row.items():
            print(f"    {n:6} {v}")
        failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
