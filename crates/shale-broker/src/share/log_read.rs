//! A share-partition's read of its log: whole batches from the share-partition's next fetch
//! offset up to the high watermark (the last stable offset under read_committed), described
//! to the share-partition (`LogRead`) so that it decides what to acquire, and then the batches
//! that hold the acquired records, which is what a ShareFetch answer carries (the client keeps
//! only the acquired offsets of them).

use bytes::{Bytes, BytesMut};
use shale_log::batch::{parse_batches, BatchHeader};
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

/// What one read found: the bytes of whole batches and the view the share-partition takes.
#[derive(Debug)]
pub struct ShareLogRead {
    bytes: Bytes,
    headers: Vec<BatchHeader>,
    pub read: LogRead,
}

/// Reads `topic`-`partition` from `fetch_offset`, at most `max_bytes` (one batch at least).
pub fn read_partition(
    replicas: &ReplicaManager,
    image: &MetadataImage,
    topic: &str,
    partition: i32,
    fetch_offset: i64,
    max_bytes: usize,
    read_committed: bool,
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
    let mut buffer = BytesMut::new();
    for slice in found.records? {
        buffer.extend_from_slice(&slice.read_to_bytes().map_err(LogError::Storage)?);
    }
    let bytes = buffer.freeze();
    // Nothing to read at this offset yet is an empty read, not a malformed one.
    let headers = if bytes.is_empty() {
        Vec::new()
    } else {
        parse_batches(&bytes)?
    };
    let upper = if read_committed {
        found.last_stable_offset
    } else {
        found.high_watermark
    };
    let batches = headers
        .iter()
        .filter(|h| h.base_offset < upper)
        .map(|h| LogBatch {
            base_offset: h.base_offset,
            last_offset: h.last_offset(),
            producer_id: h.producer_id,
            is_transactional: h.is_transactional(),
            is_control: h.is_control(),
        })
        .collect();
    let aborted = found
        .aborted
        .unwrap_or_default()
        .into_iter()
        .map(|a| (a.producer_id, a.first_offset))
        .collect();
    Ok(ShareLogRead {
        bytes,
        headers,
        read: LogRead {
            fetch_offset,
            batches,
            log_start_offset: found.log_start_offset,
            high_watermark: upper,
            aborted,
            read_committed,
        },
    })
}

impl ShareLogRead {
    /// The whole batches that hold any of `acquired`, in log order, as one record set.
    pub fn batches_for(&self, acquired: &[AcquiredRecords]) -> Bytes {
        let mut out = BytesMut::new();
        let mut position = 0usize;
        for header in &self.headers {
            let len = header.total_len();
            let holds_acquired = acquired.iter().any(|range| {
                range.first_offset <= header.last_offset()
                    && range.last_offset >= header.base_offset
            });
            if holds_acquired {
                if let Some(batch) = self.bytes.get(position..position + len) {
                    out.extend_from_slice(batch);
                }
            }
            position += len;
        }
        out.freeze()
    }
}
