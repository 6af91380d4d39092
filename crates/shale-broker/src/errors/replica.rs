//! The replica layer's refusals: the leader check of leader-only requests and the acks=all
//! wait for the ISR.

use kafka_protocol::ResponseError as E;
use shale_replica::{AckError, ReplicaError};

/// A leader-only request refused by the replica layer's leader check.
pub fn replica_error_code(e: &ReplicaError) -> i16 {
    match e {
        ReplicaError::UnknownTopicOrPartition => E::UnknownTopicOrPartition.code(),
        ReplicaError::UnknownTopicId => E::UnknownTopicId.code(),
        ReplicaError::NotLeaderOrFollower => E::NotLeaderOrFollower.code(),
        ReplicaError::FencedLeaderEpoch { .. } => E::FencedLeaderEpoch.code(),
        ReplicaError::UnknownLeaderEpoch { .. } => E::UnknownLeaderEpoch.code(),
        ReplicaError::NotEnoughReplicas { .. } => E::NotEnoughReplicas.code(),
    }
}

/// An acks=all wait that ended without the ISR's acknowledgement (0 when it had it).
pub fn ack_error_code(outcome: &Result<(), AckError>) -> i16 {
    match outcome {
        Ok(()) => 0,
        Err(AckError::NotLeaderOrFollower) => E::NotLeaderOrFollower.code(),
        Err(AckError::NotEnoughReplicasAfterAppend) => E::NotEnoughReplicasAfterAppend.code(),
        Err(AckError::TimedOut) => E::RequestTimedOut.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's numbers, pinned: a changed mapping fails here.
    #[test]
    fn every_variant_maps_to_kafkas_code() {
        let epochs = |request_epoch, leader_epoch| (request_epoch, leader_epoch);
        let (request_epoch, leader_epoch) = epochs(1, 2);
        let cases = [
            (ReplicaError::UnknownTopicOrPartition, 3),
            (ReplicaError::UnknownTopicId, 100),
            (ReplicaError::NotLeaderOrFollower, 6),
            (
                ReplicaError::FencedLeaderEpoch {
                    request_epoch,
                    leader_epoch,
                },
                74,
            ),
            (
                ReplicaError::UnknownLeaderEpoch {
                    request_epoch,
                    leader_epoch,
                },
                75,
            ),
            (
                ReplicaError::NotEnoughReplicas {
                    isr: 1,
                    min_insync_replicas: 2,
                },
                19,
            ),
        ];
        for (error, code) in cases {
            assert_eq!(replica_error_code(&error), code, "{error:?}");
        }
        assert_eq!(ack_error_code(&Ok(())), 0);
        assert_eq!(ack_error_code(&Err(AckError::NotLeaderOrFollower)), 6);
        assert_eq!(
            ack_error_code(&Err(AckError::NotEnoughReplicasAfterAppend)),
            20
        );
        assert_eq!(ack_error_code(&Err(AckError::TimedOut)), 7);
    }
}
