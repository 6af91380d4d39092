//! What the leader knows about the other replicas, for Kafka's DescribeQuorum: when each voter
//! last answered, when it was last caught up with the leader's log end, and how far each
//! observer has fetched.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::types::NodeId;

/// Milliseconds since the Unix epoch, as Kafka's timestamps.
pub(crate) fn wall_clock_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// One replica as the leader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaProgress {
    pub node_id: u64,
    /// The replica's log end as an index: the next index it needs (0: nothing yet).
    pub log_end_index: u64,
    /// When it last answered the leader (voters) or fetched from it (observers), -1 if never.
    pub last_fetch_ms: i64,
    /// When its log last reached the leader's log end, -1 if never.
    pub last_caught_up_ms: i64,
}

/// The leader's view of the quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumProgress {
    pub leader_id: u64,
    pub term: u64,
    /// The next index after the last committed and applied entry.
    pub high_watermark: u64,
    pub voters: Vec<ReplicaProgress>,
    pub observers: Vec<ReplicaProgress>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    last_fetch_ms: i64,
    last_caught_up_ms: i64,
    log_end_index: u64,
}

/// Shared by the network (answers received, observer fetches) and the node (caught-up checks).
#[derive(Debug, Default)]
pub(crate) struct ProgressTracker {
    voters: Mutex<BTreeMap<NodeId, Seen>>,
    observers: Mutex<BTreeMap<NodeId, Seen>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ProgressTracker {
    /// A voter answered an RPC.
    pub(crate) fn voter_answered(&self, node_id: NodeId) {
        let now = wall_clock_ms();
        lock(&self.voters).entry(node_id).or_default().last_fetch_ms = now;
    }

    /// The leader saw a voter's log reach its own end.
    pub(crate) fn voter_caught_up(&self, node_id: NodeId) {
        let now = wall_clock_ms();
        lock(&self.voters)
            .entry(node_id)
            .or_default()
            .last_caught_up_ms = now;
    }

    /// An observer fetched from `from_index`; `leader_end` is this node's next index then.
    pub(crate) fn observer_fetched(&self, node_id: NodeId, from_index: u64, leader_end: u64) {
        let now = wall_clock_ms();
        let mut observers = lock(&self.observers);
        let seen = observers.entry(node_id).or_default();
        seen.last_fetch_ms = now;
        seen.log_end_index = from_index;
        if from_index >= leader_end {
            seen.last_caught_up_ms = now;
        }
    }

    pub(crate) fn voter_times(&self, node_id: NodeId) -> (i64, i64) {
        lock(&self.voters)
            .get(&node_id)
            .map_or((-1, -1), |s| (s.last_fetch_ms, s.last_caught_up_ms))
    }

    pub(crate) fn observers(&self) -> Vec<ReplicaProgress> {
        lock(&self.observers)
            .iter()
            .map(|(id, s)| ReplicaProgress {
                node_id: *id,
                log_end_index: s.log_end_index,
                last_fetch_ms: s.last_fetch_ms,
                last_caught_up_ms: s.last_caught_up_ms,
            })
            .collect()
    }
}
