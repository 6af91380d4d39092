//! The transaction APIs: InitProducerId with a transactional id, AddPartitionsToTxn (v0-v3
//! from clients, v4-v5 batched from partition leaders, with `verify_only`), AddOffsetsToTxn
//! (0-4), EndTxn (0-5) and TxnOffsetCommit (0-5). Versions 5 of AddPartitionsToTxn, EndTxn and
//! TxnOffsetCommit are transaction version 2 (KIP-890 part 2).

use std::sync::Arc;

use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, EndTxnRequest, EndTxnResponse, InitProducerIdRequest,
    InitProducerIdResponse, ProducerId, TopicName, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_group::records::{encode_record, GroupRecord};
use shale_group::types as domain;
use shale_log::records::BatchBuilder;
use shale_txn::coordinator::{ProducerIdAndEpoch, TopicPartition as TxnTopicPartition, TxnReply};
use shale_txn::{ProducerIdAllocator, TransactionVersion};

use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::{
    append_error_code, authorization_failed_code, cluster_authorization_failed_code,
    group_error_code, log_error_code, metadata_error_code, operation_not_attempted_code,
    txn_coordinator_error_code, verification_error_code,
};
use crate::groups::OFFSETS_TOPIC;
use crate::request::RequestContext;
use crate::time::now_ms;

/// InitProducerId for a transactional producer: bumps the epoch (fencing older instances),
/// aborting a transaction left open first.
pub async fn init_producer_id(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: InitProducerIdRequest,
    base: InitProducerIdResponse,
) -> InitProducerIdResponse {
    let fenced_code = ctx.version() >= 4;
    let transactional_id = request
        .transactional_id
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    let service = &broker.txn;
    // A fresh producer id is needed for a new transactional id or an exhausted epoch; it is
    // fetched before the coordinator is locked because that may ask the controller.
    let needs_producer_id = service
        .inspect(&transactional_id, |c| {
            c.metadata(&transactional_id)
                .is_none_or(|m| m.is_producer_epoch_exhausted())
        })
        .unwrap_or(false);
    let mut producer_ids = ProducerIdAllocator::new();
    if needs_producer_id {
        match broker.producer_ids.next(broker).await {
            Ok(id) => {
                if producer_ids.add_block(id, 1).is_err() {
                    return base.with_error_code(ResponseError::UnknownServerError.code());
                }
            }
            Err(e) => return base.with_error_code(metadata_error_code(&e).0),
        }
    }
    let expected = (request.producer_id.0 >= 0).then_some(ProducerIdAndEpoch {
        producer_id: request.producer_id.0,
        producer_epoch: request.producer_epoch,
    });
    let timeout_ms = request.transaction_timeout_ms;
    let result = service
        .execute(broker, &transactional_id, |c, now| {
            c.init_producer_id(
                Some(&transactional_id),
                timeout_ms,
                expected,
                now,
                &mut producer_ids,
            )
        })
        .await;
    match result {
        Ok(TxnReply::ProducerIdAndEpoch(p)) => base
            .with_producer_id(ProducerId(p.producer_id))
            .with_producer_epoch(p.producer_epoch),
        Ok(TxnReply::Done) => base.with_error_code(ResponseError::UnknownServerError.code()),
        Err(e) => base.with_error_code(txn_coordinator_error_code(&e, fenced_code).0),
    }
}

/// The first versions of the transaction version 2 protocol.
const ADD_PARTITIONS_TV2_MIN_VERSION: i16 = 5;
const END_TXN_TV2_MIN_VERSION: i16 = 5;
const TXN_OFFSET_COMMIT_TV2_MIN_VERSION: i16 = 5;

/// AddPartitionsToTxn: v0-v3 carry one transaction from its producer; v4+ carry several
/// from a partition leader, each either only verified or added (KIP-890).
pub async fn add_partitions_to_txn(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let authz = broker.authz(ctx);
    if ctx.version() >= 4 {
        // Partition leaders' batched verification: CLUSTER_ACTION, as Kafka requires.
        if !authz.allows_cluster(AclOperation::ClusterAction) {
            return AddPartitionsToTxnResponse::default()
                .with_error_code(cluster_authorization_failed_code());
        }
        return add_partitions_batched(broker, ctx, request).await;
    }
    let fenced_code = ctx.version() >= 2;
    let transactional_id = request.v3_and_below_transactional_id.0.to_string();
    // A client's: WRITE on the transactional id (else every partition is refused with
    // TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then WRITE on each topic.
    let id_refused = !authz.allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &transactional_id,
    );
    let writable = |topic: &str| authz.allows(AclOperation::Write, ResourceType::Topic, topic);
    let image = broker.image();
    let known = |topic: &str, partition: i32| {
        image
            .topic(topic)
            .is_some_and(|t| t.partitions.contains_key(&partition))
    };
    let all_known = !id_refused
        && request.v3_and_below_topics.iter().all(|t| {
            writable(t.name.0.as_str()) && t.partitions.iter().all(|&p| known(t.name.0.as_str(), p))
        });
    let code_for = |topic: &str, partition: i32, error: Option<i16>| -> i16 {
        match error {
            _ if id_refused => authorization_failed_code(ResourceType::TransactionalId),
            Some(code) => code,
            None if all_known => 0,
            None if !writable(topic) => authorization_failed_code(ResourceType::Topic),
            None if known(topic, partition) => operation_not_attempted_code(),
            None => ResponseError::UnknownTopicOrPartition.code(),
        }
    };
    let error = if all_known {
        let partitions = super::partition_set(
            request
                .v3_and_below_topics
                .iter()
                .map(|t| (t.name.0.as_str(), t.partitions.as_slice())),
        );
        let producer_id = request.v3_and_below_producer_id.0;
        let producer_epoch = request.v3_and_below_producer_epoch;
        broker
            .txn
            .execute(broker, &transactional_id, |c, now| {
                c.add_partitions(
                    &transactional_id,
                    producer_id,
                    producer_epoch,
                    &partitions,
                    now,
                )
            })
            .await
            .err()
            .map(|e| txn_coordinator_error_code(&e, fenced_code).0)
    } else {
        None
    };
    let results = request
        .v3_and_below_topics
        .iter()
        .map(|t| {
            AddPartitionsToTxnTopicResult::default()
                .with_name(t.name.clone())
                .with_results_by_partition(
                    t.partitions
                        .iter()
                        .map(|&p| {
                            AddPartitionsToTxnPartitionResult::default()
                                .with_partition_index(p)
                                .with_partition_error_code(code_for(t.name.0.as_str(), p, error))
                        })
                        .collect(),
                )
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results)
}

/// AddPartitionsToTxn v4+: one result per transaction and partition.
async fn add_partitions_batched(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let version = if ctx.version() >= ADD_PARTITIONS_TV2_MIN_VERSION {
        TransactionVersion::V2
    } else {
        TransactionVersion::Legacy
    };
    let image = broker.image();
    let mut results = Vec::with_capacity(request.transactions.len());
    for txn in request.transactions {
        let transactional_id = txn.transactional_id.0.to_string();
        let partitions = super::partition_set(
            txn.topics
                .iter()
                .map(|t| (t.name.0.as_str(), t.partitions.as_slice())),
        );
        let unknown: Vec<&TxnTopicPartition> = partitions
            .iter()
            .filter(|tp| {
                !image
                    .topic(&tp.topic)
                    .is_some_and(|t| t.partitions.contains_key(&tp.partition))
            })
            .collect();
        let codes: Vec<(TxnTopicPartition, i16)> = if !unknown.is_empty() {
            partitions
                .iter()
                .map(|tp| {
                    let code = if unknown.contains(&tp) {
                        ResponseError::UnknownTopicOrPartition.code()
                    } else {
                        ResponseError::OperationNotAttempted.code()
                    };
                    (tp.clone(), code)
                })
                .collect()
        } else if txn.verify_only {
            match broker
                .txn
                .verify_or_add_here(
                    broker,
                    &transactional_id,
                    txn.producer_id.0,
                    txn.producer_epoch,
                    &partitions,
                    TransactionVersion::Legacy,
                )
                .await
            {
                Ok(verified) => verified
                    .into_iter()
                    .map(|(tp, r)| {
                        let code = r
                            .err()
                            .map_or(0, |e| txn_coordinator_error_code(&e, true).0);
                        (tp, code)
                    })
                    .collect(),
                Err(e) => {
                    let code = txn_coordinator_error_code(&e, true).0;
                    partitions.iter().map(|tp| (tp.clone(), code)).collect()
                }
            }
        } else {
            let (producer_id, producer_epoch) = (txn.producer_id.0, txn.producer_epoch);
            let code = broker
                .txn
                .execute(broker, &transactional_id, |c, now| {
                    c.add_partitions_with_version(
                        &transactional_id,
                        producer_id,
                        producer_epoch,
                        &partitions,
                        version,
                        now,
                    )
                })
                .await
                .err()
                .map_or(0, |e| txn_coordinator_error_code(&e, true).0);
            partitions.iter().map(|tp| (tp.clone(), code)).collect()
        };
        let mut topics: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
        for (tp, code) in codes {
            let partition = AddPartitionsToTxnPartitionResult::default()
                .with_partition_index(tp.partition)
                .with_partition_error_code(code);
            match topics.last_mut() {
                Some(t) if t.name.0.as_str() == tp.topic => t.results_by_partition.push(partition),
                _ => topics.push(
                    AddPartitionsToTxnTopicResult::default()
                        .with_name(TopicName(StrBytes::from_string(tp.topic)))
                        .with_results_by_partition(vec![partition]),
                ),
            }
        }
        results.push(
            AddPartitionsToTxnResult::default()
                .with_transactional_id(txn.transactional_id)
                .with_topic_results(topics),
        );
    }
    AddPartitionsToTxnResponse::default().with_results_by_transaction(results)
}

/// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
pub async fn add_offsets_to_txn(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    let fenced_code = ctx.version() >= 2;
    let transactional_id = request.transactional_id.0.to_string();
    // WRITE on the transactional id, then READ on the group, as Kafka checks.
    let authz = broker.authz(ctx);
    if !authz.allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &transactional_id,
    ) {
        return AddOffsetsToTxnResponse::default()
            .with_error_code(authorization_failed_code(ResourceType::TransactionalId));
    }
    if !authz.allows(
        AclOperation::Read,
        ResourceType::Group,
        request.group_id.0.as_str(),
    ) {
        return AddOffsetsToTxnResponse::default()
            .with_error_code(authorization_failed_code(ResourceType::Group));
    }
    broker.groups.ensure_offsets_topic(broker).await;
    let partition = broker
        .groups
        .coordinator
        .partition_for(request.group_id.0.as_str());
    let partitions = [TxnTopicPartition::new(OFFSETS_TOPIC, partition)]
        .into_iter()
        .collect();
    let result = broker
        .txn
        .execute(broker, &transactional_id, |c, now| {
            c.add_partitions(
                &transactional_id,
                request.producer_id.0,
                request.producer_epoch,
                &partitions,
                now,
            )
        })
        .await;
    let code = result
        .err()
        .map_or(0, |e| txn_coordinator_error_code(&e, fenced_code).0);
    AddOffsetsToTxnResponse::default().with_error_code(code)
}

/// EndTxn: logs PrepareCommit/PrepareAbort, writes the markers, logs the completion. From
/// v5 (transaction version 2) the epoch is bumped and answered.
pub async fn end_txn(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: EndTxnRequest,
) -> EndTxnResponse {
    let fenced_code = ctx.version() >= 2;
    let version = if ctx.version() >= END_TXN_TV2_MIN_VERSION {
        TransactionVersion::V2
    } else {
        TransactionVersion::Legacy
    };
    let transactional_id = request.transactional_id.0.to_string();
    let response = EndTxnResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    if !broker.authz(ctx).allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        &transactional_id,
    ) {
        return response.with_error_code(authorization_failed_code(ResourceType::TransactionalId));
    }
    // The epoch bump of version 2 may exhaust the epochs: the producer continues under a new
    // id, fetched before the coordinator is locked because that may ask the controller.
    let mut producer_ids = ProducerIdAllocator::new();
    let exhausted = version == TransactionVersion::V2
        && broker
            .txn
            .inspect(&transactional_id, |c| {
                c.metadata(&transactional_id)
                    .is_some_and(|m| m.is_producer_epoch_exhausted())
            })
            .unwrap_or(false);
    if exhausted {
        match broker.producer_ids.next(broker).await {
            Ok(id) => {
                if producer_ids.add_block(id, 1).is_err() {
                    return response.with_error_code(ResponseError::UnknownServerError.code());
                }
            }
            Err(e) => return response.with_error_code(metadata_error_code(&e).0),
        }
    }
    let result = broker
        .txn
        .execute(broker, &transactional_id, |c, now| {
            c.end_txn_with_version(
                &transactional_id,
                request.producer_id.0,
                request.producer_epoch,
                request.committed,
                version,
                now,
                &mut producer_ids,
            )
        })
        .await;
    match result {
        Ok(TxnReply::ProducerIdAndEpoch(p)) => response
            .with_producer_id(ProducerId(p.producer_id))
            .with_producer_epoch(p.producer_epoch),
        Ok(TxnReply::Done) => response,
        Err(e) => response.with_error_code(txn_coordinator_error_code(&e, fenced_code).0),
    }
}

/// Every partition of `topics` answered `code`.
fn failed_topics(
    topics: &[kafka_protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequestTopic],
    code: i16,
) -> Vec<TxnOffsetCommitResponseTopic> {
    topics
        .iter()
        .map(|t| {
            TxnOffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            TxnOffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                        })
                        .collect(),
                )
        })
        .collect()
}

/// TxnOffsetCommit, authorized as Kafka does: WRITE on the transactional id, then READ on the
/// group (else every partition carries that refusal), then READ on each topic (a refused
/// topic's partitions are TOPIC_AUTHORIZATION_FAILED and the others are committed).
pub async fn txn_offset_commit(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    mut request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let authz = broker.authz(ctx);
    let whole = if !authz.allows(
        AclOperation::Write,
        ResourceType::TransactionalId,
        request.transactional_id.0.as_str(),
    ) {
        Some(ResourceType::TransactionalId)
    } else if !authz.allows(
        AclOperation::Read,
        ResourceType::Group,
        request.group_id.0.as_str(),
    ) {
        Some(ResourceType::Group)
    } else {
        None
    };
    if let Some(resource) = whole {
        return TxnOffsetCommitResponse::default().with_topics(failed_topics(
            &request.topics,
            authorization_failed_code(resource),
        ));
    }
    let (allowed, refused): (Vec<_>, Vec<_>) = std::mem::take(&mut request.topics)
        .into_iter()
        .partition(|t| authz.allows(AclOperation::Read, ResourceType::Topic, t.name.0.as_str()));
    let refused = failed_topics(&refused, authorization_failed_code(ResourceType::Topic));
    if allowed.is_empty() {
        return TxnOffsetCommitResponse::default().with_topics(refused);
    }
    request.topics = allowed;
    let mut response = commit_authorized_offsets(broker, ctx, request).await;
    response.topics.extend(refused);
    response
}

/// TxnOffsetCommit of authorized topics: the group coordinator validates the commit, the
/// offsets are written to the group's partition in the producer's transaction, and become
/// visible with its COMMIT marker.
async fn commit_authorized_offsets(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let version = ctx.version();
    broker.groups.ensure_offsets_topic(broker).await;
    let image = broker.image();
    let requested: Vec<(String, Vec<i32>)> = request
        .topics
        .iter()
        .map(|t| {
            (
                t.name.0.to_string(),
                t.partitions.iter().map(|p| p.partition_index).collect(),
            )
        })
        .collect();
    let all_failed = |code: i16| -> TxnOffsetCommitResponse {
        TxnOffsetCommitResponse::default().with_topics(
            requested
                .iter()
                .map(|(name, partitions)| {
                    TxnOffsetCommitResponseTopic::default()
                        .with_name(TopicName(StrBytes::from_string(name.clone())))
                        .with_partitions(
                            partitions
                                .iter()
                                .map(|&p| {
                                    TxnOffsetCommitResponsePartition::default()
                                        .with_partition_index(p)
                                        .with_error_code(code)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
    };
    if request
        .topics
        .iter()
        .any(|t| image.topic(t.name.0.as_str()).is_none())
    {
        return all_failed(ResponseError::UnknownTopicOrPartition.code());
    }
    let group_id = request.group_id.0.to_string();
    let domain_request = domain::OffsetCommitRequest {
        group_id: group_id.clone(),
        generation_id: if version >= 3 {
            request.generation_id
        } else {
            -1
        },
        member_id: if version >= 3 {
            request.member_id.to_string()
        } else {
            String::new()
        },
        group_instance_id: if version >= 3 {
            request.group_instance_id.as_ref().map(|v| v.to_string())
        } else {
            None
        },
        retention_time_ms: -1,
        reports_missing_group: false,
        topics: request
            .topics
            .iter()
            .map(|t| domain::OffsetCommitTopic {
                name: t.name.0.to_string(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| domain::OffsetCommitPartition {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset,
                        committed_leader_epoch: if version >= 2 {
                            p.committed_leader_epoch
                        } else {
                            -1
                        },
                        committed_metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                    })
                    .collect(),
            })
            .collect(),
    };
    let coordinator = &broker.groups.coordinator;
    // KIP-890: the group's partition must be in the producer's transaction before its
    // offsets are written there (version 2 clients send no AddOffsetsToTxn: it joins here).
    let transactional_id = request.transactional_id.0.to_string();
    let (producer_id, producer_epoch) = (request.producer_id.0, request.producer_epoch);
    let offsets_partition = coordinator.partition_for(&group_id);
    let offsets_tp = shale_log::TopicPartition {
        topic: OFFSETS_TOPIC.to_owned(),
        partition: offsets_partition,
    };
    let txn_version = if version >= TXN_OFFSET_COMMIT_TV2_MIN_VERSION {
        TransactionVersion::V2
    } else {
        TransactionVersion::Legacy
    };
    let gate = &broker.txn.gate;
    let token = gate.begin_verification(&offsets_tp, producer_id);
    let partitions = [TxnTopicPartition::new(OFFSETS_TOPIC, offsets_partition)]
        .into_iter()
        .collect();
    let refused = match broker
        .txn
        .verify_or_add(
            broker,
            &transactional_id,
            producer_id,
            producer_epoch,
            &partitions,
            txn_version,
        )
        .await
    {
        Ok(results) => results.into_iter().find_map(|(_, r)| r.err()),
        Err(e) => Some(e),
    };
    if let Some(e) = refused {
        gate.abandon_verification(&offsets_tp, producer_id, token);
        return all_failed(verification_error_code(&e));
    }
    let (response, records) = match coordinator
        .prepare_transactional_offsets(domain_request)
        .await
    {
        Ok(prepared) => prepared,
        Err(e) => {
            gate.abandon_verification(&offsets_tp, producer_id, token);
            return all_failed(group_error_code(&e).0);
        }
    };
    if records.is_empty() {
        gate.abandon_verification(&offsets_tp, producer_id, token);
    } else {
        let partition = offsets_partition;
        // Under the gate: no marker for the producer may land between the verification and
        // this write, or the offsets would open a transaction nobody ends.
        let written = gate
            .append_verified(&offsets_tp, producer_id, token, || {
                write_offsets(broker, partition, producer_id, producer_epoch, &records)
            })
            .unwrap_or(Err(ResponseError::InvalidTxnState.code()));
        if let Err(code) = written {
            return all_failed(code);
        }
        if let Err(e) = coordinator
            .add_transactional_offsets(partition, producer_id, records)
            .await
        {
            return all_failed(group_error_code(&e).0);
        }
    }
    TxnOffsetCommitResponse::default().with_topics(
        response
            .topics
            .into_iter()
            .map(|t| {
                TxnOffsetCommitResponseTopic::default()
                    .with_name(TopicName(StrBytes::from_string(t.name)))
                    .with_partitions(
                        t.partitions
                            .into_iter()
                            .map(|p| {
                                TxnOffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(
                                        p.error.as_ref().map_or(0, |e| group_error_code(e).0),
                                    )
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

/// Writes the offset records as one transactional batch of the producer to the group's
/// `__consumer_offsets` partition.
fn write_offsets(
    broker: &Broker,
    partition: i32,
    producer_id: i64,
    producer_epoch: i16,
    records: &[GroupRecord],
) -> Result<(), i16> {
    let tp = shale_log::TopicPartition {
        topic: OFFSETS_TOPIC.to_owned(),
        partition,
    };
    let hosted = broker
        .replicas
        .get(&tp)
        .filter(|p| p.leader_id() == broker.node_id())
        .ok_or(ResponseError::NotCoordinator.code())?;
    let now = now_ms();
    let mut builder = BatchBuilder::new(now);
    builder.transactional = true;
    builder.producer_id = producer_id;
    builder.producer_epoch = producer_epoch;
    for record in records {
        let (key, value) = encode_record(record);
        builder.push(now, Some(&key), value.as_deref());
    }
    let mut batch = builder.build().map_err(|e| log_error_code(&e).0)?;
    hosted
        .append_for_producer(&mut batch, now)
        .map_err(|e| append_error_code(&e).0)?;
    broker.replicas.notify_appended();
    Ok(())
}
