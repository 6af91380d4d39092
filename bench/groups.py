#!/usr/bin/env python3
"""Consumer-group figures (issues 6 and 19), Shale beside Apache Kafka in one run.

For 10, 50 and 200 members (`--members`), with the consumer protocol (KIP-848,
`group.protocol=consumer`) and with the classic one (at group.initial.rebalance.delay.ms 3000,
Kafka's default, and 0):
- the time until the group's assignment is stable from a cold start (the topic exists, the group
  does not; timed from the first subscribe), and again after one more member subscribes;
- the broker's CPU per heartbeat over an idle stable group;
and, once per broker, synchronous offset commits per second from one member.

Run with compat-tests' virtualenv after compat-tests has installed its dependencies:
    compat-tests/.venv/bin/python bench/groups.py [--shale-bin PATH] [--only kafka|shale]
        [--members 10,50,200] [--protocols consumer,classic] [--classic-delays-ms 3000,0]
    compat-tests/.venv/bin/python bench/groups.py --render RESULTS.json [MORE.json ...]
bench/README.md describes every figure and how it is taken.
"""
import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "compat-tests"))
sys.path.insert(0, str(ROOT / "bench"))
from harness.brokers import KafkaBroker, ShaleBroker  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from groupbench.members import Member, heartbeat_counts, stop_all, wait_stable  # noqa: E402
from groupbench.procstat import cpu_seconds, request_thread_cpu, thread_cpu, thread_delta  # noqa: E402
from groupbench.report import table  # noqa: E402

KAFKA_LIB = ROOT / "compat-tests" / ".deps" / "kafka" / "lib"
COMMITS = 500
# Kafka 4.4's defaults for the consumer protocol, set explicitly on both brokers so that the
# run states them (GroupCoordinatorConfig).
CONSUMER_PROTOCOL_PROPERTIES = {
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "group.consumer.max.heartbeat.interval.ms": "15000",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.max.session.timeout.ms": "60000",
    "group.consumer.assignors": "uniform,range",
}
# librdkafka 2.16's classic-protocol defaults, used unchanged: heartbeat.interval.ms 3000,
# session.timeout.ms 45000, partition.assignment.strategy range,roundrobin (eager).
CLASSIC_CLIENT_HEARTBEAT_S = 3.0
CONSUMER_BROKER_HEARTBEAT_S = 5.0


def client_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def create_topic(bootstrap, name, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(60)


def warm_up_and_commits(bootstrap, commits):
    """Creates `__consumer_offsets` (through the first offset commit) so that no group figure
    includes it, then times `commits` synchronous commits from one member."""
    topic, group = "bench-commits", "bench-group-commits"
    create_topic(bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, b"x")
    p.flush(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    start = time.monotonic()
    for i in range(commits):
        c.commit(offsets=[TopicPartition(topic, 0, i + 1)], asynchronous=False)
    elapsed = time.monotonic() - start
    c.close()
    return commits / elapsed if commits else None


def wait_events(events, timeout_s):
    deadline = time.monotonic() + timeout_s
    return all(e.wait(max(0.0, deadline - time.monotonic())) for e in events)


def idle_cpu(pid, window_s):
    threads, start = thread_cpu(pid), cpu_seconds(pid)
    time.sleep(window_s)
    return cpu_seconds(pid) - start, thread_delta(threads, thread_cpu(pid))


def group_cpu(pid, members, probes, window_s):
    """Broker CPU over `window_s` of an idle stable group (every member's partitions paused, so
    no Fetch requests), and the heartbeats sent meanwhile: the probes' own count (every request
    they send is logged) gives each member's heartbeats, times the members."""
    for m in members:
        m.pause(True)
    paused = wait_events([m.paused for m in members], 30)
    # A Fetch already waiting at the broker (fetch.wait.max.ms, 500 ms) ends first.
    time.sleep(1.0)
    client_start = client_cpu_seconds()
    threads, t_start, cpu_start = thread_cpu(pid), time.monotonic(), cpu_seconds(pid)
    time.sleep(window_s)
    t_end, cpu_end, threads_end = time.monotonic(), cpu_seconds(pid), thread_cpu(pid)
    client_s = client_cpu_seconds() - client_start
    for m in members:
        m.pause(False)
    counts = heartbeat_counts(probes, t_start, t_end)
    per_member = sum(hb for hb, _ in counts) / len(counts) if counts else None
    other = {}
    for _, o in counts:
        for k, v in o.items():
            other[k] = other.get(k, 0) + v
    return {
        "all_paused": paused,
        "window_s": t_end - t_start,
        "broker_cpu_s": cpu_end - cpu_start,
        "client_cpu_s": client_s,
        "broker_cpu_s_by_thread": thread_delta(threads, threads_end),
        "heartbeats_per_probe": [hb for hb, _ in counts],
        "heartbeats_counted": per_member * len(members) if per_member else None,
        "probe_other_requests": other,
    }


def measure_case(broker, protocol, members_n, tag, args, round_index):
    """One cold start, the idle window, one join. Partitions: twice the members, so that every
    member of the group and of the group plus one holds at least one."""
    bootstrap, pid = broker.bootstrap, broker.proc.pid
    topic = group = f"bench-{tag}-{members_n}-r{round_index}"
    partitions = 2 * members_n
    out = {"members": members_n, "partitions": partitions, "protocol": protocol, "case": tag}
    # The idle broker before the topic exists: creating it is work the window must not see.
    out["idle_broker_cpu_s"], out["idle_broker_cpu_s_by_thread"] = idle_cpu(pid, args.cpu_window_s)
    out["idle_broker_window_s"] = args.cpu_window_s
    create_topic(bootstrap, topic, partitions)
    members = [Member(bootstrap, group, topic, protocol, probe=i < args.probes) for i in range(members_n)]
    extra = None
    try:
        if not wait_events([m.ready for m in members], 120):
            out["error"] = "members not ready: " + "; ".join({m.error for m in members if m.error} or {"timeout"})
            return out
        cpu0 = client_cpu_seconds()
        t0 = time.monotonic()
        for m in members:
            m.subscribe()
        out["cold"] = wait_stable(members, partitions, t0, args.settle_s, args.timeout_s)
        out["cold"]["client_cpu_s"] = client_cpu_seconds() - cpu0
        if out["cold"]["stable_s"] is None:
            return out
        out["cpu"] = group_cpu(pid, members, members[:args.probes], args.cpu_window_s)
        c = out["cpu"]
        interval_s = CONSUMER_BROKER_HEARTBEAT_S if protocol == "consumer" else CLASSIC_CLIENT_HEARTBEAT_S
        c["heartbeats_at_the_interval"] = members_n * c["window_s"] / interval_s
        c["idle_broker_cpu_s_same_window"] = out["idle_broker_cpu_s"] * c["window_s"] / args.cpu_window_s
        c["heartbeats_per_s"] = c["heartbeats_counted"] / c["window_s"] if c["heartbeats_counted"] else None
        scale = c["window_s"] / args.cpu_window_s
        c["request_threads_cpu_s"] = request_thread_cpu(c["broker_cpu_s_by_thread"], broker.name)
        c["idle_request_threads_cpu_s_same_window"] = scale * request_thread_cpu(
            out["idle_broker_cpu_s_by_thread"], broker.name)
        if c["heartbeats_counted"]:
            hb = c["heartbeats_counted"]
            c["cpu_us_per_heartbeat"] = c["broker_cpu_s"] / hb * 1e6
            c["cpu_us_per_heartbeat_net_of_idle"] = (c["broker_cpu_s"] - c["idle_broker_cpu_s_same_window"]) / hb * 1e6
            c["request_threads_cpu_us_per_heartbeat_net_of_idle"] = (
                (c["request_threads_cpu_s"] - c["idle_request_threads_cpu_s_same_window"]) / hb * 1e6)
        extra = Member(bootstrap, group, topic, protocol)
        if not wait_events([extra.ready], 60):
            out["error"] = f"joining member not ready: {extra.error}"
            return out
        # The members' heartbeats are in step (they all joined in the same rebalance), and a
        # classic join waits for each member's next heartbeat: a join at a random moment of the
        # heartbeat interval, not at the same moment of every run.
        out["join_phase_wait_s"] = random.uniform(0, interval_s)
        time.sleep(out["join_phase_wait_s"])
        cpu0 = client_cpu_seconds()
        t1 = time.monotonic()
        extra.subscribe()
        out["join"] = wait_stable(members + [extra], partitions, t1, args.settle_s, args.timeout_s)
        out["join"]["client_cpu_s"] = client_cpu_seconds() - cpu0
        return out
    finally:
        everyone = members + ([extra] if extra else [])
        errors = sorted({m.error for m in everyone if m.error} | {e for m in everyone for e in m.poll_errors})
        if errors:
            out["client_errors"] = errors
        out["members_not_closed"] = stop_all(everyone)


def broker_starts(args):
    """(broker properties, [(protocol, case tag)]) per broker start: the consumer protocol runs
    beside classic at Kafka's default delay; classic at delay 0 needs a start of its own (the
    delay is a static broker setting). Only a start that runs the consumer protocol names it in
    group.coordinator.rebalance.protocols, so classic runs need no broker that serves it."""
    starts = []
    first = []
    if "consumer" in args.protocols:
        first.append(("consumer", "consumer"))
    if "classic" in args.protocols and 3000 in args.classic_delays_ms:
        first.append(("classic", "classic-delay3000"))
    if first:
        consumer = CONSUMER_PROTOCOL_PROPERTIES if "consumer" in args.protocols else {}
        starts.append(({**consumer, "group.initial.rebalance.delay.ms": "3000"}, first))
    for delay in args.classic_delays_ms:
        if "classic" in args.protocols and delay != 3000:
            starts.append(({"group.initial.rebalance.delay.ms": str(delay)}, [("classic", f"classic-delay{delay}")]))
    return starts


def measure_broker(make_broker, args):
    out = {"cases": [], "broker_starts": []}
    for i, (props, cases) in enumerate(broker_starts(args)):
        broker = make_broker()
        out["broker_starts"].append(props)
        try:
            broker.start({"num.partitions": "1", **props})
        except Exception as e:  # e.g. a broker that refuses a setting: the other starts still run
            out.setdefault("errors", []).append(f"start with {props}: {e}")
            broker.stop()
            continue
        out["version"] = broker.version
        try:
            commits = warm_up_and_commits(broker.bootstrap, args.commits if i == 0 else 0)
            if i == 0:
                out["commits_per_s"] = commits
            for n in args.members:
                for protocol, tag in cases:
                    for r in range(args.repeat):
                        print(f"[{broker.name}] {tag}, {n} members, round {r + 1}", file=sys.stderr, flush=True)
                        try:
                            case = measure_case(broker, protocol, n, tag, args, r)
                        except Exception as e:
                            case = {"members": n, "protocol": protocol, "case": tag, "error": repr(e)}
                        case["round"] = r + 1
                        case["broker_alive"] = broker.alive()
                        print(json.dumps(case), file=sys.stderr, flush=True)
                        out["cases"].append(case)
                        if not broker.alive():
                            out["error"] = f"broker exited; log tail:\n{broker.tail()}"
                            return out
        finally:
            broker.stop()
    return out


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shale-bin", default=str(ROOT / "target" / "release" / "shale"))
    ap.add_argument("--kafka-version", default="4.4.0")
    ap.add_argument("--only", choices=["kafka", "shale"])
    ap.add_argument("--members", type=int_list, default=[10, 50, 200])
    ap.add_argument("--protocols", type=lambda t: t.split(","), default=["consumer", "classic"])
    ap.add_argument("--classic-delays-ms", type=int_list, default=[3000, 0],
                    help="group.initial.rebalance.delay.ms values for the classic runs")
    ap.add_argument("--cpu-window-s", type=float, default=30.0)
    ap.add_argument("--settle-s", type=float, default=12.0,
                    help="how long a stable assignment must hold unchanged to count")
    ap.add_argument("--timeout-s", type=float, default=300.0)
    ap.add_argument("--probes", type=int, default=3, help="members whose request counters are read")
    ap.add_argument("--commits", type=int, default=COMMITS)
    ap.add_argument("--repeat", type=int, default=1, help="rounds per case; the table gives the median")
    ap.add_argument("--render", nargs="+", metavar="JSON", help="print the table of earlier runs")
    args = ap.parse_args()
    if args.render:
        results = {}
        for path in args.render:
            results.update({k: v for k, v in json.loads(Path(path).read_text()).items() if k in ("shale", "kafka")})
        print(table(results))
        return
    for p in args.protocols:
        if p not in ("consumer", "classic"):
            ap.error(f"unknown protocol {p!r}: consumer or classic")
    logs = Path(tempfile.mkdtemp(prefix="bench-groups-"))
    results = {"settings": {k: v for k, v in vars(args).items() if k != "render"},
               "consumer_protocol_properties": CONSUMER_PROTOCOL_PROPERTIES, "logs": str(logs)}
    if args.only != "kafka":
        results["shale"] = measure_broker(lambda: ShaleBroker(logs / "shale.log", Path(args.shale_bin)), args)
    if args.only != "shale":
        results["kafka"] = measure_broker(
            lambda: KafkaBroker(logs / "kafka.log", KAFKA_LIB, args.kafka_version), args)
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    out_path = out_dir / f"groups-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out_path.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    print(f"\nresults: {out_path}\n")
    print(table(results))
    failures = [f"{b}: {e}" for b in ("shale", "kafka") for e in results.get(b, {}).get("errors", [])]
    failures += [f"{b} {c['case']} {c['members']} members: {c.get('error') or 'no stable assignment'}"
                 for b in ("shale", "kafka") for c in results.get(b, {}).get("cases", [])
                 if c.get("error") or c.get("cold", {}).get("stable_s") is None
                 or c.get("join", {}).get("stable_s") is None]
    for f in failures:
        print(f"FAILED {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
