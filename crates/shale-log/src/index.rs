//! Sparse memory-mapped indexes: `.index` (relative offset -> position) and `.timeindex`
//! (timestamp -> relative offset). Files grow in really allocated steps up to
//! `segment.index.bytes` (a sparse mapping on a full disk would raise SIGBUS on first touch)
//! and are trimmed to their entries when the segment rolls or the log closes.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use crate::error::LogError;

const GROW_MIN_BYTES: usize = 8 * 1024;

/// Allocates real blocks for `[0, len)` of `file`, extending it.
pub(crate) fn allocate(file: &File, len: u64) -> io::Result<()> {
    let current = file.metadata()?.len();
    if current >= len {
        return Ok(());
    }
    let off = libc::off_t::try_from(current).map_err(|_| io::Error::other("offset too large"))?;
    let add =
        libc::off_t::try_from(len - current).map_err(|_| io::Error::other("length too large"))?;
    // SAFETY: fallocate only reads its integer arguments; the descriptor is owned by `file`,
    // which outlives the call.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, off, add) };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => {
            // Filesystems without fallocate: write real zeros instead of leaving holes.
            use std::os::unix::fs::FileExt;
            let zeros = vec![0u8; 64 * 1024];
            let mut pos = current;
            while pos < len {
                let n = ((len - pos) as usize).min(zeros.len());
                file.write_all_at(&zeros[..n], pos)?;
                pos += n as u64;
            }
            Ok(())
        }
        _ => Err(e),
    }
}

/// A file of fixed-size big-endian entries, memory-mapped. No descriptor is kept open
/// (thousands of partitions would exhaust them); the file is reopened to grow or trim it.
pub(crate) struct IndexFile {
    path: PathBuf,
    mmap: Option<MmapMut>,
    entry_len: usize,
    entries: usize,
    max_bytes: usize,
}

impl IndexFile {
    /// Opens (or creates) an index; the file length must be a multiple of the entry size
    /// and all of it counts as entries (indexes are trimmed when closed).
    pub(crate) fn open(
        path: &Path,
        entry_len: usize,
        max_bytes: u64,
        create: bool,
    ) -> Result<IndexFile, LogError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)?;
        let len = file.metadata()?.len();
        if len % entry_len as u64 != 0 {
            return Err(LogError::CorruptFile {
                path: path.display().to_string(),
                reason: format!("size {len} is not a multiple of {entry_len}"),
            });
        }
        let max_bytes = (max_bytes as usize / entry_len).max(1) * entry_len;
        let len = usize::try_from(len).map_err(|_| LogError::CorruptFile {
            path: path.display().to_string(),
            reason: "too large".into(),
        })?;
        let mut idx = IndexFile {
            path: path.to_path_buf(),
            mmap: None,
            entry_len,
            entries: len / entry_len,
            max_bytes: max_bytes.max(len),
        };
        idx.remap(&file, len)?;
        Ok(idx)
    }

    fn open_file(&self) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(&self.path)
    }

    fn remap(&mut self, file: &File, len: usize) -> io::Result<()> {
        self.mmap = None;
        if len > 0 {
            // SAFETY: the file belongs to this index and is only changed through it (the
            // log's writer lock serialises writers); it is at least `len` bytes long and is
            // never truncated below a live mapping (trim unmaps first).
            self.mmap = Some(unsafe { memmap2::MmapOptions::new().len(len).map_mut(file)? });
        }
        Ok(())
    }

    fn mapped_len(&self) -> usize {
        self.mmap.as_ref().map_or(0, |m| m.len())
    }

    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    pub(crate) fn is_full(&self) -> bool {
        (self.entries + 1) * self.entry_len > self.max_bytes
    }

    pub(crate) fn entry(&self, i: usize) -> &[u8] {
        match &self.mmap {
            Some(m) if i < self.entries => &m[i * self.entry_len..(i + 1) * self.entry_len],
            _ => &[],
        }
    }

    pub(crate) fn push(&mut self, entry: &[u8]) -> Result<(), LogError> {
        debug_assert_eq!(entry.len(), self.entry_len);
        if self.is_full() {
            return Err(LogError::InvalidArgument(format!(
                "index {} is full",
                self.path.display()
            )));
        }
        let need = (self.entries + 1) * self.entry_len;
        if need > self.mapped_len() {
            let grown = (self.mapped_len() * 2).max(GROW_MIN_BYTES).max(need);
            let new_len = grown.min(self.max_bytes) / self.entry_len * self.entry_len;
            let file = self.open_file()?;
            allocate(&file, new_len as u64)?;
            self.remap(&file, new_len)?;
        }
        let start = self.entries * self.entry_len;
        if let Some(m) = self.mmap.as_mut() {
            m[start..start + self.entry_len].copy_from_slice(entry);
        }
        self.entries += 1;
        Ok(())
    }

    pub(crate) fn truncate_entries(&mut self, n: usize) {
        if n < self.entries {
            let from = n * self.entry_len;
            let to = self.entries * self.entry_len;
            if let Some(m) = self.mmap.as_mut() {
                m[from..to].fill(0);
            }
            self.entries = n;
        }
    }

    /// Shrinks the file to exactly its entries (on roll and close).
    pub(crate) fn trim(&mut self) -> Result<(), LogError> {
        let len = self.entries * self.entry_len;
        let file = self.open_file()?;
        if self.mapped_len() != len || file.metadata()?.len() != len as u64 {
            if let Some(m) = &self.mmap {
                m.flush()?;
            }
            self.mmap = None;
            file.set_len(len as u64)?;
            file.sync_all()?;
            self.remap(&file, len)?;
        }
        self.max_bytes = len.max(self.entry_len);
        Ok(())
    }

    /// Allows the index to grow again (a trimmed index of what becomes the active segment).
    pub(crate) fn set_max_bytes(&mut self, max_bytes: u64) {
        self.max_bytes = ((max_bytes as usize / self.entry_len).max(1) * self.entry_len)
            .max(self.entries * self.entry_len);
    }

    pub(crate) fn flush(&self) -> Result<(), LogError> {
        if let Some(m) = &self.mmap {
            m.flush()?;
        }
        // The size changes when the index grows; make it durable too.
        self.open_file()?.sync_all()?;
        Ok(())
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn set_path(&mut self, p: PathBuf) {
        self.path = p;
    }
}

const OFFSET_ENTRY: usize = 8;
const TIME_ENTRY: usize = 12;

/// `.index`: relative offset (u32) -> byte position (u32) of the batch whose last offset it is.
pub(crate) struct OffsetIndex {
    pub(crate) base_offset: i64,
    file: IndexFile,
}

impl OffsetIndex {
    pub(crate) fn open(
        path: &Path,
        base_offset: i64,
        max_bytes: u64,
        create: bool,
    ) -> Result<Self, LogError> {
        Ok(OffsetIndex {
            base_offset,
            file: IndexFile::open(path, OFFSET_ENTRY, max_bytes, create)?,
        })
    }

    fn get(&self, i: usize) -> (i64, u32) {
        let e = self.file.entry(i);
        let rel = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
        let pos = u32::from_be_bytes([e[4], e[5], e[6], e[7]]);
        (self.base_offset + i64::from(rel), pos)
    }

    pub(crate) fn entries(&self) -> usize {
        self.file.entries()
    }

    pub(crate) fn last(&self) -> Option<(i64, u32)> {
        self.entries().checked_sub(1).map(|i| self.get(i))
    }

    pub(crate) fn is_full(&self) -> bool {
        self.file.is_full()
    }

    /// Largest entry with offset <= target, or the segment start.
    pub(crate) fn lookup(&self, target: i64) -> (i64, u32) {
        let n = self.entries();
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.get(mid).0 <= target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            (self.base_offset, 0)
        } else {
            self.get(lo - 1)
        }
    }

    /// Position of the last entry whose position is <= `position_max` and whose offset is
    /// <= `offset_max`, if any. Entries increase in both, so one binary search serves.
    pub(crate) fn floor_position(&self, position_max: u64, offset_max: i64) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.entries());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (offset, position) = self.get(mid);
            if u64::from(position) <= position_max && offset <= offset_max {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1).map(|i| self.get(i).1)
    }

    pub(crate) fn append(&mut self, offset: i64, position: u32) -> Result<(), LogError> {
        let rel = offset - self.base_offset;
        if !(0..=i64::from(u32::MAX)).contains(&rel) {
            return Ok(());
        }
        if let Some((last, _)) = self.last() {
            if offset <= last {
                return Ok(());
            }
        }
        let mut e = [0u8; OFFSET_ENTRY];
        e[..4].copy_from_slice(&(rel as u32).to_be_bytes());
        e[4..].copy_from_slice(&position.to_be_bytes());
        self.file.push(&e)
    }

    /// Drops entries whose position is >= `position`.
    pub(crate) fn truncate_to_position(&mut self, position: u64) {
        let n = (0..self.entries())
            .take_while(|i| u64::from(self.get(*i).1) < position)
            .count();
        self.file.truncate_entries(n);
    }

    /// Entries strictly increase in offset and position and lie within the segment.
    pub(crate) fn sanity_check(&self, log_size: u64) -> bool {
        let mut prev: Option<(i64, u32)> = None;
        for i in 0..self.entries() {
            let (o, p) = self.get(i);
            if u64::from(p) >= log_size.max(1) {
                return false;
            }
            if let Some((po, pp)) = prev {
                if o <= po || p <= pp {
                    return false;
                }
            }
            prev = Some((o, p));
        }
        true
    }

    pub(crate) fn file_mut(&mut self) -> &mut IndexFile {
        &mut self.file
    }
    pub(crate) fn file(&self) -> &IndexFile {
        &self.file
    }
}

/// `.timeindex`: timestamp (i64) -> relative offset (u32), timestamps strictly increasing.
pub(crate) struct TimeIndex {
    pub(crate) base_offset: i64,
    file: IndexFile,
}

impl TimeIndex {
    pub(crate) fn open(
        path: &Path,
        base_offset: i64,
        max_bytes: u64,
        create: bool,
    ) -> Result<Self, LogError> {
        Ok(TimeIndex {
            base_offset,
            file: IndexFile::open(path, TIME_ENTRY, max_bytes, create)?,
        })
    }

    fn get(&self, i: usize) -> (i64, i64) {
        let e = self.file.entry(i);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&e[..8]);
        let rel = u32::from_be_bytes([e[8], e[9], e[10], e[11]]);
        (i64::from_be_bytes(ts), self.base_offset + i64::from(rel))
    }

    pub(crate) fn entries(&self) -> usize {
        self.file.entries()
    }

    pub(crate) fn last(&self) -> Option<(i64, i64)> {
        self.entries().checked_sub(1).map(|i| self.get(i))
    }

    pub(crate) fn is_full(&self) -> bool {
        self.file.is_full()
    }

    /// Largest entry with timestamp <= target: `(timestamp, offset)`, or `None`.
    pub(crate) fn lookup(&self, target_ms: i64) -> Option<(i64, i64)> {
        let n = self.entries();
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.get(mid).0 <= target_ms {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1).map(|i| self.get(i))
    }

    pub(crate) fn maybe_append(&mut self, timestamp_ms: i64, offset: i64) -> Result<(), LogError> {
        let rel = offset - self.base_offset;
        if !(0..=i64::from(u32::MAX)).contains(&rel) {
            return Ok(());
        }
        if let Some((ts, o)) = self.last() {
            if timestamp_ms <= ts || offset < o {
                return Ok(());
            }
        }
        let mut e = [0u8; TIME_ENTRY];
        e[..8].copy_from_slice(&timestamp_ms.to_be_bytes());
        e[8..].copy_from_slice(&(rel as u32).to_be_bytes());
        self.file.push(&e)
    }

    pub(crate) fn truncate_to(&mut self, offset: i64) {
        let n = (0..self.entries())
            .take_while(|i| self.get(*i).1 < offset)
            .count();
        self.file.truncate_entries(n);
    }

    pub(crate) fn sanity_check(&self) -> bool {
        let mut prev: Option<(i64, i64)> = None;
        for i in 0..self.entries() {
            let (t, o) = self.get(i);
            if let Some((pt, po)) = prev {
                if t <= pt || o < po {
                    return false;
                }
            }
            prev = Some((t, o));
        }
        true
    }

    pub(crate) fn file_mut(&mut self) -> &mut IndexFile {
        &mut self.file
    }
    pub(crate) fn file(&self) -> &IndexFile {
        &self.file
    }
}

#[cfg(test)]
mod tests {
    use super::OffsetIndex;

    #[test]
    fn floor_position_honours_both_the_position_and_the_offset_limit() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut index =
            OffsetIndex::open(&dir.path().join("0.index"), 100, 4096, true).expect("open index");
        assert_eq!(index.floor_position(u64::MAX, i64::MAX), None);
        // (last offset of the batch, its start): batches of 10 records, 1000 bytes each.
        for (offset, position) in [(109, 0), (119, 1000), (129, 2000), (139, 3000)] {
            index.append(offset, position).expect("append");
        }
        assert_eq!(index.floor_position(2500, i64::MAX), Some(2000));
        assert_eq!(index.floor_position(2000, i64::MAX), Some(2000));
        assert_eq!(index.floor_position(999, i64::MAX), Some(0));
        // The offset limit wins when it is the tighter one.
        assert_eq!(index.floor_position(u64::MAX, 125), Some(1000));
        assert_eq!(index.floor_position(u64::MAX, 108), None);
        assert_eq!(index.floor_position(3000, 139), Some(3000));
    }
}
