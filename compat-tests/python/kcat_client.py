"""kcat (librdkafka) scenarios, driving the kcat command line.

kcat has no admin operations, so topics/configs/delete_records are n/a; topics are created by
the broker's auto-creation (num.partitions) or have one partition. Values are text because kcat's
producer reads messages from files/stdin and prints them back as JSON strings.
"""

import json
import os
import re
import subprocess
import tempfile
import threading
import time

from common import (AUTH_FAILURE_TIMEOUT_S, CODECS, LARGE_VALUE_BYTES, TOO_LARGE_VALUE_BYTES, NotApplicable, Failure,
                    check, check_eq, librdkafka_security, log, main, make_records, normalise_error_text, report_auth_failure, wait_until)

KCAT = os.environ.get("KCAT", "kcat")


def connect_args(ctx):
    """The broker and, in a security mode, the librdkafka properties file (-F) of
    COMPAT_SECURITY_LIBRDKAFKA."""
    security_file = os.environ.get("COMPAT_SECURITY_LIBRDKAFKA")
    return ["-b", ctx.bootstrap, *(["-F", security_file] if security_file else [])]


def kcat(ctx, *args, input_bytes=None, timeout=30, ok=True):
    cmd = [KCAT, *connect_args(ctx), *args]
    proc = subprocess.run(cmd, input=input_bytes, capture_output=True, timeout=timeout)
    if ok and proc.returncode != 0:
        raise Failure(f"{' '.join(cmd[:12])} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-800:]}")
    return proc


def version():
    out = subprocess.run([KCAT, "-V"], capture_output=True, text=True, timeout=10).stdout
    match = re.search(r"Version (\S+).*?(librdkafka \S+)", out, re.S)
    return f"kcat {match.group(1)} ({match.group(2)})" if match else out.strip().splitlines()[-1]


def produce_one(ctx, topic, rec, *extra):
    """One record per kcat run so each record has its own key and headers."""
    args = ["-P", "-t", topic, "-p", "0", *extra]
    for name, value in rec["headers"]:
        args += ["-H", f"{name}={value.decode()}"]
    if rec["value"] is None:
        # kcat sends an empty message as a NULL value with -Z; read "key<delim>" from stdin.
        check(rec["key"] is not None and b"\t" not in rec["key"], "null-value record needs a tab-free key")
        kcat(ctx, *args, "-Z", "-K", "\t", input_bytes=rec["key"] + b"\t\n")
        return
    if rec["key"] is not None:
        args += ["-k", rec["key"].decode()]
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(rec["value"])
        path = f.name
    try:
        kcat(ctx, *args, path)
    finally:
        os.unlink(path)


def consume_json(ctx, topic, count, partition=0, offset="beginning", extra=()):
    out = kcat(ctx, "-C", "-t", topic, "-p", str(partition), "-o", str(offset), "-c", str(count), "-e", "-J",
               *extra, timeout=60).stdout.decode()
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def as_record(msg):
    headers = msg.get("headers") or []
    pairs = [(headers[i], headers[i + 1].encode()) for i in range(0, len(headers), 2)]
    return {
        "key": None if msg.get("key") is None else msg["key"].encode(),
        "value": None if msg.get("payload") is None else msg["payload"].encode(),
        "headers": pairs,
        "timestamp": msg["ts"],
        "offset": msg["offset"],
    }


def scenario_metadata(ctx):
    topic = ctx.topic()
    kcat(ctx, "-P", "-t", topic, input_bytes=b"hello\n")  # auto-creates the topic
    md = json.loads(kcat(ctx, "-L", "-J", "-t", topic).stdout)
    check_eq([(b["id"], b["name"]) for b in md["brokers"]], [(1, ctx.bootstrap)], "brokers")
    topics = {t["topic"]: t for t in md["topics"]}
    check(topic in topics, f"topic in metadata: {list(topics)}")
    check_eq(len(topics[topic]["partitions"]), 1, "partitions of an auto-created topic (num.partitions=1)")
    check_eq(topics[topic]["partitions"][0]["leader"], 1, "leader")
    # librdkafka logs the versions it negotiated with ApiVersions at debug=protocol
    debug = kcat(ctx, "-L", "-t", topic, "-X", "debug=protocol", "-X", "api.version.request=true").stderr.decode()
    check("ApiVersion" in debug, "ApiVersions exchanged")
    check("Received ApiVersionResponse" in debug, "ApiVersionResponse received")


def scenario_codecs(ctx):
    for codec in CODECS:
        topic = ctx.topic(codec)
        records = make_records(text_only=True)
        before = int(time.time() * 1000) - 1
        for rec in records:
            produce_one(ctx, topic, rec, "-z", codec)
        after = int(time.time() * 1000) + 1
        got = [as_record(m) for m in consume_json(ctx, topic, len(records))]
        check_eq(len(got), len(records), f"{codec}: count")
        for i, (exp, act) in enumerate(zip(records, got)):
            check_eq(act["offset"], i, f"{codec}[{i}] offset")
            check_eq(act["key"], exp["key"], f"{codec}[{i}] key")
            check_eq(act["value"], exp["value"], f"{codec}[{i}] value")
            check_eq(act["headers"], exp["headers"], f"{codec}[{i}] headers")
            check(before <= act["timestamp"] <= after, f"{codec}[{i}] CreateTime within the produce window")
        # A multi-record compressed batch from a single producer run.
        lines = [f"k{i}:value-{i}-{codec}".encode() for i in range(200)]
        kcat(ctx, "-P", "-t", topic, "-p", "0", "-z", codec, "-K", ":", "-X", "linger.ms=100",
             input_bytes=b"\n".join(lines) + b"\n")
        batch = consume_json(ctx, topic, 200, offset=len(records))
        check_eq([(m["offset"], m["key"], m["payload"]) for m in batch],
                 [(len(records) + i, f"k{i}", f"value-{i}-{codec}") for i in range(200)], f"{codec}: batch")
        log(codec, "ok")


def scenario_large(ctx):
    topic = ctx.topic()
    value = ("0123456789abcdef" * (LARGE_VALUE_BYTES // 16 + 1))[:LARGE_VALUE_BYTES].encode()
    produce_one(ctx, topic, {"key": b"big", "value": value, "headers": [("h", b"1")]},
                "-X", "message.max.bytes=2000000")
    got = [as_record(m) for m in consume_json(ctx, topic, 1)]
    check_eq(len(got), 1, "count")
    check(got[0]["value"] == value, f"large value round-trips ({len(got[0]['value'] or b'')} bytes)")
    check_eq(got[0]["key"], b"big", "key")


def scenario_idempotent(ctx):
    topic = ctx.topic()
    lines = b"".join(f"m-{i}\n".encode() for i in range(500))
    kcat(ctx, "-P", "-t", topic, "-p", "0", "-X", "enable.idempotence=true", "-X", "acks=all",
         "-X", "debug=eos", input_bytes=lines)
    got = consume_json(ctx, topic, 500)
    check_eq([(m["offset"], m["payload"]) for m in got], [(i, f"m-{i}") for i in range(500)], "records once, in order")


def group_consume(ctx, group, topic, count, *extra, timeout=40):
    proc = kcat(ctx, "-G", group, "-X", "auto.offset.reset=earliest", "-c", str(count), "-f", "%p:%o\\n",
                "-X", "session.timeout.ms=6000", *extra, topic, timeout=timeout)
    return [tuple(map(int, line.split(":"))) for line in proc.stdout.decode().split() if line]


def scenario_group(ctx):
    topic, group = ctx.topic(), ctx.group()
    kcat(ctx, "-P", "-t", topic, "-p", "0", input_bytes=b"".join(f"r{i}\n".encode() for i in range(20)))
    first = group_consume(ctx, group, topic, 8)
    check_eq(first, [(0, i) for i in range(8)], "first consumer reads offsets 0-7")
    rest = group_consume(ctx, group, topic, 12)
    check_eq(rest, [(0, i) for i in range(8, 20)], "restarted consumer resumes at the committed offset 8")


class GroupMember:
    """A kcat balanced consumer running in the background; its stderr tells its assignment."""

    def __init__(self, ctx, group, pattern, *extra):
        cmd = [KCAT, *connect_args(ctx), "-G", group, "-X", "auto.offset.reset=earliest", "-f", "",
               "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
               "-X", "topic.metadata.refresh.interval.ms=1000", *extra, pattern]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.events = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stderr:
            if "rebalanced" in line:
                self.events.append(line.strip())

    def assigned(self):
        """Partitions owned now: replay the assigned/revoked events (eager lists all partitions on
        both; cooperative lists only the partitions that move)."""
        owned = set()
        for ev in list(self.events):
            parts = set(re.findall(r"([\w.-]+) \[(\d+)\]", ev.rsplit("): ", 1)[-1]))
            if "assign" in ev:
                owned |= parts
            elif "revoke" in ev:
                owned -= parts
        return owned

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def four_topics(ctx):
    """kcat cannot create a multi-partition topic: the group subscribes to a regex matching
    four auto-created single-partition topics instead."""
    for i in range(4):
        kcat(ctx, "-P", "-t", ctx.topic(f"part{i}"), "-p", "0", input_bytes=b"x\n")
    return f"^{re.escape(ctx.prefix)}-part.*"


def rebalance_with(ctx, strategy, static=False):
    pattern, group = four_topics(ctx), ctx.group()
    extra = ["-X", f"partition.assignment.strategy={strategy}"]
    ida = ["-X", "group.instance.id=member-a"] if static else []
    idb = ["-X", "group.instance.id=member-b"] if static else []
    a = GroupMember(ctx, group, pattern, *extra, *ida)
    b = None
    try:
        wait_until(lambda: len(a.assigned()) == 4, 30, f"a owns 4 partitions ({a.events})")
        a.events.append("mark")
        b = GroupMember(ctx, group, pattern, *extra, *idb)
        wait_until(lambda: len(a.assigned()) == 2 and len(b.assigned()) == 2 and
                   len(a.assigned() | b.assigned()) == 4, 40, f"2/2 split ({a.events} / {b.events})")
        after_mark = a.events[a.events.index("mark") + 1:]
        if strategy == "cooperative-sticky":
            revokes = [e for e in after_mark if "revoke" in e]
            check(revokes and all(len(re.findall(r"\[\d+\]", e)) == 2 for e in revokes),
                  f"cooperative: a revokes only the two moved partitions: {after_mark}")
        if static:
            before = a.assigned()
            b_events = len(b.events)
            a.stop()
            a = GroupMember(ctx, group, pattern, *extra, *ida)
            wait_until(lambda: len(a.assigned()) == 2, 30, f"restarted static member assigned ({a.events})")
            check_eq(a.assigned(), before, "static member keeps its partitions")
            check_eq(b.events[b_events:], [], "other static member saw no rebalance")
            return
        b.stop()
        wait_until(lambda: len(a.assigned()) == 4, 30, f"a owns 4 again after b left ({a.events})")
    finally:
        a.stop()
        if b is not None:
            b.stop()


def scenario_rebalance(ctx):
    rebalance_with(ctx, "roundrobin")


def scenario_cooperative(ctx):
    rebalance_with(ctx, "cooperative-sticky")


def scenario_static(ctx):
    rebalance_with(ctx, "roundrobin", static=True)


def scenario_offsets_for_times(ctx):
    topic = ctx.topic()
    for i in range(6):
        kcat(ctx, "-P", "-t", topic, "-p", "0", input_bytes=f"r{i}\n".encode())
        time.sleep(0.01)
    msgs = consume_json(ctx, topic, 6)
    stamps = [m["ts"] for m in msgs]
    check(stamps == sorted(stamps) and len(set(stamps)) == 6, f"distinct increasing timestamps {stamps}")
    out = kcat(ctx, "-Q", "-t", f"{topic}:0:{stamps[3]}").stdout.decode()
    check_eq(re.findall(r"offset (-?\d+)", out), ["3"], f"offset for timestamp of record 3 ({out.strip()})")
    out = kcat(ctx, "-Q", "-t", f"{topic}:0:{stamps[3] - 1}").stdout.decode()
    check_eq(re.findall(r"offset (-?\d+)", out), ["3"], "offset for a timestamp just before record 3")
    out = kcat(ctx, "-Q", "-t", f"{topic}:0:-2").stdout.decode()
    check_eq(re.findall(r"offset (-?\d+)", out), ["0"], "earliest")
    out = kcat(ctx, "-Q", "-t", f"{topic}:0:-1").stdout.decode()
    check_eq(re.findall(r"offset (-?\d+)", out), ["6"], "latest")
    tail = consume_json(ctx, topic, 2, offset=f"s@{stamps[4]}")
    check_eq([m["offset"] for m in tail], [4, 5], "consume starting at a timestamp")


def scenario_errors(ctx):
    missing = ctx.topic("missing")
    proc = kcat(ctx, "-C", "-t", missing, "-p", "0", "-e", ok=False)
    err = proc.stderr.decode()
    check(proc.returncode != 0 and "Unknown topic or partition" in err, f"unknown topic reported: {err[-300:]}")
    topic = ctx.topic()
    kcat(ctx, "-P", "-t", topic, "-p", "0", input_bytes=b"small\n")
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(b"x" * TOO_LARGE_VALUE_BYTES)
        path = f.name
    try:
        proc = kcat(ctx, "-P", "-t", topic, "-p", "0", "-X", "message.max.bytes=4000000",
                    "-X", "message.send.max.retries=0", path, ok=False)
    finally:
        os.unlink(path)
    err = proc.stderr.decode()
    check("Message size too large" in err or "MSG_SIZE_TOO_LARGE" in err, f"record too large reported: {err[-300:]}")


def scenario_auth_failure(ctx):
    """kcat -L with the wrong settings: librdkafka logs why each connection failed (FAIL lines)
    and kcat gives up when the metadata timeout passes."""
    proc = kcat(ctx, "-L", "-m", str(AUTH_FAILURE_TIMEOUT_S // 3), timeout=AUTH_FAILURE_TIMEOUT_S, ok=False)
    err = proc.stderr.decode(errors="replace")
    log(err[-1500:])
    check(proc.returncode != 0, f"kcat -L succeeded with the wrong settings: {proc.stdout.decode()[:300]}")
    fails = [line.split("]: ", 1)[-1] for line in err.splitlines() if re.match(r"%\d\|[\d.]+\|FAIL\|", line)]
    check(fails, "no FAIL line in kcat's output")
    report_auth_failure(f"FAIL ({normalise_error_text(fails[0])})")


# librdkafka before 2.6.1 appends its client nonce a second time in the SCRAM client-final message
# (librdkafka PR #4895); Kafka 4.x checks that nonce strictly (CVE-2024-56128) and refuses the
# proof, so the Debian kcat (librdkafka 2.0.2) cannot log in with SCRAM to the reference broker.
SCRAM_NONCE_FIXED = (2, 6, 1)


def librdkafka_version():
    out = subprocess.run([KCAT, "-V"], capture_output=True, text=True, timeout=10).stdout
    match = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(g) for g in match.groups()) if match else None


def scram_login_refused():
    """The mechanism when this kcat's SCRAM logins are refused by Kafka 4.x, else None."""
    mechanism = librdkafka_security().get("sasl.mechanisms", "")
    version = librdkafka_version()
    if mechanism.startswith("SCRAM-") and version is not None and version < SCRAM_NONCE_FIXED:
        return mechanism
    return None


def scram_guarded(fn, check_refusal=False):
    """In a SCRAM mode with librdkafka < 2.6.1 the scenario cannot log in; the metadata scenario
    then checks that the broker refuses the right password as Kafka 4.x does (a broker that
    accepts librdkafka's doubled nonce fails it), the others are n/a."""
    def run(ctx):
        mechanism = scram_login_refused()
        if mechanism is None:
            return fn(ctx)
        if not check_refusal:
            raise NotApplicable(f"librdkafka {'.'.join(map(str, librdkafka_version()))} < 2.6.1 sends a SCRAM "
                                "nonce Kafka 4.x refuses (librdkafka PR #4895); see the metadata scenario")
        proc = kcat(ctx, "-L", "-m", "10", timeout=30, ok=False)
        err = proc.stderr.decode(errors="replace")
        log(err[-1500:])
        check(proc.returncode != 0, "the broker accepted librdkafka's doubled SCRAM client nonce, which Kafka 4.x "
                                    "refuses (CVE-2024-56128)")
        expected = f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
        check(expected in err, f"the right password refused with Kafka's message {expected!r}")
        log("the right password is refused, as by Kafka 4.x: librdkafka < 2.6.1 repeats the client nonce")
    return run


def needs_admin(_ctx):
    raise NotApplicable("kcat has no admin operations")


SCENARIOS = {
    "auth_failure": scenario_auth_failure,
    "metadata": scram_guarded(scenario_metadata, check_refusal=True),
    "topics": needs_admin,
    "codecs": scram_guarded(scenario_codecs),
    "large": scram_guarded(scenario_large),
    "idempotent": scram_guarded(scenario_idempotent),
    "group": scram_guarded(scenario_group),
    "rebalance": scram_guarded(scenario_rebalance),
    "cooperative": scram_guarded(scenario_cooperative),
    "static": scram_guarded(scenario_static),
    "offsets_for_times": scram_guarded(scenario_offsets_for_times),
    "configs": needs_admin,
    "delete_records": needs_admin,
    "errors": scram_guarded(scenario_errors),
}

if __name__ == "__main__":
    main(version, SCENARIOS)
