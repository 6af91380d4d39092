"""Shared pieces of the Python-driven clients: the argument contract, the record data set,
assertions and the exit-code convention (0 pass, 77 not applicable, anything else fail)."""

import argparse
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
TOPIC_ALREADY_EXISTS = 36
INVALID_CONFIG = 40


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
