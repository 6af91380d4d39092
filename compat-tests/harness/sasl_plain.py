#!/usr/bin/env python3
"""SASL_PLAINTEXT with PLAIN against both brokers: the same raw-socket exchange on Shale and on
Apache Kafka, each with a SASL_PLAINTEXT listener beside PLAINTEXT and the users of
`listener.name.sasl.plain.sasl.jaas.config`.

Checks, on each broker:
- SaslHandshake v1 for PLAIN, then SaslAuthenticate v2 with the right password: error 0, then
  ApiVersions is answered on the same connection;
- the wrong password: SASL_AUTHENTICATION_FAILED (58) with the broker's message, then the
  connection is closed;
- SaslHandshake for SCRAM-SHA-256 (not enabled): UNSUPPORTED_SASL_MECHANISM (33), with the
  enabled mechanisms listed;
- a Metadata request before authenticating: the connection is closed unanswered.

    python3 compat-tests/harness/sasl_plain.py [--against shale|kafka|both]

Prints each broker's answers side by side; exits 1 when a check fails or the brokers differ.
"""

import argparse
import socket
import struct
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import KafkaBroker, ShaleBroker, free_port  # noqa: E402
from run import KAFKA_LIB, deps_var, shale_binary  # noqa: E402
from rawwire import api_versions_answered, closed, connect, handshake, read_frame, request, string  # noqa: E402,F401

WAIT_S = 10.0
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


def authenticate(sock, user, password):
    """SaslAuthenticate v1 (non-flexible): (error code, error message)."""
    token = f"\0{user}\0{password}".encode()
    sock.sendall(request(36, 1, 2, struct.pack(">i", len(token)) + token))
    body = read_frame(sock)
    (error,) = struct.unpack(">h", body[:2])
    (n,) = struct.unpack(">h", body[2:4])
    message = body[4:4 + n].decode() if n >= 0 else None
    return error, message


def observe(port):
    seen = {}
    s = connect(port)
    seen["handshake PLAIN"] = handshake(s, "PLAIN")
    seen["right password"] = authenticate(s, "alice", "alice-secret")[0]
    seen["ApiVersions after authenticating"] = api_versions_answered(s)
    s.close()
    s = connect(port)
    handshake(s, "PLAIN")
    seen["wrong password"] = authenticate(s, "alice", "wrong")
    seen["closed after the failure"] = closed(s)
    s.close()
    s = connect(port)
    seen["handshake SCRAM-SHA-256"] = handshake(s, "SCRAM-SHA-256")
    s.close()
    s = connect(port)
    s.sendall(request(3, 1, 4, struct.pack(">i", -1)))  # Metadata v1, all topics
    seen["Metadata before authenticating answered"] = read_frame(s) is not None
    s.close()
    return seen


EXPECTED = {
    "handshake PLAIN": (0, ["PLAIN"]),
    "right password": 0,
    "ApiVersions after authenticating": True,
    "closed after the failure": True,
    "handshake SCRAM-SHA-256": (33, ["PLAIN"]),
    "Metadata before authenticating answered": False,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", choices=["shale", "kafka", "both"], default="both")
    args = parser.parse_args()
    names = ["shale", "kafka"] if args.against == "both" else [args.against]
    results, failed = {}, False
    for name in names:
        log = Path(tempfile.mkdtemp(prefix="sasl-plain-")) / "broker.log"
        broker = (KafkaBroker(log, KAFKA_LIB, deps_var("KAFKA_VERSION")) if name == "kafka"
                  else ShaleBroker(log, shale_binary()))
        sasl_port = free_port()
        props = {
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl.plain.sasl.jaas.config": JAAS,
        }
        try:
            broker.start(props, extra_listeners={"SASL": (sasl_port, "SASL_PLAINTEXT")})
            results[name] = observe(sasl_port)
        except Exception as e:  # a broker that fails to start or answer is a failure
            print(f"{name}: {type(e).__name__}: {e}\n{broker.tail()}")
            failed = True
        finally:
            broker.stop()
    for check in EXPECTED:
        row = {name: seen.get(check) for name, seen in results.items()}
        ok = all(v == EXPECTED[check] for v in row.values())
        print(f"{check:42} {row}  {'ok' if ok else 'FAIL'}")
        failed |= not ok
    wrong = {name: seen.get("wrong password") for name, seen in results.items()}
    print(f"{'wrong password':42} {wrong}")
    if any(v is None or v[0] != 58 for v in wrong.values()) or len(set(map(str, wrong.values()))) > 1:
        print("wrong password: FAIL (expected 58, the same message on both)")
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
