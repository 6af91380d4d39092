//! The aborted-transaction index of a log segment (`<base offset>.txnindex`), in Kafka's
//! record layout so that read_committed fetches can list the aborted transactions in range.
//!
//! Each entry is 34 bytes, big-endian: version i16 (0) | producer_id i64 | first_offset i64 |
//! last_offset i64 | last_stable_offset i64. Entries are in increasing `last_offset` order
//! (the offset of the ABORT marker).

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

const ENTRY_VERSION: i16 = 0;

/// One aborted transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    /// Offset of the transaction's first data batch on the partition.
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The last stable offset when the transaction was aborted: no transaction that ends
    /// after this entry started before this offset.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    pub const SIZE_BYTES: usize = 34;

    pub fn to_bytes(&self) -> [u8; Self::SIZE_BYTES] {
        let mut out = [0u8; Self::SIZE_BYTES];
        out[0..2].copy_from_slice(&ENTRY_VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }

    /// Decodes one entry; `None` for an unknown entry version.
    pub fn from_bytes(bytes: &[u8; Self::SIZE_BYTES]) -> Option<Self> {
        let version = i16::from_be_bytes([bytes[0], bytes[1]]);
        if version != ENTRY_VERSION {
            return None;
        }
        let field = |at: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[at..at + 8]);
            i64::from_be_bytes(word)
        };
        Some(Self {
            producer_id: field(2),
            first_offset: field(10),
            last_offset: field(18),
            last_stable_offset: field(26),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TxnIndexError {
    #[error("transaction index I/O on {path:?}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file fails its checks; the caller rebuilds it from the segment.
    #[error("corrupt transaction index {path:?}: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error(
        "aborted transaction ending at {last_offset} appended after one ending at \
         {previous_last_offset}: last offsets must increase"
    )]
    NonIncreasingLastOffset {
        last_offset: i64,
        previous_last_offset: i64,
    },
}

/// Aborted transactions overlapping a fetch range.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxnIndexSearchResult {
    pub aborted: Vec<AbortedTxn>,
    /// `true` when no later segment's index can hold a transaction overlapping the range, so
    /// the search stops at this segment.
    pub is_complete: bool,
}

/// The transaction index of one segment. Entries are kept in memory as well as on disk: an
/// index holds one entry per aborted transaction ending in its segment, which is small.
#[derive(Debug)]
pub struct TxnIndex {
    path: PathBuf,
    base_offset: i64,
    entries: Vec<AbortedTxn>,
    /// Opened on the first append, so segments without aborts leave no file behind.
    file: Option<File>,
}

impl TxnIndex {
    /// Opens the index of the segment starting at `base_offset`, checking every entry: the
    /// file holds whole entries of version 0, each with `first_offset <= last_offset`,
    /// `last_offset >= base_offset`, and last offsets increasing. A missing file is an empty
    /// index. On [`TxnIndexError::Corrupt`] the caller rebuilds it ([`Self::reset`], then
    /// appends recovered from the segment).
    pub fn open(path: impl Into<PathBuf>, base_offset: i64) -> Result<Self, TxnIndexError> {
        let path = path.into();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(TxnIndexError::Io { path, source }),
        };
        let corrupt = |reason: String| TxnIndexError::Corrupt {
            path: path.clone(),
            reason,
        };
        let chunks = bytes.chunks_exact(AbortedTxn::SIZE_BYTES);
        if !chunks.remainder().is_empty() {
            return Err(corrupt(format!(
                "size {} is not a multiple of {}",
                bytes.len(),
                AbortedTxn::SIZE_BYTES
            )));
        }
        let mut entries = Vec::with_capacity(chunks.len());
        for (position, chunk) in chunks.enumerate() {
            let mut entry_bytes = [0u8; AbortedTxn::SIZE_BYTES];
            entry_bytes.copy_from_slice(chunk);
            let entry = AbortedTxn::from_bytes(&entry_bytes)
                .ok_or_else(|| corrupt(format!("entry {position} has an unknown version")))?;
            if entry.first_offset > entry.last_offset {
                return Err(corrupt(format!(
                    "entry {position} starts after it ends: {entry:?}"
                )));
            }
            if entry.last_offset < base_offset {
                return Err(corrupt(format!(
                    "entry {position} ends before the segment's base offset {base_offset}: \
                     {entry:?}"
                )));
            }
            if let Some(previous) = entries.last().map(|e: &AbortedTxn| e.last_offset) {
                if entry.last_offset <= previous {
                    return Err(corrupt(format!(
                        "entry {position} ends at {} after an entry ending at {previous}",
                        entry.last_offset
                    )));
                }
            }
            entries.push(entry);
        }
        Ok(Self {
            path,
            base_offset,
            entries,
            file: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn io(&self, source: std::io::Error) -> TxnIndexError {
        TxnIndexError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Appends an aborted transaction; its last offset must exceed every earlier one.
    pub fn append(&mut self, txn: AbortedTxn) -> Result<(), TxnIndexError> {
        if let Some(previous) = self.entries.last() {
            if txn.last_offset <= previous.last_offset {
                return Err(TxnIndexError::NonIncreasingLastOffset {
                    last_offset: txn.last_offset,
                    previous_last_offset: previous.last_offset,
                });
            }
        }
        let file = match self.file.take() {
            Some(file) => file,
            None => OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| self.io(e))?,
        };
        let file = self.file.insert(file);
        if let Err(source) = file.write_all(&txn.to_bytes()) {
            return Err(TxnIndexError::Io {
                path: self.path.clone(),
                source,
            });
        }
        self.entries.push(txn);
        Ok(())
    }

    /// Aborted transactions overlapping `[fetch_offset, upper_bound_offset)`: those ending at
    /// or after `fetch_offset` and starting before `upper_bound_offset`.
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> TxnIndexSearchResult {
        let mut result = TxnIndexSearchResult::default();
        for txn in &self.entries {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound_offset {
                result.aborted.push(*txn);
            }
            if txn.last_stable_offset >= upper_bound_offset {
                result.is_complete = true;
                return result;
            }
        }
        result
    }

    /// Drops entries whose marker is at or after `offset` (the segment is truncated there).
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), TxnIndexError> {
        let keep = self.entries.partition_point(|txn| txn.last_offset < offset);
        if keep == self.entries.len() {
            return Ok(());
        }
        self.set_file_len(keep)?;
        self.entries.truncate(keep);
        Ok(())
    }

    /// Empties the index, for a rebuild from the segment.
    pub fn reset(&mut self) -> Result<(), TxnIndexError> {
        self.set_file_len(0)?;
        self.entries.clear();
        Ok(())
    }

    fn set_file_len(&mut self, entry_count: usize) -> Result<(), TxnIndexError> {
        let len = (entry_count * AbortedTxn::SIZE_BYTES) as u64;
        match OpenOptions::new().write(true).open(&self.path) {
            Ok(file) => file.set_len(len).map_err(|e| self.io(e)),
            Err(error) if error.kind() == ErrorKind::NotFound && len == 0 => Ok(()),
            Err(error) => Err(self.io(error)),
        }
    }

    /// Makes appended entries durable.
    pub fn flush(&mut self) -> Result<(), TxnIndexError> {
        match self.file.as_ref() {
            Some(file) => file.sync_data().map_err(|e| self.io(e)),
            None => Ok(()),
        }
    }

    /// Removes the file (the segment is deleted).
    pub fn delete(mut self) -> Result<(), TxnIndexError> {
        self.file = None;
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
            Err(error) => Err(self.io(error)),
        }
    }
}
