//! The coordinator's log: records go to `__consumer_offsets` through the coordinator host,
//! one RecordBatch v2 per write, answered once the in-sync replicas have it.

use std::sync::Arc;

use shale_group::runtime::{AppendFuture, EncodedRecord, GroupLog, GroupLogError};
use shale_log::{LogError, TopicPartition};
use shale_replica::{AckError, AppendError};

use crate::coordinator_host::{append_records, CoordinatorAppend, CoordinatorAppendError};
use crate::core::BrokerCore;
use crate::internal_topics::OFFSETS_TOPIC;

/// Kafka's `offsets.commit.timeout.ms` default.
const OFFSETS_COMMIT_TIMEOUT_MS: i32 = 5_000;

/// Appends coordinator records to the local `__consumer_offsets` partitions.
pub struct OffsetsLog {
    core: Arc<BrokerCore>,
}

impl OffsetsLog {
    pub fn new(core: Arc<BrokerCore>) -> Self {
        OffsetsLog { core }
    }

    /// Appends locally; returns what the write must wait for to be replicated, with its
    /// timeout (nothing for an empty write).
    fn append_now(
        &self,
        partition: i32,
        records: Vec<EncodedRecord>,
    ) -> Result<Option<(CoordinatorAppend, i32)>, GroupLogError> {
        let broker = &self.core;
        let tp = TopicPartition {
            topic: OFFSETS_TOPIC.to_owned(),
            partition,
        };
        let min_insync_replicas = broker
            .topic_config_value(&broker.image(), OFFSETS_TOPIC, "min.insync.replicas")
            .and_then(|v| v.parse().ok())
            .unwrap_or(broker.config.min_insync_replicas);
        let timeout_ms = broker
            .config
            .properties
            .get("offsets.commit.timeout.ms")
            .and_then(|v| v.parse().ok())
            .unwrap_or(OFFSETS_COMMIT_TIMEOUT_MS);
        match append_records(&broker.replicas, &tp, &records, min_insync_replicas) {
            Ok(appended) => Ok(appended.map(|a| (a, timeout_ms))),
            Err(CoordinatorAppendError::NotLeader(_)) => Err(GroupLogError::NotLeader),
            Err(
                CoordinatorAppendError::Log(e)
                | CoordinatorAppendError::Append(AppendError::Log(e)),
            ) => Err(log_error(e)),
            Err(other) => Err(GroupLogError::Other(other.to_string())),
        }
    }
}

impl GroupLog for OffsetsLog {
    fn append(&self, partition: i32, records: Vec<EncodedRecord>) -> AppendFuture<'_> {
        let result = self.append_now(partition, records);
        Box::pin(async move {
            let Some((appended, timeout_ms)) = result? else {
                return Ok(());
            };
            // The coordinator answers only once the write survives the loss of its leader.
            match appended.replicated(timeout_ms).await {
                Ok(()) => Ok(()),
                Err(AckError::NotLeaderOrFollower) => Err(GroupLogError::NotLeader),
                Err(_) => Err(GroupLogError::Unavailable),
            }
        })
    }
}

fn log_error(e: LogError) -> GroupLogError {
    match e {
        LogError::MessageTooLarge { .. } => GroupLogError::TooLarge,
        LogError::LogOffline(_) | LogError::Storage(_) => GroupLogError::NotLeader,
        other => GroupLogError::Other(other.to_string()),
    }
}
