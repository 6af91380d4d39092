#!/usr/bin/env python3
"""ACLs and the StandardAuthorizer against both brokers: the same raw-socket requests on Shale
and on Apache Kafka, each with a SASL_PLAINTEXT listener, PLAIN users `admin` (a super user)
and `alice`, `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`,
`super.users=User:admin;User:ANONYMOUS` and `allow.everyone.if.no.acl.found=false`.

For each API the error code alice gets is compared, first without any ACL, then after the
admin gave her ACLs (CreateAcls), then once a DENY was added: whether she is refused and with
which authorization code (29, 30, 31, 53); other codes are printed but count as allowed, since
coordinator loading depends on timing. The admin's ACL requests (valid and invalid) are
compared code for code. Kafka applies ACL changes to its broker asynchronously, so each stage
waits until DescribeAcls lists them. Then `kafka-acls.sh`
(`org.apache.kafka.tools.AclCommand`) adds, lists and removes an ACL through
`--command-config` on both brokers, when Kafka's jars are in compat-tests/.deps.

    python3 compat-tests/harness/acl_matrix.py [--against shale|kafka|both]

Prints each broker's codes side by side; exits 1 when the brokers differ or a step fails.
"""

import argparse
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import KafkaBroker, ShaleBroker, free_port  # noqa: E402
from run import KAFKA_LIB, deps_var, shale_binary  # noqa: E402

WAIT_S = 15.0
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
PROPS = {
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "false",
    "offsets.topic.num.partitions": "1",
}

# Kafka's ACL enums.
TOPIC, GROUP, CLUSTER, TXN_ID = 2, 3, 4, 5
ANY, LITERAL, PREFIXED = 1, 3, 4
ALL, READ, WRITE, CREATE, DELETE, DESCRIBE, ALTER_CONFIGS, IDEMPOTENT_WRITE = 2, 3, 4, 5, 6, 8, 11, 12
DENY, ALLOW = 2, 3


# --- encoding (non-flexible versions only) -------------------------------------------------

def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    if s is None:
        return i16(-1)
    data = s.encode()
    return i16(len(data)) + data


def array(items):
    return i32(len(items)) + b"".join(items)


def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC32C = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(v):
    v = (v << 1) ^ (v >> 63)
    out = b""
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def record_batch(value=b"v"):
    """RecordBatch v2 with one record (no key), as a non-idempotent producer sends it."""
    body = i8(0) + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    record = varint(len(body)) + body
    ts = int(time.time() * 1000)
    after_crc = (i16(0) + i32(0) + i64(ts) + i64(ts) + i64(-1) + i16(-1) + i32(-1) + i32(1)
                 + record)
    crc = struct.pack(">I", crc32c(after_crc))
    after_length = i32(-1) + i8(2) + crc + after_crc  # partition leader epoch, magic
    return i64(0) + i32(len(after_length)) + after_length


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def i8(self):
        return self.take(">b")

    def i16(self):
        return self.take(">h")

    def i32(self):
        return self.take(">i")

    def i64(self):
        return self.take(">q")

    def string(self):
        n = self.i16()
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def bytes(self):
        n = self.i32()
        if n < 0:
            return None
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        self.sock.settimeout(WAIT_S)
        self.correlation = 0

    def call(self, api_key, version, body):
        """The response body after its correlation id, or None when the broker closed."""
        self.correlation += 1
        header = struct.pack(">hhi", api_key, version, self.correlation) + string("acl-matrix")
        frame = header + body
        try:
            self.sock.sendall(i32(len(frame)) + frame)
            head = self.sock.recv(4, socket.MSG_WAITALL)
            if len(head) < 4:
                return None
            (length,) = struct.unpack(">i", head)
            data = b""
            while len(data) < length:
                chunk = self.sock.recv(length - len(data))
                if not chunk:
                    return None
                data += chunk
        except OSError:
            return None
        return Reader(data[4:])

    def login(self, user):
        r = self.call(17, 1, string("PLAIN"))
        assert r is not None and r.i16() == 0, "SaslHandshake refused"
        token = f"\0{user}\0{user}-secret".encode()
        r = self.call(36, 1, i32(len(token)) + token)
        assert r is not None and r.i16() == 0, f"{user} did not authenticate"
        return self


# --- one request per API, answered by its first error code ---------------------------------

def metadata(c, topic):
    r = c.call(3, 1, array([string(topic)]))
    for _ in range(r.i32()):  # brokers
        r.i32(), r.string(), r.i32(), r.string()
    r.i32()  # controller
    r.i32()  # topics
    return r.i16()


def metadata_all_names(c):
    r = c.call(3, 1, i32(-1))
    for _ in range(r.i32()):
        r.i32(), r.string(), r.i32(), r.string()
    r.i32()
    names = []
    for _ in range(r.i32()):
        r.i16()
        names.append(r.string())
        r.i8()
        for _ in range(r.i32()):
            r.i16(), r.i32(), r.i32()
            for _ in range(r.i32()):
                r.i32()
            for _ in range(r.i32()):
                r.i32()
    return sorted(n for n in names if not n.startswith("__"))


def produce(c, topic, transactional_id=None):
    batch = record_batch()
    body = (string(transactional_id) + i16(1) + i32(10_000)
            + array([string(topic) + array([i32(0) + i32(len(batch)) + batch])]))
    r = c.call(0, 3, body)
    r.i32(), r.string(), r.i32(), r.i32()
    return r.i16()


def fetch(c, topic, replica_id=-1):
    body = (i32(replica_id) + i32(0) + i32(1) + i32(1 << 20) + i8(0)
            + array([string(topic) + array([i32(0) + i64(0) + i32(1 << 20)])]))
    r = c.call(1, 4, body)
    r.i32(), r.i32(), r.string(), r.i32(), r.i32()
    return r.i16()


def list_offsets(c, topic):
    r = c.call(2, 1, i32(-1) + array([string(topic) + array([i32(0) + i64(-1)])]))
    r.i32(), r.string(), r.i32(), r.i32()
    return r.i16()


def create_topic(c, topic):
    body = (array([string(topic) + i32(1) + i16(1) + array([]) + array([])])
            + i32(10_000) + i8(0))
    r = c.call(19, 2, body)
    r.i32(), r.i32(), r.string()
    return r.i16()


def delete_topic(c, topic):
    r = c.call(20, 1, array([string(topic)]) + i32(10_000))
    r.i32(), r.i32(), r.string()
    return r.i16()


def init_producer_id(c, transactional_id=None):
    r = c.call(22, 0, string(transactional_id) + i32(60_000))
    r.i32()
    return r.i16()


def find_coordinator(c, key, key_type):
    r = c.call(10, 1, string(key) + i8(key_type))
    r.i32()
    return r.i16()


def describe_configs(c, resource_type, name):
    r = c.call(32, 1, array([i8(resource_type) + string(name) + i32(-1)]) + i8(0))
    r.i32(), r.i32()
    return r.i16()


def alter_group_config(c, group):
    """IncrementalAlterConfigs v0 of a GROUP resource (type 32): consumer.session.timeout.ms."""
    body = (array([i8(32) + string(group)
                   + array([string("consumer.session.timeout.ms") + i8(0) + string("50000")])])
            + i8(0))
    r = c.call(44, 0, body)
    r.i32(), r.i32()
    return r.i16()


def describe_group(c, group):
    r = c.call(15, 0, array([string(group)]))
    r.i32()
    return r.i16()


def list_groups(c):
    r = c.call(16, 0, b"")
    return r.i16()


def offset_fetch(c, group, topic):
    r = c.call(9, 2, string(group) + array([string(topic) + array([i32(0)])]))
    codes = []
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            r.i32(), r.i64(), r.string()
            codes.append(r.i16())
    return (r.i16(), codes)


def end_txn(c, transactional_id):
    r = c.call(26, 0, string(transactional_id) + i64(0) + i16(0) + i8(1))
    r.i32()
    return r.i16()


def add_partitions_to_txn(c, transactional_id, topic):
    body = (string(transactional_id) + i64(0) + i16(0)
            + array([string(topic) + array([i32(0)])]))
    r = c.call(24, 0, body)
    r.i32(), r.i32(), r.string(), r.i32(), r.i32()
    return r.i16()


def acl_binding(rt, name, pattern, principal, op, perm):
    return i8(rt) + string(name) + i8(pattern) + string(principal) + string("*") + i8(op) + i8(perm)


def create_acls(c, bindings):
    r = c.call(30, 1, array(bindings))
    if r is None:
        return "closed"
    r.i32()
    codes = []
    for _ in range(r.i32()):
        codes.append(r.i16())
        r.string()
    return codes


def describe_acls(c):
    r = c.call(29, 1, i8(ANY) + string(None) + i8(ANY) + string(None) + string(None) + i8(ANY) + i8(ANY))
    r.i32()
    return r.i16()


def acl_count(c):
    """How many ACLs DescribeAcls lists (Kafka's broker answers from its authorizer's cache)."""
    r = c.call(29, 1, i8(ANY) + string(None) + i8(ANY) + string(None) + string(None) + i8(ANY) + i8(ANY))
    r.i32(), r.i16(), r.string()
    count = 0
    for _ in range(r.i32()):
        r.i8(), r.string(), r.i8()
        for _ in range(r.i32()):
            r.string(), r.string(), r.i8(), r.i8()
            count += 1
    return count


def wait_until(what, condition, timeout_s=30.0):
    """Kafka applies ACL and topic changes to a broker asynchronously: wait for them."""
    deadline = time.time() + timeout_s
    while not condition():
        if time.time() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)


AUTHORIZATION_CODES = {29, 30, 31, 53}


def verdict(code):
    """What is compared: the authorization refusal itself; any other answer is 'allowed'
    (coordinator loading and such depend on timing, not on the authorizer)."""
    if isinstance(code, tuple):
        return tuple(verdict(c) for c in code)
    if isinstance(code, list) and all(isinstance(c, int) for c in code):
        return [verdict(c) for c in code]
    if isinstance(code, int):
        return code if code in AUTHORIZATION_CODES else "allowed"
    return code


def delete_acls(c, rt, name, pattern, perm):
    body = array([i8(rt) + string(name) + i8(pattern) + string(None) + string(None) + i8(ANY) + i8(perm)])
    r = c.call(31, 1, body)
    r.i32()
    r.i32()
    return r.i16()


def matrix(port):
    """alice's codes per API: without ACLs, with ACLs, with a DENY on top."""
    admin = Conn(port).login("admin")
    for t in ("t", "t-deleted"):
        assert create_topic(admin, t) == 0, f"admin could not create {t}"
    produce(admin, "t")
    # The coordinators' topics exist and are loaded before anyone is refused or allowed.
    wait_until("the group coordinator", lambda: find_coordinator(admin, "g", 0) == 0)
    wait_until("the transaction coordinator", lambda: find_coordinator(admin, "tx", 1) == 0)
    wait_until("the transaction coordinator loaded", lambda: init_producer_id(admin, "warm-up") == 0)
    rows = {}

    def probe(stage):
        alice = Conn(port).login("alice")
        seen = {
            "Metadata t": metadata(alice, "t"),
            "Metadata (all topics)": metadata_all_names(alice),
            "Produce t": produce(alice, "t"),
            "Produce t transactional": produce(alice, "t", "tx"),
            "Fetch t": fetch(alice, "t"),
            "Fetch t as replica 1": fetch(alice, "t", replica_id=1),
            "ListOffsets t": list_offsets(alice, "t"),
            "CreateTopics new": create_topic(alice, "new-" + stage.replace(" ", "-").lower()),
            "DescribeConfigs topic t": describe_configs(alice, 2, "t"),
            "DescribeConfigs broker 1": describe_configs(alice, 4, "1"),
            "DescribeConfigs group g": describe_configs(alice, 32, "g"),
            "DescribeConfigs group other": describe_configs(alice, 32, "other"),
            "IncrementalAlterConfigs group g": alter_group_config(alice, "g"),
            "IncrementalAlterConfigs group other": alter_group_config(alice, "other"),
            "InitProducerId idempotent": init_producer_id(alice),
            "InitProducerId tx": init_producer_id(alice, "tx"),
            "FindCoordinator group g": find_coordinator(alice, "g", 0),
            "FindCoordinator txn tx": find_coordinator(alice, "tx", 1),
            "DescribeGroups g": describe_group(alice, "g"),
            "ListGroups": list_groups(alice),
            "OffsetFetch g t": offset_fetch(alice, "g", "t"),
            "AddPartitionsToTxn tx t": add_partitions_to_txn(alice, "tx", "t"),
            "EndTxn tx": end_txn(alice, "tx"),
            "CreateAcls": create_acls(alice, [acl_binding(TOPIC, "x", LITERAL, "User:alice", READ, ALLOW)]),
            "DescribeAcls": describe_acls(alice),
            "DeleteTopics t-deleted": delete_topic(alice, "t-deleted") if stage == "with ACLs" else None,
        }
        for api, code in seen.items():
            rows[(stage, api)] = code

    probe("no ACL")
    granted = [
        acl_binding(TOPIC, "t", PREFIXED, "User:alice", ALL, ALLOW),
        acl_binding(TOPIC, "new-", PREFIXED, "User:alice", CREATE, ALLOW),
        acl_binding(GROUP, "g", LITERAL, "User:alice", READ, ALLOW),
        acl_binding(GROUP, "g", LITERAL, "User:alice", ALTER_CONFIGS, ALLOW),
        acl_binding(TXN_ID, "tx", LITERAL, "User:alice", WRITE, ALLOW),
        acl_binding(CLUSTER, "kafka-cluster", LITERAL, "User:alice", IDEMPOTENT_WRITE, ALLOW),
    ]
    rows[("admin", "CreateAcls grants")] = create_acls(admin, granted)
    wait_until("the ACLs on the broker", lambda: acl_count(admin) == len(granted))
    probe("with ACLs")
    wait_until("t-deleted gone", lambda: "t-deleted" not in metadata_all_names(admin))
    rows[("admin", "CreateAcls DENY WRITE t")] = create_acls(
        admin, [acl_binding(TOPIC, "t", LITERAL, "User:*", WRITE, DENY)])
    wait_until("the DENY on the broker", lambda: acl_count(admin) == len(granted) + 1)
    probe("with a DENY")
    rows[("admin", "DeleteAcls DENY")] = delete_acls(admin, TOPIC, "t", LITERAL, DENY)
    rows[("admin", "DescribeAcls")] = describe_acls(admin)
    invalid = {
        "cluster not named kafka-cluster": acl_binding(CLUSTER, "other-cluster", LITERAL, "User:alice", READ, ALLOW),
        "empty name": acl_binding(TOPIC, "", LITERAL, "User:alice", READ, ALLOW),
        "MATCH pattern": acl_binding(TOPIC, "x", 2, "User:alice", READ, ALLOW),
        "resource type 99": acl_binding(99, "x", LITERAL, "User:alice", READ, ALLOW),
        "resource type ANY": acl_binding(ANY, "x", LITERAL, "User:alice", READ, ALLOW),
        "operation ANY": acl_binding(TOPIC, "x", LITERAL, "User:alice", ANY, ALLOW),
        "permission ANY": acl_binding(TOPIC, "x", LITERAL, "User:alice", READ, ANY),
    }
    for what, binding in invalid.items():
        rows[("admin", f"CreateAcls {what}")] = create_acls(admin, [binding])
    rows[("admin", "CreateAcls UNKNOWN resource type (0)")] = create_acls(
        Conn(port).login("admin"), [acl_binding(0, "x", LITERAL, "User:alice", READ, ALLOW)])
    return rows


def acl_command(port, workdir):
    """kafka-acls.sh --add, --list, --remove through --command-config; None without the jars."""
    if not KAFKA_LIB.exists():
        return None
    config = workdir / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret";\n')
    base = ["java", "-cp", f"{KAFKA_LIB}/*", "org.apache.kafka.tools.AclCommand",
            "--bootstrap-server", f"127.0.0.1:{port}", "--command-config", str(config)]
    steps = {}

    def run(*args):
        p = subprocess.run(base + list(args), capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout

    code, _ = run("--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "cli-topic")
    steps["add"] = code
    code, out = run("--list", "--topic", "cli-topic")
    steps["list shows User:bob"] = (code, "User:bob" in out)
    code, _ = run("--remove", "--force", "--allow-principal", "User:bob", "--operation", "Read",
                  "--topic", "cli-topic")
    steps["remove"] = code
    code, out = run("--list", "--topic", "cli-topic")
    steps["list after remove shows User:bob"] = (code, "User:bob" in out)
    return steps


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", choices=["shale", "kafka", "both"], default="both")
    args = parser.parse_args()
    names = ["shale", "kafka"] if args.against == "both" else [args.against]
    results, cli, failed = {}, {}, False
    for name in names:
        workdir = Path(tempfile.mkdtemp(prefix="acl-matrix-"))
        log = workdir / "broker.log"
        broker = (KafkaBroker(log, KAFKA_LIB, deps_var("KAFKA_VERSION")) if name == "kafka"
                  else ShaleBroker(log, shale_binary()))
        sasl_port = free_port()
        try:
            broker.start(PROPS, extra_listeners={"SASL": (sasl_port, "SASL_PLAINTEXT")})
            results[name] = matrix(sasl_port)
            cli[name] = acl_command(sasl_port, workdir)
        except Exception as e:  # a broker that fails to start or answer is a failure
            print(f"{name}: {type(e).__name__}: {e}\n{broker.tail()}")
            failed = True
        finally:
            broker.stop()
    keys = []
    for seen in results.values():
        keys += [k for k in seen if k not in keys]
    for key in keys:
        row = {name: seen.get(key) for name, seen in results.items()}
        # Admin steps are compared code for code; alice's by their authorization verdict.
        compared = row if key[0] == "admin" else {n: verdict(v) for n, v in row.items()}
        same = len({repr(v) for v in compared.values()}) == 1
        print(f"{key[0]:12} {key[1]:38} {row}  {'ok' if same else 'DIFFERENT'}")
        failed |= not same
    for name, steps in cli.items():
        print(f"kafka-acls.sh on {name}: {steps if steps is not None else 'not run (no Kafka jars)'}")
    if len(cli) == 2 and None not in cli.values() and cli["shale"] != cli["kafka"]:
        print("kafka-acls.sh: DIFFERENT")
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
