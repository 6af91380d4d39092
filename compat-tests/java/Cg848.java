// KIP-848 consumer group scenarios (group.protocol=consumer) for the Java client (kafka-clients 4.4).
// Every member runs in this process and is polled from this thread, except the member of
// cg848_session_expiry that is killed: a child JVM (scenario cg848_child) killed with SIGKILL.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;

public class Cg848 {
    // The broker settings the harness gives both brokers (harness/brokers.py COMMON_PROPERTIES).
    static final int SESSION_TIMEOUT_MS = 8000;
    static final int HEARTBEAT_INTERVAL_MS = 500;
    // The group epoch Kafka 4.4 gives a new group once its first member has joined.
    static final int FIRST_JOIN_EPOCH = 2;

    static String topic(String suffix) { return Compat.topic(suffix); }
    static String group() { return Compat.group("g"); }

    static void check(boolean cond, String what) { Compat.check(cond, what); }
    static void checkEq(Object actual, Object expected, String what) { Compat.checkEq(actual, expected, what); }
    static void waitUntil(BooleanSupplier cond, int seconds, String what) throws InterruptedException {
        Compat.waitUntil(cond, seconds, what);
    }

    /** Which member owns each partition, as the members' rebalance listeners report it: a
     *  partition assigned to one member while another still owns it is a violation. */
    static final class Owners {
        final Map<TopicPartition, String> owner = new HashMap<>();
        final List<String> violations = new ArrayList<>();
        void acquire(String member, Collection<TopicPartition> ps) {
            for (var p : ps) {
                String prev = owner.put(p, member);
                if (prev != null && !prev.equals(member))
                    violations.add(p + " assigned to " + member + " while " + prev + " owned it");
            }
        }
        void release(String member, Collection<TopicPartition> ps) {
            for (var p : ps) owner.remove(p, member);
        }
    }

    /** A group member: its rebalance events (non-empty sets only), the records it consumed, and
     *  a commit of the revoked partitions' positions before they move. */
    static final class Member implements ConsumerRebalanceListener, AutoCloseable {
        final String name;
        final KafkaConsumer<byte[], byte[]> c;
        final Owners owners;
        final List<String> events = new ArrayList<>();
        final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        boolean closed;
        // Commit the revoked partitions' positions, so the next owner goes on from there.
        boolean commitOnRevoke = true;

        Member(String name, Owners owners, Map<String, Object> extra) {
            this.name = name;
            this.owners = owners;
            Map<String, Object> cfg = new HashMap<>(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group(),
                    ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer", ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50));
            cfg.putAll(extra);
            this.c = Compat.consumer(cfg);
        }

        Member subscribe(String... topics) { c.subscribe(List.of(topics), this); return this; }
        Member subscribe(SubscriptionPattern pattern) { c.subscribe(pattern, this); return this; }

        void poll() {
            if (closed) return;
            for (var r : c.poll(Duration.ofMillis(100))) records.add(r);
        }

        Set<Integer> owned() { return Compat.Tracker.parts(c.assignment()); }
        Set<TopicPartition> ownedPartitions() { return new HashSet<>(c.assignment()); }
        String memberId() { return c.groupMetadata().memberId(); }

        public void onPartitionsRevoked(Collection<TopicPartition> ps) {
            if (ps.isEmpty()) return;
            events.add("revoked " + show(ps));
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            for (var p : ps) commit.put(p, new OffsetAndMetadata(c.position(p)));
            if (commitOnRevoke) c.commitSync(commit);
            owners.release(name, ps);
        }

        public void onPartitionsAssigned(Collection<TopicPartition> ps) {
            if (ps.isEmpty()) return;
            events.add("assigned " + show(ps));
            owners.acquire(name, ps);
        }

        public void onPartitionsLost(Collection<TopicPartition> ps) {
            if (ps.isEmpty()) return;
            events.add("lost " + show(ps));
            owners.release(name, ps);
        }

        public void close() {
            if (!closed) {
                closed = true;
                c.close(Duration.ofSeconds(20));
            }
        }
    }

    /** "[t-0, t-2]" style for one topic: the partition numbers, sorted; several topics: topic-p. */
    static String show(Collection<TopicPartition> ps) {
        Set<String> topics = new TreeSet<>();
        for (var p : ps) topics.add(p.topic());
        if (topics.size() == 1 && topics.iterator().next().equals(topic("t"))) return Compat.Tracker.parts(ps).toString();
        Set<String> out = new TreeSet<>();
        for (var p : ps) out.add(p.topic().substring(Compat.prefix.length() + 1) + ":" + p.partition());
        return out.toString();
    }

    static void pollAll(List<Member> ms) { for (var m : ms) m.poll(); }

    static void waitPolling(List<Member> ms, int seconds, String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            pollAll(ms);
            if (cond.getAsBoolean()) return;
        }
        StringBuilder state = new StringBuilder();
        for (var m : ms) state.append(" ").append(m.name).append(" owns ").append(m.closed ? "(closed)" : m.owned())
                .append(" events ").append(m.events);
        throw new AssertionError("timed out after " + seconds + "s waiting for " + what + ";" + state);
    }

    static void produce(String t, int partitions, int perPartition, int from) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = Compat.producer(Map.of())) {
            for (int part = 0; part < partitions; part++)
                for (int i = from; i < from + perPartition; i++)
                    p.send(new ProducerRecord<>(t, part, null, ("p" + part + "-" + i).getBytes(StandardCharsets.UTF_8)));
            p.flush();
        }
    }

    static ConsumerGroupDescription describe(Admin admin) throws Exception {
        return admin.describeConsumerGroups(List.of(group())).all().get(30, TimeUnit.SECONDS).get(group());
    }

    /** Describe until `cond` holds (the coordinator's view catches up with the members' after
     *  their next heartbeat), polling the members meanwhile. */
    static ConsumerGroupDescription describeWhen(Admin admin, List<Member> ms, String what,
                                                 java.util.function.Predicate<ConsumerGroupDescription> cond) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        ConsumerGroupDescription d = null;
        while (System.nanoTime() < deadline) {
            pollAll(ms);
            d = describe(admin);
            if (cond.test(d)) return d;
        }
        throw new AssertionError("timed out waiting for the description to show " + what + ": " + d);
    }

    static Set<Integer> partsOf(MemberDescription m) { return Compat.Tracker.parts(m.assignment().topicPartitions()); }

    static MemberDescription memberById(ConsumerGroupDescription d, String id) {
        for (var m : d.members()) if (m.consumerId().equals(id)) return m;
        throw new AssertionError("member " + id + " not in the description " + d);
    }

    /** (partition, offset) -> how many times consumed, over every member. */
    static Map<String, Integer> consumedCounts(List<Member> ms) {
        Map<String, Integer> n = new TreeMap<>();
        for (var m : ms) for (var r : m.records) n.merge(r.topic() + ":" + r.partition() + ":" + r.offset(), 1, Integer::sum);
        return n;
    }

    static int consumedTotal(List<Member> ms) {
        int n = 0;
        for (var m : ms) n += m.records.size();
        return n;
    }

    static void checkOnce(List<Member> ms, int expected, String what) {
        Map<String, Integer> n = consumedCounts(ms);
        checkEq(n.size(), expected, what + ": distinct records consumed");
        for (var e : n.entrySet()) checkEq(e.getValue(), 1, what + ": times " + e.getKey() + " was consumed");
    }

    // ---------- scenarios ----------

    static void joinConsume() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic("t");
            Compat.createTopic(admin, t, 3, null);
            produce(t, 3, 3, 0);
            Owners owners = new Owners();
            try (Member a = new Member("a", owners, Map.of()).subscribe(t)) {
                List<Member> ms = List.of(a);
                waitPolling(ms, 30, "9 records", () -> a.records.size() >= 9);
                checkEq(a.owned(), Set.of(0, 1, 2), "assignment");
                checkEq(a.events, List.of("assigned [0, 1, 2]"), "rebalance events");
                Set<String> got = new TreeSet<>(), want = new TreeSet<>();
                for (var r : a.records) got.add(r.partition() + "@" + r.offset() + "=" + new String(r.value(), StandardCharsets.UTF_8));
                for (int p = 0; p < 3; p++) for (int i = 0; i < 3; i++) want.add(p + "@" + i + "=p" + p + "-" + i);
                checkEq(a.records.size(), 9, "records consumed");
                checkEq(got, want, "records (partition@offset=value)");
                var d = describeWhen(admin, ms, "Stable with the member's 3 partitions",
                        x -> x.groupState() == GroupState.STABLE && x.members().size() == 1
                                && partsOf(x.members().iterator().next()).size() == 3);
                System.out.println("described: " + d);
                checkEq(d.type(), GroupType.CONSUMER, "group type");
                checkEq(d.partitionAssignor(), "uniform", "assignor");
                var m = d.members().iterator().next();
                checkEq(m.consumerId(), a.memberId(), "member id");
                checkEq(m.groupInstanceId(), Optional.empty(), "group instance id");
                checkEq(m.assignment().topicPartitions(), a.ownedPartitions(), "member assignment");
                checkEq(m.targetAssignment().map(x -> x.topicPartitions()), Optional.of(a.ownedPartitions()),
                        "member target assignment");
                checkEq(m.upgraded(), Optional.of(true), "member uses the consumer protocol");
                // Kafka 4.4's first bump of a new group is "Bumped group epoch to 2" (its log), and
                // Stable means the member has reconciled that epoch's target assignment.
                checkEq(d.groupEpoch(), Optional.of(FIRST_JOIN_EPOCH), "group epoch");
                checkEq(d.targetAssignmentEpoch(), Optional.of(FIRST_JOIN_EPOCH), "target assignment epoch");
                checkEq(m.memberEpoch(), Optional.of(FIRST_JOIN_EPOCH), "member epoch");
            }
            var d = describe(admin);
            checkEq(d.groupState(), GroupState.EMPTY, "state after close");
            checkEq(d.type(), GroupType.CONSUMER, "type after close");
            checkEq(d.members().size(), 0, "members after close");
        }
    }

    static void secondMember() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic("t");
            Compat.createTopic(admin, t, 3, null);
            produce(t, 3, 4, 0);
            Owners owners = new Owners();
            try (Member a = new Member("a", owners, Map.of()).subscribe(t)) {
                waitPolling(List.of(a), 30, "a consumes 12", () -> a.records.size() >= 12);
                a.c.commitSync();
                a.events.clear();
                try (Member b = new Member("b", owners, Map.of()).subscribe(t)) {
                    List<Member> ms = List.of(a, b);
                    waitPolling(ms, 30, "2/1 split", () -> a.owned().size() == 2 && b.owned().size() == 1
                            && Collections.disjoint(a.owned(), b.owned()));
                    Set<Integer> moved = b.owned();
                    checkEq(a.events, List.of("revoked " + moved), "a's events: only the moved partition is revoked");
                    checkEq(b.events, List.of("assigned " + moved), "b's events");
                    checkEq(owners.violations, List.of(), "partitions owned by two members at once");
                    Set<Integer> kept = new TreeSet<>(Set.of(0, 1, 2));
                    kept.removeAll(moved);
                    checkEq(a.owned(), kept, "a keeps the others");
                    produce(t, 3, 4, 4);
                    waitPolling(ms, 30, "24 records", () -> consumedTotal(ms) >= 24);
                    checkOnce(ms, 24, "records");
                    for (var r : b.records) check(moved.contains(r.partition()), "b consumed " + r.partition() + ":" + r.offset());
                    int bFromMoved = 0;
                    for (var r : a.records) if (r.offset() >= 4) check(!moved.contains(r.partition()),
                            "a consumed moved " + r.partition() + ":" + r.offset() + " after the move");
                    for (var r : b.records) if (r.offset() >= 4) bFromMoved++;
                    checkEq(bFromMoved, 4, "new records b consumed from its partition");
                    checkEq(b.records.size(), 4, "b starts at the committed offset (consumes nothing old)");
                    var d = describeWhen(admin, ms, "Stable with 2 members holding 2 and 1",
                            x -> x.groupState() == GroupState.STABLE && x.members().size() == 2
                                    && partsOf(memberById(x, a.memberId())).size() == 2);
                    checkEq(partsOf(memberById(d, a.memberId())), a.owned(), "a's described assignment");
                    checkEq(partsOf(memberById(d, b.memberId())), b.owned(), "b's described assignment");
                    checkEq(owners.violations, List.of(), "partitions owned by two members at once");
                }
            }
        }
    }

    /** a owns all 3 partitions of t, then b joins; both polled until the 2/1 split. */
    static void twoMembers(Admin admin, Member a, Member b) throws Exception {
        waitPolling(List.of(a), 30, "a owns 3", () -> a.owned().size() == 3);
        waitPolling(List.of(a, b), 30, "2/1 split", () -> a.owned().size() == 2 && b.owned().size() == 1
                && Collections.disjoint(a.owned(), b.owned()));
        describeWhen(admin, List.of(a, b), "2 members holding 2 and 1",
                x -> x.groupState() == GroupState.STABLE && x.members().size() == 2
                        && partsOf(memberById(x, a.memberId())).size() == 2 && partsOf(memberById(x, b.memberId())).size() == 1);
    }

    static void leave() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic("t");
            Compat.createTopic(admin, t, 3, null);
            Owners owners = new Owners();
            try (Member a = new Member("a", owners, Map.of()).subscribe(t);
                 Member b = new Member("b", owners, Map.of()).subscribe(t)) {
                twoMembers(admin, a, b);
                Set<Integer> bOwned = b.owned();
                a.events.clear();
                long t0 = System.nanoTime();
                b.close();
                waitPolling(List.of(a), 30, "a owns 3 after b left", () -> a.owned().size() == 3);
                long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                System.out.println("moved " + tookMs + " ms after b closed");
                check(tookMs < SESSION_TIMEOUT_MS, "a leave moves the partitions at once, not after the session timeout: " + tookMs + " ms");
                checkEq(a.events, List.of("assigned " + bOwned), "a's events: b's partitions assigned, nothing revoked");
                checkEq(owners.violations, List.of(), "partitions owned by two members at once");
                var d = describeWhen(admin, List.of(a), "one member with 3 partitions",
                        x -> x.groupState() == GroupState.STABLE && x.members().size() == 1
                                && partsOf(x.members().iterator().next()).size() == 3);
                checkEq(d.members().iterator().next().consumerId(), a.memberId(), "remaining member");
                produce(t, 3, 1, 0);
                waitPolling(List.of(a), 30, "3 records", () -> a.records.size() >= 3);
                checkOnce(List.of(a), 3, "records after the leave");
            }
        }
    }

    static void sessionExpiry() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic("t");
            Compat.createTopic(admin, t, 3, null);
            Owners owners = new Owners();
            try (Member a = new Member("a", owners, Map.of()).subscribe(t)) {
                waitPolling(List.of(a), 30, "a owns 3", () -> a.owned().size() == 3);
                ProcessBuilder pb = new ProcessBuilder("java", "-cp", System.getProperty("java.class.path"), "Compat",
                        "--bootstrap", Compat.bootstrap, "--scenario", "cg848_child", "--prefix", Compat.prefix);
                pb.redirectErrorStream(true);
                Process child = pb.start();
                List<String> childLines = Collections.synchronizedList(new ArrayList<>());
                Thread reader = new Thread(() -> {
                    try (var r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                        for (String line; (line = r.readLine()) != null; ) {
                            childLines.add(line);
                            System.out.println("child: " + line);
                        }
                    } catch (java.io.IOException ignored) {
                        // the child was killed
                    }
                });
                reader.setDaemon(true);
                reader.start();
                try {
                    waitPolling(List.of(a), 40, "2/1 split with the child", () -> a.owned().size() == 2);
                    Set<Integer> childOwned = new TreeSet<>(Set.of(0, 1, 2));
                    childOwned.removeAll(a.owned());
                    var before = describeWhen(admin, List.of(a), "2 members holding 2 and 1",
                            x -> x.groupState() == GroupState.STABLE && x.members().size() == 2
                                    && partsOf(memberById(x, a.memberId())).size() == 2);
                    String childId = null;
                    for (var m : before.members()) if (!m.consumerId().equals(a.memberId())) childId = m.consumerId();
                    checkEq(partsOf(memberById(before, childId)), childOwned, "the child's described assignment");
                    a.events.clear();
                    child.destroyForcibly();  // SIGKILL: no leave heartbeat
                    long t0 = System.nanoTime();
                    child.waitFor(10, TimeUnit.SECONDS);
                    var right = describe(admin);
                    checkEq(right.members().size(), 2, "members right after the kill (the dead one until its session expires)");
                    checkEq(partsOf(memberById(right, childId)), childOwned, "the killed member keeps its assignment until expiry");
                    waitPolling(List.of(a), 40, "a owns 3 after the child's session expired", () -> a.owned().size() == 3);
                    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                    System.out.println("moved " + tookMs + " ms after the kill");
                    // The session runs from the child's last heartbeat, at most one interval before the kill.
                    check(tookMs >= SESSION_TIMEOUT_MS - HEARTBEAT_INTERVAL_MS - 500,
                            "moved before group.consumer.session.timeout.ms: " + tookMs + " ms");
                    checkEq(a.events, List.of("assigned " + childOwned), "a's events: the dead member's partitions assigned");
                    var d = describeWhen(admin, List.of(a), "one member with 3 partitions",
                            x -> x.members().size() == 1 && partsOf(x.members().iterator().next()).size() == 3);
                    checkEq(d.members().iterator().next().consumerId(), a.memberId(), "remaining member");
                    checkEq(d.groupState(), GroupState.STABLE, "state");
                } finally {
                    child.destroyForcibly();
                }
            }
        }
    }

    /** The member cg848_session_expiry kills: joins the group and polls until killed (60 s at most). */
    static void child() throws Exception {
        Owners owners = new Owners();
        try (Member m = new Member("child", owners, Map.of()).subscribe(topic("t"))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            int seen = 0;
            while (System.nanoTime() < deadline) {
                m.poll();
                if (m.events.size() != seen) {
                    seen = m.events.size();
                    System.out.println("OWNED " + m.owned());
                    System.out.flush();
                }
            }
        }
    }

    static void staticRestart() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic("t");
            Compat.createTopic(admin, t, 3, null);
            Owners owners = new Owners();
            Map<String, Object> sa = Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "member-a");
            Map<String, Object> sb = Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "member-b");
            try (Member b = new Member("b", owners, sb)) {
                Set<Integer> aBefore;
                String oldId;
                try (Member a = new Member("a", owners, sa).subscribe(t)) {
                    b.subscribe(t);
                    twoMembers(admin, a, b);
                    aBefore = a.owned();
                    oldId = a.memberId();
                }
                Set<Integer> bBefore = b.owned();
                b.events.clear();
                // A static member that closes leaves with epoch -2: the coordinator keeps it, and
                // its partitions, for the session timeout.
                var during = describe(admin);
                System.out.println("after a's static leave: " + during);
                checkEq(during.members().size(), 2, "members while member-a is away");
                // member-a's epoch (-2) is not the group's: the group is Reconciling until it is back.
                checkEq(during.groupState(), GroupState.RECONCILING, "state while member-a is away");
                MemberDescription away = null;
                for (var m : during.members()) if (m.groupInstanceId().equals(Optional.of("member-a"))) away = m;
                check(away != null, "member-a still described: " + during);
                checkEq(partsOf(away), aBefore, "member-a's partitions kept while it is away");
                long t0 = System.nanoTime();
                try (Member a2 = new Member("a2", owners, sa).subscribe(t)) {
                    waitPolling(List.of(a2, b), 30, "restarted member-a assigned", () -> !a2.owned().isEmpty());
                    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                    check(tookMs < SESSION_TIMEOUT_MS, "rejoined within the session: " + tookMs + " ms");
                    checkEq(a2.owned(), aBefore, "member-a gets the same partitions");
                    checkEq(a2.events, List.of("assigned " + aBefore), "member-a's events");
                    checkEq(b.owned(), bBefore, "member-b undisturbed");
                    checkEq(b.events, List.of(), "member-b's events");
                    var d = describeWhen(admin, List.of(a2, b), "2 members, member-a back",
                            x -> x.groupState() == GroupState.STABLE && x.members().size() == 2
                                    && x.members().stream().anyMatch(m -> m.consumerId().equals(a2.memberId())));
                    var m = memberById(d, a2.memberId());
                    checkEq(m.groupInstanceId(), Optional.of("member-a"), "instance id of the restarted member");
                    checkEq(partsOf(m), aBefore, "described assignment of member-a");
                    check(!a2.memberId().equals(oldId), "the restarted member has a new member id");
                    checkEq(owners.violations, List.of(), "partitions owned by two members at once");
                }
            }
        }
    }

    static void regex() throws Exception {
        try (Admin admin = Compat.admin()) {
            String ta = topic("re-a"), tb = topic("re-b"), other = topic("other");
            Compat.createTopic(admin, ta, 2, null);
            Compat.createTopic(admin, other, 1, null);
            produce(ta, 2, 1, 0);
            produce(other, 1, 1, 0);
            Owners owners = new Owners();
            String pattern = Compat.prefix + "-re-.*";
            try (Member a = new Member("a", owners, Map.of()).subscribe(new SubscriptionPattern(pattern))) {
                List<Member> ms = List.of(a);
                waitPolling(ms, 30, "re-a's 2 records", () -> a.records.size() >= 2);
                checkEq(a.ownedPartitions(), Set.of(new TopicPartition(ta, 0), new TopicPartition(ta, 1)), "assignment before re-b exists");
                Compat.createTopic(admin, tb, 1, null);
                produce(tb, 1, 1, 0);
                waitPolling(ms, 40, "re-b picked up and its record consumed", () -> a.records.size() >= 3);
                checkEq(a.ownedPartitions(), Set.of(new TopicPartition(ta, 0), new TopicPartition(ta, 1),
                        new TopicPartition(tb, 0)), "assignment once re-b exists");
                checkEq(a.events, List.of("assigned [re-a:0, re-a:1]", "assigned [re-b:0]"), "rebalance events");
                checkOnce(ms, 3, "records");
                for (var r : a.records) check(!r.topic().equals(other), "consumed the unmatched topic");
                var d = describeWhen(admin, ms, "the member with re-a and re-b",
                        x -> x.members().size() == 1 && x.members().iterator().next().assignment().topicPartitions().size() == 3);
                checkEq(d.members().iterator().next().assignment().topicPartitions(), a.ownedPartitions(), "described assignment");
                checkEq(d.groupState(), GroupState.STABLE, "state");
            }
        }
    }

    static void commitResume() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic("t");
            Compat.createTopic(admin, t, 3, null);
            produce(t, 3, 5, 0);
            Owners owners = new Owners();
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            for (int p = 0; p < 3; p++) commit.put(new TopicPartition(t, p), new OffsetAndMetadata(3, "m" + p));
            try (Member a = new Member("a", owners, Map.of()).subscribe(t)) {
                a.commitOnRevoke = false;  // only the explicit commit below
                waitPolling(List.of(a), 30, "15 records", () -> a.records.size() >= 15);
                a.c.commitSync(commit);
                checkEq(offsetsOf(a.c.committed(commit.keySet())), offsetsOf(commit), "committed offsets seen by the member");
            }
            checkEq(offsetsOf(admin.listConsumerGroupOffsets(group()).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS)),
                    offsetsOf(commit), "committed offsets seen by the admin client");
            var d = describe(admin);
            checkEq(d.type(), GroupType.CONSUMER, "type after close");
            checkEq(d.groupState(), GroupState.EMPTY, "state after close");
            try (Member b = new Member("b", owners, Map.of()).subscribe(t)) {
                waitPolling(List.of(b), 30, "6 records", () -> b.records.size() >= 6);
                waitPolling(List.of(b), 30, "positions at the end", () -> {
                    for (int p = 0; p < 3; p++) if (b.c.position(new TopicPartition(t, p)) != 5) return false;
                    return true;
                });
                Set<String> got = new TreeSet<>(), want = new TreeSet<>();
                for (var r : b.records) got.add(r.partition() + "@" + r.offset() + "=" + new String(r.value(), StandardCharsets.UTF_8));
                for (int p = 0; p < 3; p++) for (int i = 3; i < 5; i++) want.add(p + "@" + i + "=p" + p + "-" + i);
                checkEq(b.records.size(), 6, "records after resume");
                checkEq(got, want, "the new member resumes at the committed offsets");
                b.c.commitSync();
            }
            var after = admin.listConsumerGroupOffsets(group()).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            for (int p = 0; p < 3; p++) checkEq(after.get(new TopicPartition(t, p)).offset(), 5L, "committed " + p + " at the end");
        }
    }

    /** partition -> "offset/metadata" (the leader epoch a commit carries is the client's business). */
    static Map<String, String> offsetsOf(Map<TopicPartition, OffsetAndMetadata> m) {
        Map<String, String> out = new TreeMap<>();
        for (var e : m.entrySet()) out.put(e.getKey().toString(), e.getValue().offset() + "/" + e.getValue().metadata());
        return out;
    }

    static void mixedMigration() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic("t");
            Compat.createTopic(admin, t, 4, null);
            produce(t, 4, 2, 0);
            Owners owners = new Owners();
            Map<String, Object> classic = Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                    ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000, ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
            try (Member k = new Member("classic", owners, classic).subscribe(t)) {
                waitPolling(List.of(k), 30, "the classic member consumes 8", () -> k.records.size() >= 8);
                var d0 = describe(admin);
                checkEq(d0.type(), GroupType.CLASSIC, "type before the consumer member joins");
                checkEq(d0.groupState(), GroupState.STABLE, "state before");
                k.c.commitSync();
                try (Member n = new Member("consumer", owners, Map.of()).subscribe(t)) {
                    List<Member> ms = List.of(k, n);
                    waitPolling(ms, 40, "2/2 split", () -> k.owned().size() == 2 && n.owned().size() == 2
                            && Collections.disjoint(k.owned(), n.owned()));
                    var d = describeWhen(admin, ms, "consumer group, Stable, 2 members holding 2 each",
                            x -> x.type() == GroupType.CONSUMER && x.groupState() == GroupState.STABLE && x.members().size() == 2
                                    && x.members().stream().allMatch(m -> partsOf(m).size() == 2));
                    System.out.println("converted: " + d);
                    var km = memberById(d, k.memberId());
                    var nm = memberById(d, n.memberId());
                    checkEq(km.upgraded(), Optional.of(false), "the classic member is not upgraded");
                    checkEq(nm.upgraded(), Optional.of(true), "the consumer member is");
                    checkEq(partsOf(km), k.owned(), "classic member's described assignment");
                    checkEq(partsOf(nm), n.owned(), "consumer member's described assignment");
                    Set<Integer> all = new TreeSet<>(k.owned());
                    all.addAll(n.owned());
                    checkEq(all, Set.of(0, 1, 2, 3), "every partition assigned once");
                    checkEq(owners.violations, List.of(), "partitions owned by two members at once");
                    produce(t, 4, 2, 2);
                    waitPolling(ms, 30, "16 records", () -> consumedTotal(ms) >= 16);
                    checkOnce(ms, 16, "records");
                    for (var r : k.records) if (r.offset() >= 2) check(k.owned().contains(r.partition()), "classic consumed " + r.partition());
                    for (var r : n.records) check(n.owned().contains(r.partition()), "consumer consumed " + r.partition());
                    checkEq(n.records.size(), 4, "the consumer member consumes only new records of its partitions");
                }
                // The last consumer-protocol member left: the group goes back to classic.
                waitPolling(List.of(k), 30, "the classic member owns 4 again", () -> k.owned().size() == 4);
                var back = describe(admin);
                System.out.println("after the consumer member left: " + back);
                checkEq(back.type(), GroupType.CLASSIC, "type once the consumer member left");
                checkEq(back.members().size(), 1, "members once the consumer member left");
                checkEq(owners.violations, List.of(), "partitions owned by two members at once");
            }
        }
    }

    static boolean run(String scenario) throws Exception {
        switch (scenario) {
            case "cg848_join_consume": joinConsume(); return true;
            case "cg848_second_member": secondMember(); return true;
            case "cg848_leave": leave(); return true;
            case "cg848_session_expiry": sessionExpiry(); return true;
            case "cg848_child": child(); return true;
            case "cg848_static_restart": staticRestart(); return true;
            case "cg848_regex": regex(); return true;
            case "cg848_commit_resume": commitResume(); return true;
            case "cg848_mixed_migration": mixedMigration(); return true;
            default: return false;
        }
    }
}
