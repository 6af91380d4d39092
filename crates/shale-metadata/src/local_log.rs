//! `LocalQuorumLog`: the metadata log of a single voter, in local files.
//!
//! Layout of the directory:
//! - `metadata.log`: frames `[body length u32 LE][crc32c of body u32 LE][body]`, where the body
//!   is `[offset i64 LE][entry bytes]`. Every append is fsynced before it counts as committed.
//!   Recovery keeps the longest valid prefix and truncates a torn or corrupt tail.
//! - `<20-digit offset>.snapshot`: `[magic][crc32c u32 LE][offset i64 LE][bytes]`, written to a
//!   temporary file, fsynced, renamed, and the directory fsynced. After a snapshot the log is
//!   rewritten without the entries it covers; only the newest two snapshots are kept.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use shale_raft::{put_frame, read_frame, FrameRead};
use tokio::sync::watch;

use crate::error::MetadataError;
use crate::quorum::{
    BoxFuture, CommittedRead, QuorumDescription, QuorumLeader, QuorumLog, ReplicaState,
};

const LOG_FILE: &str = "metadata.log";
const SNAPSHOT_SUFFIX: &str = ".snapshot";
const SNAPSHOT_MAGIC: &[u8; 8] = b"SHSNAP01";
/// Upper bound on one entry, so a corrupt length cannot trigger a huge allocation.
pub const ENTRY_BYTES_MAX: usize = 64 * 1024 * 1024;
const SNAPSHOTS_KEPT: usize = 2;

struct State {
    dir: PathBuf,
    file: File,
    /// Entries after the snapshot, in offset order.
    entries: Vec<(i64, Bytes)>,
    snapshot: Option<(i64, Bytes)>,
    last_offset: i64,
    closed: bool,
}

pub struct LocalQuorumLog {
    node_id: i32,
    state: Arc<Mutex<State>>,
    committed_tx: watch::Sender<i64>,
    leader_tx: watch::Sender<QuorumLeader>,
}

impl std::fmt::Debug for LocalQuorumLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalQuorumLog")
            .field("node_id", &self.node_id)
            .finish_non_exhaustive()
    }
}

fn io_err(context: &str, path: &Path) -> impl FnOnce(std::io::Error) -> MetadataError {
    let what = format!("{context} {}", path.display());
    move |e| MetadataError::io(&what, e)
}

fn sync_dir(dir: &Path) -> Result<(), MetadataError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync directory", dir))
}

/// One entry as a frame of the shared codec: the body is `[offset i64 LE][entry bytes]`.
fn encode_frame(offset: i64, data: &[u8], out: &mut Vec<u8>) {
    let mut body = Vec::with_capacity(8 + data.len());
    body.extend_from_slice(&offset.to_le_bytes());
    body.extend_from_slice(data);
    put_frame(out, &body);
}

/// Parses frames; returns the valid entries and the byte length of the valid prefix (a torn,
/// corrupt, oversized or out-of-order frame ends it).
fn parse_frames(bytes: &[u8]) -> (Vec<(i64, Bytes)>, usize) {
    let mut entries = Vec::new();
    let mut pos = 0;
    let mut last: Option<i64> = None;
    while let FrameRead::Frame { payload, next } = read_frame(bytes, pos) {
        if !(8..=ENTRY_BYTES_MAX + 8).contains(&payload.len()) {
            break;
        }
        let mut offset_bytes = [0u8; 8];
        offset_bytes.copy_from_slice(&payload[..8]);
        let offset = i64::from_le_bytes(offset_bytes);
        if last.is_some_and(|l| offset <= l) {
            break;
        }
        last = Some(offset);
        entries.push((offset, Bytes::copy_from_slice(&payload[8..])));
        pos = next;
    }
    (entries, pos)
}

fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}{SNAPSHOT_SUFFIX}"))
}

fn list_snapshots(dir: &Path) -> Result<Vec<(i64, PathBuf)>, MetadataError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err("list", dir))? {
        let entry = entry.map_err(io_err("list", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(stem) = name.strip_suffix(SNAPSHOT_SUFFIX) {
            if let Ok(offset) = stem.parse::<i64>() {
                out.push((offset, entry.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn read_snapshot(path: &Path) -> Result<(i64, Bytes), MetadataError> {
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(io_err("read", path))?;
    let corrupt = || MetadataError::Corrupt(format!("bad snapshot file {}", path.display()));
    let rest = bytes.strip_prefix(SNAPSHOT_MAGIC).ok_or_else(corrupt)?;
    if rest.len() < 12 {
        return Err(corrupt());
    }
    let crc = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
    let body = &rest[4..];
    if crc32c::crc32c(body) != crc {
        return Err(corrupt());
    }
    let mut offset_bytes = [0u8; 8];
    offset_bytes.copy_from_slice(&body[..8]);
    Ok((
        i64::from_le_bytes(offset_bytes),
        Bytes::copy_from_slice(&body[8..]),
    ))
}

fn write_snapshot_file(dir: &Path, offset: i64, data: &[u8]) -> Result<(), MetadataError> {
    let path = snapshot_path(dir, offset);
    let mut body = Vec::with_capacity(8 + data.len());
    body.extend_from_slice(&offset.to_le_bytes());
    body.extend_from_slice(data);
    let mut out = SNAPSHOT_MAGIC.to_vec();
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&body);
    shale_durable::replace_file(&path, &out).map_err(|e| MetadataError::io("write", e.into()))
}

impl State {
    fn open(dir: &Path) -> Result<State, MetadataError> {
        fs::create_dir_all(dir).map_err(io_err("create", dir))?;
        let mut snapshot = None;
        for (_, path) in list_snapshots(dir)?.into_iter().rev() {
            match read_snapshot(&path) {
                Ok(s) => {
                    snapshot = Some(s);
                    break;
                }
                Err(err) => tracing::warn!(%err, "skipping unreadable metadata snapshot"),
            }
        }
        let log_path = dir.join(LOG_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&log_path)
            .map_err(io_err("open", &log_path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(io_err("read", &log_path))?;
        let (entries, valid_len) = parse_frames(&bytes);
        if valid_len < bytes.len() {
            tracing::warn!(
                valid_bytes = valid_len,
                file_bytes = bytes.len(),
                "truncating torn tail of the metadata log"
            );
            file.set_len(valid_len as u64)
                .map_err(io_err("truncate", &log_path))?;
            file.sync_all().map_err(io_err("fsync", &log_path))?;
        }
        let snapshot_offset = snapshot.as_ref().map_or(-1, |(o, _)| *o);
        if let Some((first, _)) = entries.first() {
            if *first > snapshot_offset + 1 {
                return Err(MetadataError::Corrupt(format!(
                    "the metadata log starts at offset {first} but the newest readable \
                     snapshot ends at offset {snapshot_offset}"
                )));
            }
        }
        let last_offset = entries
            .last()
            .map_or(snapshot_offset, |(o, _)| (*o).max(snapshot_offset));
        sync_dir(dir)?;
        Ok(State {
            dir: dir.to_path_buf(),
            file,
            entries,
            snapshot,
            last_offset,
            closed: false,
        })
    }

    fn append(&mut self, entries: Vec<Bytes>) -> Result<i64, MetadataError> {
        if self.closed {
            return Err(MetadataError::ShutDown);
        }
        let mut buf = Vec::new();
        let mut offset = self.last_offset;
        let mut appended = Vec::with_capacity(entries.len());
        for data in entries {
            if data.len() > ENTRY_BYTES_MAX {
                return Err(MetadataError::InvalidRequest(format!(
                    "metadata entry of {} bytes exceeds the limit of {ENTRY_BYTES_MAX}",
                    data.len()
                )));
            }
            offset += 1;
            encode_frame(offset, &data, &mut buf);
            appended.push((offset, data));
        }
        let path = self.dir.join(LOG_FILE);
        let result = self
            .file
            .write_all(&buf)
            .and_then(|_| self.file.sync_data());
        if let Err(err) = result {
            // The tail may be partly written; nothing after it may be appended.
            self.closed = true;
            return Err(MetadataError::io(
                &format!("append to {}", path.display()),
                err,
            ));
        }
        self.last_offset = offset;
        self.entries.extend(appended);
        Ok(offset)
    }

    fn save_snapshot(&mut self, offset: i64, data: Bytes) -> Result<(), MetadataError> {
        if self.snapshot.as_ref().is_some_and(|(o, _)| *o >= offset) {
            return Ok(());
        }
        if offset > self.last_offset {
            return Err(MetadataError::InvalidRequest(format!(
                "snapshot at offset {offset} is past the log end {}",
                self.last_offset
            )));
        }
        write_snapshot_file(&self.dir, offset, &data)?;
        // Drop only the entries the previous snapshot covers: if the new snapshot turns out
        // unreadable, the previous one plus the log still rebuild the state.
        let previous = self.snapshot.as_ref().map_or(-1, |(o, _)| *o);
        self.snapshot = Some((offset, data));
        if self.entries.first().is_none_or(|(o, _)| *o > previous) {
            return self.prune_snapshots();
        }
        let remaining: Vec<(i64, Bytes)> = self
            .entries
            .iter()
            .filter(|(o, _)| *o > previous)
            .cloned()
            .collect();
        let mut buf = Vec::new();
        for (o, d) in &remaining {
            encode_frame(*o, d, &mut buf);
        }
        let log_path = self.dir.join(LOG_FILE);
        shale_durable::replace_file(&log_path, &buf)
            .map_err(|e| MetadataError::io("write", e.into()))?;
        self.file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&log_path)
            .map_err(io_err("open", &log_path))?;
        self.entries = remaining;
        self.prune_snapshots()
    }

    fn prune_snapshots(&self) -> Result<(), MetadataError> {
        let snapshots = list_snapshots(&self.dir)?;
        if snapshots.len() > SNAPSHOTS_KEPT {
            for (_, path) in &snapshots[..snapshots.len() - SNAPSHOTS_KEPT] {
                if let Err(err) = fs::remove_file(path) {
                    tracing::warn!(%err, path = %path.display(), "could not remove old snapshot");
                }
            }
        }
        Ok(())
    }

    fn read(&self, after: i64, max: usize) -> CommittedRead {
        let available_from = self
            .entries
            .first()
            .map_or(self.last_offset + 1, |(o, _)| *o);
        if after + 1 < available_from {
            return CommittedRead::SnapshotRequired;
        }
        let start = self.entries.partition_point(|(o, _)| *o <= after);
        CommittedRead::Entries(self.entries[start..].iter().take(max).cloned().collect())
    }
}

impl LocalQuorumLog {
    /// Opens (or creates) the log in `dir`, recovering from a torn tail.
    pub async fn open(node_id: i32, dir: PathBuf) -> Result<LocalQuorumLog, MetadataError> {
        let state = tokio::task::spawn_blocking(move || State::open(&dir))
            .await
            .map_err(|e| MetadataError::Io(format!("metadata log open task failed: {e}")))??;
        let last = state.last_offset;
        Ok(LocalQuorumLog {
            node_id,
            state: Arc::new(Mutex::new(state)),
            committed_tx: watch::Sender::new(last),
            leader_tx: watch::Sender::new(QuorumLeader {
                leader_id: Some(node_id),
                epoch: 1,
            }),
        })
    }

    async fn with_state<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut State) -> Result<T, MetadataError> + Send + 'static,
    ) -> Result<T, MetadataError> {
        let state = Arc::clone(&self.state);
        tokio::task::spawn_blocking(move || {
            let mut guard = state
                .lock()
                .map_err(|_| MetadataError::Io("metadata log lock poisoned".into()))?;
            f(&mut guard)
        })
        .await
        .map_err(|e| MetadataError::Io(format!("metadata log task failed: {e}")))?
    }
}

impl QuorumLog for LocalQuorumLog {
    fn node_id(&self) -> i32 {
        self.node_id
    }

    fn append(&self, entries: Vec<Bytes>) -> BoxFuture<'_, Result<i64, MetadataError>> {
        Box::pin(async move {
            let offset = self.with_state(move |s| s.append(entries)).await?;
            self.committed_tx.send_replace(offset);
            Ok(offset)
        })
    }

    fn committed_offset(&self) -> watch::Receiver<i64> {
        self.committed_tx.subscribe()
    }

    fn read_committed(
        &self,
        after: i64,
        max: usize,
    ) -> BoxFuture<'_, Result<CommittedRead, MetadataError>> {
        Box::pin(async move { self.with_state(move |s| Ok(s.read(after, max))).await })
    }

    fn latest_snapshot(&self) -> BoxFuture<'_, Result<Option<(i64, Bytes)>, MetadataError>> {
        Box::pin(async move { self.with_state(|s| Ok(s.snapshot.clone())).await })
    }

    fn save_snapshot(&self, offset: i64, data: Bytes) -> BoxFuture<'_, Result<(), MetadataError>> {
        Box::pin(async move {
            self.with_state(move |s| s.save_snapshot(offset, data))
                .await
        })
    }

    fn leader(&self) -> watch::Receiver<QuorumLeader> {
        self.leader_tx.subscribe()
    }

    fn describe(&self) -> Option<QuorumDescription> {
        // The single voter is always leader and always caught up with itself.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let end = *self.committed_tx.borrow() + 1;
        let epoch = self.leader_tx.borrow().epoch;
        Some(QuorumDescription {
            leader_id: self.node_id,
            leader_epoch: i32::try_from(epoch).unwrap_or(i32::MAX),
            high_watermark: end,
            voters: vec![ReplicaState {
                replica_id: self.node_id,
                log_end_offset: end,
                last_fetch_timestamp_ms: now,
                last_caught_up_timestamp_ms: now,
            }],
            observers: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared frame codec writes exactly the layout existing metadata logs hold, so they
    /// open unchanged.
    #[test]
    fn frames_keep_the_on_disk_layout() {
        let mut out = Vec::new();
        encode_frame(5, b"abc", &mut out);
        let mut body = 5i64.to_le_bytes().to_vec();
        body.extend_from_slice(b"abc");
        let mut expected = 11u32.to_le_bytes().to_vec();
        expected.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        expected.extend_from_slice(&body);
        assert_eq!(out, expected);
        let (entries, len) = parse_frames(&out);
        assert_eq!(entries, vec![(5, Bytes::from_static(b"abc"))]);
        assert_eq!(len, out.len());
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    async fn all(log: &LocalQuorumLog, after: i64) -> Vec<(i64, Bytes)> {
        match log.read_committed(after, usize::MAX).await.unwrap() {
            CommittedRead::Entries(e) => e,
            CommittedRead::SnapshotRequired => panic!("snapshot required"),
        }
    }

    #[tokio::test]
    async fn append_read_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let log = LocalQuorumLog::open(1, dir.path().to_path_buf())
            .await
            .unwrap();
        assert_eq!(*log.committed_offset().borrow(), -1);
        assert_eq!(log.append(vec![b("a"), b("b")]).await.unwrap(), 1);
        assert_eq!(log.append(vec![b("c")]).await.unwrap(), 2);
        assert_eq!(*log.committed_offset().borrow(), 2);
        assert_eq!(all(&log, 0).await, vec![(1, b("b")), (2, b("c"))]);
        drop(log);
        let log = LocalQuorumLog::open(1, dir.path().to_path_buf())
            .await
            .unwrap();
        assert_eq!(*log.committed_offset().borrow(), 2);
        assert_eq!(all(&log, -1).await.len(), 3);
        assert_eq!(log.leader().borrow().leader_id, Some(1));
    }

    #[tokio::test]
    async fn torn_tail_is_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let log = LocalQuorumLog::open(1, dir.path().to_path_buf())
            .await
            .unwrap();
        log.append(vec![b("one"), b("two"), b("three")])
            .await
            .unwrap();
        drop(log);
        let path = dir.path().join(LOG_FILE);
        let len = fs::metadata(&path).unwrap().len();
        // Cut the last frame in half, as a crash mid-write would.
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 3).unwrap();
        drop(f);
        let log = LocalQuorumLog::open(1, dir.path().to_path_buf())
            .await
            .unwrap();
        assert_eq!(all(&log, -1).await, vec![(0, b("one")), (1, b("two"))]);
        // Appends continue after the valid prefix.
        assert_eq!(log.append(vec![b("four")]).await.unwrap(), 2);
        drop(log);
        // A flipped byte in the last frame is a corrupt tail too.
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&path, &bytes).unwrap();
        let log = LocalQuorumLog::open(1, dir.path().to_path_buf())
            .await
            .unwrap();
        assert_eq!(all(&log, -1).await.len(), 2);
        assert_eq!(*log.committed_offset().borrow(), 1);
    }

    #[tokio::test]
    async fn snapshot_truncates_log_and_survives_restart() {
        let dir = tempfile::tempdir().unwrap();
        let log = LocalQuorumLog::open(1, dir.path().to_path_buf())
            .await
            .unwrap();
        for i in 0..10 {
            log.append(vec![b(&format!("e{i}"))]).await.unwrap();
        }
        log.save_snapshot(6, b("snap6")).await.unwrap();
        assert_eq!(all(&log, 6).await.len(), 3);
        log.save_snapshot(8, b("snap8")).await.unwrap();
        // Entries up to the previous snapshot (6) are gone from the log.
        assert_eq!(
            log.read_committed(3, 10).await.unwrap(),
            CommittedRead::SnapshotRequired
        );
        assert_eq!(all(&log, 6).await.len(), 3);
        log.save_snapshot(9, b("snap9")).await.unwrap();
        assert_eq!(list_snapshots(dir.path()).unwrap().len(), SNAPSHOTS_KEPT);
        log.append(vec![b("e10")]).await.unwrap();
        drop(log);
        let log = LocalQuorumLog::open(1, dir.path().to_path_buf())
            .await
            .unwrap();
        assert_eq!(log.latest_snapshot().await.unwrap(), Some((9, b("snap9"))));
        assert_eq!(all(&log, 9).await, vec![(10, b("e10"))]);
        assert_eq!(all(&log, 8).await.len(), 2);
        assert_eq!(*log.committed_offset().borrow(), 10);
    }

    #[tokio::test]
    async fn corrupt_newest_snapshot_falls_back_to_older() {
        let dir = tempfile::tempdir().unwrap();
        let log = LocalQuorumLog::open(1, dir.path().to_path_buf())
            .await
            .unwrap();
        for i in 0..4 {
            log.append(vec![b(&format!("e{i}"))]).await.unwrap();
        }
        log.save_snapshot(1, b("s1")).await.unwrap();
        log.save_snapshot(2, b("s2")).await.unwrap();
        drop(log);
        let newest = snapshot_path(dir.path(), 2);
        let mut bytes = fs::read(&newest).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&newest, bytes).unwrap();
        let log = LocalQuorumLog::open(1, dir.path().to_path_buf())
            .await
            .unwrap();
        assert_eq!(log.latest_snapshot().await.unwrap(), Some((1, b("s1"))));
        // The log still holds what snapshot 1 does not cover.
        assert_eq!(all(&log, 1).await, vec![(2, b("e2")), (3, b("e3"))]);
    }
}
