//! `__transaction_state` as the coordinator's log: one record per transition, appended as a
//! RecordBatch v2 of its own and committed once the in-sync replicas have it; replayed in
//! full when this broker becomes a partition's leader.

use std::sync::Arc;

use shale_log::batch::{parse_batches, HEADER_LEN};
use shale_log::records::{batch_body, decode_records, BatchBuilder};
use shale_log::{LogError, TopicPartition};
use shale_txn::coordinator::{
    decode_txn_log_record, encode_txn_log_record, TxnCoordinator, TxnLogAppendError, TxnLogRecord,
};
use tracing::warn;

use super::TXN_STATE_TOPIC;
use crate::time::now_ms;
use crate::Broker;
use shale_replica::delayed_produce::{self, PendingAck};
use shale_replica::{AckError, AppendError, Partition};

/// Bytes read per step while loading.
const LOAD_READ_BYTES: usize = 5 * 1024 * 1024;
/// Upper bound of one decompressed batch while loading.
const DECOMPRESSED_BATCH_BYTES_MAX: u64 = 256 * 1024 * 1024;

/// A transaction-log record written to the leader, not yet known to be replicated.
pub struct LogAppended {
    partition: Arc<Partition>,
    /// The high watermark that covers the record.
    required_offset: i64,
    min_insync_replicas: i32,
}

/// How long a transaction-log record may wait for its replicas (Kafka's
/// `request.timeout.ms` for the coordinator's appends).
const REPLICATION_TIMEOUT_MS: i32 = 30_000;

/// Writes one record to the local leader of `partition`; [`await_replication`] then says
/// whether it is committed.
pub fn append(
    broker: &Broker,
    partition: i32,
    record: &TxnLogRecord,
) -> Result<LogAppended, TxnLogAppendError> {
    let tp = TopicPartition {
        topic: TXN_STATE_TOPIC.to_owned(),
        partition,
    };
    let hosted = broker
        .replicas
        .get(&tp)
        .ok_or(TxnLogAppendError::NotLeader)?;
    if hosted.leader_id() != broker.node_id() {
        return Err(TxnLogAppendError::NotLeader);
    }
    let (key, value) = encode_txn_log_record(record);
    let now = now_ms();
    let mut builder = BatchBuilder::new(now);
    builder.push(now, Some(&key), value.as_deref());
    let mut batch = builder.build().map_err(log_error)?;
    let appended = hosted
        .append_coordinator(&mut batch, now)
        .map_err(|e| match e {
            AppendError::Log(e) => log_error(e),
            AppendError::Producer(_) => TxnLogAppendError::Unavailable,
        })?;
    // Followers waiting in a fetch take the record at once.
    broker.replicas.notify_appended();
    let min_insync_replicas = broker
        .topic_config_value(&broker.image(), TXN_STATE_TOPIC, "min.insync.replicas")
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(broker.config.transaction_state_log_min_isr);
    Ok(LogAppended {
        partition: hosted,
        required_offset: appended.last_offset + 1,
        min_insync_replicas,
    })
}

/// Waits until the in-sync replicas have the record (immediately on a single replica).
pub async fn await_replication(appended: LogAppended) -> Result<(), TxnLogAppendError> {
    let pending = PendingAck {
        partition: appended.partition,
        required_offset: appended.required_offset,
        min_insync_replicas: appended.min_insync_replicas,
    };
    let replicated = delayed_produce::wait_all(vec![pending], REPLICATION_TIMEOUT_MS)
        .await
        .first()
        .copied()
        .unwrap_or(Ok(()));
    match replicated {
        Ok(()) => Ok(()),
        Err(AckError::NotLeaderOrFollower) => Err(TxnLogAppendError::NotLeader),
        Err(_) => Err(TxnLogAppendError::Unavailable),
    }
}

fn log_error(e: LogError) -> TxnLogAppendError {
    match e {
        LogError::MessageTooLarge { .. } => TxnLogAppendError::TooLarge,
        LogError::LogOffline(_) | LogError::Storage(_) => TxnLogAppendError::NotLeader,
        other => {
            warn!("transaction log append failed: {other}");
            TxnLogAppendError::Unavailable
        }
    }
}

/// Replays the whole partition into `coordinator`; returns the number of records applied.
pub fn load(partition: &Partition, coordinator: &mut TxnCoordinator) -> Result<usize, LogError> {
    let log = &partition.log;
    let end = log.log_end_offset();
    let mut offset = log.log_start_offset();
    let mut applied = 0usize;
    while offset < end {
        let read = log.read(offset, LOAD_READ_BYTES, end, true)?;
        let bytes = read.to_bytes().map_err(LogError::Storage)?;
        let headers = parse_batches(&bytes)?;
        let Some(last) = headers.last() else { break };
        let next = last.last_offset() + 1;
        let mut position = 0usize;
        for header in &headers {
            let batch = bytes
                .get(position..position + header.total_len())
                .unwrap_or_default();
            position += header.total_len();
            if header.last_offset() < offset || header.is_control() || batch.len() < HEADER_LEN {
                continue;
            }
            let body = if header.compression() == Some(shale_log::Compression::None) {
                None
            } else {
                Some(batch_body(batch, DECOMPRESSED_BATCH_BYTES_MAX)?)
            };
            let body_bytes: &[u8] = match &body {
                Some(b) => b,
                None => &batch[HEADER_LEN..],
            };
            for record in decode_records(body_bytes, header.record_count)? {
                let Some(key) = record.key else { continue };
                match decode_txn_log_record(key, record.value) {
                    Ok(decoded) => {
                        coordinator.replay(&decoded);
                        applied += 1;
                    }
                    Err(e) => warn!(tp = %partition.tp, "skipping transaction log record: {e}"),
                }
            }
        }
        if next <= offset {
            break;
        }
        offset = next;
    }
    Ok(applied)
}
