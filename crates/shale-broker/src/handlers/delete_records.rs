//! DeleteRecords: moves the log start offset forward.

use std::sync::Arc;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use kafka_protocol::ResponseError;

use super::leader_partition;
use crate::authorization::{AclOperation, ResourceType};
use crate::broker::Broker;
use crate::errors::{authorization_failed_code, log_error_code};
use crate::request::RequestContext;

/// Each topic needs DELETE (else TOPIC_AUTHORIZATION_FAILED).
pub fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let authz = broker.authz(ctx);
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let name = t.name.0.to_string();
            let deletable = authz.allows(AclOperation::Delete, ResourceType::Topic, &name);
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let base = DeleteRecordsPartitionResult::default()
                        .with_partition_index(p.partition_index)
                        .with_low_watermark(-1);
                    if !deletable {
                        return base
                            .with_error_code(authorization_failed_code(ResourceType::Topic));
                    }
                    let partition = match leader_partition(broker, &name, p.partition_index, -1) {
                        Ok(partition) => partition,
                        Err(code) => return base.with_error_code(code),
                    };
                    // -1 means "up to the high watermark"; beyond it is out of range.
                    if p.offset < -1 || p.offset > partition.high_watermark() {
                        return base.with_error_code(ResponseError::OffsetOutOfRange.code());
                    }
                    match partition.delete_records_before(p.offset) {
                        Ok(low) => base.with_low_watermark(low),
                        Err(e) => base.with_error_code(log_error_code(&e).0),
                    }
                })
                .collect();
            DeleteRecordsTopicResult::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect();
    DeleteRecordsResponse::default().with_topics(topics)
}
