//! A coordinator's write: its records appended to the local leader of its partition as one
//! RecordBatch v2 (magic 2, no compression, producer id -1: Kafka's coordinator batch), and
//! then awaited until the in-sync replicas have it (Kafka's coordinators append with
//! acks=all), so an answer never rests on a write a new leader could miss.

use std::sync::Arc;

use shale_log::records::BatchBuilder;
use shale_log::{now_ms, LogError, TopicPartition};
use shale_replica::delayed_produce;
use shale_replica::{AckError, AppendError, Partition, ReplicaManager};

/// Why a coordinator's records were not appended.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorAppendError {
    #[error("this broker does not lead {0}")]
    NotLeader(TopicPartition),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Append(#[from] AppendError),
}

/// Records appended to the leader, not yet known to be replicated.
#[derive(Debug)]
pub struct CoordinatorAppend {
    partition: Arc<Partition>,
    /// The high watermark that covers the records.
    required_offset: i64,
    /// The offset of the first record.
    base_offset: i64,
    min_insync_replicas: i32,
}

impl CoordinatorAppend {
    /// The offset the first record was given (the others follow it one by one).
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Waits until the in-sync replicas have the records (at once on a single replica).
    pub async fn replicated(self, timeout_ms: i32) -> Result<(), AckError> {
        delayed_produce::wait_replicated(
            self.partition,
            self.required_offset,
            self.min_insync_replicas,
            timeout_ms,
        )
        .await
    }
}

/// Appends `records` (key, value) to this broker's leader of `tp` as one batch; `None` for
/// no records. `min_insync_replicas` is what the replication wait will require.
pub fn append_records(
    replicas: &ReplicaManager,
    tp: &TopicPartition,
    records: &[(Vec<u8>, Option<Vec<u8>>)],
    min_insync_replicas: i32,
) -> Result<Option<CoordinatorAppend>, CoordinatorAppendError> {
    let hosted = replicas
        .get(tp)
        .filter(|p| p.leader_id() == replicas.node_id())
        .ok_or_else(|| CoordinatorAppendError::NotLeader(tp.clone()))?;
    if records.is_empty() {
        return Ok(None);
    }
    let now = now_ms();
    let mut builder = BatchBuilder::new(now);
    for (key, value) in records {
        builder.push(now, Some(key), value.as_deref());
    }
    let mut batch = builder.build()?;
    let appended = hosted.append_coordinator(&mut batch, now)?;
    // Followers waiting in a fetch take the records at once.
    replicas.notify_appended();
    Ok(Some(CoordinatorAppend {
        partition: hosted,
        required_offset: appended.last_offset + 1,
        base_offset: appended.last_offset + 1 - records.len() as i64,
        min_insync_replicas,
    }))
}
