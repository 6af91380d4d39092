//! The application's state machine behind openraft, and snapshots kept as files.
//!
//! The application state lives in memory only; on start-up it is rebuilt from the newest snapshot
//! file (`restore`) and then by openraft re-applying the log after it. Snapshots are taken from
//! the state machine's task, between two `apply` calls, so they reflect exactly the entries up to
//! their `last_log_id`; writing the file then happens off that task.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::encoding::{
    decode_struct, encode_struct, get, put_bytes, Decode, DecodeError, Encode, Reader,
};
use crate::error::RaftError;
use crate::fsutil;
use crate::legacy::LegacyReader;
use crate::log_store::{decode_value, encode_value, Stored};
use crate::openraft_codec::legacy;
use crate::types::{Entry, LogId, SnapshotMeta, StorageError, StoredMembership, TypeConfig};
use bytes::Bytes;
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{EntryPayload, OptionalSend, RaftLogId, RaftSnapshotBuilder, StorageIOError};

/// The application's replicated state. Implementations use interior mutability; calls arrive from
/// one task at a time, in log order.
pub trait ReplicatedStateMachine: Send + Sync + 'static {
    /// Applies one committed batch. `index` is its Raft log index: strictly increasing but with
    /// gaps, since the log also holds entries that carry no application data (leader no-ops,
    /// membership).
    fn apply(&self, index: u64, records: &[Bytes]);

    /// Serialises the whole state as of the last applied batch.
    fn snapshot(&self) -> Vec<u8>;

    /// Replaces the whole state with a snapshot covering everything up to `last_index`.
    fn restore(&self, snapshot: &[u8], last_index: u64) -> Result<(), StateMachineError>;
}

/// A state machine could not load a snapshot.
#[derive(Debug, thiserror::Error)]
#[error("state machine error: {0}")]
pub struct StateMachineError(pub String);

/// A snapshot as stored in `<data_dir>/snapshot` (in the same framing as the log's small
/// files; a bincode-era file is rewritten when it is opened) and served to observers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSnapshot {
    pub meta: SnapshotMeta,
    pub data: Vec<u8>,
}

impl Encode for StoredSnapshot {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_struct(out, |out| {
            self.meta.encode(out);
            put_bytes(out, &self.data);
        });
    }
}

impl Decode for StoredSnapshot {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        decode_struct(reader, "StoredSnapshot", |r| {
            Ok(StoredSnapshot {
                meta: get(r)?,
                data: r.byte_vec()?,
            })
        })
    }
}

fn legacy_snapshot(r: &mut LegacyReader<'_>) -> Result<StoredSnapshot, DecodeError> {
    Ok(StoredSnapshot {
        meta: legacy::snapshot_meta(r)?,
        data: r.bytes()?.to_vec(),
    })
}

impl StoredSnapshot {
    pub fn last_index(&self) -> Option<u64> {
        self.meta.last_log_id.map(|id| id.index)
    }
}

/// The newest snapshot and where it is persisted; shared with the network server.
#[derive(Debug)]
pub struct SnapshotSlot {
    path: PathBuf,
    current: Mutex<Option<Arc<StoredSnapshot>>>,
}

impl SnapshotSlot {
    fn open(data_dir: &Path) -> Result<Self, RaftError> {
        let path = data_dir.join("snapshot");
        let current = match fsutil::read_checked(&path) {
            Ok(None) => None,
            Ok(Some(bytes)) => {
                let Stored { value, legacy } =
                    decode_value(&bytes, legacy_snapshot).map_err(|reason| RaftError::Corrupt {
                        path: path.display().to_string(),
                        reason,
                    })?;
                if legacy {
                    fsutil::write_atomic(&path, &encode_value(&value), true)?;
                }
                Some(Arc::new(value))
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(RaftError::Corrupt {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Self {
            path,
            current: Mutex::new(current),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Option<Arc<StoredSnapshot>>> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn current(&self) -> Option<Arc<StoredSnapshot>> {
        self.lock().clone()
    }

    /// Persists `snapshot` unless a newer one is already stored.
    fn store(&self, snapshot: StoredSnapshot) -> Result<Arc<StoredSnapshot>, std::io::Error> {
        let mut current = self.lock();
        if let Some(existing) = current.as_ref() {
            if existing.meta.last_log_id > snapshot.meta.last_log_id {
                return Ok(existing.clone());
            }
        }
        fsutil::write_atomic(&self.path, &encode_value(&snapshot), true)?;
        let snapshot = Arc::new(snapshot);
        *current = Some(snapshot.clone());
        Ok(snapshot)
    }
}

fn to_openraft_snapshot(stored: &StoredSnapshot) -> Snapshot<TypeConfig> {
    Snapshot {
        meta: stored.meta.clone(),
        snapshot: Box::new(Cursor::new(stored.data.clone())),
    }
}

/// openraft's view of the application state machine.
pub struct StateMachineStore {
    app: Arc<dyn ReplicatedStateMachine>,
    last_applied: Option<LogId>,
    last_membership: StoredMembership,
    snapshots: Arc<SnapshotSlot>,
    snapshot_seq: u64,
}

impl StateMachineStore {
    /// Loads the newest snapshot from `data_dir` into `app`.
    pub fn open(
        data_dir: &Path,
        app: Arc<dyn ReplicatedStateMachine>,
    ) -> Result<(Self, Arc<SnapshotSlot>), RaftError> {
        let snapshots = Arc::new(SnapshotSlot::open(data_dir)?);
        let mut store = Self {
            app,
            last_applied: None,
            last_membership: StoredMembership::default(),
            snapshots: snapshots.clone(),
            snapshot_seq: 0,
        };
        if let Some(snapshot) = snapshots.current() {
            let last_index = snapshot.last_index().unwrap_or(0);
            store
                .app
                .restore(&snapshot.data, last_index)
                .map_err(|e| RaftError::Storage(e.to_string()))?;
            store.last_applied = snapshot.meta.last_log_id;
            store.last_membership = snapshot.meta.last_membership.clone();
        }
        Ok((store, snapshots))
    }
}

/// Holds a state captured between two applies; writes it to disk when openraft asks.
pub struct SnapshotBuilder {
    snapshot: Option<StoredSnapshot>,
    snapshots: Arc<SnapshotSlot>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let Some(snapshot) = self.snapshot.take() else {
            return Err(StorageIOError::write_snapshot(
                None,
                &std::io::Error::other("built twice"),
            )
            .into());
        };
        let signature = snapshot.meta.signature();
        let slot = self.snapshots.clone();
        let stored = tokio::task::spawn_blocking(move || slot.store(snapshot))
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(signature.clone()), &e))?
            .map_err(|e| StorageIOError::write_snapshot(Some(signature), &e))?;
        Ok(to_openraft_snapshot(&stored))
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        Ok((self.last_applied, self.last_membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut responses = Vec::new();
        for entry in entries {
            let log_id = *entry.get_log_id();
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(batch) => self.app.apply(log_id.index, &batch.0),
                EntryPayload::Membership(membership) => {
                    self.last_membership = StoredMembership::new(Some(log_id), membership);
                }
            }
            self.last_applied = Some(log_id);
            responses.push(());
        }
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.snapshot_seq += 1;
        let snapshot_id = match self.last_applied {
            Some(id) => format!("{}-{}-{}", id.leader_id, id.index, self.snapshot_seq),
            None => format!("none-{}", self.snapshot_seq),
        };
        let snapshot = StoredSnapshot {
            meta: SnapshotMeta {
                last_log_id: self.last_applied,
                last_membership: self.last_membership.clone(),
                snapshot_id,
            },
            data: self.app.snapshot(),
        };
        SnapshotBuilder {
            snapshot: Some(snapshot),
            snapshots: self.snapshots.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let stored = StoredSnapshot {
            meta: meta.clone(),
            data: snapshot.into_inner(),
        };
        let last_index = stored.last_index().unwrap_or(0);
        self.app
            .restore(&stored.data, last_index)
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        let slot = self.snapshots.clone();
        tokio::task::spawn_blocking(move || slot.store(stored))
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?;
        self.last_applied = meta.last_log_id;
        self.last_membership = meta.last_membership.clone();
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(self.snapshots.current().map(|s| to_openraft_snapshot(&s)))
    }
}
