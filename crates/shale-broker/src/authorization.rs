//! The authorization each API needs, as Kafka's authorizer sees it: an operation (Kafka's
//! `AclOperation`) on a resource type (Kafka's `ResourceType`), and how Shale enforces it.
//!
//! The API table records, per API, what Kafka's documentation ("Operations and Resources on
//! Protocols") says it checks (`access`) and where Shale checks it (`Enforcement`). The rules
//! that decide a check are the authorizer's (`authorizer/`).

/// Kafka's `AclOperation`, the operations ACLs grant (the wildcard `All` and `Any` are ACL
/// patterns, not operations an API needs, and are left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AclOperation {
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
    CreateTokens,
    DescribeTokens,
}

impl AclOperation {
    /// Kafka's wire code (`AclOperation.code()`).
    pub const fn code(self) -> i8 {
        match self {
            AclOperation::Read => 3,
            AclOperation::Write => 4,
            AclOperation::Create => 5,
            AclOperation::Delete => 6,
            AclOperation::Alter => 7,
            AclOperation::Describe => 8,
            AclOperation::ClusterAction => 9,
            AclOperation::DescribeConfigs => 10,
            AclOperation::AlterConfigs => 11,
            AclOperation::IdempotentWrite => 12,
            AclOperation::CreateTokens => 13,
            AclOperation::DescribeTokens => 14,
        }
    }
}

/// Kafka's `ResourceType`, the kinds of resource an ACL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
    DelegationToken,
    User,
}

impl ResourceType {
    /// Kafka's wire code (`ResourceType.code()`).
    pub const fn code(self) -> i8 {
        match self {
            ResourceType::Topic => 2,
            ResourceType::Group => 3,
            ResourceType::Cluster => 4,
            ResourceType::TransactionalId => 5,
            ResourceType::DelegationToken => 6,
            ResourceType::User => 7,
        }
    }

    /// The operations Kafka reports in an `authorized_operations` bitfield for this type
    /// (`AclEntry.supportedOperations`).
    pub const fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
        }
    }

    /// The `authorized_operations` bitfield when every supported operation is allowed (no
    /// authorizer): bit `code` set per operation, as Kafka's `Utils.to32BitField`.
    pub fn all_operations_bits(self) -> i32 {
        operations_bits(self.supported_operations().iter().copied())
    }
}

/// Kafka's `Utils.to32BitField` of operation codes.
pub fn operations_bits(operations: impl IntoIterator<Item = AclOperation>) -> i32 {
    operations
        .into_iter()
        .fold(0, |bits, op| bits | (1 << op.code()))
}

/// Kafka's name of the one cluster resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// One check an API needs: `operation` on a resource of type `resource`. Where Kafka makes
/// a check conditional (a transactional producer, a follower's fetch), the API table says so
/// in a comment beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub operation: AclOperation,
    pub resource: ResourceType,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {:?}", self.operation, self.resource)
    }
}

/// Where an API's `access` is checked when an authorizer is configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforcement {
    /// Kafka checks nothing (ApiVersions and the SASL exchange come before authorization).
    Nothing,
    /// The handler checks each resource as Kafka's KafkaApis does (per topic, group,
    /// transactional id), answering that resource's authorization error.
    InHandler,
    /// Dispatch checks this operation on the cluster before the handler runs; a refused
    /// request is answered with the API's error response and never reaches the handler.
    Cluster(AclOperation),
}

impl std::fmt::Display for Enforcement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Enforcement::Nothing => write!(f, "none"),
            Enforcement::InHandler => write!(f, "per resource, in the handler"),
            Enforcement::Cluster(op) => write!(f, "{op:?} on Cluster, before the handler"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas() {
        assert_eq!(AclOperation::Read.code(), 3);
        assert_eq!(AclOperation::DescribeTokens.code(), 14);
        assert_eq!(ResourceType::Topic.code(), 2);
        assert_eq!(ResourceType::User.code(), 7);
    }

    /// The bitfields Kafka answers when no authorizer is configured.
    #[test]
    fn all_operations_bits_match_kafka() {
        // READ..ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS.
        assert_eq!(ResourceType::Topic.all_operations_bits(), 0b1101_1111_1000);
        // CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
        // IDEMPOTENT_WRITE.
        assert_eq!(
            ResourceType::Cluster.all_operations_bits(),
            0b1_1111_1010_0000
        );
        // READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
        assert_eq!(ResourceType::Group.all_operations_bits(), 0b1101_0100_1000);
    }
}
