//! The codes of refused authorization checks, and of the ACL APIs without an authorizer.

use kafka_protocol::ResponseError as E;

use crate::authorization::ResourceType;

/// Kafka's code for a check refused on a resource of this type: TOPIC_, GROUP_, CLUSTER_,
/// TRANSACTIONAL_ID_ and DELEGATION_TOKEN_AUTHORIZATION_FAILED (a USER resource is checked
/// for delegation tokens).
pub fn authorization_failed_code(resource: ResourceType) -> i16 {
    match resource {
        ResourceType::Topic => E::TopicAuthorizationFailed,
        ResourceType::Group => E::GroupAuthorizationFailed,
        ResourceType::Cluster => E::ClusterAuthorizationFailed,
        ResourceType::TransactionalId => E::TransactionalIdAuthorizationFailed,
        ResourceType::DelegationToken | ResourceType::User => E::DelegationTokenAuthorizationFailed,
    }
    .code()
}

/// CLUSTER_AUTHORIZATION_FAILED, the answer of a request refused on the cluster.
pub fn cluster_authorization_failed_code() -> i16 {
    authorization_failed_code(ResourceType::Cluster)
}

/// SECURITY_DISABLED: an ACL request to a broker without an authorizer.
pub fn security_disabled_code() -> i16 {
    E::SecurityDisabled.code()
}

/// UNKNOWN_SERVER_ERROR: an ACL creation Kafka cannot even represent fails its whole request.
pub fn unknown_server_error_code() -> i16 {
    E::UnknownServerError.code()
}

/// OPERATION_NOT_ATTEMPTED: the partitions of an AddPartitionsToTxn that were not refused,
/// when others were.
pub fn operation_not_attempted_code() -> i16 {
    E::OperationNotAttempted.code()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas() {
        assert_eq!(authorization_failed_code(ResourceType::Topic), 29);
        assert_eq!(authorization_failed_code(ResourceType::Group), 30);
        assert_eq!(authorization_failed_code(ResourceType::Cluster), 31);
        assert_eq!(authorization_failed_code(ResourceType::TransactionalId), 53);
        assert_eq!(authorization_failed_code(ResourceType::DelegationToken), 65);
        assert_eq!(authorization_failed_code(ResourceType::User), 65);
        assert_eq!(cluster_authorization_failed_code(), 31);
        assert_eq!(security_disabled_code(), 54);
        assert_eq!(operation_not_attempted_code(), 55);
        assert_eq!(unknown_server_error_code(), -1);
    }
}
