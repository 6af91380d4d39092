"""Shared pieces of the Python-driven clients: the argument contract, the record data set,
assertions and the exit-code convention (0 pass, 77 not applicable, anything else fail)."""

import argparse
import json
import os
import re
import socket
import struct
import sys
import time
import traceback

NOT_APPLICABLE_EXIT = 77
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
# Kafka's default max.message.bytes is 1048588; a value this size fits in one batch below it.
LARGE_VALUE_BYTES = 1_000_000
TOO_LARGE_VALUE_BYTES = 1_200_000

# Kafka error codes the scenarios check.
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
INVALID_TIMESTAMP = 32
TOPIC_ALREADY_EXISTS = 36
INVALID_CONFIG = 40
INVALID_REQUEST = 42
INVALID_RECORD = 87

# broker_configs: alters Kafka 4.4 refuses on a broker and on the cluster default, with INVALID_REQUEST and
# these messages; keys DescribeConfigs of broker "1" reports as writable and as read-only.
REFUSED_BROKER_ALTERS = [
    ("log.dirs", "/x", "Cannot update these configs dynamically: [log.dirs]"),
    ("log.retention.ms", "abc", "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"),
    ("log.segment.bytes", "100",
     "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576"),
]
BROKER_WRITABLE_KEYS = ["log.retention.ms", "message.max.bytes", "log.cleanup.policy"]
BROKER_READ_ONLY_KEYS = ["log.dirs", "node.id", "log.retention.hours"]
# A dynamic message.max.bytes of 50000 refuses a 60000-byte record and takes a 40000-byte one.
BROKER_MAX_MESSAGE_BYTES = 50_000
ABOVE_BROKER_MAX_BYTES = 60_000
BELOW_BROKER_MAX_BYTES = 40_000

# KIP-467 per-record errors (record_errors scenario). Kafka 4.x topic defaults:
# message.timestamp.after.max.ms = 1 h, message.timestamp.before.max.ms = Long.MAX_VALUE.
TIMESTAMP_AFTER_MAX_MS = 3_600_000
TIMESTAMP_BEFORE_MAX_MS = 2 ** 63 - 1
FUTURE_TIMESTAMP_SKEW_MS = 2 * 3_600_000
# What the Java producer and kafka-python say about the records of a refused batch that were
# not themselves named in record_errors.
OTHER_RECORD_MESSAGE = ("Failed to append record because it was part of a batch which had one more more "
                        "invalid records")
KEYLESS_RECORD_MESSAGE = "Compacted topic cannot accept message without key in topic partition {topic}-{partition}"
TIMESTAMP_MESSAGE = re.compile(r"Timestamp (-?\d+) of message with offset (\d+) is out of range\. "
                               r"The timestamp should be within \[(-?\d+), (-?\d+)\]")


def record_error_cases(now_ms):
    """The KIP-467 cases of the record_errors scenario: one batch of 3 records each.

    Each case is a dict: name, topic configs, records, top (the partition-level error Kafka
    answers) and expected, where expected[i] says what record i is: "keyless" (named in
    record_errors with the compacted-topic message), "timestamp" (named with the out-of-range
    message for its timestamp) or "other" (not named: refused because it shared the batch)."""
    future = now_ms + FUTURE_TIMESTAMP_SKEW_MS

    def rec(key, i, ts=now_ms):
        return {"key": key, "value": f"bad-{i}".encode(), "headers": [], "timestamp": ts}
    return [
        # Produce to a compacted topic with records 0 and 2 keyless: INVALID_RECORD, 2 record errors.
        {"name": "keyless", "configs": {"cleanup.policy": "compact"}, "top": INVALID_RECORD,
         "records": [rec(None, 0), rec(b"k1", 1), rec(None, 2)],
         "expected": ["keyless", "other", "keyless"]},
        # Record 1 two hours ahead (the limit is 1 h): INVALID_TIMESTAMP, 1 record error.
        {"name": "future", "configs": {}, "top": INVALID_TIMESTAMP,
         "records": [rec(b"k0", 0), rec(b"k1", 1, future), rec(b"k2", 2)],
         "expected": ["other", "timestamp", "other"]},
        # Both faults in one batch: INVALID_TIMESTAMP (a timestamp error is among them), 2 record errors.
        {"name": "mixed", "configs": {"cleanup.policy": "compact"}, "top": INVALID_TIMESTAMP,
         "records": [rec(None, 0), rec(b"k1", 1, future), rec(b"k2", 2)],
         "expected": ["keyless", "timestamp", "other"]},
    ]


def named_error_code(case):
    """The error Java and kafka-python give a record named in record_errors (librdkafka too when
    more than one is named): the partition-level error when it is the only one named, else
    INVALID_RECORD."""
    named = [kind for kind in case["expected"] if kind != "other"]
    return case["top"] if len(named) == 1 else INVALID_RECORD


def partition_error_message(case, topic):
    """The partition-level error_message Kafka answers for a refused batch of `case`."""
    if case["top"] == INVALID_TIMESTAMP:
        return "One or more records have been rejected due to invalid timestamp"
    named = [(i, kind) for i, kind in enumerate(case["expected"]) if kind != "other"]
    check(all(kind == "keyless" for _, kind in named), "INVALID_RECORD cases name keyless records only")
    message = KEYLESS_RECORD_MESSAGE.format(topic=topic, partition=0)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{message}')" for i, _ in named[:3])
    return (f"One or more records have been rejected due to {len(named)} record errors in total, and only "
            f"showing the first three errors at most: [{shown}]")


def good_records(now_ms):
    return [{"key": f"good-k{i}".encode(), "value": f"good-{i}".encode(), "headers": [("h", b"1")],
             "timestamp": now_ms + i} for i in range(3)]


def check_record_message(message, kind, topic, index, timestamp, sent_ms, acked_ms, what):
    """The per-record message Kafka puts in record_errors for record `index` of the batch."""
    if kind == "keyless":
        check_eq(message, KEYLESS_RECORD_MESSAGE.format(topic=topic, partition=0), f"{what}: message")
        return
    match = TIMESTAMP_MESSAGE.fullmatch(message or "")
    check(match, f"{what}: message {message!r} is not Kafka's out-of-range timestamp message")
    check_eq(int(match[1]), timestamp, f"{what}: timestamp in the message")
    check_eq(int(match[2]), index, f"{what}: offset in the message (the record's index in the batch)")
    low, high = int(match[3]), int(match[4])
    now = high - TIMESTAMP_AFTER_MAX_MS
    check(sent_ms <= now <= acked_ms,
          f"{what}: upper bound {high} is not the broker's time (between {sent_ms} and {acked_ms}) + 1 h")
    check_eq(low, now - TIMESTAMP_BEFORE_MAX_MS, f"{what}: lower bound (broker time - Long.MAX_VALUE)")


# recompression scenario: (topic compression.type, the producer's codec, the codec Kafka stores).
# Every topic codec gets an uncompressed producer; `uncompressed` gets a gzip one, since an
# uncompressed producer already matches it; `producer` keeps whatever the producer sent.
RECOMPRESSION_CASES = [
    ("uncompressed", "gzip", "none"),
    ("gzip", "none", "gzip"),
    ("snappy", "none", "snappy"),
    ("lz4", "none", "lz4"),
    ("zstd", "none", "zstd"),
    ("producer", "none", "none"),
    ("producer", "lz4", "lz4"),
]
# RecordBatch attributes bits 0-2.
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _read_exact(sock, n):
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise Failure("broker closed the connection during a raw Fetch")
        out.extend(chunk)
    return bytes(out)


def _kstring(text):
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def raw_fetch_batches(bootstrap, topic, partition=0, offset=0, max_bytes=1 << 20):
    """One Fetch v11 (the newest non-flexible version, and zstd needs v10+) sent on a raw
    socket: every record batch of the answer as (base offset, record count, codec name), read
    from the RecordBatch headers themselves, which no client API exposes."""
    host, port = bootstrap.rsplit(":", 1)
    body = struct.pack(">iiiibii", -1, 500, 1, max_bytes, 0, 0, -1)  # replica, wait, min, max, isolation, session
    body += struct.pack(">i", 1) + _kstring(topic)
    body += struct.pack(">i", 1) + struct.pack(">iiqqi", partition, -1, offset, -1, max_bytes)
    body += struct.pack(">i", 0) + _kstring("")  # forgotten topics, rack id
    header = struct.pack(">hhi", 1, 11, 7) + _kstring("compat-raw-fetch")
    request = header + body
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", _read_exact(sock, 4))
        resp = _read_exact(sock, size)
    pos = 4 + 4  # correlation id, throttle time
    (error_code, _session, n_topics) = struct.unpack_from(">hii", resp, pos)
    pos += 10
    check_eq(error_code, 0, "raw Fetch: top-level error")
    check_eq(n_topics, 1, "raw Fetch: topics in the answer")
    (name_len,) = struct.unpack_from(">h", resp, pos)
    pos += 2 + name_len
    (n_parts,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    check_eq(n_parts, 1, "raw Fetch: partitions in the answer")
    (_index, part_error, _hw, _lso, _log_start, n_aborted) = struct.unpack_from(">ihqqqi", resp, pos)
    pos += 34
    check_eq(part_error, 0, "raw Fetch: partition error")
    pos += max(n_aborted, 0) * 16 + 4  # aborted transactions, preferred read replica
    (records_len,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    records = resp[pos:pos + max(records_len, 0)]
    batches = []
    at = 0
    while at + 61 <= len(records):
        (base_offset, length) = struct.unpack_from(">qi", records, at)
        if at + 12 + length > len(records):
            break  # a partial batch at the end of the answer
        (attributes,) = struct.unpack_from(">h", records, at + 21)
        (count,) = struct.unpack_from(">i", records, at + 57)
        batches.append((base_offset, count, CODEC_NAMES.get(attributes & 0x07, f"codec {attributes & 0x07}")))
        at += 12 + length
    return batches


def check_stored_codec(bootstrap, topic, count, expected_codec, what):
    """The batches holding offsets 0..count-1 of partition 0 carry `expected_codec`."""
    batches = raw_fetch_batches(bootstrap, topic)
    check_eq(sum(c for _, c, _ in batches), count, f"{what}: records in the fetched batches {batches}")
    check_eq(sorted({codec for _, _, codec in batches}), [expected_codec], f"{what}: codec of the fetched batches {batches}")


# Security modes (harness/security.py): the settings the harness wrote for this run, or None on
# PLAINTEXT. The auth_failure scenario gets settings that are wrong in one way and must fail with
# the client's authentication or SSL error within this limit.
AUTH_FAILURE_TIMEOUT_S = 30


def security():
    """The client security settings of COMPAT_SECURITY_JSON (keys: security_protocol, ca_file,
    cert_file, key_file, keystore_file, sasl_mechanism, username, password), or None."""
    path = os.environ.get("COMPAT_SECURITY_JSON")
    if not path:
        return None
    with open(path) as f:
        return json.load(f)


def librdkafka_security():
    """The librdkafka properties of COMPAT_SECURITY_LIBRDKAFKA as a dict ({} on PLAINTEXT)."""
    path = os.environ.get("COMPAT_SECURITY_LIBRDKAFKA")
    if not path:
        return {}
    conf = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                conf[key.strip()] = value.strip()
    return conf


def normalise_error_text(text):
    """A client's error text reduced to what does not change from run to run: the TLS reason
    (Python's `[SSL: REASON]`, OpenSSL's `SSL routines::reason`) when there is one, else the text
    without addresses, ports and librdkafka's `(after N ms in state X)`."""
    text = str(text)
    # kafka-python's and aiokafka's errors start with their own name (and Kafka's error code).
    prefix = re.compile(r"^(\[Error -?\d+\] )?\w+(Error|Failed|Exception): ")
    while prefix.match(text):
        text = prefix.sub("", text, count=1)
    match = re.search(r"\[SSL: ([A-Z0-9_]+)\]", text)
    if match:
        return match.group(1)
    text = re.sub(r"\s*\(after \d+ms in state [^)]*\)", "", text)
    text = re.sub(r"\b(\d{1,3}(\.\d{1,3}){3}|localhost)(:\d+)?\b", "HOST", text)
    text = re.sub(r"\b(sasl_ssl|sasl_plaintext|ssl|plaintext)://HOST/(bootstrap|\d+): ", "", text)
    match = re.search(r"^(.*?)(:\s*)?error:[0-9A-F]+:SSL routines::([^:(]+)", text)
    if match:
        # librdkafka: what failed (handshake, receive), then OpenSSL's reason.
        return f"{match.group(1).strip()}: {match.group(3).strip()}".lstrip(": ")
    return re.sub(r"\s+", " ", text).strip()[:240]


def report_auth_failure(what):
    """The one line the harness compares across brokers (security_compare.py)."""
    print(f"AUTH_FAILURE: {what}", flush=True)


class NotApplicable(Exception):
    """The client has no way to express this scenario."""


class Failure(AssertionError):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def check_eq(actual, expected, what):
    if actual != expected:
        raise Failure(f"{what}: {describe_difference(actual, expected)}")


def describe_difference(actual, expected, limit=400):
    text = f"expected {expected!r}, got {actual!r}"
    if len(text) <= limit:
        return text
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        first = next((i for i, (a, e) in enumerate(zip(actual, expected)) if a != e), min(len(actual), len(expected)))
        a = repr(actual[first])[:150] if first < len(actual) else "(missing)"
        e = repr(expected[first])[:150] if first < len(expected) else "(missing)"
        return f"{len(actual)} items vs {len(expected)} expected; first difference at index {first}: expected {e}, got {a}"
    return text[:limit] + "..."


def wait_until(predicate, timeout_s, what, interval_s=0.2):
    """Poll predicate until it returns a truthy value; fail with `what` after timeout_s."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise Failure(f"timed out after {timeout_s}s waiting for {what} (last: {last!r})")


def make_records(count=12, text_only=False, base_ts=None):
    """The canonical record set: binary keys and values, a null key every 4th record, one null
    value, repeated and binary header values, explicit increasing CreateTime timestamps."""
    if base_ts is None:
        base_ts = int(time.time() * 1000) - 60_000
    records = []
    for i in range(count):
        if i % 4 == 0:
            key = None
        elif text_only:
            key = f"key-{i}-\u00e9".encode()
        else:
            key = bytes([i, 0, 255, 128]) + f"key-{i}".encode()
        if i == 5:
            value = None
        elif text_only:
            value = ("value-%d-" % i + "abcdefghij" * (i + 1)).encode()
        else:
            value = bytes((i * 7 + j) % 256 for j in range(1 + i * 37))
        if i % 3 == 0:
            headers = []
        elif text_only:
            headers = [("h1", f"v{i}".encode()), ("h2", b"x"), ("h1", b"dup")]
        else:
            headers = [("h1", f"v{i}".encode()), ("h-bin", bytes([0, 1, 2, 255])), ("h1", b"dup")]
        records.append({"key": key, "value": value, "headers": headers, "timestamp": base_ts + i * 1000})
    return records


def compare_records(expected, actual, check_timestamps=True, what="records"):
    """Byte-for-byte comparison of produced and consumed records (in offset order)."""
    check_eq(len(actual), len(expected), f"{what}: record count")
    for i, (exp, act) in enumerate(zip(expected, actual)):
        check_eq(act["key"], exp["key"], f"{what}[{i}] key")
        check_eq(act["value"], exp["value"], f"{what}[{i}] value")
        check_eq([(k, bytes(v) if v is not None else None) for k, v in act["headers"]],
                 exp["headers"], f"{what}[{i}] headers")
        if check_timestamps:
            check_eq(act["timestamp"], exp["timestamp"], f"{what}[{i}] timestamp")
        if "offset" in act:
            check_eq(act["offset"], i, f"{what}[{i}] offset")


class Context:
    def __init__(self, bootstrap, prefix):
        self.bootstrap = bootstrap
        self.prefix = prefix

    def topic(self, suffix="t"):
        return f"{self.prefix}-{suffix}"

    def group(self, suffix="g"):
        return f"{self.prefix}-{suffix}-group"


def log(*parts):
    print(*parts, flush=True)


def main(version_fn, scenarios):
    """Entry point: `--version` or `--bootstrap B --scenario S --prefix P`."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", action="store_true")
    parser.add_argument("--bootstrap")
    parser.add_argument("--scenario")
    parser.add_argument("--prefix", default=f"compat-{int(time.time())}")
    args = parser.parse_args()
    if args.version:
        print(version_fn())
        return
    fn = scenarios.get(args.scenario)
    if args.scenario == "auth_failure" and security() is None:
        print("N/A: auth_failure runs in the security modes only (run.sh --security MODE)", flush=True)
        sys.exit(NOT_APPLICABLE_EXIT)
    if fn is None:
        print(f"N/A: scenario {args.scenario!r} is not expressible with this client", flush=True)
        sys.exit(NOT_APPLICABLE_EXIT)
    ctx = Context(args.bootstrap, args.prefix)
    try:
        fn(ctx)
    except NotApplicable as exc:
        print(f"N/A: {exc}", flush=True)
        sys.exit(NOT_APPLICABLE_EXIT)
    except Exception:  # any failure is reported with its traceback and a non-zero exit
        traceback.print_exc()
        sys.stdout.flush()
        sys.exit(1)
    print("PASS", flush=True)
    sys.exit(0)
