//! ListOffsets (earliest, latest, by timestamp, max timestamp) and OffsetForLeaderEpoch.

use std::sync::Arc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
};
use kafka_protocol::ResponseError;
use shale_log::{FoundRecord, LogError};

use super::leader_partition;
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::{authorization_failed_code, log_error_code};
use crate::request::RequestContext;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;
const EARLIEST_PENDING_UPLOAD: i64 = -6;

/// The first ListOffsets version that knows a special timestamp; older requests carrying it
/// get UNSUPPORTED_VERSION, as from Kafka.
fn special_timestamp_min_version(timestamp: i64) -> Option<i16> {
    match timestamp {
        MAX_TIMESTAMP => Some(7),
        EARLIEST_LOCAL => Some(8),
        LATEST_TIERED => Some(9),
        EARLIEST_PENDING_UPLOAD => Some(11),
        _ => None,
    }
}

/// Each topic needs DESCRIBE (else TOPIC_AUTHORIZATION_FAILED for its partitions).
pub fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let version = ctx.version();
    let read_committed = version >= 2 && request.isolation_level == 1;
    let authz = broker.authz(ctx);
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let described = authz.allows(
                AclOperation::Describe,
                ResourceType::Topic,
                t.name.0.as_str(),
            );
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let base = ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_timestamp(-1)
                        .with_offset(-1)
                        .with_leader_epoch(-1);
                    if !described {
                        return base
                            .with_error_code(authorization_failed_code(ResourceType::Topic));
                    }
                    let partition = match leader_partition(
                        broker,
                        t.name.0.as_str(),
                        p.partition_index,
                        p.current_leader_epoch,
                    ) {
                        Ok(partition) => partition,
                        Err(code) => return base.with_error_code(code),
                    };
                    if let Some(min_version) = special_timestamp_min_version(p.timestamp) {
                        if version < min_version {
                            return base.with_error_code(ResponseError::UnsupportedVersion.code());
                        }
                    }
                    // The leader epoch field exists from v4; older versions must leave it unset.
                    let epoch_of = |epoch: Option<i32>| {
                        if version >= 4 {
                            epoch.unwrap_or(-1)
                        } else {
                            -1
                        }
                    };
                    let visible_end = if read_committed {
                        partition.last_stable_offset()
                    } else {
                        partition.high_watermark()
                    };
                    let found = |r: Result<Option<FoundRecord>, LogError>| match r {
                        Ok(Some(r)) if r.offset < visible_end => base
                            .clone()
                            .with_offset(r.offset)
                            .with_timestamp(r.timestamp_ms)
                            .with_leader_epoch(epoch_of(Some(r.leader_epoch))),
                        Ok(_) => base.clone(),
                        Err(e) => base.clone().with_error_code(log_error_code(&e).0),
                    };
                    match p.timestamp {
                        // The partition's current epoch, as Kafka answers the latest offset.
                        LATEST => base
                            .with_offset(visible_end)
                            .with_leader_epoch(epoch_of(Some(partition.leader_epoch()))),
                        // Without tiered storage the local log is the whole log.
                        EARLIEST | EARLIEST_LOCAL => {
                            let start = partition.log.log_start_offset();
                            base.with_offset(start)
                                .with_leader_epoch(epoch_of(partition.log.epoch_for_offset(start)))
                        }
                        // Nothing is tiered or waiting for upload: Kafka answers no offset.
                        LATEST_TIERED | EARLIEST_PENDING_UPLOAD => base,
                        MAX_TIMESTAMP => found(partition.log.max_timestamp_record()),
                        ts if ts >= 0 => found(partition.log.record_for_timestamp(ts)),
                        _ => base.with_error_code(ResponseError::UnsupportedVersion.code()),
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

/// A follower with CLUSTER_ACTION may ask for any topic; otherwise each topic needs
/// DESCRIBE (else TOPIC_AUTHORIZATION_FAILED), as Kafka checks.
pub fn offset_for_leader_epoch(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let authz = broker.authz(ctx);
    let cluster_action = authz.allows_cluster(AclOperation::ClusterAction);
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let described = cluster_action
                || authz.allows(
                    AclOperation::Describe,
                    ResourceType::Topic,
                    t.topic.0.as_str(),
                );
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let base = EpochEndOffset::default()
                        .with_partition(p.partition)
                        .with_leader_epoch(-1)
                        .with_end_offset(-1);
                    if !described {
                        return base
                            .with_error_code(authorization_failed_code(ResourceType::Topic));
                    }
                    match leader_partition(
                        broker,
                        t.topic.0.as_str(),
                        p.partition,
                        p.current_leader_epoch,
                    ) {
                        Err(code) => base.with_error_code(code),
                        Ok(partition) => match partition.log.end_offset_for_epoch(p.leader_epoch) {
                            Some((epoch, end)) => {
                                base.with_leader_epoch(epoch).with_end_offset(end)
                            }
                            None => base,
                        },
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(t.topic)
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
