//! The authorization each API will need, as Kafka's authorizer sees it: an operation
//! (Kafka's `AclOperation`) on a resource type (Kafka's `ResourceType`).
//!
//! These are data only. Shale has no authorizer yet: nothing here is checked, every request
//! is answered as if every principal were allowed everything. The API table records, per
//! API, what Kafka's documentation ("Operations and Resources on Protocols") says it checks,
//! so that the security work has the list to enforce.

/// Kafka's `AclOperation`, the operations ACLs grant (the wildcard `All` and `Any` are ACL
/// patterns, not operations an API needs, and are left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

/// Kafka's `ResourceType`, the kinds of resource an ACL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
    DelegationToken,
    User,
}

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
