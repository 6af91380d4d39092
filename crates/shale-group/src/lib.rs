//! The group coordinator (classic, consumer and share protocols) and committed offsets.
//!
//! - [`assignor`]: the server-side assignors of the consumer protocol (KIP-848).
//! - [`placement`]: which `__consumer_offsets` partition coordinates a group.
//! - [`records`]: the records of `__consumer_offsets`, in Kafka's binary schemas.
//! - [`core`]: the pure state machine of one coordinator partition.
//! - [`runtime`]: the tokio service running many partitions over a [`runtime::GroupLog`].
//!
//! # Wiring it into a broker
//!
//! - FindCoordinator: the coordinator of group G is the leader of `__consumer_offsets`
//!   partition [`placement::partition_for`]`(G, offsets.topic.num.partitions)`.
//! - Becoming leader of partition p: [`runtime::GroupCoordinator::start_loading`], feed the
//!   loader p's records in log order, then [`runtime::PartitionLoader::finish`]. Losing it:
//!   [`runtime::GroupCoordinator::unload_partition`].
//! - [`runtime::GroupLog::append`] writes to p and completes once the records are committed.
//! - Errors: [`GroupError`] says what went wrong; the broker chooses the Kafka error code
//!   for each variant. Version details the broker applies when it converts: JoinGroup v0 has no rebalance timeout (pass the session timeout),
//!   `require_known_member_id` is v4+, `supports_skip_assignment` v9+, protocol type and name are
//!   answered from JoinGroup v7 and SyncGroup v5; LeaveGroup v0-v2 answers the single member's
//!   error at the top level; DescribeGroups before v6 answers an unknown group as state "Dead"
//!   with no error; OffsetCommit v9+ sets `reports_missing_group`.
//!
//! # The consumer protocol (KIP-848)
//!
//! - Build the coordinator with [`runtime::GroupCoordinator::with_consumer_settings`], passing
//!   [`core::ConsumerSettings`]`{ assignors: Arc::new(assignor::assignor_named), group_configs }`
//!   (the GROUP resource's `consumer.session.timeout.ms` / `consumer.heartbeat.interval.ms`).
//! - Every metadata image: [`runtime::GroupCoordinator::on_topics_image`] with the topics
//!   (internal ones included; regular expressions skip them).
//! - ConsumerGroupHeartbeat: [`runtime::GroupCoordinator::consumer_group_heartbeat`];
//!   ConsumerGroupDescribe: [`runtime::GroupCoordinator::consumer_group_describe`].
//! - OffsetFetch v9+ with a member id or epoch: [`runtime::GroupCoordinator::fetch_offsets_for_member`];
//!   ListGroups v5+: [`runtime::GroupCoordinator::list_groups_filtered`].
//! - Errors with Kafka's messages: `InvalidRequest`, `InvalidRegularExpression` carry them;
//!   `UnsupportedAssignor(name)` is answered as "ServerAssignor {name} is not supported.
//!   Supported assignors: {group.consumer.assignors joined by ", "}.".
//!
//! # Share groups (KIP-932)
//!
//! - ShareGroupHeartbeat: [`runtime::GroupCoordinator::share_group_heartbeat`] with the
//!   request and the connection's client id and host (`/<ip>`). Kafka's refusals come back in
//!   the outcome's response with their messages; `Err` is for NOT_COORDINATOR, loading and a
//!   failed write. When the outcome carries `initialize`, answer the member first, then send
//!   InitializeShareGroupState for those share-partitions (start offset and group epoch as
//!   given) and report with [`runtime::GroupCoordinator::initialize_share_group_state`], or
//!   with [`runtime::GroupCoordinator::uninitialize_share_group_state`] when it failed.
//! - ShareGroupDescribe: [`runtime::GroupCoordinator::share_group_describe`] (assignor
//!   "simple").
//! - DeleteGroups: [`runtime::GroupCoordinator::prepare_share_groups_deletion`] first, then
//!   DeleteShareGroupState for what it returns, then
//!   [`runtime::GroupCoordinator::delete_groups`] for the groups whose state was deleted (and
//!   the other ids of the request).
//! - DescribeShareGroupOffsets for all topics:
//!   [`runtime::GroupCoordinator::share_group_initialized_partitions`] says which
//!   share-partitions to read. AlterShareGroupOffsets:
//!   [`runtime::GroupCoordinator::alter_share_group_offsets`], then InitializeShareGroupState
//!   and the same reports as after a heartbeat. DeleteShareGroupOffsets:
//!   [`runtime::GroupCoordinator::prepare_share_group_offsets_deletion`], DeleteShareGroupState,
//!   then [`runtime::GroupCoordinator::complete_share_group_offsets_deletion`].
//! - ListGroups lists share groups as type and protocol type "share"; JoinGroup to a share
//!   group's id is INCONSISTENT_GROUP_PROTOCOL; OffsetCommit, TxnOffsetCommit, OffsetDelete and
//!   ConsumerGroupHeartbeat are GROUP_ID_NOT_FOUND ("Group G is not a consumer group."), and
//!   OffsetFetch answers it as a group without offsets, as Kafka does.
//! - Per-group `share.session.timeout.ms`, `share.heartbeat.interval.ms` and
//!   `share.assignment.interval.ms`: [`GroupConfigSource::share_overrides`].
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod assignor;
pub mod config;
pub mod consumer_types;
pub mod core;
pub mod error;
pub mod placement;
pub mod records;
pub mod runtime;
pub mod share_types;
pub mod types;

pub use config::{
    GroupConfig, GroupConfigSource, GroupOverrides, MigrationPolicy, ShareGroupOverrides,
};
pub use error::GroupError;
