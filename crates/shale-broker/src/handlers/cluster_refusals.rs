//! The answers of requests refused by their cluster check before the handler runs
//! (`authorize [Operation on Cluster]` in `api_table.rs`), shaped as Kafka's
//! `getErrorResponse` of each request: `code` (CLUSTER_AUTHORIZATION_FAILED) at the top and on
//! every item the request named.

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::DescribeUserScramCredentialsResult;
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse, DescribeClientQuotasResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, CreateAclsRequest,
    CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse, DescribeAclsResponse,
    DescribeQuorumResponse, ElectLeadersRequest, ElectLeadersResponse,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};
use kafka_protocol::protocol::StrBytes;

/// Kafka's default message of CLUSTER_AUTHORIZATION_FAILED.
fn message() -> Option<StrBytes> {
    Some(StrBytes::from_static_str("Cluster authorization failed."))
}

pub fn describe_quorum(code: i16) -> DescribeQuorumResponse {
    DescribeQuorumResponse::default()
        .with_error_code(code)
        .with_error_message(message())
}

pub fn elect_leaders(request: &ElectLeadersRequest, code: i16) -> ElectLeadersResponse {
    let results = request
        .topic_partitions
        .iter()
        .flatten()
        .map(|t| {
            ReplicaElectionResult::default()
                .with_topic(t.topic.clone())
                .with_partition_result(
                    t.partitions
                        .iter()
                        .map(|p| {
                            PartitionResult::default()
                                .with_partition_id(*p)
                                .with_error_code(code)
                                .with_error_message(message())
                        })
                        .collect(),
                )
        })
        .collect();
    ElectLeadersResponse::default()
        .with_error_code(code)
        .with_replica_election_results(results)
}

pub fn alter_partition_reassignments(
    request: &AlterPartitionReassignmentsRequest,
    code: i16,
) -> AlterPartitionReassignmentsResponse {
    let responses = request
        .topics
        .iter()
        .map(|t| {
            ReassignableTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            ReassignablePartitionResponse::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                                .with_error_message(message())
                        })
                        .collect(),
                )
        })
        .collect();
    AlterPartitionReassignmentsResponse::default()
        .with_error_code(code)
        .with_error_message(message())
        .with_responses(responses)
}

pub fn list_partition_reassignments(
    request: &ListPartitionReassignmentsRequest,
    code: i16,
) -> ListPartitionReassignmentsResponse {
    let topics = request
        .topics
        .iter()
        .flatten()
        .map(|t| {
            OngoingTopicReassignment::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partition_indexes
                        .iter()
                        .map(|p| OngoingPartitionReassignment::default().with_partition_index(*p))
                        .collect(),
                )
        })
        .collect();
    ListPartitionReassignmentsResponse::default()
        .with_error_code(code)
        .with_error_message(message())
        .with_topics(topics)
}

pub fn describe_acls(code: i16) -> DescribeAclsResponse {
    DescribeAclsResponse::default()
        .with_error_code(code)
        .with_error_message(message())
}

pub fn create_acls(request: &CreateAclsRequest, code: i16) -> CreateAclsResponse {
    let result = AclCreationResult::default()
        .with_error_code(code)
        .with_error_message(message());
    CreateAclsResponse::default().with_results(vec![result; request.creations.len()])
}

pub fn delete_acls(request: &DeleteAclsRequest, code: i16) -> DeleteAclsResponse {
    let result = DeleteAclsFilterResult::default()
        .with_error_code(code)
        .with_error_message(message());
    DeleteAclsResponse::default().with_filter_results(vec![result; request.filters.len()])
}

// Kafka's brokers refuse the next two with `Errors.CLUSTER_AUTHORIZATION_FAILED.exception`,
// whose text is the code's default, which ApiError leaves out: no message.

/// One entry per entry of the request, its entity echoed (as Kafka's getErrorResponse).
pub fn alter_client_quotas(
    request: &AlterClientQuotasRequest,
    code: i16,
) -> AlterClientQuotasResponse {
    use kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
    AlterClientQuotasResponse::default().with_entries(
        request
            .entries
            .iter()
            .map(|e| {
                EntryData::default()
                    .with_error_code(code)
                    .with_error_message(message())
                    .with_entity(
                        e.entity
                            .iter()
                            .map(|d| {
                                EntityData::default()
                                    .with_entity_type(d.entity_type.clone())
                                    .with_entity_name(d.entity_name.clone())
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

pub fn describe_client_quotas(code: i16) -> DescribeClientQuotasResponse {
    DescribeClientQuotasResponse::default()
        .with_error_code(code)
        .with_error_message(None)
        .with_entries(None)
}

/// One result per user named, without the user's name (as Kafka's getErrorResponse).
pub fn describe_user_scram_credentials(
    request: &DescribeUserScramCredentialsRequest,
    code: i16,
) -> DescribeUserScramCredentialsResponse {
    let result = DescribeUserScramCredentialsResult::default()
        .with_error_code(code)
        .with_error_message(None);
    let named = request.users.as_ref().map_or(0, Vec::len);
    DescribeUserScramCredentialsResponse::default()
        .with_error_code(code)
        .with_error_message(None)
        .with_results(vec![result; named])
}

/// One result per distinct user of the deletions and upsertions, sorted by name.
pub fn alter_user_scram_credentials(
    request: &AlterUserScramCredentialsRequest,
    code: i16,
) -> AlterUserScramCredentialsResponse {
    let users: std::collections::BTreeSet<&StrBytes> = request
        .deletions
        .iter()
        .map(|d| &d.name)
        .chain(request.upsertions.iter().map(|u| &u.name))
        .collect();
    AlterUserScramCredentialsResponse::default().with_results(
        users
            .into_iter()
            .map(|user| {
                AlterUserScramCredentialsResult::default()
                    .with_user(user.clone())
                    .with_error_code(code)
                    .with_error_message(message())
            })
            .collect(),
    )
}
