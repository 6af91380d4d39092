#!/usr/bin/env python3
"""SCRAM-SHA-256 and SCRAM-SHA-512 against both brokers: the same script on Shale and on Apache
Kafka, each with a SASL_PLAINTEXT listener (both SCRAM mechanisms, ScramLoginModule entries
without users) beside PLAINTEXT. Users are made after start with AlterUserScramCredentials.

Checks, on each broker, and that both answer alike:
- AlterUserScramCredentials v0 over raw frames (the salted password computed here, as Kafka's
  admin client does): two users made; the refusals (too few / too many iterations, empty user,
  unknown mechanism, one user twice, an empty salted password, deleting what does not exist)
  with their codes and messages;
- DescribeUserScramCredentials v0: every user, named users, unknown and twice named ones;
- a SCRAM login over raw frames for each mechanism: the right password is accepted (and the
  server's signature checks), a wrong password and an unknown user are answered
  SASL_AUTHENTICATION_FAILED with the broker's text and the connection closes; a deleted
  credential no longer logs in;
- librdkafka (confluent-kafka) logs in with SCRAM-SHA-256 and SCRAM-SHA-512 and reads metadata,
  and a wrong password gets none;
- Kafka's kafka-configs tool (ConfigCommand) makes a user with
  --add-config 'SCRAM-SHA-256=[iterations=8192,password=...]' and describes it (which reads
  DescribeClientQuotas first: its answers, none set, and its refusals are compared too).

    python3 compat-tests/harness/sasl_scram.py [--against shale|kafka|both]

Prints each broker's answers side by side; exits 1 when a check fails or the brokers differ.
"""

import argparse
import base64
import hashlib
import hmac
import os
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import KafkaBroker, ShaleBroker, free_port  # noqa: E402
from run import KAFKA_LIB, VENV_PY, deps_var, shale_binary  # noqa: E402
import rawwire  # noqa: E402
from rawwire import closed, connect, read_frame, string  # noqa: E402,F401

try:
    import confluent_kafka  # noqa: F401
except ImportError:  # the client lives in the compat venv: run there
    # (compared unresolved: a venv's python is a link to the interpreter it came from)
    if VENV_PY.exists() and Path(sys.executable).absolute() != VENV_PY.absolute():
        os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])
    raise

WAIT_S = 10.0
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}


# --- framing -------------------------------------------------------------------------------


def uvarint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def request(api_key, version, correlation_id, body, flexible=False):
    return rawwire.request(api_key, version, correlation_id, body, flexible, client_id="scram-check")


def compact_string(s):
    data = s.encode()
    return uvarint(len(data) + 1) + data


def compact_bytes(b):
    return uvarint(len(b) + 1) + b


def compact_array(items):
    return uvarint(len(items) + 1) + b"".join(items)


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int8(self):
        return struct.unpack(">b", self.take(1))[0]

    def int16(self):
        return struct.unpack(">h", self.take(2))[0]

    def int32(self):
        return struct.unpack(">i", self.take(4))[0]

    def uvarint(self):
        shift = result = 0
        while True:
            byte = self.take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def compact_string(self):
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def nullable_string(self):
        n = self.int16()
        return None if n < 0 else self.take(n).decode()

    def bytes32(self):
        n = self.int32()
        return b"" if n < 0 else self.take(n)


# --- SCRAM credentials (what Kafka's admin client sends) -------------------------------------

def salted_password(mechanism, password, salt, iterations):
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][1], password.encode(), salt, iterations)


def upsertion(user, mechanism, password, iterations, kafka_type=None, salted=None):
    salt = f"salt-of-{user}".encode()
    if salted is None:
        salted = salted_password(mechanism, password, salt, max(iterations, 1))
    kafka_type = MECHANISMS[mechanism][0] if kafka_type is None else kafka_type
    return (compact_string(user) + struct.pack(">bi", kafka_type, iterations)
            + compact_bytes(salt) + compact_bytes(salted) + b"\x00")


def deletion(user, kafka_type):
    return compact_string(user) + struct.pack(">b", kafka_type) + b"\x00"


def alter(port, deletions, upsertions):
    """AlterUserScramCredentials v0: sorted (user, error code, error message)."""
    body = compact_array(deletions) + compact_array(upsertions) + b"\x00"
    with connect(port) as sock:
        sock.sendall(request(51, 0, 11, body, flexible=True))
        r = Reader(read_frame(sock))
    r.tags()  # response header v1
    r.int32()
    results = []
    for _ in range(r.uvarint() - 1):
        user, code, message = r.compact_string(), r.int16(), r.compact_string()
        r.tags()
        results.append((user, code, message))
    return sorted(results)


def describe(port, users):
    """DescribeUserScramCredentials v0: (top error, [(user, code, message, [(mech, iters)])])."""
    if users is None:
        body = b"\x00"
    else:
        body = compact_array([compact_string(u) + b"\x00" for u in users])
    with connect(port) as sock:
        sock.sendall(request(50, 0, 12, body + b"\x00", flexible=True))
        r = Reader(read_frame(sock))
    r.tags()
    r.int32()
    top = (r.int16(), r.compact_string())
    results = []
    for _ in range(r.uvarint() - 1):
        user, code, message = r.compact_string(), r.int16(), r.compact_string()
        infos = []
        for _ in range(r.uvarint() - 1):
            infos.append((r.int8(), r.int32()))
            r.tags()
        r.tags()
        results.append((user, code, message, sorted(infos)))
    return top, sorted(results)


def compact_nullable_string(s):
    return b"\x00" if s is None else compact_string(s)


def describe_quotas(port, components, strict=False):
    """DescribeClientQuotas v1: (error code, error message, entries or None)."""
    body = compact_array([compact_string(t) + struct.pack(">b", m) + compact_nullable_string(n)
                          + b"\x00" for t, m, n in components])
    body += struct.pack(">?", strict) + b"\x00"
    with connect(port) as sock:
        sock.sendall(request(48, 1, 13, body, flexible=True))
        r = Reader(read_frame(sock))
    r.tags()
    r.int32()
    code, message = r.int16(), r.compact_string()
    n = r.uvarint()
    entries = None if n == 0 else []
    for _ in range(max(n - 1, 0)):
        entity = []
        for _ in range(r.uvarint() - 1):
            entity.append((r.compact_string(), r.compact_string()))
            r.tags()
        values = []
        for _ in range(r.uvarint() - 1):
            values.append((r.compact_string(), struct.unpack(">d", r.take(8))[0]))
            r.tags()
        r.tags()
        entries.append((entity, values))
    return code, message, entries


# --- a SCRAM login over raw frames ----------------------------------------------------------

def sasl_round(sock, correlation_id, token):
    """SaslAuthenticate v1: (error code, error message, auth bytes), or None when closed."""
    sock.sendall(request(36, 1, correlation_id, struct.pack(">i", len(token)) + token))
    body = read_frame(sock)
    if body is None:
        return None
    r = Reader(body)
    return r.int16(), r.nullable_string(), r.bytes32()


def login(port, mechanism, user, password):
    """'accepted', or (error code, message, closed after it)."""
    digest = MECHANISMS[mechanism][1]
    sock = connect(port)
    try:
        sock.sendall(request(17, 1, 1, string(mechanism)))
        body = read_frame(sock)
        if body is None or struct.unpack(">h", body[:2])[0] != 0:
            return ("handshake refused", body and struct.unpack(">h", body[:2])[0])
        nonce = base64.b64encode(os.urandom(18)).decode()
        first_bare = f"n={user},r={nonce}"
        answer = sasl_round(sock, 2, f"n,,{first_bare}".encode())
        if answer is None:
            return ("closed", None)
        if answer[0] != 0:
            return (answer[0], answer[1], closed(sock))
        server_first = answer[2].decode()
        fields = dict(part.split("=", 1) for part in server_first.split(","))
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
        client_key = hmac.new(salted, b"Client Key", digest).digest()
        stored_key = hashlib.new(digest, client_key).digest()
        without_proof = f"c=biws,r={fields['r']}"
        auth_message = f"{first_bare},{server_first},{without_proof}".encode()
        signature = hmac.new(stored_key, auth_message, digest).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        final = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
        answer = sasl_round(sock, 3, final)
        if answer is None:
            return ("closed", None)
        if answer[0] != 0:
            return (answer[0], answer[1], closed(sock))
        server_key = hmac.new(salted, b"Server Key", digest).digest()
        expected = b"v=" + base64.b64encode(hmac.new(server_key, auth_message, digest).digest())
        return "accepted" if answer[2] == expected else ("bad server signature", answer[2])
    finally:
        sock.close()


# --- real clients ---------------------------------------------------------------------------

def librdkafka_metadata(port, mechanism, user, password):
    """Whether librdkafka logs in and reads metadata within a few seconds."""
    from confluent_kafka.admin import AdminClient

    client = AdminClient({
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        "log_level": 0,  # a refused login is expected here: keep librdkafka's retries quiet
    })
    try:
        client.list_topics(timeout=6)
        return True
    except Exception:  # KafkaException on a refused login (no metadata within the timeout)
        return False


def config_command(port, *args):
    """Kafka's kafka-configs tool against the PLAINTEXT listener: its exit code and output."""
    cmd = ["java", "-cp", f"{KAFKA_LIB}/*", "org.apache.kafka.tools.ConfigCommand",
           "--bootstrap-server", f"127.0.0.1:{port}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if "SLF4J" not in line and "log4j" not in line.lower() and line.strip()]
    return done.returncode, lines


# --- the script -----------------------------------------------------------------------------

def observe(plain_port, sasl_port):
    seen = {}
    seen["alter: two users made"] = alter(plain_port, [], [
        upsertion("alice", "SCRAM-SHA-256", "alice-secret", 8192),
        upsertion("bob", "SCRAM-SHA-512", "bob-secret", 4096),
    ])
    seen["alter: refusals"] = alter(plain_port, [], [
        upsertion("few", "SCRAM-SHA-256", "x", 4095),
        upsertion("many", "SCRAM-SHA-512", "x", 16385),
        upsertion("", "SCRAM-SHA-256", "x", 4096),
        upsertion("odd", "SCRAM-SHA-256", "x", 4096, kafka_type=0),
        upsertion("twice", "SCRAM-SHA-256", "x", 4096),
        upsertion("twice", "SCRAM-SHA-512", "x", 4096),
        upsertion("nokey", "SCRAM-SHA-256", "x", 4096, salted=b""),
    ])
    seen["alter: deleting what does not exist"] = alter(
        plain_port, [deletion("ghost", 1), deletion("alice", 2)], [])
    seen["describe: every user (null)"] = describe(plain_port, None)
    seen["describe: every user (empty)"] = describe(plain_port, [])
    seen["describe: named"] = describe(plain_port, ["ghost", "alice", "alice", "bob"])
    for mechanism, user, password in [("SCRAM-SHA-256", "alice", "alice-secret"),
                                      ("SCRAM-SHA-512", "bob", "bob-secret")]:
        seen[f"login {mechanism} right password"] = login(sasl_port, mechanism, user, password)
        seen[f"login {mechanism} wrong password"] = login(sasl_port, mechanism, user, "wrong")
        seen[f"login {mechanism} unknown user"] = login(sasl_port, mechanism, "mallory", password)
        seen[f"librdkafka {mechanism} right password"] = librdkafka_metadata(
            sasl_port, mechanism, user, password)
        seen[f"librdkafka {mechanism} wrong password"] = librdkafka_metadata(
            sasl_port, mechanism, user, "wrong")
    seen["login SCRAM-SHA-512 as a SCRAM-SHA-256 user"] = login(
        sasl_port, "SCRAM-SHA-512", "alice", "alice-secret")
    seen["alter: delete alice"] = alter(plain_port, [deletion("alice", 1)], [])
    seen["login after deletion"] = login(sasl_port, "SCRAM-SHA-256", "alice", "alice-secret")
    seen["client quotas: a user's (none)"] = describe_quotas(plain_port, [("user", 0, "carol")])
    seen["client quotas: every entity (none)"] = describe_quotas(plain_port, [])
    seen["client quotas: unknown entity type"] = describe_quotas(plain_port, [("group", 2, None)])
    seen["client quotas: a type twice"] = describe_quotas(
        plain_port, [("user", 2, None), ("user", 1, None)])
    seen["client quotas: ip with user"] = describe_quotas(
        plain_port, [("ip", 2, None), ("user", 2, None)])
    seen["kafka-configs --alter"] = config_command(
        plain_port, "--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-secret]",
        "--entity-type", "users", "--entity-name", "carol")
    seen["kafka-configs --describe"] = config_command(
        plain_port, "--describe", "--entity-type", "users", "--entity-name", "carol")
    seen["login as the user kafka-configs made"] = login(
        sasl_port, "SCRAM-SHA-256", "carol", "carol-secret")
    return seen


def refused(mechanism):
    return (58, "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {mechanism}", True)


EXPECTED = {
    "alter: two users made": [("alice", 0, None), ("bob", 0, None)],
    "login SCRAM-SHA-256 right password": "accepted",
    "login SCRAM-SHA-256 wrong password": refused("SCRAM-SHA-256"),
    "login SCRAM-SHA-256 unknown user": refused("SCRAM-SHA-256"),
    "login SCRAM-SHA-512 right password": "accepted",
    "login SCRAM-SHA-512 wrong password": refused("SCRAM-SHA-512"),
    "login SCRAM-SHA-512 unknown user": refused("SCRAM-SHA-512"),
    "librdkafka SCRAM-SHA-256 right password": True,
    "librdkafka SCRAM-SHA-256 wrong password": False,
    "librdkafka SCRAM-SHA-512 right password": True,
    "librdkafka SCRAM-SHA-512 wrong password": False,
    "login SCRAM-SHA-512 as a SCRAM-SHA-256 user": refused("SCRAM-SHA-512"),
    "alter: delete alice": [("alice", 0, None)],
    "login after deletion": refused("SCRAM-SHA-256"),
    "login as the user kafka-configs made": "accepted",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", choices=["shale", "kafka", "both"], default="both")
    args = parser.parse_args()
    names = ["shale", "kafka"] if args.against == "both" else [args.against]
    results, failed = {}, False
    for name in names:
        log = Path(tempfile.mkdtemp(prefix="sasl-scram-")) / "broker.log"
        broker = (KafkaBroker(log, KAFKA_LIB, deps_var("KAFKA_VERSION")) if name == "kafka"
                  else ShaleBroker(log, shale_binary()))
        sasl_port = free_port()
        props = {
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
            "listener.name.sasl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        }
        try:
            broker.start(props, extra_listeners={"SASL": (sasl_port, "SASL_PLAINTEXT")})
            results[name] = observe(broker.port, sasl_port)
        except Exception as e:  # a broker that fails to start or answer is a failure
            print(f"{name}: {type(e).__name__}: {e}\n{broker.tail()}")
            failed = True
        finally:
            broker.stop()
    checks = list(dict.fromkeys([*EXPECTED, *(k for seen in results.values() for k in seen)]))
    for check in checks:
        row = {name: seen.get(check) for name, seen in results.items()}
        if check in EXPECTED:
            ok = all(v == EXPECTED[check] for v in row.values())
        else:  # no fixed expectation: both brokers must answer the same
            ok = len(results) < 2 or len({repr(v) for v in row.values()}) == 1
        print(f"{check:45} {row}  {'ok' if ok else 'FAIL'}")
        failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
