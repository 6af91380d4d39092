//! Domain types of the log API.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::batch::BatchHeader;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// Directory name `<topic>-<partition>`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// Parses a directory name `<topic>-<partition>`; `None` for anything else
    /// (deleted, future or stray directories).
    pub fn from_dir_name(name: &str) -> Option<TopicPartition> {
        let (topic, partition) = name.rsplit_once('-')?;
        if topic.is_empty()
            || partition.is_empty()
            || !partition.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let partition: i32 = partition.parse().ok()?;
        Some(TopicPartition::new(topic, partition))
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Who is appending: decides whether offsets are assigned or kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    /// A producer: validated strictly, offsets and leader epoch assigned.
    Client,
    /// The group or transaction coordinator (may write control batches): offsets assigned.
    Coordinator,
    /// A follower copying the leader: offsets and epochs kept, must continue the log.
    Replication,
}

/// A record found by timestamp: its offset, its timestamp and the leader epoch of its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoundRecord {
    pub offset: i64,
    pub timestamp_ms: i64,
    pub leader_epoch: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    /// -1 with CreateTime.
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    pub max_timestamp_ms: i64,
    /// Headers as written, offsets assigned.
    pub batches: Vec<BatchHeader>,
}

/// A byte range of a segment file. Holding it keeps the file open, so it stays readable
/// after the segment is rolled or deleted.
#[derive(Debug, Clone)]
pub struct FileSlice {
    pub file: Arc<File>,
    pub position: u64,
    pub len: u32,
}

impl FileSlice {
    pub fn read_to_bytes(&self) -> io::Result<bytes::Bytes> {
        let mut buf = vec![0u8; self.len as usize];
        self.file.read_exact_at(&mut buf, self.position)?;
        Ok(bytes::Bytes::from(buf))
    }
}

#[derive(Debug, Clone, Default)]
pub struct ReadInfo {
    pub slices: Vec<FileSlice>,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
}

impl ReadInfo {
    pub fn total_len(&self) -> u64 {
        self.slices.iter().map(|s| u64::from(s.len)).sum()
    }

    /// Copies every slice into one buffer.
    pub fn to_bytes(&self) -> io::Result<bytes::Bytes> {
        if self.slices.len() == 1 {
            return self.slices[0].read_to_bytes();
        }
        let mut out = Vec::with_capacity(self.total_len() as usize);
        for s in &self.slices {
            let start = out.len();
            out.resize(start + s.len as usize, 0);
            s.file.read_exact_at(&mut out[start..], s.position)?;
        }
        Ok(bytes::Bytes::from(out))
    }
}
