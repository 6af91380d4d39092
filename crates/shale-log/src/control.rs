//! Transaction markers as Kafka writes them: a RecordBatch v2 with the control and
//! transactional attributes, the producer's id and epoch, and one record whose key is
//! `version i16 (0) | type i16 (0 abort, 1 commit)` and whose value is
//! `version i16 (0) | coordinator_epoch i32`.

use crate::batch::BatchHeader;
use crate::error::LogError;
use crate::records::{self, BatchBuilder};

const CONTROL_VERSION: i16 = 0;
const CONTROL_TYPE_ABORT: i16 = 0;
const CONTROL_TYPE_COMMIT: i16 = 1;
/// Control batches hold one small record; anything larger is not a marker we read.
const CONTROL_BATCH_BYTES_MAX: u64 = 64 * 1024;

/// One COMMIT or ABORT marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    pub commit: bool,
}

/// Encodes the marker as a control batch (offsets are assigned by the log).
pub fn encode_control_batch(marker: &ControlMarker, now_ms: i64) -> Result<Vec<u8>, LogError> {
    let kind = if marker.commit {
        CONTROL_TYPE_COMMIT
    } else {
        CONTROL_TYPE_ABORT
    };
    let mut key = Vec::with_capacity(4);
    key.extend_from_slice(&CONTROL_VERSION.to_be_bytes());
    key.extend_from_slice(&kind.to_be_bytes());
    let mut value = Vec::with_capacity(6);
    value.extend_from_slice(&CONTROL_VERSION.to_be_bytes());
    value.extend_from_slice(&marker.coordinator_epoch.to_be_bytes());
    let mut builder = BatchBuilder::new(now_ms);
    builder.control = true;
    builder.transactional = true;
    builder.producer_id = marker.producer_id;
    builder.producer_epoch = marker.producer_epoch;
    builder.push(now_ms, Some(&key), Some(&value));
    builder.build()
}

/// Reads the marker back from a control batch (`batch` is the whole batch). `None` when the
/// batch is not a COMMIT/ABORT control batch Shale understands.
pub fn decode_control_batch(header: &BatchHeader, batch: &[u8]) -> Option<ControlMarker> {
    if !header.is_control() {
        return None;
    }
    let body = records::batch_body(batch, CONTROL_BATCH_BYTES_MAX).ok()?;
    let decoded = records::decode_records(&body, header.record_count).ok()?;
    let record = decoded.first()?;
    let key = record.key?;
    let commit = match i16::from_be_bytes([*key.get(2)?, *key.get(3)?]) {
        CONTROL_TYPE_COMMIT => true,
        CONTROL_TYPE_ABORT => false,
        _ => return None,
    };
    let coordinator_epoch = record
        .value
        .filter(|v| v.len() >= 6)
        .map_or(0, |v| i32::from_be_bytes([v[2], v[3], v[4], v[5]]));
    Some(ControlMarker {
        producer_id: header.producer_id,
        producer_epoch: header.producer_epoch,
        coordinator_epoch,
        commit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trips_through_a_control_batch() {
        for commit in [true, false] {
            let marker = ControlMarker {
                producer_id: 42,
                producer_epoch: 3,
                coordinator_epoch: 7,
                commit,
            };
            let batch = encode_control_batch(&marker, 1_000).unwrap();
            let header = crate::batch::check_batch(&batch).unwrap();
            assert!(header.is_control() && header.is_transactional());
            assert_eq!(decode_control_batch(&header, &batch), Some(marker));
        }
    }

    #[test]
    fn a_data_batch_is_no_marker() {
        let mut builder = BatchBuilder::new(1_000);
        builder.push(1_000, Some(b"k"), Some(b"v"));
        let batch = builder.build().unwrap();
        let header = crate::batch::check_batch(&batch).unwrap();
        assert_eq!(decode_control_batch(&header, &batch), None);
    }
}
