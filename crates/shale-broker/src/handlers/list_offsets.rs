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

use super::leader_partition;
use crate::dispatch::RequestContext;
use crate::errors::log_error_code;
use crate::Broker;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

pub fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let version = ctx.version();
    let read_committed = version >= 2 && request.isolation_level == 1;
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let base = ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_timestamp(-1)
                        .with_offset(-1)
                        .with_leader_epoch(-1);
                    let partition = match leader_partition(
                        broker,
                        t.name.0.as_str(),
                        p.partition_index,
                        p.current_leader_epoch,
                    ) {
                        Ok(partition) => partition,
                        Err(code) => return base.with_error_code(code),
                    };
                    // The leader epoch field exists from v4; older versions must leave it unset.
                    let epoch = if version >= 4 {
                        partition.leader_epoch()
                    } else {
                        -1
                    };
                    let visible_end = if read_committed {
                        partition.last_stable_offset()
                    } else {
                        partition.high_watermark()
                    };
                    match p.timestamp {
                        LATEST | LATEST_TIERED => {
                            base.with_offset(visible_end).with_leader_epoch(epoch)
                        }
                        EARLIEST | EARLIEST_LOCAL => base
                            .with_offset(partition.log.log_start_offset())
                            .with_leader_epoch(epoch),
                        MAX_TIMESTAMP => match partition.log.max_timestamp_offset() {
                            Ok(Some((offset, ts))) if offset < visible_end => base
                                .with_offset(offset)
                                .with_timestamp(ts)
                                .with_leader_epoch(epoch),
                            Ok(_) => base,
                            Err(e) => base.with_error_code(log_error_code(&e).0),
                        },
                        ts if ts >= 0 => match partition.log.offset_for_timestamp(ts) {
                            Ok(Some((offset, found_ts))) if offset < visible_end => base
                                .with_offset(offset)
                                .with_timestamp(found_ts)
                                .with_leader_epoch(epoch),
                            Ok(_) => base,
                            Err(e) => base.with_error_code(log_error_code(&e).0),
                        },
                        _ => base.with_error_code(ResponseError::InvalidRequest.code()),
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

pub fn offset_for_leader_epoch(
    broker: &Arc<Broker>,
    _ctx: &RequestContext,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let base = EpochEndOffset::default()
                        .with_partition(p.partition)
                        .with_leader_epoch(-1)
                        .with_end_offset(-1);
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
