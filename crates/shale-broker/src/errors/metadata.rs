//! Metadata-controller errors, and the cluster checks of ApiVersions.

use kafka_protocol::ResponseError as E;
use shale_metadata::MetadataError;

/// Kafka error code and message for a metadata-controller error.
pub fn metadata_error_code(e: &MetadataError) -> (i16, String) {
    use MetadataError as M;
    let code = match e {
        M::TopicAlreadyExists(_) => E::TopicAlreadyExists,
        M::InvalidTopic(_) => E::InvalidTopicException,
        M::InvalidPartitions(_) => E::InvalidPartitions,
        M::InvalidReplicationFactor(_) => E::InvalidReplicationFactor,
        M::InvalidReplicaAssignment(_) => E::InvalidReplicaAssignment,
        M::InvalidConfig(_) => E::InvalidConfig,
        M::InvalidRequest(_) => E::InvalidRequest,
        M::PolicyViolation(_) => E::PolicyViolation,
        M::UnknownTopicOrPartition => E::UnknownTopicOrPartition,
        M::UnknownTopicId => E::UnknownTopicId,
        M::TopicDeletionDisabled => E::TopicDeletionDisabled,
        M::StaleBrokerEpoch(_) => E::StaleBrokerEpoch,
        M::BrokerIdNotRegistered(_) => E::BrokerIdNotRegistered,
        M::DuplicateBrokerRegistration(_) => E::DuplicateBrokerRegistration,
        M::InconsistentClusterId(_) => E::InconsistentClusterId,
        M::FencedLeaderEpoch(_) => E::FencedLeaderEpoch,
        M::InvalidUpdateVersion(_) => E::InvalidUpdateVersion,
        M::IneligibleReplica(_) => E::IneligibleReplica,
        M::NotLeaderOrFollower(_) => E::NotLeaderOrFollower,
        M::ElectionNotNeeded(_) => E::ElectionNotNeeded,
        M::PreferredLeaderNotAvailable(_) => E::PreferredLeaderNotAvailable,
        M::EligibleLeadersNotAvailable(_) => E::EligibleLeadersNotAvailable,
        M::NoReassignmentInProgress(_) => E::NoReassignmentInProgress,
        M::UnsupportedSaslMechanism(_) => E::UnsupportedSaslMechanism,
        M::UnacceptableCredential(_) => E::UnacceptableCredential,
        M::ResourceNotFound(_) => E::ResourceNotFound,
        M::DuplicateResource(_) => E::DuplicateResource,
        M::EmptySaltedPassword => E::UnknownServerError,
        M::NotController => E::NotController,
        M::RequestTimedOut => E::RequestTimedOut,
        M::ShutDown => E::NotController,
        M::Io(_) | M::Corrupt(_) | M::InconsistentStorage(_) => E::KafkaStorageError,
    };
    (code.code(), e.to_string())
}

/// Kafka's code for a topic id this broker does not know (OffsetCommit and OffsetFetch v10,
/// TxnOffsetCommit v6).
pub fn unknown_topic_id_code() -> i16 {
    metadata_error_code(&MetadataError::UnknownTopicId).0
}

/// What an ApiVersions v5 request's cluster id and node id say (KIP-1242).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterCheck {
    /// One of the two is given without the other.
    Unpaired,
    /// They name another cluster or another node: the client's metadata is stale.
    Stale,
}

pub fn cluster_check_error_code(check: ClusterCheck) -> i16 {
    match check {
        ClusterCheck::Unpaired => E::InvalidRequest.code(),
        ClusterCheck::Stale => E::RebootstrapRequired.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every metadata-controller error, with Kafka's number for it.
    #[test]
    fn every_metadata_error_has_kafka_code() {
        use MetadataError as M;
        let s = || "x".to_string();
        let cases = [
            (M::TopicAlreadyExists(s()), 36),
            (M::InvalidTopic(s()), 17),
            (M::InvalidPartitions(s()), 37),
            (M::InvalidReplicationFactor(s()), 38),
            (M::InvalidReplicaAssignment(s()), 39),
            (M::InvalidConfig(s()), 40),
            (M::InvalidRequest(s()), 42),
            (M::PolicyViolation(s()), 44),
            (M::UnknownTopicOrPartition, 3),
            (M::UnknownTopicId, 100),
            (M::TopicDeletionDisabled, 73),
            (M::StaleBrokerEpoch(s()), 77),
            (M::BrokerIdNotRegistered(s()), 102),
            (M::DuplicateBrokerRegistration(s()), 101),
            (M::InconsistentClusterId(s()), 104),
            (M::FencedLeaderEpoch(s()), 74),
            (M::InvalidUpdateVersion(s()), 95),
            (M::IneligibleReplica(s()), 107),
            (M::NotLeaderOrFollower(s()), 6),
            (M::ElectionNotNeeded(s()), 84),
            (M::PreferredLeaderNotAvailable(s()), 80),
            (M::EligibleLeadersNotAvailable(s()), 83),
            (M::NoReassignmentInProgress(s()), 85),
            (M::UnsupportedSaslMechanism(s()), 33),
            (M::UnacceptableCredential(s()), 93),
            (M::ResourceNotFound(s()), 91),
            (M::DuplicateResource(s()), 92),
            (M::EmptySaltedPassword, -1),
            (M::NotController, 41),
            (M::RequestTimedOut, 7),
            (M::ShutDown, 41),
            (M::InconsistentStorage(s()), 56),
            (M::Corrupt(s()), 56),
            (M::Io(s()), 56),
        ];
        for (error, code) in &cases {
            assert_eq!(metadata_error_code(error).0, *code, "{error:?}");
        }
        assert_eq!(unknown_topic_id_code(), 100);
    }

    #[test]
    fn cluster_checks_have_kafka_codes() {
        assert_eq!(cluster_check_error_code(ClusterCheck::Unpaired), 42);
        assert_eq!(cluster_check_error_code(ClusterCheck::Stale), 129);
    }
}
