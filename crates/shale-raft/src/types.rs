//! The openraft type configuration: entries carry opaque byte batches.

use std::io::Cursor;

use bytes::Bytes;

/// One Raft log entry's application payload: records proposed together and applied atomically.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch(pub Vec<Bytes>);

impl Batch {
    pub fn size_bytes(&self) -> usize {
        self.0.iter().map(Bytes::len).sum()
    }
}

impl std::fmt::Display for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Batch({} records, {} bytes)",
            self.0.len(),
            self.size_bytes()
        )
    }
}

openraft::declare_raft_types!(
    /// Shale's Raft types: u64 ids, nodes addressed by their controller listener.
    pub TypeConfig:
        D = Batch,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type NodeId = u64;
pub type Entry = openraft::Entry<TypeConfig>;
pub type LogId = openraft::LogId<NodeId>;
pub type Vote = openraft::Vote<NodeId>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, openraft::BasicNode>;
pub type StoredMembership = openraft::StoredMembership<NodeId, openraft::BasicNode>;
pub type Raft = openraft::Raft<TypeConfig>;
