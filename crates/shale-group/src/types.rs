//! Domain requests and responses. They mirror the fields of the Kafka messages; the broker
//! converts between them and the wire types (and drops fields a version does not have).

use bytes::Bytes;

use crate::error::GroupError;

/// A protocol a member supports, with its metadata (for "consumer": the subscription).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupProtocol {
    pub name: String,
    pub metadata: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupRequest {
    pub group_id: String,
    pub session_timeout_ms: i32,
    /// v0 has none: the broker passes the session timeout, as Kafka does.
    pub rebalance_timeout_ms: i32,
    /// Empty for a member joining for the first time.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub protocol_type: String,
    pub protocols: Vec<JoinGroupProtocol>,
    pub reason: Option<String>,
    /// From the request header.
    pub client_id: String,
    /// The client's address as Kafka prints it (`/127.0.0.1`).
    pub client_host: String,
    /// True for JoinGroup v4+: a new dynamic member first gets MEMBER_ID_REQUIRED.
    pub require_known_member_id: bool,
    /// True for JoinGroup v9+ (KIP-814): a static leader rejoining a stable group gets the
    /// members with `skip_assignment`.
    pub supports_skip_assignment: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupResponse {
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    /// v9+: the static leader rejoined a stable group; it must not compute a new assignment.
    pub skip_assignment: bool,
    pub member_id: String,
    /// All members' metadata for the leader, empty for the others.
    pub members: Vec<JoinGroupMember>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupAssignment {
    pub member_id: String,
    pub assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+; checked when present.
    pub protocol_type: Option<String>,
    /// v5+; checked when present.
    pub protocol_name: Option<String>,
    /// The leader's assignments; empty for followers.
    pub assignments: Vec<SyncGroupAssignment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupResponse {
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

/// A member leaving; v0-v2 send exactly one with `group_instance_id: None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeavingMember {
    /// Empty when an admin removes a static member by instance id.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupRequest {
    pub group_id: String,
    pub members: Vec<LeavingMember>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveMemberResult {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub error: Option<GroupError>,
}

/// Per-member results (v3+). For v0-v2 the broker answers the single member's error at the
/// top level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupResponse {
    pub members: Vec<LeaveMemberResult>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitPartition {
    pub partition_index: i32,
    pub committed_offset: i64,
    /// -1 when unknown.
    pub committed_leader_epoch: i32,
    pub committed_metadata: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitTopic {
    pub name: String,
    pub partitions: Vec<OffsetCommitPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    pub group_id: String,
    /// -1 for simple consumers and admin tools.
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v2-v4 `retention_time_ms`; -1 uses the broker's retention.
    pub retention_time_ms: i64,
    /// True for OffsetCommit v9+: a commit with a generation to a group that does not exist
    /// answers GROUP_ID_NOT_FOUND (older versions: ILLEGAL_GENERATION).
    pub reports_missing_group: bool,
    pub topics: Vec<OffsetCommitTopic>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionResult {
    pub partition_index: i32,
    pub error: Option<GroupError>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitionResults {
    pub name: String,
    pub partitions: Vec<PartitionResult>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitResponse {
    pub topics: Vec<TopicPartitionResults>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchTopic {
    pub name: String,
    pub partition_indexes: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequest {
    pub group_id: String,
    /// None: every committed partition of the group.
    pub topics: Option<Vec<OffsetFetchTopic>>,
    pub require_stable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchPartition {
    pub partition_index: i32,
    /// -1 when nothing is committed.
    pub committed_offset: i64,
    pub committed_leader_epoch: i32,
    /// Empty when nothing is committed.
    pub metadata: String,
    pub error: Option<GroupError>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchTopicResult {
    pub name: String,
    pub partitions: Vec<OffsetFetchPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    pub topics: Vec<OffsetFetchTopicResult>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteTopic {
    pub name: String,
    pub partition_indexes: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteRequest {
    pub group_id: String,
    pub topics: Vec<OffsetDeleteTopic>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteResponse {
    pub topics: Vec<TopicPartitionResults>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Only while the group is Stable (as Kafka), otherwise empty.
    pub member_metadata: Bytes,
    pub member_assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    pub group_id: String,
    /// GROUP_ID_NOT_FOUND for an unknown group (DescribeGroups v6+); older versions answer
    /// state "Dead" with no error.
    pub error: Option<GroupError>,
    /// Kafka's state name: "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead".
    pub group_state: String,
    pub protocol_type: String,
    /// The selected protocol while Stable, otherwise empty.
    pub protocol_data: String,
    pub members: Vec<DescribedMember>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    pub group_state: String,
    /// "classic" or "consumer" (Kafka's group types).
    pub group_type: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteGroupResult {
    pub group_id: String,
    pub error: Option<GroupError>,
}
