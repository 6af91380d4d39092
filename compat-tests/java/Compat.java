// Java client scenarios (kafka-clients producer, consumer and AdminClient).
// Usage: java Compat --version | --bootstrap HOST:PORT --scenario NAME --prefix PREFIX
// Exit code: 0 pass, 77 not applicable, anything else fail.

import java.io.FileReader;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.*;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.internals.AppInfoParser;

public class Compat {
    static final int NOT_APPLICABLE = 77;
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    static final int LARGE_VALUE_BYTES = 1_000_000;
    static final int TOO_LARGE_VALUE_BYTES = 1_200_000;

    static String bootstrap;
    static String prefix;
    // Security modes (harness/security.py): the client properties of COMPAT_SECURITY_JAVA, given
    // to every admin, producer and consumer; empty on PLAINTEXT.
    static final Properties security = loadSecurity();
    static final int AUTH_FAILURE_TIMEOUT_S = 30;

    static Properties loadSecurity() {
        Properties p = new Properties();
        String path = System.getenv("COMPAT_SECURITY_JAVA");
        if (path == null || path.isEmpty()) return p;
        try (Reader r = new FileReader(path, StandardCharsets.UTF_8)) {
            p.load(r);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read COMPAT_SECURITY_JAVA " + path, e);
        }
        return p;
    }

    static void addSecurity(Map<Object, Object> config) {
        config.putAll(security);
    }

    static class NotApplicable extends RuntimeException {
        NotApplicable(String m) { super(m); }
    }

    public static void main(String[] args) throws Exception {
        String scenario = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--version":
                    System.out.println("kafka-clients " + AppInfoParser.getVersion());
                    return;
                case "--bootstrap": bootstrap = args[++i]; break;
                case "--scenario": scenario = args[++i]; break;
                case "--prefix": prefix = args[++i]; break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        try {
            switch (scenario) {
                case "metadata": metadata(); break;
                case "topics": topics(); break;
                case "codecs": codecs(); break;
                case "large": large(); break;
                case "idempotent": idempotent(); break;
                case "group": group(); break;
                case "rebalance": rebalance(); break;
                case "static": staticMembership(); break;
                case "cooperative": cooperative(); break;
                case "offsets_for_times": offsetsForTimes(); break;
                case "configs": configs(); break;
                case "delete_records": deleteRecords(); break;
                case "errors": errors(); break;
                case "broker_configs": brokerConfigs(); break;
                case "transactions": transactions(); break;
                case "record_errors": recordErrors(); break;
                case "recompression": recompression(); break;
                case "exactly_once": exactlyOnce(); break;
                case "wire44": Wire44.run(bootstrap, prefix); break;
                case "auth_failure": authFailure(); break;
                default:
                    if (!Cg848.run(scenario) && !Share.run(scenario))
                        throw new NotApplicable("scenario " + scenario + " is not expressible with this client");
            }
        } catch (NotApplicable e) {
            System.out.println("N/A: " + e.getMessage());
            System.exit(NOT_APPLICABLE);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.out.flush();
            System.exit(1);
        }
        System.out.println("PASS");
        System.exit(0);
    }

    // ---------- helpers ----------

    static String topic(String suffix) { return prefix + "-" + suffix; }
    static String group(String suffix) { return prefix + "-" + suffix + "-group"; }

    static void check(boolean cond, String what) {
        if (!cond) throw new AssertionError(what);
    }

    static void checkEq(Object actual, Object expected, String what) {
        if (!Objects.deepEquals(actual, expected))
            throw new AssertionError(what + ": expected " + show(expected) + ", got " + show(actual));
    }

    static String show(Object o) {
        if (o instanceof byte[]) return Arrays.toString((byte[]) o);
        return String.valueOf(o);
    }

    static void waitUntil(BooleanSupplier cond, int seconds, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            if (cond.getAsBoolean()) return;
            Thread.sleep(100);
        }
        throw new AssertionError("timed out after " + seconds + "s waiting for " + what);
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 20000);
        addSecurity(p);
        return Admin.create(p);
    }

    static KafkaProducer<byte[], byte[]> producer(Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 20000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20000);
        security.forEach((k, v) -> p.put((String) k, v));
        p.putAll(extra);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        security.forEach((k, v) -> p.put((String) k, v));
        p.putAll(extra);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static void createTopic(Admin admin, String name, int partitions, Map<String, String> configs) throws Exception {
        NewTopic nt = new NewTopic(name, partitions, (short) 1);
        if (configs != null) nt.configs(configs);
        admin.createTopics(List.of(nt)).all().get(30, TimeUnit.SECONDS);
        waitUntil(() -> hasLeaders(admin, name, partitions), 20, "leaders for " + name);
    }

    static boolean hasLeaders(Admin admin, String name, int partitions) {
        try {
            TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames().get(10, TimeUnit.SECONDS).get(name);
            return d.partitions().size() == partitions && d.partitions().stream().allMatch(p -> p.leader() != null);
        } catch (Exception e) {
            return false;
        }
    }

    static Throwable rootOf(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof KafkaException) && t.getCause() != null
                && !(t instanceof ApiException)) t = t.getCause();
        return t;
    }

    static <E extends Throwable> E expectError(Class<E> type, ThrowingRunnable r, String what) throws Exception {
        try {
            r.run();
        } catch (Throwable t) {
            Throwable root = t instanceof ExecutionException ? t.getCause() : t;
            if (type.isInstance(root)) return type.cast(root);
            if (type.isInstance(rootOf(t))) return type.cast(rootOf(t));
            throw new AssertionError(what + ": expected " + type.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError(what + ": expected " + type.getSimpleName() + ", but it succeeded");
    }

    interface ThrowingRunnable { void run() throws Exception; }

    // The canonical record set (same shape as python/common.py make_records).
    static final class Rec {
        byte[] key; byte[] value; List<Header> headers; long timestamp;
    }

    static List<Rec> makeRecords(int count) {
        long base = System.currentTimeMillis() - 60_000;
        List<Rec> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Rec r = new Rec();
            if (i % 4 != 0) {
                byte[] suffix = ("key-" + i).getBytes(StandardCharsets.UTF_8);
                r.key = new byte[4 + suffix.length];
                r.key[0] = (byte) i; r.key[1] = 0; r.key[2] = (byte) 255; r.key[3] = (byte) 128;
                System.arraycopy(suffix, 0, r.key, 4, suffix.length);
            }
            if (i != 5) {
                r.value = new byte[1 + i * 37];
                for (int j = 0; j < r.value.length; j++) r.value[j] = (byte) ((i * 7 + j) % 256);
            }
            r.headers = new ArrayList<>();
            if (i % 3 != 0) {
                r.headers.add(new RecordHeader("h1", ("v" + i).getBytes(StandardCharsets.UTF_8)));
                r.headers.add(new RecordHeader("h-bin", new byte[]{0, 1, 2, (byte) 255}));
                r.headers.add(new RecordHeader("h1", "dup".getBytes(StandardCharsets.UTF_8)));
            }
            r.timestamp = base + i * 1000L;
            out.add(r);
        }
        return out;
    }

    static List<RecordMetadata> produce(KafkaProducer<byte[], byte[]> p, String topic, List<Rec> recs) throws Exception {
        List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
        for (Rec r : recs) fs.add(p.send(new ProducerRecord<>(topic, 0, r.timestamp, r.key, r.value, r.headers)));
        p.flush();
        List<RecordMetadata> out = new ArrayList<>();
        for (var f : fs) out.add(f.get(30, TimeUnit.SECONDS));
        return out;
    }

    static List<ConsumerRecord<byte[], byte[]>> consumeAssigned(String topic, int partition, int count) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
            TopicPartition tp = new TopicPartition(topic, partition);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (got.size() < count && System.nanoTime() < deadline)
                for (var rec : c.poll(Duration.ofMillis(500))) got.add(rec);
            return got;
        }
    }

    static void compare(List<Rec> expected, List<ConsumerRecord<byte[], byte[]>> actual, String what) {
        checkEq(actual.size(), expected.size(), what + ": record count");
        for (int i = 0; i < expected.size(); i++) {
            Rec e = expected.get(i);
            ConsumerRecord<byte[], byte[]> a = actual.get(i);
            checkEq(a.offset(), (long) i, what + "[" + i + "] offset");
            checkEq(a.key(), e.key, what + "[" + i + "] key");
            checkEq(a.value(), e.value, what + "[" + i + "] value");
            checkEq(a.timestamp(), e.timestamp, what + "[" + i + "] timestamp");
            checkEq(a.timestampType(), TimestampType.CREATE_TIME, what + "[" + i + "] timestamp type");
            List<Header> got = new ArrayList<>();
            a.headers().forEach(got::add);
            checkEq(got.size(), e.headers.size(), what + "[" + i + "] header count");
            for (int h = 0; h < got.size(); h++) {
                checkEq(got.get(h).key(), e.headers.get(h).key(), what + "[" + i + "] header key");
                checkEq(got.get(h).value(), e.headers.get(h).value(), what + "[" + i + "] header value");
            }
        }
    }

    // ---------- scenarios ----------

    // auth_failure: the security settings are wrong in one way (password, client certificate or
    // truststore); describeCluster must fail with an AuthenticationException. The line printed
    // names its class and what it says: the broker's message for SASL, for TLS the alert received
    // or the local verification failure at the bottom of the cause chain.
    static void authFailure() throws Exception {
        if (security.isEmpty()) throw new NotApplicable("auth_failure runs in the security modes only");
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, AUTH_FAILURE_TIMEOUT_S * 1000);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        addSecurity(p);
        Throwable failure;
        try (Admin admin = Admin.create(p)) {
            Collection<Node> nodes = admin.describeCluster().nodes().get(AUTH_FAILURE_TIMEOUT_S + 5, TimeUnit.SECONDS);
            throw new AssertionError("connected with the wrong settings: " + nodes);
        } catch (ExecutionException e) {
            failure = e.getCause();
        }
        check(failure instanceof AuthenticationException,
              "expected an AuthenticationException, got " + failure);
        System.out.println("AUTH_FAILURE: " + failure.getClass().getSimpleName() + " (" + authDetail(failure) + ")");
    }

    static String authDetail(Throwable failure) {
        if (failure instanceof SaslAuthenticationException) return failure.getMessage();
        Throwable root = failure;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        String message = String.valueOf(root.getMessage());
        // "Received fatal alert: certificate_unknown" names the peer's alert; otherwise the
        // local verification failure's class says what failed (e.g. SunCertPathBuilderException).
        if (message.startsWith("Received fatal alert")) return message;
        return root.getClass().getSimpleName();
    }

    static void metadata() throws Exception {
        try (Admin admin = admin()) {
            DescribeClusterResult cluster = admin.describeCluster();
            Collection<Node> nodes = cluster.nodes().get(30, TimeUnit.SECONDS);
            checkEq(nodes.size(), 1, "broker count");
            Node node = nodes.iterator().next();
            checkEq(node.host() + ":" + node.port(), bootstrap, "advertised address");
            Node controller = cluster.controller().get(30, TimeUnit.SECONDS);
            checkEq(controller.id(), node.id(), "controller id names the broker");
            check(cluster.clusterId().get(30, TimeUnit.SECONDS) != null, "cluster id present");
            String t = topic("t");
            createTopic(admin, t, 3, null);
            check(admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(t), "topic listed");
            try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
                checkEq(c.partitionsFor(t).size(), 3, "partitionsFor");
            }
            // The producer negotiates ApiVersions and needs InitProducerId (idempotent by default).
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) {
                RecordMetadata md = p.send(new ProducerRecord<>(t, 1, null, "v".getBytes())).get(30, TimeUnit.SECONDS);
                checkEq(md.partition(), 1, "produced partition");
                checkEq(md.offset(), 0L, "first offset");
            }
        }
    }

    static void topics() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t");
            createTopic(admin, t, 2, Map.of("retention.ms", "123456789"));
            TopicDescription d = admin.describeTopics(List.of(t)).allTopicNames().get().get(t);
            checkEq(d.partitions().size(), 2, "partitions");
            check(d.topicId() != null && !d.topicId().equals(Uuid.ZERO_UUID), "topic id assigned");
            checkEq(d.partitions().get(0).replicas().size(), 1, "replicas");
            checkEq(d.partitions().get(0).isr().size(), 1, "isr");
            expectError(TopicExistsException.class,
                    () -> admin.createTopics(List.of(new NewTopic(t, 1, (short) 1))).all().get(), "duplicate create");
            admin.createPartitions(Map.of(t, NewPartitions.increaseTo(5))).all().get(30, TimeUnit.SECONDS);
            waitUntil(() -> hasLeaders(admin, t, 5), 20, "5 partitions with leaders");
            expectError(InvalidPartitionsException.class,
                    () -> admin.createPartitions(Map.of(t, NewPartitions.increaseTo(3))).all().get(),
                    "decreasing partitions");
            admin.deleteTopics(List.of(t)).all().get(30, TimeUnit.SECONDS);
            waitUntil(() -> {
                try { return !admin.listTopics().names().get().contains(t); } catch (Exception e) { return false; }
            }, 20, "topic gone");
            expectError(UnknownTopicOrPartitionException.class,
                    () -> admin.describeTopics(List.of(t)).allTopicNames().get(), "describe deleted topic");
        }
    }

    static void codecs() throws Exception {
        try (Admin admin = admin()) {
            for (String codec : CODECS) {
                String t = topic(codec);
                createTopic(admin, t, 1, null);
                List<Rec> recs = makeRecords(12);
                try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                        ProducerConfig.LINGER_MS_CONFIG, 50))) {
                    List<RecordMetadata> mds = produce(p, t, recs);
                    for (int i = 0; i < mds.size(); i++) checkEq(mds.get(i).offset(), (long) i, codec + " offset");
                }
                compare(recs, consumeAssigned(t, 0, recs.size()), codec);
                System.out.println(codec + " ok");
            }
        }
    }

    // recompression: {topic compression.type, the producer's codec, the codec Kafka stores}, as in
    // python/common.py RECOMPRESSION_CASES.
    static final String[][] RECOMPRESSION_CASES = {
        {"uncompressed", "gzip", "none"},
        {"gzip", "none", "gzip"},
        {"snappy", "none", "snappy"},
        {"lz4", "none", "lz4"},
        {"zstd", "none", "zstd"},
        {"producer", "none", "none"},
        {"producer", "lz4", "lz4"},
    };

    static void recompression() throws Exception {
        try (Admin admin = admin()) {
            for (String[] c : RECOMPRESSION_CASES) {
                String what = "topic " + c[0] + ", producer " + c[1];
                String t = topic(c[0] + "-from-" + c[1]);
                createTopic(admin, t, 1, Map.of("compression.type", c[0]));
                List<Rec> recs = makeRecords(12);
                try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, c[1],
                        ProducerConfig.LINGER_MS_CONFIG, 50))) {
                    List<RecordMetadata> mds = produce(p, t, recs);
                    for (int i = 0; i < mds.size(); i++) checkEq(mds.get(i).offset(), (long) i, what + " offset");
                }
                compare(recs, consumeAssigned(t, 0, recs.size()), what);
                List<long[]> batches = rawFetchBatches(t);
                long count = 0;
                Set<String> codecs = new TreeSet<>();
                for (long[] b : batches) {
                    count += b[1];
                    codecs.add(CODEC_NAMES[(int) b[2]]);
                }
                checkEq(count, (long) recs.size(), what + ": records in the fetched batches");
                checkEq(codecs, new TreeSet<>(List.of(c[2])), what + ": codec of the fetched batches");
                System.out.println(what + " stored as " + c[2]);
            }
        }
    }

    // RecordBatch attributes bits 0-2.
    static final String[] CODEC_NAMES = {"none", "gzip", "snappy", "lz4", "zstd", "codec 5", "codec 6", "codec 7"};

    static void putString(java.io.DataOutputStream out, String s) throws java.io.IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeShort(b.length);
        out.write(b);
    }

    // One Fetch v11 (the newest non-flexible version; zstd needs v10+) on a raw socket, since
    // the consumer never shows a batch's codec: {base offset, record count, codec id} of every
    // whole batch in the answer for partition 0 from offset 0.
    static List<long[]> rawFetchBatches(String topic) throws Exception {
        String[] hp = bootstrap.split(":");
        var req = new java.io.ByteArrayOutputStream();
        var out = new java.io.DataOutputStream(req);
        out.writeShort(1); out.writeShort(11); out.writeInt(7); putString(out, "compat-raw-fetch");
        out.writeInt(-1); out.writeInt(500); out.writeInt(1); out.writeInt(1 << 20); out.writeByte(0);
        out.writeInt(0); out.writeInt(-1);  // no fetch session
        out.writeInt(1); putString(out, topic);
        out.writeInt(1); out.writeInt(0); out.writeInt(-1); out.writeLong(0); out.writeLong(-1); out.writeInt(1 << 20);
        out.writeInt(0); putString(out, "");  // forgotten topics, rack id
        byte[] body;
        try (java.net.Socket s = new java.net.Socket(hp[0], Integer.parseInt(hp[1]))) {
            s.setSoTimeout(20_000);
            var o = new java.io.DataOutputStream(s.getOutputStream());
            o.writeInt(req.size());
            req.writeTo(o);
            o.flush();
            var in = new java.io.DataInputStream(s.getInputStream());
            body = new byte[in.readInt()];
            in.readFully(body);
        }
        var r = java.nio.ByteBuffer.wrap(body);
        r.getInt(); r.getInt();  // correlation id, throttle time
        checkEq(r.getShort(), (short) 0, "raw Fetch: top-level error");
        r.getInt();  // session id
        checkEq(r.getInt(), 1, "raw Fetch: topics in the answer");
        r.position(r.position() + 2 + r.getShort(r.position()));
        checkEq(r.getInt(), 1, "raw Fetch: partitions in the answer");
        r.getInt();
        checkEq(r.getShort(), (short) 0, "raw Fetch: partition error");
        r.getLong(); r.getLong(); r.getLong();  // high watermark, last stable offset, log start
        int aborted = r.getInt();
        r.position(r.position() + Math.max(aborted, 0) * 16 + 4);  // aborted transactions, preferred replica
        int len = r.getInt();
        var records = java.nio.ByteBuffer.wrap(body, r.position(), Math.max(len, 0)).slice();
        List<long[]> batches = new ArrayList<>();
        int at = 0;
        while (at + 61 <= records.limit()) {
            int length = records.getInt(at + 8);
            if (at + 12 + length > records.limit()) break;  // a partial batch at the end
            batches.add(new long[]{records.getLong(at), records.getInt(at + 57), records.getShort(at + 21) & 0x07});
            at += 12 + length;
        }
        return batches;
    }

    static void large() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t");
            createTopic(admin, t, 1, null);
            Rec r = new Rec();
            r.key = "big".getBytes();
            r.value = new byte[LARGE_VALUE_BYTES];
            for (int i = 0; i < r.value.length; i++) r.value[i] = (byte) (i % 251);
            r.headers = List.of(new RecordHeader("h", "1".getBytes()));
            r.timestamp = System.currentTimeMillis();
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 2_000_000))) {
                produce(p, t, List.of(r));
            }
            compare(List.of(r), consumeAssigned(t, 0, 1), "large");
        }
    }

    static void idempotent() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t");
            createTopic(admin, t, 1, null);
            List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                    ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5))) {
                for (int i = 0; i < 500; i++)
                    fs.add(p.send(new ProducerRecord<>(t, 0, null, ("m-" + i).getBytes())));
                p.flush();
                for (int i = 0; i < fs.size(); i++) checkEq(fs.get(i).get().offset(), (long) i, "offset " + i);
            }
            var got = consumeAssigned(t, 0, 500);
            checkEq(got.size(), 500, "count");
            for (int i = 0; i < 500; i++) checkEq(new String(got.get(i).value()), "m-" + i, "value " + i);
            // The producer state must be visible to DescribeProducers as one producer id.
            var producers = admin.describeProducers(List.of(new TopicPartition(t, 0))).all().get(30, TimeUnit.SECONDS);
            var states = producers.get(new TopicPartition(t, 0)).activeProducers();
            checkEq(states.size(), 1, "active producers");
            checkEq(states.get(0).lastSequence(), 499, "last sequence");
        }
    }

    static void fill(Admin admin, String t, int partitions, int perPartition) throws Exception {
        createTopic(admin, t, partitions, null);
        try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) {
            for (int part = 0; part < partitions; part++)
                for (int i = 0; i < perPartition; i++)
                    p.send(new ProducerRecord<>(t, part, null, ("p" + part + "-" + i).getBytes()));
            p.flush();
        }
    }

    static List<ConsumerRecord<byte[], byte[]>> pollN(KafkaConsumer<byte[], byte[]> c, int n) {
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (got.size() < n && System.nanoTime() < deadline)
            for (var r : c.poll(Duration.ofMillis(300))) got.add(r);
        return got;
    }

    static void group() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t"), g = group("g");
            fill(admin, t, 2, 10);
            Map<String, Object> cfg = Map.of(ConsumerConfig.GROUP_ID_CONFIG, g, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 4);
            Set<String> seen = new HashSet<>();
            try (KafkaConsumer<byte[], byte[]> c = consumer(cfg)) {
                c.subscribe(List.of(t));
                var first = pollN(c, 8);
                check(first.size() >= 8, "first poll got " + first.size());
                // Commit exactly the first 8 records seen (per partition: last offset + 1).
                Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
                for (var r : first.subList(0, 8)) {
                    commit.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1, "meta"));
                    seen.add(r.partition() + ":" + r.offset());
                }
                c.commitSync(commit);
                var committed = c.committed(new HashSet<>(commit.keySet()));
                for (var e : commit.entrySet()) {
                    checkEq(committed.get(e.getKey()).offset(), e.getValue().offset(), "committed " + e.getKey());
                    checkEq(committed.get(e.getKey()).metadata(), "meta", "commit metadata");
                }
            }
            var offsets = admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            checkEq(offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum(), 8L, "admin committed sum");
            var desc = admin.describeConsumerGroups(List.of(g)).all().get(30, TimeUnit.SECONDS).get(g);
            checkEq(desc.groupState(), GroupState.EMPTY, "group state after close");
            try (KafkaConsumer<byte[], byte[]> c = consumer(cfg)) {
                c.subscribe(List.of(t));
                var rest = pollN(c, 12);
                checkEq(rest.size(), 12, "records after resume");
                for (var r : rest) check(seen.add(r.partition() + ":" + r.offset()), "duplicate " + r.partition() + ":" + r.offset());
                c.commitSync();
            }
            checkEq(seen.size(), 20, "each record once");
            var listed = admin.listGroups().all().get(30, TimeUnit.SECONDS);
            check(listed.stream().anyMatch(l -> l.groupId().equals(g)), "group listed");
        }
    }

    static class Tracker implements ConsumerRebalanceListener {
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        public void onPartitionsRevoked(Collection<TopicPartition> ps) { events.add("revoked " + parts(ps)); }
        public void onPartitionsAssigned(Collection<TopicPartition> ps) { events.add("assigned " + parts(ps)); }
        public void onPartitionsLost(Collection<TopicPartition> ps) { events.add("lost " + parts(ps)); }
        static Set<Integer> parts(Collection<TopicPartition> ps) {
            Set<Integer> s = new TreeSet<>();
            for (var p : ps) s.add(p.partition());
            return s;
        }
    }

    static Set<Integer> assigned(KafkaConsumer<byte[], byte[]> c) { return Tracker.parts(c.assignment()); }

    static void rebalanceWith(String strategy, boolean cooperative) throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t"), g = group("g");
            fill(admin, t, 4, 2);
            Map<String, Object> cfg = new HashMap<>(Map.of(ConsumerConfig.GROUP_ID_CONFIG, g,
                    ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000, ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500));
            if (strategy != null) cfg.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, strategy);
            Tracker t1 = new Tracker(), t2 = new Tracker();
            try (KafkaConsumer<byte[], byte[]> c1 = consumer(cfg)) {
                c1.subscribe(List.of(t), t1);
                waitUntil(() -> { c1.poll(Duration.ofMillis(100)); return assigned(c1).size() == 4; }, 30, "c1 owns 4");
                t1.events.clear();
                try (KafkaConsumer<byte[], byte[]> c2 = consumer(cfg)) {
                    c2.subscribe(List.of(t), t2);
                    waitUntil(() -> {
                        c1.poll(Duration.ofMillis(100));
                        c2.poll(Duration.ofMillis(100));
                        Set<Integer> a1 = assigned(c1), a2 = assigned(c2), all = new TreeSet<>(a1);
                        all.addAll(a2);
                        return a1.size() == 2 && a2.size() == 2 && all.size() == 4;
                    }, 40, "2/2 split");
                    if (cooperative) {
                        // Incremental: c1 only revokes the two partitions that moved, never all four.
                        for (String e : t1.events)
                            if (e.startsWith("revoked")) check(!e.equals("revoked [0, 1, 2, 3]"), "eager revoke seen: " + t1.events);
                        check(t1.events.stream().anyMatch(e -> e.startsWith("revoked [") && !e.equals("revoked []")),
                                "c1 revoked the moved partitions: " + t1.events);
                        var desc = admin.describeConsumerGroups(List.of(g)).all().get().get(g);
                        checkEq(desc.partitionAssignor(), "cooperative-sticky", "group protocol");
                    }
                }
                waitUntil(() -> { c1.poll(Duration.ofMillis(100)); return assigned(c1).size() == 4; }, 30,
                        "c1 owns 4 after c2 left");
            }
        }
    }

    static void rebalance() throws Exception { rebalanceWith(null, false); }

    static void cooperative() throws Exception {
        rebalanceWith(CooperativeStickyAssignor.class.getName(), true);
    }

    static void staticMembership() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t"), g = group("g");
            fill(admin, t, 2, 1);
            Map<String, Object> base = Map.of(ConsumerConfig.GROUP_ID_CONFIG, g,
                    ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 20000, ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
            Map<String, Object> a = new HashMap<>(base), b = new HashMap<>(base);
            a.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "member-a");
            b.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "member-b");
            try (KafkaConsumer<byte[], byte[]> cb = consumer(b)) {
                cb.subscribe(List.of(t));
                Set<Integer> before;
                try (KafkaConsumer<byte[], byte[]> ca = consumer(a)) {
                    ca.subscribe(List.of(t));
                    waitUntil(() -> {
                        ca.poll(Duration.ofMillis(100));
                        cb.poll(Duration.ofMillis(100));
                        return assigned(ca).size() == 1 && assigned(cb).size() == 1;
                    }, 40, "one partition each");
                    before = assigned(ca);
                    var desc = admin.describeConsumerGroups(List.of(g)).all().get().get(g);
                    Set<String> ids = new TreeSet<>();
                    for (var m : desc.members()) ids.add(m.groupInstanceId().orElse("?"));
                    checkEq(ids, new TreeSet<>(List.of("member-a", "member-b")), "group instance ids");
                }
                // A static member that closes does not leave: the group keeps both members.
                var desc = admin.describeConsumerGroups(List.of(g)).all().get().get(g);
                checkEq(desc.members().size(), 2, "members right after static member closed");
                Set<Integer> bBefore = assigned(cb);
                try (KafkaConsumer<byte[], byte[]> ca = consumer(a)) {
                    ca.subscribe(List.of(t));
                    waitUntil(() -> { ca.poll(Duration.ofMillis(100)); cb.poll(Duration.ofMillis(50));
                        return !assigned(ca).isEmpty(); }, 30, "restarted static member assigned");
                    checkEq(assigned(ca), before, "static member keeps its partition");
                    checkEq(assigned(cb), bBefore, "other member undisturbed");
                }
            }
        }
    }

    static void offsetsForTimes() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t");
            createTopic(admin, t, 1, null);
            List<Rec> recs = makeRecords(10);
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) { produce(p, t, recs); }
            TopicPartition tp = new TopicPartition(t, 0);
            long base = recs.get(0).timestamp;
            try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
                var found = c.offsetsForTimes(Map.of(tp, base + 2500)).get(tp);
                check(found != null, "offset for timestamp found");
                checkEq(found.offset(), 3L, "offset for base+2500");
                checkEq(found.timestamp(), base + 3000, "timestamp for base+2500");
                checkEq(c.offsetsForTimes(Map.of(tp, base + 10_000_000L)).get(tp), null, "after last record");
                checkEq(c.beginningOffsets(List.of(tp)).get(tp), 0L, "earliest");
                checkEq(c.endOffsets(List.of(tp)).get(tp), 10L, "latest");
            }
            var max = admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).all().get().get(tp);
            checkEq(max.offset(), 9L, "max timestamp offset");
            checkEq(max.timestamp(), base + 9000, "max timestamp");
        }
    }

    static Map<String, ConfigEntry> topicConfig(Admin admin, String t) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
        Map<String, ConfigEntry> out = new HashMap<>();
        for (ConfigEntry e : admin.describeConfigs(List.of(r)).all().get().get(r).entries()) out.put(e.name(), e);
        return out;
    }

    static void configs() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t");
            createTopic(admin, t, 1, Map.of("cleanup.policy", "compact"));
            var cfg = topicConfig(admin, t);
            checkEq(cfg.get("retention.ms").value(), "604800000", "default retention.ms");
            checkEq(cfg.get("max.message.bytes").value(), "1048588", "default max.message.bytes");
            checkEq(cfg.get("retention.ms").source(), ConfigEntry.ConfigSource.DEFAULT_CONFIG, "source of default");
            checkEq(cfg.get("cleanup.policy").value(), "compact", "create-time config");
            checkEq(cfg.get("cleanup.policy").source(), ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "source of override");
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
            admin.incrementalAlterConfigs(Map.of(r, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", ""), AlterConfigOp.OpType.DELETE)))).all().get();
            cfg = topicConfig(admin, t);
            checkEq(cfg.get("retention.ms").value(), "3600000", "altered retention.ms");
            checkEq(cfg.get("cleanup.policy").value(), "delete", "cleanup.policy back to default");
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "1");
            var entries = admin.describeConfigs(List.of(broker)).all().get().get(broker).entries();
            check(entries.stream().anyMatch(e -> e.name().equals("log.retention.hours") || e.name().equals("num.partitions")),
                    "broker configs described");
        }
    }

    static void deleteRecords() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t");
            createTopic(admin, t, 1, null);
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) {
                for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(t, 0, null, ("r" + i).getBytes()));
                p.flush();
            }
            TopicPartition tp = new TopicPartition(t, 0);
            var low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp).get();
            checkEq(low.lowWatermark(), 4L, "low watermark");
            var earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp);
            checkEq(earliest.offset(), 4L, "earliest after delete");
            var got = consumeAssigned(t, 0, 6);
            checkEq(got.size(), 6, "records after delete");
            for (int i = 0; i < 6; i++) {
                checkEq(got.get(i).offset(), (long) (i + 4), "offset");
                checkEq(new String(got.get(i).value()), "r" + (i + 4), "value");
            }
            expectError(org.apache.kafka.common.errors.OffsetOutOfRangeException.class,
                    () -> admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(50))).all().get(),
                    "delete beyond high watermark");
        }
    }

    static void errors() throws Exception {
        try (Admin admin = admin()) {
            String missing = topic("missing");
            expectError(UnknownTopicOrPartitionException.class,
                    () -> admin.deleteTopics(List.of(missing)).all().get(), "delete missing topic");
            expectError(UnknownTopicOrPartitionException.class,
                    () -> admin.describeTopics(List.of(missing)).allTopicNames().get(), "describe missing topic");
            expectError(InvalidConfigurationException.class,
                    () -> admin.createTopics(List.of(new NewTopic(topic("bad-config"), 1, (short) 1)
                            .configs(Map.of("cleanup.policy", "bogus")))).all().get(), "invalid config value");
            expectError(InvalidTopicException.class,
                    () -> admin.createTopics(List.of(new NewTopic("bad/name", 1, (short) 1))).all().get(), "invalid name");
            expectError(InvalidReplicationFactorException.class,
                    () -> admin.createTopics(List.of(new NewTopic(topic("rf3"), 1, (short) 3))).all().get(),
                    "replication factor above broker count");
            String t = topic("t");
            createTopic(admin, t, 1, null);
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
            expectError(InvalidConfigurationException.class, () -> admin.incrementalAlterConfigs(Map.of(r, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "not-a-number"), AlterConfigOp.OpType.SET)))).all().get(),
                    "alter with invalid value");
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 4_000_000,
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false, ProducerConfig.RETRIES_CONFIG, 0))) {
                expectError(RecordTooLargeException.class,
                        () -> p.send(new ProducerRecord<>(t, 0, null, new byte[TOO_LARGE_VALUE_BYTES])).get(30, TimeUnit.SECONDS),
                        "record above max.message.bytes");
            }
            try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false))) {
                var parts = c.listTopics().get(missing);
                checkEq(parts, null, "missing topic not auto-created by a consumer");
            }
        }
    }

    // ---------- dynamic broker configs ----------

    static final String CLUSTER_DEFAULT = "";  // the resource name of the cluster-wide broker default

    static ConfigResource brokerResource(String name) { return new ConfigResource(ConfigResource.Type.BROKER, name); }

    static void alterBroker(Admin admin, String name, AlterConfigOp.OpType op, String key, String value) throws Exception {
        admin.incrementalAlterConfigs(Map.of(brokerResource(name), List.of(
                new AlterConfigOp(new ConfigEntry(key, value), op)))).all().get(30, TimeUnit.SECONDS);
    }

    static ConfigEntry describedEntry(Admin admin, ConfigResource r, String key) throws Exception {
        Config c = admin.describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true))
                .all().get(30, TimeUnit.SECONDS).get(r);
        ConfigEntry e = c.get(key);
        check(e != null, r + ": " + key + " not described");
        return e;
    }

    /// "value SOURCE [synonym=value SOURCE, ...]": what a described entry says, in one comparable line.
    static String shown(ConfigEntry e) {
        List<String> syn = new ArrayList<>();
        for (ConfigEntry.ConfigSynonym s : e.synonyms()) syn.add(s.name() + "=" + s.value() + " " + s.source());
        return e.value() + " " + e.source() + " " + syn;
    }

    /// Dynamic configs are applied by the broker after the alter is answered (Kafka: once the controller's
    /// record reaches the broker's metadata), so what the topic reports is polled for.
    static void waitForTopicConfig(Admin admin, String t, String key, String expected) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        String last = null;
        while (System.nanoTime() < deadline) {
            last = shown(describedEntry(admin, r, key));
            if (last.equals(expected)) return;
            Thread.sleep(100);
        }
        checkEq(last, expected, t + " " + key + " (after 20 s)");
    }

    static void expectInvalidRequest(Admin admin, String name, String key, String value, String message) throws Exception {
        String what = "broker '" + name + "' " + key + "=" + value;
        InvalidRequestException e = expectError(InvalidRequestException.class,
                () -> alterBroker(admin, name, AlterConfigOp.OpType.SET, key, value), what);
        checkEq(Errors.forException(e).code(), (short) 42, what + ": error code");
        checkEq(e.getMessage(), message, what + ": message");
    }

    static RecordMetadata sendValue(KafkaProducer<byte[], byte[]> p, String t, int size) throws Exception {
        return p.send(new ProducerRecord<>(t, 0, null, new byte[size])).get(30, TimeUnit.SECONDS);
    }

    /// Dynamic broker configs: refused alters (INVALID_REQUEST with Kafka's messages) on broker "1" and on the
    /// cluster default, read_only per key, a cluster-default message.max.bytes that topics without their own
    /// max.message.bytes report and enforce, and log.retention.ms set per broker and cluster-wide seen through a
    /// topic's retention.ms and its synonym chain. Every config set is deleted at the end.
    static void brokerConfigs() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t");
            createTopic(admin, t, 1, null);
            ConfigResource topicRes = new ConfigResource(ConfigResource.Type.TOPIC, t);
            checkEq(shown(describedEntry(admin, topicRes, "retention.ms")), "604800000 DEFAULT_CONFIG []",
                    "retention.ms before any broker config (no synonyms)");
            for (String name : List.of("1", CLUSTER_DEFAULT)) {
                expectInvalidRequest(admin, name, "log.dirs", "/x", "Cannot update these configs dynamically: [log.dirs]");
                expectInvalidRequest(admin, name, "log.retention.ms", "abc",
                        "Invalid value abc for configuration log.retention.ms: Not a number of type LONG");
                expectInvalidRequest(admin, name, "log.segment.bytes", "100",
                        "Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576");
            }
            Config broker = admin.describeConfigs(List.of(brokerResource("1"))).all().get(30, TimeUnit.SECONDS)
                    .get(brokerResource("1"));
            for (String key : List.of("log.retention.ms", "message.max.bytes", "log.cleanup.policy"))
                checkEq(broker.get(key).isReadOnly(), false, "broker 1 " + key + " read_only");
            for (String key : List.of("log.dirs", "node.id", "log.retention.hours"))
                checkEq(broker.get(key).isReadOnly(), true, "broker 1 " + key + " read_only");
            try {
                alterBroker(admin, CLUSTER_DEFAULT, AlterConfigOp.OpType.SET, "message.max.bytes", "50000");
                waitForTopicConfig(admin, t, "max.message.bytes", "50000 DYNAMIC_DEFAULT_BROKER_CONFIG "
                        + "[message.max.bytes=50000 DYNAMIC_DEFAULT_BROKER_CONFIG, message.max.bytes=1048588 DEFAULT_CONFIG]");
                try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 4_000_000,
                        ProducerConfig.COMPRESSION_TYPE_CONFIG, "none",
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false, ProducerConfig.RETRIES_CONFIG, 0))) {
                    RecordTooLargeException e = expectError(RecordTooLargeException.class, () -> sendValue(p, t, 60_000),
                            "60000-byte record above the cluster-default message.max.bytes=50000");
                    checkEq(Errors.forException(e).code(), (short) 10, "60000-byte record: error code");
                    System.out.println("60000-byte record refused: " + e.getMessage());
                    checkEq(sendValue(p, t, 40_000).offset(), 0L, "40000-byte record below the limit");
                    alterBroker(admin, CLUSTER_DEFAULT, AlterConfigOp.OpType.DELETE, "message.max.bytes", null);
                    waitForTopicConfig(admin, t, "max.message.bytes", "1048588 DEFAULT_CONFIG "
                            + "[message.max.bytes=1048588 DEFAULT_CONFIG]");
                    checkEq(sendValue(p, t, 60_000).offset(), 1L, "60000-byte record once the default is deleted");
                }
                alterBroker(admin, "1", AlterConfigOp.OpType.SET, "log.retention.ms", "987654321");
                alterBroker(admin, CLUSTER_DEFAULT, AlterConfigOp.OpType.SET, "log.retention.ms", "123456789");
                waitForTopicConfig(admin, t, "retention.ms", "987654321 DYNAMIC_BROKER_CONFIG "
                        + "[log.retention.ms=987654321 DYNAMIC_BROKER_CONFIG, "
                        + "log.retention.ms=123456789 DYNAMIC_DEFAULT_BROKER_CONFIG, log.retention.hours=168 DEFAULT_CONFIG]");
            } finally {
                alterBroker(admin, CLUSTER_DEFAULT, AlterConfigOp.OpType.DELETE, "message.max.bytes", null);
                alterBroker(admin, "1", AlterConfigOp.OpType.DELETE, "log.retention.ms", null);
                alterBroker(admin, CLUSTER_DEFAULT, AlterConfigOp.OpType.DELETE, "log.retention.ms", null);
            }
            waitForTopicConfig(admin, t, "retention.ms", "604800000 DEFAULT_CONFIG []");
        }
    }

    // ---------- KIP-467 per-record errors ----------

    // Kafka 4.x topic defaults: message.timestamp.after.max.ms = 1 h, before.max.ms = Long.MAX_VALUE.
    static final long TIMESTAMP_AFTER_MAX_MS = 3_600_000L;
    static final long FUTURE_TIMESTAMP_SKEW_MS = 2 * 3_600_000L;
    static final String OTHER_RECORD_MESSAGE =
            "Failed to append record because it was part of a batch which had one more more invalid records";
    static final java.util.regex.Pattern TIMESTAMP_MESSAGE = java.util.regex.Pattern.compile(
            "Timestamp (-?\\d+) of message with offset (\\d+) is out of range\\. "
                    + "The timestamp should be within \\[(-?\\d+), (-?\\d+)\\]");

    /// One refused batch of 3 records: keys, timestamps and what each record is expected to fail with
    /// ("keyless", "timestamp" or "other": refused only because it shared the batch).
    record BadBatch(String name, Map<String, String> configs, Errors top, byte[][] keys, long[] timestamps,
                    String[] expected) {
        int named() { return (int) Arrays.stream(expected).filter(k -> !k.equals("other")).count(); }
    }

    static void checkRecordMessage(String message, String kind, String t, int index, long timestamp,
                                   long sentMs, long ackedMs, String what) {
        if (kind.equals("keyless")) {
            checkEq(message, "Compacted topic cannot accept message without key in topic partition " + t + "-0",
                    what + ": message");
            return;
        }
        var m = TIMESTAMP_MESSAGE.matcher(message == null ? "" : message);
        check(m.matches(), what + ": message '" + message + "' is not Kafka's out-of-range timestamp message");
        checkEq(Long.parseLong(m.group(1)), timestamp, what + ": timestamp in the message");
        checkEq(Integer.parseInt(m.group(2)), index, what + ": offset in the message (the record's index in the batch)");
        long low = Long.parseLong(m.group(3)), high = Long.parseLong(m.group(4));
        long now = high - TIMESTAMP_AFTER_MAX_MS;
        check(sentMs <= now && now <= ackedMs, what + ": upper bound " + high + " is not the broker's time (between "
                + sentMs + " and " + ackedMs + ") + 1 h");
        checkEq(low, now - Long.MAX_VALUE, what + ": lower bound (broker time - Long.MAX_VALUE)");
    }

    /// KIP-467: a batch the broker refuses names its bad records in record_errors. The producer fails
    /// each named record with the broker's per-record message, typed by the partition-level error when
    /// it is the only one named and as InvalidRecordException otherwise; the other records of the batch
    /// fail with a plain KafkaException. Nothing of the batch is stored; the next batch of the same
    /// (idempotent) producer is.
    static void recordErrors() throws Exception {
        long now = System.currentTimeMillis(), future = now + FUTURE_TIMESTAMP_SKEW_MS;
        byte[] k0 = "k0".getBytes(), k1 = "k1".getBytes(), k2 = "k2".getBytes();
        Map<String, String> compact = Map.of("cleanup.policy", "compact");
        List<BadBatch> cases = List.of(
                // Compacted topic, records 0 and 2 keyless: INVALID_RECORD, 2 record errors.
                new BadBatch("keyless", compact, Errors.INVALID_RECORD, new byte[][]{null, k1, null},
                        new long[]{now, now, now}, new String[]{"keyless", "other", "keyless"}),
                // Record 1 two hours ahead (the limit is 1 h): INVALID_TIMESTAMP, 1 record error.
                new BadBatch("future", Map.of(), Errors.INVALID_TIMESTAMP, new byte[][]{k0, k1, k2},
                        new long[]{now, future, now}, new String[]{"other", "timestamp", "other"}),
                // Both: INVALID_TIMESTAMP (a timestamp error is among them), 2 record errors.
                new BadBatch("mixed", compact, Errors.INVALID_TIMESTAMP, new byte[][]{null, k1, k2},
                        new long[]{now, future, now}, new String[]{"keyless", "timestamp", "other"}));
        try (Admin admin = admin();
             // linger.ms and batch.size hold the 3 records in one batch until flush() sends it.
             KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 10_000,
                     ProducerConfig.BATCH_SIZE_CONFIG, 1_000_000))) {
            for (BadBatch c : cases) {
                String t = topic(c.name());
                createTopic(admin, t, 1, c.configs());
                long sentMs = System.currentTimeMillis();
                List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
                for (int i = 0; i < 3; i++)
                    fs.add(p.send(new ProducerRecord<>(t, 0, c.timestamps()[i], c.keys()[i], ("bad-" + i).getBytes())));
                p.flush();
                long ackedMs = System.currentTimeMillis() + 1;
                for (int i = 0; i < 3; i++) {
                    String what = c.name() + ": record " + i, kind = c.expected()[i];
                    Throwable err;
                    try {
                        fs.get(i).get(30, TimeUnit.SECONDS);
                        throw new AssertionError(what + ": delivered, but the batch should have been refused");
                    } catch (ExecutionException e) {
                        err = e.getCause();
                    }
                    System.out.println(what + ": " + err.getClass().getName() + ": " + err.getMessage());
                    if (kind.equals("other")) {
                        checkEq(err.getClass(), KafkaException.class, what + ": exception type");
                        checkEq(err.getMessage(), OTHER_RECORD_MESSAGE, what + ": message");
                    } else {
                        Class<?> type = c.named() == 1 ? c.top().exception().getClass() : InvalidRecordException.class;
                        checkEq(err.getClass(), type, what + ": exception type");
                        checkRecordMessage(err.getMessage(), kind, t, i, c.timestamps()[i], sentMs, ackedMs, what);
                    }
                }
                TopicPartition tp = new TopicPartition(t, 0);
                try (KafkaConsumer<byte[], byte[]> cons = consumer(Map.of())) {
                    checkEq(cons.endOffsets(List.of(tp)).get(tp), 0L, c.name() + ": end offset after the refused batch");
                }
                List<Rec> good = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    Rec r = new Rec();
                    r.key = ("good-k" + i).getBytes();
                    r.value = ("good-" + i).getBytes();
                    r.headers = List.of(new RecordHeader("h", "1".getBytes()));
                    r.timestamp = now + i;
                    good.add(r);
                }
                List<RecordMetadata> mds = produce(p, t, good);
                for (int i = 0; i < 3; i++) checkEq(mds.get(i).offset(), (long) i, c.name() + ": good batch offset");
                compare(good, consumeAssigned(t, 0, 3), c.name() + ": stored");
                try (KafkaConsumer<byte[], byte[]> cons = consumer(Map.of())) {
                    checkEq(cons.endOffsets(List.of(tp)).get(tp), 3L, c.name() + ": end offset after the good batch");
                }
            }
        }
    }

    // ---------- transactions ----------

    static List<String> readValues(String t, String isolation, long upTo) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation))) {
            TopicPartition tp = new TopicPartition(t, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<String> got = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (c.position(tp) < upTo && System.nanoTime() < deadline)
                for (var r : c.poll(Duration.ofMillis(300))) got.add(new String(r.value(), StandardCharsets.UTF_8));
            return got;
        }
    }

    static void send(KafkaProducer<byte[], byte[]> p, String t, String value) throws Exception {
        p.send(new ProducerRecord<>(t, 0, null, value.getBytes(StandardCharsets.UTF_8))).get(30, TimeUnit.SECONDS);
    }

    static void transactions() throws Exception {
        try (Admin admin = admin()) {
            String t = topic("t"), g = group("g");
            createTopic(admin, t, 1, null);
            TopicPartition tp = new TopicPartition(t, 0);
            ConsumerGroupMetadata groupMetadata = new ConsumerGroupMetadata(g);
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-txn"))) {
                p.initTransactions();
                p.beginTransaction();
                send(p, t, "c0");
                send(p, t, "c1");
                p.commitTransaction();                 // c0 0, c1 1, COMMIT 2
                p.beginTransaction();
                send(p, t, "a0");
                p.abortTransaction();                  // a0 3, ABORT 4
                p.beginTransaction();
                send(p, t, "c2");
                p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(5)), groupMetadata);
                p.commitTransaction();                 // c2 5, COMMIT 6
                p.beginTransaction();
                send(p, t, "a1");
                p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(8)), groupMetadata);
                p.abortTransaction();                  // a1 7, ABORT 8
            }
            try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
                checkEq(c.endOffsets(List.of(tp)).get(tp), 9L, "read_committed end offset (LSO)");
            }
            checkEq(readValues(t, "read_committed", 9), List.of("c0", "c1", "c2"), "read_committed values");
            checkEq(readValues(t, "read_uncommitted", 9), List.of("c0", "c1", "a0", "c2", "a1"), "read_uncommitted values");
            var offsets = admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            checkEq(offsets.get(tp).offset(), 5L, "offset committed in the transaction (the aborted one dropped)");
        }
    }

    /// Starts a worker whose output is echoed; `started` opens once it has begun processing.
    static Process startWorker(List<String> cmd, java.util.concurrent.CountDownLatch started) throws Exception {
        Process worker = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        Thread echo = new Thread(() -> {
            try (var lines = new java.io.BufferedReader(new java.io.InputStreamReader(worker.getInputStream()))) {
                String line;
                while ((line = lines.readLine()) != null) {
                    System.out.println("[worker] " + line);
                    if (line.startsWith("starting with")) started.countDown();
                }
            } catch (java.io.IOException e) {
                System.out.println("[worker] output closed: " + e);
            }
        });
        echo.setDaemon(true);
        echo.start();
        return worker;
    }

    /// Runs the ExactlyOnce worker, kills it with SIGKILL at random points, runs it to the end,
    /// then checks with a read_committed reader that the output holds each input record once.
    static void exactlyOnce() throws Exception {
        final int records = 3000, partitions = 3, kills = 3;
        long seed = System.nanoTime();
        System.out.println("random seed " + seed);
        Random random = new Random(seed);
        try (Admin admin = admin()) {
            String in = topic("in"), out = topic("out"), g = group("rpw");
            createTopic(admin, in, partitions, null);
            createTopic(admin, out, partitions, null);
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
                for (int i = 0; i < records; i++) {
                    byte[] v = ("in-" + i).getBytes(StandardCharsets.UTF_8);
                    p.send(new ProducerRecord<>(in, i % partitions, v, v));
                }
                p.flush();
            }
            String java = ProcessHandle.current().info().command().orElse("java");
            List<String> cmd = List.of(java, "-cp", System.getProperty("java.class.path"), "ExactlyOnce",
                    bootstrap, in, out, g, prefix + "-rpw", String.valueOf(records));
            for (int k = 0; k < kills; k++) {
                java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
                Process worker = startWorker(cmd, started);
                check(started.await(60, TimeUnit.SECONDS), "the worker starts processing");
                long afterMs = 300 + random.nextInt(2200);
                if (!worker.waitFor(afterMs, TimeUnit.MILLISECONDS)) {
                    worker.destroyForcibly();   // SIGKILL
                    worker.waitFor();
                    System.out.println("killed the worker " + afterMs + " ms into processing");
                } else {
                    System.out.println("worker finished before its kill, exit " + worker.exitValue());
                }
            }
            Process worker = startWorker(cmd, new java.util.concurrent.CountDownLatch(1));
            check(worker.waitFor(90, TimeUnit.SECONDS), "the last worker finishes");
            checkEq(worker.exitValue(), 0, "last worker exit code");

            List<TopicPartition> outParts = new ArrayList<>();
            for (int i = 0; i < partitions; i++) outParts.add(new TopicPartition(out, i));
            Map<String, Integer> seen = new HashMap<>();
            long total = 0;
            try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
                c.assign(outParts);
                c.seekToBeginning(outParts);
                Map<TopicPartition, Long> end = c.endOffsets(outParts);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (outParts.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.nanoTime() < deadline)
                    for (var r : c.poll(Duration.ofMillis(300))) {
                        seen.merge(new String(r.value(), StandardCharsets.UTF_8), 1, Integer::sum);
                        total++;
                    }
                long uncommittedEnd = 0;
                try (KafkaConsumer<byte[], byte[]> u = consumer(Map.of())) {
                    for (long e : u.endOffsets(outParts).values()) uncommittedEnd += e;
                }
                System.out.println("output: " + total + " committed records, " + uncommittedEnd
                        + " offsets in all (aborted records and markers included)");
            }
            List<String> duplicated = new ArrayList<>();
            seen.forEach((v, n) -> { if (n > 1) duplicated.add(v + " x" + n); });
            checkEq(duplicated, List.of(), "records seen more than once");
            List<String> missing = new ArrayList<>();
            for (int i = 0; i < records; i++) if (!seen.containsKey("in-" + i)) missing.add("in-" + i);
            checkEq(missing.size(), 0, "records missing (first: " + missing.stream().limit(5).toList() + ")");
            checkEq(total, (long) records, "output record count");
        }
    }
}
