//! Kafka's default share persister: a share-partition leader (or the group coordinator) reads
//! and writes a share-partition's state through the share coordinator that leads its
//! `__share_group_state` partition. On this broker that is a call into the local shard; on
//! another, the share-state APIs over the inter-broker listener. A coordinator that moved or is
//! still loading is asked again, a few times, after a short pause.

use std::time::Duration;

use kafka_protocol::messages::{
    delete_share_group_state_request, initialize_share_group_state_request,
    read_share_group_state_request, ApiKey, DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest, ReadShareGroupStateRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_protocol::newer::{
    read_share_group_state_summary_request as summary_request,
    write_share_group_state_request as write_request,
};
use shale_protocol::{NewerRequest, NewerResponse, Request, Response};
use shale_share::coordinator::{StateSummary, WriteStateRequest};
use shale_share::state::{DeliveryState, PersistedState, SharePartitionKey, StateBatch};

use super::coordinator::ShareCoordinatorService;
pub use super::error::PersisterError;
use crate::core::BrokerCore;
use crate::errors::{share_state_refusal_from_code, ShareStateRefusal};
use crate::txn::peers::PeerClients;

/// How often a request is tried while its coordinator moves or loads (Kafka's persister
/// retries with a backoff of its own until the request times out).
const ATTEMPTS_MAX: u32 = 10;
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// One share state request, local or remote.
#[derive(Debug, Clone)]
pub enum StateCall {
    Read { leader_epoch: i32 },
    Write(WriteStateRequest),
    Initialize { state_epoch: i32, start_offset: i64 },
    Delete,
    Summary,
}

/// What a share state request answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateReply {
    Read(PersistedState),
    Summary(StateSummary),
    Done,
}

#[derive(Debug, Default)]
pub struct Persister {
    peers: PeerClients,
}

impl Persister {
    /// Runs `call` for `key` on its share coordinator, asking again while it moves or loads.
    pub async fn call(
        &self,
        broker: &BrokerCore,
        coordinator: &ShareCoordinatorService,
        key: &SharePartitionKey,
        call: StateCall,
    ) -> Result<StateReply, PersisterError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = self.call_once(broker, coordinator, key, &call).await;
            match result {
                Err(e) if e.is_retriable() && attempt < ATTEMPTS_MAX => {
                    tokio::time::sleep(RETRY_BACKOFF).await;
                }
                other => return other,
            }
        }
    }

    async fn call_once(
        &self,
        broker: &BrokerCore,
        coordinator: &ShareCoordinatorService,
        key: &SharePartitionKey,
        call: &StateCall,
    ) -> Result<StateReply, PersisterError> {
        let image = broker.image();
        let Some(leader) = coordinator.leader_of(&image, key) else {
            return Err(PersisterError::Unavailable);
        };
        if leader == broker.node_id() {
            return local_call(broker, coordinator, key, call.clone()).await;
        }
        self.remote_call(broker, leader, key, call).await
    }

    async fn remote_call(
        &self,
        broker: &BrokerCore,
        node_id: i32,
        key: &SharePartitionKey,
        call: &StateCall,
    ) -> Result<StateReply, PersisterError> {
        let group_id = StrBytes::from_string(key.group_id.clone());
        let (api, request) = remote_request(group_id, key, call);
        let answered = self
            .peers
            .call_negotiated(broker, node_id, api, |max| {
                // The codec-owned APIs go in their newest version the peer serves.
                let version = match &request {
                    Request::Newer(_) => max.unwrap_or(0).clamp(0, 1),
                    Request::Kafka(_) => 0,
                };
                (version, request)
            })
            .await
            .map_err(|e| PersisterError::Peer {
                node_id,
                code: ResponseError::CoordinatorNotAvailable.code(),
                message: e.to_string(),
            });
        // A connection failure is a coordinator this broker cannot reach now: ask again.
        let response = match answered {
            Ok(response) => response,
            Err(_) => return Err(PersisterError::Unavailable),
        };
        remote_reply(node_id, response)
    }
}

/// Runs one call on this broker's shard.
pub async fn local_call(
    broker: &BrokerCore,
    coordinator: &ShareCoordinatorService,
    key: &SharePartitionKey,
    call: StateCall,
) -> Result<StateReply, PersisterError> {
    let answer = match call {
        StateCall::Read { leader_epoch } => coordinator
            .execute(broker, key, |shard, now| {
                shard.read_state(key, leader_epoch, now)
            })
            .await?
            .map(StateReply::Read),
        StateCall::Write(request) => coordinator
            .execute(broker, key, |shard, now| shard.write_state(&request, now))
            .await?
            .map(|()| StateReply::Done),
        StateCall::Initialize {
            state_epoch,
            start_offset,
        } => coordinator
            .execute(broker, key, |shard, now| {
                shard.initialize_state(key, state_epoch, start_offset, now)
            })
            .await?
            .map(|()| StateReply::Done),
        StateCall::Delete => coordinator
            .execute(broker, key, |shard, _| shard.delete_state(key))
            .await?
            .map(|()| StateReply::Done),
        StateCall::Summary => coordinator
            .execute(broker, key, |shard, _| shale_share::coordinator::Outcome {
                records: Vec::new(),
                answer: shard.read_state_summary(key),
            })
            .await?
            .map(StateReply::Summary),
    };
    Ok(answer?)
}

fn remote_request(
    group_id: StrBytes,
    key: &SharePartitionKey,
    call: &StateCall,
) -> (ApiKey, Request) {
    match call {
        StateCall::Read { leader_epoch } => (
            ApiKey::ReadShareGroupState,
            kafka(RequestKind::ReadShareGroupState(
                ReadShareGroupStateRequest::default()
                    .with_group_id(group_id)
                    .with_topics(vec![
                        read_share_group_state_request::ReadStateData::default()
                            .with_topic_id(key.topic_id)
                            .with_partitions(vec![
                                read_share_group_state_request::PartitionData::default()
                                    .with_partition(key.partition)
                                    .with_leader_epoch(*leader_epoch),
                            ]),
                    ]),
            )),
        ),
        StateCall::Write(write) => (
            ApiKey::WriteShareGroupState,
            Request::Newer(NewerRequest::WriteShareGroupState(
                write_request::WriteShareGroupStateRequest {
                    group_id,
                    topics: vec![write_request::WriteStateData {
                        topic_id: key.topic_id,
                        partitions: vec![write_request::PartitionData {
                            partition: key.partition,
                            state_epoch: write.state_epoch,
                            leader_epoch: write.leader_epoch,
                            start_offset: write.start_offset,
                            delivery_complete_count: write.delivery_complete_count,
                            state_batches: write
                                .batches
                                .iter()
                                .map(|b| write_request::StateBatch {
                                    first_offset: b.first_offset,
                                    last_offset: b.last_offset,
                                    delivery_state: b.delivery_state.id(),
                                    delivery_count: b.delivery_count,
                                })
                                .collect(),
                        }],
                    }],
                },
            )),
        ),
        StateCall::Initialize {
            state_epoch,
            start_offset,
        } => (
            ApiKey::InitializeShareGroupState,
            kafka(RequestKind::InitializeShareGroupState(
                InitializeShareGroupStateRequest::default()
                    .with_group_id(group_id)
                    .with_topics(vec![
                        initialize_share_group_state_request::InitializeStateData::default()
                            .with_topic_id(key.topic_id)
                            .with_partitions(vec![
                                initialize_share_group_state_request::PartitionData::default()
                                    .with_partition(key.partition)
                                    .with_state_epoch(*state_epoch)
                                    .with_start_offset(*start_offset),
                            ]),
                    ]),
            )),
        ),
        StateCall::Delete => (
            ApiKey::DeleteShareGroupState,
            kafka(RequestKind::DeleteShareGroupState(
                DeleteShareGroupStateRequest::default()
                    .with_group_id(group_id)
                    .with_topics(vec![
                        delete_share_group_state_request::DeleteStateData::default()
                            .with_topic_id(key.topic_id)
                            .with_partitions(vec![
                                delete_share_group_state_request::PartitionData::default()
                                    .with_partition(key.partition),
                            ]),
                    ]),
            )),
        ),
        StateCall::Summary => (
            ApiKey::ReadShareGroupStateSummary,
            Request::Newer(NewerRequest::ReadShareGroupStateSummary(
                summary_request::ReadShareGroupStateSummaryRequest {
                    group_id,
                    topics: vec![summary_request::ReadStateSummaryData {
                        topic_id: key.topic_id,
                        partitions: vec![summary_request::PartitionData {
                            partition: key.partition,
                            leader_epoch: -1,
                        }],
                    }],
                },
            )),
        ),
    }
}

fn kafka(request: RequestKind) -> Request {
    Request::Kafka(request)
}

/// The one partition result of a peer's answer, as a reply or an error.
fn remote_reply(node_id: i32, response: Response) -> Result<StateReply, PersisterError> {
    let refused = |code: i16, message: Option<&StrBytes>| -> PersisterError {
        let message = message.map(|m| m.to_string()).unwrap_or_default();
        match share_state_refusal_from_code(code, &message) {
            Some(ShareStateRefusal::State(e)) => PersisterError::State(e),
            Some(ShareStateRefusal::Coordinator(e)) => PersisterError::Coordinator(e),
            None => PersisterError::Peer {
                node_id,
                code,
                message,
            },
        }
    };
    let missing = || PersisterError::Peer {
        node_id,
        code: ResponseError::UnknownServerError.code(),
        message: "the answer holds no result for the share-partition".into(),
    };
    // The one share-partition the request named.
    fn first_of<T>(
        mut partitions: impl Iterator<Item = T>,
        missing: impl Fn() -> PersisterError,
    ) -> Result<T, PersisterError> {
        partitions.next().ok_or_else(missing)
    }
    match response {
        Response::Kafka(ResponseKind::ReadShareGroupState(r)) => {
            let p = first_of(r.results.into_iter().flat_map(|t| t.partitions), missing)?;
            if p.error_code != 0 {
                return Err(refused(p.error_code, p.error_message.as_ref()));
            }
            let mut batches = Vec::with_capacity(p.state_batches.len());
            for b in p.state_batches {
                let Some(delivery_state) = DeliveryState::from_id(b.delivery_state) else {
                    return Err(PersisterError::Peer {
                        node_id,
                        code: ResponseError::UnknownServerError.code(),
                        message: format!("unknown delivery state {}", b.delivery_state),
                    });
                };
                batches.push(StateBatch {
                    first_offset: b.first_offset,
                    last_offset: b.last_offset,
                    delivery_state,
                    delivery_count: b.delivery_count,
                });
            }
            Ok(StateReply::Read(PersistedState {
                state_epoch: p.state_epoch,
                // The reader's own epoch: the coordinator just took it.
                leader_epoch: -1,
                start_offset: p.start_offset,
                batches,
            }))
        }
        Response::Newer(NewerResponse::ReadShareGroupStateSummary(r)) => {
            let p = first_of(r.results.into_iter().flat_map(|t| t.partitions), missing)?;
            if p.error_code != 0 {
                return Err(refused(p.error_code, p.error_message.as_ref()));
            }
            Ok(StateReply::Summary(StateSummary {
                state_epoch: p.state_epoch,
                leader_epoch: p.leader_epoch,
                start_offset: p.start_offset,
                delivery_complete_count: p.delivery_complete_count,
            }))
        }
        Response::Newer(NewerResponse::WriteShareGroupState(r)) => {
            let p = first_of(r.results.into_iter().flat_map(|t| t.partitions), missing)?;
            done_or(p.error_code, p.error_message.as_ref(), refused)
        }
        Response::Kafka(ResponseKind::InitializeShareGroupState(r)) => {
            let p = first_of(r.results.into_iter().flat_map(|t| t.partitions), missing)?;
            done_or(p.error_code, p.error_message.as_ref(), refused)
        }
        Response::Kafka(ResponseKind::DeleteShareGroupState(r)) => {
            let p = first_of(r.results.into_iter().flat_map(|t| t.partitions), missing)?;
            done_or(p.error_code, p.error_message.as_ref(), refused)
        }
        _ => Err(missing()),
    }
}

fn done_or(
    code: i16,
    message: Option<&StrBytes>,
    refused: impl Fn(i16, Option<&StrBytes>) -> PersisterError,
) -> Result<StateReply, PersisterError> {
    if code == 0 {
        Ok(StateReply::Done)
    } else {
        Err(refused(code, message))
    }
}
