#!/usr/bin/env python3
"""Consumer-group figures for issue 6, Shale beside Apache Kafka in one run:
time for ten members to reach Stable from a cold start (group.initial.rebalance.delay.ms=0),
and synchronous offset commits per second from one member.

Run with compat-tests' virtualenv after compat-tests has installed its dependencies:
    compat-tests/.venv/bin/python bench/groups.py [--shale-bin PATH]
"""
import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "compat-tests"))
from harness.brokers import KafkaBroker, ShaleBroker  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

MEMBERS = 10
PARTITIONS = 10
COMMITS = 500


def create_topic(bootstrap, name, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)


def time_to_stable(bootstrap):
    topic, group = "bench-groups", "bench-group-stable"
    create_topic(bootstrap, topic, PARTITIONS)
    assigned = [0] * MEMBERS
    consumers = []
    stop = threading.Event()

    def run(i):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                      "session.timeout.ms": 10000, "auto.offset.reset": "earliest"})
        consumers.append(c)

        def on_assign(consumer, partitions):
            assigned[i] = len(partitions)
        c.subscribe([topic], on_assign=on_assign)
        while not stop.is_set():
            c.poll(0.05)
        c.close()

    start = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(MEMBERS)]
    for t in threads:
        t.start()
    deadline = start + 120
    while time.monotonic() < deadline:
        if all(a == PARTITIONS // MEMBERS for a in assigned):
            break
        time.sleep(0.01)
    elapsed = time.monotonic() - start
    ok = all(a == PARTITIONS // MEMBERS for a in assigned)
    stop.set()
    for t in threads:
        t.join()
    return elapsed if ok else None


def commits_per_second(bootstrap):
    topic, group = "bench-commits", "bench-group-commits"
    create_topic(bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, b"x")
    p.flush(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)  # coordinator warm-up
    start = time.monotonic()
    for i in range(COMMITS):
        c.commit(offsets=[TopicPartition(topic, 0, i + 1)], asynchronous=False)
    elapsed = time.monotonic() - start
    c.close()
    return COMMITS / elapsed


def measure(broker):
    props = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.replication.factor": "1",
             "num.partitions": "1", "group.min.session.timeout.ms": "1000"}
    broker.start(props)
    try:
        return {"stable_s": time_to_stable(broker.bootstrap),
                "commits_per_s": commits_per_second(broker.bootstrap)}
    finally:
        broker.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shale-bin", default=str(ROOT / "target" / "release" / "shale"))
    ap.add_argument("--kafka-version", default="4.4.0")
    args = ap.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="bench-groups-"))
    results = {
        "shale": measure(ShaleBroker(logs / "shale.log", Path(args.shale_bin))),
        "kafka": measure(KafkaBroker(logs / "kafka.log", ROOT / "compat-tests/.deps/kafka/lib",
                                     args.kafka_version)),
    }
    print(json.dumps(results, indent=2))
    s, k = results["shale"], results["kafka"]
    print("| measurement | Shale | Kafka |\n|---|---|---|")
    print(f"| {MEMBERS} members reach Stable, cold start (s) | {s['stable_s']:.2f} | {k['stable_s']:.2f} |")
    print(f"| synchronous offset commits per second, one member | {s['commits_per_s']:.0f} | {k['commits_per_s']:.0f} |")


if __name__ == "__main__":
    main()
