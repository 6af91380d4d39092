"""aiokafka scenarios (asyncio)."""

import asyncio
import logging
import time

import aiokafka
import aiokafka.errors as aerr
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.helpers import create_ssl_context

from common import (AUTH_FAILURE_TIMEOUT_S, CODECS, INVALID_CONFIG, INVALID_TOPIC_EXCEPTION, LARGE_VALUE_BYTES, MESSAGE_TOO_LARGE,
                    TOO_LARGE_VALUE_BYTES, TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION, Failure, NotApplicable,
                    check, check_eq, compare_records, log, main, make_records, normalise_error_text,
                    report_auth_failure, security)

TIMEOUT_S = 30


def conn(ctx):
    """Where and how to connect: the bootstrap address and, in a security mode, the settings of
    COMPAT_SECURITY_JSON as aiokafka's options (an ssl.SSLContext for TLS)."""
    kw = {"bootstrap_servers": ctx.bootstrap}
    sec = security()
    if sec is None:
        return kw
    kw["security_protocol"] = sec["security_protocol"]
    if sec["ca_file"]:
        kw["ssl_context"] = create_ssl_context(cafile=sec["ca_file"], certfile=sec["cert_file"],
                                               keyfile=sec["key_file"])
    if sec["sasl_mechanism"]:
        kw.update(sasl_mechanism=sec["sasl_mechanism"], sasl_plain_username=sec["username"],
                  sasl_plain_password=sec["password"])
    return kw


async def wait_until_async(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = await predicate()
        if last:
            return last
        await asyncio.sleep(0.2)
    raise Failure(f"timed out after {timeout_s}s waiting for {what} (last: {last!r})")


async def admin(ctx):
    adm = AIOKafkaAdminClient(**conn(ctx), request_timeout_ms=20000)
    await adm.start()
    return adm


def topic_error_codes(response):
    """{topic: error_code} from a Create/DeleteTopics or CreatePartitions response."""
    obj = response.to_object()
    entries = obj.get("topic_errors") or obj.get("topic_error_codes") or obj.get("results") or []
    return {e.get("topic") or e.get("name"): e["error_code"] for e in entries}


async def has_leaders(adm, topic, partitions):
    try:
        desc = await adm.describe_topics([topic])
    except aerr.KafkaError:
        return False
    parts = desc[0]["partitions"] if desc and desc[0]["error_code"] == 0 else []
    return len(parts) == partitions and all(p["leader"] >= 0 for p in parts)


async def create_topic(adm, topic, partitions=1, configs=None):
    resp = await adm.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
    check_eq(topic_error_codes(resp), {topic: 0}, "create_topics error codes")
    await wait_until_async(lambda: has_leaders(adm, topic, partitions), 20, f"leaders for {topic}")


async def producer(ctx, **cfg):
    prod = AIOKafkaProducer(**conn(ctx), request_timeout_ms=20000, **cfg)
    await prod.start()
    return prod


async def consume_assigned(ctx, topic, count, partition=0):
    cons = AIOKafkaConsumer(**conn(ctx), auto_offset_reset="earliest", enable_auto_commit=False)
    await cons.start()
    try:
        tp = TopicPartition(topic, partition)
        cons.assign([tp])
        await cons.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < count and time.monotonic() < deadline:
            for msgs in (await cons.getmany(tp, timeout_ms=500)).values():
                got.extend(msgs)
        return [{"key": m.key, "value": m.value, "headers": list(m.headers or []), "timestamp": m.timestamp,
                 "offset": m.offset} for m in got]
    finally:
        await cons.stop()


async def produce_records(prod, topic, records):
    futures = [await prod.send(topic, key=r["key"], value=r["value"], headers=r["headers"] or None,
                               timestamp_ms=r["timestamp"], partition=0) for r in records]
    return [(await f).offset for f in futures]


async def scenario_metadata(ctx):
    adm = await admin(ctx)
    try:
        cluster = await adm.describe_cluster()
        brokers = [(b["node_id"], f"{b['host']}:{b['port']}") for b in cluster["brokers"]]
        check_eq(brokers, [(1, ctx.bootstrap)], "brokers")
        check_eq(cluster["controller_id"], 1, "controller id")
        topic = ctx.topic()
        await create_topic(adm, topic, 3)
        check(topic in await adm.list_topics(), "topic listed")
        desc = await adm.describe_topics([topic])
        check_eq(sorted(p["partition"] for p in desc[0]["partitions"]), [0, 1, 2], "described partitions")
    finally:
        await adm.close()
    cons = AIOKafkaConsumer(**conn(ctx))
    await cons.start()
    try:
        check(topic in await cons.topics(), "topic in consumer metadata")
    finally:
        await cons.stop()


async def scenario_topics(ctx):
    adm = await admin(ctx)
    try:
        topic = ctx.topic()
        await create_topic(adm, topic, 2, {"retention.ms": "123456789"})
        resp = await adm.create_topics([NewTopic(topic, 1, 1)])
        check_eq(topic_error_codes(resp), {topic: TOPIC_ALREADY_EXISTS}, "duplicate create")
        resp = await adm.create_partitions({topic: NewPartitions(5)})
        check_eq(topic_error_codes(resp), {topic: 0}, "create_partitions")
        await wait_until_async(lambda: has_leaders(adm, topic, 5), 20, "5 partitions")
        resp = await adm.delete_topics([topic])
        check_eq(topic_error_codes(resp), {topic: 0}, "delete_topics")

        async def gone():
            return topic not in await adm.list_topics()
        await wait_until_async(gone, 20, "topic gone")
        resp = await adm.delete_topics([topic])
        check_eq(topic_error_codes(resp), {topic: UNKNOWN_TOPIC_OR_PARTITION}, "delete missing topic")
    finally:
        await adm.close()


async def scenario_codecs(ctx):
    adm = await admin(ctx)
    try:
        for codec in CODECS:
            topic = ctx.topic(codec)
            await create_topic(adm, topic)
            records = make_records()
            prod = await producer(ctx, compression_type=None if codec == "none" else codec, linger_ms=50)
            try:
                offsets = await produce_records(prod, topic, records)
            finally:
                await prod.stop()
            check_eq(offsets, list(range(len(records))), f"{codec}: offsets")
            compare_records(records, await consume_assigned(ctx, topic, len(records)), what=codec)
            log(codec, "ok")
    finally:
        await adm.close()


async def scenario_large(ctx):
    adm = await admin(ctx)
    try:
        topic = ctx.topic()
        await create_topic(adm, topic)
    finally:
        await adm.close()
    value = bytes(i % 251 for i in range(LARGE_VALUE_BYTES))
    records = [{"key": b"big", "value": value, "headers": [("h", b"1")], "timestamp": int(time.time() * 1000)}]
    prod = await producer(ctx, max_request_size=2_000_000)
    try:
        await produce_records(prod, topic, records)
    finally:
        await prod.stop()
    compare_records(records, await consume_assigned(ctx, topic, 1))


async def scenario_idempotent(ctx):
    adm = await admin(ctx)
    try:
        topic = ctx.topic()
        await create_topic(adm, topic)
    finally:
        await adm.close()
    prod = await producer(ctx, enable_idempotence=True, acks="all")
    try:
        futures = [await prod.send(topic, value=f"m-{i}".encode(), partition=0) for i in range(300)]
        offsets = [(await f).offset for f in futures]
    finally:
        await prod.stop()
    check_eq(offsets, list(range(300)), "offsets")
    got = await consume_assigned(ctx, topic, 300)
    check_eq([r["value"] for r in got], [f"m-{i}".encode() for i in range(300)], "once, in order")


async def fill(ctx, topic, partitions, per_partition):
    adm = await admin(ctx)
    try:
        await create_topic(adm, topic, partitions)
    finally:
        await adm.close()
    prod = await producer(ctx)
    try:
        for p in range(partitions):
            for i in range(per_partition):
                await prod.send(topic, value=f"p{p}-{i}".encode(), partition=p)
        await prod.flush()
    finally:
        await prod.stop()


async def group_consumer(ctx, topic, group, **cfg):
    cfg = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, **cfg}
    cons = AIOKafkaConsumer(topic, **conn(ctx), group_id=group, auto_offset_reset="earliest",
                            enable_auto_commit=False, **cfg)
    await cons.start()
    return cons


async def poll_n(cons, count):
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < count and time.monotonic() < deadline:
        for msgs in (await cons.getmany(timeout_ms=300, max_records=count - len(got))).values():
            got.extend(msgs)
    return got


async def scenario_group(ctx):
    topic, group = ctx.topic(), ctx.group()
    await fill(ctx, topic, 2, 10)
    cons = await group_consumer(ctx, topic, group)
    try:
        first = await poll_n(cons, 8)
        check_eq(len(first), 8, "first batch")
        await cons.commit()
        committed = {tp.partition: await cons.committed(tp) for tp in cons.assignment()}
        check_eq(sum(v for v in committed.values() if v), 8, f"committed {committed}")
    finally:
        await cons.stop()
    adm = await admin(ctx)
    try:
        offsets = await adm.list_consumer_group_offsets(group)
        check_eq(sum(o.offset for o in offsets.values()), 8, "admin committed offsets")
    finally:
        await adm.close()
    cons = await group_consumer(ctx, topic, group)
    try:
        rest = await poll_n(cons, 12)
        check_eq(len(rest), 12, "after resume")
        check_eq(len({(m.partition, m.offset) for m in first + rest}), 20, "each record once")
        await cons.commit()
    finally:
        await cons.stop()


def owned(cons):
    return {tp.partition for tp in cons.assignment()}


async def scenario_rebalance(ctx):
    topic, group = ctx.topic(), ctx.group()
    await fill(ctx, topic, 4, 2)
    c1 = await group_consumer(ctx, topic, group)
    c2 = None
    try:
        async def c1_all():
            await c1.getmany(timeout_ms=100)
            return len(owned(c1)) == 4
        await wait_until_async(c1_all, 30, "c1 owns 4")
        c2 = await group_consumer(ctx, topic, group)

        async def split():
            await asyncio.gather(c1.getmany(timeout_ms=100), c2.getmany(timeout_ms=100))
            return len(owned(c1)) == 2 and len(owned(c2)) == 2 and len(owned(c1) | owned(c2)) == 4
        await wait_until_async(split, 40, "2/2 split")
        await c2.stop()
        c2 = None
        await wait_until_async(c1_all, 30, "c1 owns 4 after c2 left")
    finally:
        await c1.stop()
        if c2 is not None:
            await c2.stop()


async def scenario_static(ctx):
    topic, group = ctx.topic(), ctx.group()
    await fill(ctx, topic, 2, 1)
    ca = await group_consumer(ctx, topic, group, group_instance_id="member-a", session_timeout_ms=20000)
    cb = await group_consumer(ctx, topic, group, group_instance_id="member-b", session_timeout_ms=20000)
    try:
        async def split():
            await asyncio.gather(ca.getmany(timeout_ms=100), cb.getmany(timeout_ms=100))
            return len(owned(ca)) == 1 and len(owned(cb)) == 1
        await wait_until_async(split, 40, "one partition each")
        before, b_before = owned(ca), owned(cb)
        await ca.stop()
        ca = await group_consumer(ctx, topic, group, group_instance_id="member-a", session_timeout_ms=20000)

        async def reassigned():
            await asyncio.gather(ca.getmany(timeout_ms=100), cb.getmany(timeout_ms=100))
            return owned(ca)
        await wait_until_async(reassigned, 30, "restarted static member assigned")
        check_eq(owned(ca), before, "static member keeps its partition")
        check_eq(owned(cb), b_before, "other member undisturbed")
    finally:
        await ca.stop()
        await cb.stop()


async def scenario_offsets_for_times(ctx):
    adm = await admin(ctx)
    try:
        topic = ctx.topic()
        await create_topic(adm, topic)
    finally:
        await adm.close()
    records = make_records(10)
    prod = await producer(ctx)
    try:
        await produce_records(prod, topic, records)
    finally:
        await prod.stop()
    base = records[0]["timestamp"]
    tp = TopicPartition(topic, 0)
    cons = AIOKafkaConsumer(**conn(ctx))
    await cons.start()
    try:
        found = (await cons.offsets_for_times({tp: base + 2500}))[tp]
        check(found is not None, "found")
        check_eq((found.offset, found.timestamp), (3, base + 3000), "offset for base+2500")
        check_eq((await cons.offsets_for_times({tp: base + 10 ** 7}))[tp], None, "after the last record")
        check_eq((await cons.beginning_offsets([tp]))[tp], 0, "earliest")
        check_eq((await cons.end_offsets([tp]))[tp], 10, "latest")
    finally:
        await cons.stop()


def config_entries(responses, name):
    for resp in responses:
        for res in resp.to_object()["resources"]:
            if res["resource_name"] == name:
                check_eq(res["error_code"], 0, f"describe_configs error for {name}")
                return {c["config_names"]: c for c in res["config_entries"]}
    raise Failure(f"no config resource {name} in response")


async def scenario_configs(ctx):
    adm = await admin(ctx)
    try:
        topic = ctx.topic()
        await create_topic(adm, topic)
        cfg = config_entries(await adm.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]), topic)
        check_eq(cfg["retention.ms"]["config_value"], "604800000", "default retention.ms")
        check_eq(cfg["max.message.bytes"]["config_value"], "1048588", "default max.message.bytes")
        resp = await adm.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                       configs={"retention.ms": "3600000"})])
        codes = [r["error_code"] for x in resp for r in x.to_object()["resources"]]
        check_eq(codes, [0], "alter_configs error codes")
        cfg = config_entries(await adm.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]), topic)
        check_eq(cfg["retention.ms"]["config_value"], "3600000", "altered retention.ms")
        bcfg = config_entries(await adm.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")]), "1")
        check("num.partitions" in bcfg or "log.retention.hours" in bcfg, "broker configs")
    finally:
        await adm.close()


async def scenario_delete_records(ctx):
    adm = await admin(ctx)
    try:
        topic = ctx.topic()
        await create_topic(adm, topic)
        prod = await producer(ctx)
        try:
            for i in range(10):
                await prod.send(topic, value=f"r{i}".encode(), partition=0)
            await prod.flush()
        finally:
            await prod.stop()
        tp = TopicPartition(topic, 0)
        low = await adm.delete_records({tp: RecordsToDelete(before_offset=4)})
        check_eq(low, {tp: 4}, "low watermarks")
    finally:
        await adm.close()
    got = await consume_assigned(ctx, topic, 6)
    check_eq([(r["offset"], r["value"]) for r in got], [(i, f"r{i}".encode()) for i in range(4, 10)], "remaining")


async def scenario_errors(ctx):
    adm = await admin(ctx)
    try:
        missing = ctx.topic("missing")
        check_eq(topic_error_codes(await adm.delete_topics([missing])), {missing: UNKNOWN_TOPIC_OR_PARTITION},
                 "delete missing topic")
        bad = ctx.topic("bad-config")
        resp = await adm.create_topics([NewTopic(bad, 1, 1, topic_configs={"cleanup.policy": "bogus"})])
        check_eq(topic_error_codes(resp), {bad: INVALID_CONFIG}, "invalid config")
        resp = await adm.create_topics([NewTopic("bad/name", 1, 1)])
        check_eq(topic_error_codes(resp), {"bad/name": INVALID_TOPIC_EXCEPTION}, "invalid topic name")
        topic = ctx.topic()
        await create_topic(adm, topic)
    finally:
        await adm.close()
    prod = await producer(ctx, max_request_size=4_000_000)
    try:
        fut = await prod.send(topic, value=b"x" * TOO_LARGE_VALUE_BYTES, partition=0)
        await fut
        raise Failure("record above max.message.bytes accepted")
    except aerr.MessageSizeTooLargeError as exc:
        check_eq(exc.errno, MESSAGE_TOO_LARGE, "record too large error code")
    finally:
        await prod.stop()


async def read_values(ctx, topic, isolation, up_to):
    """Values of partition 0 from the start until the position reaches `up_to`."""
    cons = AIOKafkaConsumer(**conn(ctx), auto_offset_reset="earliest",
                            enable_auto_commit=False, isolation_level=isolation)
    await cons.start()
    try:
        tp = TopicPartition(topic, 0)
        cons.assign([tp])
        await cons.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while await cons.position(tp) < up_to and time.monotonic() < deadline:
            for msgs in (await cons.getmany(tp, timeout_ms=300)).values():
                got.extend(m.value.decode() for m in msgs)
        return got
    finally:
        await cons.stop()


async def scenario_transactions(ctx):
    adm = await admin(ctx)
    topic, group = ctx.topic(), ctx.group()
    tp = TopicPartition(topic, 0)
    try:
        await create_topic(adm, topic)
        prod = await producer(ctx, transactional_id=f"{ctx.prefix}-txn")
        try:
            async def txn(values, offset=None, commit=True):
                await prod.begin_transaction()
                for value in values:
                    await (await prod.send(topic, value=value.encode(), partition=0))
                if offset is not None:
                    await prod.send_offsets_to_transaction({tp: offset}, group)
                if commit:
                    await prod.commit_transaction()
                else:
                    await prod.abort_transaction()

            await txn(["c0", "c1"])                      # c0 0, c1 1, COMMIT 2
            await txn(["a0"], commit=False)              # a0 3, ABORT 4
            await txn(["c2"], offset=5)                  # c2 5, COMMIT 6
            await txn(["a1"], offset=8, commit=False)    # a1 7, ABORT 8
        finally:
            await prod.stop()
        reader = AIOKafkaConsumer(**conn(ctx), isolation_level="read_committed")
        await reader.start()
        try:
            check_eq((await reader.end_offsets([tp]))[tp], 9, "read_committed end offset (LSO)")
        finally:
            await reader.stop()
        check_eq(await read_values(ctx, topic, "read_committed", 9), ["c0", "c1", "c2"], "read_committed values")
        check_eq(await read_values(ctx, topic, "read_uncommitted", 9), ["c0", "c1", "a0", "c2", "a1"],
                 "read_uncommitted values")
        offsets = await adm.list_consumer_group_offsets(group)
        check_eq(offsets[tp].offset, 5, "offset committed in the transaction (the aborted one dropped)")
    finally:
        await adm.close()


def sync(fn):
    def run(ctx):
        asyncio.run(asyncio.wait_for(fn(ctx), timeout=120))
    return run


class _BootstrapFailures(logging.Handler):
    """Keeps the errors aiokafka logs for failed bootstrap connections: start() then raises a
    KafkaConnectionError that says only that bootstrapping failed."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.errors = []

    def emit(self, record):
        if record.msg.startswith("Unable connect to") and len(record.args or ()) >= 3:
            self.errors.append(record.args[2])


async def scenario_auth_failure(ctx):
    failures = _BootstrapFailures()
    logging.getLogger("aiokafka").addHandler(failures)
    prod = AIOKafkaProducer(**conn(ctx), request_timeout_ms=10000)
    try:
        await asyncio.wait_for(prod.start(), AUTH_FAILURE_TIMEOUT_S)
    except aerr.KafkaConnectionError as exc:
        log(f"start() failed: {exc!r}")
    else:
        raise Failure("connected with the wrong settings")
    finally:
        await prod.stop()
    check(failures.errors, "no bootstrap connection error was reported")
    first = failures.errors[0]
    report_auth_failure(f"{type(first).__name__} ({normalise_error_text(first)})")


def not_supported(reason):
    def run(_ctx):
        raise NotApplicable(reason)
    return run


SCENARIOS = {
    "auth_failure": sync(scenario_auth_failure),
    "metadata": sync(scenario_metadata),
    "topics": sync(scenario_topics),
    "codecs": sync(scenario_codecs),
    "large": sync(scenario_large),
    "idempotent": sync(scenario_idempotent),
    "group": sync(scenario_group),
    "rebalance": sync(scenario_rebalance),
    "static": sync(scenario_static),
    "cooperative": not_supported("aiokafka has no cooperative-sticky assignor"),
    "offsets_for_times": sync(scenario_offsets_for_times),
    "configs": sync(scenario_configs),
    "delete_records": sync(scenario_delete_records),
    "errors": sync(scenario_errors),
    "transactions": sync(scenario_transactions),
}

if __name__ == "__main__":
    main(lambda: f"aiokafka {aiokafka.__version__}", SCENARIOS)
