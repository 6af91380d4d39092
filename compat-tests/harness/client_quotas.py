#!/usr/bin/env python3
"""Client quotas against both brokers: the same AlterClientQuotas and DescribeClientQuotas
exchanges (raw frames, v0) on Shale and on Apache Kafka, then Kafka's own kafka-configs tool.

Checks, on each broker:
- AlterClientQuotas of each key Kafka knows on user, client-id, (user, client-id) and default
  entities: error 0, and DescribeClientQuotas then shows them (every match type, strict);
- Kafka's refusals with their texts: unknown entity type, unknown key, a negative, zero,
  infinite or fractional value where Kafka refuses it, ip combined with user, an empty name,
  an empty entity, a key named twice;
- validate_only stores nothing; a removal takes the key away;
- DescribeClientQuotas' refusals: unknown entity type (UNSUPPORTED_VERSION), EXACT without a
  name, ip with user;
- `kafka-configs --alter --add-config producer_byte_rate=1024 --entity-type clients
  --entity-name x`, then `--describe`: the same output on both.

One difference is by design and checked as such: an ip entity's `connection_creation_rate`,
which Kafka stores, is refused by Shale (INVALID_REQUEST naming the key) because Shale does not
throttle connection creation.

    python3 compat-tests/harness/client_quotas.py [--against shale|kafka|both]

Prints each broker's answers side by side; exits 1 when a check fails or the brokers differ.
"""

import argparse
import math
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
ALTER, DESCRIBE = 49, 48
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def string(s):
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def nullable(s):
    return struct.pack(">h", -1) if s is None else string(s)


def array(items):
    return struct.pack(">i", len(items)) + b"".join(items)


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

    def call(self, api_key, body):
        self.correlation += 1
        header = struct.pack(">hhi", api_key, 0, self.correlation) + string("quota-check")
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

    def alter(self, entries, validate_only=False):
        """entries: [(entity {type: name}, [(key, value or None)])] -> sorted [(entity, code, message)]."""
        body = array([
            array([string(t) + nullable(n) for t, n in entity])
            + array([string(k) + struct.pack(">d", 0.0 if v is None else v) + struct.pack(">?", v is None)
                     for k, v in ops])
            for entity, ops in entries
        ]) + struct.pack(">?", validate_only)
        r = self.call(ALTER, body)
        r.take(">i")  # throttle_time_ms
        out = r.array(lambda: (r.take(">h"), r.string(),
                               tuple(srt(r.array(lambda: (r.string(), r.string()))))))
        return srt((entity, code, message) for code, message, entity in out)

    def describe(self, components, strict=False):
        """components: [(type, match type, match)] -> (code, message, sorted entries or None)."""
        body = array([string(t) + struct.pack(">b", m) + nullable(n) for t, m, n in components])
        body += struct.pack(">?", strict)
        r = self.call(DESCRIBE, body)
        r.take(">i")
        code, message = r.take(">h"), r.string()
        entries = r.array(lambda: (tuple(srt(r.array(lambda: (r.string(), r.string())))),
                                   tuple(srt(r.array(lambda: (r.string(), r.take(">d")))))))
        return code, message, None if entries is None else srt(entries)


def srt(items):
    """Sorted, names that may be None included (the brokers' orders differ and mean nothing)."""
    return sorted(items, key=repr)


def e(*pairs):
    return list(pairs)


ALICE = e(("user", "alice"))
CLIENT_X = e(("client-id", "x"))
BOB_DEFAULT_CLIENT = e(("user", "bob"), ("client-id", None))
DEFAULT_USER = e(("user", None))


def settled(c, components, until):
    """DescribeClientQuotas once the answer satisfies `until`: Kafka answers AlterClientQuotas
    when its controller committed the change, before the broker's own image has it."""
    deadline = time.monotonic() + WAIT_S
    while True:
        answer = c.describe(components)
        if until(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def observe(port):
    c = Conn(port)
    seen = {}
    seen["set four entities"] = c.alter([
        (CLIENT_X, [("producer_byte_rate", 1024.0)]),
        (ALICE, [("consumer_byte_rate", 2048.0), ("request_percentage", 50.5)]),
        (BOB_DEFAULT_CLIENT, [("controller_mutation_rate", 3.0)]),
        (DEFAULT_USER, [("producer_byte_rate", 4096.0)]),
    ])
    seen["describe all"] = settled(c, [], lambda a: a[2] is not None and len(a[2]) == 4)
    seen["describe strict, no component"] = c.describe([], strict=True)
    seen["describe exact client-id x"] = c.describe([("client-id", EXACT, "x")])
    seen["describe default user"] = c.describe([("user", DEFAULT, None)])
    seen["describe specified user"] = c.describe([("user", SPECIFIED, None)])
    seen["describe specified user, strict"] = c.describe([("user", SPECIFIED, None)], strict=True)
    seen["describe user bob + default client, strict"] = c.describe(
        [("user", EXACT, "bob"), ("client-id", DEFAULT, None)], strict=True)
    seen["describe unknown type"] = c.describe([("group", SPECIFIED, None)])
    seen["describe exact without name"] = c.describe([("user", EXACT, None)])
    seen["describe ip with user"] = c.describe([("ip", SPECIFIED, None), ("user", SPECIFIED, None)])
    seen["describe type twice"] = c.describe([("user", SPECIFIED, None), ("user", DEFAULT, None)])
    for name, entity, ops in [
        ("unknown entity type", e(("group", "g")), [("producer_byte_rate", 1.0)]),
        ("unknown key", ALICE, [("bogus", 1.0)]),
        ("negative rate", ALICE, [("producer_byte_rate", -5.0)]),
        ("zero rate", ALICE, [("consumer_byte_rate", 0.0)]),
        ("zero percentage", ALICE, [("request_percentage", 0.0)]),
        ("infinite rate", ALICE, [("producer_byte_rate", math.inf)]),
        ("fractional byte rate", ALICE, [("producer_byte_rate", 10.5)]),
        ("too large byte rate", ALICE, [("producer_byte_rate", 1e19)]),
        ("ip with user", e(("ip", "10.0.0.1"), ("user", "u")), [("producer_byte_rate", 1.0)]),
        ("byte rate on an ip", e(("ip", "10.0.0.1")), [("producer_byte_rate", 1.0)]),
        ("empty user name", e(("user", "")), [("producer_byte_rate", 1.0)]),
        ("empty entity", e(), [("producer_byte_rate", 1.0)]),
        ("key twice", e(("user", "carol")), [("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)]),
        ("a refused key drops the others", e(("user", "dave")), [("producer_byte_rate", 100.0), ("bogus", 1.0)]),
    ]:
        seen[f"refused: {name}"] = c.alter([(entity, ops)])
    seen["validate only"] = c.alter([(e(("user", "erin")), [("producer_byte_rate", 10.0)])], validate_only=True)
    # A change made after the refusals: once it shows, anything they had stored would too.
    seen["remove client-id x's key"] = c.alter([(CLIENT_X, [("producer_byte_rate", None)])])
    seen["removed"] = settled(c, [("client-id", EXACT, "x")], lambda a: a[2] == [])
    seen["nothing stored by the refusals"] = c.describe([("user", EXACT, "dave")])
    seen["nothing stored by validate only"] = c.describe([("user", EXACT, "erin")])
    seen["remove a key that is not set"] = c.alter([(e(("user", "frank")), [("consumer_byte_rate", None)])])
    seen["ip connection_creation_rate"] = c.alter([(e(("ip", "10.0.0.2")), [("connection_creation_rate", 5.0)])])
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
    seen["cli alter clients x"] = configs_cli(bootstrap, "--alter", "--add-config", "producer_byte_rate=1024",
                                              "--entity-type", "clients", "--entity-name", "cli-x")
    seen["cli describe clients x"] = configs_cli(bootstrap, "--describe", "--entity-type", "clients",
                                                 "--entity-name", "cli-x")
    seen["cli alter users default"] = configs_cli(bootstrap, "--alter", "--add-config",
                                                  "consumer_byte_rate=2048,request_percentage=200",
                                                  "--entity-type", "users", "--entity-default")
    seen["cli describe users default"] = configs_cli(bootstrap, "--describe", "--entity-type", "users",
                                                     "--entity-default")
    seen["cli refused negative"] = configs_cli(bootstrap, "--alter", "--add-config", "producer_byte_rate=-1",
                                               "--entity-type", "clients", "--entity-name", "cli-y")
    return seen


# Checks whose answer is known (the rest only have to agree between the brokers).
EXPECTED = {
    "describe unknown type": (35, "Unsupported entity type group", None),
}
# Where Shale answers differently on purpose: {check: {broker: expected}}.
BY_DESIGN = {
    "ip connection_creation_rate": {
        "kafka": [((("ip", "10.0.0.2"),), 0, None)],
        "shale": [((("ip", "10.0.0.2"),), 42,
                   "connection_creation_rate is not supported: Shale does not enforce IP connection rate quotas")],
    },
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", choices=["shale", "kafka", "both"], default="both")
    parser.add_argument("--no-cli", action="store_true", help="skip kafka-configs (ConfigCommand)")
    args = parser.parse_args()
    names = ["shale", "kafka"] if args.against == "both" else [args.against]
    results, failed = {}, False
    for name in names:
        log = Path(tempfile.mkdtemp(prefix="client-quotas-")) / "broker.log"
        broker = (KafkaBroker(log, KAFKA_LIB, deps_var("KAFKA_VERSION")) if name == "kafka"
                  else ShaleBroker(log, Path(os.environ.get("SHALE_BIN", shale_binary()))))
        try:
            broker.start()
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
        elif check in EXPECTED:
            ok = all(v == EXPECTED[check] for v in row.values())
        else:
            ok = len({repr(v) for v in row.values()}) == 1 and None not in row.values()
        print(f"{check:45} {'ok' if ok else 'FAIL'}")
        for n, v in row.items():
            print(f"    {n:6} {v}")
        failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
