//! Random operation sequences against the state machine: every request is answered exactly
//! once, and replaying the records rebuilds the same state.

use bytes::Bytes;

use std::collections::BTreeSet;

use super::harness::*;
use crate::core::{CoordinatorShard, GroupState};
use crate::records::{decode_record, encode_record, GroupRecord};
use crate::types::*;

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

const TOPIC_SETS: [&[&str]; 3] = [&["a"], &["a", "b"], &["c"]];

fn replayed(log: &[GroupRecord], initial_rebalance_delay_ms: i32) -> CoordinatorShard {
    let mut rebuilt = CoordinatorShard::new(0, test_config(initial_rebalance_delay_ms));
    for record in log {
        let (key, value) = encode_record(record);
        rebuilt.replay(&decode_record(&key, value.as_deref()).unwrap());
    }
    rebuilt
}

/// Runs one random sequence; returns the group states it went through.
fn run(seed: u64, initial_rebalance_delay_ms: i32) -> BTreeSet<GroupState> {
    let mut states_seen = BTreeSet::new();
    let mut rng = Rng(seed);
    let mut harness = Harness::new(test_config(initial_rebalance_delay_ms));
    // Member ids the test has learned, with their static instance id.
    let mut known: Vec<(String, Option<String>)> = Vec::new();
    let mut generation = 0;
    for _ in 0..400 {
        match rng.below(9) {
            0 | 1 => {
                let instance = (rng.below(3) == 0).then(|| format!("instance-{}", rng.below(3)));
                let topics = TOPIC_SETS[rng.below(3) as usize];
                let token = harness.join(join_request(
                    "",
                    instance.as_deref(),
                    "client",
                    &[("range", topics)],
                ));
                match harness.join_result(token) {
                    Some(Err(crate::error::GroupError::MemberIdRequired { member_id })) => {
                        known.push((member_id, None))
                    }
                    Some(Ok(response)) => known.push((response.member_id, instance)),
                    _ => {}
                }
            }
            2 if !known.is_empty() => {
                let (member_id, instance) = known[rng.below(known.len() as u64) as usize].clone();
                let topics = TOPIC_SETS[rng.below(3) as usize];
                let token = harness.join(join_request(
                    &member_id,
                    instance.as_deref(),
                    "client",
                    &[("range", topics)],
                ));
                if let Some(Ok(response)) = harness.join_result(token) {
                    generation = response.generation_id;
                }
            }
            3 if !known.is_empty() => {
                let (member_id, _) = known[rng.below(known.len() as u64) as usize].clone();
                let assignments = vec![SyncGroupAssignment {
                    member_id: member_id.clone(),
                    assignment: Bytes::from_static(b"x"),
                }];
                let token = harness.token();
                let effects = harness.shard.sync_group(
                    token,
                    SyncGroupRequest {
                        group_id: GROUP.into(),
                        generation_id: generation,
                        member_id,
                        group_instance_id: None,
                        protocol_type: None,
                        protocol_name: None,
                        assignments,
                    },
                    harness.now_ms,
                );
                harness.apply(effects);
            }
            4 if !known.is_empty() => {
                let (member_id, instance) = known[rng.below(known.len() as u64) as usize].clone();
                let _ = harness.heartbeat_static(&member_id, instance.as_deref(), generation);
            }
            5 if !known.is_empty() => {
                let (member_id, instance) = known[rng.below(known.len() as u64) as usize].clone();
                let _ = harness.leave(vec![LeavingMember {
                    member_id,
                    group_instance_id: instance,
                    reason: None,
                }]);
            }
            6 => {
                let member = known
                    .get(rng.below(known.len() as u64 + 1) as usize)
                    .map(|(member_id, _)| member_id.clone())
                    .unwrap_or_default();
                let generation_id = if member.is_empty() { -1 } else { generation };
                let offset = rng.below(1_000) as i64;
                let _ = harness.commit(GROUP, generation_id, &member, &[("a", 0, offset, "")]);
            }
            _ => harness.advance(rng.below(4_000) as i64),
        }
        if let Some(state) = harness.shard.group_state(GROUP) {
            states_seen.insert(state);
            // Whenever the group is at rest its stored records describe it exactly.
            if matches!(state, GroupState::Stable | GroupState::Empty) {
                assert_eq!(
                    replayed(&harness.log, initial_rebalance_delay_ms).snapshot(),
                    harness.shard.snapshot(),
                    "seed {seed}"
                );
            }
        }
    }
    // Everyone goes silent: sessions, rebalances and parked joins of new members all expire.
    for _ in 0..40 {
        harness.advance(10_000);
    }
    assert!(
        harness.unanswered().is_empty(),
        "seed {seed}: unanswered requests"
    );
    assert!(matches!(
        harness.shard.group_state(GROUP),
        None | Some(GroupState::Empty)
    ));
    assert_eq!(
        replayed(&harness.log, initial_rebalance_delay_ms).snapshot(),
        harness.shard.snapshot(),
        "seed {seed}"
    );
    states_seen
}

#[test]
fn random_operations_answer_everything_and_replay_identically() {
    let mut states_seen = BTreeSet::new();
    for seed in 1..=40u64 {
        let delay_ms = if seed % 2 == 0 { 0 } else { 3_000 };
        states_seen.extend(run(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1, delay_ms));
    }
    // The sequences exercise every state of the classic protocol.
    assert!(states_seen.contains(&GroupState::Stable));
    assert!(states_seen.contains(&GroupState::CompletingRebalance));
    assert!(states_seen.contains(&GroupState::PreparingRebalance));
    assert!(states_seen.contains(&GroupState::Empty));
}
