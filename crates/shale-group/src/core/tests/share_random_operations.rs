//! Random share group operations (joins, heartbeats, subscription changes, leaves, share-state
//! reports, time passing, topic changes): the state rebuilt from the records always equals the
//! live one, members stay within their subscriptions, and the members of a stable target hold
//! every initialized partition they subscribe to.

use std::collections::{BTreeMap, BTreeSet};

use super::share_harness::*;
use crate::config::GroupConfig;
use crate::share_types::ShareGroupHeartbeatInput;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

const MEMBERS: [&str; 5] = ["m1", "m2", "m3", "m4", "m5"];
const SUBSCRIPTIONS: [&[&str]; 3] = [&["orders"], &["payments"], &["orders", "payments"]];

/// Runs one sequence; says whether some member was ever assigned a shared partition.
fn run(seed: u64) -> bool {
    let mut rng = Rng(seed);
    let config = GroupConfig {
        share_assignment_interval_ms: if seed.is_multiple_of(2) { 0 } else { 1_000 },
        ..GroupConfig::default()
    };
    let mut h = ShareHarness::new(config.clone());
    h.advance(1);
    // The epoch each member was last told.
    let mut epochs: BTreeMap<&str, i32> = BTreeMap::new();
    let mut pending = Vec::new();
    // Partitions are only ever added; a deleted topic comes back under a new id.
    let mut orders_partitions = 2;
    let mut orders_id = ORDERS;
    let mut shared = false;
    for step in 0..250_u32 {
        let mut heartbeat_answered = false;
        let member = MEMBERS[rng.below(MEMBERS.len() as u64) as usize];
        match rng.below(10) {
            0 | 1 => {
                let topics = SUBSCRIPTIONS[rng.below(3) as usize];
                let outcome = h.heartbeat(join(member, topics));
                if outcome.response.error.is_none() {
                    epochs.insert(member, outcome.response.member_epoch);
                    heartbeat_answered = true;
                }
                pending.extend(outcome.initialize);
            }
            2..=4 => {
                if let Some(epoch) = epochs.get(member).copied() {
                    let request = if rng.below(4) == 0 {
                        ShareGroupHeartbeatInput {
                            subscribed_topic_names: Some(
                                SUBSCRIPTIONS[rng.below(3) as usize]
                                    .iter()
                                    .map(|name| (*name).to_owned())
                                    .collect(),
                            ),
                            ..beat(member, epoch)
                        }
                    } else {
                        beat(member, epoch)
                    };
                    let outcome = h.heartbeat(request);
                    match outcome.response.error {
                        None => {
                            epochs.insert(member, outcome.response.member_epoch);
                            heartbeat_answered = true;
                        }
                        Some(_) => {
                            epochs.remove(member);
                        }
                    }
                    pending.extend(outcome.initialize);
                }
            }
            5 => {
                if let Some(epoch) = epochs.remove(member) {
                    h.heartbeat(beat(member, epoch).with_epoch(-1));
                }
            }
            6 | 7 => {
                if let Some(initialize) = pending.pop() {
                    let topics = initialize
                        .topics
                        .iter()
                        .map(|(topic_id, partitions)| {
                            (*topic_id, partitions.keys().copied().collect())
                        })
                        .collect();
                    if rng.below(4) == 0 {
                        let records = h.shard.uninitialize_share_group_state(
                            &initialize.group_id,
                            &topics,
                            h.now_ms,
                        );
                        h.apply_records(records);
                    } else if let Ok(records) = h.shard.initialize_share_group_state(
                        &initialize.group_id,
                        &topics,
                        h.now_ms,
                    ) {
                        h.apply_records(records);
                    }
                }
            }
            8 => h.advance(rng.below(20_000) as i64),
            _ => {
                if rng.below(5) == 0 {
                    h.image(topics(&[(PAYMENTS, "payments", 1)]));
                    orders_id = uuid::Uuid::from_u128(orders_id.as_u128() + 0x100);
                    orders_partitions = 1;
                } else {
                    orders_partitions = (orders_partitions + rng.below(2) as usize).min(4);
                    h.image(topics(&[
                        (orders_id, "orders", orders_partitions),
                        (PAYMENTS, "payments", 1),
                    ]));
                }
            }
        }
        check(&h, &config, heartbeat_answered, step.is_multiple_of(5));
        shared |= h.shard.share_groups.get(GROUP).is_some_and(|group| {
            let mut holders: BTreeMap<(uuid::Uuid, i32), usize> = BTreeMap::new();
            for member in group.members.values() {
                for (topic_id, partitions) in &member.assigned {
                    for partition in partitions {
                        *holders.entry((*topic_id, *partition)).or_default() += 1;
                    }
                }
            }
            holders.values().any(|count| *count > 1)
        });
    }
    shared
}

fn check(h: &ShareHarness, config: &GroupConfig, heartbeat_answered: bool, reload: bool) {
    if reload {
        check_reload(h, config);
    }
    let Some(live_group) = h.shard.share_groups.get(GROUP) else {
        return;
    };
    let image = h.shard.topics_image();
    let initialized = live_group
        .state_metadata
        .as_ref()
        .map(|metadata| metadata.initialized_partitions())
        .unwrap_or_default();
    for member in live_group.members.values() {
        let subscribed = member.topic_ids(image);
        // A deleted topic leaves a member's assignment at its next heartbeat.
        let existing = member
            .assigned
            .iter()
            .filter(|(topic_id, _)| image.topics.contains_key(topic_id));
        for (topic_id, partitions) in existing {
            assert!(
                subscribed.contains(topic_id),
                "assigned an unsubscribed topic"
            );
            let allowed = initialized.get(topic_id).cloned().unwrap_or_default();
            assert!(partitions.is_subset(&allowed), "assigned uninitialized");
        }
    }
    // After a heartbeat, a target of the current epoch covers every initialized subscribed
    // partition (initializations reported since the target move the epoch on at the next one).
    if heartbeat_answered && live_group.assignment_epoch == live_group.group_epoch {
        let mut covered: BTreeMap<uuid::Uuid, BTreeSet<i32>> = BTreeMap::new();
        for assignment in live_group.target.values() {
            for (topic_id, partitions) in assignment {
                covered.entry(*topic_id).or_default().extend(partitions);
            }
        }
        let subscribed: BTreeSet<uuid::Uuid> = live_group
            .members
            .values()
            .flat_map(|member| member.topic_ids(image))
            .collect();
        for topic_id in subscribed {
            let Some(topic) = image.topics.get(&topic_id) else {
                continue;
            };
            let wanted: BTreeSet<i32> = initialized.get(&topic_id).cloned().unwrap_or_default();
            assert!(wanted
                .iter()
                .all(|partition| *partition < topic.partition_count()));
            let have = covered.get(&topic_id).cloned().unwrap_or_default();
            assert!(wanted.is_subset(&have), "initialized partitions left out");
        }
    }
}

/// The state rebuilt from the log is the live one.
fn check_reload(h: &ShareHarness, config: &GroupConfig) {
    let reloaded = h.reloaded(config.clone());
    assert_eq!(
        reloaded.shard.describe_share_group(GROUP),
        h.shard.describe_share_group(GROUP)
    );
    let (Some(live), Some(rebuilt)) = (
        h.shard.share_groups.get(GROUP),
        reloaded.shard.share_groups.get(GROUP),
    ) else {
        assert_eq!(
            h.shard.share_groups.contains_key(GROUP),
            reloaded.shard.share_groups.contains_key(GROUP)
        );
        return;
    };
    assert_eq!(live.target, rebuilt.target);
    assert_eq!(
        live.state_metadata.as_ref().map(|m| m.to_value()),
        rebuilt.state_metadata.as_ref().map(|m| m.to_value())
    );
}

trait WithEpoch {
    fn with_epoch(self, epoch: i32) -> Self;
}

impl WithEpoch for ShareGroupHeartbeatInput {
    fn with_epoch(mut self, epoch: i32) -> Self {
        self.member_epoch = epoch;
        self
    }
}

#[test]
fn random_share_group_operations_replay_to_the_live_state() {
    let mut shared = 0;
    for seed in 1..=12_u64 {
        shared += usize::from(run(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    }
    assert!(shared > 0, "no run shared a partition");
}
