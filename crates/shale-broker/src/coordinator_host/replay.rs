//! A coordinator partition read from its log start to its end, every record handed to the
//! coordinator's replay in offset order: the load step of every coordinator, written once.

use shale_log::batch::{parse_batches, BatchHeader, HEADER_LEN};
use shale_log::records::{batch_body, decode_records};
use shale_log::{Compression, LogError};
use shale_replica::Partition;
use tracing::warn;

/// Upper bound of one decompressed batch while loading: bounds memory on a corrupt or hostile
/// compression ratio.
const DECOMPRESSED_BATCH_BYTES_MAX: u64 = 256 * 1024 * 1024;

/// One record met while replaying, with the batch it came in.
pub struct ReplayedRecord<'a> {
    pub batch: &'a BatchHeader,
    /// The record's offset in the partition.
    pub offset: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

/// Reads `partition` from its log start to its log end in steps of `read_bytes_max` and
/// calls `replay` for every record at or above the log start, control records included (a
/// coordinator that keeps transactional records needs their markers). Stops at the first
/// unreadable batch with its error; what was replayed so far stays replayed.
pub fn replay_partition(
    partition: &Partition,
    read_bytes_max: usize,
    mut replay: impl FnMut(ReplayedRecord<'_>),
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
            let batch = bytes
                .get(position..position + header.total_len())
                .unwrap_or_default();
            position += header.total_len();
            if header.last_offset() < offset || batch.len() < HEADER_LEN {
                continue;
            }
            let body = if header.compression() == Some(Compression::None) {
                None
            } else {
                Some(batch_body(batch, DECOMPRESSED_BATCH_BYTES_MAX)?)
            };
            let body_bytes: &[u8] = match &body {
                Some(b) => b,
                None => &batch[HEADER_LEN..],
            };
            for record in decode_records(body_bytes, header.record_count)? {
                let record_offset = header.base_offset + i64::from(record.offset_delta);
                if record_offset < offset {
                    continue;
                }
                replay(ReplayedRecord {
                    batch: header,
                    offset: record_offset,
                    key: record.key,
                    value: record.value,
                });
            }
        }
        if next <= offset {
            break;
        }
        offset = next;
    }
    Ok(())
}
