//! The replicated metadata log as the runtime sees it.
//!
//! An entry is opaque bytes (one encoded batch of metadata records, committed atomically).
//! Offsets are assigned by the log, increase strictly, and may have gaps (a Raft log also
//! holds its own entries, such as membership changes, that are not handed out here).
//! [`crate::LocalQuorumLog`] is the single-voter implementation; a Raft quorum implements the
//! same trait.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use tokio::sync::watch;

use crate::error::MetadataError;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who leads the quorum, as far as this node knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuorumLeader {
    /// The node accepting appends; `None` during an election.
    pub leader_id: Option<i32>,
    /// The Raft term or leader epoch; increases with each new leader.
    pub epoch: i64,
}

/// One replica of the metadata log as the leader sees it (Kafka's DescribeQuorum
/// `ReplicaState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaState {
    pub replica_id: i32,
    /// The offset after the last entry the replica holds.
    pub log_end_offset: i64,
    /// Milliseconds since the epoch; -1 when unknown.
    pub last_fetch_timestamp_ms: i64,
    pub last_caught_up_timestamp_ms: i64,
}

/// The quorum as its leader describes it (Kafka's DescribeQuorum).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumDescription {
    pub leader_id: i32,
    pub leader_epoch: i32,
    /// The offset after the last committed entry.
    pub high_watermark: i64,
    pub voters: Vec<ReplicaState>,
    pub observers: Vec<ReplicaState>,
}

/// What `read_committed` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommittedRead {
    /// Committed entries after the requested offset, in order (possibly none).
    Entries(Vec<(i64, Bytes)>),
    /// The entries after the requested offset start before the oldest one kept: load
    /// [`QuorumLog::latest_snapshot`] first.
    SnapshotRequired,
}

pub trait QuorumLog: Send + Sync + 'static {
    /// This node's id.
    fn node_id(&self) -> i32;

    /// Appends entries as the leader and returns once they are committed (durable on a
    /// majority), with the offset of the last one. Fails with `NotController` on a follower.
    fn append(&self, entries: Vec<Bytes>) -> BoxFuture<'_, Result<i64, MetadataError>>;

    /// The highest committed offset (-1 when none), updated as entries commit.
    fn committed_offset(&self) -> watch::Receiver<i64>;

    /// Up to `max` committed entries with offsets above `after`.
    fn read_committed(
        &self,
        after: i64,
        max: usize,
    ) -> BoxFuture<'_, Result<CommittedRead, MetadataError>>;

    /// The newest snapshot: (offset of the last entry it covers, bytes).
    fn latest_snapshot(&self) -> BoxFuture<'_, Result<Option<(i64, Bytes)>, MetadataError>>;

    /// Stores a snapshot covering every entry up to `offset`; the log may then drop them.
    fn save_snapshot(&self, offset: i64, data: Bytes) -> BoxFuture<'_, Result<(), MetadataError>>;

    /// The current leader, updated on elections.
    fn leader(&self) -> watch::Receiver<QuorumLeader>;

    /// Called by a newly elected leader before it acts: returns an offset such that every entry
    /// committed by earlier leaders is at or below it. A Raft leader commits an entry of its own
    /// term to learn that; a single voter's committed offset already is such an offset.
    fn barrier(&self) -> BoxFuture<'_, Result<i64, MetadataError>> {
        Box::pin(async move { Ok(*self.committed_offset().borrow()) })
    }

    /// The leader's description of the quorum; `None` when this node does not lead it.
    fn describe(&self) -> Option<QuorumDescription>;

    /// Stops replication and releases the log's files and listeners.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
