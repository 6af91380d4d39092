"""Share group scenarios (KIP-932) for confluent-kafka's ShareConsumer (librdkafka 2.16).

The same scenarios as java/Share.java, checked through the records each consumer gets (offset,
delivery count): confluent-kafka's admin client has no share group API (no DescribeShareGroups,
no ListShareGroupOffsets), and librdkafka 2.16's AcknowledgeType has no RENEW (KIP-1222), so
share_renew is n/a. Every consumer runs in this process and is polled from this thread, except
the one of share_lock_expiry that is killed: a child process (scenario share_child).
"""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import AcknowledgeType, ShareConsumer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from common import Failure, NotApplicable, check, check_eq, log

# The broker settings the harness gives both brokers (harness/brokers.py COMMON_PROPERTIES).
DELIVERY_COUNT_LIMIT = 3
# The group's share.record.lock.duration.ms where a scenario waits for a lock to run out.
SHORT_LOCK_MS = 3000
# The lock of the records the killed consumer of share_lock_expiry holds: long enough to tell
# their release on the closed connection from their lock running out.
KILLED_HOLDER_LOCK_MS = 15000
QUIET_S = 3.0
INVALID_RECORD_STATE = 121
CLIENT_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "confluent_client.py")


def shown(msgs):
    """"offset:delivery count" of each record, in order."""
    return [f"{m.offset()}:{m.delivery_count()}" for m in msgs]


_restarts = [0]


def request_broker_restart(how):
    """Asks the harness (run.py, COMPAT_BROKER_CONTROL) to restart the broker and waits for it."""
    control = os.environ.get("COMPAT_BROKER_CONTROL")
    if not control:
        raise NotApplicable("the broker is not the harness's own (--bootstrap): it cannot be restarted")
    _restarts[0] += 1
    name = f"restart-{_restarts[0]}"
    request, done = Path(control, f"{name}.request"), Path(control, f"{name}.done")
    tmp = Path(control, f"{name}.request.tmp")
    tmp.write_text(how + "\n")
    tmp.rename(request)
    started = time.monotonic()
    while not done.exists():
        check(time.monotonic() - started < 150, "the harness restarts the broker")
        time.sleep(0.1)
    answer = done.read_text().strip()
    log(f"broker restart ({how}): {answer} after {time.monotonic() - started:.1f} s")
    check_eq(answer, "ok", "the broker restart")


class Scenarios:
    def __init__(self, admin_fn, producer_fn, create_topic, conn_fn):
        self.admin_fn, self.producer_fn, self.create_topic, self.conn_fn = \
            admin_fn, producer_fn, create_topic, conn_fn

    @staticmethod
    def group(ctx):
        return ctx.group("share")

    def consumer(self, ctx, name, explicit=False, **cfg):
        conf = {**self.conn_fn(ctx), "group.id": self.group(ctx), "client.id": f"{ctx.prefix}-{name}"}
        if explicit:
            conf["share.acknowledgement.mode"] = "explicit"
        conf.update(cfg)
        return ShareConsumer(conf)

    def group_configs(self, ctx, adm, **extra):
        """share.auto.offset.reset=earliest (records produced before the group exists are
        delivered) and `extra` (dots as underscores) on the group's GROUP resource."""
        entries = {"share.auto.offset.reset": "earliest", **{k.replace("_", "."): v for k, v in extra.items()}}
        resource = ConfigResource(ResourceType.GROUP, self.group(ctx), incremental_configs=[
            ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in entries.items()])
        for future in adm.incremental_alter_configs([resource]).values():
            future.result(30)

    def produce(self, ctx, topic, start, count, batch=None):
        """Records r<start>.. at offsets start..; with `batch`, a flush after every `batch`
        records, so each batch of the log holds that many."""
        prod = self.producer_fn(ctx)
        for i in range(start, start + count):
            prod.produce(topic, value=f"r{i}".encode(), partition=0)
            if batch and (i - start + 1) % batch == 0:
                check_eq(prod.flush(30), 0, "messages left after flush")
        check_eq(prod.flush(30), 0, "messages left after flush")

    @staticmethod
    def poll(c, timeout_s=0.2):
        msgs = list(c.poll(timeout_s) or [])
        errors = [m.error() for m in msgs if m.error() is not None]
        check(not errors, f"poll errors: {errors}")
        return msgs

    def poll_some(self, c, seconds, what):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            msgs = self.poll(c)
            if msgs:
                return msgs
        raise Failure(f"timed out after {seconds}s waiting for {what}")

    @staticmethod
    def ack_all(c, msgs, ack_type=AcknowledgeType.ACCEPT):
        for m in msgs:
            c.acknowledge(m, ack_type)

    @staticmethod
    def commit(c, what):
        result = c.commit_sync(30)
        log(f"commit_sync ({what}): {result}")
        return result

    def setup(self, ctx, records, **configs):
        adm = self.admin_fn(ctx)
        topic = ctx.topic("t")
        self.create_topic(adm, topic, 1)
        self.group_configs(ctx, adm, **configs)
        if records:
            self.produce(ctx, topic, 0, records)
        return adm, topic

    def three_consumers(self, ctx):
        records = 300
        _, topic = self.setup(ctx, 0)
        # The broker acquires whole batches (its batch_optimized mode; librdkafka 2.16 has no
        # record_limit): batches of 10 records and 10 records a poll let the three take turns.
        cs = [self.consumer(ctx, n, **{"max.poll.records": 10}) for n in ("a", "b", "c")]
        try:
            for c in cs:
                c.subscribe([topic])
            # No DescribeShareGroups here: the three poll for a while to join before records exist.
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                for c in cs:
                    check_eq(shown(self.poll(c, 0.1)), [], "records before any was produced")
            self.produce(ctx, topic, 0, records, batch=10)
            times, per, counts = {}, [0, 0, 0], []
            deadline = time.monotonic() + 60
            while len(times) < records and time.monotonic() < deadline:
                for i, c in enumerate(cs):
                    msgs = self.poll(c, 0.1)
                    for m in msgs:
                        times[m.offset()] = times.get(m.offset(), 0) + 1
                        check_eq(m.value(), f"r{m.offset()}".encode(), f"value at {m.offset()}")
                        if m.delivery_count() != 1:
                            counts.append(f"{m.offset()}:{m.delivery_count()}")
                    per[i] += len(msgs)
                    if msgs:
                        self.commit(c, "accept")
            deadline = time.monotonic() + QUIET_S
            while time.monotonic() < deadline:
                for c in cs:
                    msgs = self.poll(c, 0.1)
                    for m in msgs:
                        times[m.offset()] = times.get(m.offset(), 0) + 1
                    if msgs:
                        self.commit(c, "accept")
            log("records per consumer:", per)
            check_eq(len(times), records, "distinct records delivered")
            check_eq([f"{o} x{n}" for o, n in sorted(times.items()) if n != 1], [], "records delivered more than once")
            check_eq(counts, [], "records with a delivery count other than 1")
            check(all(n > 0 for n in per), f"a consumer got no record: {per}")
        finally:
            for c in cs:
                c.close()

    def lock_expiry(self, ctx):
        adm, topic = self.setup(ctx, 10, share_record_lock_duration_ms=SHORT_LOCK_MS)
        a, b = self.consumer(ctx, "a", explicit=True), self.consumer(ctx, "b", explicit=True)
        try:
            a.subscribe([topic])
            started = time.monotonic()
            held = self.poll_some(a, 30, "a's records")
            check_eq(shown(held), [f"{i}:1" for i in range(10)], "a's records (offset:delivery count)")
            # a stops polling; b gets the records once a's locks run out.
            b.subscribe([topic])
            got = self.poll_some(b, 30, "b gets a's records after the lock duration")
            waited_ms = (time.monotonic() - started) * 1000
            log(f"b got {shown(got)} {waited_ms:.0f} ms after a's poll started")
            check(waited_ms >= SHORT_LOCK_MS - 200, f"b got a's records after {waited_ms:.0f} ms, before the lock duration")
            check(waited_ms <= SHORT_LOCK_MS + 10_000, f"b got a's records only after {waited_ms:.0f} ms")
            everything = list(got)
            while len(everything) < 10:
                self.ack_all(b, got)
                got = self.poll_some(b, 20, "the rest of a's records")
                everything += got
            check_eq(shown(everything), [f"{i}:2" for i in range(10)], "b's records (offset:delivery count)")
            self.ack_all(a, held)
            late = self.commit(a, "a's late acknowledgement")
            check_eq([(tp.partition, tp.error.code() if tp.error else None) for tp in late], [(0, INVALID_RECORD_STATE)],
                     "a's late acknowledgement: b holds the records now")
            self.ack_all(b, got)
            self.commit(b, "b accepts")
        finally:
            a.close()
            b.close()
        self.killed_holder(ctx, adm, topic)

    def killed_holder(self, ctx, adm, topic):
        self.group_configs(ctx, adm, share_record_lock_duration_ms=KILLED_HOLDER_LOCK_MS)
        self.produce(ctx, topic, 10, 10)
        child = subprocess.Popen([sys.executable, CLIENT_SCRIPT, "--bootstrap", ctx.bootstrap, "--scenario",
                                  "share_child", "--prefix", ctx.prefix],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        lines = []

        def echo():
            for line in child.stdout:
                lines.append(line.rstrip())
                log("child:", line.rstrip())
        threading.Thread(target=echo, daemon=True).start()
        try:
            deadline = time.monotonic() + 60
            while not any(line.startswith("ACQUIRED") for line in lines):
                check(time.monotonic() < deadline and child.poll() is None, f"the child acquires records: {lines[-5:]}")
                time.sleep(0.1)
            check_eq(next(line for line in lines if line.startswith("ACQUIRED")),
                     "ACQUIRED " + " ".join(f"{i}:1" for i in range(10, 20)), "the child's records")
        finally:
            child.kill()  # SIGKILL: no acknowledgement, no leave
            child.wait(10)
        killed = time.monotonic()
        c = self.consumer(ctx, "c", explicit=True)
        try:
            c.subscribe([topic])
            got = self.poll_some(c, 30, "c gets the killed child's records")
            waited_ms = (time.monotonic() - killed) * 1000
            log(f"c got {shown(got)} {waited_ms:.0f} ms after the kill")
            everything = list(got)
            while len(everything) < 10:
                self.ack_all(c, got)
                got = self.poll_some(c, 20, "the rest of the child's records")
                everything += got
            check_eq(shown(everything), [f"{i}:2" for i in range(10, 20)], "c's records (offset:delivery count)")
            check(waited_ms < KILLED_HOLDER_LOCK_MS - 5000,
                  f"c got the child's records only after {waited_ms:.0f} ms: not released when the child's connection closed")
            self.ack_all(c, got)
            self.commit(c, "c accepts")
        finally:
            c.close()

    def child(self, ctx):
        """The killed holder of share_lock_expiry: acquires records, prints them, stops polling."""
        c = self.consumer(ctx, "child", explicit=True)
        c.subscribe([ctx.topic("t")])
        msgs = self.poll_some(c, 60, "records for the child")
        print("ACQUIRED " + " ".join(shown(msgs)), flush=True)
        time.sleep(120)

    def explicit_ack(self, ctx):
        _, topic = self.setup(ctx, 3)
        c = self.consumer(ctx, "a", explicit=True)
        try:
            c.subscribe([topic])
            msgs = self.poll_some(c, 30, "3 records")
            check_eq(shown(msgs), ["0:1", "1:1", "2:1"], "first delivery (offset:delivery count)")
            c.acknowledge(msgs[0], AcknowledgeType.ACCEPT)
            c.acknowledge(msgs[1], AcknowledgeType.RELEASE)
            c.acknowledge(msgs[2], AcknowledgeType.REJECT)
            self.commit(c, "accept, release, reject")
            again = self.poll_some(c, 20, "the released record")
            check_eq(shown(again), ["1:2"], "redelivery of the released record")
            check_eq(again[0].value(), b"r1", "its value")
            self.ack_all(c, again)
            self.commit(c, "accept the redelivered record")
            nothing = self.poll_for(c, QUIET_S)
            check_eq(nothing, [], "deliveries after every record was acknowledged")
            self.produce(ctx, topic, 3, 1)
            fresh = self.poll_some(c, 20, "the record produced afterwards")
            check_eq(shown(fresh), ["3:1"], "the only new delivery")
            self.ack_all(c, fresh)
            self.commit(c, "accept 3")
        finally:
            c.close()

    def poll_for(self, c, seconds, ack_type=AcknowledgeType.ACCEPT):
        """Every delivery within `seconds` ("offset:count"), each acknowledged with `ack_type`."""
        got = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            msgs = self.poll(c)
            if msgs:
                got += shown(msgs)
                self.ack_all(c, msgs, ack_type)
                self.commit(c, "acknowledge")
        return got

    def delivery_limit(self, ctx):
        _, topic = self.setup(ctx, 2)
        c = self.consumer(ctx, "a", explicit=True)
        try:
            c.subscribe([topic])
            deliveries = []
            deadline = time.monotonic() + 40
            last = time.monotonic()
            while time.monotonic() < deadline and time.monotonic() - last < QUIET_S:
                msgs = self.poll(c)
                if not msgs:
                    continue
                last = time.monotonic()
                deliveries += shown(msgs)
                for m in msgs:
                    c.acknowledge(m, AcknowledgeType.RELEASE if m.offset() == 0 else AcknowledgeType.ACCEPT)
                self.commit(c, "release 0, accept the others")
            check_eq(deliveries, ["0:1", "1:1", "0:2", "0:3"], "deliveries (offset:delivery count)")
            self.produce(ctx, topic, 2, 1)
            fresh = self.poll_some(c, 20, "the record produced afterwards")
            check_eq(shown(fresh), ["2:1"], "the next delivery")
            self.ack_all(c, fresh)
            self.commit(c, "accept 2")
        finally:
            c.close()

    def restart(self, ctx):
        if not os.environ.get("COMPAT_BROKER_CONTROL"):
            raise NotApplicable("the broker is not the harness's own (--bootstrap): it cannot be restarted")
        _, topic = self.setup(ctx, 20)
        a = self.consumer(ctx, "a", explicit=True)
        try:
            a.subscribe([topic])
            msgs = []
            while len(msgs) < 20:
                batch = self.poll_some(a, 30, "20 records")
                msgs += batch
                if len(msgs) < 20:
                    raise Failure(f"the first poll brought {shown(batch)}, not all 20 records")
            for m in msgs:
                if m.offset() < 10:
                    a.acknowledge(m, AcknowledgeType.ACCEPT)
                elif m.offset() < 15:
                    a.acknowledge(m, AcknowledgeType.RELEASE)
            self.commit(a, "accept 0..9, release 10..14")
            request_broker_restart("term")
        finally:
            a.close()
        b = self.consumer(ctx, "b", explicit=True)
        try:
            b.subscribe([topic])
            got = []
            deadline = time.monotonic() + 60
            last = time.monotonic()
            while time.monotonic() < deadline and (len(got) < 10 or time.monotonic() - last < QUIET_S):
                msgs = self.poll(b)
                if not msgs:
                    continue
                last = time.monotonic()
                got += shown(msgs)
                self.ack_all(b, msgs)
                self.commit(b, "b accepts")
            log("after the restart:", got)
            # 10..14 were written as released after one delivery; the acquisition of 15..19 was
            # never written, so the restarted broker delivers them as for the first time.
            check_eq(got, [f"{i}:2" for i in range(10, 15)] + [f"{i}:1" for i in range(15, 20)],
                     "deliveries after the restart (offset:delivery count)")
            self.produce(ctx, topic, 20, 2)
            fresh = []
            while len(fresh) < 2:
                msgs = self.poll_some(b, 20, "the records produced after the restart")
                fresh += shown(msgs)
                self.ack_all(b, msgs)
                self.commit(b, "b accepts 20, 21")
            check_eq(fresh, ["20:1", "21:1"], "the records produced after the restart")
        finally:
            b.close()
        # Then the broker is killed (SIGKILL) while 27..31 are acquired and 22..26 accepted.
        self.produce(ctx, topic, 22, 10)
        c = self.consumer(ctx, "c", explicit=True)
        try:
            c.subscribe([topic])
            msgs = self.poll_some(c, 30, "22..31")
            check_eq(shown(msgs), [f"{i}:1" for i in range(22, 32)], "22..31 before the kill")
            for m in msgs:
                if m.offset() < 27:
                    c.acknowledge(m, AcknowledgeType.ACCEPT)
            self.commit(c, "accept 22..26")
            request_broker_restart("kill")
        finally:
            c.close()
        d = self.consumer(ctx, "d", explicit=True)
        try:
            d.subscribe([topic])
            got = []
            deadline = time.monotonic() + 60
            last = time.monotonic()
            while time.monotonic() < deadline and (len(got) < 5 or time.monotonic() - last < QUIET_S):
                msgs = self.poll(d)
                if not msgs:
                    continue
                last = time.monotonic()
                got += shown(msgs)
                self.ack_all(d, msgs)
                self.commit(d, "d accepts")
            log("after the kill:", got)
            check_eq(got, [f"{i}:1" for i in range(27, 32)], "deliveries after the kill")
        finally:
            d.close()

    @staticmethod
    def renew(_ctx):
        raise NotApplicable("librdkafka 2.16's AcknowledgeType has no RENEW (KIP-1222): ACCEPT, RELEASE and REJECT only")

    @staticmethod
    def assignment(_ctx):
        raise NotApplicable("confluent-kafka 2.16's admin client has no DescribeShareGroups to show the assignments")

    def table(self):
        return {
            "share_three_consumers": self.three_consumers,
            "share_lock_expiry": self.lock_expiry,
            "share_child": self.child,
            "share_explicit_ack": self.explicit_ack,
            "share_delivery_limit": self.delivery_limit,
            "share_restart": self.restart,
            "share_renew": self.renew,
            "share_assignment": self.assignment,
        }
