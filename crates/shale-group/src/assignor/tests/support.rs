//! Builders for assignor inputs and a small deterministic random generator.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::assignor::{
    AssignmentMember, AssignmentSpec, MemberAssignment, PartitionAssignor, TopicMetadata,
    TopicsImage,
};

/// Topic ids that sort T1 < T2 < ... in both Kafka's and `uuid`'s order.
pub(super) fn topic_id(n: u64) -> Uuid {
    Uuid::from_u64_pair(n, n)
}

pub(super) const T1: u64 = 1;
pub(super) const T2: u64 = 2;
pub(super) const T3: u64 = 3;

/// Topics `(number, partitions)`, no racks.
pub(super) fn topics(shape: &[(u64, usize)]) -> TopicsImage {
    TopicsImage {
        topics: shape
            .iter()
            .map(|(n, partitions)| {
                (
                    topic_id(*n),
                    TopicMetadata {
                        topic_id: topic_id(*n),
                        name: format!("t{n}"),
                        partition_racks: vec![BTreeSet::new(); *partitions],
                    },
                )
            })
            .collect(),
    }
}

/// The same topics with each partition's replica racks.
pub(super) fn with_racks(mut image: TopicsImage, racks: &[(u64, &[&[&str]])]) -> TopicsImage {
    for (n, partitions) in racks {
        if let Some(topic) = image.topics.get_mut(&topic_id(*n)) {
            topic.partition_racks = partitions
                .iter()
                .map(|r| r.iter().map(|s| (*s).to_owned()).collect())
                .collect();
        }
    }
    image
}

/// `(topic number, partitions)` pairs as an assignment.
pub(super) fn parts(entries: &[(u64, &[i32])]) -> MemberAssignment {
    entries
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(n, p)| (topic_id(*n), p.iter().copied().collect()))
        .collect()
}

pub(super) struct Member {
    pub id: &'static str,
    pub instance: Option<&'static str>,
    pub rack: Option<&'static str>,
    pub topics: Vec<u64>,
    pub current: MemberAssignment,
}

pub(super) fn member(id: &'static str, topics: &[u64]) -> Member {
    Member {
        id,
        instance: None,
        rack: None,
        topics: topics.to_vec(),
        current: MemberAssignment::new(),
    }
}

impl Member {
    pub(super) fn holding(mut self, current: MemberAssignment) -> Member {
        self.current = current;
        self
    }
    pub(super) fn instance(mut self, instance: &'static str) -> Member {
        self.instance = Some(instance);
        self
    }
    pub(super) fn rack(mut self, rack: &'static str) -> Member {
        self.rack = Some(rack);
        self
    }
}

pub(super) fn spec(members: Vec<Member>) -> AssignmentSpec {
    AssignmentSpec {
        members: members
            .into_iter()
            .map(|m| {
                (
                    m.id.to_owned(),
                    AssignmentMember {
                        member_id: m.id.to_owned(),
                        instance_id: m.instance.map(str::to_owned),
                        rack_id: m.rack.map(str::to_owned),
                        subscribed_topic_ids: m.topics.iter().map(|n| topic_id(*n)).collect(),
                        current_assignment: m.current,
                    },
                )
            })
            .collect(),
    }
}

/// The expected result: member id to assignment.
pub(super) fn expect(
    entries: Vec<(&'static str, MemberAssignment)>,
) -> BTreeMap<String, MemberAssignment> {
    entries
        .into_iter()
        .map(|(id, a)| (id.to_owned(), a))
        .collect()
}

/// The assignment of `assignor`, which must succeed.
pub(super) fn run(
    assignor: &dyn PartitionAssignor,
    spec: &AssignmentSpec,
    topics: &TopicsImage,
) -> BTreeMap<String, MemberAssignment> {
    match assignor.assign(spec, topics) {
        Ok(result) => result,
        Err(error) => panic!("{} failed: {error}", assignor.name()),
    }
}

/// The spec of the next round: the same members holding `result`.
pub(super) fn holding_result(
    spec: &AssignmentSpec,
    result: &BTreeMap<String, MemberAssignment>,
) -> AssignmentSpec {
    let mut next = spec.clone();
    for (id, member) in &mut next.members {
        member.current_assignment = result.get(id).cloned().unwrap_or_default();
    }
    next
}

/// SplitMix64: small, deterministic, good enough to draw test inputs.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..bound` (`bound` > 0).
    pub(super) fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
