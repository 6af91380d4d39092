//! The coordinator's errors: one variant per outcome the classic and consumer protocols can refuse with.

use thiserror::Error;

/// An error answered to a client. The broker chooses the Kafka error code of each variant.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GroupError {
    #[error("the member id is not known to the group")]
    UnknownMemberId,
    #[error("the generation id is not the group's current generation")]
    IllegalGeneration,
    #[error("the group is rebalancing")]
    RebalanceInProgress,
    /// JoinGroup v4+ without a member id: the client must rejoin with `member_id`.
    #[error("a member id is required; rejoin with {member_id}")]
    MemberIdRequired { member_id: String },
    #[error("another member with the same group.instance.id has joined")]
    FencedInstanceId,
    #[error("the protocol type or protocols do not match the group's")]
    InconsistentGroupProtocol,
    #[error("the group has reached group.max.size")]
    GroupMaxSizeReached,
    #[error("the session timeout is outside the broker's allowed range")]
    InvalidSessionTimeout,
    #[error("the group does not exist")]
    GroupIdNotFound,
    /// GROUP_ID_NOT_FOUND for an id another type of group holds (Kafka's "Group G is not a
    /// consumer group.").
    #[error("the group is not a consumer group")]
    NotConsumerGroup,
    #[error("the group is not empty")]
    NonEmptyGroup,
    #[error("the coordinator is loading the group's partition")]
    CoordinatorLoadInProgress,
    #[error("this broker is not the group's coordinator")]
    NotCoordinator,
    #[error("the coordinator is not available")]
    CoordinatorNotAvailable,
    #[error("the topic or partition does not exist")]
    UnknownTopicOrPartition,
    #[error("the offset metadata is larger than offset.metadata.max.bytes")]
    OffsetMetadataTooLarge,
    #[error("a transactional offset commit is pending for the partition")]
    UnstableOffsetCommit,
    #[error("the group is subscribed to the topic")]
    GroupSubscribedToTopic,
    #[error("the group id is invalid")]
    InvalidGroupId,
    #[error("the request is too large to be written")]
    InvalidCommitOffsetSize,
    /// Consumer protocol: the member's epoch is older than the coordinator's (it must wait).
    #[error("the member epoch is stale")]
    StaleMemberEpoch,
    /// Consumer protocol: the member epoch is not one the coordinator gave this member.
    #[error("the member epoch is fenced")]
    FencedMemberEpoch,
    /// Consumer protocol: a static member's id is still held by the previous instance.
    #[error("the static member's previous instance has not left the group")]
    UnreleasedInstanceId,
    #[error("the assignor {0} is not supported by the coordinator")]
    UnsupportedAssignor(String),
    #[error("invalid regular expression: {0}")]
    InvalidRegularExpression(String),
    /// A request the protocol does not allow, with the reason Kafka gives.
    #[error("{0}")]
    InvalidRequest(String),
    /// A group config (set on the GROUP resource) that is not valid.
    #[error("{0}")]
    InvalidConfig(String),
    /// The request's version cannot be used for this (e.g. OffsetCommit before v9 from a
    /// consumer-protocol member), with Kafka's message.
    #[error("{0}")]
    UnsupportedVersion(String),
    #[error("unexpected server error: {0}")]
    UnknownServerError(String),
}
