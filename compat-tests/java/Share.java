// Share group scenarios (KIP-932, KIP-1222) for the Java client: KafkaShareConsumer of
// kafka-clients 4.4. Every consumer runs in this process and is polled from this thread, except
// the one of share_lock_expiry that is killed: a child JVM (scenario share_child).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidRecordStateException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class Share {
    // The broker settings the harness gives both brokers (harness/brokers.py COMMON_PROPERTIES).
    static final int DELIVERY_COUNT_LIMIT = 3;
    static final int SESSION_TIMEOUT_MS = 8000;
    static final int HEARTBEAT_INTERVAL_MS = 500;
    // The group's share.record.lock.duration.ms where a scenario waits for a lock to run out
    // (the broker allows down to group.share.min.record.lock.duration.ms=1000).
    static final int SHORT_LOCK_MS = 3000;
    // The lock of the records a killed consumer holds in share_lock_expiry: long enough to tell
    // their release on the closed connection from their lock running out.
    static final int KILLED_HOLDER_LOCK_MS = 15000;
    // The lock of share_delivery_limit's record that is never acknowledged.
    static final int EXPIRING_LOCK_MS = 2000;
    // How long a consumer polls to show that nothing more comes.
    static final int QUIET_MS = 3000;

    static String topic() { return Compat.topic("t"); }
    static String group() { return Compat.group("share"); }

    static void check(boolean cond, String what) { Compat.check(cond, what); }
    static void checkEq(Object actual, Object expected, String what) { Compat.checkEq(actual, expected, what); }

    static KafkaShareConsumer<byte[], byte[]> consumer(String clientId, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Compat.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group());
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        Compat.security.forEach((k, v) -> p.put((String) k, v));
        p.putAll(extra);
        return new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static Map<String, Object> explicit() {
        return Map.of(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
    }

    /** The group's configs (a GROUP resource): share.auto.offset.reset=earliest, so records
     *  produced before the group exists are delivered, and `extra`. */
    static void groupConfigs(Admin admin, Map<String, String> extra) throws Exception {
        Map<String, String> all = new TreeMap<>(extra);
        all.put("share.auto.offset.reset", "earliest");
        ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group());
        List<AlterConfigOp> ops = new ArrayList<>();
        for (var e : all.entrySet()) ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET));
        admin.incrementalAlterConfigs(Map.of(r, ops)).all().get(30, TimeUnit.SECONDS);
        Config described = admin.describeConfigs(List.of(r)).all().get(30, TimeUnit.SECONDS).get(r);
        for (var e : all.entrySet()) checkEq(described.get(e.getKey()).value(), e.getValue(), "group config " + e.getKey());
    }

    static void produce(String t, int from, int count) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = Compat.producer(Map.of())) {
            for (int i = from; i < from + count; i++)
                p.send(new ProducerRecord<>(t, 0, null, ("r" + i).getBytes(StandardCharsets.UTF_8)));
            p.flush();
        }
    }

    static String value(ConsumerRecord<byte[], byte[]> r) { return new String(r.value(), StandardCharsets.UTF_8); }

    static int deliveryCount(ConsumerRecord<byte[], byte[]> r) {
        return r.deliveryCount().map(Short::intValue).orElseThrow(() -> new AssertionError("no delivery count on " + r));
    }

    /** "offset:deliveryCount" of each record, in order. */
    static List<String> shown(List<ConsumerRecord<byte[], byte[]>> rs) {
        List<String> out = new ArrayList<>();
        for (var r : rs) out.add(r.offset() + ":" + deliveryCount(r));
        return out;
    }

    static List<ConsumerRecord<byte[], byte[]>> poll(KafkaShareConsumer<byte[], byte[]> c, int ms) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        for (var r : c.poll(Duration.ofMillis(ms))) out.add(r);
        return out;
    }

    /** Polls until a poll returns records (the first such poll's records), or fails after `seconds`. */
    static List<ConsumerRecord<byte[], byte[]>> pollSome(KafkaShareConsumer<byte[], byte[]> c, int seconds, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            var rs = poll(c, 200);
            if (!rs.isEmpty()) return rs;
        }
        throw new AssertionError("timed out after " + seconds + "s waiting for " + what);
    }

    /** Polls for `ms` and answers every record delivered meanwhile; each non-empty poll's
     *  records go to `ack` before the next poll, as explicit mode wants them acknowledged first. */
    static List<ConsumerRecord<byte[], byte[]>> pollFor(KafkaShareConsumer<byte[], byte[]> c, int ms,
                                                       java.util.function.Consumer<List<ConsumerRecord<byte[], byte[]>>> ack) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (System.nanoTime() < deadline) {
            var rs = poll(c, 200);
            if (!rs.isEmpty()) {
                out.addAll(rs);
                ack.accept(rs);
            }
        }
        return out;
    }

    /** commitSync: every partition's outcome must be a success. */
    static void commit(KafkaShareConsumer<byte[], byte[]> c, String what) {
        var result = c.commitSync(Duration.ofSeconds(30));
        for (var e : result.entrySet())
            check(e.getValue().isEmpty(), what + ": commitSync failed for " + e.getKey() + ": " + e.getValue());
    }

    static void ackAll(KafkaShareConsumer<byte[], byte[]> c, List<ConsumerRecord<byte[], byte[]>> rs, AcknowledgeType type) {
        for (var r : rs) c.acknowledge(r, type);
    }

    /** The description, or null while the group does not exist (GroupIdNotFoundException). */
    static ShareGroupDescription describeIfAny(Admin admin) throws Exception {
        try {
            return describe(admin);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException) return null;
            throw e;
        }
    }

    static ShareGroupDescription describe(Admin admin) throws Exception {
        return admin.describeShareGroups(List.of(group())).all().get(30, TimeUnit.SECONDS).get(group());
    }

    /** Partition 0's "startOffset/lag" as ListShareGroupOffsets answers it. Kafka 4.4 answers
     *  the share-partition start offset last written to the share coordinator, which is the one
     *  that stood before the acknowledgement that wrote it (the move past the records it made
     *  terminal is written with the next change), and a lag of the records neither
     *  acknowledged nor archived. */
    static String offsets(Admin admin) throws Exception {
        var offsets = admin.listShareGroupOffsets(Map.of(group(), new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group()).get(30, TimeUnit.SECONDS);
        var info = offsets.get(new TopicPartition(topic(), 0));
        check(info != null, "ListShareGroupOffsets has " + topic() + "-0: " + offsets);
        return info.startOffset() + "/" + info.lag().map(String::valueOf).orElse("none");
    }

    /** Waits until offsets() is `expected` ("startOffset/lag", or "*" + "/lag" for any start
     *  offset): the state is written while the acknowledgement is answered, the answer to
     *  ListShareGroupOffsets may still be on its way. */
    static void waitOffsets(Admin admin, String expected, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        String last = null;
        while (System.nanoTime() < deadline) {
            last = offsets(admin);
            if (last.equals(expected) || (expected.startsWith("*/") && last.endsWith(expected.substring(1)))) {
                System.out.println("share-partition start offset/lag " + last + " (" + what + ")");
                return;
            }
            Thread.sleep(200);
        }
        throw new AssertionError(what + ": share-partition start offset/lag expected " + expected + ", got " + last);
    }

    // ---------- scenarios ----------

    /** Three consumers share one partition, records produced once all three are assigned it:
     *  each record is delivered once in all (delivery count 1), each consumer gets some. */
    static void threeConsumers() throws Exception {
        final int records = 300;
        try (Admin admin = Compat.admin()) {
            String t = topic();
            Compat.createTopic(admin, t, 1, null);
            groupConfigs(admin, Map.of());
            // record_limit: a fetch acquires at most max.poll.records, so the three take turns.
            Map<String, Object> cfg = Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10,
                    ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "record_limit");
            List<KafkaShareConsumer<byte[], byte[]>> cs = new ArrayList<>();
            try {
                for (String name : List.of("a", "b", "c")) {
                    var c = consumer(Compat.prefix + "-" + name, cfg);
                    c.subscribe(List.of(t));
                    cs.add(c);
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
                ShareGroupDescription d = null;
                while (System.nanoTime() < deadline) {
                    for (var c : cs) check(poll(c, 100).isEmpty(), "a record before any was produced");
                    d = describeIfAny(admin);
                    if (d != null && d.members().size() == 3 && d.members().stream()
                            .allMatch(m -> m.assignment().topicPartitions().equals(Set.of(new TopicPartition(t, 0))))) break;
                }
                System.out.println("described: " + d);
                checkEq(d.members().size(), 3, "members");
                for (var m : d.members())
                    checkEq(m.assignment().topicPartitions(), Set.of(new TopicPartition(t, 0)), "every member is assigned the partition");
                checkEq(d.groupState(), GroupState.STABLE, "state");
                Set<String> clients = new TreeSet<>();
                for (var m : d.members()) clients.add(m.clientId());
                checkEq(clients, new TreeSet<>(List.of(Compat.prefix + "-a", Compat.prefix + "-b", Compat.prefix + "-c")), "client ids");

                produce(t, 0, records);
                Map<Long, Integer> times = new TreeMap<>();
                int[] perConsumer = new int[3];
                List<String> counts = new ArrayList<>();
                long consumeDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (times.size() < records && System.nanoTime() < consumeDeadline) {
                    for (int i = 0; i < 3; i++) {
                        var rs = poll(cs.get(i), 100);
                        for (var r : rs) {
                            times.merge(r.offset(), 1, Integer::sum);
                            checkEq(value(r), "r" + r.offset(), "value at " + r.offset());
                            if (deliveryCount(r) != 1) counts.add(r.offset() + ":" + deliveryCount(r));
                        }
                        perConsumer[i] += rs.size();
                        // Implicit acknowledgement: commitSync accepts the records of the last poll.
                        if (!rs.isEmpty()) commit(cs.get(i), "accept");
                    }
                }
                // Nothing comes again once every record is accepted.
                long quiet = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(QUIET_MS);
                while (System.nanoTime() < quiet)
                    for (int i = 0; i < 3; i++) {
                        var rs = poll(cs.get(i), 100);
                        for (var r : rs) times.merge(r.offset(), 1, Integer::sum);
                        if (!rs.isEmpty()) commit(cs.get(i), "accept");
                    }
                System.out.println("records per consumer: " + Arrays.toString(perConsumer));
                checkEq(times.size(), records, "distinct records delivered");
                List<String> twice = new ArrayList<>();
                times.forEach((o, n) -> { if (n != 1) twice.add(o + " x" + n); });
                checkEq(twice, List.of(), "records delivered more than once");
                checkEq(counts, List.of(), "records with a delivery count other than 1");
                for (int i = 0; i < 3; i++) check(perConsumer[i] > 0, "consumer " + i + " got no record: " + Arrays.toString(perConsumer));
                waitOffsets(admin, "*/0", "every record accepted");
            } finally {
                for (var c : cs) c.close(Duration.ofSeconds(20));
            }
            var after = describe(admin);
            checkEq(after.groupState(), GroupState.EMPTY, "state once all three closed");
            checkEq(after.members().size(), 0, "members once all three closed");
        }
    }

    /** A consumer stops polling while it holds records: they go to another consumer once the
     *  group's lock duration has passed since it acquired them, with delivery count 2, and its
     *  late acknowledgement fails with InvalidRecordStateException. Then a consumer in a child
     *  JVM is killed (SIGKILL) holding records: another consumer gets them, with count 2. */
    static void lockExpiry() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic();
            Compat.createTopic(admin, t, 1, null);
            groupConfigs(admin, Map.of("share.record.lock.duration.ms", String.valueOf(SHORT_LOCK_MS)));
            produce(t, 0, 10);
            try (var a = consumer(Compat.prefix + "-a", explicit()); var b = consumer(Compat.prefix + "-b", explicit())) {
                a.subscribe(List.of(t));
                List<ConsumerRecord<byte[], byte[]>> held = new ArrayList<>();
                long acquiredAt = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (held.size() < 10 && System.nanoTime() < deadline) {
                    long before = System.nanoTime();
                    var rs = poll(a, 200);
                    if (!rs.isEmpty() && held.isEmpty()) acquiredAt = before;
                    // Keep them (acquired, unacknowledged): a later poll would need them acknowledged.
                    held.addAll(rs);
                    if (!rs.isEmpty()) break;
                }
                checkEq(shown(held), List.of("0:1", "1:1", "2:1", "3:1", "4:1", "5:1", "6:1", "7:1", "8:1", "9:1"),
                        "a's records (offset:delivery count)");
                checkEq(a.acquisitionLockTimeoutMs(), Optional.of(SHORT_LOCK_MS), "the lock duration the broker announced");
                // a stops polling (its heartbeats go on); b joins and gets the records once a's locks run out.
                b.subscribe(List.of(t));
                List<ConsumerRecord<byte[], byte[]>> got = pollSome(b, 30, "b gets a's records after the lock duration");
                long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - acquiredAt);
                System.out.println("b got " + shown(got) + " " + waitedMs + " ms after a's poll started");
                check(waitedMs >= SHORT_LOCK_MS - 200, "b got a's records after " + waitedMs + " ms, before the lock duration");
                check(waitedMs <= SHORT_LOCK_MS + 10_000, "b got a's records only after " + waitedMs + " ms");
                List<ConsumerRecord<byte[], byte[]>> all = new ArrayList<>(got);
                while (all.size() < 10) {
                    ackAll(b, all.subList(all.size() - got.size(), all.size()), AcknowledgeType.ACCEPT);
                    got = pollSome(b, 20, "the rest of a's records");
                    all.addAll(got);
                }
                checkEq(shown(all), List.of("0:2", "1:2", "2:2", "3:2", "4:2", "5:2", "6:2", "7:2", "8:2", "9:2"),
                        "b's records (offset:delivery count)");
                // a's acknowledgement comes too late: b holds the records now.
                ackAll(a, held, AcknowledgeType.ACCEPT);
                var late = a.commitSync(Duration.ofSeconds(30));
                System.out.println("a's late commit: " + late);
                checkEq(late.size(), 1, "partitions in a's late commit");
                var failure = late.values().iterator().next();
                check(failure.isPresent() && failure.get() instanceof InvalidRecordStateException,
                        "a's late acknowledgement fails with InvalidRecordStateException: " + failure);
                checkEq(failure.get().getMessage(), "The record state is invalid. The acknowledgement of delivery could not be completed.",
                        "its message");
                ackAll(b, got, AcknowledgeType.ACCEPT);
                commit(b, "b accepts");
                waitOffsets(admin, "0/0", "b accepted 0..9");
            }
            killedHolder(admin, t);
        }
    }

    /** The child (scenario share_child) acquires 10..19 under a 15 s lock and stops; it is
     *  killed with SIGKILL: its records go to another consumer well before their lock runs out,
     *  as Kafka releases the records of a share session whose connection closed. */
    static void killedHolder(Admin admin, String t) throws Exception {
        groupConfigs(admin, Map.of("share.record.lock.duration.ms", String.valueOf(KILLED_HOLDER_LOCK_MS)));
        produce(t, 10, 10);
        ProcessBuilder pb = new ProcessBuilder("java", "-cp", System.getProperty("java.class.path"), "Compat",
                "--bootstrap", Compat.bootstrap, "--scenario", "share_child", "--prefix", Compat.prefix);
        pb.redirectErrorStream(true);
        Process child = pb.start();
        List<String> childLines = Collections.synchronizedList(new ArrayList<>());
        Thread reader = new Thread(() -> {
            try (var r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    childLines.add(line);
                    System.out.println("child: " + line);
                }
            } catch (java.io.IOException e) {
                // the child was killed
            }
        });
        reader.setDaemon(true);
        reader.start();
        try {
            Compat.waitUntil(() -> childLines.stream().anyMatch(l -> l.startsWith("ACQUIRED")), 60, "the child acquires records");
            checkEq(childLines.stream().filter(l -> l.startsWith("ACQUIRED")).findFirst().orElse(""),
                    "ACQUIRED [10:1, 11:1, 12:1, 13:1, 14:1, 15:1, 16:1, 17:1, 18:1, 19:1]", "the child's records");
            checkEq(memberClients(describe(admin)), List.of(Compat.prefix + "-child"), "members before the kill");
        } finally {
            child.destroyForcibly();  // SIGKILL: no acknowledgement, no leave
            child.waitFor(10, TimeUnit.SECONDS);
        }
        long killedAt = System.nanoTime();
        try (var c = consumer(Compat.prefix + "-c", explicit())) {
            c.subscribe(List.of(t));
            List<ConsumerRecord<byte[], byte[]>> all = new ArrayList<>();
            List<ConsumerRecord<byte[], byte[]>> got = pollSome(c, 30, "c gets the killed child's records");
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            System.out.println("c got " + shown(got) + " " + waitedMs + " ms after the kill");
            all.addAll(got);
            while (all.size() < 10) {
                ackAll(c, got, AcknowledgeType.ACCEPT);
                got = pollSome(c, 20, "the rest of the child's records");
                all.addAll(got);
            }
            checkEq(shown(all), List.of("10:2", "11:2", "12:2", "13:2", "14:2", "15:2", "16:2", "17:2", "18:2", "19:2"),
                    "c's records (offset:delivery count)");
            check(waitedMs < KILLED_HOLDER_LOCK_MS - 5000, "c got the child's records only after " + waitedMs
                    + " ms: not released when the child's connection closed");
            ackAll(c, got, AcknowledgeType.ACCEPT);
            commit(c, "c accepts");
            waitOffsets(admin, "10/0", "c accepted 10..19");
            // The group forgets the killed member only when its session times out.
            check(memberClients(describe(admin)).contains(Compat.prefix + "-child"),
                    "the killed member is still described " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt)
                            + " ms after the kill");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            List<String> members = List.of();
            while (System.nanoTime() < deadline) {
                checkEq(shown(poll(c, 200)), List.of(), "c's deliveries once all are accepted");
                members = memberClients(describe(admin));
                if (!members.contains(Compat.prefix + "-child")) break;
            }
            long goneMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            System.out.println("the killed member left the description " + goneMs + " ms after the kill");
            checkEq(members, List.of(Compat.prefix + "-c"), "members once the killed one's session expired");
            // Its session runs from its last heartbeat, at most one interval before the kill.
            check(goneMs >= SESSION_TIMEOUT_MS - HEARTBEAT_INTERVAL_MS - 500,
                    "the killed member left " + goneMs + " ms after the kill, before its session timed out");
        }
    }

    /** The client ids of the described members, sorted. */
    static List<String> memberClients(ShareGroupDescription d) {
        List<String> out = new ArrayList<>();
        for (var m : d.members()) out.add(m.clientId());
        Collections.sort(out);
        return out;
    }

    /** The killed holder of share_lock_expiry: acquires records, prints them and stops polling. */
    static void child() throws Exception {
        try (var c = consumer(Compat.prefix + "-child", explicit())) {
            c.subscribe(List.of(topic()));
            var rs = pollSome(c, 60, "records for the child");
            System.out.println("ACQUIRED " + shown(rs));
            System.out.flush();
            Thread.sleep(120_000);
        }
    }

    /** Explicit acknowledgement: 0 accepted, 1 released (delivered again with count 2), 2
     *  rejected (never again); then 3, produced afterwards, is the only new delivery. */
    static void explicitAck() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic();
            Compat.createTopic(admin, t, 1, null);
            groupConfigs(admin, Map.of());
            produce(t, 0, 3);
            try (var c = consumer(Compat.prefix + "-a", explicit())) {
                c.subscribe(List.of(t));
                var rs = pollSome(c, 30, "3 records");
                checkEq(shown(rs), List.of("0:1", "1:1", "2:1"), "first delivery (offset:delivery count)");
                c.acknowledge(rs.get(0), AcknowledgeType.ACCEPT);
                c.acknowledge(rs.get(1), AcknowledgeType.RELEASE);
                c.acknowledge(rs.get(2), AcknowledgeType.REJECT);
                commit(c, "accept, release, reject");
                var again = pollSome(c, 20, "the released record");
                checkEq(shown(again), List.of("1:2"), "redelivery of the released record");
                checkEq(value(again.get(0)), "r1", "its value");
                ackAll(c, again, AcknowledgeType.ACCEPT);
                commit(c, "accept the redelivered record");
                var nothing = pollFor(c, QUIET_MS, x -> ackAll(c, x, AcknowledgeType.ACCEPT));
                checkEq(shown(nothing), List.of(), "deliveries after every record was acknowledged");
                waitOffsets(admin, "1/0", "0 and 1 accepted, 2 rejected");
                produce(t, 3, 1);
                var fresh = pollSome(c, 20, "the record produced afterwards");
                checkEq(shown(fresh), List.of("3:1"), "the only new delivery");
                ackAll(c, fresh, AcknowledgeType.ACCEPT);
                commit(c, "accept 3");
                waitOffsets(admin, "3/0", "3 accepted");
            }
        }
    }

    /** Record 0 is released each time it comes: delivered group.share.delivery.count.limit (3)
     *  times, then archived (never delivered again); record 1 is accepted at once. */
    static void deliveryLimit() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic();
            Compat.createTopic(admin, t, 1, null);
            groupConfigs(admin, Map.of());
            produce(t, 0, 2);
            try (var c = consumer(Compat.prefix + "-a", explicit())) {
                c.subscribe(List.of(t));
                List<String> deliveries = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
                long lastDeliveryAt = System.nanoTime();
                // Until QUIET_MS pass without a delivery.
                while (System.nanoTime() < deadline
                        && System.nanoTime() - lastDeliveryAt < TimeUnit.MILLISECONDS.toNanos(QUIET_MS)) {
                    var rs = poll(c, 200);
                    if (rs.isEmpty()) continue;
                    lastDeliveryAt = System.nanoTime();
                    deliveries.addAll(shown(rs));
                    for (var r : rs) c.acknowledge(r, r.offset() == 0 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                    commit(c, "release 0, accept the others");
                }
                checkEq(deliveries, List.of("0:1", "1:1", "0:2", "0:3"), "deliveries (offset:delivery count)");
                waitOffsets(admin, "0/0", "0 archived, 1 accepted");
                produce(t, 2, 1);
                var fresh = pollSome(c, 20, "the record produced afterwards");
                checkEq(shown(fresh), List.of("2:1"), "the next delivery");
                ackAll(c, fresh, AcknowledgeType.ACCEPT);
                commit(c, "accept 2");
                waitOffsets(admin, "2/0", "2 accepted");
            }
            expiredToTheLimit(admin, t);
        }
    }

    /** Record 3 is never acknowledged: each of three consumers gets it once its previous lock
     *  (the group's, 2 s) ran out, with counts 1, 2, 3, and keeps it; once the third lock runs out
     *  it is archived: a fourth consumer gets only record 4, produced afterwards. */
    static void expiredToTheLimit(Admin admin, String t) throws Exception {
        groupConfigs(admin, Map.of("share.record.lock.duration.ms", String.valueOf(EXPIRING_LOCK_MS)));
        produce(t, 3, 1);
        List<KafkaShareConsumer<byte[], byte[]>> holders = new ArrayList<>();
        try {
            List<String> deliveries = new ArrayList<>();
            for (int i = 0; i < DELIVERY_COUNT_LIMIT; i++) {
                var h = consumer(Compat.prefix + "-holder" + i, explicit());
                holders.add(h);
                h.subscribe(List.of(t));
                deliveries.addAll(shown(pollSome(h, 30, "record 3 for holder " + i)));
            }
            checkEq(deliveries, List.of("3:1", "3:2", "3:3"), "record 3's deliveries, never acknowledged");
            try (var last = consumer(Compat.prefix + "-last", explicit())) {
                last.subscribe(List.of(t));
                var nothing = pollFor(last, EXPIRING_LOCK_MS + QUIET_MS, x -> ackAll(last, x, AcknowledgeType.ACCEPT));
                checkEq(shown(nothing), List.of(), "deliveries once record 3's third lock ran out");
                produce(t, 4, 1);
                var fresh = pollSome(last, 20, "record 4");
                checkEq(shown(fresh), List.of("4:1"), "the next delivery");
                ackAll(last, fresh, AcknowledgeType.ACCEPT);
                commit(last, "accept 4");
                waitOffsets(admin, "*/0", "3 archived, 4 accepted");
            }
        } finally {
            for (var h : holders) h.close(Duration.ofSeconds(10));
        }
    }

    /** Asks the harness to restart the broker (run.py's COMPAT_BROKER_CONTROL protocol) and
     *  waits until it is back. */
    static int restarts = 0;

    static void restartBroker(String how) throws Exception {
        String dir = System.getenv("COMPAT_BROKER_CONTROL");
        if (dir == null || dir.isEmpty())
            throw new Compat.NotApplicable("the broker is not the harness's own (--bootstrap): it cannot be restarted");
        String name = "restart-" + (++restarts);
        Path request = Path.of(dir, name + ".request"), done = Path.of(dir, name + ".done");
        Path tmp = Path.of(dir, name + ".request.tmp");
        Files.writeString(tmp, how + "\n");
        Files.move(tmp, request, StandardCopyOption.ATOMIC_MOVE);
        long started = System.nanoTime();
        long deadline = started + TimeUnit.SECONDS.toNanos(150);
        while (!Files.exists(done)) {
            check(System.nanoTime() < deadline, "the harness restarts the broker");
            Thread.sleep(100);
        }
        String answer = Files.readString(done).trim();
        System.out.println("broker restart (" + how + "): " + answer + " after "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) + " ms");
        checkEq(answer, "ok", "the broker restart");
    }

    /** 20 records: 0..9 accepted, 10..14 released, 15..19 left acquired; the broker restarts
     *  (SIGTERM): a new consumer gets 10..14 with delivery count 2 and 15..19 with count 1, never
     *  0..9. Then 22..31: 22..26 accepted, 27..31 left acquired, and the broker is killed
     *  (SIGKILL) and started again: a new consumer gets exactly 27..31, with count 1. */
    static void restart() throws Exception {
        if (System.getenv("COMPAT_BROKER_CONTROL") == null)
            throw new Compat.NotApplicable("the broker is not the harness's own (--bootstrap): it cannot be restarted");
        String t = topic();
        try (Admin admin = Compat.admin()) {
            Compat.createTopic(admin, t, 1, null);
            groupConfigs(admin, Map.of());
            produce(t, 0, 20);
            var a = consumer(Compat.prefix + "-a", explicit());
            try {
                a.subscribe(List.of(t));
                List<ConsumerRecord<byte[], byte[]>> rs = pollSome(a, 30, "20 records");
                checkEq(rs.size(), 20, "records of the first poll");
                for (var r : rs) {
                    if (r.offset() < 10) a.acknowledge(r, AcknowledgeType.ACCEPT);
                    else if (r.offset() < 15) a.acknowledge(r, AcknowledgeType.RELEASE);
                }
                commit(a, "accept 0..9, release 10..14");
                waitOffsets(admin, "0/10", "0..9 accepted");
                restartBroker("term");
            } finally {
                // Its 15..19 were acquired from the broker that stopped; close must not hang on them.
                a.close(Duration.ofSeconds(10));
            }
        }
        try (Admin admin = Compat.admin()) {
            Compat.waitUntil(() -> Compat.hasLeaders(admin, t, 1), 60, "the topic's leader after the restart");
            waitOffsets(admin, "0/10", "after the restart");
            try (var b = consumer(Compat.prefix + "-b", explicit())) {
                b.subscribe(List.of(t));
                List<ConsumerRecord<byte[], byte[]>> all = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                long lastAt = System.nanoTime();
                while (System.nanoTime() < deadline
                        && (all.size() < 10 || System.nanoTime() - lastAt < TimeUnit.MILLISECONDS.toNanos(QUIET_MS))) {
                    var rs = poll(b, 200);
                    if (rs.isEmpty()) continue;
                    lastAt = System.nanoTime();
                    all.addAll(rs);
                    ackAll(b, rs, AcknowledgeType.ACCEPT);
                    commit(b, "b accepts");
                }
                List<String> got = shown(all);
                System.out.println("after the restart: " + got);
                // 10..14 were written as released after one delivery; the acquisition of 15..19 was
                // never written, so the restarted broker delivers them as for the first time.
                checkEq(got, List.of("10:2", "11:2", "12:2", "13:2", "14:2", "15:1", "16:1", "17:1", "18:1", "19:1"),
                        "deliveries after the restart (offset:delivery count)");
                waitOffsets(admin, "10/0", "everything accepted after the restart");
                produce(t, 20, 2);
                List<ConsumerRecord<byte[], byte[]>> fresh = new ArrayList<>();
                while (fresh.size() < 2) {
                    var rs = pollSome(b, 20, "the records produced after the restart");
                    fresh.addAll(rs);
                    ackAll(b, rs, AcknowledgeType.ACCEPT);
                }
                commit(b, "b accepts 20, 21");
                checkEq(shown(fresh), List.of("20:1", "21:1"), "the records produced after the restart");
            }
            waitOffsets(admin, "20/0", "20 and 21 accepted");
            produce(t, 22, 10);
            var c = consumer(Compat.prefix + "-c", explicit());
            try {
                c.subscribe(List.of(t));
                List<ConsumerRecord<byte[], byte[]>> rs = new ArrayList<>();
                while (rs.size() < 10) rs.addAll(pollSome(c, 30, "22..31"));
                checkEq(shown(rs), List.of("22:1", "23:1", "24:1", "25:1", "26:1", "27:1", "28:1", "29:1", "30:1", "31:1"),
                        "22..31 before the kill");
                for (var r : rs) if (r.offset() < 27) c.acknowledge(r, AcknowledgeType.ACCEPT);
                commit(c, "accept 22..26");
                waitOffsets(admin, "22/5", "22..26 accepted");
                restartBroker("kill");
            } finally {
                c.close(Duration.ofSeconds(10));
            }
        }
        try (Admin admin = Compat.admin()) {
            Compat.waitUntil(() -> Compat.hasLeaders(admin, t, 1), 60, "the topic's leader after the kill");
            try (var d = consumer(Compat.prefix + "-d", explicit())) {
                d.subscribe(List.of(t));
                List<ConsumerRecord<byte[], byte[]>> all = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                long lastAt = System.nanoTime();
                while (System.nanoTime() < deadline
                        && (all.size() < 5 || System.nanoTime() - lastAt < TimeUnit.MILLISECONDS.toNanos(QUIET_MS))) {
                    var rs = poll(d, 200);
                    if (rs.isEmpty()) continue;
                    lastAt = System.nanoTime();
                    all.addAll(rs);
                    ackAll(d, rs, AcknowledgeType.ACCEPT);
                    commit(d, "d accepts");
                }
                System.out.println("after the kill: " + shown(all));
                checkEq(shown(all), List.of("27:1", "28:1", "29:1", "30:1", "31:1"), "deliveries after the kill");
                waitOffsets(admin, "27/0", "everything accepted after the kill");
            }
        }
    }

    /** KIP-1222: a record renewed (AcknowledgeType.RENEW) every lock duration / 2 stays with its
     *  consumer past 2.5 lock durations, comes back to it in its polls with the same delivery
     *  count, and another consumer of the group never gets it; then it is accepted. */
    static void renew() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic();
            Compat.createTopic(admin, t, 1, null);
            groupConfigs(admin, Map.of("share.record.lock.duration.ms", String.valueOf(SHORT_LOCK_MS)));
            produce(t, 0, 1);
            try (var a = consumer(Compat.prefix + "-a", explicit()); var b = consumer(Compat.prefix + "-b", explicit())) {
                a.subscribe(List.of(t));
                var rs = pollSome(a, 30, "the record");
                checkEq(shown(rs), List.of("0:1"), "first delivery");
                b.subscribe(List.of(t));
                long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SHORT_LOCK_MS * 5L / 2);
                int renewals = 0;
                List<String> aGot = new ArrayList<>(), bGot = new ArrayList<>();
                List<ConsumerRecord<byte[], byte[]>> current = rs;
                long renewEveryNs = TimeUnit.MILLISECONDS.toNanos(SHORT_LOCK_MS / 2);
                long nextRenew = System.nanoTime();
                while (System.nanoTime() < until) {
                    if (!current.isEmpty() && System.nanoTime() >= nextRenew) {
                        ackAll(a, current, AcknowledgeType.RENEW);
                        commit(a, "renew");
                        renewals++;
                        nextRenew = System.nanoTime() + renewEveryNs;
                        current = List.of();
                    }
                    // A renewed record comes back in a later poll of its consumer.
                    if (current.isEmpty()) {
                        var again = poll(a, 100);
                        aGot.addAll(shown(again));
                        if (!again.isEmpty()) current = again;
                    }
                    var other = poll(b, 100);
                    bGot.addAll(shown(other));
                    ackAll(b, other, AcknowledgeType.ACCEPT);
                }
                System.out.println("renewals " + renewals + ", a's later deliveries " + aGot);
                checkEq(bGot, List.of(), "the other consumer's deliveries while the record is renewed");
                check(renewals >= 4, "renewed " + renewals + " times");
                check(!aGot.isEmpty() && aGot.stream().allMatch("0:1"::equals), "a gets the renewed record back, count 1: " + aGot);
                if (current.isEmpty()) current = pollSome(a, 10, "the renewed record, back once more");
                ackAll(a, current, AcknowledgeType.ACCEPT);
                commit(a, "accept");
                waitOffsets(admin, "0/0", "the renewed record accepted");
                var late = pollFor(b, QUIET_MS, x -> ackAll(b, x, AcknowledgeType.ACCEPT));
                checkEq(shown(late), List.of(), "the other consumer's deliveries after the accept");
            }
        }
    }

    /** Members join one at a time (a..e) on 4 partitions, then leave one at a time: after each
     *  step the description settles (Stable, every member at the group epoch, the target
     *  assignment epoch with it) with the epochs Kafka 4.4 gives (3 after the first join: the
     *  bump for the member, another once its share-partitions are initialized; then one per
     *  join or leave), every partition assigned, and, with no more members than partitions,
     *  each partition to one member and the counts within one of each other; with more members
     *  than partitions every member has one. Which member gets which partition is the simple
     *  assignor's choice and is not checked. */
    static void assignment() throws Exception {
        final int partitions = 4;
        try (Admin admin = Compat.admin()) {
            String t = topic();
            Compat.createTopic(admin, t, partitions, null);
            groupConfigs(admin, Map.of());
            List<KafkaShareConsumer<byte[], byte[]>> members = new ArrayList<>();
            List<String> names = new ArrayList<>();
            List<Integer> epochs = new ArrayList<>();
            try {
                for (String name : List.of("a", "b", "c", "d", "e")) {
                    var c = consumer(Compat.prefix + "-" + name, Map.of());
                    c.subscribe(List.of(t));
                    members.add(c);
                    names.add(Compat.prefix + "-" + name);
                    epochs.add(settled(admin, members, names, partitions, "after " + name + " joined"));
                }
                while (members.size() > 1) {
                    members.remove(0).close(Duration.ofSeconds(20));
                    String gone = names.remove(0).substring(Compat.prefix.length() + 1);
                    epochs.add(settled(admin, members, names, partitions, "after " + gone + " left"));
                }
            } finally {
                for (var c : members) c.close(Duration.ofSeconds(20));
            }
            checkEq(epochs, List.of(3, 4, 5, 6, 7, 8, 9, 10, 11), "group epochs after each join and leave");
        }
    }

    /** Polls the members until the description settles as assignment() says; its group epoch. */
    static int settled(Admin admin, List<KafkaShareConsumer<byte[], byte[]>> members, List<String> names,
                       int partitions, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        ShareGroupDescription d = null;
        String why = "not described";
        while (System.nanoTime() < deadline) {
            for (var c : members) check(poll(c, 100).isEmpty(), "a record on an empty topic");
            d = describeIfAny(admin);
            why = d == null ? "no group" : unsettled(d, names, partitions);
            if (why == null) {
                System.out.println(what + ": epoch " + d.groupEpoch() + ", " + assignments(d));
                return d.groupEpoch();
            }
        }
        throw new AssertionError(what + ": the description did not settle (" + why + "): " + d);
    }

    /** Why `d` is not settled, or null when it is. */
    static String unsettled(ShareGroupDescription d, List<String> names, int partitions) {
        if (d.groupState() != GroupState.STABLE) return "state " + d.groupState();
        if (!memberClients(d).equals(names.stream().sorted().toList())) return "members " + memberClients(d);
        if (d.targetAssignmentEpoch() != d.groupEpoch()) return "target assignment epoch " + d.targetAssignmentEpoch();
        Map<Integer, Integer> owners = new TreeMap<>();
        List<Integer> sizes = new ArrayList<>();
        for (var m : d.members()) {
            if (m.memberEpoch() != d.groupEpoch()) return m.clientId() + " at epoch " + m.memberEpoch();
            sizes.add(m.assignment().topicPartitions().size());
            for (var tp : m.assignment().topicPartitions()) owners.merge(tp.partition(), 1, Integer::sum);
        }
        if (owners.size() != partitions) return "partitions assigned " + owners.keySet();
        if (names.size() <= partitions) {
            if (owners.values().stream().anyMatch(n -> n != 1)) return "a partition with several members " + owners;
            if (Collections.max(sizes) - Collections.min(sizes) > 1) return "unbalanced " + sizes;
        } else if (Collections.min(sizes) < 1) {
            return "a member without partitions " + sizes;
        }
        return null;
    }

    static String assignments(ShareGroupDescription d) {
        Map<String, Set<Integer>> out = new TreeMap<>();
        for (var m : d.members()) {
            Set<Integer> ps = new TreeSet<>();
            for (var tp : m.assignment().topicPartitions()) ps.add(tp.partition());
            out.put(m.clientId().substring(Compat.prefix.length() + 1), ps);
        }
        return out.toString();
    }

    // share_group_configs: the share keys DescribeConfigs lists for a GROUP resource, with the
    // harness's broker settings (brokers.py), as "value source [synonym=value/source, ...]".
    static final Map<String, String> SHARE_GROUP_CONFIG_DEFAULTS = Map.of(
            "share.auto.offset.reset", "latest DEFAULT_CONFIG [share.auto.offset.reset=latest/DEFAULT_CONFIG]",
            "share.renew.acknowledge.enable", "true DEFAULT_CONFIG [share.renew.acknowledge.enable=true/DEFAULT_CONFIG]",
            "share.session.timeout.ms", "8000 STATIC_BROKER_CONFIG [group.share.session.timeout.ms=8000/STATIC_BROKER_CONFIG, "
                    + "group.share.session.timeout.ms=45000/DEFAULT_CONFIG]",
            "share.heartbeat.interval.ms", "500 STATIC_BROKER_CONFIG [group.share.heartbeat.interval.ms=500/STATIC_BROKER_CONFIG, "
                    + "group.share.heartbeat.interval.ms=5000/DEFAULT_CONFIG]",
            "share.delivery.count.limit", "3 STATIC_BROKER_CONFIG [group.share.delivery.count.limit=3/STATIC_BROKER_CONFIG, "
                    + "group.share.delivery.count.limit=5/DEFAULT_CONFIG]",
            "share.record.lock.duration.ms", "30000 DEFAULT_CONFIG [group.share.record.lock.duration.ms=30000/DEFAULT_CONFIG]",
            "share.assignment.interval.ms", "1000 DEFAULT_CONFIG [group.share.assignment.interval.ms=1000/DEFAULT_CONFIG]",
            "share.isolation.level", "read_uncommitted DEFAULT_CONFIG [share.isolation.level=read_uncommitted/DEFAULT_CONFIG]",
            "share.partition.max.record.locks", "2000 DEFAULT_CONFIG [group.share.partition.max.record.locks=2000/DEFAULT_CONFIG]");

    // Each refused SET, one at a time: key, value, Kafka 4.4's message (InvalidConfigurationException,
    // INVALID_CONFIG). The bounds are the broker's group.share.min/max.* keys.
    static final String[][] SHARE_GROUP_CONFIG_REFUSALS = {
        {"share.record.lock.duration.ms", "500", "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
        {"share.record.lock.duration.ms", "70000", "share.record.lock.duration.ms must be in the range 1000 to 60000 inclusive."},
        {"share.record.lock.duration.ms", "abc", "Invalid value abc for configuration share.record.lock.duration.ms: Not a number of type INT"},
        {"share.delivery.count.limit", "1", "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
        {"share.delivery.count.limit", "11", "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
        {"share.auto.offset.reset", "bogus", "Invalid value bogus for configuration share.auto.offset.reset: Invalid value `bogus` for "
                + "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
        {"share.auto.offset.reset", "by_duration:-PT1H", "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value "
                + "`by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format "
                + "'by_duration:<PnDTnHnMn.nS>'."},
        {"share.isolation.level", "bogus", "Invalid value bogus for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
        {"share.session.timeout.ms", "500", "share.session.timeout.ms must be in the range 1000 to 60000 inclusive."},
        {"share.heartbeat.interval.ms", "100", "share.heartbeat.interval.ms must be in the range 500 to 15000 inclusive."},
        {"share.heartbeat.interval.ms", "9000", "share.session.timeout.ms must be greater than share.heartbeat.interval.ms"},
        {"share.partition.max.record.locks", "50", "Invalid value 50 for configuration share.partition.max.record.locks: Value must be at least 100"},
        {"share.partition.max.record.locks", "5000", "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
        {"share.renew.acknowledge.enable", "maybe", "Invalid value maybe for configuration share.renew.acknowledge.enable: Expected value to be either true or false"},
    };

    static Map<String, String> describedShareConfigs(Admin admin, ConfigResource r) throws Exception {
        Config c = admin.describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true))
                .all().get(30, TimeUnit.SECONDS).get(r);
        Map<String, String> out = new TreeMap<>();
        for (var e : c.entries()) {
            if (!e.name().startsWith("share.")) continue;
            List<String> syn = new ArrayList<>();
            for (var x : e.synonyms()) syn.add(x.name() + "=" + x.value() + "/" + x.source());
            out.put(e.name(), e.value() + " " + e.source() + " " + syn);
            check(!e.isReadOnly(), e.name() + " is read-only");
        }
        return out;
    }

    static void alterGroup(Admin admin, ConfigResource r, AlterConfigOp.OpType op, String key, String value) throws Exception {
        admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(new ConfigEntry(key, value), op))))
                .all().get(30, TimeUnit.SECONDS);
    }

    /** A GROUP resource's share keys: described with their broker synonyms (no group needed),
     *  Kafka's refusals of values out of the broker's bounds or malformed, accepted values
     *  described as DYNAMIC_GROUP_CONFIG, and a DELETE back to the broker's value. */
    static void groupConfigsScenario() throws Exception {
        try (Admin admin = Compat.admin()) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group());
            checkEq(describedShareConfigs(admin, r), new TreeMap<>(SHARE_GROUP_CONFIG_DEFAULTS), "share keys of a group without configs");
            List<String> wrong = new ArrayList<>();
            for (String[] refusal : SHARE_GROUP_CONFIG_REFUSALS) {
                try {
                    alterGroup(admin, r, AlterConfigOp.OpType.SET, refusal[0], refusal[1]);
                    wrong.add(refusal[0] + "=" + refusal[1] + " accepted");
                } catch (java.util.concurrent.ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (!(cause instanceof org.apache.kafka.common.errors.InvalidConfigurationException) || !refusal[2].equals(cause.getMessage()))
                        wrong.add(refusal[0] + "=" + refusal[1] + ": expected InvalidConfigurationException \"" + refusal[2] + "\", got " + cause);
                }
            }
            checkEq(wrong, List.of(), "refused share group configs");
            checkEq(describedShareConfigs(admin, r), new TreeMap<>(SHARE_GROUP_CONFIG_DEFAULTS), "share keys after only refusals");
            String[][] accepted = {{"share.delivery.count.limit", "4"}, {"share.auto.offset.reset", "by_duration:PT1H"},
                                   {"share.isolation.level", "read_committed"}, {"share.session.timeout.ms", "9000"}};
            for (String[] kv : accepted) alterGroup(admin, r, AlterConfigOp.OpType.SET, kv[0], kv[1]);
            Map<String, String> expected = new TreeMap<>(SHARE_GROUP_CONFIG_DEFAULTS);
            expected.put("share.delivery.count.limit", "4 DYNAMIC_GROUP_CONFIG [share.delivery.count.limit=4/DYNAMIC_GROUP_CONFIG, "
                    + "group.share.delivery.count.limit=3/STATIC_BROKER_CONFIG, group.share.delivery.count.limit=5/DEFAULT_CONFIG]");
            expected.put("share.auto.offset.reset", "by_duration:PT1H DYNAMIC_GROUP_CONFIG [share.auto.offset.reset=by_duration:PT1H/"
                    + "DYNAMIC_GROUP_CONFIG, share.auto.offset.reset=latest/DEFAULT_CONFIG]");
            expected.put("share.isolation.level", "read_committed DYNAMIC_GROUP_CONFIG [share.isolation.level=read_committed/"
                    + "DYNAMIC_GROUP_CONFIG, share.isolation.level=read_uncommitted/DEFAULT_CONFIG]");
            expected.put("share.session.timeout.ms", "9000 DYNAMIC_GROUP_CONFIG [share.session.timeout.ms=9000/DYNAMIC_GROUP_CONFIG, "
                    + "group.share.session.timeout.ms=8000/STATIC_BROKER_CONFIG, group.share.session.timeout.ms=45000/DEFAULT_CONFIG]");
            checkEq(describedShareConfigs(admin, r), expected, "share keys once set");
            alterGroup(admin, r, AlterConfigOp.OpType.DELETE, "share.delivery.count.limit", null);
            expected.put("share.delivery.count.limit", SHARE_GROUP_CONFIG_DEFAULTS.get("share.delivery.count.limit"));
            checkEq(describedShareConfigs(admin, r), expected, "share keys once share.delivery.count.limit is deleted");
        }
    }

    /** The failure of `r` as "ExceptionClass: message" (the cause of an ExecutionException). */
    static String failure(Compat.ThrowingRunnable r) {
        try {
            r.run();
            return "no error";
        } catch (Throwable t) {
            Throwable cause = t instanceof java.util.concurrent.ExecutionException && t.getCause() != null ? t.getCause() : t;
            return cause.getClass().getSimpleName() + ": " + cause.getMessage();
        }
    }

    /** Polls until the consumer throws (answered as failure() does) or 15 s pass. */
    static String pollFailure(Compat.ThrowingRunnable poll) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        String seen = "no error";
        while (System.nanoTime() < deadline && seen.equals("no error")) seen = failure(poll);
        return seen;
    }

    /** A share group and consumer groups of the same id: each kind of member, and the admin
     *  calls of the other kind, are refused with Kafka 4.4's errors; ListGroups names the share
     *  group's type and protocol; DeleteShareGroups (DeleteGroups) deletes a consumer group too. */
    static void groupTypes() throws Exception {
        try (Admin admin = Compat.admin()) {
            String t = topic(), classicGroup = Compat.group("classic"), shareGroup = group();
            Compat.createTopic(admin, t, 1, null);
            produce(t, 0, 3);
            try (var c = Compat.consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, classicGroup))) {
                c.subscribe(List.of(t));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                int n = 0;
                while (n < 3 && System.nanoTime() < deadline) n += c.poll(Duration.ofMillis(200)).count();
                checkEq(n, 3, "records of the classic group");
                c.commitSync();
            }
            Map<String, Object> onClassic = Map.of(ConsumerConfig.GROUP_ID_CONFIG, classicGroup);
            try (var s = consumer(Compat.prefix + "-s", onClassic)) {
                s.subscribe(List.of(t));
                checkEq(pollFailure(() -> s.poll(Duration.ofMillis(200))),
                        "GroupIdNotFoundException: Group " + classicGroup + " is not a share group.", "a share consumer in a classic group");
            }
            checkEq(failure(() -> admin.describeShareGroups(List.of(classicGroup)).all().get(30, TimeUnit.SECONDS)),
                    "GroupIdNotFoundException: Group " + classicGroup + " is not a share group.", "DescribeShareGroups of a classic group");

            try (var s = consumer(Compat.prefix + "-s", Map.of())) {
                s.subscribe(List.of(t));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (describeIfAny(admin) == null || describe(admin).groupState() != GroupState.STABLE) {
                    check(System.nanoTime() < deadline, "the share group becomes Stable");
                    s.poll(Duration.ofMillis(200));
                }
                Map<String, Object> classic = Map.of(ConsumerConfig.GROUP_ID_CONFIG, shareGroup, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
                try (var c = Compat.consumer(classic)) {
                    c.subscribe(List.of(t));
                    checkEq(pollFailure(() -> c.poll(Duration.ofMillis(200))), "InconsistentGroupProtocolException: The group member's "
                            + "supported protocols are incompatible with those of existing members or first group member tried to join with "
                            + "empty protocol type or empty protocol list.", "a classic consumer in a share group");
                }
                Map<String, Object> modern = Map.of(ConsumerConfig.GROUP_ID_CONFIG, shareGroup, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                try (var c = Compat.consumer(modern)) {
                    c.subscribe(List.of(t));
                    checkEq(pollFailure(() -> c.poll(Duration.ofMillis(200))),
                            "GroupIdNotFoundException: Group " + shareGroup + " is not a consumer group.", "a consumer-protocol consumer in a share group");
                }
                checkEq(failure(() -> admin.describeConsumerGroups(List.of(shareGroup)).all().get(30, TimeUnit.SECONDS)),
                        "GroupIdNotFoundException: Group " + shareGroup + " is not a consumer group.", "DescribeConsumerGroups of a share group");
                List<String> listed = new ArrayList<>();
                for (var g : admin.listGroups().all().get(30, TimeUnit.SECONDS))
                    if (g.groupId().startsWith(Compat.prefix))
                        listed.add(g.groupId().substring(Compat.prefix.length() + 1) + " " + g.type().map(Object::toString).orElse("-")
                                + " " + g.protocol() + " " + g.groupState().map(Object::toString).orElse("-"));
                Collections.sort(listed);
                checkEq(listed, List.of("classic-group Classic consumer Empty", "share-group Share share Stable"), "ListGroups");
            }
            checkEq(failure(() -> admin.deleteShareGroups(List.of(classicGroup)).all().get(30, TimeUnit.SECONDS)), "no error",
                    "DeleteShareGroups of a classic group");
            List<String> left = new ArrayList<>();
            for (var g : admin.listGroups().all().get(30, TimeUnit.SECONDS))
                if (g.groupId().startsWith(Compat.prefix)) left.add(g.groupId().substring(Compat.prefix.length() + 1));
            checkEq(left, List.of("share-group"), "groups once DeleteShareGroups deleted the classic one");
        }
    }

    static boolean run(String scenario) throws Exception {
        switch (scenario) {
            case "share_three_consumers": threeConsumers(); return true;
            case "share_lock_expiry": lockExpiry(); return true;
            case "share_child": child(); return true;
            case "share_explicit_ack": explicitAck(); return true;
            case "share_delivery_limit": deliveryLimit(); return true;
            case "share_restart": restart(); return true;
            case "share_renew": renew(); return true;
            case "share_assignment": assignment(); return true;
            case "share_group_configs": groupConfigsScenario(); return true;
            case "share_group_types": groupTypes(); return true;
            default: return false;
        }
    }
}
