// The wire44 scenario: the request versions Apache Kafka 4.4 added past Kafka 4.1, built,
// serialized and parsed by kafka-clients 4.4's own request and response classes (the code its
// Java client sends with) over a plain socket, so that each version is exercised even where
// the client's high-level API does not pick it (the classic consumer and the admin client stop
// at OffsetCommit and OffsetFetch 9; only the KIP-848 consumer sends 10).
//
// OffsetCommit and OffsetFetch 10 (topic ids), ListOffsets 11 (EARLIEST_PENDING_UPLOAD),
// ApiVersions 5 (cluster id and node id checked, KIP-1242), DeleteGroups 3 (error messages),
// DescribeLogDirs 5 (IsCordoned) and WriteTxnMarkers 2 (transaction version per marker).

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.*;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.requests.*;

public class Wire44 {
    static final Uuid UNKNOWN_ID = new Uuid(0x0bad0bad0bad0badL, 0x0bad0bad0bad0badL);

    /// One connection, one request at a time, as the client's NetworkClient frames them.
    static class Wire implements AutoCloseable {
        final Socket socket;
        final DataOutputStream out;
        final DataInputStream in;
        int correlationId = 1;

        Wire(String bootstrap) throws Exception {
            String[] hostPort = bootstrap.split(":");
            socket = new Socket(hostPort[0], Integer.parseInt(hostPort[1]));
            socket.setSoTimeout(30_000);
            out = new DataOutputStream(socket.getOutputStream());
            in = new DataInputStream(socket.getInputStream());
        }

        AbstractResponse call(AbstractRequest request) throws Exception {
            RequestHeader header = new RequestHeader(request.apiKey(), request.version(), "wire44", correlationId++);
            ByteBuffer frame = request.serializeWithHeader(header);
            out.writeInt(frame.remaining());
            out.write(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
            out.flush();
            byte[] answer = new byte[in.readInt()];
            in.readFully(answer);
            return AbstractResponse.parseResponse(ByteBuffer.wrap(answer), header);
        }

        /// A request from its message data at an explicit version, as the client's builders
        /// make it.
        AbstractResponse call(ApiKeys key, int version, ApiMessage data) throws Exception {
            ByteBuffer body = MessageUtil.toByteBufferAccessor(data, (short) version).buffer();
            AbstractRequest request = AbstractRequest.parseRequest(key, (short) version, new ByteBufferAccessor(body)).request;
            return call(request);
        }

        @Override public void close() throws Exception { socket.close(); }
    }

    static void run(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-wire44";
        String markers = prefix + "-wire44-markers";
        String group = prefix + "-wire44-group";
        Uuid topicId;
        String clusterId;
        int nodeId;
        try (Admin admin = Compat.admin()) {
            Compat.createTopic(admin, topic, 1, null);
            Compat.createTopic(admin, markers, 1, null);
            topicId = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic).topicId();
            DescribeClusterResult cluster = admin.describeCluster();
            clusterId = cluster.clusterId().get(30, TimeUnit.SECONDS);
            nodeId = cluster.nodes().get(30, TimeUnit.SECONDS).iterator().next().id();
        }
        try (KafkaProducer<byte[], byte[]> p = Compat.producer(Map.of())) {
            for (int i = 0; i < 3; i++) p.send(new ProducerRecord<>(topic, 0, null, ("v" + i).getBytes())).get(30, TimeUnit.SECONDS);
        }

        try (Wire wire = new Wire(bootstrap)) {
            apiVersions(wire, clusterId, nodeId);
            listOffsets(wire, topic);
            offsets(wire, group, topicId);
            deleteGroups(wire, group);
            describeLogDirs(wire, topic);
            writeTxnMarkers(wire, markers);
        }
    }

    static ApiVersionsResponseData apiVersionsV5(Wire wire, String clusterId, int nodeId) throws Exception {
        ApiVersionsRequestData data = new ApiVersionsRequestData()
            .setClientSoftwareName("apache-kafka-java").setClientSoftwareVersion(AppInfo.VERSION)
            .setClusterId(clusterId).setNodeId(nodeId);
        return ((ApiVersionsResponse) wire.call(ApiKeys.API_VERSIONS, 5, data)).data();
    }

    static void apiVersions(Wire wire, String clusterId, int nodeId) throws Exception {
        ApiVersionsResponseData ok = apiVersionsV5(wire, null, -1);
        Compat.checkEq(ok.errorCode(), Errors.NONE.code(), "ApiVersions v5 from a client that knows nothing yet");
        Map<Short, Short> max = new HashMap<>();
        for (ApiVersionsResponseData.ApiVersion v : ok.apiKeys()) max.put(v.apiKey(), v.maxVersion());
        Compat.checkEq(max.get(ApiKeys.API_VERSIONS.id), (short) 5, "ApiVersions max");
        Compat.checkEq(max.get(ApiKeys.OFFSET_COMMIT.id), (short) 10, "OffsetCommit max");
        Compat.checkEq(max.get(ApiKeys.OFFSET_FETCH.id), (short) 10, "OffsetFetch max");
        Compat.checkEq(max.get(ApiKeys.LIST_OFFSETS.id), (short) 11, "ListOffsets max");
        Compat.checkEq(max.get(ApiKeys.TXN_OFFSET_COMMIT.id), (short) 6, "TxnOffsetCommit max");
        Compat.checkEq(max.get(ApiKeys.DELETE_GROUPS.id), (short) 3, "DeleteGroups max");
        Compat.checkEq(max.get(ApiKeys.DESCRIBE_LOG_DIRS.id), (short) 5, "DescribeLogDirs max");
        Compat.checkEq(max.get(ApiKeys.WRITE_TXN_MARKERS.id), (short) 2, "WriteTxnMarkers max");
        Compat.checkEq(apiVersionsV5(wire, clusterId, nodeId).errorCode(), Errors.NONE.code(), "ApiVersions v5 naming this cluster and node");
        ApiVersionsResponseData stale = apiVersionsV5(wire, "another-cluster", nodeId);
        Compat.checkEq(stale.errorCode(), Errors.REBOOTSTRAP_REQUIRED.code(), "ApiVersions v5 naming another cluster");
        Compat.checkEq(stale.apiKeys().size(), 0, "no API list with REBOOTSTRAP_REQUIRED");
        Compat.checkEq(apiVersionsV5(wire, clusterId, nodeId + 7).errorCode(), Errors.REBOOTSTRAP_REQUIRED.code(), "ApiVersions v5 naming another node");
        Compat.checkEq(apiVersionsV5(wire, clusterId, -1).errorCode(), Errors.INVALID_REQUEST.code(), "ApiVersions v5 with a cluster id and no node id");
    }

    static ListOffsetsResponseData.ListOffsetsPartitionResponse listOffsets(Wire wire, String topic, int version, long timestamp) throws Exception {
        ListOffsetsRequestData data = new ListOffsetsRequestData().setReplicaId(-1).setTimeoutMs(30_000)
            .setTopics(List.of(new ListOffsetsRequestData.ListOffsetsTopic().setName(topic)
                .setPartitions(List.of(new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0).setTimestamp(timestamp)))));
        return ((ListOffsetsResponse) wire.call(ApiKeys.LIST_OFFSETS, version, data)).data().topics().get(0).partitions().get(0);
    }

    static void listOffsets(Wire wire, String topic) throws Exception {
        ListOffsetsResponseData.ListOffsetsPartitionResponse pending = listOffsets(wire, topic, 11, ListOffsetsRequest.EARLIEST_PENDING_UPLOAD_TIMESTAMP);
        Compat.checkEq(pending.errorCode(), Errors.NONE.code(), "ListOffsets v11 EARLIEST_PENDING_UPLOAD error");
        Compat.checkEq(pending.offset(), -1L, "nothing waits for a tiered upload");
        Compat.checkEq(listOffsets(wire, topic, 11, ListOffsetsRequest.LATEST_TIMESTAMP).offset(), 3L, "ListOffsets v11 latest");
        Compat.checkEq(listOffsets(wire, topic, 11, ListOffsetsRequest.EARLIEST_TIMESTAMP).offset(), 0L, "ListOffsets v11 earliest");
    }

    static Map<Uuid, Short> commit(Wire wire, String group, long offset, Uuid... ids) throws Exception {
        List<OffsetCommitRequestData.OffsetCommitRequestTopic> topics = new ArrayList<>();
        for (Uuid id : ids) topics.add(new OffsetCommitRequestData.OffsetCommitRequestTopic().setTopicId(id)
            .setPartitions(List.of(new OffsetCommitRequestData.OffsetCommitRequestPartition()
                .setPartitionIndex(0).setCommittedOffset(offset).setCommittedMetadata("wire44"))));
        OffsetCommitRequestData data = new OffsetCommitRequestData().setGroupId(group)
            .setGenerationIdOrMemberEpoch(-1).setMemberId("").setTopics(topics);
        for (int attempt = 0; ; attempt++) {
            OffsetCommitRequest request = OffsetCommitRequest.Builder.forTopicIdsOrNames(data).build((short) 10);
            OffsetCommitResponseData answer = ((OffsetCommitResponse) wire.call(request)).data();
            Map<Uuid, Short> errors = new LinkedHashMap<>();
            for (OffsetCommitResponseData.OffsetCommitResponseTopic t : answer.topics())
                errors.put(t.topicId(), t.partitions().get(0).errorCode());
            boolean retriable = errors.values().stream().anyMatch(e -> Errors.forCode(e).exception() instanceof org.apache.kafka.common.errors.RetriableException);
            if (!retriable || attempt > 100) return errors;
            Thread.sleep(100);
        }
    }

    static OffsetFetchResponseData.OffsetFetchResponseGroup fetch(Wire wire, String group, Uuid... ids) throws Exception {
        List<OffsetFetchRequestData.OffsetFetchRequestTopics> topics = null;
        if (ids.length > 0) {
            topics = new ArrayList<>();
            for (Uuid id : ids) topics.add(new OffsetFetchRequestData.OffsetFetchRequestTopics().setTopicId(id).setPartitionIndexes(List.of(0)));
        }
        OffsetFetchRequestData data = new OffsetFetchRequestData().setGroups(List.of(
            new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId(group).setTopics(topics)));
        OffsetFetchRequest request = OffsetFetchRequest.Builder.forTopicIdsOrNames(data, false).build((short) 10);
        return ((OffsetFetchResponse) wire.call(request)).data().groups().get(0);
    }

    /// FindCoordinator for the group, as a client asks before its first commit (Kafka creates
    /// the offsets topic then), until the coordinator is ready.
    static void findCoordinator(Wire wire, String group) throws Exception {
        FindCoordinatorRequestData data = new FindCoordinatorRequestData().setKeyType((byte) 0).setCoordinatorKeys(List.of(group));
        for (int attempt = 0; ; attempt++) {
            FindCoordinatorResponseData answer = ((FindCoordinatorResponse) wire.call(ApiKeys.FIND_COORDINATOR, 6, data)).data();
            short error = answer.coordinators().get(0).errorCode();
            if (error == Errors.NONE.code()) return;
            Compat.check(attempt < 300, "no coordinator for " + group + ": " + Errors.forCode(error));
            Thread.sleep(100);
        }
    }

    static void offsets(Wire wire, String group, Uuid topicId) throws Exception {
        findCoordinator(wire, group);
        Map<Uuid, Short> committed = commit(wire, group, 2, topicId, UNKNOWN_ID);
        Compat.checkEq(committed.get(topicId), Errors.NONE.code(), "OffsetCommit v10 by topic id");
        Compat.checkEq(committed.get(UNKNOWN_ID), Errors.UNKNOWN_TOPIC_ID.code(), "OffsetCommit v10 of an unknown topic id");

        OffsetFetchResponseData.OffsetFetchResponseGroup fetched = fetch(wire, group, topicId, UNKNOWN_ID);
        Compat.checkEq(fetched.errorCode(), Errors.NONE.code(), "OffsetFetch v10 group error");
        Map<Uuid, OffsetFetchResponseData.OffsetFetchResponsePartitions> byId = new HashMap<>();
        for (OffsetFetchResponseData.OffsetFetchResponseTopics t : fetched.topics()) byId.put(t.topicId(), t.partitions().get(0));
        Compat.checkEq(byId.get(topicId).committedOffset(), 2L, "OffsetFetch v10 by topic id");
        Compat.checkEq(byId.get(topicId).metadata(), "wire44", "OffsetFetch v10 metadata");
        Compat.checkEq(byId.get(UNKNOWN_ID).errorCode(), Errors.UNKNOWN_TOPIC_ID.code(), "OffsetFetch v10 of an unknown topic id");

        OffsetFetchResponseData.OffsetFetchResponseGroup all = fetch(wire, group);
        Compat.checkEq(all.topics().size(), 1, "OffsetFetch v10 of every topic");
        Compat.checkEq(all.topics().get(0).topicId(), topicId, "every topic, by id");
        Compat.checkEq(all.topics().get(0).partitions().get(0).committedOffset(), 2L, "every topic's offset");
    }

    static void deleteGroups(Wire wire, String group) throws Exception {
        DeleteGroupsRequestData data = new DeleteGroupsRequestData().setGroupsNames(List.of(group, group + "-missing"));
        DeleteGroupsResponseData answer = ((DeleteGroupsResponse) wire.call(ApiKeys.DELETE_GROUPS, 3, data)).data();
        DeleteGroupsResponseData.DeletableGroupResult deleted = answer.results().find(group);
        DeleteGroupsResponseData.DeletableGroupResult missing = answer.results().find(group + "-missing");
        Compat.checkEq(deleted.errorCode(), Errors.NONE.code(), "DeleteGroups v3 of an empty group");
        Compat.checkEq(deleted.errorMessage(), null, "no message without an error");
        Compat.checkEq(missing.errorCode(), Errors.GROUP_ID_NOT_FOUND.code(), "DeleteGroups v3 of a missing group");
        Compat.checkEq(missing.errorMessage(), null, "a group's own outcome carries no message");
    }

    static void describeLogDirs(Wire wire, String topic) throws Exception {
        DescribeLogDirsResponseData answer = ((DescribeLogDirsResponse) wire.call(ApiKeys.DESCRIBE_LOG_DIRS, 5,
            new DescribeLogDirsRequestData().setTopics(null))).data();
        Compat.checkEq(answer.errorCode(), Errors.NONE.code(), "DescribeLogDirs v5 error");
        boolean found = false;
        for (DescribeLogDirsResponseData.DescribeLogDirsResult dir : answer.results()) {
            Compat.checkEq(dir.isCordoned(), false, "no log directory is cordoned");
            Compat.check(dir.totalBytes() > 0 && dir.usableBytes() > 0, "volume sizes");
            for (DescribeLogDirsResponseData.DescribeLogDirsTopic t : dir.topics()) found |= t.name().equals(topic);
        }
        Compat.check(found, "the topic's partition is in a log directory");
    }

    static short marker(Wire wire, String topic, long producerId, short epoch, byte transactionVersion) throws Exception {
        WriteTxnMarkersRequestData data = new WriteTxnMarkersRequestData().setMarkers(List.of(
            new WriteTxnMarkersRequestData.WritableTxnMarker().setProducerId(producerId).setProducerEpoch(epoch)
                .setTransactionResult(false).setCoordinatorEpoch(0).setTransactionVersion(transactionVersion)
                .setTopics(List.of(new WriteTxnMarkersRequestData.WritableTxnMarkerTopic().setName(topic).setPartitionIndexes(List.of(0))))));
        WriteTxnMarkersResponseData answer = ((WriteTxnMarkersResponse) wire.call(ApiKeys.WRITE_TXN_MARKERS, 2, data)).data();
        return answer.markers().get(0).topics().get(0).partitions().get(0).errorCode();
    }

    static void writeTxnMarkers(Wire wire, String topic) throws Exception {
        // A producer the partition has never seen: its marker is written, as an admin's abort is.
        Compat.checkEq(marker(wire, topic, 4242L, (short) 3, (byte) 2), Errors.NONE.code(), "WriteTxnMarkers v2 (transaction version 2)");
        Compat.checkEq(marker(wire, topic + "-missing", 4242L, (short) 4, (byte) 2), Errors.UNKNOWN_TOPIC_OR_PARTITION.code(),
            "WriteTxnMarkers v2 to an unknown partition");
    }

    /// The client version, for ApiVersions' software fields.
    static class AppInfo {
        static final String VERSION = org.apache.kafka.common.utils.internals.AppInfoParser.getVersion();
    }
}
