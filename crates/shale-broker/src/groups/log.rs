//! The coordinator's log: records go to `__consumer_offsets` as one RecordBatch v2 per write.

use std::sync::Weak;

use shale_group::runtime::{AppendFuture, EncodedRecord, GroupLog, GroupLogError};
use shale_log::records::BatchBuilder;
use shale_log::{LogError, TopicPartition};

use super::OFFSETS_TOPIC;
use crate::time::now_ms;
use crate::Broker;

/// Appends coordinator records to the local `__consumer_offsets` partitions.
pub struct OffsetsLog {
    broker: Weak<Broker>,
}

impl OffsetsLog {
    pub fn new(broker: Weak<Broker>) -> Self {
        OffsetsLog { broker }
    }

    /// Appends locally; returns what the write must wait for to be replicated (nothing for
    /// an empty write).
    fn append_now(
        &self,
        partition: i32,
        records: Vec<EncodedRecord>,
    ) -> Result<Option<Replication>, GroupLogError> {
        let broker = self.broker.upgrade().ok_or(GroupLogError::NotLeader)?;
        let tp = TopicPartition {
            topic: OFFSETS_TOPIC.to_owned(),
            partition,
        };
        let hosted = broker.replicas.get(&tp).ok_or(GroupLogError::NotLeader)?;
        if hosted.leader_id() != broker.node_id() {
            return Err(GroupLogError::NotLeader);
        }
        if records.is_empty() {
            return Ok(None);
        }
        let now = now_ms();
        // Magic 2, no compression, attributes 0, producer id -1: Kafka's coordinator batch.
        let mut builder = BatchBuilder::new(now);
        for (key, value) in &records {
            builder.push(now, Some(key), value.as_deref());
        }
        let mut batch = builder.build().map_err(log_error)?;
        let appended = hosted
            .append_coordinator(&mut batch, now)
            .map_err(|e| match e {
                shale_replica::AppendError::Log(l) => log_error(l),
                other => GroupLogError::Other(other.to_string()),
            })?;
        broker.replicas.notify_appended();
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
        Ok(Some(Replication {
            partition: hosted,
            required_offset: appended.last_offset + 1,
            min_insync_replicas,
            timeout_ms,
        }))
    }
}

/// Kafka's `offsets.commit.timeout.ms` default.
const OFFSETS_COMMIT_TIMEOUT_MS: i32 = 5_000;

/// A coordinator write waiting for the ISR, as Kafka's coordinator appends with acks=all.
struct Replication {
    partition: std::sync::Arc<shale_replica::Partition>,
    required_offset: i64,
    min_insync_replicas: i32,
    timeout_ms: i32,
}

impl GroupLog for OffsetsLog {
    fn append(&self, partition: i32, records: Vec<EncodedRecord>) -> AppendFuture<'_> {
        let result = self.append_now(partition, records);
        Box::pin(async move {
            let Some(r) = result? else {
                return Ok(());
            };
            // The coordinator answers only once the write survives the loss of its leader.
            let replicated = shale_replica::delayed_produce::wait_replicated(
                r.partition,
                r.required_offset,
                r.min_insync_replicas,
                r.timeout_ms,
            )
            .await;
            match replicated {
                Ok(()) => Ok(()),
                Err(shale_replica::AckError::NotLeaderOrFollower) => Err(GroupLogError::NotLeader),
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
