//! What the tests build share-partitions and log reads from.

use crate::partition::{
    AckBatch, LogBatch, LogRead, RecordState, SharePartition, SharePartitionConfig,
};

pub const LOCK_MS: u64 = 30_000;

pub fn config() -> SharePartitionConfig {
    SharePartitionConfig {
        record_lock_duration_ms: LOCK_MS,
        delivery_count_limit: 5,
        max_in_flight_records: 200,
        renew_acknowledge_enabled: true,
    }
}

pub fn partition() -> SharePartition {
    SharePartition::new(config(), 0)
}

/// A plain batch, no producer.
pub fn batch(base_offset: i64, last_offset: i64) -> LogBatch {
    LogBatch {
        base_offset,
        last_offset,
        producer_id: -1,
        is_transactional: false,
        is_control: false,
    }
}

/// A read from `fetch_offset` of `batches`, everything below the last one readable.
pub fn read(fetch_offset: i64, batches: Vec<LogBatch>) -> LogRead {
    let high_watermark = batches.last().map_or(fetch_offset, |b| b.last_offset + 1);
    LogRead {
        fetch_offset,
        batches,
        log_start_offset: 0,
        high_watermark,
        aborted: Vec::new(),
        read_committed: false,
    }
}

/// A read of the partition's next fetch offset from a log of the given batches.
pub fn read_next(partition: &SharePartition, log: &[LogBatch]) -> LogRead {
    let fetch_offset = partition.next_fetch_offset();
    let batches = log
        .iter()
        .filter(|b| b.last_offset >= fetch_offset)
        .copied()
        .collect();
    let mut read = read(fetch_offset, batches);
    read.high_watermark = log.last().map_or(0, |b| b.last_offset + 1);
    read
}

pub fn ack(first_offset: i64, last_offset: i64, ack_type: i8) -> AckBatch {
    AckBatch {
        first_offset,
        last_offset,
        ack_types: vec![ack_type],
    }
}

pub fn state(partition: &SharePartition, offset: i64) -> Option<(RecordState, i16)> {
    partition
        .record_state(offset)
        .map(|snapshot| (snapshot.state, snapshot.delivery_count))
}

pub const ACCEPT: i8 = 1;
pub const RELEASE: i8 = 2;
pub const REJECT: i8 = 3;
pub const RENEW: i8 = 4;
