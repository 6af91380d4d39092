"""confluent-kafka-python (librdkafka) scenarios."""

import time

import confluent_kafka
from confluent_kafka import (Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer,
                             TopicCollection, TopicPartition)
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewPartitions, NewTopic, OffsetSpec, ResourceType)

from common import (ABOVE_BROKER_MAX_BYTES, BELOW_BROKER_MAX_BYTES, BROKER_MAX_MESSAGE_BYTES, BROKER_READ_ONLY_KEYS,
                    BROKER_WRITABLE_KEYS, INVALID_REQUEST, REFUSED_BROKER_ALTERS, RECOMPRESSION_CASES,
                    check_stored_codec,
                    CODECS, INVALID_CONFIG, INVALID_TOPIC_EXCEPTION, LARGE_VALUE_BYTES, MESSAGE_TOO_LARGE,
                    TOO_LARGE_VALUE_BYTES, TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION, Failure, check,
                    check_eq, compare_records, good_records, log, main, make_records,
                    named_error_code, record_error_cases, wait_until, AUTH_FAILURE_TIMEOUT_S,
                    librdkafka_security, normalise_error_text, report_auth_failure)

from cg848_confluent import Scenarios as Cg848Scenarios
from share_confluent import Scenarios as ShareScenarios

TIMEOUT_S = 30


def conn(ctx):
    """The bootstrap address and, in a security mode, COMPAT_SECURITY_LIBRDKAFKA's properties."""
    return {"bootstrap.servers": ctx.bootstrap, **librdkafka_security()}


def admin(ctx):
    return AdminClient(conn(ctx))


def producer(ctx, **cfg):
    conf = {**conn(ctx), "message.timeout.ms": 30000}
    conf.update({k.replace("_", "."): v for k, v in cfg.items()})
    return Producer(conf)


def consumer(ctx, group=None, **cfg):
    conf = {**conn(ctx), "group.id": group or f"{ctx.prefix}-unused",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    conf.update({k.replace("_", "."): v for k, v in cfg.items()})
    return Consumer(conf)


def result(future):
    return future.result(timeout=TIMEOUT_S)


def error_code(fn):
    """Run fn and return the Kafka error code it failed with (None on success)."""
    try:
        fn()
    except KafkaException as exc:
        return exc.args[0].code()
    return None


def has_leaders(adm, topic, partitions):
    md = adm.list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    return t is not None and t.error is None and len(t.partitions) == partitions and \
        all(p.leader >= 0 for p in t.partitions.values())


def create_topic(adm, topic, partitions=1, config=None):
    result(adm.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic])
    wait_until(lambda: has_leaders(adm, topic, partitions), 20, f"leaders for {topic}")


def produce_records(ctx, topic, records, **cfg):
    prod = producer(ctx, **cfg)
    delivered = []

    def on_delivery(err, msg):
        delivered.append((err, msg.offset() if err is None else None))
    for r in records:
        prod.produce(topic, key=r["key"], value=r["value"], headers=r["headers"] or None,
                     timestamp=r["timestamp"], partition=0, on_delivery=on_delivery)
    check_eq(prod.flush(TIMEOUT_S), 0, "messages left after flush")
    errors = [e for e, _ in delivered if e is not None]
    check(not errors, f"delivery errors: {errors}")
    return [o for _, o in delivered]


def consume_assigned(ctx, topic, count, partition=0, offset=confluent_kafka.OFFSET_BEGINNING):
    cons = consumer(ctx)
    cons.assign([TopicPartition(topic, partition, offset)])
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < count and time.monotonic() < deadline:
        msg = cons.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            raise Failure(f"consume error {msg.error()}")
        got.append(msg)
    cons.close()
    return [{"key": m.key(), "value": m.value(), "headers": list(m.headers() or []),
             "timestamp": m.timestamp()[1], "offset": m.offset()} for m in got]


def scenario_metadata(ctx):
    adm = admin(ctx)
    cluster = result(adm.describe_cluster())
    check_eq([(n.id, f"{n.host}:{n.port}") for n in cluster.nodes], [(1, ctx.bootstrap)], "brokers")
    check_eq(cluster.controller.id, 1, "controller")
    check(cluster.cluster_id, "cluster id")
    topic = ctx.topic()
    create_topic(adm, topic, 3)
    md = adm.list_topics(timeout=10)
    check(topic in md.topics, "topic listed")
    check_eq(sorted(md.topics[topic].partitions), [0, 1, 2], "partition ids")
    check_eq(md.orig_broker_id, 1, "answering broker")


def scenario_topics(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic, 2, {"retention.ms": "123456789"})
    desc = result(adm.describe_topics(TopicCollection([topic]))[topic])
    check_eq(len(desc.partitions), 2, "partitions")
    check_eq([len(p.replicas) for p in desc.partitions], [1, 1], "replicas")
    code = error_code(lambda: result(adm.create_topics([NewTopic(topic, 1, 1)])[topic]))
    check_eq(code, TOPIC_ALREADY_EXISTS, "duplicate create error")
    result(adm.create_partitions([NewPartitions(topic, 5)])[topic])
    wait_until(lambda: has_leaders(adm, topic, 5), 20, "5 partitions")
    result(adm.delete_topics([topic])[topic])
    wait_until(lambda: topic not in adm.list_topics(timeout=10).topics, 20, "topic gone")
    code = error_code(lambda: result(adm.delete_topics([topic])[topic]))
    check_eq(code, UNKNOWN_TOPIC_OR_PARTITION, "delete missing topic error")


def scenario_codecs(ctx):
    adm = admin(ctx)
    for codec in CODECS:
        topic = ctx.topic(codec)
        create_topic(adm, topic)
        records = make_records()
        offsets = produce_records(ctx, topic, records, compression_type=codec, linger_ms=50)
        check_eq(sorted(offsets), list(range(len(records))), f"{codec}: offsets")
        compare_records(records, consume_assigned(ctx, topic, len(records)), what=codec)
        log(codec, "ok")


def scenario_large(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    value = bytes(i % 251 for i in range(LARGE_VALUE_BYTES))
    records = [{"key": b"big", "value": value, "headers": [("h", b"1")], "timestamp": int(time.time() * 1000)}]
    produce_records(ctx, topic, records, message_max_bytes=2_000_000)
    compare_records(records, consume_assigned(ctx, topic, 1))


def scenario_idempotent(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    records = [{"key": None, "value": f"m-{i}".encode(), "headers": [], "timestamp": int(time.time() * 1000)}
               for i in range(500)]
    offsets = produce_records(ctx, topic, records, enable_idempotence=True, acks="all")
    check_eq(offsets, list(range(500)), "offsets in send order")
    got = consume_assigned(ctx, topic, 500)
    check_eq([r["value"] for r in got], [r["value"] for r in records], "once, in order")


def fill(ctx, adm, topic, partitions, per_partition):
    create_topic(adm, topic, partitions)
    prod = producer(ctx)
    for p in range(partitions):
        for i in range(per_partition):
            prod.produce(topic, value=f"p{p}-{i}".encode(), partition=p)
    check_eq(prod.flush(TIMEOUT_S), 0, "unflushed")


def poll_n(cons, count, timeout_s=30):
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        msg = cons.poll(0.3)
        if msg is not None and not msg.error():
            got.append(msg)
    return got


def scenario_group(ctx):
    adm = admin(ctx)
    topic, group = ctx.topic(), ctx.group()
    fill(ctx, adm, topic, 2, 10)
    cons = consumer(ctx, group, session_timeout_ms=6000)
    cons.subscribe([topic])
    first = poll_n(cons, 8)
    check_eq(len(first), 8, "first batch")
    commit = {}
    for m in first:
        commit[m.partition()] = m.offset() + 1
    cons.commit(offsets=[TopicPartition(topic, p, o) for p, o in commit.items()], asynchronous=False)
    committed = cons.committed([TopicPartition(topic, p) for p in range(2)], timeout=10)
    check_eq({tp.partition: tp.offset for tp in committed if tp.offset >= 0}, commit, "committed offsets")
    cons.close()
    listed = result(adm.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group])
    check_eq({tp.partition: tp.offset for tp in listed.topic_partitions if tp.offset >= 0}, commit,
             "admin committed offsets")
    cons = consumer(ctx, group, session_timeout_ms=6000)
    cons.subscribe([topic])
    rest = poll_n(cons, 12)
    check_eq(len(rest), 12, "after resume")
    seen = {(m.partition(), m.offset()) for m in first + rest}
    check_eq(len(seen), 20, "each record once")
    cons.close()
    desc = result(adm.describe_consumer_groups([group])[group])
    check_eq(desc.group_id, group, "described group")


class Member:
    def __init__(self, ctx, group, topic, **cfg):
        self.events = []
        self.cons = consumer(ctx, group, session_timeout_ms=6000, heartbeat_interval_ms=500, **cfg)
        self.cons.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke)

    def _assign(self, _c, parts):
        self.events.append(("assign", sorted(p.partition for p in parts)))

    def _revoke(self, _c, parts):
        self.events.append(("revoke", sorted(p.partition for p in parts)))

    def poll(self):
        self.cons.poll(0.1)

    def owned(self):
        return {tp.partition for tp in self.cons.assignment()}


def rebalance_with(ctx, strategy, cooperative=False, static=False):
    adm = admin(ctx)
    topic, group = ctx.topic(), ctx.group()
    fill(ctx, adm, topic, 4, 2)
    cfg = {"partition.assignment.strategy": strategy}
    a = Member(ctx, group, topic, **cfg, **({"group.instance.id": "member-a"} if static else {}))
    wait_until(lambda: (a.poll(), len(a.owned()) == 4)[1], 30, "a owns 4")
    a.events.clear()
    b = Member(ctx, group, topic, **cfg, **({"group.instance.id": "member-b"} if static else {}))

    def split():
        a.poll()
        b.poll()
        return len(a.owned()) == 2 and len(b.owned()) == 2 and len(a.owned() | b.owned()) == 4
    wait_until(split, 40, "2/2 split")
    if cooperative:
        revokes = [p for kind, p in a.events if kind == "revoke"]
        check(revokes and all(len(p) == 2 for p in revokes), f"incremental revoke of 2 partitions: {a.events}")
        check_eq(a.cons.memberid() is not None, True, "member id")
    if static:
        before, b_before = a.owned(), b.owned()
        desc = result(adm.describe_consumer_groups([group])[group])
        check_eq(sorted(m.group_instance_id for m in desc.members), ["member-a", "member-b"], "instance ids")
        a.cons.close()
        a = Member(ctx, group, topic, **cfg, **{"group.instance.id": "member-a"})
        wait_until(lambda: (a.poll(), b.poll(), len(a.owned()) == 2)[2], 30, "restarted static member assigned")
        check_eq(a.owned(), before, "static member keeps its partitions")
        check_eq(b.owned(), b_before, "other member undisturbed")
        a.cons.close()
        b.cons.close()
        return
    b.cons.close()
    wait_until(lambda: (a.poll(), len(a.owned()) == 4)[1], 30, "a owns 4 after b left")
    a.cons.close()


def scenario_rebalance(ctx):
    rebalance_with(ctx, "range")


def scenario_cooperative(ctx):
    rebalance_with(ctx, "cooperative-sticky", cooperative=True)


def scenario_static(ctx):
    rebalance_with(ctx, "range", static=True)


def scenario_offsets_for_times(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    records = make_records(10)
    produce_records(ctx, topic, records)
    base = records[0]["timestamp"]
    cons = consumer(ctx)
    found = cons.offsets_for_times([TopicPartition(topic, 0, base + 2500)], timeout=10)[0]
    check_eq(found.offset, 3, "offset for base+2500")
    after = cons.offsets_for_times([TopicPartition(topic, 0, base + 10 ** 7)], timeout=10)[0]
    check_eq(after.offset, -1, "offset after the last record (end)")
    low, high = cons.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    check_eq((low, high), (0, 10), "watermarks")
    cons.close()
    tp = TopicPartition(topic, 0)
    res = result(adm.list_offsets({tp: OffsetSpec.for_timestamp(base + 2500)})[tp])
    check_eq((res.offset, res.timestamp), (3, base + 3000), "admin list_offsets by timestamp")
    res = result(adm.list_offsets({tp: OffsetSpec.max_timestamp()})[tp])
    check_eq((res.offset, res.timestamp), (9, base + 9000), "max timestamp")


def topic_config(adm, topic):
    res = ConfigResource(ResourceType.TOPIC, topic)
    return result(adm.describe_configs([res])[res])


def scenario_configs(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    cfg = topic_config(adm, topic)
    check_eq(cfg["retention.ms"].value, "604800000", "default retention.ms")
    check_eq(cfg["max.message.bytes"].value, "1048588", "default max.message.bytes")
    check_eq(cfg["retention.ms"].is_default, True, "retention.ms is default")
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    result(adm.incremental_alter_configs([res])[res])
    cfg = topic_config(adm, topic)
    check_eq(cfg["retention.ms"].value, "3600000", "altered retention.ms")
    check_eq(cfg["retention.ms"].source, confluent_kafka.admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value, "source")
    broker = ConfigResource(ResourceType.BROKER, "1")
    bcfg = result(adm.describe_configs([broker])[broker])
    check("num.partitions" in bcfg or "log.retention.hours" in bcfg, "broker configs")


def scenario_delete_records(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    records = [{"key": None, "value": f"r{i}".encode(), "headers": [], "timestamp": int(time.time() * 1000)}
               for i in range(10)]
    produce_records(ctx, topic, records)
    tp = TopicPartition(topic, 0, 4)
    res = result(adm.delete_records([tp])[tp])
    check_eq(res.low_watermark, 4, "low watermark")
    got = consume_assigned(ctx, topic, 6)
    check_eq([(r["offset"], r["value"]) for r in got], [(i, f"r{i}".encode()) for i in range(4, 10)], "remaining")


def scenario_errors(ctx):
    adm = admin(ctx)
    missing = ctx.topic("missing")
    check_eq(error_code(lambda: result(adm.delete_topics([missing])[missing])), UNKNOWN_TOPIC_OR_PARTITION,
             "delete missing topic")
    bad = ctx.topic("bad-config")
    check_eq(error_code(lambda: result(adm.create_topics([NewTopic(bad, 1, 1, config={"cleanup.policy": "bogus"})])[bad])),
             INVALID_CONFIG, "invalid config")
    check_eq(error_code(lambda: result(adm.create_topics([NewTopic("bad/name", 1, 1)])["bad/name"])),
             INVALID_TOPIC_EXCEPTION, "invalid topic name")
    topic = ctx.topic()
    create_topic(adm, topic)
    prod = producer(ctx, message_max_bytes=4_000_000, retries=0)
    errors = []
    prod.produce(topic, value=b"x" * TOO_LARGE_VALUE_BYTES, partition=0, on_delivery=lambda e, m: errors.append(e))
    prod.flush(TIMEOUT_S)
    check_eq([e.code() if e else None for e in errors], [MESSAGE_TOO_LARGE], "record too large")
    cons = consumer(ctx)  # allow.auto.create.topics=false: metadata reports the topic as unknown
    md = cons.list_topics(missing, timeout=10)
    cons.close()
    err = md.topics[missing].error
    check_eq(err.code() if err else None, KafkaError.UNKNOWN_TOPIC_OR_PART, "metadata for a missing topic")


def described(adm, resource_type, name, key):
    res = ConfigResource(resource_type, name)
    entry = result(adm.describe_configs([res])[res]).get(key)
    check(entry is not None, f"{resource_type.name} {name!r}: {key} not described")
    return entry


def shown(entry):
    """(value, source, {synonym: (value, source)}) of a described entry. confluent-kafka keeps the synonyms
    in a dict by name, so of two synonyms with one name (a broker's and the cluster default's) it shows the
    later one, in the position of the first."""
    return (entry.value, ConfigSource(entry.source).name,
            {name: (s.value, ConfigSource(s.source).name) for name, s in entry.synonyms.items()})


def wait_topic_config(adm, topic, key, expected):
    """Dynamic broker configs reach topics after the alter is answered (Kafka applies the controller's
    record when it reaches the broker's metadata): poll what the topic reports."""
    last = [None]

    def matches():
        last[0] = shown(described(adm, ResourceType.TOPIC, topic, key))
        return last[0] == expected
    try:
        wait_until(matches, 20, f"{topic} {key}")
    except Failure:
        check_eq(last[0], expected, f"{topic} {key} (after 20 s)")


def alter_broker(adm, name, *ops):
    """ops: (key, value) to SET, (key, None) to DELETE."""
    res = ConfigResource(ResourceType.BROKER, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET if value is not None
                    else AlterConfigOpType.DELETE) for key, value in ops])
    result(adm.incremental_alter_configs([res])[res])


def scenario_broker_configs(ctx):
    """Dynamic broker configs on broker "1" (confluent-kafka refuses a broker resource with the cluster
    default's empty name: "Invalid ConfigResource"): refused alters with Kafka's INVALID_REQUEST messages,
    read_only per key, a broker message.max.bytes that topics without their own max.message.bytes report
    and enforce, and a broker log.retention.ms in a topic's retention.ms and its synonyms."""
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    check_eq(shown(described(adm, ResourceType.TOPIC, topic, "retention.ms")), ("604800000", "DEFAULT_CONFIG", {}),
             "retention.ms before any broker config (no synonyms)")
    for key, value, message in REFUSED_BROKER_ALTERS:
        try:
            alter_broker(adm, "1", (key, value))
            raise AssertionError(f"broker 1 {key}={value} accepted")
        except KafkaException as exc:
            err = exc.args[0]
            check_eq((err.code(), err.str()), (INVALID_REQUEST, message), f"broker 1 {key}={value}")
    res = ConfigResource(ResourceType.BROKER, "1")
    broker = result(adm.describe_configs([res])[res])
    for key in BROKER_WRITABLE_KEYS:
        check_eq(broker[key].is_read_only, False, f"broker 1 {key} read_only")
    for key in BROKER_READ_ONLY_KEYS:
        check_eq(broker[key].is_read_only, True, f"broker 1 {key} read_only")
    try:
        alter_broker(adm, "1", ("message.max.bytes", str(BROKER_MAX_MESSAGE_BYTES)))
        # Kafka's synonyms are message.max.bytes=50000 DYNAMIC_BROKER_CONFIG then message.max.bytes=1048588
        # DEFAULT_CONFIG; the dict keeps the second.
        wait_topic_config(adm, topic, "max.message.bytes", (str(BROKER_MAX_MESSAGE_BYTES), "DYNAMIC_BROKER_CONFIG",
                                                            {"message.max.bytes": ("1048588", "DEFAULT_CONFIG")}))
        prod = producer(ctx, message_max_bytes=4_000_000, compression_codec="none", retries=0)
        delivered = []

        def send(size):
            delivered.clear()
            prod.produce(topic, value=b"x" * size, partition=0,
                         on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
            check_eq(prod.flush(TIMEOUT_S), 0, f"{size}-byte record left after flush")
            check_eq(len(delivered), 1, f"{size}-byte record: one delivery report")
            return delivered[0]
        err, _ = send(ABOVE_BROKER_MAX_BYTES)
        log("60000-byte record:", err)
        check_eq(err.code() if err else None, MESSAGE_TOO_LARGE, "60000-byte record above message.max.bytes=50000")
        check_eq(send(BELOW_BROKER_MAX_BYTES), (None, 0), "40000-byte record below the limit")
        alter_broker(adm, "1", ("message.max.bytes", None))
        wait_topic_config(adm, topic, "max.message.bytes",
                          ("1048588", "DEFAULT_CONFIG", {"message.max.bytes": ("1048588", "DEFAULT_CONFIG")}))
        check_eq(send(ABOVE_BROKER_MAX_BYTES), (None, 1), "60000-byte record once the broker config is deleted")
        alter_broker(adm, "1", ("log.retention.ms", "987654321"))
        wait_topic_config(adm, topic, "retention.ms", ("987654321", "DYNAMIC_BROKER_CONFIG", {
            "log.retention.ms": ("987654321", "DYNAMIC_BROKER_CONFIG"),
            "log.retention.hours": ("168", "DEFAULT_CONFIG")}))
    finally:
        alter_broker(adm, "1", ("message.max.bytes", None), ("log.retention.ms", None))
    wait_topic_config(adm, topic, "retention.ms", ("604800000", "DEFAULT_CONFIG", {}))


def read_values(ctx, topic, isolation, up_to):
    """Values of partition 0 from the start until the position reaches `up_to`."""
    cons = consumer(ctx, isolation_level=isolation)
    try:
        cons.assign([TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            msg = cons.poll(0.3)
            if msg is not None and msg.error() is None:
                got.append(msg.value().decode())
            position = cons.position([TopicPartition(topic, 0)])[0].offset
            if position >= up_to:
                break
        return got
    finally:
        cons.close()


def scenario_transactions(ctx):
    adm = admin(ctx)
    topic, group = ctx.topic(), ctx.group()
    create_topic(adm, topic)
    tp = TopicPartition(topic, 0)
    group_member = consumer(ctx, group=group)
    prod = producer(ctx, transactional_id=f"{ctx.prefix}-txn")
    prod.init_transactions(TIMEOUT_S)

    def txn(values, offset=None, commit=True):
        prod.begin_transaction()
        for value in values:
            prod.produce(topic, value.encode(), partition=0)
        prod.flush(TIMEOUT_S)
        if offset is not None:
            prod.send_offsets_to_transaction([TopicPartition(topic, 0, offset)],
                                             group_member.consumer_group_metadata(), TIMEOUT_S)
        if commit:
            prod.commit_transaction(TIMEOUT_S)
        else:
            prod.abort_transaction(TIMEOUT_S)

    txn(["c0", "c1"])                      # c0 0, c1 1, COMMIT 2
    txn(["a0"], commit=False)              # a0 3, ABORT 4
    txn(["c2"], offset=5)                  # c2 5, COMMIT 6
    txn(["a1"], offset=8, commit=False)    # a1 7, ABORT 8
    committed_reader = consumer(ctx, isolation_level="read_committed")
    _, lso = committed_reader.get_watermark_offsets(tp, timeout=10, cached=False)
    committed_reader.close()
    check_eq(lso, 9, "read_committed end offset (LSO)")
    check_eq(read_values(ctx, topic, "read_committed", 9), ["c0", "c1", "c2"], "read_committed values")
    check_eq(read_values(ctx, topic, "read_uncommitted", 9), ["c0", "c1", "a0", "c2", "a1"],
             "read_uncommitted values")
    committed = group_member.committed([tp], timeout=TIMEOUT_S)[0].offset
    check_eq(committed, 5, "offset committed in the transaction (the aborted one dropped)")
    group_member.close()


def end_offset(ctx, topic):
    cons = consumer(ctx)
    try:
        return cons.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1]
    finally:
        cons.close()


def scenario_record_errors(ctx):
    """KIP-467: a batch the broker refuses names its bad records in record_errors. librdkafka
    2.16 uses them only when more than one record is named: those fail with INVALID_RECORD and
    the rest of the batch with _INVALID_DIFFERENT_RECORD; with a single record error every record
    of the batch fails with the partition-level error. The per-record message is not exposed
    (KafkaError.str() is librdkafka's text for the code). Nothing of the batch is stored; the
    next batch is."""
    adm = admin(ctx)
    now = int(time.time() * 1000)
    # linger.ms holds the 3 records in one batch until flush() sends it.
    prod = producer(ctx, linger_ms=10000, batch_num_messages=1000)
    for case in record_error_cases(now):
        name, topic = case["name"], ctx.topic(case["name"])
        create_topic(adm, topic, config=case["configs"])
        reports = {}
        for i, r in enumerate(case["records"]):
            prod.produce(topic, key=r["key"], value=r["value"], timestamp=r["timestamp"], partition=0,
                         on_delivery=lambda err, msg, i=i: reports.__setitem__(i, err))
        check_eq(prod.flush(TIMEOUT_S), 0, f"{name}: messages left after flush")
        log(name, {i: (e.code(), e.name(), e.str()) if e else None for i, e in sorted(reports.items())})
        check_eq(sorted(reports), [0, 1, 2], f"{name}: delivery reports")
        named = sum(1 for kind in case["expected"] if kind != "other")
        for i, kind in enumerate(case["expected"]):
            err, what = reports[i], f"{name}: record {i}"
            check(err is not None, f"{what}: delivered, but the batch should have been refused")
            if named == 1:
                check_eq(err.code(), case["top"], f"{what}: error code (one record error: the partition's)")
            elif kind == "other":
                check_eq(err.code(), KafkaError._INVALID_DIFFERENT_RECORD, f"{what}: error code")
            else:
                check_eq(err.code(), named_error_code(case), f"{what}: error code")
        check_eq(end_offset(ctx, topic), 0, f"{name}: end offset after the refused batch")
        good = good_records(now)
        delivered = []
        for r in good:
            prod.produce(topic, key=r["key"], value=r["value"], headers=r["headers"], timestamp=r["timestamp"],
                         partition=0, on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
        check_eq(prod.flush(TIMEOUT_S), 0, f"{name}: good messages left after flush")
        check_eq(delivered, [(None, 0), (None, 1), (None, 2)], f"{name}: good batch delivered at offsets 0..2")
        compare_records(good, consume_assigned(ctx, topic, 3), what=f"{name}: stored")
        check_eq(end_offset(ctx, topic), 3, f"{name}: end offset after the good batch")


def scenario_recompression(ctx):
    """Topic compression.type: a producer's batches of another codec are stored recompressed
    with the topic's, and the records read back as sent."""
    adm = admin(ctx)
    for topic_codec, producer_codec, stored in RECOMPRESSION_CASES:
        topic = ctx.topic(f"{topic_codec}-from-{producer_codec}")
        create_topic(adm, topic, config={"compression.type": topic_codec})
        records = make_records()
        offsets = produce_records(ctx, topic, records, compression_type=producer_codec, linger_ms=50)
        what = f"topic {topic_codec}, producer {producer_codec}"
        check_eq(sorted(offsets), list(range(len(records))), f"{what}: offsets")
        compare_records(records, consume_assigned(ctx, topic, len(records)), what=what)
        check_stored_codec(ctx.bootstrap, topic, len(records), stored, what)
        log(what, "stored as", stored)


def scenario_auth_failure(ctx):
    """librdkafka keeps retrying; what it reports comes through error_cb, served by poll()."""
    errors = []
    prod = Producer({**conn(ctx), "error_cb": errors.append, "log_level": 0})
    deadline = time.monotonic() + AUTH_FAILURE_TIMEOUT_S
    while time.monotonic() < deadline and not any(e.code() != KafkaError._ALL_BROKERS_DOWN for e in errors):
        prod.poll(0.2)
    try:
        md = prod.list_topics(timeout=2)
        raise Failure(f"connected with the wrong settings: brokers {md.brokers}")
    except KafkaException as exc:
        log(f"list_topics failed: {exc}")
    first = next((e for e in errors if e.code() != KafkaError._ALL_BROKERS_DOWN), None)
    check(first is not None, f"no connection error reported through error_cb within {AUTH_FAILURE_TIMEOUT_S}s")
    check(first.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError._TRANSPORT),
          f"an authentication, SSL or transport error: {first}")
    report_auth_failure(f"{first.name()} ({normalise_error_text(first.str())})")


SCENARIOS = {
    "auth_failure": scenario_auth_failure,
    "metadata": scenario_metadata,
    "topics": scenario_topics,
    "codecs": scenario_codecs,
    "large": scenario_large,
    "idempotent": scenario_idempotent,
    "group": scenario_group,
    "rebalance": scenario_rebalance,
    "cooperative": scenario_cooperative,
    "static": scenario_static,
    "offsets_for_times": scenario_offsets_for_times,
    "configs": scenario_configs,
    "delete_records": scenario_delete_records,
    "errors": scenario_errors,
    "broker_configs": scenario_broker_configs,
    "transactions": scenario_transactions,
    "record_errors": scenario_record_errors,
    "recompression": scenario_recompression,
    **Cg848Scenarios(admin, consumer, producer, create_topic).table(),
    **ShareScenarios(admin, producer, create_topic, conn).table(),
}

if __name__ == "__main__":
    main(lambda: f"confluent-kafka {confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})",
         SCENARIOS)
