#!/usr/bin/env python3
"""KIP-951 leader hints, checked on a three-node Shale cluster and on a three-node Apache Kafka
cluster, one after the other (bench/replication.py's clusters): the answers of both brokers
must be the same, field by field.

On each cluster a one-partition topic is created on all three nodes (replication factor 3,
min.insync.replicas=2), led by a node that is not the active controller, and a second one on
that leader and one follower only. Raw requests, encoded from Kafka's message specs
(bench/kafkawire.py), then go to one node or another; what each must answer is what Apache
Kafka 4.4 answers:

- Produce v11 and v10 sent to a follower: NOT_LEADER_OR_FOLLOWER, with `current_leader` = the
  partition's leader and leader epoch, and `node_endpoints` listing exactly that leader's
  host and port; Produce v9 sent there: the same error and no tagged field at all.
- Fetch v16 and v15 (by topic id) sent to a follower: a consumer's fetch, which Kafka serves
  from the follower (KIP-392, for every Fetch from v11): no error and no hint.
- Fetch v16 sent to the node that holds no replica of the second topic: NOT_LEADER_OR_FOLLOWER
  with the hint; Fetch v15 there the error alone; Produce v11 there the hint.
- Fetch v16 sent to the leader at its epoch: no error and no hint (the control).
- The leader is then stopped with SIGTERM (a controlled shutdown); once a new leader shows in
  Metadata, a Fetch v16 sent to it with the old epoch answers FENCED_LEADER_EPOCH with the new
  leader and epoch and its endpoint (Fetch v15 the same error without them), and a Produce v11
  sent to the third node names the new leader.

One line per check and broker, PASS or FAIL with what was answered; the exit status is 1 when
any check failed (or a cluster could not be set up). Every answer lands in
bench/results/leader-hints-<timestamp>.json, the nodes' logs beside it.

    compat-tests/.venv/bin/python bench/leader_hints.py --shale-bin target/release/shale \\
        [--only shale|kafka]
"""

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import kafkawire as kw

ROOT = Path(__file__).resolve().parent.parent
TOPIC = "leader-hints"
TOPIC_RF2 = "leader-hints-rf2"  # on the leader and one follower: the third node hosts no replica
NOT_LEADER, FENCED = 6, 74
ELECTION_TIMEOUT_S = 60


# ---------------------------------------------------------------------------------------------
# What an answer said, and what Kafka's answer says


def produce_summary(answer):
    """The fields a leader hint is made of, from a decoded Produce answer."""
    p = answer["topics"][0]["partitions"][0]
    return _summary(p, answer)


def fetch_summary(answer):
    p = answer["topics"][0]["partitions"][0]
    summary = _summary(p, answer)
    summary["top_error"] = answer["error_code"]
    return summary


def _summary(p, answer):
    cl = p["current_leader"]
    endpoints = answer["node_endpoints"]
    return {
        "error": p["error_code"],
        "current_leader": None if cl is None else [cl["leader_id"], cl["leader_epoch"]],
        "node_endpoints": None if endpoints is None else [[e["node_id"], e["host"], e["port"], e["rack"]]
                                                           for e in endpoints],
        "partition_tags": sorted(p["tags"]),
        "top_tags": sorted(answer["tags"]),
    }


def hinted(error, leader, epoch, host, port, fetch=False):
    """Kafka's answer that sends the client to `leader`: the partition's tag holds the current
    leader, the top-level tag 0 the leader's endpoint (no rack: none is configured)."""
    expected = {"error": error, "current_leader": [leader, epoch], "node_endpoints": [[leader, host, port, None]],
                "partition_tags": [1 if fetch else 0], "top_tags": [0]}
    if fetch:
        expected["top_error"] = 0
    return expected


def unhinted(error, fetch=False):
    """An answer with no tagged field anywhere (before KIP-951's versions, or no error)."""
    expected = {"error": error, "current_leader": None, "node_endpoints": None, "partition_tags": [], "top_tags": []}
    if fetch:
        expected["top_error"] = 0
    return expected


def differences(expected, answered):
    """`field: expected X, answered Y` for every field that differs."""
    return [f"{key}: expected {_show(key, expected[key])}, answered {_show(key, answered.get(key))}"
            for key in expected if answered.get(key) != expected[key]]


def _show(key, value):
    if key in ("error", "top_error") and isinstance(value, int):
        return f"{kw.error_name(value)} ({value})"
    return json.dumps(value)


def describe(summary):
    """A short human line of what an answer said."""
    parts = [kw.error_name(summary["error"])]
    if summary.get("current_leader") is not None:
        parts.append("current_leader (id %d, epoch %d)" % tuple(summary["current_leader"]))
    if summary.get("node_endpoints") is not None:
        parts.append("node_endpoints [" + ", ".join(f"{e[0]} {e[1]}:{e[2]}" + (f" rack {e[3]}" if e[3] else "")
                                                   for e in summary["node_endpoints"]) + "]")
    if summary.get("current_leader") is None and summary.get("node_endpoints") is None:
        parts.append("no hint")
    tags = summary.get("partition_tags", []) + summary.get("top_tags", [])
    if not tags:
        parts.append("no tagged fields")
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# Requests


def produce(port, version, topic=TOPIC):
    batch = kw.record_batch([b"leader-hints"], int(time.time() * 1000))
    payload = kw.call(port, kw.PRODUCE, version, kw.produce_request(version, topic, 0, batch, acks=-1))
    return produce_summary(kw.decode_produce_response(version, payload))


def fetch(port, version, topic_id, epoch):
    body = kw.fetch_request(version, 0, topic_id=topic_id, current_leader_epoch=epoch)
    return fetch_summary(kw.decode_fetch_response(version, kw.call(port, kw.FETCH, version, body)))


class Checks:
    """Runs checks on one cluster and prints a line for each."""

    def __init__(self, broker):
        self.broker = broker
        self.rows = []
        self.roles = {"ids": {}, "epochs": {}, "ports": {}}

    def check(self, key, name, expected, ask):
        """`key` names the check the same way on both brokers; `name` with this cluster's ids."""
        try:
            answered = ask()
        except Exception as err:  # a refused connection or an answer that does not decode
            answered = {"exception": f"{type(err).__name__}: {err}"}
        diff = differences(expected, answered) if "exception" not in answered else [answered["exception"]]
        row = {"broker": self.broker, "key": key, "check": name, "ok": not diff, "expected": expected,
               "answered": answered, "normalized": normalized(answered, self.roles), "differences": diff}
        self.rows.append(row)
        line = f"{'PASS' if not diff else 'FAIL'}  {self.broker:6} {name}: "
        line += describe(answered) if "exception" not in answered else answered["exception"]
        if diff:
            line += "\n" + "\n".join(f"        {d}" for d in diff)
        print(line, flush=True)
        return row


def wait_leader(cluster, via, old_leader, old_epoch):
    """(leader, epoch) once every node in `via` names the same leader, other than
    `old_leader`, at an epoch past `old_epoch`."""
    deadline = time.monotonic() + ELECTION_TIMEOUT_S
    while time.monotonic() < deadline:
        seen = set()
        for node_id in via:
            try:
                state = kw.partition_state(cluster.nodes[node_id].client_port, TOPIC)
            except OSError:
                state = None
            seen.add(state[:2] if state else None)
        if len(seen) == 1:
            (state,) = seen
            if state and state[0] not in (-1, old_leader) and state[1] > old_epoch:
                return state
        time.sleep(0.1)
    raise RuntimeError(f"no new leader agreed on by nodes {via} within {ELECTION_TIMEOUT_S}s")


def run_checks(cluster, replication):
    checks = Checks(cluster.name)
    controller = cluster.controller()
    if controller is None:
        raise replication.BenchError("no active controller known")
    leader = next(i for i in sorted(cluster.nodes) if i != controller)
    followers = [i for i in sorted(cluster.nodes) if i != leader]
    replication.create_topic(cluster.bootstrap, TOPIC, [leader] + followers, 2)
    follower, outsider = followers
    replication.create_topic(cluster.bootstrap, TOPIC_RF2, [leader, follower], 1)
    state = kw.partition_state(cluster.nodes[follower].client_port, TOPIC)
    state_rf2 = kw.partition_state(cluster.nodes[outsider].client_port, TOPIC_RF2)
    if state is None or state[0] != leader or state_rf2 is None or state_rf2[0] != leader:
        raise replication.BenchError(f"partition states {state}, {state_rf2}: leader {leader} expected")
    _, epoch, _, topic_id = state
    _, epoch_rf2, _, topic_id_rf2 = state_rf2
    fport = cluster.nodes[follower].client_port
    oport = cluster.nodes[outsider].client_port
    lport = cluster.nodes[leader].client_port
    host = "127.0.0.1"
    print(f"       {cluster.name:6} topic {TOPIC} ({topic_id}) on nodes {[leader] + followers}, {TOPIC_RF2} "
          f"({topic_id_rf2}) on nodes {[leader, follower]}: leader {leader} (port {lport}), epochs {epoch} and "
          f"{epoch_rf2}; active controller {controller}", flush=True)

    checks.roles = {"ids": {leader: "leader", follower: "follower", outsider: "other node"},
                    "epochs": {epoch: "epoch"}, "ports": {lport: "leader port", fport: "follower port"}}
    for version in (11, 10):
        checks.check(f"Produce v{version} to a follower", f"Produce v{version} to follower {follower}",
                     hinted(NOT_LEADER, leader, epoch, host, lport), lambda v=version: produce(fport, v))
    checks.check("Produce v9 to a follower", f"Produce v9 to follower {follower}", unhinted(NOT_LEADER),
                 lambda: produce(fport, 9))
    # A consumer's Fetch (v11+, so with client metadata) is served by a follower in Kafka
    # (KIP-392: FetchParams.fetchOnlyLeader() is false for it), whatever replica.selector.class
    # says: no error, hence no hint.
    checks.check("Fetch v16 to a follower (a consumer's)", f"Fetch v16 to follower {follower}",
                 unhinted(0, fetch=True), lambda: fetch(fport, 16, topic_id, -1))
    checks.check("Fetch v15 to a follower (a consumer's)", f"Fetch v15 to follower {follower}",
                 unhinted(0, fetch=True), lambda: fetch(fport, 15, topic_id, -1))
    # A node with no replica of the partition: NOT_LEADER_OR_FOLLOWER, hinted from v16.
    checks.roles["epochs"] = {epoch_rf2: "epoch"}
    checks.roles["ports"] = {lport: "leader port", oport: "other node port"}
    checks.check("Fetch v16 to a node without a replica", f"Fetch v16 ({TOPIC_RF2}) to node {outsider}",
                 hinted(NOT_LEADER, leader, epoch_rf2, host, lport, fetch=True),
                 lambda: fetch(oport, 16, topic_id_rf2, -1))
    checks.check("Fetch v15 to a node without a replica", f"Fetch v15 ({TOPIC_RF2}) to node {outsider}",
                 unhinted(NOT_LEADER, fetch=True), lambda: fetch(oport, 15, topic_id_rf2, -1))
    checks.check("Produce v11 to a node without a replica", f"Produce v11 ({TOPIC_RF2}) to node {outsider}",
                 hinted(NOT_LEADER, leader, epoch_rf2, host, lport), lambda: produce(oport, 11, TOPIC_RF2))
    checks.roles["epochs"] = {epoch: "epoch"}
    checks.roles["ports"] = {lport: "leader port", fport: "follower port"}
    checks.check("Fetch v16 to the leader at its epoch (control)", f"Fetch v16 to leader {leader} at epoch {epoch} "
                 "(control)", unhinted(0, fetch=True), lambda: fetch(lport, 16, topic_id, epoch))

    stopped_at = time.monotonic()
    cluster.terminate(cluster.nodes[leader], wait=False)
    new_leader, new_epoch = wait_leader(cluster, followers, leader, epoch)
    print(f"       {cluster.name:6} SIGTERM to leader {leader}: node {new_leader} leads at epoch {new_epoch} after "
          f"{(time.monotonic() - stopped_at) * 1000:.0f} ms", flush=True)
    nport = cluster.nodes[new_leader].client_port
    other = next(i for i in followers if i != new_leader)
    checks.roles = {"ids": {new_leader: "new leader", other: "other survivor", leader: "stopped leader"},
                    "epochs": {new_epoch: "new epoch", epoch: "old epoch"},
                    "ports": {nport: "new leader port", lport: "stopped leader port"}}
    checks.check("Fetch v16 to the new leader at the old epoch", f"Fetch v16 to new leader {new_leader} at old "
                 f"epoch {epoch}", hinted(FENCED, new_leader, new_epoch, host, nport, fetch=True),
                 lambda: fetch(nport, 16, topic_id, epoch))
    checks.check("Fetch v15 to the new leader at the old epoch", f"Fetch v15 to new leader {new_leader} at old "
                 f"epoch {epoch}", unhinted(FENCED, fetch=True), lambda: fetch(nport, 15, topic_id, epoch))
    checks.check("Produce v11 to the other survivor", f"Produce v11 to node {other} after the change",
                 hinted(NOT_LEADER, new_leader, new_epoch, host, nport),
                 lambda: produce(cluster.nodes[other].client_port, 11))
    return checks.rows


def normalized(summary, roles):
    """The answer with node ids, epochs and ports replaced by their role in the check (the
    leader, the old epoch, ...), so that answers of two clusters compare."""
    if "exception" in summary:
        return summary
    out = dict(summary)
    ids, epochs, ports = roles["ids"], roles["epochs"], roles["ports"]
    if summary.get("current_leader") is not None:
        node, epoch = summary["current_leader"]
        out["current_leader"] = [ids.get(node, node), epochs.get(epoch, epoch)]
    if summary.get("node_endpoints") is not None:
        out["node_endpoints"] = [[ids.get(e[0], e[0]), e[1], ports.get(e[2], e[2]), e[3]]
                                 for e in summary["node_endpoints"]]
    return out


def compare(rows):
    """(check, Shale's answer, Kafka's answer) for every check both brokers answered in a
    different shape once ids, epochs and ports are read as roles."""
    by_check = {}
    for row in rows:
        by_check.setdefault(row["key"], {})[row["broker"]] = row
    out = []
    for key, brokers in by_check.items():
        if {"shale", "kafka"} <= set(brokers) and brokers["shale"]["normalized"] != brokers["kafka"]["normalized"]:
            out.append((key, brokers["shale"], brokers["kafka"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shale-bin", default=str(ROOT / "target" / "release" / "shale"))
    ap.add_argument("--kafka-lib", default=str(ROOT / "compat-tests" / ".deps" / "kafka" / "lib"))
    ap.add_argument("--only", choices=["shale", "kafka"])
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    cfg = ap.parse_args()

    import replication  # confluent-kafka (the venv); the helpers above need only the standard library

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    cfg.results.mkdir(parents=True, exist_ok=True)
    logs = cfg.results / f"leader-hints-{stamp}-logs"
    logs.mkdir(parents=True)
    workroot = Path(tempfile.mkdtemp(prefix="leader-hints-"))
    rows, failures = [], []
    clusters = []
    if cfg.only != "kafka":
        clusters.append(lambda: replication.ShaleCluster(workroot, logs, cfg.shale_bin))
    if cfg.only != "shale":
        clusters.append(lambda: replication.KafkaCluster(workroot, logs, cfg.kafka_lib))
    try:
        for make in clusters:
            cluster = make()
            try:
                cluster.start()
                rows += run_checks(cluster, replication)
            except (replication.BenchError, RuntimeError, OSError, ValueError) as err:
                failures.append(f"{cluster.name}: {err}")
                print(f"FAIL  {cluster.name:6} set-up: {err}", flush=True)
            finally:
                cluster.stop()
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    failed = [r for r in rows if not r["ok"]]
    unlike = compare(rows)
    if {r["broker"] for r in rows} == {"shale", "kafka"}:
        print("\nShale beside Kafka (ids, epochs and ports read as their roles): "
              + ("the same answer to every check" if not unlike else f"{len(unlike)} check(s) answered differently"))
        for key, shale, kafka in unlike:
            print(f"  {key}:\n    shale: {json.dumps(shale['answered'])}\n    kafka: {json.dumps(kafka['answered'])}")
    out = cfg.results / f"leader-hints-{stamp}.json"
    out.write_text(json.dumps({"timestamp_utc": stamp, "checks": rows, "failures": failures,
                               "differences_shale_kafka": [k for k, _, _ in unlike]}, indent=2) + "\n")
    print(f"\n{len(rows) - len(failed)} of {len(rows)} checks passed"
          + (f", {len(failures)} cluster(s) not set up" if failures else "") + f"\nResults: {out}\nLogs:    {logs}")
    return 1 if failed or failures else 0


if __name__ == "__main__":
    sys.exit(main())
