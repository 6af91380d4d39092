//! The transaction APIs of admin tools and partition leaders: DescribeTransactions (0),
//! ListTransactions (0-2: state and producer-id filters, KIP-994's duration filter, KIP-1152's
//! transactional-id pattern) and WriteTxnMarkers (1-2).

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::describe_transactions_response::{
    TopicData, TransactionState as DescribedTxn,
};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedTxn;
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
    ListTransactionsResponse, ProducerId, TopicName, TransactionalId, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::newer::write_txn_markers_request::WriteTxnMarkersRequest as WriteTxnMarkersRequestV2;
use shale_txn::coordinator::{
    TopicPartition as TxnTopicPartition, TransactionalIdPattern, TxnState,
};
use shale_txn::TransactionVersion;

use super::markers::{write_entry, TxnMarkerEntry};
use crate::authorization::{AclOperation, ResourceType};
use crate::authorizer::Authz;
use crate::broker::Broker;
use crate::errors::{
    authorization_failed_code, cluster_authorization_failed_code, invalid_pattern_error_code,
    txn_coordinator_error_code,
};
use crate::request::RequestContext;
use crate::time::now_ms;
use shale_log::control::ControlMarker;

/// DescribeTransactions: the state of each transactional id this broker coordinates. An id
/// the principal may not DESCRIBE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; the partitions
/// of topics it may not DESCRIBE are left out, as Kafka does.
pub fn describe_transactions(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let authz = broker.authz(ctx);
    let states = request
        .transactional_ids
        .into_iter()
        .map(|id| {
            let base = DescribedTxn::default()
                .with_transactional_id(id.clone())
                .with_transaction_state(StrBytes::from_static_str(""))
                .with_transaction_start_time_ms(-1)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            if !authz.allows(
                AclOperation::Describe,
                ResourceType::TransactionalId,
                id.0.as_str(),
            ) {
                return base
                    .with_error_code(authorization_failed_code(ResourceType::TransactionalId));
            }
            match broker.txn.describe(broker, id.0.as_str()) {
                Ok(m) => {
                    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
                    for tp in &m.partitions {
                        if authz.allows(AclOperation::Describe, ResourceType::Topic, &tp.topic) {
                            topics.entry(&tp.topic).or_default().push(tp.partition);
                        }
                    }
                    base.with_transaction_state(StrBytes::from_static_str(m.state.name()))
                        .with_transaction_timeout_ms(m.txn_timeout_ms)
                        .with_transaction_start_time_ms(m.txn_start_timestamp_ms)
                        .with_producer_id(ProducerId(m.producer_id))
                        .with_producer_epoch(m.producer_epoch)
                        .with_topics(
                            topics
                                .into_iter()
                                .map(|(topic, partitions)| {
                                    TopicData::default()
                                        .with_topic(TopicName(StrBytes::from_string(
                                            topic.to_owned(),
                                        )))
                                        .with_partitions(partitions)
                                })
                                .collect(),
                        )
                }
                Err(e) => base.with_error_code(txn_coordinator_error_code(&e, true).0),
            }
        })
        .collect();
    DescribeTransactionsResponse::default().with_transaction_states(states)
}

/// ListTransactions: the transactional ids of every partition this broker coordinates that
/// the principal may DESCRIBE.
pub fn list_transactions(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let authz = broker.authz(ctx);
    let mut states = Vec::new();
    let mut unknown = Vec::new();
    for name in request.state_filters {
        match TxnState::from_name(name.as_str()) {
            Some(state) => states.push(state),
            None => unknown.push(name),
        }
    }
    let response = ListTransactionsResponse::default().with_unknown_state_filters(unknown);
    let pattern = if ctx.version() >= 2 {
        match request
            .transactional_id_pattern
            .as_ref()
            .map(|p| TransactionalIdPattern::compile(p.as_str()))
            .transpose()
        {
            Ok(pattern) => pattern.flatten(),
            Err(e) => return response.with_error_code(invalid_pattern_error_code(&e)),
        }
    } else {
        None
    };
    let duration_ms = if ctx.version() >= 1 {
        request.duration_filter
    } else {
        -1
    };
    let producer_ids: Vec<i64> = request.producer_id_filters.iter().map(|p| p.0).collect();
    let listed = broker
        .txn
        .list(
            &states,
            &producer_ids,
            duration_ms,
            pattern.as_ref(),
            now_ms(),
        )
        .into_iter()
        .filter(|m| {
            authz.allows(
                AclOperation::Describe,
                ResourceType::TransactionalId,
                &m.transactional_id,
            )
        })
        .map(|m| {
            ListedTxn::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(m.transactional_id)))
                .with_producer_id(ProducerId(m.producer_id))
                .with_transaction_state(StrBytes::from_static_str(m.state.name()))
        })
        .collect();
    response.with_transaction_states(listed)
}

/// WriteTxnMarkers v1: writes each marker to the listed partitions this broker leads.
/// Version 1 does not say which transaction version wrote the marker; the partition then
/// checks its epoch as for version 1.
pub async fn write_txn_markers(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    if marker_writer_refused(&broker.authz(ctx)) {
        return refused_markers(request.markers.iter().map(|m| {
            (
                m.producer_id.0,
                m.topics
                    .iter()
                    .map(|t| (t.name.0.as_str(), t.partition_indexes.as_slice()))
                    .collect(),
            )
        }));
    }
    let entries = request
        .markers
        .into_iter()
        .map(|marker| {
            marker_entry(
                ControlMarker {
                    producer_id: marker.producer_id.0,
                    producer_epoch: marker.producer_epoch,
                    coordinator_epoch: marker.coordinator_epoch,
                    commit: marker.transaction_result,
                },
                TransactionVersion::Legacy,
                marker
                    .topics
                    .iter()
                    .map(|t| (t.name.0.as_str(), t.partition_indexes.as_slice())),
            )
        })
        .collect();
    write_entries(broker, entries).await
}

/// WriteTxnMarkers v2 (KIP-1228): each marker says the transaction version of the
/// transaction it ends, so that a transaction version 2 marker is checked with its rule
/// (its epoch must be newer than the producer's, the coordinator bumped it).
pub async fn write_txn_markers_v2(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: WriteTxnMarkersRequestV2,
) -> WriteTxnMarkersResponse {
    if marker_writer_refused(&broker.authz(ctx)) {
        return refused_markers(request.markers.iter().map(|m| {
            (
                m.producer_id,
                m.topics
                    .iter()
                    .map(|t| (t.name.as_str(), t.partition_indexes.as_slice()))
                    .collect(),
            )
        }));
    }
    let entries = request
        .markers
        .into_iter()
        .map(|marker| {
            marker_entry(
                ControlMarker {
                    producer_id: marker.producer_id,
                    producer_epoch: marker.producer_epoch,
                    coordinator_epoch: marker.coordinator_epoch,
                    commit: marker.transaction_result,
                },
                transaction_version(marker.transaction_version),
                marker
                    .topics
                    .iter()
                    .map(|t| (t.name.as_str(), t.partition_indexes.as_slice())),
            )
        })
        .collect();
    write_entries(broker, entries).await
}

/// Kafka lets a principal with ALTER or CLUSTER_ACTION on the cluster write markers (brokers
/// write them to each other).
fn marker_writer_refused(authz: &Authz<'_>) -> bool {
    !authz.allows_cluster(AclOperation::Alter) && !authz.allows_cluster(AclOperation::ClusterAction)
}

/// Every partition of every marker answered CLUSTER_AUTHORIZATION_FAILED.
fn refused_markers<'a>(
    markers: impl Iterator<Item = (i64, Vec<(&'a str, &'a [i32])>)>,
) -> WriteTxnMarkersResponse {
    let code = cluster_authorization_failed_code();
    WriteTxnMarkersResponse::default().with_markers(
        markers
            .map(|(producer_id, topics)| {
                WritableTxnMarkerResult::default()
                    .with_producer_id(ProducerId(producer_id))
                    .with_topics(
                        topics
                            .into_iter()
                            .map(|(name, partitions)| {
                                WritableTxnMarkerTopicResult::default()
                                    .with_name(TopicName(StrBytes::from_string(name.to_owned())))
                                    .with_partitions(
                                        partitions
                                            .iter()
                                            .map(|p| {
                                                WritableTxnMarkerPartitionResult::default()
                                                    .with_partition_index(*p)
                                                    .with_error_code(code)
                                            })
                                            .collect(),
                                    )
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

/// The marker rule of a transaction version level (the `transaction.version` feature):
/// level 2 and above is KIP-890's epoch bump per transaction, below it the legacy rule.
fn transaction_version(level: i8) -> TransactionVersion {
    if level >= 2 {
        TransactionVersion::V2
    } else {
        TransactionVersion::Legacy
    }
}

fn marker_entry<'a>(
    marker: ControlMarker,
    transaction_version: TransactionVersion,
    topics: impl Iterator<Item = (&'a str, &'a [i32])>,
) -> TxnMarkerEntry {
    TxnMarkerEntry {
        marker,
        transaction_version,
        partitions: topics
            .flat_map(|(name, partitions)| {
                partitions
                    .iter()
                    .map(move |&p| TxnTopicPartition::new(name, p))
            })
            .collect(),
    }
}

/// Writes each entry's marker and answers per partition, in the request's order.
async fn write_entries(
    broker: &Arc<Broker>,
    entries: Vec<TxnMarkerEntry>,
) -> WriteTxnMarkersResponse {
    let mut results = Vec::with_capacity(entries.len());
    for entry in entries {
        let written = write_entry(broker.txn.marker_context(), &entry).await;
        let mut topics: Vec<WritableTxnMarkerTopicResult> = Vec::new();
        for (tp, code) in written {
            let partition = WritableTxnMarkerPartitionResult::default()
                .with_partition_index(tp.partition)
                .with_error_code(code);
            match topics.last_mut() {
                Some(t) if t.name.0.as_str() == tp.topic => t.partitions.push(partition),
                _ => topics.push(
                    WritableTxnMarkerTopicResult::default()
                        .with_name(TopicName(StrBytes::from_string(tp.topic)))
                        .with_partitions(vec![partition]),
                ),
            }
        }
        results.push(
            WritableTxnMarkerResult::default()
                .with_producer_id(ProducerId(entry.marker.producer_id))
                .with_topics(topics),
        );
    }
    WriteTxnMarkersResponse::default().with_markers(results)
}
