//! A shard driven like the runtime drives it, for share group tests: records are replayed
//! before the reply is returned; time moves only through `advance`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use uuid::Uuid;

use crate::assignor::{MemberAssignment, TopicMetadata, TopicsImage};
use crate::config::{GroupConfig, GroupConfigSource, GroupOverrides, ShareGroupOverrides};
use crate::core::{ConsumerSettings, CoordinatorShard, Effects, RequestToken, Response};
use crate::records::{decode_record, encode_record, GroupRecord};
use crate::share_types::{
    ShareGroupHeartbeatInput, ShareGroupHeartbeatOutcome, ShareGroupHeartbeatResponse,
};

pub(super) const GROUP: &str = "sg";
pub(super) const ORDERS: Uuid = Uuid::from_u128(0x0a);
pub(super) const PAYMENTS: Uuid = Uuid::from_u128(0x0b);

/// Share overrides set by a test.
#[derive(Default)]
pub(super) struct ShareOverrides(pub(super) BTreeMap<String, ShareGroupOverrides>);

impl GroupConfigSource for ShareOverrides {
    fn overrides(&self, _group_id: &str) -> GroupOverrides {
        GroupOverrides::default()
    }

    fn share_overrides(&self, group_id: &str) -> ShareGroupOverrides {
        self.0.get(group_id).copied().unwrap_or_default()
    }
}

pub(super) fn topics(shape: &[(Uuid, &str, usize)]) -> Arc<TopicsImage> {
    Arc::new(TopicsImage {
        topics: shape
            .iter()
            .map(|(topic_id, name, partitions)| {
                (
                    *topic_id,
                    TopicMetadata {
                        topic_id: *topic_id,
                        name: (*name).to_owned(),
                        partition_racks: vec![BTreeSet::new(); *partitions],
                    },
                )
            })
            .collect(),
    })
}

pub(super) struct ShareHarness {
    pub(super) shard: CoordinatorShard,
    pub(super) now_ms: i64,
    next_token: u64,
    /// Every record written, in order, as bytes (what a reload reads).
    pub(super) log: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl ShareHarness {
    pub(super) fn new(config: GroupConfig) -> Self {
        Self::with_overrides(config, ShareOverrides::default())
    }

    pub(super) fn with_overrides(config: GroupConfig, overrides: ShareOverrides) -> Self {
        let mut shard = shard(config, overrides);
        shard.on_loaded(0);
        let mut harness = Self {
            shard,
            now_ms: 0,
            next_token: 0,
            log: Vec::new(),
        };
        harness.image(topics(&[(ORDERS, "orders", 2), (PAYMENTS, "payments", 1)]));
        harness
    }

    /// A shard loaded from this harness's log, as after a restart.
    pub(super) fn reloaded(&self, config: GroupConfig) -> ShareHarness {
        let mut shard = shard(config, ShareOverrides::default())
            .with_topics_image(self.shard.topics_image().clone());
        for (key, value) in &self.log {
            let record = decode_record(key, value.as_deref()).unwrap();
            shard.replay(&record);
        }
        shard.on_loaded(self.now_ms);
        ShareHarness {
            shard,
            now_ms: self.now_ms,
            next_token: 0,
            log: self.log.clone(),
        }
    }

    pub(super) fn apply(&mut self, effects: Effects) -> Vec<(RequestToken, Response)> {
        for record in &effects.records {
            self.log.push(encode_record(record));
            self.shard.replay(record);
        }
        effects.replies
    }

    pub(super) fn apply_records(&mut self, records: Vec<GroupRecord>) {
        self.apply(Effects {
            replies: Vec::new(),
            records,
        });
    }

    pub(super) fn image(&mut self, image: Arc<TopicsImage>) {
        let effects = self.shard.on_topics_image(image, self.now_ms);
        self.apply(effects);
    }

    pub(super) fn advance(&mut self, ms: i64) {
        self.now_ms += ms;
        let effects = self.shard.tick(self.now_ms);
        self.apply(effects);
    }

    pub(super) fn heartbeat(
        &mut self,
        request: ShareGroupHeartbeatInput,
    ) -> ShareGroupHeartbeatOutcome {
        self.next_token += 1;
        let token = RequestToken(self.next_token);
        let effects = self
            .shard
            .share_group_heartbeat(token, request, self.now_ms);
        match self.apply(effects).pop() {
            Some((_, Response::ShareHeartbeat(Ok(outcome)))) => outcome,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    /// A heartbeat whose share-state initialization the broker then reports as done.
    pub(super) fn heartbeat_initialized(
        &mut self,
        request: ShareGroupHeartbeatInput,
    ) -> ShareGroupHeartbeatResponse {
        let outcome = self.heartbeat(request);
        if let Some(initialize) = outcome.initialize {
            let topics = initialize
                .topics
                .iter()
                .map(|(topic_id, partitions)| (*topic_id, partitions.keys().copied().collect()))
                .collect();
            let records = self
                .shard
                .initialize_share_group_state(&initialize.group_id, &topics, self.now_ms)
                .unwrap();
            self.apply_records(records);
        }
        outcome.response
    }

    pub(super) fn assignment(&self, member_id: &str) -> MemberAssignment {
        self.shard
            .share_member_assignment(GROUP, member_id)
            .unwrap_or_default()
    }
}

fn shard(config: GroupConfig, overrides: ShareOverrides) -> CoordinatorShard {
    CoordinatorShard::new(0, config).with_consumer_settings(ConsumerSettings {
        group_configs: Arc::new(overrides),
        ..ConsumerSettings::default()
    })
}

pub(super) fn join(member_id: &str, topics: &[&str]) -> ShareGroupHeartbeatInput {
    ShareGroupHeartbeatInput {
        group_id: GROUP.to_owned(),
        member_id: member_id.to_owned(),
        member_epoch: 0,
        rack_id: None,
        subscribed_topic_names: Some(topics.iter().map(|name| (*name).to_owned()).collect()),
        client_id: "client".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
    }
}

pub(super) fn beat(member_id: &str, member_epoch: i32) -> ShareGroupHeartbeatInput {
    ShareGroupHeartbeatInput {
        member_epoch,
        subscribed_topic_names: None,
        ..join(member_id, &[])
    }
}

pub(super) fn parts(entries: &[(Uuid, &[i32])]) -> MemberAssignment {
    entries
        .iter()
        .map(|(topic_id, partitions)| (*topic_id, partitions.iter().copied().collect()))
        .collect()
}
