//! The coordinator's errors: one variant per Kafka error code the classic protocol can return.

use thiserror::Error;

/// An error answered to a client. The broker maps each variant to its Kafka error code
/// ([`GroupError::kafka_error_code`] gives the code Kafka uses).
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
    #[error("unexpected server error: {0}")]
    UnknownServerError(String),
}

impl GroupError {
    /// The Kafka protocol error code of this error.
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            GroupError::UnknownServerError(_) => -1,
            GroupError::UnknownTopicOrPartition => 3,
            GroupError::OffsetMetadataTooLarge => 12,
            GroupError::CoordinatorLoadInProgress => 14,
            GroupError::CoordinatorNotAvailable => 15,
            GroupError::NotCoordinator => 16,
            GroupError::IllegalGeneration => 22,
            GroupError::InconsistentGroupProtocol => 23,
            GroupError::InvalidGroupId => 24,
            GroupError::UnknownMemberId => 25,
            GroupError::InvalidSessionTimeout => 26,
            GroupError::RebalanceInProgress => 27,
            GroupError::InvalidCommitOffsetSize => 28,
            GroupError::NonEmptyGroup => 68,
            GroupError::GroupIdNotFound => 69,
            GroupError::MemberIdRequired { .. } => 79,
            GroupError::GroupMaxSizeReached => 81,
            GroupError::FencedInstanceId => 82,
            GroupError::GroupSubscribedToTopic => 86,
            GroupError::UnstableOffsetCommit => 88,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GroupError;

    #[test]
    fn codes_match_kafka() {
        let cases = [
            (GroupError::UnknownMemberId, 25),
            (GroupError::IllegalGeneration, 22),
            (GroupError::RebalanceInProgress, 27),
            (
                GroupError::MemberIdRequired {
                    member_id: "m".into(),
                },
                79,
            ),
            (GroupError::FencedInstanceId, 82),
            (GroupError::InconsistentGroupProtocol, 23),
            (GroupError::GroupMaxSizeReached, 81),
            (GroupError::InvalidSessionTimeout, 26),
            (GroupError::GroupIdNotFound, 69),
            (GroupError::NonEmptyGroup, 68),
            (GroupError::CoordinatorLoadInProgress, 14),
            (GroupError::NotCoordinator, 16),
            (GroupError::CoordinatorNotAvailable, 15),
            (GroupError::UnknownTopicOrPartition, 3),
            (GroupError::OffsetMetadataTooLarge, 12),
            (GroupError::UnstableOffsetCommit, 88),
            (GroupError::GroupSubscribedToTopic, 86),
            (GroupError::InvalidGroupId, 24),
        ];
        for (error, code) in cases {
            assert_eq!(error.kafka_error_code(), code, "{error:?}");
        }
    }
}
