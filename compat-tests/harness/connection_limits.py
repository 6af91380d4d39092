#!/usr/bin/env python3
"""max.connections.per.ip against both brokers: the same raw-socket check on Shale and on
Apache Kafka, each started with max.connections.per.ip=2 (and once with a default of 1000 and
max.connections.per.ip.overrides=127.0.0.1:2).

A client address at its limit has its next connection closed without an answer, the open ones
keep being answered, and a closed connection frees its place.

    python3 compat-tests/harness/connection_limits.py [--against shale|kafka|both]

Run after compat-tests/run.sh has installed its dependencies (it reads the Kafka jars from
there); exits 1 on any difference from the expected behaviour.
"""

import argparse
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import KafkaBroker, ShaleBroker  # noqa: E402
from run import KAFKA_LIB, deps_var, shale_binary  # noqa: E402

WAIT_S = 10.0


def api_versions(sock, correlation_id):
    """True when the broker answers ApiVersions v0 on `sock` (False once it closed it)."""
    body = struct.pack(">hhih", 18, 0, correlation_id, -1)
    try:
        sock.sendall(struct.pack(">i", len(body)) + body)
        header = sock.recv(4, socket.MSG_WAITALL)
        if len(header) < 4:
            return False
        (length,) = struct.unpack(">i", header)
        answer = b""
        while len(answer) < length:
            chunk = sock.recv(length - len(answer))
            if not chunk:
                return False
            answer += chunk
        return answer[:4] == struct.pack(">i", correlation_id)
    except OSError:
        return False


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    sock.settimeout(WAIT_S)
    return sock


def served(port, correlation_id):
    """A connection the broker answers on; a just-closed one may hold its place briefly."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        sock = connect(port)
        if api_versions(sock, correlation_id):
            return sock
        sock.close()
        time.sleep(0.05)  # polling another process's connection count: nothing to await
    raise AssertionError("no connection was served")


def check(port):
    first = served(port, 1)
    second = served(port, 2)
    third = connect(port)
    if api_versions(third, 3):
        return "a third connection from one address was answered"
    if not (api_versions(first, 4) and api_versions(second, 5)):
        return "an open connection stopped being answered"
    second.close()
    served(port, 6)
    first.close()
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", choices=["shale", "kafka", "both"], default="both")
    args = parser.parse_args()
    cases = [
        ("max.connections.per.ip=2", {"max.connections.per.ip": "2"}),
        ("override 127.0.0.1:2", {"max.connections.per.ip": "1000",
                                  "max.connections.per.ip.overrides": "127.0.0.1:2"}),
    ]
    names = ["shale", "kafka"] if args.against == "both" else [args.against]
    failed = False
    for name in names:
        for label, props in cases:
            log = Path(tempfile.mkdtemp(prefix="connection-limits-")) / "broker.log"
            broker = (KafkaBroker(log, KAFKA_LIB, deps_var("KAFKA_VERSION")) if name == "kafka"
                      else ShaleBroker(log, shale_binary()))
            try:
                broker.start(props)
                problem = check(broker.port)
            except Exception as e:  # a broker that fails to start or to serve is a failure
                problem = f"{type(e).__name__}: {e}"
            finally:
                broker.stop()
            print(f"{name:6} {label:28} {'pass' if problem is None else 'FAIL: ' + problem}")
            failed |= problem is not None
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
