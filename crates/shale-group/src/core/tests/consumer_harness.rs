//! A shard driven like the runtime drives it, for consumer group tests: records are replayed
//! before the reply is returned; time moves only through `advance`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use uuid::Uuid;

use crate::assignor::{
    AssignmentSpec, AssignorError, MemberAssignment, PartitionAssignor, TopicMetadata, TopicsImage,
};
use crate::config::{GroupConfig, GroupConfigSource, GroupOverrides};
use crate::consumer_types::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use crate::core::{ConsumerSettings, CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::GroupRecord;

pub(super) const GROUP: &str = "cg";
pub(super) const ORDERS: Uuid = Uuid::from_u128(0x0a);
pub(super) const PAYMENTS: Uuid = Uuid::from_u128(0x0b);
pub(super) const REBALANCE_MS: i32 = 30_000;

/// Test-only assignor: the partitions of each topic (in topic id order) dealt round-robin to
/// the subscribed members in member id order. Deterministic, not sticky.
pub(super) struct RoundRobin;

impl PartitionAssignor for RoundRobin {
    fn name(&self) -> &'static str {
        "uniform"
    }

    fn assign(
        &self,
        spec: &AssignmentSpec,
        topics: &TopicsImage,
    ) -> Result<BTreeMap<String, MemberAssignment>, AssignorError> {
        let mut result: BTreeMap<String, MemberAssignment> = spec
            .members
            .keys()
            .map(|member_id| (member_id.clone(), MemberAssignment::new()))
            .collect();
        let mut next = 0usize;
        for topic in topics.topics.values() {
            let subscribers: Vec<&String> = spec
                .members
                .iter()
                .filter(|(_, member)| member.subscribed_topic_ids.contains(&topic.topic_id))
                .map(|(member_id, _)| member_id)
                .collect();
            if subscribers.is_empty() {
                continue;
            }
            for partition in 0..topic.partition_count() {
                let member_id = subscribers[next % subscribers.len()];
                next += 1;
                result
                    .entry(member_id.clone())
                    .or_default()
                    .entry(topic.topic_id)
                    .or_default()
                    .insert(partition);
            }
            next = 0;
        }
        Ok(result)
    }
}

pub(super) static ROUND_ROBIN: RoundRobin = RoundRobin;

fn round_robin(name: &str) -> Option<&'static dyn PartitionAssignor> {
    (name == "uniform").then_some(&ROUND_ROBIN as &'static dyn PartitionAssignor)
}

/// Per-group overrides set by a test.
#[derive(Default)]
pub(super) struct FixedOverrides(pub(super) BTreeMap<String, GroupOverrides>);

impl GroupConfigSource for FixedOverrides {
    fn overrides(&self, group_id: &str) -> GroupOverrides {
        self.0.get(group_id).copied().unwrap_or_default()
    }
}

pub(super) fn topic(id: Uuid, name: &str, partitions: usize) -> TopicMetadata {
    TopicMetadata {
        topic_id: id,
        name: name.to_owned(),
        partition_racks: vec![BTreeSet::new(); partitions],
    }
}

pub(super) fn image(topics: Vec<TopicMetadata>) -> Arc<TopicsImage> {
    Arc::new(TopicsImage {
        topics: topics
            .into_iter()
            .map(|topic| (topic.topic_id, topic))
            .collect(),
    })
}

/// Assignments are computed at every epoch change (`group.consumer.assignment.interval.ms=0`)
/// unless a test says otherwise.
pub(super) fn test_config() -> GroupConfig {
    GroupConfig {
        consumer_protocol_enabled: true,
        consumer_assignment_interval_ms: 0,
        ..GroupConfig::default()
    }
}

pub(super) fn settings(overrides: FixedOverrides) -> ConsumerSettings {
    ConsumerSettings {
        assignors: Arc::new(round_robin),
        group_configs: Arc::new(overrides),
    }
}

pub(super) struct ConsumerHarness {
    pub(super) shard: CoordinatorShard,
    pub(super) now_ms: i64,
    next_token: u64,
    pub(super) log: Vec<GroupRecord>,
}

impl ConsumerHarness {
    pub(super) fn new() -> Self {
        Self::with(test_config(), FixedOverrides::default())
    }

    pub(super) fn with(config: GroupConfig, overrides: FixedOverrides) -> Self {
        let shard = CoordinatorShard::new(0, config)
            .with_consumer_settings(settings(overrides))
            .with_topics_image(image(vec![topic(ORDERS, "orders", 4)]));
        let mut harness = Self {
            shard,
            now_ms: 1_000_000,
            next_token: 0,
            log: Vec::new(),
        };
        harness.shard.on_loaded(harness.now_ms);
        harness
    }

    pub(super) fn apply(&mut self, effects: Effects) -> Vec<(RequestToken, Response)> {
        for record in &effects.records {
            self.shard.replay(record);
            self.log.push(record.clone());
        }
        effects.replies
    }

    pub(super) fn heartbeat(
        &mut self,
        request: ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, GroupError> {
        self.next_token += 1;
        let token = RequestToken(self.next_token);
        let effects = self
            .shard
            .consumer_group_heartbeat(token, request, self.now_ms);
        let replies = self.apply(effects);
        match replies.as_slice() {
            [(replied, Response::ConsumerHeartbeat(result))] if *replied == token => result.clone(),
            other => panic!("expected one heartbeat reply, got {other:?}"),
        }
    }

    pub(super) fn advance(&mut self, ms: i64) {
        self.now_ms += ms;
        let effects = self.shard.tick(self.now_ms);
        self.apply(effects);
    }

    pub(super) fn set_topics(&mut self, topics: Arc<TopicsImage>) {
        let effects = self.shard.on_topics_image(topics, self.now_ms);
        self.apply(effects);
    }

    /// Records written since `mark` (a length of `log`).
    pub(super) fn records_since(&self, mark: usize) -> &[GroupRecord] {
        &self.log[mark..]
    }
}

/// A (re)joining member's first heartbeat, ConsumerGroupHeartbeat v1.
pub(super) fn join(member_id: &str, topics: &[&str]) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        api_version: 1,
        group_id: GROUP.to_owned(),
        member_id: member_id.to_owned(),
        member_epoch: 0,
        instance_id: None,
        rack_id: None,
        rebalance_timeout_ms: REBALANCE_MS,
        subscribed_topic_names: Some(topics.iter().map(|topic| (*topic).to_owned()).collect()),
        subscribed_topic_regex: None,
        server_assignor: None,
        owned_partitions: Some(Vec::new()),
        client_id: "client".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
    }
}

/// A regular heartbeat reporting the partitions the member owns.
pub(super) fn beat(
    member_id: &str,
    member_epoch: i32,
    owned: &[(Uuid, &[i32])],
) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        member_epoch,
        rebalance_timeout_ms: -1,
        subscribed_topic_names: None,
        owned_partitions: Some(
            owned
                .iter()
                .map(|(topic_id, partitions)| (*topic_id, partitions.to_vec()))
                .collect(),
        ),
        ..join(member_id, &[])
    }
}

pub(super) fn assignment(parts: &[(Uuid, &[i32])]) -> MemberAssignment {
    parts
        .iter()
        .map(|(topic_id, partitions)| (*topic_id, partitions.iter().copied().collect()))
        .collect()
}
