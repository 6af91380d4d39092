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
use shale_group::core::GroupState;
use shale_group::GroupError;
use shale_protocol::newer::delete_groups_response as v3;
use shale_protocol::{NewerResponse, Response};

use super::{code, code_of};
use crate::broker::Broker;
use crate::errors::delete_group_error_message;
use crate::request::RequestContext;

/// Group operations allowed without an authorizer: READ, DELETE, DESCRIBE.
const GROUP_ALL_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8);
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;
/// The only group type this coordinator has.
const GROUP_TYPE_CLASSIC: &str = "classic";

fn s(value: impl Into<String>) -> StrBytes {
    StrBytes::from_string(value.into())
}

pub async fn describe_groups(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let version = ctx.version();
    let operations = if version >= 3 && request.include_authorized_operations {
        GROUP_ALL_OPERATIONS
    } else {
        OPERATIONS_NOT_REQUESTED
    };
    let ids: Vec<String> = request.groups.iter().map(|g| g.0.to_string()).collect();
    let described = broker.groups.coordinator.describe_groups(ids).await;
    let groups = described
        .into_iter()
        .map(|g| {
            // Before v6 an unknown group is "Dead" without an error.
            let error = match g.error {
                Some(GroupError::GroupIdNotFound) if version < 6 => None,
                other => other,
            };
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
                .with_authorized_operations(operations)
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

pub async fn list_groups(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let version = ctx.version();
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
    let states: Vec<GroupState> = state_names
        .iter()
        .filter_map(|name| GroupState::parse(name))
        .collect();
    // A filter naming only unknown states or types matches nothing.
    let matches_nothing = (!state_names.is_empty() && states.is_empty())
        || (!type_names.is_empty()
            && !type_names
                .iter()
                .any(|t| t.eq_ignore_ascii_case(GROUP_TYPE_CLASSIC)));
    if matches_nothing {
        return ListGroupsResponse::default();
    }
    match broker.groups.coordinator.list_groups(&states).await {
        Ok(listed) => ListGroupsResponse::default().with_groups(
            listed
                .into_iter()
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
    let ids: Vec<String> = request
        .groups_names
        .iter()
        .map(|g| g.0.to_string())
        .collect();
    let results = broker.groups.coordinator.delete_groups(ids).await;
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
                .collect(),
        ),
    ))
}
