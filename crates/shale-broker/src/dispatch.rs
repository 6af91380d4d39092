//! Routes a decoded request to its handler.

use std::net::SocketAddr;
use std::sync::Arc;

use kafka_protocol::messages::{RequestKind, ResponseKind};
use shale_protocol::{NewerRequest, RequestHeader, Response};

use crate::groups;
use crate::handlers;
use crate::txn;
use crate::Broker;

/// What a handler knows about the request besides its body.
#[derive(Debug)]
pub struct RequestContext {
    pub header: RequestHeader,
    pub peer: SocketAddr,
    pub listener_name: Arc<str>,
}

impl RequestContext {
    pub fn version(&self) -> i16 {
        self.header.api_version
    }
}

/// A request that cannot be answered and must close the connection.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error("request type not served: {0}")]
    NotServed(&'static str),
}

/// Runs the handler for `request`. `Ok(None)` means no response is sent (acks=0).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: RequestKind,
) -> Result<Option<Response>, HandlerError> {
    use RequestKind as R;
    let response = match request {
        R::ApiVersions(r) => {
            ResponseKind::ApiVersions(handlers::api_versions::handle(broker, ctx, r))
        }
        R::Metadata(r) => ResponseKind::Metadata(handlers::metadata::handle(broker, ctx, r).await),
        R::Produce(r) => {
            return Ok(handlers::produce::handle(broker, ctx, r)
                .await
                .map(|r| Response::Kafka(ResponseKind::Produce(r))))
        }
        R::Fetch(r) => ResponseKind::Fetch(handlers::fetch::handle(broker, ctx, r).await),
        R::ListOffsets(r) => {
            ResponseKind::ListOffsets(handlers::list_offsets::handle(broker, ctx, r))
        }
        R::OffsetForLeaderEpoch(r) => ResponseKind::OffsetForLeaderEpoch(
            handlers::list_offsets::offset_for_leader_epoch(broker, ctx, r),
        ),
        R::CreateTopics(r) => {
            ResponseKind::CreateTopics(handlers::topics::create_topics(broker, ctx, r).await)
        }
        R::DeleteTopics(r) => {
            ResponseKind::DeleteTopics(handlers::topics::delete_topics(broker, ctx, r).await)
        }
        R::CreatePartitions(r) => ResponseKind::CreatePartitions(
            handlers::topics::create_partitions(broker, ctx, r).await,
        ),
        R::DeleteRecords(r) => {
            ResponseKind::DeleteRecords(handlers::delete_records::handle(broker, ctx, r))
        }
        R::DescribeConfigs(r) => {
            ResponseKind::DescribeConfigs(handlers::configs::describe(broker, ctx, r))
        }
        R::AlterConfigs(r) => {
            ResponseKind::AlterConfigs(handlers::configs::alter(broker, ctx, r).await)
        }
        R::IncrementalAlterConfigs(r) => ResponseKind::IncrementalAlterConfigs(
            handlers::configs::incremental_alter(broker, ctx, r).await,
        ),
        R::DescribeTopicPartitions(r) => ResponseKind::DescribeTopicPartitions(
            handlers::describe_topic_partitions::handle(broker, ctx, r),
        ),
        R::DescribeCluster(r) => {
            ResponseKind::DescribeCluster(handlers::cluster::describe_cluster(broker, ctx, r))
        }
        R::DescribeQuorum(r) => {
            ResponseKind::DescribeQuorum(handlers::describe_quorum::handle(broker, ctx, r).await)
        }
        // Version 5 answers in Shale's own types (a field kafka-protocol's lack).
        R::DescribeLogDirs(r) => {
            return Ok(Some(handlers::cluster::describe_log_dirs(broker, ctx, r)));
        }
        R::InitProducerId(r) => ResponseKind::InitProducerId(
            handlers::producer_ids::init_producer_id(broker, ctx, r).await,
        ),
        R::ElectLeaders(r) => ResponseKind::ElectLeaders(
            crate::replication::admin::elect_leaders(broker, ctx.version(), r).await,
        ),
        R::AlterPartitionReassignments(r) => ResponseKind::AlterPartitionReassignments(
            crate::replication::admin::alter_partition_reassignments(broker, ctx.version(), r)
                .await,
        ),
        R::ListPartitionReassignments(r) => ResponseKind::ListPartitionReassignments(
            crate::replication::admin::list_partition_reassignments(broker, r),
        ),
        R::DescribeProducers(r) => ResponseKind::DescribeProducers(
            handlers::producer_ids::describe_producers(broker, ctx, r),
        ),
        R::FindCoordinator(r) => {
            ResponseKind::FindCoordinator(groups::find_coordinator::handle(broker, ctx, r).await)
        }
        R::JoinGroup(r) => {
            ResponseKind::JoinGroup(groups::membership::join_group(broker, ctx, r).await)
        }
        R::SyncGroup(r) => {
            ResponseKind::SyncGroup(groups::membership::sync_group(broker, ctx, r).await)
        }
        R::Heartbeat(r) => {
            ResponseKind::Heartbeat(groups::membership::heartbeat(broker, ctx, r).await)
        }
        R::LeaveGroup(r) => {
            ResponseKind::LeaveGroup(groups::membership::leave_group(broker, ctx, r).await)
        }
        R::OffsetCommit(r) => {
            ResponseKind::OffsetCommit(groups::offsets::offset_commit(broker, ctx, r).await)
        }
        R::OffsetFetch(r) => {
            ResponseKind::OffsetFetch(groups::offsets::offset_fetch(broker, ctx, r).await)
        }
        R::OffsetDelete(r) => {
            ResponseKind::OffsetDelete(groups::offsets::offset_delete(broker, ctx, r).await)
        }
        R::DescribeGroups(r) => {
            ResponseKind::DescribeGroups(groups::admin::describe_groups(broker, ctx, r).await)
        }
        R::ListGroups(r) => {
            ResponseKind::ListGroups(groups::admin::list_groups(broker, ctx, r).await)
        }
        // Version 3 answers in Shale's own types (a field kafka-protocol's lack).
        R::DeleteGroups(r) => return Ok(Some(groups::admin::delete_groups(broker, ctx, r).await)),
        R::AddPartitionsToTxn(r) => ResponseKind::AddPartitionsToTxn(
            txn::handlers::add_partitions_to_txn(broker, ctx, r).await,
        ),
        R::AddOffsetsToTxn(r) => {
            ResponseKind::AddOffsetsToTxn(txn::handlers::add_offsets_to_txn(broker, ctx, r).await)
        }
        R::EndTxn(r) => ResponseKind::EndTxn(txn::handlers::end_txn(broker, ctx, r).await),
        R::TxnOffsetCommit(r) => {
            ResponseKind::TxnOffsetCommit(txn::handlers::txn_offset_commit(broker, ctx, r).await)
        }
        R::WriteTxnMarkers(r) => {
            ResponseKind::WriteTxnMarkers(txn::admin::write_txn_markers(broker, ctx, r).await)
        }
        R::DescribeTransactions(r) => {
            ResponseKind::DescribeTransactions(txn::admin::describe_transactions(broker, ctx, r))
        }
        R::ListTransactions(r) => {
            ResponseKind::ListTransactions(txn::admin::list_transactions(broker, ctx, r))
        }
        _ => return Err(HandlerError::NotServed("not in the API table")),
    };
    Ok(Some(Response::Kafka(response)))
}

/// Runs the handler for a request decoded into Shale's own types: a version whose fields
/// kafka-protocol's types lack.
pub async fn handle_newer(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: NewerRequest,
) -> Result<Option<Response>, HandlerError> {
    let response = match request {
        NewerRequest::ApiVersions(r) => Response::Kafka(ResponseKind::ApiVersions(
            handlers::api_versions::handle_v5(broker, ctx, r),
        )),
        NewerRequest::WriteTxnMarkers(r) => Response::Kafka(ResponseKind::WriteTxnMarkers(
            txn::admin::write_txn_markers_v2(broker, ctx, r).await,
        )),
        NewerRequest::TxnOffsetCommit(r) => txn::topic_ids::txn_offset_commit(broker, ctx, r).await,
    };
    Ok(Some(response))
}
