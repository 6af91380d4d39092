//! Group-coordinator errors.

use kafka_protocol::ResponseError as E;
use shale_group::GroupError;

/// Kafka error code and message for a group-coordinator error.
pub fn group_error_code(e: &GroupError) -> (i16, String) {
    use GroupError as G;
    let code = match e {
        G::UnknownMemberId => E::UnknownMemberId,
        G::IllegalGeneration => E::IllegalGeneration,
        G::RebalanceInProgress => E::RebalanceInProgress,
        G::MemberIdRequired { .. } => E::MemberIdRequired,
        G::FencedInstanceId => E::FencedInstanceId,
        G::InconsistentGroupProtocol => E::InconsistentGroupProtocol,
        G::GroupMaxSizeReached => E::GroupMaxSizeReached,
        G::InvalidSessionTimeout => E::InvalidSessionTimeout,
        G::GroupIdNotFound | G::NotConsumerGroup => E::GroupIdNotFound,
        G::NonEmptyGroup => E::NonEmptyGroup,
        G::CoordinatorLoadInProgress => E::CoordinatorLoadInProgress,
        G::NotCoordinator => E::NotCoordinator,
        G::CoordinatorNotAvailable => E::CoordinatorNotAvailable,
        G::UnknownTopicOrPartition => E::UnknownTopicOrPartition,
        G::OffsetMetadataTooLarge => E::OffsetMetadataTooLarge,
        G::UnstableOffsetCommit => E::UnstableOffsetCommit,
        G::GroupSubscribedToTopic => E::GroupSubscribedToTopic,
        G::InvalidGroupId => E::InvalidGroupId,
        G::InvalidCommitOffsetSize => E::InvalidCommitOffsetSize,
        G::StaleMemberEpoch => E::StaleMemberEpoch,
        G::FencedMemberEpoch => E::FencedMemberEpoch,
        G::UnreleasedInstanceId => E::UnreleasedInstanceId,
        G::UnsupportedAssignor(_) => E::UnsupportedAssignor,
        G::InvalidRegularExpression(_) => E::InvalidRegularExpression,
        G::InvalidRequest(_) => E::InvalidRequest,
        G::InvalidConfig(_) => E::InvalidConfig,
        G::UnsupportedVersion(_) => E::UnsupportedVersion,
        G::UnknownServerError(_) => E::UnknownServerError,
    };
    (code.code(), e.to_string())
}

/// The message a DeleteGroups v3 result carries with its error. Kafka 4.4 gives one only
/// when the request failed as a whole at the coordinator (its exception's message); a
/// group's own outcome (not empty, not found) has none.
pub fn delete_group_error_message(e: &GroupError) -> Option<&'static str> {
    use GroupError as G;
    match e {
        G::NotCoordinator => Some("This is not the correct coordinator."),
        G::CoordinatorNotAvailable => Some("The coordinator is not available."),
        G::CoordinatorLoadInProgress => {
            Some("The coordinator is loading and hence can't process requests.")
        }
        G::UnknownServerError(_) => {
            Some("The server experienced an unexpected error when processing the request.")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every group-coordinator error, with Kafka's number for it.
    #[test]
    fn every_group_error_has_kafka_code() {
        use GroupError as G;
        let cases = [
            (G::UnknownMemberId, 25),
            (G::IllegalGeneration, 22),
            (G::RebalanceInProgress, 27),
            (
                G::MemberIdRequired {
                    member_id: "m".into(),
                },
                79,
            ),
            (G::FencedInstanceId, 82),
            (G::InconsistentGroupProtocol, 23),
            (G::GroupMaxSizeReached, 81),
            (G::InvalidSessionTimeout, 26),
            (G::GroupIdNotFound, 69),
            (G::NotConsumerGroup, 69),
            (G::NonEmptyGroup, 68),
            (G::CoordinatorLoadInProgress, 14),
            (G::NotCoordinator, 16),
            (G::CoordinatorNotAvailable, 15),
            (G::UnknownTopicOrPartition, 3),
            (G::OffsetMetadataTooLarge, 12),
            (G::UnstableOffsetCommit, 88),
            (G::GroupSubscribedToTopic, 86),
            (G::InvalidGroupId, 24),
            (G::InvalidCommitOffsetSize, 28),
            (G::StaleMemberEpoch, 113),
            (G::FencedMemberEpoch, 110),
            (G::UnreleasedInstanceId, 111),
            (G::UnsupportedAssignor("x".into()), 112),
            (G::InvalidRegularExpression("x".into()), 128),
            (G::InvalidRequest("x".into()), 42),
            (G::InvalidConfig("x".into()), 40),
            (G::UnsupportedVersion("x".into()), 35),
            (G::UnknownServerError("x".into()), -1),
        ];
        for (error, code) in &cases {
            assert_eq!(group_error_code(error).0, *code, "{error:?}");
        }
    }
}
