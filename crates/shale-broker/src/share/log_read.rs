//! A share-partition's read of its log: whole batches from the share-partition's next fetch
//! offset up to the high watermark (the last stable offset under read_committed), described
//! to the share-partition (`LogRead`) so that it decides what to acquire, and then the batches
//! that hold the acquired records, which is what a ShareFetch answer carries (the client keeps
//! only the acquired offsets of them).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use shale_log::batch::{BatchHeader, HEADER_LEN};
use shale_log::LogError;
use shale_metadata::MetadataImage;
use shale_replica::{ReadRequest, ReplicaError, ReplicaManager};
use shale_share::partition::{AcquiredRecords, LogBatch, LogRead};

/// Why a share-partition's log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ShareReadError {
    #[error(transparent)]
    Replica(#[from] ReplicaError),
    #[error(transparent)]
    Log(#[from] LogError),
}

/// One batch found by a read: where its bytes are, and its header.
#[derive(Debug)]
struct FoundBatch {
    file: Arc<File>,
    position: u64,
    header: BatchHeader,
}

/// What one read found: where the batches are and the view the share-partition takes. Only
/// headers are read here; the bytes of the batches that end up acquired are read once, by
/// [`ShareLogRead::batches_for`].
#[derive(Debug)]
pub struct ShareLogRead {
    batches: Vec<FoundBatch>,
    pub read: LogRead,
}

/// Reads `topic`-`partition` from `fetch_offset`, at most `max_bytes` (one batch at least),
/// walking batch headers until they hold `records_wanted` records: a share fetch acquires at
/// most that many, so reading further would only be thrown away.
#[allow(clippy::too_many_arguments)]
pub fn read_partition(
    replicas: &ReplicaManager,
    image: &MetadataImage,
    topic: &str,
    partition: i32,
    fetch_offset: i64,
    max_bytes: usize,
    read_committed: bool,
    records_wanted: usize,
) -> Result<ShareLogRead, ShareReadError> {
    let found = replicas.read(
        image,
        &ReadRequest {
            topic,
            partition,
            fetch_offset,
            current_leader_epoch: -1,
            read_committed,
            max_bytes,
            min_one: true,
        },
    )?;
    let upper = if read_committed {
        found.last_stable_offset
    } else {
        found.high_watermark
    };
    let mut batches = Vec::new();
    let mut records = 0usize;
    let mut header_bytes = [0u8; HEADER_LEN];
    'slices: for slice in found.records? {
        let mut offset_in_slice = 0u64;
        while offset_in_slice + HEADER_LEN as u64 <= u64::from(slice.len) {
            let position = slice.position + offset_in_slice;
            slice
                .file
                .read_exact_at(&mut header_bytes, position)
                .map_err(LogError::Storage)?;
            let header = BatchHeader::decode(&header_bytes)?;
            let total = header.total_len() as u64;
            if total < HEADER_LEN as u64 || offset_in_slice + total > u64::from(slice.len) {
                break;
            }
            if header.base_offset >= upper {
                break 'slices;
            }
            records += usize::try_from(header.last_offset() - header.base_offset + 1).unwrap_or(0);
            batches.push(FoundBatch {
                file: slice.file.clone(),
                position,
                header,
            });
            offset_in_slice += total;
            if records >= records_wanted.max(1) {
                break 'slices;
            }
        }
    }
    let aborted = found
        .aborted
        .unwrap_or_default()
        .into_iter()
        .map(|a| (a.producer_id, a.first_offset))
        .collect();
    let log_batches = batches
        .iter()
        .map(|b| LogBatch {
            base_offset: b.header.base_offset,
            last_offset: b.header.last_offset(),
            producer_id: b.header.producer_id,
            is_transactional: b.header.is_transactional(),
            is_control: b.header.is_control(),
        })
        .collect();
    Ok(ShareLogRead {
        batches,
        read: LogRead {
            fetch_offset,
            batches: log_batches,
            log_start_offset: found.log_start_offset,
            high_watermark: upper,
            aborted,
            read_committed,
        },
    })
}

impl ShareLogRead {
    /// The whole batches that hold any of `acquired`, in log order, as one record set.
    pub fn batches_for(&self, acquired: &[AcquiredRecords]) -> Result<Bytes, LogError> {
        let mut out = BytesMut::new();
        for batch in &self.batches {
            let header = &batch.header;
            let holds_acquired = acquired.iter().any(|range| {
                range.first_offset <= header.last_offset()
                    && range.last_offset >= header.base_offset
            });
            if !holds_acquired {
                continue;
            }
            let start = out.len();
            out.resize(start + header.total_len(), 0);
            batch
                .file
                .read_exact_at(&mut out[start..], batch.position)
                .map_err(LogError::Storage)?;
        }
        Ok(out.freeze())
    }
}
