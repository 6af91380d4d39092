//! Acknowledgements, as ShareFetch carries them and as ShareAcknowledge sends them alone: each
//! partition's batches are checked as Kafka checks them, applied by the share-partition, and
//! answered only once the state they change is written.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_log::TopicPartition;
use shale_protocol::newer::share_acknowledge_request as wire;
use shale_protocol::newer::share_acknowledge_response as wire_response;
use shale_protocol::{NewerResponse, Response};
use shale_share::partition::{validate_acknowledgement_batches, AckBatch};
use shale_share::session::ShareSessionKey;
use shale_share::state::SharePartitionKey;
use uuid::Uuid;

use super::leader::now_ms_u64;
use super::ShareService;
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::core::BrokerCore;
use crate::errors::{
    authorization_failed_code, leader_error_code, persister_error_code, share_partition_error_code,
    share_session_error_code,
};
use crate::handlers::leader_hints::LeaderHints;
use crate::request::RequestContext;

/// How one partition's acknowledgements ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckOutcome {
    Done,
    Failed(i16, String),
}

/// Applies `acks` of `member_id` to the share-partition `key` and writes what they change.
pub async fn acknowledge_partition(
    share: &Arc<ShareService>,
    core: &Arc<BrokerCore>,
    key: &SharePartitionKey,
    tp: &TopicPartition,
    member_id: &str,
    acks: &[AckBatch],
    renew_supported: bool,
) -> AckOutcome {
    if let Err(e) = validate_acknowledgement_batches(acks, renew_supported) {
        let (code, message) = share_partition_error_code(&e);
        return AckOutcome::Failed(code, message);
    }
    let handle = share.partitions.slot(key, tp);
    let mut slot = handle.lock().await;
    if let Err(e) = share.initialize(core, key, tp, &mut slot).await {
        let (code, message) = leader_error_code(&e);
        return AckOutcome::Failed(code, message);
    }
    let Some(partition) = slot.partition.as_mut() else {
        return AckOutcome::Failed(
            ResponseError::UnknownServerError.code(),
            "the share-partition is not initialized".into(),
        );
    };
    let outcome = match partition.acknowledge(member_id, acks, now_ms_u64()) {
        Ok(None) => AckOutcome::Done,
        Ok(Some(write)) => match share.persist(core, key, &mut slot, write).await {
            Ok(()) => AckOutcome::Done,
            Err(e) => {
                let (code, message) = persister_error_code(&e);
                AckOutcome::Failed(code, message)
            }
        },
        Err(e) => {
            let (code, message) = share_partition_error_code(&e);
            AckOutcome::Failed(code, message)
        }
    };
    // Waiting fetches are woken by `persist` when the write made records available.
    share.schedule_expiry(core, key, &handle, &mut slot);
    outcome
}

/// Who acknowledges, for [`acknowledge_named`].
pub struct Acknowledger<'a> {
    pub group_id: &'a str,
    pub member_id: &'a str,
    pub renew_supported: bool,
}

/// One partition of a request, named by topic id: the topic must exist and the client may
/// READ it, then its acknowledgements are applied. A refusal carries the current leader when
/// its code sends the client elsewhere.
pub async fn acknowledge_named(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    hints: &mut LeaderHints<'_>,
    who: &Acknowledger<'_>,
    (topic_id, partition): (Uuid, i32),
    acks: &[AckBatch],
) -> AckAnswer {
    let image = broker.image();
    let Some(topic) = image.topic_by_id(topic_id) else {
        return (ResponseError::UnknownTopicId.code(), None, None);
    };
    if !broker
        .authz(ctx)
        .allows(AclOperation::Read, ResourceType::Topic, &topic.name)
    {
        return (authorization_failed_code(ResourceType::Topic), None, None);
    }
    let key = SharePartitionKey {
        group_id: who.group_id.to_string(),
        topic_id,
        partition,
    };
    let tp = TopicPartition {
        topic: topic.name.clone(),
        partition,
    };
    match acknowledge_partition(
        &broker.share,
        &broker.core,
        &key,
        &tp,
        who.member_id,
        acks,
        who.renew_supported,
    )
    .await
    {
        AckOutcome::Done => (0, None, None),
        AckOutcome::Failed(code, message) => {
            let leader = hints.current_leader(&tp.topic, partition, code);
            (code, Some(message), leader)
        }
    }
}

/// What a ShareAcknowledge asks, whatever its version.
#[derive(Debug, Clone)]
pub struct ShareAcknowledgeInput {
    pub group_id: String,
    pub member_id: String,
    pub share_session_epoch: i32,
    pub renew_supported: bool,
    pub partitions: Vec<((Uuid, i32), Vec<AckBatch>)>,
}

/// One partition's answer: error code, message, current leader.
pub type AckAnswer = (i16, Option<String>, Option<(i32, i32)>);

#[derive(Debug, Clone, Default)]
pub struct ShareAcknowledgeOutput {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub partitions: BTreeMap<(Uuid, i32), AckAnswer>,
    pub node_endpoints: Vec<(i32, String, i32, Option<String>)>,
}

/// ShareAcknowledge (every version decodes into shale-protocol's codec types).
pub async fn share_acknowledge(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: wire::ShareAcknowledgeRequest,
) -> Response {
    let input = ShareAcknowledgeInput {
        group_id: request.group_id.map(|g| g.to_string()).unwrap_or_default(),
        member_id: request.member_id.map(|m| m.to_string()).unwrap_or_default(),
        share_session_epoch: request.share_session_epoch,
        renew_supported: ctx.version() >= 2 && request.is_renew_ack,
        partitions: request
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    (
                        (t.topic_id, p.partition_index),
                        p.acknowledgement_batches
                            .iter()
                            .map(|b| AckBatch {
                                first_offset: b.first_offset,
                                last_offset: b.last_offset,
                                ack_types: b.acknowledge_types.clone(),
                            })
                            .collect(),
                    )
                })
            })
            .collect(),
    };
    let lock_duration_ms = broker
        .share
        .record_lock_duration_ms(&broker.core, &input.group_id);
    let output = handle(broker, ctx, input).await;
    let mut topics: BTreeMap<Uuid, Vec<wire_response::PartitionData>> = BTreeMap::new();
    for ((topic_id, partition), (code, message, leader)) in output.partitions {
        let (leader_id, leader_epoch) = leader.unwrap_or((-1, -1));
        topics
            .entry(topic_id)
            .or_default()
            .push(wire_response::PartitionData {
                partition_index: partition,
                error_code: code,
                error_message: message.map(StrBytes::from_string),
                current_leader: wire_response::LeaderIdAndEpoch {
                    leader_id,
                    leader_epoch,
                },
            });
    }
    Response::Newer(NewerResponse::ShareAcknowledge(
        wire_response::ShareAcknowledgeResponse {
            error_code: output.error_code,
            error_message: output.error_message.map(StrBytes::from_string),
            acquisition_lock_timeout_ms: lock_duration_ms,
            responses: topics
                .into_iter()
                .map(
                    |(topic_id, partitions)| wire_response::ShareAcknowledgeTopicResponse {
                        topic_id,
                        partitions,
                    },
                )
                .collect(),
            node_endpoints: output
                .node_endpoints
                .into_iter()
                .map(|(node_id, host, port, rack)| wire_response::NodeEndpoint {
                    node_id,
                    host: StrBytes::from_string(host),
                    port,
                    rack: rack.map(StrBytes::from_string),
                })
                .collect(),
            ..Default::default()
        },
    ))
}

/// ShareAcknowledge at any version.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    input: ShareAcknowledgeInput,
) -> ShareAcknowledgeOutput {
    let share = &broker.share;
    let refused = |code: i16, message: Option<String>| ShareAcknowledgeOutput {
        error_code: code,
        error_message: message,
        ..ShareAcknowledgeOutput::default()
    };
    if input.group_id.is_empty() || input.member_id.is_empty() {
        return refused(
            ResponseError::InvalidRequest.code(),
            Some("A share acknowledge request needs a group id and a member id.".into()),
        );
    }
    let authz = broker.authz(ctx);
    if !authz.allows(AclOperation::Read, ResourceType::Group, &input.group_id) {
        return refused(authorization_failed_code(ResourceType::Group), None);
    }
    let session_key = ShareSessionKey {
        group_id: input.group_id.clone(),
        member_id: input.member_id.clone(),
    };
    let session = share
        .sessions
        .lock()
        .acknowledge(&session_key, input.share_session_epoch);
    let session = match session {
        Ok(session) => session,
        Err(e) => {
            let (code, message) = share_session_error_code(&e);
            return refused(code, Some(message));
        }
    };
    let image = broker.image();
    let mut hints = LeaderHints::new(&image, &ctx.listener_name);
    let mut output = ShareAcknowledgeOutput::default();
    let who = Acknowledger {
        group_id: &input.group_id,
        member_id: &input.member_id,
        renew_supported: input.renew_supported,
    };
    for ((topic_id, partition), acks) in &input.partitions {
        let answer =
            acknowledge_named(broker, ctx, &mut hints, &who, (*topic_id, *partition), acks).await;
        output.partitions.insert((*topic_id, *partition), answer);
    }
    if session.closed {
        share
            .release_member(&broker.core, &session_key, &session.partitions)
            .await;
    }
    output.node_endpoints = hints
        .into_endpoints()
        .into_iter()
        .map(|e| (e.node_id, e.host, e.port, e.rack))
        .collect();
    output
}
