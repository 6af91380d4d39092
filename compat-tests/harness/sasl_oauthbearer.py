#!/usr/bin/env python3
"""SASL_PLAINTEXT with OAUTHBEARER and Kafka's unsecured validator against both brokers: the same
raw-socket exchange on Shale and on Apache Kafka, each with a SASL_PLAINTEXT listener whose
`OAuthBearerLoginModule` entry requires scope `kafka`.

Checks, on each broker: a good unsecured JWS authenticates (then ApiVersions is answered); an
expired token, one without `sub`, one whose `alg` is not `none` and one without the required
scope are each answered with the broker's JSON challenge, and the client's `\\x01` then fails
with SASL_AUTHENTICATION_FAILED (58) and the same text; a malformed initial response fails at
once with 58. Every answer must be the same on both brokers, but one: Kafka 4.4 has a defect on a
first message whose `auth=` names a scheme other than Bearer (OAuthBearerClientInitialResponse
asks its regex for a group that did not match, an IllegalArgumentException the authenticator
does not catch) and closes the connection without an answer; Shale answers that message as
Kafka answers every other malformed one, with 58. `KAFKA_DEFECTS` pins what Kafka does there,
so the script notices if a later Kafka changes it.

    python3 compat-tests/harness/sasl_oauthbearer.py [--against shale|kafka|both]
"""

import argparse
import base64
import json
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import KafkaBroker, ShaleBroker, free_port  # noqa: E402
from run import KAFKA_LIB, deps_var, shale_binary  # noqa: E402
from rawwire import api_versions_answered, closed, connect, handshake, read_frame, request, string  # noqa: E402,F401

WAIT_S = 10.0
JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";')


def authenticate(sock, token, correlation_id=2):
    """SaslAuthenticate v1 (non-flexible): (error code, error message, auth bytes)."""
    sock.sendall(request(36, 1, correlation_id, struct.pack(">i", len(token)) + token))
    body = read_frame(sock)
    if body is None:
        return None
    (error,) = struct.unpack(">h", body[:2])
    (n,) = struct.unpack(">h", body[2:4])
    # An empty message and a null one both mean none (the check is about the mechanism).
    message = body[4:4 + n].decode() or None if n >= 0 else None
    pos = 4 + max(n, 0)
    (m,) = struct.unpack(">i", body[pos:pos + 4])
    return error, message, body[pos + 4:pos + 4 + m].decode()


def b64(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def jws(claims, alg="none"):
    return f"{b64({'alg': alg})}.{b64(claims)}."


def initial(token):
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def refused(port, token_bytes):
    s = connect(port)
    handshake(s, "OAUTHBEARER")
    first = authenticate(s, token_bytes)
    second = authenticate(s, b"\x01", 3) if first and first[0] == 0 else None
    s.close()
    return first, second


def observe(port):
    now = int(time.time())
    seen = {}
    s = connect(port)
    seen["handshake OAUTHBEARER"] = handshake(s, "OAUTHBEARER")
    seen["good token"] = authenticate(s, initial(jws({"sub": "alice", "exp": now + 600, "scope": ["kafka"]})))
    seen["ApiVersions after authenticating"] = api_versions_answered(s)
    s.close()
    seen["expired"] = refused(port, initial(jws({"sub": "alice", "exp": now - 60, "scope": "kafka"})))
    seen["no sub"] = refused(port, initial(jws({"exp": now + 600, "scope": "kafka"})))
    seen["alg HS256"] = refused(port, initial(jws({"sub": "alice", "exp": now + 600, "scope": "kafka"}, "HS256")))
    seen["wrong scope"] = refused(port, initial(jws({"sub": "alice", "exp": now + 600, "scope": ["other"]})))
    seen["malformed"] = refused(port, b"n,,\x01auth=Basic x\x01\x01")
    return seen


INVALID = (0, None, '{"status":"invalid_token"}')
FAILED_INVALID = (58, '{"status":"invalid_token"}', "")
EXPECTED = {
    "handshake OAUTHBEARER": (0, ["OAUTHBEARER"]),
    "good token": (0, None, ""),
    "ApiVersions after authenticating": True,
    "expired": (INVALID, FAILED_INVALID),
    "no sub": (INVALID, FAILED_INVALID),
    "alg HS256": (INVALID, FAILED_INVALID),
    "wrong scope": ((0, None, '{"status":"insufficient_scope", "scope":"[kafka]"}'),
                    (58, '{"status":"insufficient_scope", "scope":"[kafka]"}', "")),
    "malformed": ((58, "Authentication failed during authentication due to invalid credentials with "
                   "SASL mechanism OAUTHBEARER", ""), None),
}

# Checks where Apache Kafka 4.4 does not do what its own code means to, and what it does instead.
KAFKA_DEFECTS = {
    # Closed without an answer: "No group with name <scheme>" escapes the authenticator.
    "malformed": (None, None),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", choices=["shale", "kafka", "both"], default="both")
    args = parser.parse_args()
    names = ["shale", "kafka"] if args.against == "both" else [args.against]
    results, failed = {}, False
    for name in names:
        log = Path(tempfile.mkdtemp(prefix="sasl-oauthbearer-")) / "broker.log"
        broker = (KafkaBroker(log, KAFKA_LIB, deps_var("KAFKA_VERSION")) if name == "kafka"
                  else ShaleBroker(log, shale_binary()))
        sasl_port = free_port()
        props = {
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "listener.name.sasl.oauthbearer.sasl.jaas.config": JAAS,
        }
        try:
            broker.start(props, extra_listeners={"SASL": (sasl_port, "SASL_PLAINTEXT")})
            results[name] = observe(sasl_port)
        except Exception as e:  # a broker that fails to start or answer is a failure
            print(f"{name}: {type(e).__name__}: {e}\n{broker.tail()}")
            failed = True
        finally:
            broker.stop()
    failed |= len(results) < len(names)
    for check in EXPECTED:
        row = {name: seen.get(check) for name, seen in results.items()}
        ok = all(v == (KAFKA_DEFECTS.get(check, EXPECTED[check]) if name == "kafka" else EXPECTED[check])
                 for name, v in row.items())
        print(f"{check:34} {row}  {'ok' if ok else 'FAIL'}")
        failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
