// A read-process-write worker for the exactly_once scenario: copies every record of the input
// topic to the output topic inside transactions that also commit the input offsets, so a run
// killed at any point and started again leaves each input record exactly once in the output.
// Usage: java ExactlyOnce BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID EXPECTED_RECORDS
// Exits 0 once the committed input offsets cover EXPECTED_RECORDS records.

import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ExactlyOnce {
    /// Simulated work per record, so that kills land inside transactions.
    static final long WORK_PER_RECORD_MS = 2;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], group = args[3], txnId = args[4];
        long expected = Long.parseLong(args[5]);

        Map<String, Object> pc = new HashMap<>();
        pc.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pc.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        pc.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30000);
        pc.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 20000);
        pc.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30000);
        Map<String, Object> cc = new HashMap<>();
        cc.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cc.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cc.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cc.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cc.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cc.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 25);
        cc.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);

        try (KafkaProducer<byte[], byte[]> producer =
                     new KafkaProducer<>(pc, new ByteArraySerializer(), new ByteArraySerializer());
             KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(cc, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            // Fences an earlier instance with this id and aborts its open transaction.
            producer.initTransactions();
            List<TopicPartition> parts = new ArrayList<>();
            consumer.partitionsFor(input).forEach(p -> parts.add(new TopicPartition(input, p.partition())));
            // Manual assignment: the group holds offsets only, so a restart waits for no rebalance.
            consumer.assign(parts);
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new HashSet<>(parts));
            long done = 0;
            for (TopicPartition tp : parts) {
                OffsetAndMetadata o = committed.get(tp);
                if (o != null) {
                    consumer.seek(tp, o.offset());
                    done += o.offset();
                } else {
                    consumer.seekToBeginning(List.of(tp));
                }
            }
            System.out.println("starting with " + done + " input records already processed");
            ConsumerGroupMetadata groupMetadata = new ConsumerGroupMetadata(group);
            while (done < expected) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    Thread.sleep(WORK_PER_RECORD_MS);
                    producer.send(new ProducerRecord<>(output, r.key(), r.value()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, groupMetadata);
                producer.commitTransaction();
                done += records.count();
            }
            System.out.println("processed " + done + " input records");
        }
    }
}
