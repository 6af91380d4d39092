//! The one place where domain errors of the lower layers become Kafka error codes (and where a
//! code another broker answered is read back into a domain error). The library crates say what
//! happened; every choice of a Kafka code is here, one file per domain, each with a test that
//! pins every variant to Kafka's number.

mod authorization;
mod group;
mod log;
mod metadata;
mod quota;
mod refusal;
mod replica;
mod sasl;
mod share;
mod txn;

pub use authorization::{
    authorization_failed_code, cluster_authorization_failed_code, operation_not_attempted_code,
    security_disabled_code, unknown_server_error_code,
};
pub use group::{delete_group_error_message, group_error_code};
pub use log::{append_error_code, append_refusal, log_error_code, producer_error_code};
pub use metadata::{
    cluster_check_error_code, metadata_error_code, unknown_topic_id_code, ClusterCheck,
};
pub use quota::{quota_error, quota_filter_error_code, QuotaRefusal};
pub use refusal::Refusal;
pub use replica::{ack_error_code, replica_error_code};
pub use sasl::{sasl_error_code, SaslRefusal};
pub use share::{
    leader_error_code, persister_error_code, share_coordinator_error_code,
    share_partition_error_code, share_session_error_code, share_state_error_code,
    share_state_refusal_from_code, ShareStateRefusal,
};
pub use txn::{
    invalid_pattern_error_code, peer_verification_error, txn_coordinator_error_code,
    verification_error_code, verification_refusal, VerificationError,
};

#[cfg(test)]
mod tests {
    use super::*;
    use shale_group::GroupError;
    use shale_log::LogError;
    use shale_metadata::MetadataError;
    use shale_txn::ProducerStateError;

    #[test]
    fn representative_codes() {
        assert_eq!(log_error_code(&LogError::CorruptMessage("x".into())).0, 2);
        assert_eq!(
            log_error_code(&LogError::MessageTooLarge {
                size_bytes: 2,
                limit_bytes: 1
            })
            .0,
            10
        );
        assert_eq!(
            log_error_code(&LogError::OffsetOutOfRange {
                requested: 9,
                log_start: 0,
                log_end: 1
            })
            .0,
            1
        );
        assert_eq!(
            log_error_code(&LogError::Storage(std::io::Error::other("ENOSPC"))).0,
            56
        );
        assert_eq!(
            metadata_error_code(&MetadataError::TopicAlreadyExists("t".into())).0,
            36
        );
        assert_eq!(
            metadata_error_code(&MetadataError::InvalidReplicationFactor("r".into())).0,
            38
        );
        assert_eq!(
            metadata_error_code(&MetadataError::InvalidConfig("c".into())).0,
            40
        );
        assert_eq!(group_error_code(&GroupError::NonEmptyGroup).0, 68);
        assert_eq!(
            group_error_code(&GroupError::MemberIdRequired {
                member_id: "m".into()
            })
            .0,
            79
        );
        assert_eq!(
            group_error_code(&GroupError::CoordinatorLoadInProgress).0,
            14
        );
        assert_eq!(
            producer_error_code(&ProducerStateError::OutOfOrderSequence {
                producer_id: 1,
                producer_epoch: 0,
                incoming_sequence: 5,
                last_sequence: 1,
                current_epoch: 0
            })
            .0,
            45
        );
    }
}
