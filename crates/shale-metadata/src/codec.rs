//! The versioned encoding (`shale_raft::encoding`) of every metadata type that is persisted
//! (records, in log entries and snapshots) or sent (controller requests and responses
//! forwarded to the active controller). Each struct and each enum variant is written at
//! version 0 with room for tagged fields. Kind numbers of enum variants are fixed forever:
//! a new variant takes the next number, a removed one leaves a gap.

use shale_raft::{versioned_enum, versioned_struct};

use crate::acl::AclFilter;
use crate::controller::{
    AlterConfigOp, AlterConfigOpType, ControllerRequest, ControllerResponse, CreatableTopic,
    CreatePartitionsTopic, CreatedTopic, ElectionType, HeartbeatReply, ProducerIdBlock,
    QuotaAlteration, ReassignablePartition, ScramDeletion, ScramUpsertion,
};
use crate::error::MetadataError;
use crate::forward::{Answer, Call, ForwardRequest, ForwardResponse};
use crate::image::{AclEntry, PartitionImage};
use crate::quorum::{QuorumDescription, ReplicaState};
use crate::records::{ConfigResource, Endpoint, FeatureRange, MetadataRecord, SecurityProtocol};

// The kind numbers are the variant indexes bincode wrote, so a record has one number in both
// formats.
versioned_enum!(MetadataRecord {
    0 => RegisterBroker {
        broker_id,
        incarnation_id,
        broker_epoch,
        listeners,
        rack,
        features,
        fenced,
        in_controlled_shutdown,
    },
    1 => FenceBroker { broker_id, broker_epoch },
    2 => UnfenceBroker { broker_id, broker_epoch },
    3 => BrokerRegistrationChange {
        broker_id,
        broker_epoch,
        fenced,
        in_controlled_shutdown,
    },
    4 => UnregisterBroker { broker_id, broker_epoch },
    5 => Topic { name, topic_id },
    6 => Partition {
        topic_id,
        partition,
        replicas,
        isr,
        leader,
        leader_epoch,
        partition_epoch,
        adding_replicas,
        removing_replicas,
    },
    7 => PartitionChange {
        topic_id,
        partition,
        leader,
        isr,
        replicas,
        adding_replicas,
        removing_replicas,
    },
    8 => RemoveTopic { topic_id },
    9 => Config { resource, name, value },
    10 => AccessControlEntry {
        id,
        resource_type,
        resource_name,
        pattern_type,
        principal,
        host,
        operation,
        permission_type,
    },
    11 => RemoveAccessControlEntry { id },
    12 => UserScramCredential {
        name,
        mechanism,
        salt,
        stored_key,
        server_key,
        iterations,
    },
    13 => RemoveUserScramCredential { name, mechanism },
    14 => ClientQuota { entity, key, value },
    15 => ProducerIds {
        broker_id,
        broker_epoch,
        next_producer_id,
    },
    16 => FeatureLevel { name, level },
    17 => NoOp,
    18 => PartitionWithElr {
        topic_id,
        partition,
        replicas,
        isr,
        leader,
        leader_epoch,
        partition_epoch,
        adding_replicas,
        removing_replicas,
        eligible_leader_replicas,
        last_known_elr,
    },
    19 => PartitionChangeWithElr {
        topic_id,
        partition,
        leader,
        isr,
        replicas,
        adding_replicas,
        removing_replicas,
        eligible_leader_replicas,
        last_known_elr,
    },
});

versioned_enum!(SecurityProtocol {
    0 => Plaintext,
    1 => Ssl,
    2 => SaslPlaintext,
    3 => SaslSsl,
});

versioned_struct!(Endpoint {
    name,
    host,
    port,
    security_protocol,
});

versioned_enum!(ConfigResource {
    0 => Topic(name),
    1 => Broker(broker_id),
    2 => ClusterDefaultBroker,
    3 => Group(group_id),
});

versioned_struct!(FeatureRange {
    name,
    min_version,
    max_version,
});

versioned_enum!(ControllerRequest {
    0 => CreateTopics { topics, validate_only },
    1 => DeleteTopics { names, ids },
    2 => CreatePartitions { topics, validate_only },
    3 => IncrementalAlterConfigs { resources, validate_only },
    4 => AlterConfigs { resources, validate_only },
    5 => RegisterBroker {
        broker_id,
        incarnation_id,
        cluster_id,
        listeners,
        rack,
        features,
        unclean_shutdown,
    },
    6 => BrokerHeartbeat {
        broker_id,
        broker_epoch,
        want_fence,
        want_shutdown,
        current_metadata_offset,
    },
    7 => AlterPartition {
        broker_id,
        broker_epoch,
        topic_id,
        partition,
        leader_epoch,
        new_isr,
        partition_epoch,
    },
    8 => ElectLeaders { election_type, partitions },
    9 => AlterPartitionReassignments { partitions },
    10 => AllocateProducerIds { broker_id, broker_epoch },
    11 => UnregisterBroker { broker_id },
    12 => CreateAcls { creations },
    13 => DeleteAcls { filters },
    14 => AlterUserScramCredentials { deletions, upsertions },
    15 => AlterClientQuotas { entries, validate_only },
    16 => UpdateFeatures { updates },
    17 => Tick,
    18 => FenceDeparted { broker_id, broker_epoch },
});

versioned_enum!(ControllerResponse {
    0 => CreateTopics(results),
    1 => DeleteTopics { by_name, by_id },
    2 => CreatePartitions(results),
    3 => AlterConfigs(results),
    4 => RegisterBroker(result),
    5 => BrokerHeartbeat(result),
    6 => AlterPartition(result),
    7 => ElectLeaders(results),
    8 => AlterPartitionReassignments(results),
    9 => AllocateProducerIds(result),
    10 => UnregisterBroker(result),
    11 => CreateAcls(results),
    12 => DeleteAcls(results),
    13 => AlterUserScramCredentials(results),
    14 => AlterClientQuotas(results),
    15 => UpdateFeatures(results),
    16 => Tick(fenced),
    17 => FenceDeparted(fenced),
});

versioned_struct!(CreatableTopic {
    name,
    num_partitions,
    replication_factor,
    assignments,
    configs,
});

versioned_struct!(CreatePartitionsTopic {
    name,
    count,
    assignments,
});

versioned_enum!(AlterConfigOpType {
    0 => Set,
    1 => Delete,
    2 => Append,
    3 => Subtract,
});

versioned_struct!(AlterConfigOp { name, op, value });

versioned_enum!(ElectionType {
    0 => Preferred,
    1 => Unclean,
});

versioned_struct!(ReassignablePartition {
    topic,
    partition,
    replicas,
});

versioned_struct!(CreatedTopic {
    topic_id,
    num_partitions,
    replication_factor,
});

versioned_struct!(HeartbeatReply {
    is_caught_up,
    is_fenced,
    should_shut_down,
});

versioned_struct!(ProducerIdBlock {
    first_producer_id,
    len,
});

versioned_struct!(ScramUpsertion {
    name,
    mechanism,
    iterations,
    salt,
    stored_key,
    server_key,
});

versioned_struct!(ScramDeletion { name, mechanism });

versioned_struct!(QuotaAlteration { entity, ops });

versioned_struct!(AclFilter {
    resource_type,
    resource_name,
    pattern_type,
    principal,
    host,
    operation,
    permission_type,
});

versioned_struct!(AclEntry {
    id,
    resource_type,
    resource_name,
    pattern_type,
    principal,
    host,
    operation,
    permission_type,
});

versioned_struct!(PartitionImage {
    partition,
    replicas,
    isr,
    leader,
    leader_epoch,
    partition_epoch,
    adding_replicas,
    removing_replicas,
    eligible_leader_replicas,
    last_known_elr,
});

versioned_struct!(ReplicaState {
    replica_id,
    log_end_offset,
    last_fetch_timestamp_ms,
    last_caught_up_timestamp_ms,
});

versioned_struct!(QuorumDescription {
    leader_id,
    leader_epoch,
    high_watermark,
    voters,
    observers,
});

versioned_enum!(MetadataError {
    0 => TopicAlreadyExists(message),
    1 => InvalidTopic(message),
    2 => InvalidPartitions(message),
    3 => InvalidReplicationFactor(message),
    4 => InvalidReplicaAssignment(message),
    5 => InvalidConfig(message),
    6 => InvalidRequest(message),
    7 => PolicyViolation(message),
    8 => UnknownTopicOrPartition,
    9 => UnknownTopicId,
    10 => TopicDeletionDisabled,
    11 => StaleBrokerEpoch(message),
    12 => BrokerIdNotRegistered(message),
    13 => DuplicateBrokerRegistration(message),
    14 => InconsistentClusterId(message),
    15 => FencedLeaderEpoch(message),
    16 => InvalidUpdateVersion(message),
    17 => IneligibleReplica(message),
    18 => NotLeaderOrFollower(message),
    19 => ElectionNotNeeded(message),
    20 => PreferredLeaderNotAvailable(message),
    21 => EligibleLeadersNotAvailable(message),
    22 => NoReassignmentInProgress(message),
    23 => UnsupportedSaslMechanism(message),
    24 => UnacceptableCredential(message),
    25 => ResourceNotFound(message),
    26 => DuplicateResource(message),
    27 => NotController,
    28 => RequestTimedOut,
    29 => ShutDown,
    30 => InconsistentStorage(message),
    31 => Corrupt(message),
    32 => Io(message),
    33 => EmptySaltedPassword,
});

versioned_struct!(ForwardRequest {
    cluster_id,
    request,
});

versioned_struct!(ForwardResponse { result, offset });

versioned_enum!(Call {
    0 => Controller(request),
    1 => DescribeQuorum { cluster_id },
    2 => Goodbye,
});

versioned_enum!(Answer {
    0 => Controller(response),
    1 => DescribeQuorum(result),
});

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use shale_raft::encoding::{from_slice, to_vec};
    use uuid::Uuid;

    use super::*;
    use crate::records::{decode_entry, encode_entry};

    fn uuid() -> impl Strategy<Value = Uuid> {
        any::<u128>().prop_map(Uuid::from_u128)
    }

    fn ids() -> impl Strategy<Value = Vec<i32>> {
        proptest::collection::vec(any::<i32>(), 0..4)
    }

    fn opt_ids() -> impl Strategy<Value = Option<Vec<i32>>> {
        proptest::option::of(ids())
    }

    fn text() -> impl Strategy<Value = String> {
        "\\PC{0,8}"
    }

    fn endpoint() -> impl Strategy<Value = Endpoint> {
        (text(), text(), any::<u16>(), 0..4u8).prop_map(|(name, host, port, protocol)| Endpoint {
            name,
            host,
            port,
            security_protocol: match protocol {
                0 => SecurityProtocol::Plaintext,
                1 => SecurityProtocol::Ssl,
                2 => SecurityProtocol::SaslPlaintext,
                _ => SecurityProtocol::SaslSsl,
            },
        })
    }

    fn resource() -> impl Strategy<Value = ConfigResource> {
        prop_oneof![
            text().prop_map(ConfigResource::Topic),
            any::<i32>().prop_map(ConfigResource::Broker),
            Just(ConfigResource::ClusterDefaultBroker),
            text().prop_map(ConfigResource::Group),
        ]
    }

    fn record() -> impl Strategy<Value = MetadataRecord> {
        let features = proptest::collection::vec(
            (text(), any::<i16>(), any::<i16>()).prop_map(|(name, min_version, max_version)| {
                FeatureRange {
                    name,
                    min_version,
                    max_version,
                }
            }),
            0..3,
        );
        prop_oneof![
            (
                any::<i32>(),
                uuid(),
                any::<i64>(),
                proptest::collection::vec(endpoint(), 0..3),
                proptest::option::of(text()),
                features,
                any::<(bool, bool)>()
            )
                .prop_map(
                    |(
                        broker_id,
                        incarnation_id,
                        broker_epoch,
                        listeners,
                        rack,
                        features,
                        (fenced, in_controlled_shutdown),
                    )| {
                        MetadataRecord::RegisterBroker {
                            broker_id,
                            incarnation_id,
                            broker_epoch,
                            listeners,
                            rack,
                            features,
                            fenced,
                            in_controlled_shutdown,
                        }
                    }
                ),
            (any::<i32>(), any::<i64>()).prop_map(|(broker_id, broker_epoch)| {
                MetadataRecord::FenceBroker {
                    broker_id,
                    broker_epoch,
                }
            }),
            (any::<i32>(), any::<i64>()).prop_map(|(broker_id, broker_epoch)| {
                MetadataRecord::UnfenceBroker {
                    broker_id,
                    broker_epoch,
                }
            }),
            (
                any::<i32>(),
                any::<i64>(),
                any::<Option<bool>>(),
                any::<Option<bool>>()
            )
                .prop_map(
                    |(broker_id, broker_epoch, fenced, in_controlled_shutdown)| {
                        MetadataRecord::BrokerRegistrationChange {
                            broker_id,
                            broker_epoch,
                            fenced,
                            in_controlled_shutdown,
                        }
                    }
                ),
            (any::<i32>(), any::<i64>()).prop_map(|(broker_id, broker_epoch)| {
                MetadataRecord::UnregisterBroker {
                    broker_id,
                    broker_epoch,
                }
            }),
            (text(), uuid()).prop_map(|(name, topic_id)| MetadataRecord::Topic { name, topic_id }),
            (uuid(), any::<[i32; 4]>(), ids(), ids(), ids(), ids()).prop_map(
                |(
                    topic_id,
                    [partition, leader, leader_epoch, partition_epoch],
                    replicas,
                    isr,
                    adding_replicas,
                    removing_replicas,
                )| {
                    MetadataRecord::Partition {
                        topic_id,
                        partition,
                        replicas,
                        isr,
                        leader,
                        leader_epoch,
                        partition_epoch,
                        adding_replicas,
                        removing_replicas,
                    }
                }
            ),
            (
                uuid(),
                any::<i32>(),
                any::<Option<i32>>(),
                opt_ids(),
                opt_ids(),
                opt_ids(),
                opt_ids()
            )
                .prop_map(
                    |(
                        topic_id,
                        partition,
                        leader,
                        isr,
                        replicas,
                        adding_replicas,
                        removing_replicas,
                    )| {
                        MetadataRecord::PartitionChange {
                            topic_id,
                            partition,
                            leader,
                            isr,
                            replicas,
                            adding_replicas,
                            removing_replicas,
                        }
                    }
                ),
            uuid().prop_map(|topic_id| MetadataRecord::RemoveTopic { topic_id }),
            (resource(), text(), proptest::option::of(text())).prop_map(
                |(resource, name, value)| MetadataRecord::Config {
                    resource,
                    name,
                    value
                }
            ),
            (uuid(), any::<[i8; 4]>(), text(), text(), text()).prop_map(
                |(
                    id,
                    [resource_type, pattern_type, operation, permission_type],
                    resource_name,
                    principal,
                    host,
                )| {
                    MetadataRecord::AccessControlEntry {
                        id,
                        resource_type,
                        resource_name,
                        pattern_type,
                        principal,
                        host,
                        operation,
                        permission_type,
                    }
                }
            ),
            uuid().prop_map(|id| MetadataRecord::RemoveAccessControlEntry { id }),
            (
                text(),
                any::<i8>(),
                any::<Vec<u8>>(),
                any::<Vec<u8>>(),
                any::<i32>()
            )
                .prop_map(|(name, mechanism, salt, stored_key, iterations)| {
                    MetadataRecord::UserScramCredential {
                        name,
                        mechanism,
                        server_key: stored_key.iter().rev().copied().collect(),
                        salt,
                        stored_key,
                        iterations,
                    }
                }),
            (text(), any::<i8>()).prop_map(|(name, mechanism)| {
                MetadataRecord::RemoveUserScramCredential { name, mechanism }
            }),
            (
                proptest::collection::vec((text(), proptest::option::of(text())), 0..3),
                text(),
                proptest::option::of(-1e12f64..1e12)
            )
                .prop_map(|(entity, key, value)| MetadataRecord::ClientQuota {
                    entity,
                    key,
                    value
                }),
            (any::<i32>(), any::<i64>(), any::<i64>()).prop_map(
                |(broker_id, broker_epoch, next_producer_id)| MetadataRecord::ProducerIds {
                    broker_id,
                    broker_epoch,
                    next_producer_id,
                }
            ),
            (text(), any::<i16>())
                .prop_map(|(name, level)| MetadataRecord::FeatureLevel { name, level }),
            Just(MetadataRecord::NoOp),
            (uuid(), any::<[i32; 4]>(), ids(), ids(), ids(), ids()).prop_map(
                |(
                    topic_id,
                    [partition, leader, leader_epoch, partition_epoch],
                    replicas,
                    isr,
                    eligible_leader_replicas,
                    last_known_elr,
                )| {
                    MetadataRecord::PartitionWithElr {
                        topic_id,
                        partition,
                        replicas,
                        isr,
                        leader,
                        leader_epoch,
                        partition_epoch,
                        adding_replicas: vec![],
                        removing_replicas: vec![1],
                        eligible_leader_replicas,
                        last_known_elr,
                    }
                }
            ),
            (
                uuid(),
                any::<i32>(),
                any::<Option<i32>>(),
                opt_ids(),
                opt_ids(),
                opt_ids(),
                opt_ids()
            )
                .prop_map(
                    |(
                        topic_id,
                        partition,
                        leader,
                        isr,
                        replicas,
                        eligible_leader_replicas,
                        last_known_elr,
                    )| {
                        MetadataRecord::PartitionChangeWithElr {
                            topic_id,
                            partition,
                            leader,
                            isr,
                            replicas,
                            adding_replicas: None,
                            removing_replicas: Some(vec![]),
                            eligible_leader_replicas,
                            last_known_elr,
                        }
                    }
                ),
        ]
    }

    proptest! {
        #[test]
        fn entries_round_trip(records in proptest::collection::vec(record(), 0..6)) {
            let bytes = encode_entry(&records);
            prop_assert_eq!(decode_entry(&bytes).unwrap(), records);
        }

        #[test]
        fn every_truncation_of_an_entry_is_refused(records in proptest::collection::vec(record(), 1..4)) {
            let bytes = encode_entry(&records);
            for cut in 0..bytes.len() {
                prop_assert!(decode_entry(&bytes[..cut]).is_err());
            }
        }

        #[test]
        fn garbage_never_panics(mut bytes in any::<Vec<u8>>(), format in 1u8..3) {
            bytes.insert(0, format);
            let _ = decode_entry(&bytes);
            let _ = from_slice::<ControllerRequest>(&bytes[1..]);
            let _ = from_slice::<ControllerResponse>(&bytes[1..]);
            let _ = crate::image::MetadataImage::decode_snapshot(&bytes);
        }
    }

    #[test]
    fn config_resource_kinds_are_fixed() {
        // A record written before groups had configs keeps its kind, so older logs and
        // snapshots load unchanged; a group takes the next kind, 3.
        let resources = [
            ConfigResource::Topic("t".into()),
            ConfigResource::Broker(1),
            ConfigResource::ClusterDefaultBroker,
            ConfigResource::Group("g".into()),
        ];
        for (kind, resource) in resources.iter().enumerate() {
            let bytes = to_vec(resource);
            assert_eq!(usize::from(bytes[0]), kind, "{resource:?}");
            assert_eq!(&from_slice::<ConfigResource>(&bytes).unwrap(), resource);
        }
        // A kind the reader does not know is refused, never misread (so a node from before
        // group configs refuses a group's record instead of taking it for another resource).
        let mut unknown = to_vec(&ConfigResource::Group("g".into()));
        unknown[0] = 4;
        assert!(from_slice::<ConfigResource>(&unknown).is_err());
    }

    #[test]
    fn forwarded_calls_and_answers_round_trip() {
        let request = ControllerRequest::CreateTopics {
            topics: vec![CreatableTopic {
                name: "t".into(),
                num_partitions: 3,
                replication_factor: -1,
                assignments: vec![(0, vec![1, 2])],
                configs: vec![
                    ("retention.ms".into(), Some("1".into())),
                    ("x".into(), None),
                ],
            }],
            validate_only: true,
        };
        let requests = vec![
            request,
            ControllerRequest::IncrementalAlterConfigs {
                resources: vec![(
                    ConfigResource::Broker(2),
                    vec![AlterConfigOp {
                        name: "a".into(),
                        op: AlterConfigOpType::Subtract,
                        value: None,
                    }],
                )],
                validate_only: false,
            },
            ControllerRequest::ElectLeaders {
                election_type: ElectionType::Unclean,
                partitions: Some(vec![("t".into(), 1)]),
            },
            ControllerRequest::DeleteAcls {
                filters: vec![AclFilter {
                    resource_type: 1,
                    resource_name: None,
                    pattern_type: 1,
                    principal: Some("User:a".into()),
                    host: None,
                    operation: 1,
                    permission_type: 1,
                }],
            },
            ControllerRequest::AlterClientQuotas {
                entries: vec![QuotaAlteration {
                    entity: vec![("user".into(), None)],
                    ops: vec![("producer_byte_rate".into(), Some(2.5))],
                }],
                validate_only: false,
            },
            ControllerRequest::Tick,
        ];
        for request in requests {
            let call = Call::Controller(ForwardRequest {
                cluster_id: "c".into(),
                request: request.clone(),
            });
            let Call::Controller(decoded) = from_slice::<Call>(&to_vec(&call)).unwrap() else {
                panic!("not a controller call")
            };
            assert_eq!(decoded.request, request);
        }
        let responses = vec![
            ControllerResponse::CreateTopics(vec![
                (
                    "a".into(),
                    Ok(CreatedTopic {
                        topic_id: Uuid::from_u128(5),
                        num_partitions: 1,
                        replication_factor: 1,
                    }),
                ),
                (
                    "b".into(),
                    Err(MetadataError::TopicAlreadyExists("b".into())),
                ),
            ]),
            ControllerResponse::AlterPartition(Ok(PartitionImage {
                partition: 0,
                replicas: vec![1, 2],
                isr: vec![1],
                leader: 1,
                leader_epoch: 3,
                partition_epoch: 4,
                adding_replicas: vec![],
                removing_replicas: vec![],
                eligible_leader_replicas: vec![2],
                last_known_elr: vec![],
            })),
            ControllerResponse::ElectLeaders(vec![(
                ("t".into(), 0),
                Err(MetadataError::NotController),
            )]),
            ControllerResponse::BrokerHeartbeat(Ok(HeartbeatReply {
                is_caught_up: true,
                is_fenced: false,
                should_shut_down: true,
            })),
            ControllerResponse::AllocateProducerIds(Err(MetadataError::RequestTimedOut)),
            ControllerResponse::Tick(vec![3]),
        ];
        for response in responses {
            let answer = Answer::Controller(ForwardResponse {
                result: Ok(response.clone()),
                offset: 9,
            });
            let Answer::Controller(decoded) = from_slice::<Answer>(&to_vec(&answer)).unwrap()
            else {
                panic!("not a controller answer")
            };
            assert_eq!((decoded.result, decoded.offset), (Ok(response), 9));
        }
        let quorum = Answer::DescribeQuorum(Ok(QuorumDescription {
            leader_id: 1,
            leader_epoch: 2,
            high_watermark: 3,
            voters: vec![ReplicaState {
                replica_id: 1,
                log_end_offset: 3,
                last_fetch_timestamp_ms: -1,
                last_caught_up_timestamp_ms: 7,
            }],
            observers: vec![],
        }));
        let bytes = to_vec(&quorum);
        assert!(matches!(
            from_slice::<Answer>(&bytes),
            Ok(Answer::DescribeQuorum(Ok(QuorumDescription {
                high_watermark: 3,
                ..
            })))
        ));
        for cut in 0..bytes.len() {
            assert!(from_slice::<Answer>(&bytes[..cut]).is_err());
        }
    }
}
