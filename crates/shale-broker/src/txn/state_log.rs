//! `__transaction_state` as the coordinator's log: one record per transition, appended as a
//! RecordBatch v2 of its own and committed once the in-sync replicas have it; replayed in
//! full when this broker becomes a partition's leader.

use shale_log::{LogError, TopicPartition};
use shale_txn::coordinator::{
    decode_txn_log_record, encode_txn_log_record, TxnCoordinator, TxnLogAppendError, TxnLogRecord,
};
use tracing::warn;

use crate::coordinator_host::{
    append_records, replay_partition, CoordinatorAppend, CoordinatorAppendError,
};
use crate::core::BrokerCore;
use crate::internal_topics::TXN_STATE_TOPIC;
use shale_replica::{AckError, AppendError, Partition};

/// Bytes read per step while loading.
const LOAD_READ_BYTES: usize = 5 * 1024 * 1024;

/// A transaction-log record written to the leader, not yet known to be replicated.
pub struct LogAppended(CoordinatorAppend);

/// How long a transaction-log record may wait for its replicas (Kafka's
/// `request.timeout.ms` for the coordinator's appends).
const REPLICATION_TIMEOUT_MS: i32 = 30_000;

/// Writes one record to the local leader of `partition`; [`await_replication`] then says
/// whether it is committed.
pub fn append(
    broker: &BrokerCore,
    partition: i32,
    record: &TxnLogRecord,
) -> Result<LogAppended, TxnLogAppendError> {
    let tp = TopicPartition {
        topic: TXN_STATE_TOPIC.to_owned(),
        partition,
    };
    let min_insync_replicas = broker
        .topic_config_value(&broker.image(), TXN_STATE_TOPIC, "min.insync.replicas")
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(broker.config.transaction_state_log_min_isr);
    let (key, value) = encode_txn_log_record(record);
    match append_records(&broker.replicas, &tp, &[(key, value)], min_insync_replicas) {
        Ok(Some(appended)) => Ok(LogAppended(appended)),
        // One record always makes a batch.
        Ok(None) => Err(TxnLogAppendError::Unavailable),
        Err(CoordinatorAppendError::NotLeader(_)) => Err(TxnLogAppendError::NotLeader),
        Err(
            CoordinatorAppendError::Log(e) | CoordinatorAppendError::Append(AppendError::Log(e)),
        ) => Err(log_error(e)),
        Err(CoordinatorAppendError::Append(AppendError::Producer(_))) => {
            Err(TxnLogAppendError::Unavailable)
        }
    }
}

/// Waits until the in-sync replicas have the record (immediately on a single replica).
pub async fn await_replication(appended: LogAppended) -> Result<(), TxnLogAppendError> {
    match appended.0.replicated(REPLICATION_TIMEOUT_MS).await {
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
    let mut applied = 0usize;
    replay_partition(partition, LOAD_READ_BYTES, |record| {
        if record.batch.is_control() {
            return;
        }
        let Some(key) = record.key else { return };
        match decode_txn_log_record(key, record.value) {
            Ok(decoded) => {
                coordinator.replay(&decoded);
                applied += 1;
            }
            Err(e) => warn!(tp = %partition.tp, "skipping transaction log record: {e}"),
        }
    })?;
    Ok(applied)
}
