//! Randomized operation sequences against the controller (deterministic seeds), checking
//! partition invariants after every step, snapshot round trips, and that replaying the whole
//! record history rebuilds the same image.

use std::collections::HashMap;

use uuid::Uuid;

use super::*;
use crate::image::NO_LEADER;

const BROKERS: i32 = 5;
const TOPICS: &[&str] = &["a", "b", "c", "d"];

struct World {
    controller: Controller,
    image: MetadataImage,
    history: Vec<Vec<MetadataRecord>>,
    now_ms: i64,
    rng: ControllerRng,
    epochs_seen: HashMap<(Uuid, i32), (i32, i32)>,
}

impl World {
    fn handle(&mut self, request: ControllerRequest) -> ControllerResponse {
        let (response, records) = self.controller.handle(&self.image, request, self.now_ms);
        if !records.is_empty() {
            self.image = self.image.apply_entry(&records, self.image.offset + 1);
            self.history.push(records);
        }
        response
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> Option<T> {
        if items.is_empty() {
            None
        } else {
            Some(items[self.rng.below(items.len())].clone())
        }
    }

    fn partitions(&self) -> Vec<(String, Uuid, PartitionImage)> {
        self.image
            .topics()
            .flat_map(|t| {
                t.partitions
                    .values()
                    .map(move |p| (t.name.clone(), t.topic_id, p.clone()))
            })
            .collect()
    }

    fn random_replicas(&mut self, max: usize) -> Vec<i32> {
        let registered: Vec<i32> = self.image.brokers().map(|b| b.broker_id).collect();
        let mut out = Vec::new();
        let want = 1 + self.rng.below(max.max(1));
        for _ in 0..want * 2 {
            if let Some(b) = self.pick(&registered) {
                if !out.contains(&b) && out.len() < want {
                    out.push(b);
                }
            }
        }
        out
    }

    fn step(&mut self) {
        let op = self.rng.below(13);
        let broker = 1 + self.rng.below(BROKERS as usize) as i32;
        match op {
            0 => {
                let incarnation = Uuid::from_u64_pair(self.rng.next_u64(), self.rng.next_u64());
                let rack = (self.rng.below(2) == 0).then(|| format!("r{}", broker % 2));
                let unclean_shutdown = self.rng.below(3) == 0;
                self.handle(ControllerRequest::RegisterBroker {
                    broker_id: broker,
                    incarnation_id: incarnation,
                    cluster_id: "c".into(),
                    listeners: vec![],
                    rack,
                    features: vec![],
                    unclean_shutdown,
                });
            }
            1 | 2 => {
                if let Some(b) = self.image.broker(broker).cloned() {
                    let roll = self.rng.below(20);
                    if roll == 2 {
                        // Its process died (or a probe said so), with its current or an
                        // older epoch.
                        let stale = self.rng.below(2) as i64;
                        self.handle(ControllerRequest::FenceDeparted {
                            broker_id: broker,
                            broker_epoch: b.broker_epoch - stale,
                        });
                        return;
                    }
                    self.handle(ControllerRequest::BrokerHeartbeat {
                        broker_id: broker,
                        broker_epoch: b.broker_epoch,
                        want_fence: roll == 0,
                        want_shutdown: roll == 1,
                        current_metadata_offset: self.image.offset,
                    });
                }
            }
            3 => {
                self.now_ms += self.rng.below(6000) as i64;
                self.handle(ControllerRequest::Tick);
            }
            4 => {
                let name = self.pick(TOPICS).unwrap_or("a").to_string();
                let partitions = 1 + self.rng.below(4) as i32;
                let rf = 1 + self.rng.below(3) as i16;
                self.handle(ControllerRequest::CreateTopics {
                    topics: vec![CreatableTopic {
                        name,
                        num_partitions: partitions,
                        replication_factor: rf,
                        assignments: vec![],
                        configs: vec![],
                    }],
                    validate_only: false,
                });
            }
            5 => {
                let name = self.pick(TOPICS).unwrap_or("a").to_string();
                self.handle(ControllerRequest::DeleteTopics {
                    names: vec![name],
                    ids: vec![],
                });
            }
            6 => {
                let name = self.pick(TOPICS).unwrap_or("a").to_string();
                let count = 1 + self.rng.below(6) as i32;
                self.handle(ControllerRequest::CreatePartitions {
                    topics: vec![CreatePartitionsTopic {
                        name,
                        count,
                        assignments: None,
                    }],
                    validate_only: false,
                });
            }
            7 | 8 => {
                let partitions = self.partitions();
                if let Some((_, topic_id, p)) = self.pick(&partitions) {
                    if p.leader == NO_LEADER {
                        return;
                    }
                    let Some(leader) = self.image.broker(p.leader).cloned() else {
                        return;
                    };
                    let mut isr = vec![p.leader];
                    for r in &p.replicas {
                        if *r != p.leader && self.rng.below(2) == 0 {
                            isr.push(*r);
                        }
                    }
                    let stale = self.rng.below(5) == 0;
                    self.handle(ControllerRequest::AlterPartition {
                        broker_id: p.leader,
                        broker_epoch: leader.broker_epoch,
                        topic_id,
                        partition: p.partition,
                        leader_epoch: p.leader_epoch - i32::from(stale),
                        new_isr: isr,
                        partition_epoch: p.partition_epoch,
                    });
                }
            }
            9 => {
                let partitions = self.partitions();
                if let Some((name, _, p)) = self.pick(&partitions) {
                    let election_type = if self.rng.below(2) == 0 {
                        ElectionType::Preferred
                    } else {
                        ElectionType::Unclean
                    };
                    self.handle(ControllerRequest::ElectLeaders {
                        election_type,
                        partitions: Some(vec![(name, p.partition)]),
                    });
                }
            }
            10 => {
                let partitions = self.partitions();
                if let Some((name, _, p)) = self.pick(&partitions) {
                    let replicas = if self.rng.below(4) == 0 {
                        None
                    } else {
                        Some(self.random_replicas(3))
                    };
                    self.handle(ControllerRequest::AlterPartitionReassignments {
                        partitions: vec![ReassignablePartition {
                            topic: name,
                            partition: p.partition,
                            replicas,
                        }],
                    });
                }
            }
            11 => {
                if self.rng.below(4) == 0 {
                    self.handle(ControllerRequest::UnregisterBroker { broker_id: broker });
                }
            }
            _ => {
                // Half the time unclean election, half the time KIP-966's min ISR (which
                // clears the topic's ELR).
                let (config, value) = match self.rng.below(4) {
                    0 => ("unclean.leader.election.enable", "true".to_string()),
                    1 => ("unclean.leader.election.enable", "false".to_string()),
                    _ => ("min.insync.replicas", (1 + self.rng.below(3)).to_string()),
                };
                let name = self.pick(TOPICS).unwrap_or("a").to_string();
                self.handle(ControllerRequest::IncrementalAlterConfigs {
                    resources: vec![(
                        ConfigResource::Topic(name),
                        vec![AlterConfigOp {
                            name: config.into(),
                            op: AlterConfigOpType::Set,
                            value: Some(value),
                        }],
                    )],
                    validate_only: false,
                });
            }
        }
    }

    fn check(&mut self) {
        for (name, topic_id, p) in self.partitions() {
            let tp = format!("{name}-{}: {p:?}", p.partition);
            let distinct = |l: &[i32]| {
                let mut v = l.to_vec();
                v.sort_unstable();
                v.dedup();
                v.len() == l.len()
            };
            assert!(distinct(&p.replicas) && distinct(&p.isr), "{tp}");
            // KIP-966: the ELR holds distinct replicas outside the ISR, only while the ISR is
            // below min ISR; the last known ELR names at most the last leader.
            let elr = &p.eligible_leader_replicas;
            assert!(distinct(elr), "{tp}");
            assert!(elr.iter().all(|r| p.replicas.contains(r)), "{tp}");
            assert!(
                elr.iter().all(|r| !p.isr.contains(r)),
                "ELR and ISR overlap: {tp}"
            );
            if !elr.is_empty() {
                let min_isr = partitions::min_insync_replicas(&self.image, &name, 1)
                    .clamp(1, p.replicas.len() as i32);
                assert!((p.isr.len() as i32) < min_isr, "ELR at min ISR: {tp}");
            }
            assert!(p.last_known_elr.len() <= 1, "{tp}");
            // Fencing the last member (KIP-966) or an unclean shutdown empties an ISR, and an
            // empty ISR has no leader.
            assert!(!p.isr.is_empty() || p.leader == NO_LEADER, "{tp}");
            assert!(p.isr.iter().all(|r| p.replicas.contains(r)), "{tp}");
            assert!(
                p.adding_replicas.iter().all(|r| p.replicas.contains(r)),
                "{tp}"
            );
            assert!(
                p.removing_replicas.iter().all(|r| p.replicas.contains(r)),
                "{tp}"
            );
            assert!(
                p.adding_replicas
                    .iter()
                    .all(|r| !p.removing_replicas.contains(r)),
                "{tp}"
            );
            let eligible = |r: i32| self.image.broker(r).is_some_and(|b| b.is_active());
            if p.leader == NO_LEADER {
                assert!(
                    !p.isr.iter().any(|r| eligible(*r)),
                    "leaderless with an eligible ISR member: {tp}"
                );
                assert!(
                    !p.isr.is_empty() || !elr.iter().any(|r| eligible(*r)),
                    "leaderless with an eligible ELR member: {tp}"
                );
            } else {
                assert!(p.isr.contains(&p.leader), "{tp}");
                assert!(eligible(p.leader), "leader not eligible: {tp}");
            }
            let key = (topic_id, p.partition);
            if let Some((leader_epoch, partition_epoch)) = self.epochs_seen.get(&key) {
                assert!(p.leader_epoch >= *leader_epoch, "{tp}");
                assert!(p.partition_epoch >= *partition_epoch, "{tp}");
            }
            self.epochs_seen
                .insert(key, (p.leader_epoch, p.partition_epoch));
        }
    }
}

#[test]
fn random_operations_keep_partition_invariants() {
    let mut partitions_seen = 0;
    let mut leader_changes_seen = 0;
    let mut elr_states_seen = 0;
    for seed in 0..40 {
        let mut world = World {
            controller: Controller::new(ControllerConfig::default(), seed),
            image: MetadataImage::empty("c"),
            history: Vec::new(),
            now_ms: 0,
            rng: ControllerRng::new(seed.wrapping_mul(7919)),
            epochs_seen: HashMap::new(),
        };
        for step in 0..300 {
            world.step();
            world.check();
            elr_states_seen += world
                .partitions()
                .iter()
                .filter(|(_, _, p)| !p.eligible_leader_replicas.is_empty())
                .count();
            if step % 50 == 0 {
                let restored =
                    MetadataImage::decode_snapshot(&world.image.encode_snapshot()).unwrap();
                assert_eq!(restored, world.image, "seed {seed} step {step}");
            }
        }
        partitions_seen += world.epochs_seen.len();
        leader_changes_seen += world
            .epochs_seen
            .values()
            .filter(|(leader_epoch, _)| *leader_epoch > 0)
            .count();
        let mut replayed = MetadataImage::empty("c");
        for (i, records) in world.history.iter().enumerate() {
            let decoded =
                crate::records::decode_entry(&crate::records::encode_entry(records)).unwrap();
            replayed = replayed.apply_entry(&decoded, i as i64);
        }
        assert_eq!(replayed, world.image, "seed {seed}");
    }
    // The runs exercised real state, not only refused requests.
    assert!(partitions_seen > 100, "{partitions_seen}");
    assert!(leader_changes_seen > 20, "{leader_changes_seen}");
    assert!(elr_states_seen > 100, "{elr_states_seen}");
}
