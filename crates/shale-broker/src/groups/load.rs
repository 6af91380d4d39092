//! Rebuilds a coordinator partition from `__consumer_offsets` when this broker becomes its
//! leader.

use std::sync::Arc;

use shale_group::runtime::PartitionLoader;
use shale_log::LogError;
use tracing::{info, warn};

use shale_replica::Partition;

use crate::coordinator_host::replay_partition;

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
    replay_partition(partition, read_bytes_max, |record| {
        if record.batch.is_control() {
            if let Some(marker) = decode_marker_key(record.key) {
                loader.replay_transaction_marker(record.batch.producer_id, marker);
            }
            return;
        }
        let Some(key) = record.key else { return };
        if record.batch.is_transactional() {
            loader.replay_transactional(record.batch.producer_id, key, record.value);
        } else {
            loader.replay(key, record.value);
        }
    })
}

/// Whether a control record's key is a COMMIT (true) or ABORT (false) marker; `None` when it
/// is too short to say.
fn decode_marker_key(key: Option<&[u8]>) -> Option<bool> {
    let key = key.filter(|k| k.len() >= 4)?;
    Some(i16::from_be_bytes([key[2], key[3]]) == CONTROL_TYPE_COMMIT)
}
