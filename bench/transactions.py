#!/usr/bin/env python3
"""Transaction figures for issue 7, Shale beside Apache Kafka in one run:
- produce throughput of Kafka's ProducerPerformance with `--transactional-id` and
  `--transaction-duration-ms 100`, beside the same tool without transactions (acks=all,
  idempotent, as a transactional producer is), 1 KiB records into a 1-partition topic;
- end-to-end latency seen by a read_committed consumer: one record per transaction (begin,
  produce, commit), timed from before the send until the consumer receives it; beside the same
  loop with an idempotent producer and no transactions (a flush per record).
Each figure is also given as a ratio to the same broker's non-transactional figure.

Run with compat-tests' virtualenv after compat-tests has installed its dependencies (the
Kafka jars in compat-tests/.deps and confluent-kafka in compat-tests/.venv):
    compat-tests/.venv/bin/python bench/transactions.py [--shale-bin PATH] [--records N]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "compat-tests"))
from harness.brokers import KafkaBroker, ShaleBroker  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

KAFKA_LIB = ROOT / "compat-tests" / ".deps" / "kafka" / "lib"
LATENCY_SAMPLES = 300
TOOL_TIMEOUT_S = 300


def create_topic(bootstrap, name, partitions=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)


def producer_performance(bootstrap, topic, records, transactional, log_path):
    args = ["java", "-Xmx1g", "-Xms1g", "-cp", f"{KAFKA_LIB}/*", "org.apache.kafka.tools.ProducerPerformance",
            "--topic", topic, "--num-records", str(records), "--record-size", "1024", "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "enable.idempotence=true"]
    if transactional:
        args += ["--transactional-id", f"bench-{topic}", "--transaction-duration-ms", "100"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    log_path.write_text(out.stdout + out.stderr)
    # The final summary line: "N records sent, R records/sec (M MB/sec), A ms avg latency, ..."
    summary = [line for line in out.stdout.splitlines() if re.match(r"\d+ records sent, ", line)]
    if out.returncode != 0 or not summary:
        return {"ok": False, "exit_code": out.returncode, "tail": (out.stdout + out.stderr)[-800:]}
    m = re.match(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency",
                 summary[-1])
    return {"ok": int(m.group(1)) == records, "records": int(m.group(1)), "records_per_s": float(m.group(2)),
            "mb_per_s": float(m.group(3)), "latency_avg_ms": float(m.group(4))}


def end_to_end_latency(bootstrap, topic, transactional):
    create_topic(bootstrap, topic)
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 0, "enable.idempotence": True, "acks": "all"}
    if transactional:
        conf["transactional.id"] = f"bench-e2e-{topic}"
    producer = Producer(conf)
    if transactional:
        producer.init_transactions(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-e2e-{topic}",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100, "fetch.min.bytes": 1})
    consumer.assign([TopicPartition(topic, 0, 0)])
    samples_ms = []
    try:
        for i in range(LATENCY_SAMPLES + 20):  # the first 20 warm up connections and metadata
            value = str(i).encode()
            started = time.perf_counter()
            if transactional:
                producer.begin_transaction()
            producer.produce(topic, value, partition=0)
            if transactional:
                producer.commit_transaction(30)
            else:
                producer.flush(30)
            deadline = started + 30
            while time.perf_counter() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None and msg.value() == value:
                    break
            else:
                raise RuntimeError(f"record {i} did not arrive within 30 s")
            if i >= 20:
                samples_ms.append((time.perf_counter() - started) * 1000)
    finally:
        consumer.close()
    samples_ms.sort()
    return {"samples": len(samples_ms), "avg_ms": statistics.fmean(samples_ms),
            "p50_ms": samples_ms[len(samples_ms) // 2], "p99_ms": samples_ms[int(len(samples_ms) * 0.99) - 1]}


def measure(broker, records, logs):
    props = {"offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
             "transaction.state.log.min.isr": "1", "num.partitions": "1"}
    broker.start(props)
    try:
        create_topic(broker.bootstrap, "bench-warmup")
        producer_performance(broker.bootstrap, "bench-warmup", max(10_000, records // 10), False,
                             logs / f"{broker.name}-warmup.log")
        out = {}
        for name, transactional in (("plain", False), ("transactional", True)):
            topic = f"bench-{name}"
            create_topic(broker.bootstrap, topic)
            out[f"produce_{name}"] = producer_performance(broker.bootstrap, topic, records, transactional,
                                                          logs / f"{broker.name}-produce-{name}.log")
            out[f"e2e_{name}"] = end_to_end_latency(broker.bootstrap, f"bench-e2e-{name}", transactional)
        out["alive_at_end"] = broker.alive()
        return out
    finally:
        broker.stop()


def fmt(value, digits=1):
    return "n/a" if value is None else f"{value:,.{digits}f}"


def ratio(a, b):
    return None if a is None or not b else a / b


def table(results):
    s, k = results.get("shale", {}), results.get("kafka", {})

    def value(r, run, key):
        entry = r.get(run) or {}
        return entry.get(key) if entry.get("ok", True) else None

    rows = ["| Metric | Shale | Kafka | Shale/Kafka | Shale txn/plain | Kafka txn/plain |", "|---|---:|---:|---:|---:|---:|"]
    for key, unit in (("mb_per_s", "MB/s"), ("records_per_s", "records/s")):
        st, kt = value(s, "produce_transactional", key), value(k, "produce_transactional", key)
        sp, kp = value(s, "produce_plain", key), value(k, "produce_plain", key)
        rows.append(f"| Transactional produce 1 KiB, 1 partition, 100 ms transactions ({unit}) | {fmt(st)} | "
                    f"{fmt(kt)} | {fmt(ratio(st, kt), 2)} | {fmt(ratio(st, sp), 2)} | {fmt(ratio(kt, kp), 2)} |")
        rows.append(f"| Idempotent produce, no transactions ({unit}) | {fmt(sp)} | {fmt(kp)} | {fmt(ratio(sp, kp), 2)} | - | - |")
    for key, name in (("p50_ms", "p50"), ("p99_ms", "p99"), ("avg_ms", "avg")):
        st, kt = value(s, "e2e_transactional", key), value(k, "e2e_transactional", key)
        sp, kp = value(s, "e2e_plain", key), value(k, "e2e_plain", key)
        rows.append(f"| read_committed end-to-end latency, one record per transaction, {name} (ms) | {fmt(st, 2)} | "
                    f"{fmt(kt, 2)} | {fmt(ratio(st, kt), 2)} | {fmt(ratio(st, sp), 2)} | {fmt(ratio(kt, kp), 2)} |")
        rows.append(f"| same without transactions (flush per record), {name} (ms) | {fmt(sp, 2)} | {fmt(kp, 2)} | "
                    f"{fmt(ratio(sp, kp), 2)} | - | - |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shale-bin", default=str(ROOT / "target" / "release" / "shale"))
    ap.add_argument("--kafka-version", default="4.4.0")
    ap.add_argument("--records", type=int, default=200_000, help="records per produce run")
    ap.add_argument("--only", choices=["shale", "kafka"])
    args = ap.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="bench-txn-"))
    results = {}
    if args.only != "kafka":
        results["shale"] = measure(ShaleBroker(logs / "shale.log", Path(args.shale_bin)), args.records, logs)
    if args.only != "shale":
        results["kafka"] = measure(KafkaBroker(logs / "kafka.log", KAFKA_LIB, args.kafka_version), args.records, logs)
    results["records_per_produce_run"] = args.records
    results["latency_samples"] = LATENCY_SAMPLES
    print(json.dumps(results, indent=2))
    print()
    print(table(results))
    print(f"\nLogs: {logs}")
    ok = all(entry.get("ok", True) for r in results.values() if isinstance(r, dict)
             for entry in r.values() if isinstance(entry, dict))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
