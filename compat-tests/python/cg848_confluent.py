"""KIP-848 consumer group scenarios (group.protocol=consumer) for confluent-kafka (librdkafka).

Every member runs in this process and is polled from this thread, except the member of
cg848_session_expiry that is killed: a child process (scenario cg848_child) killed with SIGKILL.
The same scenarios as java/Cg848.java; librdkafka's admin API shows no epochs and no member type.
"""

import os
import signal
import subprocess
import sys
import threading
import time

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka import ConsumerGroupType

from common import Failure, check, check_eq, log

# The broker settings the harness gives both brokers (harness/brokers.py COMMON_PROPERTIES).
SESSION_TIMEOUT_MS = 8000
HEARTBEAT_INTERVAL_MS = 500

CLIENT_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "confluent_client.py")


class Owners:
    """Which member owns each partition, as the members' rebalance callbacks report it: a
    partition assigned to one member while another still owns it is a violation."""

    def __init__(self):
        self.owner = {}
        self.violations = []

    def acquire(self, member, parts):
        for p in parts:
            prev = self.owner.get(p)
            if prev is not None and prev != member:
                self.violations.append(f"{p} assigned to {member} while {prev} owned it")
            self.owner[p] = member

    def release(self, member, parts):
        for p in parts:
            if self.owner.get(p) == member:
                del self.owner[p]


def key(tp):
    return (tp.topic, tp.partition)


class Member:
    """A group member: its rebalance events (non-empty sets only), the records it consumed, and
    a commit of the revoked partitions' positions before they move."""

    def __init__(self, ctx, consumer_fn, name, owners, **cfg):
        self.ctx, self.name, self.owners = ctx, name, owners
        self.events, self.records = [], []
        self.closed = False
        self.commit_on_revoke = True
        conf = {"group.protocol": "consumer"}
        conf.update(cfg)
        self.cons = consumer_fn(ctx, ctx.group(), **{k.replace(".", "_"): v for k, v in conf.items()})

    def subscribe(self, *topics):
        self.cons.subscribe(list(topics), on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lost)
        return self

    def show(self, parts):
        topics = {p.topic for p in parts}
        if topics == {self.ctx.topic("t")}:
            return str(sorted(p.partition for p in parts))
        return str(sorted(f"{p.topic[len(self.ctx.prefix) + 1:]}:{p.partition}" for p in parts))

    def _assign(self, _c, parts):
        if parts:
            self.events.append("assigned " + self.show(parts))
            self.owners.acquire(self.name, [key(p) for p in parts])

    def _revoke(self, c, parts):
        if parts:
            self.events.append("revoked " + self.show(parts))
            if self.commit_on_revoke:
                positions = [p for p in c.position(parts) if p.offset >= 0]
                if positions:
                    c.commit(offsets=positions, asynchronous=False)
            self.owners.release(self.name, [key(p) for p in parts])

    def _lost(self, _c, parts):
        if parts:
            self.events.append("lost " + self.show(parts))
            self.owners.release(self.name, [key(p) for p in parts])

    def poll(self):
        if self.closed:
            return
        msg = self.cons.poll(0.1)
        if msg is not None and msg.error() is None:
            self.records.append(msg)

    def owned(self):
        return sorted(tp.partition for tp in self.cons.assignment())

    def owned_keys(self):
        return sorted(key(tp) for tp in self.cons.assignment())

    def member_id(self):
        return self.cons.memberid()

    def close(self):
        if not self.closed:
            self.closed = True
            self.cons.close()


def wait_polling(members, timeout_s, what, cond):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
        if cond():
            return
    state = "; ".join(f"{m.name} owns {'(closed)' if m.closed else m.owned()} events {m.events}" for m in members)
    raise Failure(f"timed out after {timeout_s}s waiting for {what}; {state}")


def produce(ctx, producer_fn, topic, partitions, per_partition, start=0):
    prod = producer_fn(ctx)
    for p in range(partitions):
        for i in range(start, start + per_partition):
            prod.produce(topic, value=f"p{p}-{i}".encode(), partition=p)
    check_eq(prod.flush(30), 0, "unflushed records")


def describe(adm, ctx):
    group = ctx.group()
    return adm.describe_consumer_groups([group])[group].result(timeout=30)


def describe_when(adm, ctx, members, what, cond):
    deadline = time.monotonic() + 20
    d = None
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
        d = describe(adm, ctx)
        if cond(d):
            return d
    raise Failure(f"timed out waiting for the description to show {what}: {show_description(d)}")


def show_description(d):
    if d is None:
        return "None"
    members = [(m.member_id, m.group_instance_id, parts_of(m)) for m in d.members]
    return f"type={d.type} state={d.state} assignor={d.partition_assignor} members={members}"


def parts_of(m):
    return sorted(tp.partition for tp in m.assignment.topic_partitions)


def member_by_id(d, member_id):
    for m in d.members:
        if m.member_id == member_id:
            return m
    raise Failure(f"member {member_id} not in the description {show_description(d)}")


def consumed_total(members):
    return sum(len(m.records) for m in members)


def check_once(members, expected, what):
    counts = {}
    for m in members:
        for r in m.records:
            k = (r.topic(), r.partition(), r.offset())
            counts[k] = counts.get(k, 0) + 1
    check_eq(len(counts), expected, f"{what}: distinct records consumed")
    twice = {k: n for k, n in counts.items() if n != 1}
    check_eq(twice, {}, f"{what}: records consumed more than once")


def stable_with(n_members, sizes=None):
    """A description predicate: Stable, n members, and (when given) these assignment sizes."""
    def cond(d):
        if d.state != ConsumerGroupState.STABLE or len(d.members) != n_members:
            return False
        return sizes is None or sorted(len(m.assignment.topic_partitions) for m in d.members) == sorted(sizes)
    return cond


class Scenarios:
    def __init__(self, admin_fn, consumer_fn, producer_fn, create_topic):
        self.admin_fn, self.consumer_fn, self.producer_fn, self.create_topic = \
            admin_fn, consumer_fn, producer_fn, create_topic

    def member(self, ctx, name, owners, **cfg):
        return Member(ctx, self.consumer_fn, name, owners, **cfg)

    def join_consume(self, ctx):
        adm, t = self.admin_fn(ctx), ctx.topic("t")
        self.create_topic(adm, t, 3)
        produce(ctx, self.producer_fn, t, 3, 3)
        owners = Owners()
        a = self.member(ctx, "a", owners).subscribe(t)
        try:
            wait_polling([a], 30, "9 records", lambda: len(a.records) >= 9)
            check_eq(a.owned(), [0, 1, 2], "assignment")
            check_eq(a.events, ["assigned [0, 1, 2]"], "rebalance events")
            check_eq(len(a.records), 9, "records consumed")
            check_eq(sorted((r.partition(), r.offset(), r.value().decode()) for r in a.records),
                     [(p, i, f"p{p}-{i}") for p in range(3) for i in range(3)], "records (partition, offset, value)")
            d = describe_when(adm, ctx, [a], "Stable with the member's 3 partitions", stable_with(1, [3]))
            log("described:", show_description(d))
            check_eq(d.type, ConsumerGroupType.CONSUMER, "group type")
            check_eq(d.partition_assignor, "uniform", "assignor")
            m = d.members[0]
            check_eq(m.member_id, a.member_id(), "member id")
            check_eq(m.group_instance_id, None, "group instance id")
            check_eq(sorted(key(tp) for tp in m.assignment.topic_partitions), a.owned_keys(), "member assignment")
            check(m.target_assignment is not None, "a target assignment is described")
            check_eq(sorted(key(tp) for tp in m.target_assignment.topic_partitions), a.owned_keys(),
                     "member target assignment")
        finally:
            a.close()
        d = describe(adm, ctx)
        check_eq((d.type, d.state, len(d.members)), (ConsumerGroupType.CONSUMER, ConsumerGroupState.EMPTY, 0),
                 "type, state and members after close")

    def second_member(self, ctx):
        adm, t = self.admin_fn(ctx), ctx.topic("t")
        self.create_topic(adm, t, 3)
        produce(ctx, self.producer_fn, t, 3, 4)
        owners = Owners()
        a = self.member(ctx, "a", owners).subscribe(t)
        b = None
        try:
            wait_polling([a], 30, "a consumes 12", lambda: len(a.records) >= 12)
            a.cons.commit(asynchronous=False)
            a.events.clear()
            b = self.member(ctx, "b", owners).subscribe(t)
            ms = [a, b]
            wait_polling(ms, 30, "2/1 split", lambda: len(a.owned()) == 2 and len(b.owned()) == 1
                         and not set(a.owned()) & set(b.owned()))
            moved = b.owned()
            check_eq(a.events, [f"revoked {moved}"], "a's events: only the moved partition is revoked")
            check_eq(b.events, [f"assigned {moved}"], "b's events")
            check_eq(owners.violations, [], "partitions owned by two members at once")
            check_eq(a.owned(), sorted({0, 1, 2} - set(moved)), "a keeps the others")
            produce(ctx, self.producer_fn, t, 3, 4, start=4)
            wait_polling(ms, 30, "24 records", lambda: consumed_total(ms) >= 24)
            check_once(ms, 24, "records")
            check_eq(sorted((r.partition(), r.offset()) for r in b.records),
                     [(moved[0], i) for i in range(4, 8)], "b starts at the committed offset of its partition")
            for r in a.records:
                check(r.offset() < 4 or r.partition() not in moved, f"a consumed moved {r.partition()}:{r.offset()}")
            d = describe_when(adm, ctx, ms, "Stable with 2 members holding 2 and 1", stable_with(2, [2, 1]))
            check_eq(parts_of(member_by_id(d, a.member_id())), a.owned(), "a's described assignment")
            check_eq(parts_of(member_by_id(d, b.member_id())), b.owned(), "b's described assignment")
        finally:
            if b is not None:
                b.close()
            a.close()

    def two_members(self, adm, ctx, a, b):
        """a owns all 3 partitions of t, then b joins; both polled until the 2/1 split."""
        wait_polling([a], 30, "a owns 3", lambda: len(a.owned()) == 3)
        b.subscribe(ctx.topic("t"))
        wait_polling([a, b], 30, "2/1 split", lambda: len(a.owned()) == 2 and len(b.owned()) == 1
                     and not set(a.owned()) & set(b.owned()))
        describe_when(adm, ctx, [a, b], "2 members holding 2 and 1", stable_with(2, [2, 1]))

    def leave(self, ctx):
        adm, t = self.admin_fn(ctx), ctx.topic("t")
        self.create_topic(adm, t, 3)
        owners = Owners()
        a = self.member(ctx, "a", owners).subscribe(t)
        b = self.member(ctx, "b", owners)
        try:
            self.two_members(adm, ctx, a, b)
            b_owned = b.owned()
            a.events.clear()
            t0 = time.monotonic()
            b.close()
            wait_polling([a], 30, "a owns 3 after b left", lambda: len(a.owned()) == 3)
            took_ms = (time.monotonic() - t0) * 1000
            log(f"moved {took_ms:.0f} ms after b closed")
            check(took_ms < SESSION_TIMEOUT_MS, f"a leave moves the partitions at once, not after the session: {took_ms:.0f} ms")
            check_eq(a.events, [f"assigned {b_owned}"], "a's events: b's partitions assigned, nothing revoked")
            check_eq(owners.violations, [], "partitions owned by two members at once")
            d = describe_when(adm, ctx, [a], "one member with 3 partitions", stable_with(1, [3]))
            check_eq(d.members[0].member_id, a.member_id(), "remaining member")
            produce(ctx, self.producer_fn, t, 3, 1)
            wait_polling([a], 30, "3 records", lambda: len(a.records) >= 3)
            check_once([a], 3, "records after the leave")
        finally:
            b.close()
            a.close()

    def session_expiry(self, ctx):
        adm, t = self.admin_fn(ctx), ctx.topic("t")
        self.create_topic(adm, t, 3)
        owners = Owners()
        a = self.member(ctx, "a", owners).subscribe(t)
        child = None
        try:
            wait_polling([a], 30, "a owns 3", lambda: len(a.owned()) == 3)
            child = subprocess.Popen([sys.executable, CLIENT_SCRIPT, "--bootstrap", ctx.bootstrap, "--scenario",
                                      "cg848_child", "--prefix", ctx.prefix],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

            def echo():
                for line in child.stdout:
                    log("child:", line.decode(errors="replace").rstrip())
            threading.Thread(target=echo, daemon=True).start()
            wait_polling([a], 40, "2/1 split with the child", lambda: len(a.owned()) == 2)
            child_owned = sorted({0, 1, 2} - set(a.owned()))
            before = describe_when(adm, ctx, [a], "2 members holding 2 and 1", stable_with(2, [2, 1]))
            child_id = next(m.member_id for m in before.members if m.member_id != a.member_id())
            check_eq(parts_of(member_by_id(before, child_id)), child_owned, "the child's described assignment")
            a.events.clear()
            os.kill(child.pid, signal.SIGKILL)  # no leave heartbeat
            t0 = time.monotonic()
            child.wait(10)
            right = describe(adm, ctx)
            check_eq(len(right.members), 2, "members right after the kill (the dead one until its session expires)")
            check_eq(parts_of(member_by_id(right, child_id)), child_owned,
                     "the killed member keeps its assignment until expiry")
            wait_polling([a], 40, "a owns 3 after the child's session expired", lambda: len(a.owned()) == 3)
            took_ms = (time.monotonic() - t0) * 1000
            log(f"moved {took_ms:.0f} ms after the kill")
            # The session runs from the child's last heartbeat, at most one interval before the kill.
            check(took_ms >= SESSION_TIMEOUT_MS - HEARTBEAT_INTERVAL_MS - 500,
                  f"moved before group.consumer.session.timeout.ms: {took_ms:.0f} ms")
            check_eq(a.events, [f"assigned {child_owned}"], "a's events: the dead member's partitions assigned")
            d = describe_when(adm, ctx, [a], "one member with 3 partitions", stable_with(1, [3]))
            check_eq(d.members[0].member_id, a.member_id(), "remaining member")
        finally:
            if child is not None and child.poll() is None:
                os.kill(child.pid, signal.SIGKILL)
                child.wait(10)
            a.close()

    def child(self, ctx):
        """The member cg848_session_expiry kills: joins the group and polls until killed (60 s at most)."""
        m = self.member(ctx, "child", Owners()).subscribe(ctx.topic("t"))
        seen = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m.poll()
            if len(m.events) != seen:
                seen = len(m.events)
                log("OWNED", m.owned())
        m.close()

    def static_restart(self, ctx):
        adm, t = self.admin_fn(ctx), ctx.topic("t")
        self.create_topic(adm, t, 3)
        owners = Owners()
        b = self.member(ctx, "b", owners, **{"group.instance.id": "member-b"})
        a = self.member(ctx, "a", owners, **{"group.instance.id": "member-a"}).subscribe(t)
        a2 = None
        try:
            self.two_members(adm, ctx, a, b)
            a_before, old_id = a.owned(), a.member_id()
            a.close()
            b_before = b.owned()
            b.events.clear()
            # A static member that closes leaves with epoch -2: the coordinator keeps it, and its
            # partitions, for the session timeout.
            during = describe(adm, ctx)
            log("after a's static leave:", show_description(during))
            check_eq(len(during.members), 2, "members while member-a is away")
            away = [m for m in during.members if m.group_instance_id == "member-a"]
            check_eq(len(away), 1, "member-a still described")
            check_eq(parts_of(away[0]), a_before, "member-a's partitions kept while it is away")
            t0 = time.monotonic()
            a2 = self.member(ctx, "a2", owners, **{"group.instance.id": "member-a"}).subscribe(t)
            wait_polling([a2, b], 30, "restarted member-a assigned", lambda: a2.owned())
            took_ms = (time.monotonic() - t0) * 1000
            check(took_ms < SESSION_TIMEOUT_MS, f"rejoined within the session: {took_ms:.0f} ms")
            check_eq(a2.owned(), a_before, "member-a gets the same partitions")
            check_eq(a2.events, [f"assigned {a_before}"], "member-a's events")
            check_eq(b.owned(), b_before, "member-b undisturbed")
            check_eq(b.events, [], "member-b's events")
            d = describe_when(adm, ctx, [a2, b], "2 members, member-a back",
                              lambda x: stable_with(2)(x) and any(m.member_id == a2.member_id() for m in x.members))
            m = member_by_id(d, a2.member_id())
            check_eq(m.group_instance_id, "member-a", "instance id of the restarted member")
            check_eq(parts_of(m), a_before, "described assignment of member-a")
            check(a2.member_id() != old_id, "the restarted member has a new member id")
            check_eq(owners.violations, [], "partitions owned by two members at once")
        finally:
            for m in (a2, b, a):
                if m is not None:
                    m.close()

    def regex(self, ctx):
        adm = self.admin_fn(ctx)
        ta, tb, other = ctx.topic("re-a"), ctx.topic("re-b"), ctx.topic("other")
        self.create_topic(adm, ta, 2)
        self.create_topic(adm, other, 1)
        produce(ctx, self.producer_fn, ta, 2, 1)
        produce(ctx, self.producer_fn, other, 1, 1)
        owners = Owners()
        a = self.member(ctx, "a", owners).subscribe(f"^{ctx.prefix}-re-.*")
        try:
            wait_polling([a], 30, "re-a's 2 records", lambda: len(a.records) >= 2)
            check_eq(a.owned_keys(), [(ta, 0), (ta, 1)], "assignment before re-b exists")
            self.create_topic(adm, tb, 1)
            produce(ctx, self.producer_fn, tb, 1, 1)
            wait_polling([a], 40, "re-b picked up and its record consumed", lambda: len(a.records) >= 3)
            check_eq(a.owned_keys(), [(ta, 0), (ta, 1), (tb, 0)], "assignment once re-b exists")
            check_eq(a.events, ["assigned ['re-a:0', 're-a:1']", "assigned ['re-b:0']"], "rebalance events")
            check_once([a], 3, "records")
            check(all(r.topic() != other for r in a.records), "consumed the unmatched topic")
            d = describe_when(adm, ctx, [a], "the member with re-a and re-b", stable_with(1, [3]))
            check_eq(sorted(key(tp) for tp in d.members[0].assignment.topic_partitions), a.owned_keys(),
                     "described assignment")
        finally:
            a.close()

    def commit_resume(self, ctx):
        adm, t = self.admin_fn(ctx), ctx.topic("t")
        self.create_topic(adm, t, 3)
        produce(ctx, self.producer_fn, t, 3, 5)
        owners = Owners()
        commit = [TopicPartition(t, p, 3, metadata=f"m{p}") for p in range(3)]
        want = {p: (3, f"m{p}") for p in range(3)}
        a = self.member(ctx, "a", owners).subscribe(t)
        a.commit_on_revoke = False  # only the explicit commit below
        try:
            wait_polling([a], 30, "15 records", lambda: len(a.records) >= 15)
            a.cons.commit(offsets=commit, asynchronous=False)
            got = a.cons.committed([TopicPartition(t, p) for p in range(3)], timeout=10)
            check_eq({tp.partition: (tp.offset, tp.metadata) for tp in got}, want, "committed offsets seen by the member")
        finally:
            a.close()
        group = ctx.group()
        listed = adm.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=30)
        check_eq({tp.partition: (tp.offset, tp.metadata) for tp in listed.topic_partitions}, want,
                 "committed offsets seen by the admin client")
        d = describe(adm, ctx)
        check_eq((d.type, d.state), (ConsumerGroupType.CONSUMER, ConsumerGroupState.EMPTY), "type and state after close")
        b = self.member(ctx, "b", owners).subscribe(t)
        try:
            wait_polling([b], 30, "6 records", lambda: len(b.records) >= 6)
            wait_polling([b], 30, "positions at the end", lambda: all(
                tp.offset == 5 for tp in b.cons.position([TopicPartition(t, p) for p in range(3)])))
            check_eq(sorted((r.partition(), r.offset(), r.value().decode()) for r in b.records),
                     [(p, i, f"p{p}-{i}") for p in range(3) for i in (3, 4)], "the new member resumes at the committed offsets")
            b.cons.commit(asynchronous=False)
        finally:
            b.close()
        listed = adm.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=30)
        check_eq({tp.partition: tp.offset for tp in listed.topic_partitions}, {0: 5, 1: 5, 2: 5}, "committed at the end")

    def mixed_migration(self, ctx):
        adm, t = self.admin_fn(ctx), ctx.topic("t")
        self.create_topic(adm, t, 4)
        produce(ctx, self.producer_fn, t, 4, 2)
        owners = Owners()
        k = self.member(ctx, "classic", owners, **{"group.protocol": "classic", "partition.assignment.strategy": "range",
                                                   "session.timeout.ms": 10000, "heartbeat.interval.ms": 500}).subscribe(t)
        n = None
        try:
            wait_polling([k], 30, "the classic member consumes 8", lambda: len(k.records) >= 8)
            d0 = describe(adm, ctx)
            check_eq((d0.type, d0.state), (ConsumerGroupType.CLASSIC, ConsumerGroupState.STABLE), "type and state before")
            k.cons.commit(asynchronous=False)
            n = self.member(ctx, "consumer", owners).subscribe(t)
            ms = [k, n]
            wait_polling(ms, 40, "2/2 split", lambda: len(k.owned()) == 2 and len(n.owned()) == 2
                         and not set(k.owned()) & set(n.owned()))
            d = describe_when(adm, ctx, ms, "consumer group, Stable, 2 members holding 2 each",
                              lambda x: x.type == ConsumerGroupType.CONSUMER and stable_with(2, [2, 2])(x))
            log("converted:", show_description(d))
            check_eq(parts_of(member_by_id(d, k.member_id())), k.owned(), "classic member's described assignment")
            check_eq(parts_of(member_by_id(d, n.member_id())), n.owned(), "consumer member's described assignment")
            check_eq(sorted(k.owned() + n.owned()), [0, 1, 2, 3], "every partition assigned once")
            check_eq(owners.violations, [], "partitions owned by two members at once")
            produce(ctx, self.producer_fn, t, 4, 2, start=2)
            wait_polling(ms, 30, "16 records", lambda: consumed_total(ms) >= 16)
            check_once(ms, 16, "records")
            check_eq(sorted((r.partition(), r.offset()) for r in n.records),
                     [(p, i) for p in n.owned() for i in (2, 3)], "the consumer member reads only new records of its partitions")
            n.close()
            # The last consumer-protocol member left: the group goes back to classic.
            wait_polling([k], 30, "the classic member owns 4 again", lambda: len(k.owned()) == 4)
            back = describe(adm, ctx)
            log("after the consumer member left:", show_description(back))
            check_eq((back.type, len(back.members)), (ConsumerGroupType.CLASSIC, 1), "type and members once it left")
            check_eq(owners.violations, [], "partitions owned by two members at once")
        finally:
            if n is not None:
                n.close()
            k.close()

    def table(self):
        return {
            "cg848_join_consume": self.join_consume,
            "cg848_second_member": self.second_member,
            "cg848_leave": self.leave,
            "cg848_session_expiry": self.session_expiry,
            "cg848_child": self.child,
            "cg848_static_restart": self.static_restart,
            "cg848_regex": self.regex,
            "cg848_commit_resume": self.commit_resume,
            "cg848_mixed_migration": self.mixed_migration,
        }
