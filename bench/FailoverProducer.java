// The Java producer side of bench/replication.py's failover rounds: an idempotent acks=all
// producer (kafka-clients, linger.ms=0, other settings at their defaults) that writes one
// 100-byte record every INTERVAL_MS into partition 0 of TOPIC and prints one line per
// delivery on stdout:
//
//   ack <System.nanoTime()> <offset>
//   err <System.nanoTime()> <exception>
//
// System.nanoTime() reads CLOCK_MONOTONIC on Linux, the clock of Python's time.monotonic(), so
// the script compares these times with its own. It prints "ready <nanoTime>" once the producer
// exists, stops sending when a line arrives on stdin (or stdin closes), flushes, prints "done"
// and exits. Run with the single-file source launcher:
//
//   java -cp 'compat-tests/.deps/kafka/lib/*' bench/FailoverProducer.java BOOTSTRAP TOPIC INTERVAL_MS

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.util.Properties;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class FailoverProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        long intervalNs = (long) (Double.parseDouble(args[2]) * 1_000_000L);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "failover-java");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false);
        Object lock = new Object();
        byte[] value = new byte[100];
        java.util.Arrays.fill(value, (byte) 'j');
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            Thread stdin = new Thread(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                    in.readLine();
                } catch (Exception ignored) {
                    // stdin closed: stop as well
                }
            });
            stdin.setDaemon(true);
            stdin.start();
            synchronized (lock) {
                out.println("ready " + System.nanoTime());
                out.flush();
            }
            long next = System.nanoTime();
            while (stdin.isAlive()) {
                long now = System.nanoTime();
                if (now < next) {
                    LockSupport.parkNanos(next - now);
                    continue;
                }
                next += intervalNs;
                producer.send(new ProducerRecord<>(topic, 0, null, value), (meta, err) -> {
                    long at = System.nanoTime();
                    synchronized (lock) {
                        if (err == null) {
                            out.println("ack " + at + " " + meta.offset());
                        } else {
                            out.println("err " + at + " " + err.toString().replace('\n', ' '));
                        }
                        out.flush();
                    }
                });
            }
            producer.flush();
        }
        synchronized (lock) {
            out.println("done");
            out.flush();
        }
    }
}
