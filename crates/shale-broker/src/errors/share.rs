//! Share-group errors: share sessions, share-partitions and the share state their leader
//! reads and writes through the share coordinator.

use kafka_protocol::ResponseError as E;
use shale_share::coordinator::{InvalidRequest, ShareStateError};
use shale_share::partition::SharePartitionError;
use shale_share::session::ShareSessionError;

use crate::share::error::{LeaderError, PersisterError, ShareCoordinatorError};

/// Kafka's error code and message for a refused share session part of a ShareFetch or
/// ShareAcknowledge (a top-level error of the response).
pub fn share_session_error_code(e: &ShareSessionError) -> (i16, String) {
    let code = match e {
        ShareSessionError::InvalidRequest(_) => E::InvalidRequest,
        ShareSessionError::NotFound { .. } => E::ShareSessionNotFound,
        ShareSessionError::InvalidEpoch { .. } => E::InvalidShareSessionEpoch,
        ShareSessionError::LimitReached(_) => E::ShareSessionLimitReached,
    };
    (code.code(), e.to_string())
}

/// Kafka's error code of a share coordinator's refusal of one share-partition's state.
pub fn share_state_error_code(e: &ShareStateError) -> i16 {
    let code = match e {
        ShareStateError::InvalidRequest(_) => E::InvalidRequest,
        ShareStateError::FencedLeaderEpoch => E::FencedLeaderEpoch,
        ShareStateError::FencedStateEpoch => E::FencedStateEpoch,
        ShareStateError::UnknownTopicOrPartition => E::UnknownTopicOrPartition,
        ShareStateError::CoordinatorNotAvailable => E::CoordinatorNotAvailable,
        ShareStateError::UnknownServerError(_) => E::UnknownServerError,
    };
    code.code()
}

/// Kafka's error code when the broker's share coordinator could not run a request.
pub fn share_coordinator_error_code(e: &ShareCoordinatorError) -> i16 {
    let code = match e {
        ShareCoordinatorError::NotCoordinator => E::NotCoordinator,
        ShareCoordinatorError::LoadInProgress => E::CoordinatorLoadInProgress,
        ShareCoordinatorError::WriteFailed(_) => E::UnknownServerError,
    };
    code.code()
}

/// Kafka's error code and message when a share state request failed.
pub fn persister_error_code(e: &PersisterError) -> (i16, String) {
    let code = match e {
        PersisterError::State(state) => share_state_error_code(state),
        PersisterError::Coordinator(c) => share_coordinator_error_code(c),
        PersisterError::Unavailable => E::CoordinatorNotAvailable.code(),
        PersisterError::Peer { code, .. } => *code,
    };
    (code, e.to_string())
}

/// Kafka's error code and message of a share-partition that cannot be served here now.
pub fn leader_error_code(e: &LeaderError) -> (i16, String) {
    let code = match e {
        LeaderError::NotLeader => E::NotLeaderOrFollower.code(),
        LeaderError::UnknownTopicOrPartition => E::UnknownTopicOrPartition.code(),
        LeaderError::State(p) => return persister_error_code(p),
        LeaderError::InvalidState(_) => E::UnknownServerError.code(),
    };
    (code, e.to_string())
}

/// Kafka's error code of a share-partition's refusal of acknowledgements.
pub fn share_partition_error_code(e: &SharePartitionError) -> (i16, String) {
    let code = match e {
        SharePartitionError::InvalidRequest(_) => E::InvalidRequest,
        SharePartitionError::InvalidRecordState(_) => E::InvalidRecordState,
        SharePartitionError::InvalidPersistedState(_) => E::UnknownServerError,
        SharePartitionError::StartOffsetUnknown => E::UnknownServerError,
    };
    (code.code(), e.to_string())
}

/// A peer share coordinator's per-partition error, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareStateRefusal {
    State(ShareStateError),
    Coordinator(ShareCoordinatorError),
}

/// Reads a peer's per-partition error code (and message) back; `None` for a code a share
/// coordinator does not answer.
pub fn share_state_refusal_from_code(code: i16, message: &str) -> Option<ShareStateRefusal> {
    use ShareStateRefusal as R;
    let invalid = [
        InvalidRequest::NegativePartitionId,
        InvalidRequest::NegativeLeaderEpoch,
        InvalidRequest::NegativeStateEpoch,
        InvalidRequest::WriteUninitialized,
        InvalidRequest::ReadUninitialized,
    ];
    Some(match code {
        c if c == E::NotCoordinator.code() => R::Coordinator(ShareCoordinatorError::NotCoordinator),
        c if c == E::CoordinatorLoadInProgress.code() => {
            R::Coordinator(ShareCoordinatorError::LoadInProgress)
        }
        c if c == E::CoordinatorNotAvailable.code() => {
            R::State(ShareStateError::CoordinatorNotAvailable)
        }
        c if c == E::FencedLeaderEpoch.code() => R::State(ShareStateError::FencedLeaderEpoch),
        c if c == E::FencedStateEpoch.code() => R::State(ShareStateError::FencedStateEpoch),
        c if c == E::UnknownTopicOrPartition.code() => {
            R::State(ShareStateError::UnknownTopicOrPartition)
        }
        c if c == E::UnknownServerError.code() => {
            R::State(ShareStateError::UnknownServerError(message.to_string()))
        }
        c if c == E::InvalidRequest.code() => R::State(ShareStateError::InvalidRequest(
            invalid.into_iter().find(|i| i.to_string() == message)?,
        )),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_errors_have_kafkas_codes() {
        let code = |e: ShareSessionError| share_session_error_code(&e).0;
        assert_eq!(code(ShareSessionError::InvalidRequest("x".into())), 42);
        assert_eq!(
            code(ShareSessionError::NotFound {
                group_id: "g".into(),
                member_id: "m".into()
            }),
            122
        );
        assert_eq!(
            code(ShareSessionError::InvalidEpoch {
                expected: 2,
                given: 1
            }),
            123
        );
        assert_eq!(code(ShareSessionError::LimitReached(1)), 133);
    }

    #[test]
    fn state_errors_read_back_as_written() {
        let all = [
            ShareStateError::InvalidRequest(InvalidRequest::ReadUninitialized),
            ShareStateError::FencedLeaderEpoch,
            ShareStateError::FencedStateEpoch,
            ShareStateError::UnknownTopicOrPartition,
            ShareStateError::CoordinatorNotAvailable,
            ShareStateError::UnknownServerError("disk".into()),
        ];
        for e in all {
            let code = share_state_error_code(&e);
            assert_eq!(
                share_state_refusal_from_code(code, &e.message()),
                Some(ShareStateRefusal::State(e.clone())),
                "{e:?}"
            );
        }
        assert_eq!(
            share_state_error_code(&ShareStateError::FencedStateEpoch),
            124
        );
        assert_eq!(
            share_coordinator_error_code(&ShareCoordinatorError::LoadInProgress),
            14
        );
        assert_eq!(share_state_refusal_from_code(42, "something else"), None);
    }
}
