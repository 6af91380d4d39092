// The client side of bench/share.py: share-group (KIP-932) throughput and acknowledgement
// latency with kafka-clients' KafkaShareConsumer. Each mode prints progress on stderr and one
// line on stdout, "RESULT <json>", that the script reads. Run with the single-file source
// launcher:
//
//   java -cp 'compat-tests/.deps/kafka/lib/*' bench/SharePerf.java produce BOOTSTRAP TOPIC PARTITIONS RECORDS RECORD_BYTES
//   java -cp ... bench/SharePerf.java consume BOOTSTRAP TOPIC GROUP CONSUMERS RECORDS TIMEOUT_S
//   java -cp ... bench/SharePerf.java acklatency BOOTSTRAP TOPIC GROUP COMMITS TIMEOUT_S
//
// produce creates TOPIC with PARTITIONS partitions and writes RECORDS records of RECORD_BYTES
// (acks=1, round robin over the partitions). consume sets the group's share.auto.offset.reset
// to earliest, runs CONSUMERS share consumers (implicit acknowledgement, one thread each) until
// RECORDS distinct records were delivered, and reports the time from the first subscribe and
// from the first record to the last. acklatency runs one consumer in explicit mode that
// accepts each poll's records (max.poll.records=1) and times each commitSync.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class SharePerf {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce": produce(args[1], args[2], Integer.parseInt(args[3]), Long.parseLong(args[4]), Integer.parseInt(args[5])); break;
            case "consume": consume(args[1], args[2], args[3], Integer.parseInt(args[4]), Long.parseLong(args[5]), Integer.parseInt(args[6])); break;
            case "acklatency": ackLatency(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5])); break;
            default: throw new IllegalArgumentException("unknown mode " + args[0]);
        }
        System.exit(0);
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    static void produce(String bootstrap, String topic, int partitions, long records, int recordBytes) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                var d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
                if (d.partitions().size() == partitions && d.partitions().stream().allMatch(x -> x.leader() != null)) break;
                if (System.nanoTime() > deadline) throw new IllegalStateException("no leaders for " + topic);
                Thread.sleep(100);
            }
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "65536");
        byte[] value = new byte[recordBytes];
        Arrays.fill(value, (byte) 's');
        long started = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (long i = 0; i < records; i++) producer.send(new ProducerRecord<>(topic, (int) (i % partitions), null, value));
            producer.flush();
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.println("RESULT {\"mode\":\"produce\",\"records\":" + records + ",\"seconds\":" + seconds + "}");
    }

    static void earliest(String bootstrap, String group) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                    .all().get(60, TimeUnit.SECONDS);
        }
    }

    static KafkaShareConsumer<byte[], byte[]> consumer(String bootstrap, String group, String clientId, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.putAll(extra);
        return new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static void consume(String bootstrap, String topic, String group, int consumers, long records, int timeoutS) throws Exception {
        earliest(bootstrap, group);
        Set<Long> distinct = ConcurrentHashMap.newKeySet();
        AtomicLong deliveries = new AtomicLong(), firstNs = new AtomicLong(), lastNs = new AtomicLong();
        long[] perConsumer = new long[consumers];
        long started = System.nanoTime();
        long deadline = started + TimeUnit.SECONDS.toNanos(timeoutS);
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < consumers; i++) {
            final int index = i;
            Thread t = new Thread(() -> {
                try (var c = consumer(bootstrap, group, "share-perf-" + index, Map.of())) {
                    c.subscribe(List.of(topic));
                    while (distinct.size() < records && System.nanoTime() < deadline) {
                        var rs = c.poll(Duration.ofMillis(100));
                        if (rs.isEmpty()) continue;
                        long now = System.nanoTime();
                        firstNs.compareAndSet(0, now);
                        for (var r : rs) distinct.add(((long) r.partition() << 40) | r.offset());
                        deliveries.addAndGet(rs.count());
                        perConsumer[index] += rs.count();
                        lastNs.accumulateAndGet(now, Math::max);
                    }
                    // The records of the last poll are accepted by this commit (implicit mode).
                    c.commitSync(Duration.ofSeconds(30));
                } catch (Throwable e) {
                    failures.add(e);
                }
            }, "share-perf-" + i);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) t.join();
        if (!failures.isEmpty()) throw new IllegalStateException("a consumer failed", failures.get(0));
        StringBuilder per = new StringBuilder();
        for (int i = 0; i < consumers; i++) per.append(i == 0 ? "" : ",").append(perConsumer[i]);
        double total = (Math.max(lastNs.get(), started) - started) / 1e9;
        double active = firstNs.get() == 0 ? 0 : (lastNs.get() - firstNs.get()) / 1e9;
        System.out.println("RESULT {\"mode\":\"consume\",\"consumers\":" + consumers + ",\"records\":" + records
                + ",\"distinct\":" + distinct.size() + ",\"deliveries\":" + deliveries.get()
                + ",\"seconds_from_subscribe\":" + total + ",\"seconds_first_to_last\":" + active
                + ",\"per_consumer\":[" + per + "]}");
    }

    static void ackLatency(String bootstrap, String topic, String group, int commits, int timeoutS) throws Exception {
        earliest(bootstrap, group);
        List<Long> latenciesNs = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
        try (var c = consumer(bootstrap, group, "share-perf-ack", Map.of(
                ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit",
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1,
                ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "record_limit"))) {
            c.subscribe(List.of(topic));
            while (latenciesNs.size() < commits && System.nanoTime() < deadline) {
                var rs = c.poll(Duration.ofMillis(100));
                if (rs.isEmpty()) continue;
                for (var r : rs) c.acknowledge(r, AcknowledgeType.ACCEPT);
                long before = System.nanoTime();
                var result = c.commitSync(Duration.ofSeconds(30));
                latenciesNs.add(System.nanoTime() - before);
                for (var e : result.entrySet())
                    if (e.getValue().isPresent()) throw new IllegalStateException("commit failed for " + e.getKey(), e.getValue().get());
            }
        }
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < latenciesNs.size(); i++) out.append(i == 0 ? "" : ",").append(latenciesNs.get(i) / 1000.0);
        System.out.println("RESULT {\"mode\":\"acklatency\",\"commits\":" + latenciesNs.size()
                + ",\"latencies_us\":[" + out + "]}");
    }
}
