//! State-machine tests with an injected clock: each request's records are applied before the
//! next, as the runtime does.

use uuid::Uuid;

use super::*;
use crate::acl::AclFilter;
use crate::image::{AclEntry, NO_LEADER};
use crate::records::SecurityProtocol;

struct Harness {
    controller: Controller,
    image: MetadataImage,
    now_ms: i64,
    epochs: HashMap<i32, i64>,
}

impl Harness {
    fn new(config: ControllerConfig) -> Self {
        Harness {
            controller: Controller::new(config, 42),
            image: MetadataImage::empty("cluster-a"),
            now_ms: 1_000_000,
            epochs: HashMap::new(),
        }
    }

    fn handle(&mut self, request: ControllerRequest) -> ControllerResponse {
        let (response, records) = self.controller.handle(&self.image, request, self.now_ms);
        if !records.is_empty() {
            self.image = self.image.apply_entry(&records, self.image.offset + 1);
        }
        response
    }

    fn register(&mut self, id: i32, rack: Option<&str>) -> i64 {
        self.register_after(id, rack, false)
    }

    /// Registers a new incarnation of `id`, after an unclean shutdown when `unclean_shutdown`.
    fn register_after(&mut self, id: i32, rack: Option<&str>, unclean_shutdown: bool) -> i64 {
        let response = self.handle(ControllerRequest::RegisterBroker {
            broker_id: id,
            incarnation_id: Uuid::from_u128(id as u128 + 1000 * (self.now_ms as u128)),
            cluster_id: "cluster-a".into(),
            listeners: vec![Endpoint {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9000 + id as u16,
                security_protocol: SecurityProtocol::Plaintext,
            }],
            rack: rack.map(str::to_string),
            features: vec![],
            unclean_shutdown,
        });
        let ControllerResponse::RegisterBroker(Ok(epoch)) = response else {
            panic!("registration failed: {response:?}");
        };
        self.epochs.insert(id, epoch);
        epoch
    }

    fn heartbeat(&mut self, id: i32) -> HeartbeatReply {
        self.heartbeat_with(id, false, false)
    }

    fn heartbeat_with(&mut self, id: i32, want_fence: bool, want_shutdown: bool) -> HeartbeatReply {
        let response = self.handle(ControllerRequest::BrokerHeartbeat {
            broker_id: id,
            broker_epoch: self.epochs[&id],
            want_fence,
            want_shutdown,
            current_metadata_offset: self.image.offset,
        });
        let ControllerResponse::BrokerHeartbeat(Ok(reply)) = response else {
            panic!("heartbeat failed: {response:?}");
        };
        reply
    }

    /// Registers and unfences brokers.
    fn brokers(&mut self, ids: &[i32]) {
        for &id in ids {
            self.register(id, None);
            assert!(!self.heartbeat(id).is_fenced);
        }
    }

    fn create(&mut self, topic: CreatableTopic) -> Result<CreatedTopic, MetadataError> {
        let ControllerResponse::CreateTopics(mut results) =
            self.handle(ControllerRequest::CreateTopics {
                topics: vec![topic],
                validate_only: false,
            })
        else {
            panic!("wrong response");
        };
        results.remove(0).1
    }

    fn create_simple(&mut self, name: &str, partitions: i32, rf: i16) -> Uuid {
        self.create(CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: rf,
            assignments: vec![],
            configs: vec![],
        })
        .unwrap()
        .topic_id
    }

    fn partition(&self, topic: &str, p: i32) -> PartitionImage {
        self.image.topic(topic).unwrap().partitions[&p].clone()
    }
}

fn topic(name: &str, partitions: i32, rf: i16) -> CreatableTopic {
    CreatableTopic {
        name: name.into(),
        num_partitions: partitions,
        replication_factor: rf,
        assignments: vec![],
        configs: vec![],
    }
}

#[test]
fn create_topic_with_defaults_and_leaders() {
    let mut h = Harness::new(ControllerConfig {
        num_partitions: 3,
        ..Default::default()
    });
    h.brokers(&[1]);
    let created = h.create(CreatableTopic::with_defaults("events")).unwrap();
    assert_eq!(created.num_partitions, 3);
    assert_eq!(created.replication_factor, 1);
    let t = h.image.topic("events").unwrap();
    assert_eq!(t.topic_id, created.topic_id);
    for p in t.partitions.values() {
        assert_eq!((p.leader, p.isr.clone(), p.leader_epoch), (1, vec![1], 0));
    }
    assert!(matches!(
        h.create(CreatableTopic::with_defaults("events")),
        Err(MetadataError::TopicAlreadyExists(_))
    ));
}

#[test]
fn create_topic_validation_errors() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2]);
    assert!(matches!(
        h.create(topic("", 1, 1)),
        Err(MetadataError::InvalidTopic(_))
    ));
    assert!(matches!(
        h.create(topic("a/b", 1, 1)),
        Err(MetadataError::InvalidTopic(_))
    ));
    assert!(matches!(
        h.create(topic("..", 1, 1)),
        Err(MetadataError::InvalidTopic(_))
    ));
    assert!(matches!(
        h.create(topic(&"x".repeat(250), 1, 1)),
        Err(MetadataError::InvalidTopic(_))
    ));
    assert!(matches!(
        h.create(topic("t", 0, 1)),
        Err(MetadataError::InvalidPartitions(_))
    ));
    assert!(matches!(
        h.create(topic("t", 1, 0)),
        Err(MetadataError::InvalidReplicationFactor(_))
    ));
    assert!(matches!(
        h.create(topic("t", 1, 3)),
        Err(MetadataError::InvalidReplicationFactor(_))
    ));
    let mut bad_config = topic("t", 1, 1);
    bad_config.configs = vec![("segment.bytes".into(), Some("100".into()))];
    assert!(matches!(
        h.create(bad_config),
        Err(MetadataError::InvalidConfig(_))
    ));
    let mut unknown_config = topic("t", 1, 1);
    unknown_config.configs = vec![("bogus.config".into(), Some("1".into()))];
    assert!(matches!(
        h.create(unknown_config),
        Err(MetadataError::InvalidConfig(_))
    ));
    h.create_simple("a.b", 1, 1);
    assert!(matches!(
        h.create(topic("a_b", 1, 1)),
        Err(MetadataError::InvalidTopic(_))
    ));
    // Nothing was created by the failures.
    assert_eq!(h.image.topic_count(), 1);

    let ControllerResponse::CreateTopics(results) = h.handle(ControllerRequest::CreateTopics {
        topics: vec![topic("dup", 1, 1), topic("dup", 1, 1), topic("ok", 1, 1)],
        validate_only: false,
    }) else {
        panic!()
    };
    assert!(matches!(
        results[0].1,
        Err(MetadataError::InvalidRequest(_))
    ));
    assert!(results[1].1.is_ok());
    assert!(h.image.topic("dup").is_none());
}

#[test]
fn create_topic_validate_only_writes_nothing() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1]);
    let before = h.image.offset;
    let ControllerResponse::CreateTopics(results) = h.handle(ControllerRequest::CreateTopics {
        topics: vec![topic("t", 4, 1)],
        validate_only: true,
    }) else {
        panic!()
    };
    assert_eq!(results[0].1.as_ref().unwrap().num_partitions, 4);
    assert_eq!(h.image.offset, before);
    assert!(h.image.topic("t").is_none());
}

#[test]
fn create_topic_with_configs_and_manual_assignment() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2, 3]);
    let created = h
        .create(CreatableTopic {
            name: "m".into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: vec![(0, vec![3, 1]), (1, vec![2, 3])],
            configs: vec![("cleanup.policy".into(), Some("compact".into()))],
        })
        .unwrap();
    assert_eq!((created.num_partitions, created.replication_factor), (2, 2));
    assert_eq!(h.partition("m", 0).replicas, vec![3, 1]);
    assert_eq!(h.partition("m", 0).leader, 3);
    assert_eq!(h.image.topic_configs("m")["cleanup.policy"], "compact");

    let mut bad = CreatableTopic {
        name: "n".into(),
        num_partitions: 2,
        replication_factor: -1,
        assignments: vec![(0, vec![1])],
        configs: vec![],
    };
    assert!(matches!(
        h.create(bad.clone()),
        Err(MetadataError::InvalidRequest(_))
    ));
    bad.num_partitions = -1;
    bad.assignments = vec![(0, vec![1, 1])];
    assert!(matches!(
        h.create(bad.clone()),
        Err(MetadataError::InvalidReplicaAssignment(_))
    ));
    bad.assignments = vec![(0, vec![9])];
    assert!(matches!(
        h.create(bad.clone()),
        Err(MetadataError::InvalidReplicaAssignment(_))
    ));
    bad.assignments = vec![(0, vec![1]), (2, vec![2])];
    assert!(matches!(
        h.create(bad.clone()),
        Err(MetadataError::InvalidReplicaAssignment(_))
    ));
    bad.assignments = vec![(0, vec![1]), (1, vec![2, 3])];
    assert!(matches!(
        h.create(bad),
        Err(MetadataError::InvalidReplicaAssignment(_))
    ));
}

#[test]
fn placement_shifts_and_skips_fenced_brokers() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2, 3]);
    h.create_simple("t", 6, 2);
    let leaders: Vec<i32> = (0..6).map(|p| h.partition("t", p).leader).collect();
    for pair in leaders.windows(2) {
        // Each next partition's first replica is the next broker.
        assert_eq!(pair[1], pair[0] % 3 + 1);
    }
    h.heartbeat_with(3, true, false);
    assert!(h.image.broker(3).unwrap().fenced);
    h.create_simple("u", 4, 2);
    for p in 0..4 {
        assert!(!h.partition("u", p).replicas.contains(&3));
    }
    assert!(matches!(
        h.create(topic("v", 1, 3)),
        Err(MetadataError::InvalidReplicationFactor(_))
    ));
}

#[test]
fn rack_aware_placement_through_the_controller() {
    let mut h = Harness::new(ControllerConfig::default());
    for (id, rack) in [(1, "a"), (2, "a"), (3, "b"), (4, "b")] {
        h.register(id, Some(rack));
        h.heartbeat(id);
    }
    h.create_simple("r", 8, 2);
    for p in 0..8 {
        let replicas = h.partition("r", p).replicas;
        let racks: Vec<_> = replicas
            .iter()
            .map(|r| h.image.broker(*r).unwrap().rack.clone())
            .collect();
        assert_ne!(racks[0], racks[1], "partition {p}: {replicas:?}");
    }
}

#[test]
fn delete_topics_by_name_and_id() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1]);
    let a = h.create_simple("a", 1, 1);
    h.create_simple("b", 1, 1);
    let ControllerResponse::DeleteTopics { by_name, by_id } =
        h.handle(ControllerRequest::DeleteTopics {
            names: vec!["b".into(), "missing".into()],
            ids: vec![a, Uuid::from_u128(99)],
        })
    else {
        panic!()
    };
    assert!(by_name[0].1.is_ok());
    assert_eq!(by_name[1].1, Err(MetadataError::UnknownTopicOrPartition));
    assert_eq!(by_id[0].1, Ok("a".to_string()));
    assert_eq!(by_id[1].1, Err(MetadataError::UnknownTopicId));
    assert_eq!(h.image.topic_count(), 0);

    let mut h = Harness::new(ControllerConfig {
        delete_topic_enable: false,
        ..Default::default()
    });
    h.brokers(&[1]);
    h.create_simple("a", 1, 1);
    let ControllerResponse::DeleteTopics { by_name, .. } =
        h.handle(ControllerRequest::DeleteTopics {
            names: vec!["a".into()],
            ids: vec![],
        })
    else {
        panic!()
    };
    assert_eq!(by_name[0].1, Err(MetadataError::TopicDeletionDisabled));
    assert!(h.image.topic("a").is_some());
}

#[test]
fn create_partitions_continues_layout() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2, 3]);
    h.create_simple("t", 2, 2);
    let req = |count, assignments| ControllerRequest::CreatePartitions {
        topics: vec![CreatePartitionsTopic {
            name: "t".into(),
            count,
            assignments,
        }],
        validate_only: false,
    };
    let ControllerResponse::CreatePartitions(r) = h.handle(req(5, None)) else {
        panic!()
    };
    assert!(r[0].1.is_ok());
    let t = h.image.topic("t").unwrap();
    assert_eq!(t.partitions.len(), 5);
    for p in t.partitions.values() {
        assert_eq!(p.replicas.len(), 2);
        assert_eq!(p.isr, p.replicas);
    }
    let ControllerResponse::CreatePartitions(r) = h.handle(req(4, None)) else {
        panic!()
    };
    assert!(matches!(r[0].1, Err(MetadataError::InvalidPartitions(_))));
    let ControllerResponse::CreatePartitions(r) = h.handle(req(5, None)) else {
        panic!()
    };
    assert!(matches!(r[0].1, Err(MetadataError::InvalidPartitions(_))));
    let ControllerResponse::CreatePartitions(r) = h.handle(req(7, Some(vec![vec![1, 2]]))) else {
        panic!()
    };
    assert!(matches!(
        r[0].1,
        Err(MetadataError::InvalidReplicaAssignment(_))
    ));
    let ControllerResponse::CreatePartitions(r) =
        h.handle(req(7, Some(vec![vec![3, 1], vec![2, 3]])))
    else {
        panic!()
    };
    assert!(r[0].1.is_ok());
    assert_eq!(h.partition("t", 6).replicas, vec![2, 3]);
}

#[test]
fn fencing_after_session_timeout_moves_leadership() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2, 3]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2, 3]), (1, vec![2, 3, 1])],
        configs: vec![],
    })
    .unwrap();
    // Brokers 2 and 3 keep heartbeating; broker 1 goes silent.
    for _ in 0..5 {
        h.now_ms += 2000;
        h.heartbeat(2);
        h.heartbeat(3);
        let ControllerResponse::Tick(fenced) = h.handle(ControllerRequest::Tick) else {
            panic!()
        };
        if h.now_ms - 1_000_000 <= 9000 {
            assert!(fenced.is_empty());
        }
    }
    assert!(h.image.broker(1).unwrap().fenced);
    let p0 = h.partition("t", 0);
    assert_eq!(p0.leader, 2);
    assert_eq!(p0.isr, vec![2, 3]);
    assert_eq!(p0.leader_epoch, 1);
    let p1 = h.partition("t", 1);
    assert_eq!((p1.leader, p1.leader_epoch), (2, 0));
    assert_eq!(p1.isr, vec![2, 3]);

    // The broker comes back: heartbeats unfence it but it must rejoin the ISR through the
    // leader.
    let reply = h.heartbeat(1);
    assert!(!reply.is_fenced);
    assert_eq!(h.partition("t", 0).isr, vec![2, 3]);
}

#[test]
fn last_isr_member_fenced_leaves_partition_leaderless_until_unfenced() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1]);
    h.create_simple("t", 1, 1);
    h.heartbeat_with(1, true, false);
    // KIP-966 (Kafka 4.1+): the last member leaves the ISR for the ELR.
    let p = h.partition("t", 0);
    assert_eq!(
        (p.leader, p.isr.clone(), p.leader_epoch),
        (NO_LEADER, vec![], 1)
    );
    assert_eq!(
        (p.eligible_leader_replicas, p.last_known_elr),
        (vec![1], vec![1])
    );
    h.heartbeat(1);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.leader_epoch, p.isr.clone()), (1, 2, vec![1]));
    assert!(p.eligible_leader_replicas.is_empty() && p.last_known_elr.is_empty());
}

#[test]
fn unclean_election_only_when_enabled() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2])],
        configs: vec![],
    })
    .unwrap();
    // Leader shrinks the ISR to itself, then dies.
    let p = h.partition("t", 0);
    let tid = h.image.topic("t").unwrap().topic_id;
    let ControllerResponse::AlterPartition(r) = h.handle(ControllerRequest::AlterPartition {
        broker_id: 1,
        broker_epoch: h.epochs[&1],
        topic_id: tid,
        partition: 0,
        leader_epoch: p.leader_epoch,
        new_isr: vec![1],
        partition_epoch: p.partition_epoch,
    }) else {
        panic!()
    };
    assert_eq!(r.unwrap().isr, vec![1]);
    h.heartbeat_with(1, true, false);
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);

    let elect = |h: &mut Harness, election_type| {
        let ControllerResponse::ElectLeaders(r) = h.handle(ControllerRequest::ElectLeaders {
            election_type,
            partitions: Some(vec![("t".into(), 0)]),
        }) else {
            panic!()
        };
        r[0].1.clone()
    };
    assert!(matches!(
        elect(&mut h, ElectionType::Preferred),
        Err(MetadataError::PreferredLeaderNotAvailable(_))
    ));
    // Enabling unclean election for the topic elects broker 2 right away.
    let ControllerResponse::AlterConfigs(r) =
        h.handle(ControllerRequest::IncrementalAlterConfigs {
            resources: vec![(
                ConfigResource::Topic("t".into()),
                vec![AlterConfigOp {
                    name: "unclean.leader.election.enable".into(),
                    op: AlterConfigOpType::Set,
                    value: Some("true".into()),
                }],
            )],
            validate_only: false,
        })
    else {
        panic!()
    };
    assert!(r[0].1.is_ok());
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr), (2, vec![2]));
    assert!(matches!(
        elect(&mut h, ElectionType::Unclean),
        Err(MetadataError::ElectionNotNeeded(_))
    ));
}

#[test]
fn explicit_unclean_election_request() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2])],
        configs: vec![],
    })
    .unwrap();
    let tid = h.image.topic("t").unwrap().topic_id;
    let p = h.partition("t", 0);
    h.handle(ControllerRequest::AlterPartition {
        broker_id: 1,
        broker_epoch: h.epochs[&1],
        topic_id: tid,
        partition: 0,
        leader_epoch: p.leader_epoch,
        new_isr: vec![1],
        partition_epoch: p.partition_epoch,
    });
    h.heartbeat_with(1, true, false);
    let ControllerResponse::ElectLeaders(r) = h.handle(ControllerRequest::ElectLeaders {
        election_type: ElectionType::Unclean,
        partitions: Some(vec![("t".into(), 0), ("nope".into(), 0)]),
    }) else {
        panic!()
    };
    assert!(r[0].1.is_ok());
    assert_eq!(r[1].1, Err(MetadataError::UnknownTopicOrPartition));
    assert_eq!(h.partition("t", 0).leader, 2);
}

#[test]
fn preferred_election_restores_first_replica() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2])],
        configs: vec![],
    })
    .unwrap();
    h.heartbeat_with(1, true, false);
    assert_eq!(h.partition("t", 0).leader, 2);
    h.heartbeat(1);
    // Broker 1 rejoins the ISR through the leader.
    let tid = h.image.topic("t").unwrap().topic_id;
    let p = h.partition("t", 0);
    let ControllerResponse::AlterPartition(r) = h.handle(ControllerRequest::AlterPartition {
        broker_id: 2,
        broker_epoch: h.epochs[&2],
        topic_id: tid,
        partition: 0,
        leader_epoch: p.leader_epoch,
        new_isr: vec![2, 1],
        partition_epoch: p.partition_epoch,
    }) else {
        panic!()
    };
    assert_eq!(r.unwrap().isr, vec![2, 1]);
    let ControllerResponse::ElectLeaders(r) = h.handle(ControllerRequest::ElectLeaders {
        election_type: ElectionType::Preferred,
        partitions: None,
    }) else {
        panic!()
    };
    assert_eq!(r.len(), 1);
    assert!(r[0].1.is_ok());
    assert_eq!(h.partition("t", 0).leader, 1);
    let ControllerResponse::ElectLeaders(r) = h.handle(ControllerRequest::ElectLeaders {
        election_type: ElectionType::Preferred,
        partitions: Some(vec![("t".into(), 0)]),
    }) else {
        panic!()
    };
    assert!(matches!(r[0].1, Err(MetadataError::ElectionNotNeeded(_))));
}

#[test]
fn alter_partition_rejects_stale_epochs() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2, 3]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2, 3])],
        configs: vec![],
    })
    .unwrap();
    let tid = h.image.topic("t").unwrap().topic_id;
    let p = h.partition("t", 0);
    let alter =
        |h: &mut Harness, broker: i32, epoch: i64, leader_epoch, partition_epoch, isr: Vec<i32>| {
            let ControllerResponse::AlterPartition(r) =
                h.handle(ControllerRequest::AlterPartition {
                    broker_id: broker,
                    broker_epoch: epoch,
                    topic_id: tid,
                    partition: 0,
                    leader_epoch,
                    new_isr: isr,
                    partition_epoch,
                })
            else {
                panic!()
            };
            r
        };
    let e1 = h.epochs[&1];
    let ok = alter(&mut h, 1, e1, p.leader_epoch, p.partition_epoch, vec![1, 2]).unwrap();
    assert_eq!(
        (ok.isr.clone(), ok.partition_epoch, ok.leader_epoch),
        (vec![1, 2], 1, 0)
    );
    // Same request again: its partition epoch is now stale.
    assert!(matches!(
        alter(&mut h, 1, e1, p.leader_epoch, p.partition_epoch, vec![1, 2]),
        Err(MetadataError::InvalidUpdateVersion(_))
    ));
    // Epochs from the future: the sender knows a newer controller.
    assert_eq!(
        alter(
            &mut h,
            1,
            e1,
            p.leader_epoch + 1,
            ok.partition_epoch,
            vec![1]
        ),
        Err(MetadataError::NotController)
    );
    assert!(matches!(
        alter(
            &mut h,
            1,
            e1 + 100,
            ok.leader_epoch,
            ok.partition_epoch,
            vec![1]
        ),
        Err(MetadataError::StaleBrokerEpoch(_))
    ));
    let e2 = h.epochs[&2];
    assert!(matches!(
        alter(&mut h, 2, e2, ok.leader_epoch, ok.partition_epoch, vec![2]),
        Err(MetadataError::InvalidRequest(_))
    ));
    assert!(matches!(
        alter(
            &mut h,
            1,
            e1,
            ok.leader_epoch,
            ok.partition_epoch,
            vec![1, 7]
        ),
        Err(MetadataError::InvalidRequest(_))
    ));
    // A fenced broker may not rejoin the ISR.
    h.heartbeat_with(3, true, false);
    assert!(matches!(
        alter(
            &mut h,
            1,
            e1,
            ok.leader_epoch,
            ok.partition_epoch,
            vec![1, 2, 3]
        ),
        Err(MetadataError::IneligibleReplica(_))
    ));
    // Leadership moves to 2; the old leader epoch is now stale.
    h.heartbeat_with(1, true, false);
    let now = h.partition("t", 0);
    assert_eq!((now.leader, now.leader_epoch), (2, 1));
    assert!(matches!(
        alter(&mut h, 2, e2, ok.leader_epoch, now.partition_epoch, vec![2]),
        Err(MetadataError::FencedLeaderEpoch(_))
    ));
    let same = alter(
        &mut h,
        2,
        e2,
        now.leader_epoch,
        now.partition_epoch,
        vec![2],
    )
    .unwrap();
    assert_eq!(same.isr, vec![2]);
}

#[test]
fn reassignment_completes_when_targets_join_isr() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2, 3]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2])],
        configs: vec![],
    })
    .unwrap();
    let ControllerResponse::AlterPartitionReassignments(r) =
        h.handle(ControllerRequest::AlterPartitionReassignments {
            partitions: vec![ReassignablePartition {
                topic: "t".into(),
                partition: 0,
                replicas: Some(vec![3, 2]),
            }],
        })
    else {
        panic!()
    };
    assert!(r[0].1.is_ok());
    let p = h.partition("t", 0);
    assert_eq!(p.replicas, vec![3, 2, 1]);
    assert_eq!(p.adding_replicas, vec![3]);
    assert_eq!(p.removing_replicas, vec![1]);
    assert_eq!(p.leader, 1);
    // The leader adds 3 to the ISR: the reassignment completes and leadership leaves 1.
    let tid = h.image.topic("t").unwrap().topic_id;
    let ControllerResponse::AlterPartition(r) = h.handle(ControllerRequest::AlterPartition {
        broker_id: 1,
        broker_epoch: h.epochs[&1],
        topic_id: tid,
        partition: 0,
        leader_epoch: p.leader_epoch,
        new_isr: vec![1, 2, 3],
        partition_epoch: p.partition_epoch,
    }) else {
        panic!()
    };
    let p = r.unwrap();
    assert_eq!(p.replicas, vec![3, 2]);
    assert_eq!(p.isr, vec![2, 3]);
    assert!(!p.is_reassigning());
    assert_eq!(p.leader, 3);

    // Cancelling with nothing in progress is an error; cancelling an ongoing one reverts.
    let cancel = |h: &mut Harness| {
        let ControllerResponse::AlterPartitionReassignments(r) =
            h.handle(ControllerRequest::AlterPartitionReassignments {
                partitions: vec![ReassignablePartition {
                    topic: "t".into(),
                    partition: 0,
                    replicas: None,
                }],
            })
        else {
            panic!()
        };
        r[0].1.clone()
    };
    assert!(matches!(
        cancel(&mut h),
        Err(MetadataError::NoReassignmentInProgress(_))
    ));
    h.handle(ControllerRequest::AlterPartitionReassignments {
        partitions: vec![ReassignablePartition {
            topic: "t".into(),
            partition: 0,
            replicas: Some(vec![1, 2]),
        }],
    });
    assert!(h.partition("t", 0).is_reassigning());
    cancel(&mut h).unwrap();
    let p = h.partition("t", 0);
    // As Kafka's revert: the original replicas, in the merged order.
    assert_eq!(p.replicas, vec![2, 3]);
    assert!(!p.is_reassigning());
}

#[test]
fn controlled_shutdown_moves_leaders_then_fences() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2])],
        configs: vec![],
    })
    .unwrap();
    h.create(CreatableTopic {
        name: "u".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1])],
        configs: vec![],
    })
    .unwrap();
    let reply = h.heartbeat_with(1, false, true);
    assert!(reply.should_shut_down);
    assert!(reply.is_fenced);
    let p0 = h.partition("t", 0);
    assert_eq!((p0.leader, p0.isr), (2, vec![2]));
    let p1 = h.partition("u", 0);
    assert_eq!((p1.leader, p1.isr), (NO_LEADER, vec![]));
    assert_eq!(p1.eligible_leader_replicas, vec![1]);
}

#[test]
fn registration_rules() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1]);
    let wrong_cluster = h.handle(ControllerRequest::RegisterBroker {
        broker_id: 2,
        incarnation_id: Uuid::from_u128(5),
        cluster_id: "other".into(),
        listeners: vec![],
        rack: None,
        features: vec![],
        unclean_shutdown: false,
    });
    assert!(matches!(
        wrong_cluster,
        ControllerResponse::RegisterBroker(Err(MetadataError::InconsistentClusterId(_)))
    ));
    // A second incarnation of a live broker is refused.
    let dup = h.handle(ControllerRequest::RegisterBroker {
        broker_id: 1,
        incarnation_id: Uuid::from_u128(6),
        cluster_id: "cluster-a".into(),
        listeners: vec![],
        rack: None,
        features: vec![],
        unclean_shutdown: false,
    });
    assert!(matches!(
        dup,
        ControllerResponse::RegisterBroker(Err(MetadataError::DuplicateBrokerRegistration(_)))
    ));
    // After its session expires, a new incarnation registers with a newer epoch, fenced.
    let old_epoch = h.epochs[&1];
    h.now_ms += 10_000;
    let new_epoch = h.register(1, None);
    assert!(new_epoch > old_epoch);
    assert!(h.image.broker(1).unwrap().fenced);
    let stale = h.handle(ControllerRequest::BrokerHeartbeat {
        broker_id: 1,
        broker_epoch: old_epoch,
        want_fence: false,
        want_shutdown: false,
        current_metadata_offset: h.image.offset,
    });
    assert!(matches!(
        stale,
        ControllerResponse::BrokerHeartbeat(Err(MetadataError::StaleBrokerEpoch(_)))
    ));
    // Not caught up: stays fenced.
    let behind = h.handle(ControllerRequest::BrokerHeartbeat {
        broker_id: 1,
        broker_epoch: new_epoch,
        want_fence: false,
        want_shutdown: false,
        current_metadata_offset: new_epoch - 1,
    });
    assert!(matches!(
        behind,
        ControllerResponse::BrokerHeartbeat(Ok(HeartbeatReply {
            is_fenced: true,
            is_caught_up: false,
            ..
        }))
    ));
    assert!(!h.heartbeat(1).is_fenced);
    let ControllerResponse::UnregisterBroker(r) =
        h.handle(ControllerRequest::UnregisterBroker { broker_id: 1 })
    else {
        panic!()
    };
    r.unwrap();
    assert!(h.image.broker(1).is_none());
}

#[test]
fn producer_id_blocks_are_disjoint() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1]);
    let epoch = h.epochs[&1];
    let alloc = |h: &mut Harness, broker_epoch| {
        let ControllerResponse::AllocateProducerIds(r) =
            h.handle(ControllerRequest::AllocateProducerIds {
                broker_id: 1,
                broker_epoch,
            })
        else {
            panic!()
        };
        r
    };
    let a = alloc(&mut h, epoch).unwrap();
    let b = alloc(&mut h, epoch).unwrap();
    assert_eq!((a.first_producer_id, a.len), (0, 1000));
    assert_eq!(b.first_producer_id, 1000);
    assert!(matches!(
        alloc(&mut h, epoch + 1),
        Err(MetadataError::StaleBrokerEpoch(_))
    ));
}

#[test]
fn alter_configs_incremental_and_legacy() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1]);
    h.create_simple("t", 1, 1);
    let res = ConfigResource::Topic("t".into());
    let op = |name: &str, op, value: Option<&str>| AlterConfigOp {
        name: name.into(),
        op,
        value: value.map(str::to_string),
    };
    let incremental = |h: &mut Harness, resource: ConfigResource, ops: Vec<AlterConfigOp>| {
        let ControllerResponse::AlterConfigs(r) =
            h.handle(ControllerRequest::IncrementalAlterConfigs {
                resources: vec![(resource, ops)],
                validate_only: false,
            })
        else {
            panic!()
        };
        r[0].1.clone()
    };
    incremental(
        &mut h,
        res.clone(),
        vec![
            op("retention.ms", AlterConfigOpType::Set, Some("1000")),
            op("cleanup.policy", AlterConfigOpType::Append, Some("compact")),
        ],
    )
    .unwrap();
    assert_eq!(h.image.topic_configs("t")["retention.ms"], "1000");
    assert_eq!(
        h.image.topic_configs("t")["cleanup.policy"],
        "delete,compact"
    );
    incremental(
        &mut h,
        res.clone(),
        vec![
            op("retention.ms", AlterConfigOpType::Delete, None),
            op(
                "cleanup.policy",
                AlterConfigOpType::Subtract,
                Some("delete"),
            ),
        ],
    )
    .unwrap();
    assert!(!h.image.topic_configs("t").contains_key("retention.ms"));
    assert_eq!(h.image.topic_configs("t")["cleanup.policy"], "compact");

    assert!(matches!(
        incremental(
            &mut h,
            res.clone(),
            vec![op("segment.bytes", AlterConfigOpType::Set, Some("10"))]
        ),
        Err(MetadataError::InvalidConfig(_))
    ));
    assert!(matches!(
        incremental(
            &mut h,
            res.clone(),
            vec![op("retention.ms", AlterConfigOpType::Append, Some("1"))]
        ),
        Err(MetadataError::InvalidConfig(_))
    ));
    assert!(matches!(
        incremental(
            &mut h,
            res.clone(),
            vec![op("nope", AlterConfigOpType::Set, Some("1"))]
        ),
        Err(MetadataError::InvalidConfig(_))
    ));
    assert!(matches!(
        incremental(
            &mut h,
            res.clone(),
            vec![
                op("retention.ms", AlterConfigOpType::Set, Some("1")),
                op("retention.ms", AlterConfigOpType::Set, Some("2"))
            ]
        ),
        Err(MetadataError::InvalidRequest(_))
    ));
    assert_eq!(
        incremental(
            &mut h,
            ConfigResource::Topic("missing".into()),
            vec![op("retention.ms", AlterConfigOpType::Set, Some("1"))]
        ),
        Err(MetadataError::UnknownTopicOrPartition)
    );
    incremental(
        &mut h,
        ConfigResource::ClusterDefaultBroker,
        vec![op("log.retention.ms", AlterConfigOpType::Set, Some("5000"))],
    )
    .unwrap();
    assert_eq!(
        h.image.cluster_default_broker_configs()["log.retention.ms"],
        "5000"
    );
    assert!(matches!(
        incremental(
            &mut h,
            ConfigResource::Broker(1),
            vec![op("log.segment.bytes", AlterConfigOpType::Set, Some("12"))]
        ),
        Err(MetadataError::InvalidConfig(_))
    ));

    // Legacy AlterConfigs replaces the whole set.
    let ControllerResponse::AlterConfigs(r) = h.handle(ControllerRequest::AlterConfigs {
        resources: vec![(res, vec![("max.message.bytes".into(), Some("2000".into()))])],
        validate_only: false,
    }) else {
        panic!()
    };
    assert!(r[0].1.is_ok());
    let configs = h.image.topic_configs("t");
    assert_eq!(configs.len(), 1);
    assert_eq!(configs["max.message.bytes"], "2000");
}

#[test]
fn topic_ids_are_valid_and_deterministic() {
    let mut a = ControllerRng::new(1);
    let mut b = ControllerRng::new(1);
    for _ in 0..1000 {
        let id = a.topic_id();
        assert_eq!(id, b.topic_id());
        assert_eq!(id.get_version_num(), 4);
        assert!(id.as_bytes()[0] >> 2 != 62);
    }
}

fn acl(resource_name: &str, pattern: i8, principal: &str, operation: i8) -> AclEntry {
    AclEntry {
        id: Uuid::nil(),
        resource_type: crate::acl::resource_type::TOPIC,
        resource_name: resource_name.into(),
        pattern_type: pattern,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission_type: crate::acl::permission_type::ALLOW,
    }
}

#[test]
fn acls_create_dedupe_and_delete_by_filter() {
    use crate::acl::{operation, pattern_type, permission_type, resource_type};
    let mut h = Harness::new(ControllerConfig::default());
    const READ: i8 = 3;
    const WRITE: i8 = 4;
    let ControllerResponse::CreateAcls(r) = h.handle(ControllerRequest::CreateAcls {
        creations: vec![
            acl("orders", pattern_type::LITERAL, "User:alice", READ),
            acl("ord", pattern_type::PREFIXED, "User:bob", WRITE),
            acl("orders", pattern_type::LITERAL, "User:alice", READ),
            acl("orders", pattern_type::MATCH, "User:alice", READ),
            acl("orders", pattern_type::LITERAL, "alice", READ),
        ],
    }) else {
        panic!()
    };
    assert!(r[0].is_ok() && r[1].is_ok() && r[2].is_ok());
    assert!(matches!(r[3], Err(MetadataError::InvalidRequest(_))));
    assert!(matches!(r[4], Err(MetadataError::InvalidRequest(_))));
    assert_eq!(h.image.acls().count(), 2);

    let filter = AclFilter {
        resource_type: resource_type::ANY,
        resource_name: Some("orders".into()),
        pattern_type: pattern_type::MATCH,
        principal: None,
        host: None,
        operation: operation::ANY,
        permission_type: permission_type::ANY,
    };
    // MATCH finds both the literal ACL and the prefixed one covering "orders".
    assert_eq!(h.image.acls().filter(|a| filter.matches(a)).count(), 2);
    let ControllerResponse::DeleteAcls(r) = h.handle(ControllerRequest::DeleteAcls {
        filters: vec![AclFilter {
            principal: Some("User:bob".into()),
            ..filter
        }],
    }) else {
        panic!()
    };
    assert_eq!(r[0].as_ref().unwrap().len(), 1);
    assert_eq!(h.image.acls().count(), 1);
    assert_eq!(h.image.acls().next().unwrap().principal, "User:alice");
}

#[test]
fn scram_credentials_and_quotas() {
    let mut h = Harness::new(ControllerConfig::default());
    let upsert = |name: &str, iterations| ScramUpsertion {
        name: name.into(),
        mechanism: SCRAM_SHA_256,
        iterations,
        salt: vec![1],
        stored_key: vec![2],
        server_key: vec![3],
    };
    let ControllerResponse::AlterUserScramCredentials(r) =
        h.handle(ControllerRequest::AlterUserScramCredentials {
            deletions: vec![ScramDeletion {
                name: "ghost".into(),
                mechanism: SCRAM_SHA_256,
            }],
            upsertions: vec![upsert("alice", 8192), upsert("bob", 10)],
        })
    else {
        panic!()
    };
    let result = |user: &str| &r.iter().find(|(u, _)| u == user).unwrap().1;
    assert!(matches!(
        result("ghost"),
        Err(MetadataError::ResourceNotFound(_))
    ));
    assert!(result("alice").is_ok());
    assert!(matches!(
        result("bob"),
        Err(MetadataError::UnacceptableCredential(_))
    ));
    assert_eq!(
        h.image
            .scram_credential("alice", SCRAM_SHA_256)
            .unwrap()
            .iterations,
        8192
    );

    let ControllerResponse::AlterClientQuotas(r) = h.handle(ControllerRequest::AlterClientQuotas {
        entries: vec![
            QuotaAlteration {
                entity: vec![("user".into(), Some("alice".into()))],
                ops: vec![("producer_byte_rate".into(), Some(1024.0))],
            },
            QuotaAlteration {
                entity: vec![("ip".into(), None)],
                ops: vec![("producer_byte_rate".into(), Some(1.0))],
            },
        ],
        validate_only: false,
    }) else {
        panic!()
    };
    assert!(r[0].1.is_ok());
    assert!(matches!(r[1].1, Err(MetadataError::InvalidRequest(_))));
    let (entity, quotas) = h.image.client_quotas().next().unwrap();
    assert_eq!(
        entity,
        &vec![("user".to_string(), Some("alice".to_string()))]
    );
    assert_eq!(quotas["producer_byte_rate"], 1024.0);
    // The image (and its snapshot) carry them across a restart.
    let restored = MetadataImage::decode_snapshot(&h.image.encode_snapshot()).unwrap();
    assert_eq!(restored, h.image);
}

#[test]
fn auto_leader_rebalance_returns_leadership_to_preferred_replica() {
    let mut h = Harness::new(ControllerConfig {
        leader_imbalance_check_interval_ms: 60_000,
        ..Default::default()
    });
    h.brokers(&[1, 2]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2])],
        configs: vec![],
    })
    .unwrap();
    h.handle(ControllerRequest::Tick);
    h.heartbeat_with(1, true, false);
    h.heartbeat(1);
    let tid = h.image.topic("t").unwrap().topic_id;
    let p = h.partition("t", 0);
    assert_eq!(p.leader, 2);
    h.handle(ControllerRequest::AlterPartition {
        broker_id: 2,
        broker_epoch: h.epochs[&2],
        topic_id: tid,
        partition: 0,
        leader_epoch: p.leader_epoch,
        new_isr: vec![2, 1],
        partition_epoch: p.partition_epoch,
    });
    h.now_ms += 30_000;
    h.heartbeat(1);
    h.heartbeat(2);
    h.handle(ControllerRequest::Tick);
    assert_eq!(h.partition("t", 0).leader, 2, "not due yet");
    h.now_ms += 31_000;
    h.heartbeat(1);
    h.heartbeat(2);
    h.handle(ControllerRequest::Tick);
    assert_eq!(h.partition("t", 0).leader, 1);
}

/// Brokers 1..=3 and topic "t" on replicas [1, 2, 3], then all three fenced in the order
/// 2, 3, 1 (as after a power loss): broker 1 was the last ISR member and is now, with
/// KIP-966, the partition's ELR and last known leader; the partition is leaderless.
fn last_replica_standing(config: ControllerConfig) -> Harness {
    let mut h = Harness::new(config);
    h.brokers(&[1, 2, 3]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2, 3])],
        configs: vec![],
    })
    .unwrap();
    for id in [2, 3, 1] {
        h.heartbeat_with(id, true, false);
    }
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr), (NO_LEADER, vec![]));
    assert_eq!(
        (p.eligible_leader_replicas, p.last_known_elr),
        (vec![1], vec![1])
    );
    // The old sessions expire; the brokers come back as new incarnations.
    h.now_ms += 10_000;
    h
}

#[test]
fn kip966_the_last_isr_member_back_from_an_unclean_shutdown_is_not_elected() {
    let mut h = last_replica_standing(ControllerConfig::default());
    h.register_after(1, None, true);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (NO_LEADER, vec![]));
    // Neither eligible nor remembered as the last leader: its log may lack records.
    assert!(p.eligible_leader_replicas.is_empty() && p.last_known_elr.is_empty());
    assert!(!h.heartbeat(1).is_fenced);
    // The other replicas left the ISR before it: none of them may lead either.
    for id in [2, 3] {
        h.register_after(id, None, false);
        assert!(!h.heartbeat(id).is_fenced);
    }
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (NO_LEADER, vec![]));
    // Only an explicit unclean election gives it a leader again.
    let ControllerResponse::ElectLeaders(r) = h.handle(ControllerRequest::ElectLeaders {
        election_type: ElectionType::Unclean,
        partitions: Some(vec![("t".into(), 0)]),
    }) else {
        panic!()
    };
    assert!(r[0].1.is_ok(), "{r:?}");
    let p = h.partition("t", 0);
    assert_eq!(p.isr, vec![p.leader]);
    assert!(p.leader > 0);
}

#[test]
fn kip966_the_last_isr_member_back_from_a_clean_shutdown_leads_again() {
    let mut h = last_replica_standing(ControllerConfig::default());
    h.register_after(1, None, false);
    assert_eq!(h.partition("t", 0).eligible_leader_replicas, vec![1]);
    assert!(!h.heartbeat(1).is_fenced);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr), (1, vec![1]));
}

#[test]
fn kip966_an_unclean_restart_leaves_the_isr_to_the_clean_members() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1, 2, 3]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2, 3])],
        configs: vec![],
    })
    .unwrap();
    // Broker 1 (the leader) crashes and comes back before its session expired: the new
    // incarnation waits for the expiry, then registers.
    h.now_ms += 10_000;
    for id in [2, 3] {
        h.heartbeat(id);
    }
    h.register_after(1, None, true);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (2, vec![2, 3]));
    assert!(!h.heartbeat(1).is_fenced);
    assert_eq!(h.partition("t", 0).leader, 2);
}

#[test]
fn kip966_a_sole_replica_keeps_leading_after_an_unclean_shutdown() {
    let mut h = Harness::new(ControllerConfig::default());
    h.brokers(&[1]);
    h.create_simple("t", 1, 1);
    h.heartbeat_with(1, true, false);
    h.now_ms += 10_000;
    h.register_after(1, None, true);
    // Its only copy: it stays in the ELR (the ISR emptied when it was fenced).
    assert_eq!(h.partition("t", 0).eligible_leader_replicas, vec![1]);
    h.heartbeat(1);
    assert_eq!(h.partition("t", 0).leader, 1);
}

#[test]
fn kip966_unclean_election_enabled_elects_the_first_replica_that_returns() {
    let mut h = last_replica_standing(ControllerConfig {
        unclean_leader_election_enable: true,
        ..ControllerConfig::default()
    });
    h.register_after(1, None, true);
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);
    h.register_after(2, None, false);
    assert!(!h.heartbeat(2).is_fenced);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr), (2, vec![2]));
}

fn fence_departed(h: &mut Harness, id: i32, epoch: i64) -> bool {
    let ControllerResponse::FenceDeparted(fenced) = h.handle(ControllerRequest::FenceDeparted {
        broker_id: id,
        broker_epoch: epoch,
    }) else {
        panic!("wrong response")
    };
    fenced
}

#[test]
fn a_departed_broker_is_fenced_at_once_and_loses_leadership() {
    let mut h = Harness::new(ControllerConfig {
        broker_session_timeout_ms: 600_000,
        ..ControllerConfig::default()
    });
    h.brokers(&[1, 2, 3]);
    h.create(CreatableTopic {
        name: "t".into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![(0, vec![1, 2, 3])],
        configs: vec![],
    })
    .unwrap();
    let epoch = h.epochs[&1];
    assert!(fence_departed(&mut h, 1, epoch));
    assert!(h.image.broker(1).unwrap().fenced);
    let p0 = h.partition("t", 0);
    assert_eq!((p0.leader, p0.leader_epoch), (2, 1));
    assert_eq!(p0.isr, vec![2, 3]);
    // The others were not touched.
    assert!(!h.image.broker(2).unwrap().fenced);
    assert!(!h.image.broker(3).unwrap().fenced);
}

#[test]
fn fencing_a_departed_broker_ignores_stale_epochs_and_fenced_brokers() {
    let mut h = Harness::new(ControllerConfig {
        broker_session_timeout_ms: 600_000,
        ..ControllerConfig::default()
    });
    h.brokers(&[1, 2]);
    let epoch = h.epochs[&1];
    // A registration that is not (or no longer) the broker's current one.
    let before = h.image.offset;
    assert!(!fence_departed(&mut h, 1, epoch - 1));
    assert!(!fence_departed(&mut h, 1, epoch + 1));
    assert!(!fence_departed(&mut h, 7, 0));
    assert_eq!(h.image.offset, before, "nothing written");
    assert!(!h.image.broker(1).unwrap().fenced);
    // Already fenced: nothing to do.
    assert!(fence_departed(&mut h, 1, epoch));
    let after_fence = h.image.offset;
    assert!(!fence_departed(&mut h, 1, epoch));
    assert_eq!(h.image.offset, after_fence);
    // A live broker fenced by mistake unfences itself with its next heartbeat.
    assert!(!h.heartbeat(1).is_fenced);
    assert!(!h.image.broker(1).unwrap().fenced);
}

#[test]
fn a_departed_broker_re_registers_at_once_and_its_old_epoch_stays_harmless() {
    let mut h = Harness::new(ControllerConfig {
        broker_session_timeout_ms: 600_000,
        ..ControllerConfig::default()
    });
    h.brokers(&[1, 2]);
    let old_epoch = h.epochs[&1];
    // Without the fence, a new incarnation is refused while the session lives.
    h.now_ms += 1;
    let refused = h.handle(ControllerRequest::RegisterBroker {
        broker_id: 1,
        incarnation_id: Uuid::from_u128(77),
        cluster_id: "cluster-a".into(),
        listeners: vec![],
        rack: None,
        features: vec![],
        unclean_shutdown: false,
    });
    assert!(matches!(
        refused,
        ControllerResponse::RegisterBroker(Err(MetadataError::DuplicateBrokerRegistration(_)))
    ));
    assert!(fence_departed(&mut h, 1, old_epoch));
    h.now_ms += 1;
    let new_epoch = h.register(1, None);
    assert!(new_epoch > old_epoch);
    assert!(!h.heartbeat(1).is_fenced);
    // News of the old process's link arriving late does not fence the new one.
    assert!(!fence_departed(&mut h, 1, old_epoch));
    assert!(!h.image.broker(1).unwrap().fenced);
}

// KIP-966: eligible leader replicas (on by default, as on a new Kafka 4.1+ cluster).

/// Brokers 1..=3, `min.insync.replicas=2`, topic "t" on [1, 2, 3] led by 1.
fn elr_cluster() -> (Harness, Uuid) {
    let mut h = Harness::new(ControllerConfig {
        min_insync_replicas: 2,
        ..ControllerConfig::default()
    });
    h.brokers(&[1, 2, 3]);
    let topic_id = h
        .create(CreatableTopic {
            name: "t".into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: vec![(0, vec![1, 2, 3])],
            configs: vec![],
        })
        .unwrap()
        .topic_id;
    (h, topic_id)
}

/// The leader proposes `isr` (AlterPartition) and the controller accepts it.
fn shrink_to(h: &mut Harness, topic_id: Uuid, isr: &[i32]) {
    let p = h.partition("t", 0);
    let ControllerResponse::AlterPartition(r) = h.handle(ControllerRequest::AlterPartition {
        broker_id: p.leader,
        broker_epoch: h.epochs[&p.leader],
        topic_id,
        partition: 0,
        leader_epoch: p.leader_epoch,
        new_isr: isr.to_vec(),
        partition_epoch: p.partition_epoch,
    }) else {
        panic!("wrong response")
    };
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(h.partition("t", 0).isr, isr);
}

fn set_min_isr(h: &mut Harness, resource: ConfigResource, value: &str) {
    h.handle(ControllerRequest::IncrementalAlterConfigs {
        resources: vec![(
            resource,
            vec![AlterConfigOp {
                name: "min.insync.replicas".into(),
                op: AlterConfigOpType::Set,
                value: Some(value.into()),
            }],
        )],
        validate_only: false,
    });
}

#[test]
fn elr_a_replica_leaving_an_isr_below_min_isr_joins_the_elr() {
    let (mut h, topic_id) = elr_cluster();
    // At min ISR the removed replica is not needed: the high watermark can advance without it.
    shrink_to(&mut h, topic_id, &[1, 2]);
    assert!(h.partition("t", 0).eligible_leader_replicas.is_empty());
    shrink_to(&mut h, topic_id, &[1]);
    let p = h.partition("t", 0);
    assert_eq!((p.eligible_leader_replicas, p.leader), (vec![2], 1));
    assert!(p.last_known_elr.is_empty());
}

#[test]
fn elr_is_emptied_when_the_isr_is_back_at_min_isr() {
    let (mut h, topic_id) = elr_cluster();
    shrink_to(&mut h, topic_id, &[1, 2]);
    shrink_to(&mut h, topic_id, &[1]);
    assert_eq!(h.partition("t", 0).eligible_leader_replicas, vec![2]);
    shrink_to(&mut h, topic_id, &[1, 3]);
    assert!(h.partition("t", 0).eligible_leader_replicas.is_empty());
}

#[test]
fn elr_fencing_the_last_isr_member_empties_the_isr_into_the_elr() {
    let (mut h, topic_id) = elr_cluster();
    shrink_to(&mut h, topic_id, &[1, 2]);
    shrink_to(&mut h, topic_id, &[1]);
    h.heartbeat_with(2, true, false);
    h.heartbeat_with(3, true, false);
    h.heartbeat_with(1, true, false);
    let p = h.partition("t", 0);
    assert_eq!(
        (
            p.leader,
            p.isr,
            p.eligible_leader_replicas,
            p.last_known_elr
        ),
        (NO_LEADER, vec![], vec![1, 2], vec![1])
    );
}

#[test]
fn elr_a_returning_elr_member_is_elected_and_becomes_the_isr() {
    let (mut h, topic_id) = elr_cluster();
    shrink_to(&mut h, topic_id, &[1, 2]);
    shrink_to(&mut h, topic_id, &[1]);
    for id in [2, 3, 1] {
        h.heartbeat_with(id, true, false);
    }
    h.now_ms += 10_000;
    // 3 left the ISR at min ISR: not eligible, so its return elects nobody.
    h.register_after(3, None, false);
    assert!(!h.heartbeat(3).is_fenced);
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);
    h.register_after(2, None, false);
    assert!(!h.heartbeat(2).is_fenced);
    let p = h.partition("t", 0);
    assert_eq!(
        (
            p.leader,
            p.isr,
            p.eligible_leader_replicas,
            p.last_known_elr
        ),
        (2, vec![2], vec![1], vec![])
    );
}

#[test]
fn elr_an_active_elr_member_takes_over_from_a_failed_leader() {
    let (mut h, topic_id) = elr_cluster();
    shrink_to(&mut h, topic_id, &[1, 2]);
    shrink_to(&mut h, topic_id, &[1]);
    // 2 lagged but is alive: when the leader goes, the ELR member leads at once.
    h.heartbeat_with(1, true, false);
    let p = h.partition("t", 0);
    assert_eq!(
        (p.leader, p.isr, p.eligible_leader_replicas),
        (2, vec![2], vec![1])
    );
}

#[test]
fn elr_a_broker_back_from_an_unclean_shutdown_leaves_every_elr() {
    let (mut h, topic_id) = elr_cluster();
    shrink_to(&mut h, topic_id, &[1, 2]);
    shrink_to(&mut h, topic_id, &[1]);
    for id in [2, 3, 1] {
        h.heartbeat_with(id, true, false);
    }
    h.now_ms += 10_000;
    h.register_after(2, None, true);
    let p = h.partition("t", 0);
    assert_eq!(
        (p.eligible_leader_replicas, p.last_known_elr),
        (vec![1], vec![1])
    );
    assert!(!h.heartbeat(2).is_fenced);
    assert_eq!(
        h.partition("t", 0).leader,
        NO_LEADER,
        "2 may have lost records"
    );
    // The last leader, back from an unclean shutdown, is neither eligible nor remembered.
    h.register_after(1, None, true);
    let p = h.partition("t", 0);
    assert!(p.eligible_leader_replicas.is_empty() && p.last_known_elr.is_empty());
    assert!(!h.heartbeat(1).is_fenced);
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);
}

#[test]
fn elr_the_last_known_leader_is_elected_when_every_replica_was_offline() {
    // min ISR 1: the replicas that left before the last one are not in the ELR.
    let mut h = last_replica_standing(ControllerConfig::default());
    let p = h.partition("t", 0);
    assert_eq!(
        (p.eligible_leader_replicas, p.last_known_elr),
        (vec![1], vec![1])
    );
    // With the ELR emptied (written directly here) and the ISR empty, the last known
    // leader is the only clean-enough choice: Kafka elects it, forcing the ISR to it.
    h.image = h.image.apply_entry(
        &[MetadataRecord::PartitionChangeWithElr {
            topic_id: h.image.topic("t").unwrap().topic_id,
            partition: 0,
            leader: None,
            isr: None,
            replicas: None,
            adding_replicas: None,
            removing_replicas: None,
            eligible_leader_replicas: Some(vec![]),
            last_known_elr: None,
        }],
        h.image.offset + 1,
    );
    h.register_after(1, None, false);
    assert!(!h.heartbeat(1).is_fenced);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr, p.last_known_elr), (1, vec![1], vec![]));
}

#[test]
fn elr_changing_min_isr_clears_the_topic_elr_and_the_default_clears_all() {
    let (mut h, topic_id) = elr_cluster();
    shrink_to(&mut h, topic_id, &[1, 2]);
    shrink_to(&mut h, topic_id, &[1]);
    set_min_isr(&mut h, ConfigResource::Topic("other".into()), "2");
    set_min_isr(&mut h, ConfigResource::Broker(1), "3");
    assert_eq!(h.partition("t", 0).eligible_leader_replicas, vec![2]);
    set_min_isr(&mut h, ConfigResource::Topic("t".into()), "3");
    assert!(h.partition("t", 0).eligible_leader_replicas.is_empty());
    // Back below min ISR (3): 3 leaves, 1 stays.
    shrink_to(&mut h, topic_id, &[1, 3]);
    shrink_to(&mut h, topic_id, &[1]);
    assert_eq!(h.partition("t", 0).eligible_leader_replicas, vec![3]);
    // The cluster already carries min.insync.replicas=2 (written with the first
    // registration, as Kafka's controller does with ELR on): a change of it clears all.
    assert_eq!(
        h.image.cluster_default_broker_configs()["min.insync.replicas"],
        "2"
    );
    set_min_isr(&mut h, ConfigResource::ClusterDefaultBroker, "1");
    assert!(h.partition("t", 0).eligible_leader_replicas.is_empty());
}

#[test]
fn elr_keeps_a_cluster_level_min_isr_as_kafka_does() {
    let (mut h, _) = elr_cluster();
    assert_eq!(
        h.image.cluster_default_broker_configs()["min.insync.replicas"],
        "2"
    );
    let removal = |op| {
        vec![(
            ConfigResource::ClusterDefaultBroker,
            vec![AlterConfigOp {
                name: "min.insync.replicas".into(),
                op,
                value: None,
            }],
        )]
    };
    let ControllerResponse::AlterConfigs(results) =
        h.handle(ControllerRequest::IncrementalAlterConfigs {
            resources: removal(AlterConfigOpType::Delete),
            validate_only: false,
        })
    else {
        panic!("alter")
    };
    let err = results[0].1.as_ref().unwrap_err();
    assert!(matches!(err, MetadataError::InvalidConfig(_)));
    assert_eq!(
        err.to_string(),
        "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
    );
    // The legacy API replaces the whole set: leaving it out removes it, which is refused too.
    let ControllerResponse::AlterConfigs(results) = h.handle(ControllerRequest::AlterConfigs {
        resources: vec![(
            ConfigResource::ClusterDefaultBroker,
            vec![("message.max.bytes".into(), Some("50000".into()))],
        )],
        validate_only: false,
    }) else {
        panic!("alter")
    };
    assert!(results[0].1.is_err());
    assert_eq!(
        h.image.cluster_default_broker_configs()["min.insync.replicas"],
        "2"
    );
}

#[test]
fn elr_off_keeps_the_last_isr_member() {
    let mut h = Harness::new(ControllerConfig::default());
    h.image = h.image.apply(
        &MetadataRecord::FeatureLevel {
            name: crate::image::ELIGIBLE_LEADER_REPLICAS_FEATURE.into(),
            level: 0,
        },
        0,
    );
    h.brokers(&[1]);
    h.create_simple("t", 1, 1);
    h.heartbeat_with(1, true, false);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr), (NO_LEADER, vec![1]));
    assert!(p.eligible_leader_replicas.is_empty() && p.last_known_elr.is_empty());
}
