//! JoinGroup v0-v9, SyncGroup v0-v5, Heartbeat v0-v4, LeaveGroup v0-v5.

use std::sync::Arc;

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;
use shale_group::types as domain;
use shale_group::GroupError;

use super::{code, code_of};
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::authorization_failed_code;
use crate::request::RequestContext;

/// GROUP_AUTHORIZATION_FAILED when the principal may not READ `group`: every membership API
/// needs it, checked before the coordinator is asked.
fn refused(broker: &Broker, ctx: &RequestContext, group: &str) -> Option<i16> {
    (!broker
        .authz(ctx)
        .allows(AclOperation::Read, ResourceType::Group, group))
    .then(|| authorization_failed_code(ResourceType::Group))
}

fn s(value: impl Into<String>) -> StrBytes {
    StrBytes::from_string(value.into())
}

fn opt(value: &Option<StrBytes>) -> Option<String> {
    value.as_ref().map(|v| v.to_string())
}

/// The client's address as Kafka prints it.
pub(crate) fn client_host(ctx: &RequestContext) -> String {
    format!("/{}", ctx.peer.ip())
}

pub async fn join_group(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: JoinGroupRequest,
) -> JoinGroupResponse {
    let version = ctx.version();
    if let Some(code) = refused(broker, ctx, request.group_id.0.as_str()) {
        return JoinGroupResponse::default()
            .with_error_code(code)
            .with_generation_id(-1)
            .with_protocol_name(if version >= 7 { None } else { Some(s("")) })
            .with_leader(s(""))
            .with_member_id(s(""));
    }
    broker.groups.ensure_offsets_topic(broker).await;
    let member_id = request.member_id.to_string();
    let domain_request = domain::JoinGroupRequest {
        group_id: request.group_id.0.to_string(),
        session_timeout_ms: request.session_timeout_ms,
        // v0 has no rebalance timeout: the session timeout stands in, as in Kafka.
        rebalance_timeout_ms: if version >= 1 {
            request.rebalance_timeout_ms
        } else {
            request.session_timeout_ms
        },
        member_id: member_id.clone(),
        group_instance_id: if version >= 5 {
            opt(&request.group_instance_id)
        } else {
            None
        },
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .into_iter()
            .map(|p| domain::JoinGroupProtocol {
                name: p.name.to_string(),
                metadata: p.metadata,
            })
            .collect(),
        reason: if version >= 8 {
            opt(&request.reason)
        } else {
            None
        },
        client_id: ctx.header.client_id.clone().unwrap_or_default(),
        client_host: client_host(ctx),
        require_known_member_id: version >= 4,
        supports_skip_assignment: version >= 9,
    };
    let base = JoinGroupResponse::default();
    match broker.groups.coordinator.join_group(domain_request).await {
        Ok(joined) => base
            .with_generation_id(joined.generation_id)
            .with_protocol_type(if version >= 7 {
                joined.protocol_type.map(s)
            } else {
                None
            })
            .with_protocol_name(if version >= 7 {
                joined.protocol_name.map(s)
            } else {
                Some(s(joined.protocol_name.unwrap_or_default()))
            })
            .with_leader(s(joined.leader))
            .with_skip_assignment(version >= 9 && joined.skip_assignment)
            .with_member_id(s(joined.member_id))
            .with_members(
                joined
                    .members
                    .into_iter()
                    .map(|m| {
                        JoinGroupResponseMember::default()
                            .with_member_id(s(m.member_id))
                            .with_group_instance_id(if version >= 5 {
                                m.group_instance_id.map(s)
                            } else {
                                None
                            })
                            .with_metadata(m.metadata)
                    })
                    .collect(),
            ),
        Err(error) => {
            let member_id = match &error {
                GroupError::MemberIdRequired { member_id } => member_id.clone(),
                _ => member_id,
            };
            base.with_error_code(code(&error))
                .with_generation_id(-1)
                .with_protocol_type(None)
                .with_protocol_name(if version >= 7 { None } else { Some(s("")) })
                .with_leader(s(""))
                .with_member_id(s(member_id))
        }
    }
}

pub async fn sync_group(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: SyncGroupRequest,
) -> SyncGroupResponse {
    let version = ctx.version();
    if let Some(code) = refused(broker, ctx, request.group_id.0.as_str()) {
        return SyncGroupResponse::default().with_error_code(code);
    }
    let domain_request = domain::SyncGroupRequest {
        group_id: request.group_id.0.to_string(),
        generation_id: request.generation_id,
        member_id: request.member_id.to_string(),
        group_instance_id: if version >= 3 {
            opt(&request.group_instance_id)
        } else {
            None
        },
        protocol_type: if version >= 5 {
            opt(&request.protocol_type)
        } else {
            None
        },
        protocol_name: if version >= 5 {
            opt(&request.protocol_name)
        } else {
            None
        },
        assignments: request
            .assignments
            .into_iter()
            .map(|a| domain::SyncGroupAssignment {
                member_id: a.member_id.to_string(),
                assignment: a.assignment,
            })
            .collect(),
    };
    match broker.groups.coordinator.sync_group(domain_request).await {
        Ok(synced) => SyncGroupResponse::default()
            .with_protocol_type(synced.protocol_type.map(s))
            .with_protocol_name(synced.protocol_name.map(s))
            .with_assignment(synced.assignment),
        Err(error) => SyncGroupResponse::default().with_error_code(code(&error)),
    }
}

pub async fn heartbeat(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: HeartbeatRequest,
) -> HeartbeatResponse {
    if let Some(code) = refused(broker, ctx, request.group_id.0.as_str()) {
        return HeartbeatResponse::default().with_error_code(code);
    }
    let domain_request = domain::HeartbeatRequest {
        group_id: request.group_id.0.to_string(),
        generation_id: request.generation_id,
        member_id: request.member_id.to_string(),
        group_instance_id: if ctx.version() >= 3 {
            opt(&request.group_instance_id)
        } else {
            None
        },
    };
    let result = broker.groups.coordinator.heartbeat(domain_request).await;
    HeartbeatResponse::default().with_error_code(code_of(&result.err()))
}

pub async fn leave_group(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: LeaveGroupRequest,
) -> LeaveGroupResponse {
    let version = ctx.version();
    if let Some(code) = refused(broker, ctx, request.group_id.0.as_str()) {
        return LeaveGroupResponse::default().with_error_code(code);
    }
    let members = if version >= 3 {
        request
            .members
            .into_iter()
            .map(|m| domain::LeavingMember {
                member_id: m.member_id.to_string(),
                group_instance_id: opt(&m.group_instance_id),
                reason: if version >= 5 { opt(&m.reason) } else { None },
            })
            .collect()
    } else {
        vec![domain::LeavingMember {
            member_id: request.member_id.to_string(),
            group_instance_id: None,
            reason: None,
        }]
    };
    let domain_request = domain::LeaveGroupRequest {
        group_id: request.group_id.0.to_string(),
        members,
    };
    match broker.groups.coordinator.leave_group(domain_request).await {
        Ok(left) if version >= 3 => LeaveGroupResponse::default().with_members(
            left.members
                .into_iter()
                .map(|m| {
                    MemberResponse::default()
                        .with_member_id(s(m.member_id))
                        .with_group_instance_id(m.group_instance_id.map(s))
                        .with_error_code(code_of(&m.error))
                })
                .collect(),
        ),
        // v0-v2: the single member's outcome is the response's.
        Ok(left) => LeaveGroupResponse::default()
            .with_error_code(left.members.first().map(|m| code_of(&m.error)).unwrap_or(0)),
        Err(error) => LeaveGroupResponse::default().with_error_code(code(&error)),
    }
}
