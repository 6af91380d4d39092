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

    fn append_now(&self, partition: i32, records: Vec<EncodedRecord>) -> Result<(), GroupLogError> {
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
            return Ok(());
        }
        let now = now_ms();
        // Magic 2, no compression, attributes 0, producer id -1: Kafka's coordinator batch.
        let mut builder = BatchBuilder::new(now);
        for (key, value) in &records {
            builder.push(now, Some(key), value.as_deref());
        }
        let mut batch = builder.build().map_err(log_error)?;
        hosted
            .append_coordinator(&mut batch, now)
            .map_err(|e| match e {
                crate::partitions::AppendError::Log(l) => log_error(l),
                other => GroupLogError::Other(other.to_string()),
            })?;
        broker.replicas.notify_appended();
        Ok(())
    }
}

impl GroupLog for OffsetsLog {
    fn append(&self, partition: i32, records: Vec<EncodedRecord>) -> AppendFuture<'_> {
        // The write lands in the page cache; with a single replica it is committed once written.
        let result = self.append_now(partition, records);
        Box::pin(async move { result })
    }
}

fn log_error(e: LogError) -> GroupLogError {
    match e {
        LogError::MessageTooLarge { .. } => GroupLogError::TooLarge,
        LogError::LogOffline(_) | LogError::Storage(_) => GroupLogError::NotLeader,
        other => GroupLogError::Other(other.to_string()),
    }
}
