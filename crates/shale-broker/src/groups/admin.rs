//! DescribeGroups v0-v6, ListGroups v0-v5, DeleteGroups v0-v3.

use std::sync::Arc;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::ResponseKind;
use kafka_protocol::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    GroupId, ListGroupsRequest, ListGroupsResponse,
};
use kafka_protocol::protocol::StrBytes;
use shale_group::GroupError;
use shale_protocol::newer::delete_groups_response as v3;
use shale_protocol::{NewerResponse, Response};

use super::{code, code_of};
use crate::authorization::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::broker::Broker;
use crate::errors::{authorization_failed_code, delete_group_error_message};
use crate::request::RequestContext;

const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

fn s(value: impl Into<String>) -> StrBytes {
    StrBytes::from_string(value.into())
}

pub async fn describe_groups(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let version = ctx.version();
    let authz = broker.authz(ctx);
    let include_operations = version >= 3 && request.include_authorized_operations;
    // DESCRIBE on each group: a refused one is answered GROUP_AUTHORIZATION_FAILED, empty.
    let (ids, refused): (Vec<String>, Vec<String>) = request
        .groups
        .iter()
        .map(|g| g.0.to_string())
        .partition(|g| authz.allows(AclOperation::Describe, ResourceType::Group, g));
    let described = broker.groups.coordinator.describe_groups(ids).await;
    let refused = refused.into_iter().map(|g| {
        DescribedGroup::default()
            .with_error_code(authorization_failed_code(ResourceType::Group))
            .with_group_id(GroupId(s(g)))
            .with_group_state(s(""))
            .with_protocol_type(s(""))
            .with_protocol_data(s(""))
            .with_authorized_operations(OPERATIONS_NOT_REQUESTED)
    });
    let groups = described
        .into_iter()
        .map(|g| {
            // Before v6 an unknown group is "Dead" without an error.
            let error = match g.error {
                Some(GroupError::GroupIdNotFound) if version < 6 => None,
                other => other,
            };
            let group_id = g.group_id.clone();
            DescribedGroup::default()
                .with_error_code(code_of(&error))
                .with_error_message(if version >= 6 {
                    error.as_ref().map(|e| s(e.to_string()))
                } else {
                    None
                })
                .with_group_id(GroupId(s(g.group_id)))
                .with_group_state(s(g.group_state))
                .with_protocol_type(s(g.protocol_type))
                .with_protocol_data(s(g.protocol_data))
                .with_members(
                    g.members
                        .into_iter()
                        .map(|m| {
                            DescribedGroupMember::default()
                                .with_member_id(s(m.member_id))
                                .with_group_instance_id(if version >= 4 {
                                    m.group_instance_id.map(s)
                                } else {
                                    None
                                })
                                .with_client_id(s(m.client_id))
                                .with_client_host(s(m.client_host))
                                .with_member_metadata(m.member_metadata)
                                .with_member_assignment(m.member_assignment)
                        })
                        .collect(),
                )
                .with_authorized_operations(if include_operations && error.is_none() {
                    authz.authorized_operations(ResourceType::Group, &group_id)
                } else {
                    OPERATIONS_NOT_REQUESTED
                })
        })
        .chain(refused)
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

/// With DESCRIBE on the cluster every group is listed; otherwise only the groups the principal
/// may DESCRIBE (never CLUSTER_AUTHORIZATION_FAILED), as Kafka lists them.
pub async fn list_groups(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let version = ctx.version();
    let authz = broker.authz(ctx);
    let every_group = authz.allows(AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME);
    let state_names: Vec<String> = if version >= 4 {
        request
            .states_filter
            .iter()
            .map(|v| v.to_string())
            .collect()
    } else {
        Vec::new()
    };
    let type_names: Vec<String> = if version >= 5 {
        request.types_filter.iter().map(|v| v.to_string()).collect()
    } else {
        Vec::new()
    };
    match broker
        .groups
        .coordinator
        .list_groups_filtered(&state_names, &type_names)
        .await
    {
        Ok(listed) => ListGroupsResponse::default().with_groups(
            listed
                .into_iter()
                .filter(|g| {
                    every_group
                        || authz.allows(AclOperation::Describe, ResourceType::Group, &g.group_id)
                })
                .map(|g| {
                    ListedGroup::default()
                        .with_group_id(GroupId(s(g.group_id)))
                        .with_protocol_type(s(g.protocol_type))
                        .with_group_state(s(g.group_state))
                        .with_group_type(s(g.group_type))
                })
                .collect(),
        ),
        Err(error) => ListGroupsResponse::default().with_error_code(code(&error)),
    }
}

/// DeleteGroups; from version 3 each result may carry a message (Kafka's types for it are
/// Shale's, kafka-protocol's lack the field).
pub async fn delete_groups(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DeleteGroupsRequest,
) -> Response {
    let authz = broker.authz(ctx);
    let mut ids: Vec<String> = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    for g in request.groups_names.iter().map(|g| g.0.to_string()) {
        if ids.contains(&g) || refused.contains(&g) {
            continue;
        }
        if authz.allows(AclOperation::Delete, ResourceType::Group, &g) {
            ids.push(g);
        } else {
            refused.push(g);
        }
    }
    // Share groups: their share-partitions' state goes first (Kafka's DeleteShareGroupState
    // before the group's tombstones); a group whose state could not be deleted stays.
    let state_failed = super::share::delete_share_state(broker, &ids).await;
    ids.retain(|g| !state_failed.iter().any(|(failed, _)| failed == g));
    let mut results = broker.groups.coordinator.delete_groups(ids).await;
    results.extend(state_failed.into_iter().map(|(group_id, error)| {
        shale_group::types::DeleteGroupResult {
            group_id,
            error: Some(error),
        }
    }));
    let refused_code = authorization_failed_code(ResourceType::Group);
    if ctx.version() >= 3 {
        return Response::Newer(NewerResponse::DeleteGroups(v3::DeleteGroupsResponse {
            throttle_time_ms: 0,
            results: results
                .into_iter()
                .map(|r| v3::DeletableGroupResult {
                    error_code: code_of(&r.error),
                    error_message: r
                        .error
                        .as_ref()
                        .and_then(delete_group_error_message)
                        .map(StrBytes::from_static_str),
                    group_id: s(r.group_id),
                })
                .chain(refused.into_iter().map(|g| v3::DeletableGroupResult {
                    error_code: refused_code,
                    error_message: None,
                    group_id: s(g),
                }))
                .collect(),
        }));
    }
    Response::Kafka(ResponseKind::DeleteGroups(
        DeleteGroupsResponse::default().with_results(
            results
                .into_iter()
                .map(|r| {
                    DeletableGroupResult::default()
                        .with_group_id(GroupId(s(r.group_id)))
                        .with_error_code(code_of(&r.error))
                })
                .chain(refused.into_iter().map(|g| {
                    DeletableGroupResult::default()
                        .with_group_id(GroupId(s(g)))
                        .with_error_code(refused_code)
                }))
                .collect(),
        ),
    ))
}
