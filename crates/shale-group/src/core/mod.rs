//! The pure coordinator state machine of one `__consumer_offsets` partition.
//!
//! Handlers take `(request, now_ms)` and return [`Effects`]: replies (possibly to requests parked
//! by earlier calls) and records to append. The caller appends the records, then feeds each one
//! to [`CoordinatorShard::replay`], then delivers the replies. Committed offsets, pending
//! transactional offsets and group deletion change only through `replay`, live and at load; at
//! load `replay` also rebuilds each group from its latest `GroupMetadata` record. A live group's
//! membership (members joining, parked requests, generations) is changed by the handlers, which
//! emit the `GroupMetadata` record that describes the result, exactly as Kafka treats classic
//! groups: what is in flight is not persisted, and a loaded group is Stable (or Empty) with the
//! members of its last stored generation. Time only enters through `now_ms` and [`tick`].
//!
//! [`tick`]: CoordinatorShard::tick

mod admin;
pub mod consumer;
mod group;
mod join;
mod membership;
mod offsets;
mod rebalance;
mod replay;
pub mod share;
mod sync;
mod timers;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use consumer::{AssignorLookup, ConsumerGroupState, ConsumerSettings, MemberState};
pub use group::GroupState;
pub use replay::{GroupSnapshot, ShardSnapshot};
pub use share::ShareGroupState;

use crate::assignor::TopicsImage;
use crate::config::GroupConfig;
use crate::consumer_types::ConsumerGroupHeartbeatResponse;
use crate::error::GroupError;
use crate::records::GroupRecord;
use crate::share_types::{
    AlterShareGroupOffsetsOutcome, ShareGroupHeartbeatOutcome, ShareOffsetsDeletion,
    SharePartitions,
};
use crate::types::{
    DeleteGroupResult, JoinGroupResponse, LeaveGroupResponse, OffsetCommitResponse,
    OffsetDeleteResponse, SyncGroupResponse,
};
use group::Group;
use timers::{TimerKey, Timers};

/// Identifies a request the caller is waiting on; replies carry it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestToken(pub u64);

/// A reply to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Join(Result<JoinGroupResponse, GroupError>),
    Sync(Result<SyncGroupResponse, GroupError>),
    Heartbeat(Result<(), GroupError>),
    Leave(Result<LeaveGroupResponse, GroupError>),
    OffsetCommit(Result<OffsetCommitResponse, GroupError>),
    OffsetDelete(Result<OffsetDeleteResponse, GroupError>),
    DeleteGroups(Vec<DeleteGroupResult>),
    ConsumerHeartbeat(Result<ConsumerGroupHeartbeatResponse, GroupError>),
    ShareHeartbeat(Result<ShareGroupHeartbeatOutcome, GroupError>),
    /// The outcome of a share-state report (initialized or not).
    ShareState(Result<(), GroupError>),
    /// The share-partitions to delete before the groups are.
    ShareDeletion(Result<BTreeMap<String, SharePartitions>, GroupError>),
    ShareAlterOffsets(Result<AlterShareGroupOffsetsOutcome, GroupError>),
    ShareOffsetsDeletion(Result<ShareOffsetsDeletion, GroupError>),
}

impl Response {
    /// The same reply failed with `error` (the records it depended on could not be written).
    pub fn failed(self, error: GroupError) -> Response {
        match self {
            Response::Join(_) => Response::Join(Err(error)),
            Response::Sync(_) => Response::Sync(Err(error)),
            Response::Heartbeat(_) => Response::Heartbeat(Err(error)),
            Response::Leave(_) => Response::Leave(Err(error)),
            Response::OffsetCommit(_) => Response::OffsetCommit(Err(error)),
            Response::OffsetDelete(_) => Response::OffsetDelete(Err(error)),
            Response::ConsumerHeartbeat(_) => Response::ConsumerHeartbeat(Err(error)),
            Response::ShareHeartbeat(_) => Response::ShareHeartbeat(Err(error)),
            Response::ShareState(_) => Response::ShareState(Err(error)),
            Response::ShareDeletion(_) => Response::ShareDeletion(Err(error)),
            Response::ShareAlterOffsets(_) => Response::ShareAlterOffsets(Err(error)),
            Response::ShareOffsetsDeletion(_) => Response::ShareOffsetsDeletion(Err(error)),
            Response::DeleteGroups(results) => Response::DeleteGroups(
                results
                    .into_iter()
                    .map(|result| DeleteGroupResult {
                        error: Some(result.error.unwrap_or_else(|| error.clone())),
                        ..result
                    })
                    .collect(),
            ),
        }
    }
}

/// What a call produced. Replies must be delivered only after `records` were appended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Effects {
    pub replies: Vec<(RequestToken, Response)>,
    pub records: Vec<GroupRecord>,
}

impl Effects {
    pub(crate) fn reply(&mut self, token: RequestToken, response: Response) {
        self.replies.push((token, response));
    }

    pub fn is_empty(&self) -> bool {
        self.replies.is_empty() && self.records.is_empty()
    }

    pub fn extend(&mut self, other: Effects) {
        self.replies.extend(other.replies);
        self.records.extend(other.records);
    }
}

/// Source of fresh member ids (`<prefix>-<uuid>` in production).
pub type MemberIdSource = Box<dyn FnMut(&str) -> String + Send>;

/// The coordinator state of one `__consumer_offsets` partition.
pub struct CoordinatorShard {
    partition: i32,
    config: GroupConfig,
    pub(crate) groups: BTreeMap<String, Group>,
    pub(crate) timers: Timers,
    member_ids: MemberIdSource,
    /// The latest time seen, for timers scheduled by `replay`.
    pub(crate) last_now_ms: i64,
    /// Loading is over (`on_loaded` was called): replayed groups get live timers.
    pub(crate) live: bool,
    /// Counts replayed offset records: their order in the log.
    pub(crate) replay_sequence: u64,
    /// Consumer (KIP-848) groups; their offsets are in `groups` (see [`consumer`]).
    pub(crate) consumer_groups: BTreeMap<String, consumer::group::ConsumerGroup>,
    /// The cluster's topics, which consumer groups subscribe to and are assigned from.
    pub(crate) topics: Arc<TopicsImage>,
    /// Counts the topics images seen (the version stored with resolved regular expressions).
    pub(crate) topics_version: i64,
    pub(crate) consumer: ConsumerSettings,
    /// What protocol conversions replaced, kept until their records are replayed or fail.
    pub(crate) conversions: BTreeMap<String, consumer::Conversion>,
    /// Share (KIP-932) groups; they hold no committed offsets.
    pub(crate) share_groups: BTreeMap<String, share::group::ShareGroup>,
}

impl std::fmt::Debug for CoordinatorShard {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CoordinatorShard")
            .field("partition", &self.partition)
            .field("groups", &self.groups.len())
            .finish()
    }
}

impl CoordinatorShard {
    pub fn new(partition: i32, config: GroupConfig) -> Self {
        Self::with_member_ids(
            partition,
            config,
            Box::new(|prefix| format!("{prefix}-{}", uuid::Uuid::new_v4())),
        )
    }

    /// A shard with a custom member id source (deterministic ids in tests).
    pub fn with_member_ids(
        partition: i32,
        config: GroupConfig,
        member_ids: MemberIdSource,
    ) -> Self {
        Self {
            partition,
            config,
            groups: BTreeMap::new(),
            timers: Timers::default(),
            member_ids,
            last_now_ms: 0,
            live: false,
            replay_sequence: 0,
            consumer_groups: BTreeMap::new(),
            topics: Arc::new(TopicsImage::default()),
            topics_version: 0,
            consumer: ConsumerSettings::default(),
            conversions: BTreeMap::new(),
            share_groups: BTreeMap::new(),
        }
    }

    /// The consumer protocol's assignors and per-group configs.
    pub fn with_consumer_settings(mut self, settings: ConsumerSettings) -> Self {
        self.consumer = settings;
        self
    }

    /// The topics image to start from (a loading partition gets the latest one).
    pub fn with_topics_image(mut self, topics: Arc<TopicsImage>) -> Self {
        self.topics = topics;
        self
    }

    pub fn partition(&self) -> i32 {
        self.partition
    }

    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The earliest timer deadline, if any: call [`CoordinatorShard::tick`] then.
    pub fn next_deadline_ms(&self) -> Option<i64> {
        self.timers.next_deadline_ms()
    }

    /// Fires every timer due at `now_ms`.
    pub fn tick(&mut self, now_ms: i64) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        // Each timer fires at its own deadline, so a late tick behaves like timely ones.
        while let Some((deadline_ms, key)) = self.timers.pop_due(now_ms) {
            let now_ms = deadline_ms;
            match key {
                TimerKey::Heartbeat {
                    group_id,
                    member_id,
                } => self.on_heartbeat_expired(&group_id, &member_id, now_ms, &mut effects),
                TimerKey::PendingMember {
                    group_id,
                    member_id,
                } => self.on_pending_member_expired(&group_id, &member_id, now_ms, &mut effects),
                TimerKey::Join { group_id } => self.on_join_timer(&group_id, now_ms, &mut effects),
                TimerKey::Sync { group_id } => {
                    self.on_pending_sync_expired(&group_id, now_ms, &mut effects)
                }
                TimerKey::OffsetExpiration => self.on_offset_expiration(now_ms, &mut effects),
                TimerKey::ConsumerSession {
                    group_id,
                    member_id,
                } => self.on_consumer_session_expired(&group_id, &member_id, now_ms, &mut effects),
                TimerKey::ConsumerRebalance {
                    group_id,
                    member_id,
                } => {
                    self.on_consumer_rebalance_expired(&group_id, &member_id, now_ms, &mut effects)
                }
                TimerKey::ConsumerJoin {
                    group_id,
                    member_id,
                }
                | TimerKey::ConsumerSync {
                    group_id,
                    member_id,
                } => self.on_consumer_classic_timeout(&group_id, &member_id, now_ms, &mut effects),
                TimerKey::ShareSession {
                    group_id,
                    member_id,
                } => self.on_share_session_expired(&group_id, &member_id, now_ms, &mut effects),
            }
        }
        effects
    }

    /// Call once loading is done: members of loaded groups must heartbeat within their session
    /// timeout, and offset expiration starts.
    pub fn on_loaded(&mut self, now_ms: i64) {
        self.observe(now_ms);
        self.live = true;
        let heartbeats: Vec<(String, String, i32)> = self
            .groups
            .values()
            .flat_map(|group| {
                group.members.values().map(|member| {
                    (
                        group.group_id.clone(),
                        member.member_id.clone(),
                        member.session_timeout_ms,
                    )
                })
            })
            .collect();
        for (group_id, member_id, session_timeout_ms) in heartbeats {
            self.timers.schedule(
                TimerKey::Heartbeat {
                    group_id,
                    member_id,
                },
                now_ms + i64::from(session_timeout_ms),
            );
        }
        self.timers.schedule(
            TimerKey::OffsetExpiration,
            now_ms + self.config.offsets_retention_check_interval_ms,
        );
        self.start_consumer_timers(now_ms);
        self.start_share_timers(now_ms);
    }

    /// The records of `records` could not be written (`error` is what their requests were
    /// answered): a protocol conversion among them is undone, so that the shard is again what
    /// its log says, and a group whose new assignment was not stored rebalances so that its
    /// members get a consistent assignment again (as Kafka does).
    pub fn on_append_failed(
        &mut self,
        records: &[GroupRecord],
        error: &GroupError,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        self.roll_back_conversions(records, error, now_ms, &mut effects);
        for record in records {
            if let GroupRecord::GroupMetadata {
                group_id,
                value: Some(value),
            } = record
            {
                let rebalance = self.groups.get(group_id).is_some_and(|group| {
                    group.generation_id == value.generation
                        && matches!(
                            group.state,
                            GroupState::Stable | GroupState::CompletingRebalance
                        )
                });
                if rebalance {
                    self.prepare_rebalance(group_id, now_ms, &mut effects);
                }
            }
        }
        effects
    }

    pub(crate) fn observe(&mut self, now_ms: i64) {
        self.last_now_ms = self.last_now_ms.max(now_ms);
    }

    pub(crate) fn new_member_id(&mut self, prefix: &str) -> String {
        (self.member_ids)(prefix)
    }

    /// The state of a group, if it exists.
    pub fn group_state(&self, group_id: &str) -> Option<GroupState> {
        self.groups.get(group_id).map(|group| group.state)
    }
}
