"""Group members (confluent-kafka consumers, one polling thread each) and the wait for a stable
assignment.

A member's assignment is what its client holds: it is read with `assignment()` after every poll
that served a rebalance callback, and each callback records when it ran (the client applies the
assignment as the callback returns, so that moment is when the member's holdings changed).
"""
import logging
import re
import threading
import time


POLL_S = 0.1
# librdkafka's `debug=protocol` line for every request it sends, e.g. "Sent HeartbeatRequest (v4,
# ...)". Its statistics' request counters would be cheaper but do not count
# ConsumerGroupHeartbeat (librdkafka 2.16 leaves API key 68 out of them).
SENT = re.compile(r"Sent (\w+)Request \(v\d+")
HEARTBEAT_REQUESTS = ("Heartbeat", "ConsumerGroupHeartbeat")


class RequestLog(logging.Handler):
    """Counts the requests a probe member's client sends, by name, with the time of each."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.sent = []  # (monotonic time, request name)

    def emit(self, record):
        m = SENT.search(record.getMessage())
        if m:
            self.sent.append((time.monotonic(), m.group(1)))

    def between(self, start, end):
        counts = {}
        for t, name in list(self.sent):
            if start <= t < end:
                counts[name] = counts.get(name, 0) + 1
        return counts


class Member:
    """One consumer in its own thread. `protocol` is librdkafka's `group.protocol` (classic or
    consumer). With `probe`, every request its client sends is counted (`requests`)."""

    def __init__(self, bootstrap, group, topic, protocol, probe=False):
        self.topic = topic
        self.assignment = frozenset()
        self.changed_at = None  # monotonic time of the last rebalance callback
        self.requests = RequestLog() if probe else None
        self.error = None
        self.poll_errors = set()
        self._dirty = False
        self._go = threading.Event()
        self._stop = threading.Event()
        self._pause = None  # True: pause the assignment, False: resume it, None: nothing asked
        self.paused = threading.Event()
        self.ready = threading.Event()
        conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            # Nothing is consumed, so there is nothing to commit; no OffsetCommit traffic either.
            "enable.auto.commit": False,
        }
        if probe:
            logger = logging.getLogger(f"probe-{group}-{id(self)}")
            logger.propagate = False
            logger.setLevel(logging.DEBUG)
            logger.addHandler(self.requests)
            conf["debug"] = "protocol"
            conf["logger"] = logger
        from confluent_kafka import Consumer  # here, so that the pure helpers need no client

        self.consumer = Consumer(conf)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def subscribe(self):
        """Ask the member's thread to subscribe (the consumer is used from its own thread only)."""
        self._go.set()

    def pause(self, on):
        self.paused.clear()
        self._pause = on

    def stop(self):
        self._stop.set()

    def _on_change(self, _consumer, _partitions):
        self.changed_at = time.monotonic()
        self._dirty = True

    def _run(self):
        c = self.consumer
        try:
            # Connected, with the topic's metadata, before the clock starts: the figure is the
            # group's, not the client's start-up.
            c.list_topics(self.topic, timeout=60)
            self.ready.set()
            while not self._go.is_set():
                if self._stop.wait(POLL_S):
                    return
            c.subscribe([self.topic], on_assign=self._on_change, on_revoke=self._on_change,
                        on_lost=self._on_change)
            while not self._stop.is_set():
                msg = c.poll(POLL_S)
                if msg is not None and msg.error():
                    # e.g. a broker that does not serve the protocol: kept for the report
                    self.poll_errors.add(str(msg.error()))
                if self._dirty:
                    self._dirty = False
                    self.assignment = frozenset(tp.partition for tp in c.assignment())
                if self._pause is not None:
                    held = c.assignment()
                    if self._pause:
                        c.pause(held)
                    else:
                        c.resume(held)
                    self._pause = None
                    self.paused.set()
        except Exception as e:  # reported with the figures, never hidden
            self.error = repr(e)
        finally:
            try:
                c.close()
            except Exception as e:
                self.error = self.error or repr(e)


def stop_all(members, timeout_s=120):
    for m in members:
        m.stop()
    deadline = time.monotonic() + timeout_s
    for m in members:
        m.thread.join(max(0.0, deadline - time.monotonic()))
    return sum(1 for m in members if m.thread.is_alive())


def coverage(members, partitions):
    """(stable, summary): stable when every member holds at least one partition and together
    they hold each of `partitions` exactly once."""
    held = [m.assignment for m in members]
    counts = {}
    for a in held:
        for p in a:
            counts[p] = counts.get(p, 0) + 1
    empty = sum(1 for a in held if not a)
    missing = sum(1 for p in range(partitions) if p not in counts)
    doubled = sum(1 for n in counts.values() if n > 1)
    stable = empty == 0 and missing == 0 and doubled == 0 and len(counts) == partitions
    return stable, {"members_without_partitions": empty, "partitions_unowned": missing,
                    "partitions_owned_twice": doubled}


def wait_stable(members, partitions, since, settle_s, timeout_s):
    """Seconds from `since` to the last assignment change of a stable state that then held, with
    no member's assignment changing, for `settle_s`; None on timeout.

    The quiet period is needed because a state part-way through a reconciliation can already
    look stable: with the consumer protocol a joining member may receive one of its partitions
    while another member has not yet heard (at its next heartbeat) that it must give up a
    second one, which the newcomer then also receives."""
    deadline = since + timeout_s
    stable_since, change = None, None
    summary = {}
    while time.monotonic() < deadline:
        stable, summary = coverage(members, partitions)
        last = max((m.changed_at for m in members if m.changed_at is not None), default=None)
        now = time.monotonic()
        if stable:
            if stable_since is None or last != change:
                stable_since, change = now, last
            elif now - stable_since >= settle_s:
                return {"stable_s": (change - since) if change is not None else None, **summary}
        else:
            stable_since = None
        time.sleep(0.05)
    return {"stable_s": None, "timed_out_after_s": timeout_s, **summary}


def heartbeat_counts(probes, start, end):
    """Per probe: (heartbeats, {other request: count}) sent between `start` and `end`."""
    out = []
    for m in probes:
        counts = m.requests.between(start, end)
        hb = sum(counts.get(k, 0) for k in HEARTBEAT_REQUESTS)
        out.append((hb, {k: v for k, v in counts.items() if k not in HEARTBEAT_REQUESTS}))
    return out
