//! Fetch answers with record sets as segment file ranges: encoded into a frame chain for
//! the connection to send with `sendfile`, or copied into memory where a decoded
//! `FetchResponse` is wanted.

use std::io;

use bytes::Bytes;
use kafka_protocol::messages::FetchResponse;
use kafka_protocol::ResponseError;
use shale_log::FileSlice;
use shale_protocol::{encode_fetch_frame, FetchFrame, ProtocolError, RecordSet};

/// A partition's record set: whole batches below the high watermark (or LSO), as ranges of
/// segment files. Holding the ranges keeps their files open, so a segment rolled, cleaned
/// or deleted meanwhile is still sent as read.
#[derive(Debug, Default)]
pub struct FileRecords {
    slices: Vec<FileSlice>,
    len_bytes: usize,
}

impl FileRecords {
    pub fn new(slices: Vec<FileSlice>) -> FileRecords {
        let len_bytes = slices.iter().map(|s| s.len as usize).sum();
        FileRecords { slices, len_bytes }
    }

    pub fn slices(&self) -> &[FileSlice] {
        &self.slices
    }

    /// The bytes copied into one buffer.
    pub fn to_bytes(&self) -> io::Result<Bytes> {
        match self.slices.as_slice() {
            [] => Ok(Bytes::new()),
            [one] => one.read_to_bytes(),
            many => {
                use std::os::unix::fs::FileExt;
                let mut out = vec![0u8; self.len_bytes];
                let mut at = 0usize;
                for s in many {
                    let end = at + s.len as usize;
                    s.file.read_exact_at(&mut out[at..end], s.position)?;
                    at = end;
                }
                Ok(Bytes::from(out))
            }
        }
    }
}

impl RecordSet for FileRecords {
    fn len_bytes(&self) -> usize {
        self.len_bytes
    }
}

/// A Fetch answer before encoding: `records[i]` belongs to the i-th partition of
/// `response` (topics in order), whose own `records` field is left empty.
#[derive(Debug, Default)]
pub struct FetchAnswer {
    pub response: FetchResponse,
    pub records: Vec<FileRecords>,
}

impl FetchAnswer {
    /// A whole-response answer without partitions (e.g. a refused fetch session).
    pub fn without_partitions(response: FetchResponse) -> FetchAnswer {
        FetchAnswer {
            response,
            records: Vec::new(),
        }
    }

    /// The frame chain: framing encoded, record sets left in their files.
    pub fn encode(
        self,
        correlation_id: i32,
        version: i16,
    ) -> Result<FetchFrame<FileRecords>, ProtocolError> {
        encode_fetch_frame(correlation_id, version, &self.response, self.records)
    }

    /// The decoded response with every record set copied in; a partition whose files can
    /// no longer be read answers KAFKA_STORAGE_ERROR.
    pub fn into_response(self) -> FetchResponse {
        let mut response = self.response;
        let mut records = self.records.into_iter();
        for topic in &mut response.responses {
            for partition in &mut topic.partitions {
                let set = records.next().unwrap_or_default();
                match set.to_bytes() {
                    Ok(bytes) => partition.records = Some(bytes),
                    Err(_) => {
                        partition.records = Some(Bytes::new());
                        partition.error_code = ResponseError::KafkaStorageError.code();
                    }
                }
            }
        }
        response
    }
}
