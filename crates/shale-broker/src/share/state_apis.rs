//! The share-state APIs brokers send each other (InitializeShareGroupState,
//! ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState,
//! ReadShareGroupStateSummary): each share-partition of a request run on this broker's share
//! coordinator, one result per partition.

use std::sync::Arc;

use kafka_protocol::messages::{
    delete_share_group_state_response, initialize_share_group_state_response,
    read_share_group_state_response, DeleteShareGroupStateRequest, DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest, InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest, ReadShareGroupStateResponse,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::newer::{
    read_share_group_state_summary_request as summary_request,
    read_share_group_state_summary_response as summary_response,
    write_share_group_state_request as write_request,
    write_share_group_state_response as write_response,
};
use shale_protocol::{NewerResponse, Response};
use shale_share::coordinator::WriteStateRequest;
use shale_share::state::{DeliveryState, SharePartitionKey, StateBatch};
use uuid::Uuid;

use super::error::PersisterError;
use super::persister::{local_call, StateCall, StateReply};
use crate::authorization::AclOperation;
use crate::broker::Broker;
use crate::errors::{cluster_authorization_failed_code, persister_error_code};
use crate::request::RequestContext;

/// Only other brokers may call these (CLUSTER_ACTION on the cluster); `None` when allowed.
fn refused(broker: &Arc<Broker>, ctx: &RequestContext) -> Option<PersisterError> {
    (!broker
        .authz(ctx)
        .allows_cluster(AclOperation::ClusterAction))
    .then(|| PersisterError::Peer {
        node_id: broker.node_id(),
        code: cluster_authorization_failed_code(),
        message: "Cluster authorization failed.".into(),
    })
}

async fn run(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    group_id: &str,
    topic_id: Uuid,
    partition: i32,
    call: StateCall,
) -> Result<StateReply, PersisterError> {
    if let Some(refusal) = refused(broker, ctx) {
        return Err(refusal);
    }
    let key = SharePartitionKey {
        group_id: group_id.to_string(),
        topic_id,
        partition,
    };
    local_call(&broker.core, &broker.share.coordinator, &key, call).await
}

fn error_of(result: &Result<StateReply, PersisterError>) -> (i16, Option<StrBytes>) {
    match result {
        Ok(_) => (0, None),
        Err(e) => {
            let (code, message) = persister_error_code(e);
            (code, Some(StrBytes::from_string(message)))
        }
    }
}

pub async fn initialize(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: InitializeShareGroupStateRequest,
) -> InitializeShareGroupStateResponse {
    let group_id = request.group_id.to_string();
    let mut results = Vec::new();
    for topic in request.topics {
        let mut partitions = Vec::new();
        for p in topic.partitions {
            let call = StateCall::Initialize {
                state_epoch: p.state_epoch,
                start_offset: p.start_offset,
            };
            let (code, message) =
                error_of(&run(broker, ctx, &group_id, topic.topic_id, p.partition, call).await);
            partitions.push(
                initialize_share_group_state_response::PartitionResult::default()
                    .with_partition(p.partition)
                    .with_error_code(code)
                    .with_error_message(message),
            );
        }
        results.push(
            initialize_share_group_state_response::InitializeStateResult::default()
                .with_topic_id(topic.topic_id)
                .with_partitions(partitions),
        );
    }
    InitializeShareGroupStateResponse::default().with_results(results)
}

pub async fn read(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ReadShareGroupStateRequest,
) -> ReadShareGroupStateResponse {
    let group_id = request.group_id.to_string();
    let mut results = Vec::new();
    for topic in request.topics {
        let mut partitions = Vec::new();
        for p in topic.partitions {
            let call = StateCall::Read {
                leader_epoch: p.leader_epoch,
            };
            let result = run(broker, ctx, &group_id, topic.topic_id, p.partition, call).await;
            let (code, message) = error_of(&result);
            let mut answer = read_share_group_state_response::PartitionResult::default()
                .with_partition(p.partition)
                .with_error_code(code)
                .with_error_message(message)
                .with_state_epoch(0)
                .with_start_offset(-1);
            if let Ok(StateReply::Read(state)) = result {
                answer = answer
                    .with_state_epoch(state.state_epoch)
                    .with_start_offset(state.start_offset)
                    .with_state_batches(
                        state
                            .batches
                            .iter()
                            .map(|b| {
                                read_share_group_state_response::StateBatch::default()
                                    .with_first_offset(b.first_offset)
                                    .with_last_offset(b.last_offset)
                                    .with_delivery_state(b.delivery_state.id())
                                    .with_delivery_count(b.delivery_count)
                            })
                            .collect(),
                    );
            }
            partitions.push(answer);
        }
        results.push(
            read_share_group_state_response::ReadStateResult::default()
                .with_topic_id(topic.topic_id)
                .with_partitions(partitions),
        );
    }
    ReadShareGroupStateResponse::default().with_results(results)
}

pub async fn write(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: write_request::WriteShareGroupStateRequest,
) -> Response {
    let group_id = request.group_id.to_string();
    let mut results = Vec::new();
    for topic in request.topics {
        let mut partitions = Vec::new();
        for p in topic.partitions {
            let mut batches = Vec::with_capacity(p.state_batches.len());
            let mut unknown_state = None;
            for b in &p.state_batches {
                match DeliveryState::from_id(b.delivery_state) {
                    Some(delivery_state) => batches.push(StateBatch {
                        first_offset: b.first_offset,
                        last_offset: b.last_offset,
                        delivery_state,
                        delivery_count: b.delivery_count,
                    }),
                    None => unknown_state = Some(b.delivery_state),
                }
            }
            let (error_code, error_message) = if let Some(state) = unknown_state {
                (
                    kafka_protocol::ResponseError::InvalidRequest.code(),
                    Some(StrBytes::from_string(format!(
                        "Invalid delivery state {state} in the state batches."
                    ))),
                )
            } else {
                let call = StateCall::Write(WriteStateRequest {
                    group_id: group_id.clone(),
                    topic_id: topic.topic_id,
                    partition: p.partition,
                    state_epoch: p.state_epoch,
                    leader_epoch: p.leader_epoch,
                    start_offset: p.start_offset,
                    // v0 does not carry it: unknown.
                    delivery_complete_count: if ctx.version() >= 1 {
                        p.delivery_complete_count
                    } else {
                        -1
                    },
                    batches,
                });
                error_of(&run(broker, ctx, &group_id, topic.topic_id, p.partition, call).await)
            };
            partitions.push(write_response::PartitionResult {
                partition: p.partition,
                error_code,
                error_message,
            });
        }
        results.push(write_response::WriteStateResult {
            topic_id: topic.topic_id,
            partitions,
        });
    }
    Response::Newer(NewerResponse::WriteShareGroupState(
        write_response::WriteShareGroupStateResponse { results },
    ))
}

pub async fn delete(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DeleteShareGroupStateRequest,
) -> DeleteShareGroupStateResponse {
    let group_id = request.group_id.to_string();
    let mut results = Vec::new();
    for topic in request.topics {
        let mut partitions = Vec::new();
        for p in topic.partitions {
            let (code, message) = error_of(
                &run(
                    broker,
                    ctx,
                    &group_id,
                    topic.topic_id,
                    p.partition,
                    StateCall::Delete,
                )
                .await,
            );
            partitions.push(
                delete_share_group_state_response::PartitionResult::default()
                    .with_partition(p.partition)
                    .with_error_code(code)
                    .with_error_message(message),
            );
        }
        results.push(
            delete_share_group_state_response::DeleteStateResult::default()
                .with_topic_id(topic.topic_id)
                .with_partitions(partitions),
        );
    }
    DeleteShareGroupStateResponse::default().with_results(results)
}

pub async fn read_summary(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: summary_request::ReadShareGroupStateSummaryRequest,
) -> Response {
    let group_id = request.group_id.to_string();
    let mut results = Vec::new();
    for topic in request.topics {
        let mut partitions = Vec::new();
        for p in topic.partitions {
            let result = run(
                broker,
                ctx,
                &group_id,
                topic.topic_id,
                p.partition,
                StateCall::Summary,
            )
            .await;
            let (error_code, error_message) = error_of(&result);
            let mut answer = summary_response::PartitionResult {
                partition: p.partition,
                error_code,
                error_message,
                state_epoch: 0,
                leader_epoch: -1,
                start_offset: -1,
                delivery_complete_count: -1,
            };
            if let Ok(StateReply::Summary(summary)) = result {
                answer.state_epoch = summary.state_epoch;
                answer.leader_epoch = summary.leader_epoch;
                answer.start_offset = summary.start_offset;
                answer.delivery_complete_count = summary.delivery_complete_count;
            }
            partitions.push(answer);
        }
        results.push(summary_response::ReadStateSummaryResult {
            topic_id: topic.topic_id,
            partitions,
        });
    }
    Response::Newer(NewerResponse::ReadShareGroupStateSummary(
        summary_response::ReadShareGroupStateSummaryResponse { results },
    ))
}
