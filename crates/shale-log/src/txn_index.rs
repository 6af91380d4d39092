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

/// Aborted transactions overlapping `[fetch_offset, upper_bound_offset)` across a log's
/// segment indexes, given in segment order starting with the segment holding `fetch_offset`.
/// Stops at the first index whose search is complete, as Kafka's
/// `UnifiedLog.collectAbortedTransactions` does.
pub fn collect_aborted_txns<'a>(
    indexes: impl IntoIterator<Item = &'a TxnIndex>,
    fetch_offset: i64,
    upper_bound_offset: i64,
) -> Vec<AbortedTxn> {
    let mut aborted = Vec::new();
    for index in indexes {
        let result = index.collect_aborted_txns(fetch_offset, upper_bound_offset);
        aborted.extend(result.aborted);
        if result.is_complete {
            break;
        }
    }
    aborted
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
    /// index. On [`TxnIndexError::Corrupt`] the caller rebuilds it ([`Self::recreate`], then
    /// the aborted transactions recovered by replaying the segment).
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

    /// Starts the index of the segment at `base_offset` afresh, discarding any existing file
    /// (the rebuild path after [`TxnIndexError::Corrupt`]).
    pub fn recreate(path: impl Into<PathBuf>, base_offset: i64) -> Result<Self, TxnIndexError> {
        let path = path.into();
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|source| TxnIndexError::Io {
                path: path.clone(),
                source,
            })?;
        drop(file);
        Ok(Self {
            path,
            base_offset,
            entries: Vec::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(producer_id: i64, first_offset: i64, last_offset: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id,
            first_offset,
            last_offset,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn entry_layout_is_kafkas_34_bytes() {
        let entry = txn(0x0102_0304_0506_0708, 5, 9, 3);
        let bytes = entry.to_bytes();
        assert_eq!(&bytes[0..2], &[0, 0]);
        assert_eq!(&bytes[2..10], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&bytes[10..18], &5i64.to_be_bytes());
        assert_eq!(&bytes[18..26], &9i64.to_be_bytes());
        assert_eq!(&bytes[26..34], &3i64.to_be_bytes());
        assert_eq!(AbortedTxn::from_bytes(&bytes), Some(entry));
        let mut other_version = bytes;
        other_version[1] = 1;
        assert_eq!(AbortedTxn::from_bytes(&other_version), None);
    }

    #[test]
    fn append_persist_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.txnindex");
        let mut index = TxnIndex::open(&path, 100).unwrap();
        assert!(index.is_empty());
        assert!(!path.exists(), "no file until the first abort");
        index.append(txn(1, 90, 105, 90)).unwrap();
        index.append(txn(2, 101, 110, 101)).unwrap();
        index.flush().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 68);
        let error = index.append(txn(3, 100, 110, 100)).unwrap_err();
        assert!(matches!(
            error,
            TxnIndexError::NonIncreasingLastOffset {
                last_offset: 110,
                previous_last_offset: 110
            }
        ));
        let reopened = TxnIndex::open(&path, 100).unwrap();
        assert_eq!(reopened.entries(), index.entries());
        assert_eq!(reopened.len(), 2);
        assert_eq!(reopened.base_offset(), 100);
    }

    #[test]
    fn collect_returns_overlapping_transactions_and_stops_when_complete() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = TxnIndex::open(dir.path().join("0.txnindex"), 0).unwrap();
        index.append(txn(1, 0, 4, 0)).unwrap();
        index.append(txn(2, 2, 8, 5)).unwrap();
        index.append(txn(3, 10, 12, 13)).unwrap();
        index.append(txn(4, 20, 25, 26)).unwrap();

        let ids =
            |r: &TxnIndexSearchResult| r.aborted.iter().map(|t| t.producer_id).collect::<Vec<_>>();

        let result = index.collect_aborted_txns(5, 11);
        assert_eq!(ids(&result), vec![2, 3]);
        assert!(result.is_complete, "entry 3 has LSO 13 >= 11");

        let result = index.collect_aborted_txns(0, 3);
        assert_eq!(ids(&result), vec![1, 2]);
        assert!(result.is_complete);

        let result = index.collect_aborted_txns(13, 100);
        assert_eq!(ids(&result), vec![4]);
        assert!(!result.is_complete, "a later segment may hold more");

        let result = index.collect_aborted_txns(26, 100);
        assert!(result.aborted.is_empty());
    }

    #[test]
    fn collect_across_segments_stops_when_complete() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = TxnIndex::open(dir.path().join("0.txnindex"), 0).unwrap();
        first.append(txn(1, 0, 5, 0)).unwrap();
        let mut second = TxnIndex::open(dir.path().join("10.txnindex"), 10).unwrap();
        second.append(txn(2, 3, 12, 3)).unwrap();
        second.append(txn(3, 11, 14, 15)).unwrap();
        let mut third = TxnIndex::open(dir.path().join("20.txnindex"), 20).unwrap();
        third.append(txn(4, 20, 22, 23)).unwrap();

        let ids = |v: Vec<AbortedTxn>| v.iter().map(|t| t.producer_id).collect::<Vec<_>>();
        assert_eq!(
            ids(collect_aborted_txns([&first, &second, &third], 4, 13)),
            vec![1, 2, 3]
        );
        assert_eq!(
            ids(collect_aborted_txns([&second, &third], 13, 30)),
            vec![3, 4]
        );
        assert!(collect_aborted_txns([&third], 23, 30).is_empty());
    }

    #[test]
    fn truncate_and_reset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.txnindex");
        let mut index = TxnIndex::open(&path, 0).unwrap();
        for i in 0..4 {
            index.append(txn(i, i * 10, i * 10 + 5, i * 10)).unwrap();
        }
        index.truncate_to(25).unwrap();
        assert_eq!(index.len(), 2, "entries ending at 25 and later go");
        index.append(txn(9, 22, 30, 22)).unwrap();
        let reopened = TxnIndex::open(&path, 0).unwrap();
        assert_eq!(
            reopened
                .entries()
                .iter()
                .map(|t| t.producer_id)
                .collect::<Vec<_>>(),
            vec![0, 1, 9]
        );
        index.truncate_to(1_000).unwrap();
        assert_eq!(index.len(), 3);
        index.reset().unwrap();
        assert!(index.is_empty());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        index.append(txn(5, 1, 2, 1)).unwrap();
        assert_eq!(TxnIndex::open(&path, 0).unwrap().len(), 1);
        index.delete().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn sanity_check_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("50.txnindex");
        let write = |entries: &[AbortedTxn], extra: &[u8]| {
            let mut bytes: Vec<u8> = entries.iter().flat_map(|e| e.to_bytes()).collect();
            bytes.extend_from_slice(extra);
            std::fs::write(&path, bytes).unwrap();
        };
        let is_corrupt = |base| {
            matches!(
                TxnIndex::open(&path, base),
                Err(TxnIndexError::Corrupt { .. })
            )
        };

        write(&[txn(1, 40, 55, 40)], &[]);
        assert!(TxnIndex::open(&path, 50).is_ok());
        write(&[txn(1, 40, 55, 40)], &[0, 0, 0]);
        assert!(is_corrupt(50), "partial trailing entry");
        write(&[txn(1, 40, 45, 40)], &[]);
        assert!(is_corrupt(50), "ends before the segment");
        write(&[txn(1, 60, 55, 40)], &[]);
        assert!(is_corrupt(50), "starts after it ends");
        write(&[txn(1, 50, 60, 50), txn(2, 51, 60, 50)], &[]);
        assert!(is_corrupt(50), "last offsets must increase");
        let mut bad_version = txn(1, 50, 60, 50).to_bytes();
        bad_version[0] = 7;
        std::fs::write(&path, bad_version).unwrap();
        assert!(is_corrupt(50), "unknown version");

        // The caller's rebuild path: recreate the file and append again.
        let mut index = TxnIndex::recreate(&path, 50).unwrap();
        assert!(index.is_empty());
        index.append(txn(1, 50, 60, 50)).unwrap();
        assert_eq!(TxnIndex::open(&path, 50).unwrap().len(), 1);
    }
}
