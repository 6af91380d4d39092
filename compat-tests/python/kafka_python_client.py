"""kafka-python scenarios."""

import logging
import time

import kafka
import kafka.errors as kerr
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType
from kafka.structs import OffsetAndMetadata

from common import (ABOVE_BROKER_MAX_BYTES, BELOW_BROKER_MAX_BYTES, BROKER_MAX_MESSAGE_BYTES,
                    BROKER_READ_ONLY_KEYS, BROKER_WRITABLE_KEYS, CODECS, INVALID_CONFIG, INVALID_REQUEST,
                    LARGE_VALUE_BYTES, MESSAGE_TOO_LARGE, OTHER_RECORD_MESSAGE, RECOMPRESSION_CASES,
                    REFUSED_BROKER_ALTERS, check_stored_codec,
                    TOO_LARGE_VALUE_BYTES, TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION,
                    INVALID_TOPIC_EXCEPTION, Failure, NotApplicable, check, check_eq, check_record_message,
                    compare_records, good_records, log, main, make_records, named_error_code,
                    partition_error_message, record_error_cases, wait_until, AUTH_FAILURE_TIMEOUT_S,
                    normalise_error_text, report_auth_failure, security)


def conn(ctx):
    """Where and how to connect: the bootstrap address and, in a security mode, the settings of
    COMPAT_SECURITY_JSON as kafka-python's options."""
    kw = {"bootstrap_servers": ctx.bootstrap}
    sec = security()
    if sec is None:
        return kw
    kw["security_protocol"] = sec["security_protocol"]
    if sec["ca_file"]:
        kw["ssl_cafile"] = sec["ca_file"]
    if sec["cert_file"]:
        kw.update(ssl_certfile=sec["cert_file"], ssl_keyfile=sec["key_file"])
    if sec["sasl_mechanism"]:
        kw.update(sasl_mechanism=sec["sasl_mechanism"], sasl_plain_username=sec["username"],
                  sasl_plain_password=sec["password"])
    return kw


def admin(ctx):
    return KafkaAdminClient(**conn(ctx), request_timeout_ms=20000)


def create_topic(adm, name, partitions=1, configs=None):
    adm.create_topics({name: {"num_partitions": partitions, "replication_factor": 1, "configs": configs or {}}})
    wait_until(lambda: _has_leaders(adm, name, partitions), 20, f"leaders for {name}")


def _has_leaders(adm, name, partitions):
    try:
        topics = adm.describe_topics([name])
    except kerr.KafkaError:
        return False
    parts = topics[0]["partitions"] if topics and topics[0]["error_code"] == 0 else []
    return len(parts) == partitions and all(p["leader_id"] >= 0 for p in parts)


def producer(ctx, **cfg):
    return KafkaProducer(**conn(ctx), request_timeout_ms=20000, max_block_ms=20000, **cfg)


def consumer(ctx, *topics, **cfg):
    cfg.setdefault("auto_offset_reset", "earliest")
    cfg.setdefault("enable_auto_commit", False)
    cons = KafkaConsumer(**conn(ctx), request_timeout_ms=30000, **cfg)
    if topics:
        # Load the topics' metadata before subscribing: subscribing first makes the member join,
        # then rejoin when the metadata arrives, and kafka-python 3.0.12 sometimes loses that
        # second join (the coordinator then expires the member).
        for topic in topics:
            wait_until(lambda: cons.partitions_for_topic(topic), 20, f"metadata for {topic}")
        cons.subscribe(list(topics))
    return cons


def produce_records(prod, topic, records, partition=0):
    futures = [prod.send(topic, key=r["key"], value=r["value"], headers=r["headers"],
                         timestamp_ms=r["timestamp"], partition=partition) for r in records]
    prod.flush(timeout=30)
    return [f.get(timeout=30) for f in futures]


def consume_assigned(ctx, topic, count, partition=0, timeout_s=30):
    cons = consumer(ctx)
    tp = TopicPartition(topic, partition)
    cons.assign([tp])
    cons.seek_to_beginning(tp)
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        for msgs in cons.poll(timeout_ms=500).values():
            got.extend(msgs)
    cons.close()
    return [{"key": m.key, "value": m.value, "headers": list(m.headers or []), "timestamp": m.timestamp,
             "offset": m.offset} for m in got]


def scenario_metadata(ctx):
    adm = admin(ctx)
    cluster = adm.describe_cluster()
    check_eq(len(cluster["brokers"]), 1, "broker count")
    broker = cluster["brokers"][0]
    check_eq(f"{broker['host']}:{broker['port']}", ctx.bootstrap, "advertised broker address")
    check(cluster["controller_id"] == broker["broker_id"], f"controller id {cluster['controller_id']} names the broker")
    topic = ctx.topic()
    create_topic(adm, topic, 3)
    check(topic in adm.list_topics(), "created topic listed")
    cons = consumer(ctx)
    check_eq(cons.partitions_for_topic(topic), {0, 1, 2}, "partitions_for_topic")
    version = cons.config["api_version"]
    log("negotiated api_version", version)
    check(version is not None and tuple(version) >= (2, 1), f"negotiated api_version {version}")
    cons.close()
    adm.close()


def scenario_topics(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic, 2, {"retention.ms": "123456789"})
    desc = adm.describe_topics([topic])[0]
    check_eq(len(desc["partitions"]), 2, "partitions after create")
    check_eq(desc["partitions"][0]["replica_nodes"], [1], "replicas")
    try:
        adm.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})
        raise AssertionError("creating an existing topic succeeded")
    except kerr.TopicAlreadyExistsError as exc:
        check_eq(exc.errno, TOPIC_ALREADY_EXISTS, "error code")
    adm.create_partitions({topic: 5})
    wait_until(lambda: _has_leaders(adm, topic, 5), 20, "5 partitions with leaders")
    adm.delete_topics([topic])
    wait_until(lambda: topic not in adm.list_topics(), 20, "topic gone from list")
    try:
        adm.delete_topics([topic])
        raise AssertionError("deleting a missing topic succeeded")
    except kerr.UnknownTopicOrPartitionError as exc:
        check_eq(exc.errno, UNKNOWN_TOPIC_OR_PARTITION, "error code")
    adm.close()


def scenario_codecs(ctx):
    adm = admin(ctx)
    for codec in CODECS:
        topic = ctx.topic(codec)
        create_topic(adm, topic)
        records = make_records()
        prod = producer(ctx, compression_type=None if codec == "none" else codec, linger_ms=50)
        metas = produce_records(prod, topic, records)
        prod.close()
        check_eq([m.offset for m in metas], list(range(len(records))), f"{codec}: produced offsets")
        compare_records(records, consume_assigned(ctx, topic, len(records)), what=codec)
        log(codec, "ok")
    adm.close()


def scenario_large(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    value = bytes(i % 251 for i in range(LARGE_VALUE_BYTES))
    records = [{"key": b"big", "value": value, "headers": [("h", b"1")], "timestamp": int(time.time() * 1000)}]
    prod = producer(ctx, max_request_size=2_000_000)
    produce_records(prod, topic, records)
    prod.close()
    compare_records(records, consume_assigned(ctx, topic, 1))
    adm.close()


def scenario_idempotent(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    prod = producer(ctx, enable_idempotence=True, acks="all", linger_ms=5)
    futures = [prod.send(topic, value=f"m-{i}".encode(), partition=0) for i in range(200)]
    prod.flush(timeout=30)
    offsets = [f.get(timeout=30).offset for f in futures]
    prod.close()
    check_eq(offsets, list(range(200)), "offsets of idempotent sends")
    got = consume_assigned(ctx, topic, 200)
    check_eq([r["value"] for r in got], [f"m-{i}".encode() for i in range(200)], "values in order, once")
    adm.close()


def fill(ctx, adm, topic, partitions, per_partition):
    create_topic(adm, topic, partitions)
    prod = producer(ctx)
    for p in range(partitions):
        for i in range(per_partition):
            prod.send(topic, value=f"p{p}-{i}".encode(), partition=p)
    prod.flush(timeout=30)
    prod.close()


def poll_n(cons, count, timeout_s=30):
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        for msgs in cons.poll(timeout_ms=500, max_records=count - len(got)).values():
            got.extend(msgs)
    return got


def scenario_group(ctx):
    adm = admin(ctx)
    topic, group = ctx.topic(), ctx.group()
    fill(ctx, adm, topic, 2, 10)
    cons = consumer(ctx, topic, group_id=group, session_timeout_ms=10000)
    first = poll_n(cons, 8)
    check_eq(len(first), 8, "first batch size")
    cons.commit()
    committed = {tp: cons.committed(tp) for tp in cons.assignment()}
    check_eq(sum(committed.values()), 8, f"committed offsets {committed}")
    cons.close()
    offsets = adm.list_group_offsets({group: None})[group]
    check_eq(sum(o.offset for o in offsets.values()), 8, "committed offsets seen by admin")
    cons = consumer(ctx, topic, group_id=group, session_timeout_ms=10000)
    rest = poll_n(cons, 12)
    check_eq(len(rest), 12, "records after resume")
    seen = {(m.partition, m.offset) for m in first + rest}
    check_eq(len(seen), 20, "each record exactly once across the restart")
    cons.commit()
    cons.close()
    groups = [g[0] if isinstance(g, tuple) else g for g in adm.list_groups()]
    check(any(group in str(g) for g in groups), f"group listed: {groups}")
    adm.close()


def assigned_partitions(cons):
    return {tp.partition for tp in cons.assignment()}


def scenario_rebalance(ctx):
    adm = admin(ctx)
    topic, group = ctx.topic(), ctx.group()
    fill(ctx, adm, topic, 4, 2)
    common = dict(group_id=group, session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_interval_ms=20000)
    c1 = consumer(ctx, topic, **common)
    wait_until(lambda: (c1.poll(timeout_ms=200), len(assigned_partitions(c1)) == 4)[1], 30, "c1 owns 4 partitions")
    c2 = consumer(ctx, topic, **common)

    def split():
        c1.poll(timeout_ms=100)
        c2.poll(timeout_ms=100)
        a1, a2 = assigned_partitions(c1), assigned_partitions(c2)
        return len(a1) == 2 and len(a2) == 2 and a1 | a2 == {0, 1, 2, 3}
    wait_until(split, 40, "partitions split 2/2 between members")
    c2.close()
    wait_until(lambda: (c1.poll(timeout_ms=200), len(assigned_partitions(c1)) == 4)[1], 30,
               "c1 owns all 4 partitions after c2 left")
    c1.close()
    adm.close()


def scenario_static(ctx):
    adm = admin(ctx)
    topic, group = ctx.topic(), ctx.group()
    fill(ctx, adm, topic, 2, 1)
    common = dict(group_id=group, session_timeout_ms=20000, heartbeat_interval_ms=500)
    ca = consumer(ctx, topic, group_instance_id="member-a", **common)
    wait_until(lambda: (ca.poll(timeout_ms=200), len(assigned_partitions(ca)) == 2)[1], 30, "a owns both")
    cb = consumer(ctx, topic, group_instance_id="member-b", **common)

    def split():
        ca.poll(timeout_ms=100)
        cb.poll(timeout_ms=100)
        return len(assigned_partitions(ca)) == 1 and len(assigned_partitions(cb)) == 1
    wait_until(split, 40, "one partition each", interval_s=0)
    before = assigned_partitions(ca)
    desc = adm.describe_groups([group])[group]
    instance_ids = sorted(m.get("group_instance_id") for m in desc["members"])
    check_eq(instance_ids, ["member-a", "member-b"], "group_instance_id of members")
    ca.close()
    ca = consumer(ctx, topic, group_instance_id="member-a", **common)
    wait_until(lambda: (ca.poll(timeout_ms=200), cb.poll(timeout_ms=50), assigned_partitions(ca))[2], 30,
               "restarted static member gets an assignment")
    check_eq(assigned_partitions(ca), before, "static member keeps its partition")
    check_eq(len(adm.describe_groups([group])[group]["members"]), 2, "member count after restart")
    ca.close()
    cb.close()
    adm.close()


def scenario_offsets_for_times(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    records = make_records(10)
    prod = producer(ctx)
    produce_records(prod, topic, records)
    prod.close()
    cons = consumer(ctx)
    tp = TopicPartition(topic, 0)
    base = records[0]["timestamp"]
    found = cons.offsets_for_times({tp: base + 2500})[tp]
    check(found is not None, "offset for timestamp found")
    check_eq((found.offset, found.timestamp), (3, base + 3000), "offset and timestamp for base+2500")
    check_eq(cons.offsets_for_times({tp: base + 10 ** 7})[tp], None, "timestamp after the last record")
    check_eq(cons.beginning_offsets([tp])[tp], 0, "earliest offset")
    check_eq(cons.end_offsets([tp])[tp], 10, "latest offset")
    cons.close()
    adm.close()


def topic_configs(adm, topic, keys):
    res = adm.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={k: None for k in keys})],
                               config_filter="all")
    return res["topic"][topic]


def scenario_configs(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    cfg = topic_configs(adm, topic, ["retention.ms", "max.message.bytes", "cleanup.policy"])
    check_eq(cfg["retention.ms"]["value"], "604800000", "default retention.ms")
    check_eq(cfg["max.message.bytes"]["value"], "1048588", "default max.message.bytes")
    check_eq(cfg["retention.ms"]["config_source"], "DEFAULT_CONFIG", "source of a default")
    adm.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})],
                      incremental=True)
    cfg = topic_configs(adm, topic, ["retention.ms"])
    check_eq(cfg["retention.ms"]["value"], "3600000", "altered retention.ms")
    check_eq(cfg["retention.ms"]["config_source"], "DYNAMIC_TOPIC_CONFIG", "source after alter")
    broker = adm.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1", configs=None)],
                                  config_filter="all")
    broker_cfg = broker["broker"]["1"]
    check("log.retention.hours" in broker_cfg or "num.partitions" in broker_cfg, "broker configs described")
    adm.close()


def scenario_delete_records(ctx):
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    prod = producer(ctx)
    for i in range(10):
        prod.send(topic, value=f"r{i}".encode(), partition=0)
    prod.flush(timeout=30)
    prod.close()
    tp = TopicPartition(topic, 0)
    result = adm.delete_records({tp: 4})
    log("delete_records ->", result)
    cons = consumer(ctx)
    check_eq(cons.beginning_offsets([tp])[tp], 4, "log start offset after delete_records")
    cons.close()
    got = consume_assigned(ctx, topic, 6)
    check_eq([r["offset"] for r in got], list(range(4, 10)), "offsets after deletion")
    check_eq([r["value"] for r in got], [f"r{i}".encode() for i in range(4, 10)], "records after deletion")
    adm.close()


def scenario_errors(ctx):
    adm = admin(ctx)
    missing = ctx.topic("missing")
    try:
        adm.delete_topics([missing])
        raise AssertionError("delete of a missing topic succeeded")
    except kerr.UnknownTopicOrPartitionError as exc:
        check_eq(exc.errno, UNKNOWN_TOPIC_OR_PARTITION, "unknown topic error code")
    try:
        adm.create_topics({ctx.topic("bad-config"): {"num_partitions": 1, "replication_factor": 1,
                                                     "configs": {"cleanup.policy": "bogus"}}})
        raise AssertionError("invalid config accepted")
    except kerr.InvalidConfigurationError as exc:
        check_eq(exc.errno, INVALID_CONFIG, "invalid config error code")
    try:
        adm.create_topics({"bad/name": {"num_partitions": 1, "replication_factor": 1}})
        raise AssertionError("invalid topic name accepted")
    except kerr.InvalidTopicError as exc:
        check_eq(exc.errno, INVALID_TOPIC_EXCEPTION, "invalid topic error code")
    topic = ctx.topic()
    create_topic(adm, topic)
    prod = producer(ctx, max_request_size=4_000_000, retries=0)
    try:
        prod.send(topic, value=b"x" * TOO_LARGE_VALUE_BYTES, partition=0).get(timeout=30)
        raise AssertionError("record larger than max.message.bytes accepted")
    except kerr.MessageSizeTooLargeError as exc:
        check_eq(exc.errno, MESSAGE_TOO_LARGE, "record too large error code")
    prod.close()
    adm.close()


def described(adm, resource_type, name, key):
    res = adm.describe_configs([ConfigResource(resource_type, name, configs={key: None})], include_synonyms=True,
                               config_filter="all")
    entry = res[resource_type.name.lower()][name].get(key)
    check(entry is not None, f"{resource_type.name} {name!r}: {key} not described")
    return entry


def shown(entry):
    """(value, source, [(synonym, value, source), ...]) of a described entry."""
    return (entry["value"], entry["config_source"],
            [(s["name"], s["value"], s["source"]) for s in entry.get("synonyms", [])])


def wait_topic_config(adm, topic, key, expected):
    """Dynamic broker configs reach topics after the alter is answered (Kafka applies the controller's
    record when it reaches the broker's metadata): poll what the topic reports."""
    last = [None]

    def matches():
        last[0] = shown(described(adm, ConfigResourceType.TOPIC, topic, key))
        return last[0] == expected
    try:
        wait_until(matches, 20, f"{topic} {key}")
    except Failure:
        check_eq(last[0], expected, f"{topic} {key} (after 20 s)")


def alter_broker(adm, name, configs):
    # raise_on_unknown=False: kafka-python would otherwise refuse keys it does not find among the broker's
    # dynamic configs (log.dirs) before sending anything.
    res = adm.alter_configs([ConfigResource(ConfigResourceType.BROKER, name, configs=configs)],
                            raise_on_unknown=False, incremental=True)
    return res["broker"][name]


def scenario_broker_configs(ctx):
    """Dynamic broker configs on broker "1" (kafka-python names a broker resource by its integer id, so the
    cluster default, resource name "", cannot be expressed): refused alters with Kafka's INVALID_REQUEST
    messages, read_only per key, a broker message.max.bytes that topics without their own max.message.bytes
    report and enforce, and a broker log.retention.ms in a topic's retention.ms and its synonyms."""
    adm = admin(ctx)
    topic = ctx.topic()
    create_topic(adm, topic)
    check_eq(shown(described(adm, ConfigResourceType.TOPIC, topic, "retention.ms")),
             ("604800000", "DEFAULT_CONFIG", []), "retention.ms before any broker config (no synonyms)")
    for key, value, message in REFUSED_BROKER_ALTERS:
        check_eq(alter_broker(adm, "1", {key: value}), f"[Error {INVALID_REQUEST}] InvalidRequestError: {message}",
                 f"broker 1 {key}={value}")
    broker = adm.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")["broker"]["1"]
    for key in BROKER_WRITABLE_KEYS:
        check_eq(broker[key]["read_only"], False, f"broker 1 {key} read_only")
    for key in BROKER_READ_ONLY_KEYS:
        check_eq(broker[key]["read_only"], True, f"broker 1 {key} read_only")
    try:
        check_eq(alter_broker(adm, "1", {"message.max.bytes": str(BROKER_MAX_MESSAGE_BYTES)}), "OK",
                 "broker 1 message.max.bytes")
        wait_topic_config(adm, topic, "max.message.bytes", (str(BROKER_MAX_MESSAGE_BYTES), "DYNAMIC_BROKER_CONFIG", [
            ("message.max.bytes", str(BROKER_MAX_MESSAGE_BYTES), "DYNAMIC_BROKER_CONFIG"),
            ("message.max.bytes", "1048588", "DEFAULT_CONFIG")]))
        prod = producer(ctx, max_request_size=4_000_000, compression_type=None, retries=0)
        try:
            prod.send(topic, value=b"x" * ABOVE_BROKER_MAX_BYTES, partition=0).get(timeout=30)
            raise AssertionError("60000-byte record accepted above the broker's message.max.bytes=50000")
        except kerr.MessageSizeTooLargeError as exc:
            log("60000-byte record refused:", repr(exc))
            check_eq(exc.errno, MESSAGE_TOO_LARGE, "60000-byte record: error code")
        check_eq(prod.send(topic, value=b"x" * BELOW_BROKER_MAX_BYTES, partition=0).get(timeout=30).offset, 0,
                 "40000-byte record below the limit")
        check_eq(alter_broker(adm, "1", {"message.max.bytes": (AlterConfigOp.DELETE, None)}), "OK",
                 "delete broker 1 message.max.bytes")
        wait_topic_config(adm, topic, "max.message.bytes",
                          ("1048588", "DEFAULT_CONFIG", [("message.max.bytes", "1048588", "DEFAULT_CONFIG")]))
        check_eq(prod.send(topic, value=b"x" * ABOVE_BROKER_MAX_BYTES, partition=0).get(timeout=30).offset, 1,
                 "60000-byte record once the broker config is deleted")
        prod.close()
        check_eq(alter_broker(adm, "1", {"log.retention.ms": "987654321"}), "OK", "broker 1 log.retention.ms")
        wait_topic_config(adm, topic, "retention.ms", ("987654321", "DYNAMIC_BROKER_CONFIG", [
            ("log.retention.ms", "987654321", "DYNAMIC_BROKER_CONFIG"),
            ("log.retention.hours", "168", "DEFAULT_CONFIG")]))
    finally:
        alter_broker(adm, "1", {"message.max.bytes": (AlterConfigOp.DELETE, None),
                                "log.retention.ms": (AlterConfigOp.DELETE, None)})
    wait_topic_config(adm, topic, "retention.ms", ("604800000", "DEFAULT_CONFIG", []))
    adm.close()


def read_values(ctx, topic, isolation, up_to):
    """Values of partition 0 from the start until the position reaches `up_to`."""
    cons = consumer(ctx, isolation_level=isolation)
    try:
        tp = TopicPartition(topic, 0)
        cons.assign([tp])
        cons.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + 30
        while cons.position(tp) < up_to and time.monotonic() < deadline:
            for msgs in cons.poll(timeout_ms=300).values():
                got.extend(m.value.decode() for m in msgs)
        return got
    finally:
        cons.close()


def scenario_transactions(ctx):
    adm = admin(ctx)
    topic, group = ctx.topic(), ctx.group()
    create_topic(adm, topic)
    tp = TopicPartition(topic, 0)
    prod = producer(ctx, transactional_id=f"{ctx.prefix}-txn")
    prod.init_transactions()

    def txn(values, offset=None, commit=True):
        prod.begin_transaction()
        for value in values:
            prod.send(topic, value=value.encode(), partition=0).get(timeout=30)
        if offset is not None:
            prod.send_offsets_to_transaction({tp: OffsetAndMetadata(offset, "", -1)}, group)
        if commit:
            prod.commit_transaction()
        else:
            prod.abort_transaction()

    txn(["c0", "c1"])                      # c0 0, c1 1, COMMIT 2
    txn(["a0"], commit=False)              # a0 3, ABORT 4
    txn(["c2"], offset=5)                  # c2 5, COMMIT 6
    txn(["a1"], offset=8, commit=False)    # a1 7, ABORT 8
    prod.close()
    reader = consumer(ctx, isolation_level="read_committed")
    check_eq(reader.end_offsets([tp])[tp], 9, "read_committed end offset (LSO)")
    reader.close()
    check_eq(read_values(ctx, topic, "read_committed", 9), ["c0", "c1", "c2"], "read_committed values")
    check_eq(read_values(ctx, topic, "read_uncommitted", 9), ["c0", "c1", "a0", "c2", "a1"],
             "read_uncommitted values")
    offsets = adm.list_group_offsets({group: None})[group]
    check_eq(offsets[tp].offset, 5, "offset committed in the transaction (the aborted one dropped)")


def scenario_record_errors(ctx):
    """KIP-467: a batch the broker refuses names its bad records in record_errors. kafka-python
    (like the Java producer) fails each named record with the broker's per-record message, as the
    partition-level error when it is the only one named, else as InvalidRecordError; the other
    records of the batch fail with a plain KafkaError saying they shared a batch with invalid
    records. kafka-python 3.0.12's idempotent producer then enters a fatal state and fails later
    sends with the partition-level error and error_message, which shows both. Nothing of the batch
    is stored; the next batch (from a new producer) is."""
    adm = admin(ctx)
    now = int(time.time() * 1000)
    for case in record_error_cases(now):
        name, topic = case["name"], ctx.topic(case["name"])
        create_topic(adm, topic, configs=case["configs"])
        # linger_ms holds the 3 records in one batch until flush() sends it.
        prod = producer(ctx, linger_ms=10000, batch_size=1_000_000)
        sent_ms = int(time.time() * 1000)
        futures = [prod.send(topic, key=r["key"], value=r["value"], timestamp_ms=r["timestamp"], partition=0)
                   for r in case["records"]]
        prod.flush(timeout=30)
        acked_ms = int(time.time() * 1000) + 1
        for i, (fut, kind, rec) in enumerate(zip(futures, case["expected"], case["records"])):
            what = f"{name}: record {i}"
            try:
                fut.get(timeout=30)
                raise AssertionError(f"{what}: delivered, but the batch should have been refused")
            except kerr.KafkaError as exc:
                message = exc.args[0] if exc.args else None
                log(what, type(exc).__name__, repr(message))
                if kind == "other":
                    check_eq(type(exc), kerr.KafkaError, f"{what}: error type")
                    check_eq(message, OTHER_RECORD_MESSAGE, f"{what}: message")
                else:
                    check_eq(exc.errno, named_error_code(case), f"{what}: error code")
                    check_record_message(message, kind, topic, i, rec["timestamp"], sent_ms, acked_ms, what)
        # The producer's fatal error is the partition-level error with the broker's error_message.
        late = prod.send(topic, key=b"late", value=b"late", partition=0)
        prod.flush(timeout=30)
        try:
            late.get(timeout=30)
            raise AssertionError(f"{name}: a send after the refused batch succeeded (kafka-python goes fatal)")
        except kerr.KafkaError as exc:
            log(name, "partition error", type(exc).__name__, repr(exc.args[0] if exc.args else None))
            check_eq(exc.errno, case["top"], f"{name}: partition-level error code")
            check_eq(exc.args[0] if exc.args else None, partition_error_message(case, topic),
                     f"{name}: partition-level error_message")
        prod.close()
        tp = TopicPartition(topic, 0)
        cons = consumer(ctx)
        check_eq(cons.end_offsets([tp])[tp], 0, f"{name}: end offset after the refused batch")
        good = good_records(now)
        prod = producer(ctx, linger_ms=10000, batch_size=1_000_000)
        metas = produce_records(prod, topic, good)
        prod.close()
        check_eq([m.offset for m in metas], [0, 1, 2], f"{name}: good batch offsets")
        compare_records(good, consume_assigned(ctx, topic, 3), what=f"{name}: stored")
        check_eq(cons.end_offsets([tp])[tp], 3, f"{name}: end offset after the good batch")
        cons.close()
    adm.close()


def scenario_recompression(ctx):
    """Topic compression.type: a producer's batches of another codec are stored recompressed
    with the topic's, and the records read back as sent."""
    adm = admin(ctx)
    for topic_codec, producer_codec, stored in RECOMPRESSION_CASES:
        topic = ctx.topic(f"{topic_codec}-from-{producer_codec}")
        create_topic(adm, topic, configs={"compression.type": topic_codec})
        records = make_records()
        prod = producer(ctx, compression_type=None if producer_codec == "none" else producer_codec,
                        linger_ms=50)
        metas = produce_records(prod, topic, records)
        prod.close()
        what = f"topic {topic_codec}, producer {producer_codec}"
        check_eq([m.offset for m in metas], list(range(len(records))), f"{what}: offsets")
        compare_records(records, consume_assigned(ctx, topic, len(records)), what=what)
        check_stored_codec(ctx.bootstrap, topic, len(records), stored, what)
        log(what, "stored as", stored)


class _BootstrapFailures(logging.Handler):
    """Keeps the errors kafka-python logs for failed bootstrap connections (its admin client
    retries them and ends with a KafkaTimeoutError that no longer says why), and the request
    each connection sent last before its error."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.errors = []  # (error, name of the last request sent before it)
        self.last_request = None

    def emit(self, record):
        if record.name == "kafka.net.connection" and record.msg == "%s Request %d: %s":
            self.last_request = type(record.args[2]).__name__
        elif record.msg.startswith("Bootstrap connection to") and len(record.args or ()) >= 2:
            self.errors.append((record.args[1], self.last_request))
            self.last_request = None


def scenario_auth_failure(ctx):
    failures = _BootstrapFailures()
    logging.getLogger("kafka.net.manager").addHandler(failures)
    connection_log = logging.getLogger("kafka.net.connection")
    connection_log.setLevel(logging.DEBUG)  # the "Request" lines; nothing prints them (no handler)
    connection_log.addHandler(failures)
    started = time.monotonic()
    try:
        adm = KafkaAdminClient(**conn(ctx), request_timeout_ms=10000,
                               bootstrap_timeout_ms=AUTH_FAILURE_TIMEOUT_S * 1000 // 2)
    except kerr.KafkaError as exc:
        log(f"KafkaAdminClient failed after {time.monotonic() - started:.1f}s: {exc!r}")
    else:
        cluster = adm.describe_cluster()
        adm.close()
        raise Failure(f"connected with the wrong settings: {cluster}")
    check(failures.errors, "no bootstrap connection error was reported")
    for error, request in failures.errors:
        log(f"bootstrap connection failed after {request}: {type(error).__name__}: {error}")
    first, request = failures.errors[0]
    if security()["sasl_mechanism"]:
        # kafka-python 3.0.12 drops bytes read in the same wakeup as the connection's close
        # (transport._read_from_sock aborts before data_received), so the broker's answer to a
        # refused SaslAuthenticate shows either as SaslAuthenticationFailedError or as "socket
        # disconnected", by timing, on either broker. What is stable is where it failed.
        check(request == "SaslAuthenticateRequest" and (
            isinstance(first, kerr.SaslAuthenticationFailedError) or str(first).endswith("socket disconnected")),
            f"refused at SaslAuthenticate, not {type(first).__name__}: {first} after {request}")
        report_auth_failure("SaslAuthenticateRequest refused (SaslAuthenticationFailedError or the connection closed)")
        return
    report_auth_failure(f"{type(first).__name__} ({normalise_error_text(first)})")


SCENARIOS = {
    "auth_failure": scenario_auth_failure,
    "metadata": scenario_metadata,
    "topics": scenario_topics,
    "codecs": scenario_codecs,
    "large": scenario_large,
    "idempotent": scenario_idempotent,
    "group": scenario_group,
    "rebalance": scenario_rebalance,
    "offsets_for_times": scenario_offsets_for_times,
    "configs": scenario_configs,
    "delete_records": scenario_delete_records,
    "errors": scenario_errors,
    "broker_configs": scenario_broker_configs,
    "transactions": scenario_transactions,
    "record_errors": scenario_record_errors,
    "recompression": scenario_recompression,
}

if __name__ == "__main__":
    def cooperative(_ctx):
        raise NotApplicable("kafka-python has no cooperative-sticky assignor")
    SCENARIOS["cooperative"] = cooperative

    def static(_ctx):
        # scenario_static stays for manual runs: against Apache Kafka 4.4 under load, kafka-python
        # 3.0.12's static member re-joins after its first assignment and the coordinator then expires
        # it ("has failed, removing it from the group"), so it is no reliable reference.
        raise NotApplicable("kafka-python's static member is expired by the Kafka reference in some runs")
    SCENARIOS["static"] = static
    main(lambda: f"kafka-python {kafka.__version__}", SCENARIOS)
