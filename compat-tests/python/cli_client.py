"""Apache Kafka's command-line tools (from kafka-tools), run as Java classes:
TopicCommand, ConfigCommand, ConsumerGroupCommand, DeleteRecordsCommand, GetOffsetShell,
BrokerApiVersionsCommand, ClusterTool, TransactionsCommand, ConsoleProducer/ConsoleConsumer and the verifiable
producer and consumer (ShareGroupCommand and ConsoleShareConsumer: share_cli.py). Outputs are parsed and checked
against expected values."""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import share_cli

from common import (AUTH_FAILURE_TIMEOUT_S, report_auth_failure, ABOVE_BROKER_MAX_BYTES, BELOW_BROKER_MAX_BYTES, BROKER_MAX_MESSAGE_BYTES, CODECS,
                    LARGE_VALUE_BYTES, REFUSED_BROKER_ALTERS, TOO_LARGE_VALUE_BYTES, Failure, check, check_eq, log,
                    main)

LIB = os.environ.get("COMPAT_KAFKA_LIB", str(Path(__file__).resolve().parent.parent / ".deps" / "kafka" / "lib"))
TOOLS = "org.apache.kafka.tools."
QUIET_LOG4J = Path(tempfile.gettempdir()) / "compat-cli-log4j2.properties"


# Security modes: the Java client properties of COMPAT_SECURITY_JAVA go to every tool as its
# --command-config; a tool given its own client config file (--producer.config) gets them merged
# into that file instead.
SECURITY_PROPERTIES = os.environ.get("COMPAT_SECURITY_JAVA")


def security_args(args):
    if not SECURITY_PROPERTIES or any(a in ("--producer.config", "--consumer.config", "--command-config")
                                      for a in args):
        return []
    return ["--command-config", SECURITY_PROPERTIES]


def with_security(config_text):
    """A tool's own client properties with the security ones appended (security mode only)."""
    if not SECURITY_PROPERTIES:
        return config_text
    return config_text + ("\n" if config_text and not config_text.endswith("\n") else "") + \
        Path(SECURITY_PROPERTIES).read_text()


def tool(cls, *args, input_bytes=None, timeout=60, ok=True):
    if not QUIET_LOG4J.exists():
        QUIET_LOG4J.write_text("rootLogger.level=ERROR\nrootLogger.appenderRef.err.ref=ERR\n"
                               "appender.err.type=Console\nappender.err.name=ERR\nappender.err.target=SYSTEM_ERR\n"
                               "appender.err.layout.type=PatternLayout\nappender.err.layout.pattern=%p %m%n\n")
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={QUIET_LOG4J}",
           "-cp", f"{LIB}/*", cls if cls.startswith(("org.", "kafka.")) else TOOLS + cls, *args,
           *security_args(args)]
    proc = subprocess.run(cmd, input=input_bytes, capture_output=True, timeout=timeout)
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    log(f"$ {cls} {' '.join(args)}\n  -> exit {proc.returncode}\n{out[-1500:]}{err[-1500:]}")
    if ok and proc.returncode != 0:
        raise Failure(f"{cls} {' '.join(args)} exited {proc.returncode}: {err[-600:] or out[-600:]}")
    return proc.returncode, out, err


def write_tmp(text, suffix=".properties"):
    fd, path = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def topics_cmd(ctx, *args, **kw):
    return tool("TopicCommand", "--bootstrap-server", ctx.bootstrap, *args, **kw)


def create_topic(ctx, topic, partitions=1, *configs):
    extra = []
    for c in configs:
        extra += ["--config", c]
    topics_cmd(ctx, "--create", "--topic", topic, "--partitions", str(partitions), "--replication-factor", "1", *extra)


def verifiable_produce(ctx, topic, count, config="", *extra):
    path = write_tmp(with_security(config))
    try:
        _, out, _ = tool("VerifiableProducer", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
                         "--max-messages", str(count), "--producer.config", path, *extra, timeout=90)
    finally:
        os.unlink(path)
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    acked = [e for e in events if e.get("name") == "producer_send_success"]
    errors = [e for e in events if e.get("name") == "producer_send_error"]
    check(not errors, f"send errors: {errors[:3]}")
    check_eq(len(acked), count, "acked sends")
    return acked


def console_consume(ctx, topic, count, *extra):
    # An assigned partition, not a (random) group: record scenarios do not depend on the coordinator.
    _, out, _ = tool("consumer.ConsoleConsumer", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
                     "--partition", "0", "--offset", "earliest", "--max-messages", str(count),
                     "--timeout-ms", "20000", *extra, timeout=60)
    return out.splitlines()


def scenario_metadata(ctx):
    _, out, _ = tool("BrokerApiVersionsCommand", "--bootstrap-server", ctx.bootstrap)
    check(f"{ctx.bootstrap} (id: 1" in out, f"broker line for {ctx.bootstrap}")
    for api in ("Produce(0)", "Fetch(1)", "ListOffsets(2)", "Metadata(3)", "ApiVersions(18)", "CreateTopics(19)"):
        line = next((line for line in out.splitlines() if api in line), "")
        check("usable:" in line, f"{api} usable: {line.strip()!r}")
    _, out, _ = tool("ClusterTool", "cluster-id", "--bootstrap-server", ctx.bootstrap)
    check(re.search(r"Cluster ID: \S+", out), f"cluster id printed: {out!r}")
    topic = ctx.topic()
    create_topic(ctx, topic, 3)
    _, out, _ = topics_cmd(ctx, "--list")
    check(topic in out.split(), "topic listed")


def scenario_topics(ctx):
    topic = ctx.topic()
    create_topic(ctx, topic, 2, "retention.ms=123456789")
    _, out, _ = topics_cmd(ctx, "--describe", "--topic", topic)
    check(re.search(r"PartitionCount:\s*2\b", out), "2 partitions described")
    check(re.search(r"retention\.ms=123456789", out), "config shown")
    check_eq(len(re.findall(r"Partition: \d+\s+Leader: 1\s+Replicas: 1\s+Isr: 1", out)), 2, "partition lines")
    code, out, err = topics_cmd(ctx, "--create", "--topic", topic, "--partitions", "1", ok=False)
    check(code != 0 and "TopicExistsException" in out + err, "duplicate create reports TopicExistsException")
    topics_cmd(ctx, "--alter", "--topic", topic, "--partitions", "5")
    _, out, _ = topics_cmd(ctx, "--describe", "--topic", topic)
    check(re.search(r"PartitionCount:\s*5\b", out), "5 partitions after --alter")
    topics_cmd(ctx, "--delete", "--topic", topic)
    deadline = time.monotonic() + 20
    while topic in topics_cmd(ctx, "--list")[1].split():
        check(time.monotonic() < deadline, "topic gone from --list")
        time.sleep(0.5)
    code, out, err = topics_cmd(ctx, "--describe", "--topic", topic, ok=False)
    check(code != 0 and "does not exist" in out + err, "describing a deleted topic fails")


def scenario_codecs(ctx):
    for codec in CODECS:
        topic = ctx.topic(codec)
        create_topic(ctx, topic)
        acked = verifiable_produce(ctx, topic, 100, f"compression.type={codec}\nlinger.ms=20\n",
                                   "--repeating-keys", "7")
        check_eq(sorted(e["offset"] for e in acked), list(range(100)), f"{codec}: acked offsets")
        lines = console_consume(ctx, topic, 100, "--property", "print.key=true", "--property", "key.separator=|",
                                "--property", "print.offset=true")
        got = [line for line in lines if "|" in line]
        check_eq(len(got), 100, f"{codec}: consumed")
        for i, line in enumerate(got):
            parts = line.split("|")
            check_eq(parts[0], f"Offset:{i}", f"{codec}: offset of line {i}")
            check_eq(parts[1:], [str(i % 7), str(i)], f"{codec}: key/value of offset {i}")
        log(codec, "ok")
    # Headers, keys, timestamps and null values through the console producer/consumer.
    topic = ctx.topic("headers")
    create_topic(ctx, topic)
    lines = "h1:v1,h2:x\tk1\tvalue-1\nh1:v2\tk2\tvalue-2\n"
    tool("ConsoleProducer", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
         "--reader-property", "parse.key=true", "--reader-property", "parse.headers=true",
         "--reader-property", "key.separator=\t", "--reader-property", "headers.delimiter=\t",
         "--reader-property", "headers.separator=,", "--reader-property", "headers.key.separator=:",
         input_bytes=lines.encode())
    out = console_consume(ctx, topic, 2, "--property", "print.headers=true", "--property", "print.key=true",
                          "--property", "print.timestamp=true", "--property", "key.separator=|")
    got = [line for line in out if "|" in line]
    check_eq(len(got), 2, "console records")
    check(re.match(r"CreateTime:\d+\|h1:v1,h2:x\|k1\|value-1$", got[0]), f"record 1: {got[0]!r}")
    check(re.match(r"CreateTime:\d+\|h1:v2\|k2\|value-2$", got[1]), f"record 2: {got[1]!r}")


def scenario_large(ctx):
    topic = ctx.topic()
    create_topic(ctx, topic)
    value = ("0123456789abcdef" * (LARGE_VALUE_BYTES // 16 + 1))[:LARGE_VALUE_BYTES]
    tool("ConsoleProducer", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
         "--command-property", "max.request.size=2000000", input_bytes=value.encode() + b"\n")
    lines = console_consume(ctx, topic, 1)
    got = [line for line in lines if len(line) > 1000]
    check_eq(len(got), 1, "one large record consumed")
    check(got[0] == value, f"large value round-trips ({len(got[0])} bytes)")


def scenario_idempotent(ctx):
    topic = ctx.topic()
    create_topic(ctx, topic)
    acked = verifiable_produce(ctx, topic, 500, "enable.idempotence=true\nacks=all\nretries=10\nmax.in.flight.requests.per.connection=5\n")
    check_eq(sorted(e["offset"] for e in acked), list(range(500)), "acked offsets")
    _, out, _ = tool("TransactionsCommand", "--bootstrap-server", ctx.bootstrap, "describe-producers",
                     "--topic", topic, "--partition", "0")
    rows = [line.split() for line in out.splitlines()[1:] if line.strip()]
    check_eq(len(rows), 1, f"one active producer: {out!r}")
    check_eq(rows[0][3], "499", "LastSequence of the producer")


def verifiable_consume(ctx, topic, group, count, *extra):
    _, out, _ = tool("VerifiableConsumer", "--bootstrap-server", ctx.bootstrap, "--topic", topic, "--group-id", group,
                     "--max-messages", str(count), "--session-timeout", "6000", "--reset-policy", "earliest",
                     *extra, timeout=90)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def scenario_group(ctx):
    topic, group = ctx.topic(), ctx.group()
    create_topic(ctx, topic, 2)
    verifiable_produce(ctx, topic, 20, "")
    events = verifiable_consume(ctx, topic, group, 8)
    consumed = sum(e["count"] for e in events if e["name"] == "records_consumed")
    check(consumed >= 8, f"consumed {consumed}")
    commits = [e for e in events if e["name"] == "offsets_committed"]
    check(commits and all(e["success"] for e in commits), f"commits succeeded: {commits}")
    committed = {}
    for e in commits:
        for o in e["offsets"]:
            committed[o["partition"]] = o["offset"]
    total_first = sum(committed.values())
    check(total_first >= 8, f"committed {committed}")
    events = verifiable_consume(ctx, topic, group, 20 - total_first)
    second = [e for e in events if e["name"] == "records_consumed"]
    for e in second:
        for p in e["partitions"]:
            check(p["minOffset"] >= committed.get(p["partition"], 0),
                  f"resumed at the committed offset on partition {p['partition']}: {p}")
    check_eq(sum(e["count"] for e in second), 20 - total_first, "records after resume")
    _, out, _ = tool("consumer.group.ConsumerGroupCommand", "--bootstrap-server", ctx.bootstrap, "--list")
    check(group in out.split(), "group listed")


def scenario_rebalance(ctx, strategy=None, static=False):
    topic, group = ctx.topic(), ctx.group()
    create_topic(ctx, topic, 4)
    extra = ["--assignment-strategy", strategy] if strategy else []
    tool("ClusterTool", "cluster-id", "--bootstrap-server", ctx.bootstrap)  # writes the log4j file

    def start(instance):
        cmd = ["java", "-Xmx256m", f"-Dlog4j2.configurationFile={QUIET_LOG4J}", "-cp", f"{LIB}/*",
               TOOLS + "VerifiableConsumer", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
               "--group-id", group, "--session-timeout", "20000" if static else "6000", *extra,
               *security_args(extra)]
        if static:
            cmd += ["--group-instance-id", instance]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    procs = []
    try:
        a = start("member-a")
        procs.append(a)
        reader_a = EventReader(a)
        reader_a.wait(lambda owned: len(owned) == 4, "a owns 4")
        b = start("member-b")
        procs.append(b)
        reader_b = EventReader(b)
        owned_b = reader_b.wait(lambda owned: len(owned) == 2, "b owns 2")
        owned_a = reader_a.wait(lambda owned: len(owned) == 2, "a owns 2")
        check_eq(owned_a | owned_b, {0, 1, 2, 3}, "all partitions assigned")
        check_eq(owned_a & owned_b, set(), "no partition assigned twice")
        if static:
            a.terminate()
            a.wait(timeout=30)
            a2 = start("member-a")
            procs.append(a2)
            again = EventReader(a2).wait(lambda owned: len(owned) == 2, "restarted static member owns 2")
            check_eq(again, owned_a, "static member keeps its partitions")
            time.sleep(1)
            check(reader_b.events.empty(), "the other static member saw no rebalance")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()


class EventReader:
    """Reads a VerifiableConsumer's JSON events on a thread (a select() on the pipe would miss
    lines already buffered by readline)."""

    def __init__(self, proc):
        import queue
        import threading
        self.events = queue.Queue()
        self.owned = set()

        def pump():
            for line in proc.stdout:
                if line.startswith("{"):
                    self.events.put(json.loads(line))
        threading.Thread(target=pump, daemon=True).start()

    def wait(self, done, what, timeout_s=40):
        import queue
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=0.5)
            except queue.Empty:
                continue
            parts = {p["partition"] for p in event.get("partitions", [])}
            if event["name"] == "partitions_assigned":
                self.owned |= parts
            elif event["name"] in ("partitions_revoked", "partitions_lost"):
                self.owned -= parts
            log("event", event["name"], sorted(parts), "->", sorted(self.owned))
            if event["name"] in ("partitions_assigned", "partitions_revoked") and done(self.owned):
                return set(self.owned)
        raise Failure(f"timed out waiting for {what} (owned {self.owned})")


def scenario_offsets_for_times(ctx):
    topic = ctx.topic()
    create_topic(ctx, topic)
    base = int(time.time() * 1000) - 60_000
    verifiable_produce(ctx, topic, 5, "", "--message-create-time", str(base))
    verifiable_produce(ctx, topic, 5, "", "--message-create-time", str(base + 10_000))
    verifiable_produce(ctx, topic, 1, "", "--message-create-time", str(base + 20_000))

    def offset_at(time_arg):
        _, out, _ = tool("GetOffsetShell", "--bootstrap-server", ctx.bootstrap, "--topic", topic, "--time", time_arg)
        return [line.strip() for line in out.splitlines() if line.startswith(topic)]
    check_eq(offset_at(str(base + 5_000)), [f"{topic}:0:5"], "offset for a timestamp between the runs")
    check_eq(offset_at(str(base)), [f"{topic}:0:0"], "offset for the first timestamp")
    check_eq(offset_at("-2"), [f"{topic}:0:0"], "earliest")
    check_eq(offset_at("-1"), [f"{topic}:0:11"], "latest")
    check_eq(offset_at("-3"), [f"{topic}:0:10"], "max timestamp")


def configs_cmd(ctx, *args, **kw):
    return tool("ConfigCommand", "--bootstrap-server", ctx.bootstrap, *args, **kw)


def scenario_configs(ctx):
    topic = ctx.topic()
    create_topic(ctx, topic)
    _, out, _ = configs_cmd(ctx, "--describe", "--entity-type", "topics", "--entity-name", topic, "--all")
    check(re.search(r"\bretention\.ms=604800000 sensitive=false\b", out), "default retention.ms")
    check(re.search(r"\bmax\.message\.bytes=1048588\b", out), "default max.message.bytes")
    configs_cmd(ctx, "--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config",
                "retention.ms=3600000,cleanup.policy=compact")
    _, out, _ = configs_cmd(ctx, "--describe", "--entity-type", "topics", "--entity-name", topic)
    check(re.search(r"retention\.ms=3600000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:retention\.ms=3600000", out),
          "altered retention.ms is a dynamic topic config")
    check(re.search(r"cleanup\.policy=compact", out), "altered cleanup.policy")
    configs_cmd(ctx, "--alter", "--entity-type", "topics", "--entity-name", topic, "--delete-config", "cleanup.policy")
    _, out, _ = configs_cmd(ctx, "--describe", "--entity-type", "topics", "--entity-name", topic)
    check("cleanup.policy" not in out, "deleted override no longer listed")
    _, out, _ = configs_cmd(ctx, "--describe", "--entity-type", "brokers", "--entity-name", "1", "--all")
    check(re.search(r"\bnum\.partitions=1\b", out), "broker num.partitions=1")


def scenario_delete_records(ctx):
    topic = ctx.topic()
    create_topic(ctx, topic)
    verifiable_produce(ctx, topic, 10, "")
    path = write_tmp(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 4}], "version": 1}), ".json")
    try:
        _, out, _ = tool("DeleteRecordsCommand", "--bootstrap-server", ctx.bootstrap, "--offset-json-file", path)
    finally:
        os.unlink(path)
    check(re.search(rf"{re.escape(topic)}-0\s+low_watermark: 4", out), "low watermark 4 reported")
    _, out, _ = tool("GetOffsetShell", "--bootstrap-server", ctx.bootstrap, "--topic", topic, "--time", "-2")
    check_eq([line.strip() for line in out.splitlines() if line.startswith(topic)], [f"{topic}:0:4"], "earliest")
    values = console_consume(ctx, topic, 6)
    check_eq([v for v in values if v.strip().isdigit()], [str(i) for i in range(4, 10)], "remaining records")


def scenario_consumer_lag(ctx):
    topic, group = ctx.topic(), ctx.group()
    create_topic(ctx, topic, 2)
    verifiable_produce(ctx, topic, 20, "", "--repeating-keys", "2")
    cg = ("consumer.group.ConsumerGroupCommand", "--bootstrap-server", ctx.bootstrap)
    # Commit offset 3 on partition 0 and 6 on partition 1 for an inactive group.
    tool(*cg, "--group", group, "--reset-offsets", "--topic", f"{topic}:0", "--to-offset", "3", "--execute")
    tool(*cg, "--group", group, "--reset-offsets", "--topic", f"{topic}:1", "--to-offset", "6", "--execute")
    _, out, _ = tool("GetOffsetShell", "--bootstrap-server", ctx.bootstrap, "--topic", topic, "--time", "-1")
    ends = {int(line.split(":")[1]): int(line.split(":")[2]) for line in out.splitlines() if line.startswith(topic)}
    check_eq(sum(ends.values()), 20, f"log end offsets {ends}")
    _, out, _ = tool(*cg, "--describe", "--group", group)
    rows = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 6 and cols[0] == group and cols[1] == topic:
            rows[int(cols[2])] = (cols[3], cols[4], cols[5])
    expected = {0: ("3", str(ends[0]), str(ends[0] - 3)), 1: ("6", str(ends[1]), str(ends[1] - 6))}
    check_eq(rows, expected, "CURRENT-OFFSET, LOG-END-OFFSET and LAG per partition")
    _, out, _ = tool(*cg, "--describe", "--group", group, "--state")
    check(re.search(rf"{re.escape(group)}\s+.*\bEmpty\b", out), f"group state Empty: {out!r}")
    _, out, _ = tool(*cg, "--delete", "--group", group)
    check("was successful" in out, "group deleted")
    _, out, _ = tool(*cg, "--list")
    check(group not in out.split(), "deleted group no longer listed")


def scenario_errors(ctx):
    code, out, err = topics_cmd(ctx, "--describe", "--topic", ctx.topic("missing"), ok=False)
    check(code != 0 and "does not exist" in out + err, "describe missing topic fails")
    code, out, err = topics_cmd(ctx, "--create", "--topic", ctx.topic("bad"), "--config", "cleanup.policy=bogus", ok=False)
    # TopicCommand validates topic configs itself before sending CreateTopics
    check(code != 0 and "Invalid value bogus for configuration cleanup.policy" in out + err, "invalid config reported")
    code, out, err = topics_cmd(ctx, "--create", "--topic", ctx.topic("rf"), "--replication-factor", "3", ok=False)
    check(code != 0 and "InvalidReplicationFactorException" in out + err, "replication factor above broker count")
    topic = ctx.topic()
    create_topic(ctx, topic)
    code, out, err = configs_cmd(ctx, "--alter", "--entity-type", "topics", "--entity-name", topic,
                                 "--add-config", "retention.ms=abc", ok=False)
    check(code != 0 and "InvalidConfigurationException" in out + err, "invalid config value on alter")
    big = b"x" * TOO_LARGE_VALUE_BYTES + b"\n"
    code, out, err = tool("ConsoleProducer", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
                          "--command-property", "max.request.size=4000000", "--command-property", "compression.type=none",
                          "--command-property", "enable.idempotence=false", "--command-property", "retries=0",
                          input_bytes=big, ok=False)
    check("RecordTooLargeException" in out + err, "record too large reported as RecordTooLargeException")


def described_lines(out):
    """ConfigCommand --describe output as {key: "value sensitive=... synonyms={...}"}."""
    entries = {}
    for line in out.splitlines():
        match = re.match(r"^\s+([a-z0-9._-]+)=(.*)$", line)
        if match:
            entries[match[1]] = match[2]
    return entries


def wait_topic_config(ctx, topic, key, expected, timeout_s=30):
    """Dynamic broker configs reach topics after the alter is answered (Kafka applies the controller's
    record when it reaches the broker's metadata): poll what the topic reports."""
    deadline, last = time.monotonic() + timeout_s, None
    while True:
        _, out, _ = configs_cmd(ctx, "--describe", "--entity-type", "topics", "--entity-name", topic, "--all")
        last = described_lines(out).get(key)
        if last == expected or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    check_eq(last, expected, f"{topic} {key}")


def console_send(ctx, topic, size):
    """One record of `size` bytes through the console producer, uncompressed, with the client's
    max.request.size raised so the producer itself sends it; returns the exit code and the tool's output
    (a refused record is logged there, the exit code is 0 either way)."""
    code, out, err = tool("ConsoleProducer", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
                          "--command-property", "max.request.size=4000000",
                          "--command-property", "compression.type=none",
                          "--command-property", "enable.idempotence=false", "--command-property", "retries=0",
                          input_bytes=b"x" * size + b"\n", ok=False)
    return code, out + err


def scenario_broker_configs(ctx):
    """Dynamic broker configs through ConfigCommand (--entity-type brokers, --entity-name 1 and
    --entity-default): refused alters with Kafka's INVALID_REQUEST messages, a cluster-default
    message.max.bytes that topics without their own max.message.bytes report and enforce, log.retention.ms
    per broker and cluster-wide in a topic's retention.ms and in the broker's own --describe --all. The
    tool prints no read_only flag (that part is the other clients')."""
    topic = ctx.topic()
    create_topic(ctx, topic)
    _, out, _ = configs_cmd(ctx, "--describe", "--entity-type", "topics", "--entity-name", topic, "--all")
    check_eq(described_lines(out).get("retention.ms"), "604800000 sensitive=false synonyms={}",
             "retention.ms before any broker config (no synonyms)")
    broker_one, cluster_default = ("--entity-name", "1"), ("--entity-default",)
    for entity in (broker_one, cluster_default):
        for key, value, message in REFUSED_BROKER_ALTERS:
            code, out, err = configs_cmd(ctx, "--alter", "--entity-type", "brokers", *entity,
                                         "--add-config", f"{key}={value}", ok=False)
            check(code != 0, f"{' '.join(entity)} {key}={value} refused (exit {code})")
            cause = [line for line in (out + err).splitlines() if line.startswith("Caused by:")]
            check_eq(cause, [f"Caused by: org.apache.kafka.common.errors.InvalidRequestException: {message}"],
                     f"{' '.join(entity)} {key}={value}: error")

    set_now = []  # (entity, key) set and not yet deleted; ConfigCommand refuses to delete a key that is not set

    def alter(entity, op, key_value):
        _, out, _ = configs_cmd(ctx, "--alter", "--entity-type", "brokers", *entity, op, key_value)
        done = ("Completed updating default config for brokers in the cluster." if entity == cluster_default
                else "Completed updating config for broker 1.")
        check(done in out, f"{' '.join(entity)} {op} {key_value}: {out!r}")
        key = key_value.split("=")[0]
        if op == "--add-config":
            set_now.append((entity, key))
        else:
            set_now.remove((entity, key))
    try:
        alter(cluster_default, "--add-config", f"message.max.bytes={BROKER_MAX_MESSAGE_BYTES}")
        wait_topic_config(ctx, topic, "max.message.bytes",
                          f"{BROKER_MAX_MESSAGE_BYTES} sensitive=false synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:"
                          f"message.max.bytes={BROKER_MAX_MESSAGE_BYTES}, DEFAULT_CONFIG:message.max.bytes=1048588}}")
        _, out = console_send(ctx, topic, ABOVE_BROKER_MAX_BYTES)
        check("org.apache.kafka.common.errors.RecordTooLargeException" in out,
              "60000-byte record above the cluster-default message.max.bytes=50000: RecordTooLargeException")
        code, out = console_send(ctx, topic, BELOW_BROKER_MAX_BYTES)
        check(code == 0 and "Exception" not in out, f"40000-byte record sent: exit {code}, {out[-400:]!r}")
        alter(cluster_default, "--delete-config", "message.max.bytes")
        wait_topic_config(ctx, topic, "max.message.bytes",
                          "1048588 sensitive=false synonyms={DEFAULT_CONFIG:message.max.bytes=1048588}")
        code, out = console_send(ctx, topic, ABOVE_BROKER_MAX_BYTES)
        check(code == 0 and "Exception" not in out,
              f"60000-byte record sent once the default is deleted: exit {code}, {out[-400:]!r}")

        alter(broker_one, "--add-config", "log.retention.ms=987654321")
        alter(cluster_default, "--add-config", "log.retention.ms=123456789")
        chain = ("synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=987654321, DYNAMIC_DEFAULT_BROKER_CONFIG:"
                 "log.retention.ms=123456789, DEFAULT_CONFIG:log.retention.hours=168}")
        wait_topic_config(ctx, topic, "retention.ms", f"987654321 sensitive=false {chain}")
        _, out, _ = configs_cmd(ctx, "--describe", "--entity-type", "brokers", "--entity-name", "1", "--all")
        check_eq(described_lines(out).get("log.retention.ms"), f"987654321 sensitive=false {chain}",
                 "broker 1 log.retention.ms (--describe --all)")
    finally:
        for entity, key in list(set_now):
            alter(entity, "--delete-config", key)
    wait_topic_config(ctx, topic, "retention.ms", "604800000 sensitive=false synonyms={}")


def txn_cmd(ctx, *args, **kw):
    return tool("TransactionsCommand", "--bootstrap-server", ctx.bootstrap, *args, **kw)


def rows(out):
    return [line.split() for line in out.splitlines()[1:] if line.strip()]


def perf_producer(ctx, topic, txn_id, records, throughput, duration_ms):
    return ["java", "-Xmx256m", f"-Dlog4j2.configurationFile={QUIET_LOG4J}", "-cp", f"{LIB}/*",
            TOOLS + "ProducerPerformance", "--topic", topic, "--num-records", str(records),
            "--record-size", "100", "--throughput", str(throughput), "--transactional-id", txn_id,
            "--transaction-duration-ms", str(duration_ms),
            "--command-property", f"bootstrap.servers={ctx.bootstrap}"]


def scenario_transactions_cli(ctx):
    topic, txn_id = ctx.topic(), f"{ctx.prefix}-txn"
    create_topic(ctx, topic)
    proc = subprocess.run(perf_producer(ctx, topic, txn_id, 500, -1, 100), capture_output=True, timeout=90)
    check_eq(proc.returncode, 0, f"ProducerPerformance exit ({proc.stderr.decode()[-400:]})")

    _, out, _ = txn_cmd(ctx, "list")
    listed = {r[0]: r for r in rows(out)}
    check(txn_id in listed, f"{txn_id} listed: {out!r}")
    check_eq(listed[txn_id][3], "CompleteCommit", "listed state")
    _, out, _ = txn_cmd(ctx, "describe", "--transactional-id", txn_id)
    described = rows(out)[0]
    check_eq((described[1], described[4]), (txn_id, "CompleteCommit"), "described id and state")
    _, out, _ = txn_cmd(ctx, "describe-producers", "--topic", topic, "--partition", "0")
    check_eq([r[5] for r in rows(out)], ["None"], "no open transaction on the partition")
    check_eq(len(console_consume(ctx, topic, 500, "--isolation-level", "read_committed")), 500,
             "committed records")

    # A producer killed inside a long transaction leaves it open; abort it by hand.
    open_id = f"{ctx.prefix}-open"
    producer = subprocess.Popen(perf_producer(ctx, topic, open_id, 100000, 50, 600000),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, start_offset = time.time() + 60, None
        while start_offset is None and time.time() < deadline:
            _, out, _ = txn_cmd(ctx, "describe-producers", "--topic", topic, "--partition", "0")
            opened = [r for r in rows(out) if r[5] != "None"]
            start_offset = opened[0][5] if opened else None
            time.sleep(0.5)
        check(start_offset is not None, "the long transaction opened")
    finally:
        producer.kill()
        producer.wait()
    _, out, _ = txn_cmd(ctx, "list", "--duration-filter", "0")
    check(open_id in {r[0] for r in rows(out)}, f"open transaction listed: {out!r}")
    _, out, _ = txn_cmd(ctx, "find-hanging", "--topic", topic, "--max-transaction-timeout", "1")
    check_eq(rows(out), [], "a transaction its coordinator knows is not hanging")
    txn_cmd(ctx, "abort", "--topic", topic, "--partition", "0", "--start-offset", start_offset)
    _, out, _ = txn_cmd(ctx, "describe-producers", "--topic", topic, "--partition", "0")
    check_eq([r[5] for r in rows(out)], ["None", "None"], "no open transaction after the abort")
    # The committed records are readable again past the aborted ones.
    check_eq(len(console_consume(ctx, topic, 500, "--isolation-level", "read_committed")), 500,
             "committed records after the abort")


def scenario_auth_failure(ctx):
    """TopicCommand --list with the wrong --command-config: the tool must fail with Kafka's
    authentication exception; the line names its class and what it says."""
    code, out, err = tool("TopicCommand", "--bootstrap-server", ctx.bootstrap, "--list",
                          timeout=AUTH_FAILURE_TIMEOUT_S + 30, ok=False)
    check(code != 0, f"TopicCommand --list succeeded with the wrong settings: {out[-300:]}")
    match = re.search(r"org\.apache\.kafka\.common\.errors\.(\w+AuthenticationException): ?([^\n]*)", out + err)
    check(match, "no AuthenticationException in TopicCommand's output")
    detail = match.group(2).strip()
    if match.group(1) != "SaslAuthenticationException":
        # As java/Compat.java: the alert received, or the class of the local verification failure,
        # from the bottom of the cause chain.
        causes = re.findall(r"^Caused by: ([\w.$]+)(?:: ([^\n]*))?$", out + err, re.M)
        if causes:
            root_class, root_message = causes[-1]
            detail = root_message if root_message.startswith("Received fatal alert") else root_class.split(".")[-1]
    report_auth_failure(f"{match.group(1)} ({detail})")


def table(out, first_column):
    """The rows of a ConsumerGroupCommand table whose first column is `first_column`, by header."""
    lines = [line for line in out.splitlines() if line.strip()]
    header = next((line.split() for line in lines if line.split()[:1] == ["GROUP"]), None)
    check(header is not None, f"a table header in {out!r}")
    return [line.split() for line in lines if line.split()[:1] == [first_column]], header


def scenario_cg848_tools(ctx):
    """ConsumerGroupCommand on a consumer-protocol (KIP-848) group: --list --type/--state,
    --describe --members --verbose and --state --verbose, offsets reset refused while the group is
    active and done once it is empty, then --delete."""
    topic, group = ctx.topic(), ctx.group()
    create_topic(ctx, topic, 2)
    verifiable_produce(ctx, topic, 20, "")
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={QUIET_LOG4J}",
           "-cp", f"{LIB}/*", TOOLS + "VerifiableConsumer", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
           "--group-id", group, "--group-protocol", "consumer", "--reset-policy", "earliest"]
    consumer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    cg = ("consumer.group.ConsumerGroupCommand", "--bootstrap-server", ctx.bootstrap)
    try:
        deadline = time.monotonic() + 60
        for line in consumer.stdout:
            if '"partitions_assigned"' in line and '"partition"' in line:
                break
            check(time.monotonic() < deadline, "the consumer was assigned partitions")
        wanted = f"{topic}:0,1"

        def members_verbose():
            _, out, _ = tool(*cg, "--describe", "--group", group, "--members", "--verbose")
            rows, header = table(out, group)
            return rows, header, out
        # The member's reconciliation may still be in flight when the first partitions arrive.
        deadline = time.monotonic() + 30
        while True:
            rows, header, out = members_verbose()
            if len(rows) == 1 and len(rows[0]) == len(header) and rows[0][header.index("CURRENT-ASSIGNMENT")] == wanted:
                break
            check(time.monotonic() < deadline, f"one member owning {wanted}: {out!r}")
            time.sleep(0.5)
        check_eq(header, ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                          "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"], "--members --verbose columns")
        row = dict(zip(header, rows[0]))
        check_eq(row["#PARTITIONS"], "2", "#PARTITIONS")
        check_eq(row["TARGET-ASSIGNMENT"], wanted, "TARGET-ASSIGNMENT")
        check_eq(row["CURRENT-EPOCH"], row["TARGET-EPOCH"], "the member has reached its target epoch")
        check_eq(row["HOST"], "/127.0.0.1", "HOST")

        _, out, _ = tool(*cg, "--list", "--type", "consumer")
        rows, header = table(out, group)
        check_eq(header, ["GROUP", "TYPE"], "--list --type columns")
        check_eq(rows, [[group, "Consumer"]], "--list --type consumer")
        _, out, _ = tool(*cg, "--list", "--type", "classic")
        check_eq(table(out, group)[0], [], "a consumer group is not listed as classic")
        _, out, _ = tool(*cg, "--list", "--state", "Stable")
        check_eq(table(out, group)[0], [[group, "Stable"]], "--list --state Stable")

        _, out, _ = tool(*cg, "--describe", "--group", group, "--state", "--verbose")
        lines = [line for line in out.splitlines() if line.startswith(group)]
        check_eq(len(lines), 1, f"one --state row: {out!r}")
        state = re.match(rf"{re.escape(group)}\s+\S+\s+\(\d+\)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", lines[0])
        check(state is not None, f"--state --verbose row: {lines[0]!r}")
        strategy, group_state, group_epoch, target_epoch, members = state.groups()
        check_eq((strategy, group_state, members), ("uniform", "Stable", "1"), "ASSIGNMENT-STRATEGY, STATE, #MEMBERS")
        check_eq(group_epoch, target_epoch, "GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH")

        _, out, _ = tool(*cg, "--group", group, "--reset-offsets", "--to-earliest", "--topic", topic, "--execute")
        check(f"Assignments can only be reset if the group '{group}' is inactive, but the current state is Stable."
              in out, f"reset refused while the group is active: {out!r}")
    finally:
        consumer.terminate()
        consumer.wait(timeout=30)

    deadline = time.monotonic() + 60
    while True:
        _, out, _ = tool(*cg, "--describe", "--group", group, "--state")
        if re.search(rf"{re.escape(group)}\s+.*\bEmpty\s+0\s*$", out, re.M):
            break
        check(time.monotonic() < deadline, f"the group becomes Empty once its member left: {out!r}")
        time.sleep(0.5)
    _, out, _ = tool(*cg, "--group", group, "--reset-offsets", "--to-earliest", "--topic", topic, "--execute")
    rows, _ = table(out, group)
    check_eq(sorted(rows), [[group, topic, "0", "0"], [group, topic, "1", "0"]], "offsets reset to the earliest")
    _, out, _ = tool(*cg, "--describe", "--group", group)
    rows, header = table(out, group)
    current = {row[header.index("PARTITION")]: row[header.index("CURRENT-OFFSET")] for row in rows}
    check_eq(current, {"0": "0", "1": "0"}, "CURRENT-OFFSET after the reset")
    _, out, _ = tool(*cg, "--delete", "--group", group)
    check(f"Deletion of requested consumer groups ('{group}') was successful." in out, f"group deleted: {out!r}")


SCENARIOS = {
    "auth_failure": scenario_auth_failure,
    "metadata": scenario_metadata,
    "topics": scenario_topics,
    "codecs": scenario_codecs,
    "large": scenario_large,
    "idempotent": scenario_idempotent,
    "group": scenario_group,
    "rebalance": scenario_rebalance,
    "static": lambda ctx: scenario_rebalance(ctx, static=True),
    "cooperative": lambda ctx: scenario_rebalance(ctx, "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"),
    "offsets_for_times": scenario_offsets_for_times,
    "configs": scenario_configs,
    "delete_records": scenario_delete_records,
    "consumer_lag": scenario_consumer_lag,
    "errors": scenario_errors,
    "broker_configs": scenario_broker_configs,
    "transactions": scenario_transactions_cli,
    "cg848_tools": scenario_cg848_tools,
    "share_tools": lambda ctx: share_cli.scenario_share_tools(ctx, sys.modules[__name__]),
    "share_offsets": lambda ctx: share_cli.scenario_share_offsets(ctx, sys.modules[__name__]),
}


def version():
    jars = sorted(Path(LIB).glob("kafka-tools-*.jar"))
    return f"Kafka command-line tools {jars[0].stem.split('-')[-1]}" if jars else "kafka-tools (missing)"


if __name__ == "__main__":
    main(version, SCENARIOS)
