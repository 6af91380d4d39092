//! Rebuilds a coordinator partition from `__consumer_offsets` when this broker becomes its
//! leader.

use std::sync::Arc;

use shale_group::runtime::PartitionLoader;
use shale_log::batch::{parse_batches, HEADER_LEN};
use shale_log::records::{batch_body, decode_records};
use shale_log::LogError;
use tracing::{info, warn};

use shale_replica::Partition;

/// Upper bound of one decompressed batch while loading: bounds memory on a corrupt or hostile
/// compression ratio.
const DECOMPRESSED_BATCH_BYTES_MAX: u64 = 256 * 1024 * 1024;

/// Control record type of a commit marker (0 is abort).
const CONTROL_TYPE_COMMIT: i16 = 1;

/// Reads the partition on a blocking thread, replays it, then starts serving it.
pub fn spawn(partition: Arc<Partition>, loader: PartitionLoader, read_bytes_max: usize) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        warn!("no runtime to load {}", partition.tp);
        return;
    };
    runtime.spawn_blocking(move || {
        let mut loader = loader;
        let started = std::time::Instant::now();
        if let Err(e) = replay_log(&partition, &mut loader, read_bytes_max) {
            // Serve what could be read rather than nothing: Kafka does the same on a
            // corrupt tail (the log layer truncates it on recovery).
            warn!(tp = %partition.tp, "loading stopped early: {e}");
        }
        let summary = loader.finish();
        info!(
            tp = %partition.tp,
            records = summary.records_replayed,
            skipped = summary.records_skipped,
            groups = summary.groups,
            activated = summary.activated,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "loaded group coordinator partition"
        );
    });
}

fn replay_log(
    partition: &Partition,
    loader: &mut PartitionLoader,
    read_bytes_max: usize,
) -> Result<(), LogError> {
    let log = &partition.log;
    let end = log.log_end_offset();
    let mut offset = log.log_start_offset();
    while offset < end {
        let read = log.read(offset, read_bytes_max, end, true)?;
        let bytes = read.to_bytes().map_err(LogError::Storage)?;
        let headers = parse_batches(&bytes)?;
        let Some(last) = headers.last() else {
            warn!(tp = %partition.tp, offset, end, "no batch found below the log end while loading");
            break;
        };
        let next = last.last_offset() + 1;
        let mut position = 0usize;
        for header in &headers {
            let batch = &bytes[position..position + header.total_len()];
            position += header.total_len();
            if header.last_offset() < offset {
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
            let records = decode_records(body_bytes, header.record_count)?;
            for record in records {
                if header.base_offset + i64::from(record.offset_delta) < offset {
                    continue;
                }
                if header.is_control() {
                    if let Some(key) = record.key {
                        if key.len() >= 4 {
                            let kind = i16::from_be_bytes([key[2], key[3]]);
                            loader.replay_transaction_marker(
                                header.producer_id,
                                kind == CONTROL_TYPE_COMMIT,
                            );
                        }
                    }
                    continue;
                }
                let Some(key) = record.key else { continue };
                if header.is_transactional() {
                    loader.replay_transactional(header.producer_id, key, record.value);
                } else {
                    loader.replay(key, record.value);
                }
            }
        }
        if next <= offset {
            break;
        }
        offset = next;
    }
    Ok(())
}
