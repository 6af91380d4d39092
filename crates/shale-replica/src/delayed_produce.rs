//! acks=all: a produce waits until the high watermark passes its batches (Kafka's
//! DelayedProduce), answering NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
//! `min.insync.replicas` meanwhile, NOT_LEADER_OR_FOLLOWER when leadership moved and
//! REQUEST_TIMED_OUT when `timeout_ms` passes first.

use std::sync::Arc;
use std::time::Duration;

use crate::error::AckError;
use crate::partition::Partition;

/// One partition's part of a produce request waiting for replication.
pub struct PendingAck {
    pub partition: Arc<Partition>,
    /// The high watermark that covers the appended batches (their last offset + 1).
    pub required_offset: i64,
    pub min_insync_replicas: i32,
}

/// Waits for every pending partition; returns the outcome of each, in order. All share one
/// deadline, so waiting for them in turn ends with the slowest.
pub async fn wait_all(pending: Vec<PendingAck>, timeout_ms: i32) -> Vec<Result<(), AckError>> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms.max(0) as u64);
    let mut outcomes = Vec::with_capacity(pending.len());
    for p in pending {
        outcomes.push(wait_one(p, deadline).await);
    }
    outcomes
}

async fn wait_one(p: PendingAck, deadline: tokio::time::Instant) -> Result<(), AckError> {
    let mut signal = p.partition.replication.subscribe();
    let epoch_at_append = p.partition.leader_epoch();
    loop {
        let s = *signal.borrow_and_update();
        if !s.is_leader || (s.leader_epoch >= 0 && s.leader_epoch != epoch_at_append) {
            return Err(AckError::NotLeaderOrFollower);
        }
        if p.partition.high_watermark() >= p.required_offset {
            let isr = p.partition.replication.isr_len().unwrap_or(0);
            return if (isr as i64) < i64::from(p.min_insync_replicas) {
                Err(AckError::NotEnoughReplicasAfterAppend)
            } else {
                Ok(())
            };
        }
        tokio::select! {
            changed = signal.changed() => {
                if changed.is_err() {
                    return Err(AckError::NotLeaderOrFollower);
                }
            }
            _ = tokio::time::sleep_until(deadline) => return Err(AckError::TimedOut),
        }
    }
}

/// Waits until `required_offset` is replicated to the ISR of `partition` (a coordinator's
/// write to its internal topic, as Kafka appends them with acks=all), with the outcomes of a
/// produce.
pub async fn wait_replicated(
    partition: Arc<Partition>,
    required_offset: i64,
    min_insync_replicas: i32,
    timeout_ms: i32,
) -> Result<(), AckError> {
    wait_all(
        vec![PendingAck {
            partition,
            required_offset,
            min_insync_replicas,
        }],
        timeout_ms,
    )
    .await
    .first()
    .copied()
    .unwrap_or(Ok(()))
}
