// Writes kafka44.txt: message bodies serialized by Apache Kafka 4.4's own generated message
// classes (kafka-clients 4.4.0, the code its Java client and broker send with), one per line
// as "<message> <version> <hex>". The Rust tests in kafka44.rs decode each body with
// shale-protocol, check every field against the values set here and encode it back to the
// same bytes.
//
//   javac -cp kafka-clients-4.4.0.jar -d /tmp/fixtures KafkaFixtures.java
//   java -cp kafka-clients-4.4.0.jar:/tmp/fixtures KafkaFixtures > kafka44.txt

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.record.internal.MemoryRecords;

public class KafkaFixtures {
    // The topic id every fixture uses: 00010203-0405-0607-0809-0a0b0c0d0e0f.
    static final Uuid TOPIC_ID = new Uuid(0x0001020304050607L, 0x08090a0b0c0d0e0fL);

    static void emit(String name, int version, Message message) {
        ByteBuffer buffer = MessageUtil.toByteBufferAccessor(message, (short) version).buffer();
        StringBuilder hex = new StringBuilder();
        while (buffer.hasRemaining()) {
            hex.append(String.format("%02x", buffer.get() & 0xff));
        }
        System.out.println(name + " " + version + " " + hex);
    }

    public static void main(String[] args) {
        emit("OffsetCommitRequest", 10, new OffsetCommitRequestData()
            .setGroupId("group-1")
            .setGenerationIdOrMemberEpoch(7)
            .setMemberId("member-1")
            .setGroupInstanceId("instance-1")
            .setTopics(List.of(new OffsetCommitRequestData.OffsetCommitRequestTopic()
                .setTopicId(TOPIC_ID)
                .setPartitions(List.of(
                    new OffsetCommitRequestData.OffsetCommitRequestPartition()
                        .setPartitionIndex(0).setCommittedOffset(42)
                        .setCommittedLeaderEpoch(3).setCommittedMetadata("meta"),
                    new OffsetCommitRequestData.OffsetCommitRequestPartition()
                        .setPartitionIndex(1).setCommittedOffset(43)
                        .setCommittedLeaderEpoch(-1).setCommittedMetadata(null))))));

        emit("OffsetFetchRequest", 10, new OffsetFetchRequestData()
            .setGroups(List.of(
                new OffsetFetchRequestData.OffsetFetchRequestGroup()
                    .setGroupId("group-1").setMemberId("member-1").setMemberEpoch(5)
                    .setTopics(List.of(new OffsetFetchRequestData.OffsetFetchRequestTopics()
                        .setTopicId(TOPIC_ID).setPartitionIndexes(List.of(0, 2)))),
                new OffsetFetchRequestData.OffsetFetchRequestGroup()
                    .setGroupId("group-2").setMemberId(null).setMemberEpoch(-1)
                    .setTopics(null)))
            .setRequireStable(true));

        emit("ListOffsetsRequest", 11, new ListOffsetsRequestData()
            .setReplicaId(-1)
            .setIsolationLevel((byte) 1)
            .setTimeoutMs(30000)
            .setTopics(List.of(new ListOffsetsRequestData.ListOffsetsTopic()
                .setName("topic-a")
                .setPartitions(List.of(new ListOffsetsRequestData.ListOffsetsPartition()
                    .setPartitionIndex(0).setCurrentLeaderEpoch(2).setTimestamp(-6L))))));

        emit("TxnOffsetCommitRequest", 6, new TxnOffsetCommitRequestData()
            .setTransactionalId("txn-1")
            .setGroupId("group-1")
            .setProducerId(1234L)
            .setProducerEpoch((short) 5)
            .setGenerationIdOrMemberEpoch(3)
            .setMemberId("member-1")
            .setGroupInstanceId(null)
            .setTopics(List.of(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic()
                .setTopicId(TOPIC_ID)
                .setPartitions(List.of(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition()
                    .setPartitionIndex(0).setCommittedOffset(100)
                    .setCommittedLeaderEpoch(4).setCommittedMetadata("md"))))));

        emit("WriteTxnMarkersRequest", 2, new WriteTxnMarkersRequestData()
            .setMarkers(List.of(new WriteTxnMarkersRequestData.WritableTxnMarker()
                .setProducerId(1234L)
                .setProducerEpoch((short) 6)
                .setTransactionResult(true)
                .setTopics(List.of(new WriteTxnMarkersRequestData.WritableTxnMarkerTopic()
                    .setName("topic-a").setPartitionIndexes(List.of(0, 1))))
                .setCoordinatorEpoch(9)
                .setTransactionVersion((byte) 2))));

        emit("ApiVersionsRequest", 5, new ApiVersionsRequestData()
            .setClientSoftwareName("apache-kafka-java")
            .setClientSoftwareVersion("4.4.0")
            .setClusterId("Fe8-5tBYQ1eUcxyUTGXPgA")
            .setNodeId(1));

        emit("ApiVersionsRequest", 5, new ApiVersionsRequestData()
            .setClientSoftwareName("apache-kafka-java")
            .setClientSoftwareVersion("4.4.0"));

        emit("DeleteGroupsRequest", 3, new DeleteGroupsRequestData()
            .setGroupsNames(List.of("group-1", "group-2")));

        emit("DescribeLogDirsRequest", 5, new DescribeLogDirsRequestData().setTopics(null));

        emit("OffsetCommitResponse", 10, new OffsetCommitResponseData()
            .setThrottleTimeMs(0)
            .setTopics(List.of(new OffsetCommitResponseData.OffsetCommitResponseTopic()
                .setTopicId(TOPIC_ID)
                .setPartitions(List.of(
                    new OffsetCommitResponseData.OffsetCommitResponsePartition()
                        .setPartitionIndex(0).setErrorCode((short) 0),
                    new OffsetCommitResponseData.OffsetCommitResponsePartition()
                        .setPartitionIndex(1).setErrorCode((short) 100))))));

        emit("OffsetFetchResponse", 10, new OffsetFetchResponseData()
            .setGroups(List.of(new OffsetFetchResponseData.OffsetFetchResponseGroup()
                .setGroupId("group-1")
                .setTopics(List.of(new OffsetFetchResponseData.OffsetFetchResponseTopics()
                    .setTopicId(TOPIC_ID)
                    .setPartitions(List.of(new OffsetFetchResponseData.OffsetFetchResponsePartitions()
                        .setPartitionIndex(0).setCommittedOffset(42)
                        .setCommittedLeaderEpoch(3).setMetadata("meta").setErrorCode((short) 0)))))
                .setErrorCode((short) 0))));

        emit("ListOffsetsResponse", 11, new ListOffsetsResponseData()
            .setTopics(List.of(new ListOffsetsResponseData.ListOffsetsTopicResponse()
                .setName("topic-a")
                .setPartitions(List.of(new ListOffsetsResponseData.ListOffsetsPartitionResponse()
                    .setPartitionIndex(0).setErrorCode((short) 0)
                    .setTimestamp(-1L).setOffset(5L).setLeaderEpoch(0))))));

        emit("TxnOffsetCommitResponse", 6, new TxnOffsetCommitResponseData()
            .setThrottleTimeMs(0)
            .setTopics(List.of(new TxnOffsetCommitResponseData.TxnOffsetCommitResponseTopic()
                .setTopicId(TOPIC_ID)
                .setPartitions(List.of(new TxnOffsetCommitResponseData.TxnOffsetCommitResponsePartition()
                    .setPartitionIndex(0).setErrorCode((short) 0))))));

        DeleteGroupsResponseData.DeletableGroupResultCollection results =
            new DeleteGroupsResponseData.DeletableGroupResultCollection();
        results.add(new DeleteGroupsResponseData.DeletableGroupResult()
            .setGroupId("group-1").setErrorCode((short) 0));
        results.add(new DeleteGroupsResponseData.DeletableGroupResult()
            .setGroupId("group-2").setErrorCode((short) 68)
            .setErrorMessage("The group is not empty."));
        emit("DeleteGroupsResponse", 3, new DeleteGroupsResponseData()
            .setThrottleTimeMs(0).setResults(results));

        emit("DescribeLogDirsResponse", 5, new DescribeLogDirsResponseData()
            .setThrottleTimeMs(0)
            .setErrorCode((short) 0)
            .setResults(List.of(new DescribeLogDirsResponseData.DescribeLogDirsResult()
                .setErrorCode((short) 0)
                .setLogDir("/var/lib/shale")
                .setTopics(List.of(new DescribeLogDirsResponseData.DescribeLogDirsTopic()
                    .setName("topic-a")
                    .setPartitions(List.of(new DescribeLogDirsResponseData.DescribeLogDirsPartition()
                        .setPartitionIndex(0).setPartitionSize(100).setOffsetLag(0)
                        .setIsFutureKey(false)))))
                .setTotalBytes(1000L)
                .setUsableBytes(500L)
                .setIsCordoned(false))));

        emit("WriteTxnMarkersResponse", 2, new WriteTxnMarkersResponseData()
            .setMarkers(List.of(new WriteTxnMarkersResponseData.WritableTxnMarkerResult()
                .setProducerId(1234L)
                .setTopics(List.of(new WriteTxnMarkersResponseData.WritableTxnMarkerTopicResult()
                    .setName("topic-a")
                    .setPartitions(List.of(new WriteTxnMarkersResponseData.WritableTxnMarkerPartitionResult()
                        .setPartitionIndex(0).setErrorCode((short) 0))))))));

        // What a Kafka 4.4 broker answers when ClusterId or NodeId do not match (KIP-1242).
        emit("ApiVersionsResponse", 5, new ApiVersionsResponseData()
            .setErrorCode((short) 129).setThrottleTimeMs(0));

        shareFixtures();
    }

    // The share-group messages Shale's codec carries, at every version Kafka 4.4 defines.
    static void shareFixtures() {
        for (int version = 1; version <= 2; version++) {
            ShareFetchRequestData.FetchPartitionCollection partitions =
                new ShareFetchRequestData.FetchPartitionCollection();
            partitions.add(new ShareFetchRequestData.FetchPartition()
                .setPartitionIndex(3)
                .setAcknowledgementBatches(List.of(new ShareFetchRequestData.AcknowledgementBatch()
                    .setFirstOffset(5).setLastOffset(6)
                    .setAcknowledgeTypes(List.of((byte) 1, (byte) 4)))));
            ShareFetchRequestData.FetchTopicCollection topics =
                new ShareFetchRequestData.FetchTopicCollection();
            topics.add(new ShareFetchRequestData.FetchTopic()
                .setTopicId(TOPIC_ID).setPartitions(partitions));
            emit("ShareFetchRequest", version, new ShareFetchRequestData()
                .setGroupId("g").setMemberId("m1").setShareSessionEpoch(1)
                .setMaxWaitMs(500).setMinBytes(1).setMaxBytes(1048576)
                .setMaxRecords(500).setBatchSize(100)
                .setShareAcquireMode((byte) 1).setIsRenewAck(version >= 2)
                .setTopics(topics)
                .setForgottenTopicsData(List.of(new ShareFetchRequestData.ForgottenTopic()
                    .setTopicId(TOPIC_ID).setPartitions(List.of(9)))));

            ShareFetchResponseData.ShareFetchableTopicResponseCollection responses =
                new ShareFetchResponseData.ShareFetchableTopicResponseCollection();
            responses.add(new ShareFetchResponseData.ShareFetchableTopicResponse()
                .setTopicId(TOPIC_ID)
                .setPartitions(List.of(new ShareFetchResponseData.PartitionData()
                    .setPartitionIndex(3)
                    .setCurrentLeader(new ShareFetchResponseData.LeaderIdAndEpoch()
                        .setLeaderId(1).setLeaderEpoch(2))
                    .setRecords(MemoryRecords.readableRecords(ByteBuffer.wrap(new byte[] {'a', 'b', 'c'})))
                    .setAcquiredRecords(List.of(new ShareFetchResponseData.AcquiredRecords()
                        .setFirstOffset(10).setLastOffset(12).setDeliveryCount((short) 1))))));
            ShareFetchResponseData.NodeEndpointCollection endpoints =
                new ShareFetchResponseData.NodeEndpointCollection();
            endpoints.add(new ShareFetchResponseData.NodeEndpoint()
                .setNodeId(1).setHost("h").setPort(9092).setRack(null));
            emit("ShareFetchResponse", version, new ShareFetchResponseData()
                .setThrottleTimeMs(0).setErrorCode((short) 0)
                .setAcquisitionLockTimeoutMs(30000)
                .setResponses(responses).setNodeEndpoints(endpoints));

            ShareAcknowledgeRequestData.AcknowledgePartitionCollection ackPartitions =
                new ShareAcknowledgeRequestData.AcknowledgePartitionCollection();
            ackPartitions.add(new ShareAcknowledgeRequestData.AcknowledgePartition()
                .setPartitionIndex(3)
                .setAcknowledgementBatches(List.of(
                    new ShareAcknowledgeRequestData.AcknowledgementBatch()
                        .setFirstOffset(5).setLastOffset(7)
                        .setAcknowledgeTypes(List.of((byte) 4, (byte) 1, (byte) 0)),
                    new ShareAcknowledgeRequestData.AcknowledgementBatch()
                        .setFirstOffset(8).setLastOffset(8)
                        .setAcknowledgeTypes(List.of((byte) 3)))));
            ShareAcknowledgeRequestData.AcknowledgeTopicCollection ackTopics =
                new ShareAcknowledgeRequestData.AcknowledgeTopicCollection();
            ackTopics.add(new ShareAcknowledgeRequestData.AcknowledgeTopic()
                .setTopicId(TOPIC_ID).setPartitions(ackPartitions));
            emit("ShareAcknowledgeRequest", version, new ShareAcknowledgeRequestData()
                .setGroupId("g").setMemberId("m1").setShareSessionEpoch(2)
                .setIsRenewAck(version >= 2).setTopics(ackTopics));

            ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponseCollection ackResponses =
                new ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponseCollection();
            ackResponses.add(new ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponse()
                .setTopicId(TOPIC_ID)
                .setPartitions(List.of(new ShareAcknowledgeResponseData.PartitionData()
                    .setPartitionIndex(3).setErrorCode((short) 6).setErrorMessage("not")
                    .setCurrentLeader(new ShareAcknowledgeResponseData.LeaderIdAndEpoch()
                        .setLeaderId(2).setLeaderEpoch(9)))));
            ShareAcknowledgeResponseData.NodeEndpointCollection ackEndpoints =
                new ShareAcknowledgeResponseData.NodeEndpointCollection();
            ackEndpoints.add(new ShareAcknowledgeResponseData.NodeEndpoint()
                .setNodeId(2).setHost("h").setPort(9093).setRack("r1"));
            emit("ShareAcknowledgeResponse", version, new ShareAcknowledgeResponseData()
                .setThrottleTimeMs(5).setErrorCode((short) 0)
                .setAcquisitionLockTimeoutMs(30000)
                .setResponses(ackResponses).setNodeEndpoints(ackEndpoints));
        }

        for (int version = 0; version <= 1; version++) {
            emit("WriteShareGroupStateRequest", version, new WriteShareGroupStateRequestData()
                .setGroupId("g")
                .setTopics(List.of(new WriteShareGroupStateRequestData.WriteStateData()
                    .setTopicId(TOPIC_ID)
                    .setPartitions(List.of(new WriteShareGroupStateRequestData.PartitionData()
                        .setPartition(3).setStateEpoch(4).setLeaderEpoch(5).setStartOffset(100)
                        .setDeliveryCompleteCount(7)
                        .setStateBatches(List.of(new WriteShareGroupStateRequestData.StateBatch()
                            .setFirstOffset(100).setLastOffset(109)
                            .setDeliveryState((byte) 2).setDeliveryCount((short) 1))))))));

            emit("WriteShareGroupStateResponse", version, new WriteShareGroupStateResponseData()
                .setResults(List.of(new WriteShareGroupStateResponseData.WriteStateResult()
                    .setTopicId(TOPIC_ID)
                    .setPartitions(List.of(new WriteShareGroupStateResponseData.PartitionResult()
                        .setPartition(3).setErrorCode((short) 124)
                        .setErrorMessage("fenced"))))));

            emit("ReadShareGroupStateSummaryRequest", version,
                new ReadShareGroupStateSummaryRequestData()
                    .setGroupId("g")
                    .setTopics(List.of(new ReadShareGroupStateSummaryRequestData.ReadStateSummaryData()
                        .setTopicId(TOPIC_ID)
                        .setPartitions(List.of(new ReadShareGroupStateSummaryRequestData.PartitionData()
                            .setPartition(3).setLeaderEpoch(5))))));

            emit("ReadShareGroupStateSummaryResponse", version,
                new ReadShareGroupStateSummaryResponseData()
                    .setResults(List.of(new ReadShareGroupStateSummaryResponseData.ReadStateSummaryResult()
                        .setTopicId(TOPIC_ID)
                        .setPartitions(List.of(new ReadShareGroupStateSummaryResponseData.PartitionResult()
                            .setPartition(3).setErrorCode((short) 0).setStateEpoch(4)
                            .setLeaderEpoch(5).setStartOffset(100)
                            .setDeliveryCompleteCount(7))))));

            emit("DescribeShareGroupOffsetsRequest", version,
                new DescribeShareGroupOffsetsRequestData()
                    .setGroups(List.of(
                        new DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestGroup()
                            .setGroupId("g")
                            .setTopics(List.of(new DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestTopic()
                                .setTopicName("topic-a").setPartitions(List.of(0, 1)))),
                        new DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestGroup()
                            .setGroupId("h").setTopics(null))));

            emit("DescribeShareGroupOffsetsResponse", version,
                new DescribeShareGroupOffsetsResponseData()
                    .setThrottleTimeMs(0)
                    .setGroups(List.of(new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseGroup()
                        .setGroupId("g")
                        .setTopics(List.of(new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseTopic()
                            .setTopicName("topic-a").setTopicId(TOPIC_ID)
                            .setPartitions(List.of(new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponsePartition()
                                .setPartitionIndex(0).setStartOffset(100).setLeaderEpoch(5)
                                .setLag(42).setErrorCode((short) 0)))))
                        .setErrorCode((short) 0))));
        }
    }
}
