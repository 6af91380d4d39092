//! A ready-made [`ReplicatedStateMachine`] that turns the push-style `apply` stream into a
//! pull-style committed log: readers ask for entries after an index, and the application decides
//! when to compact by saving its own snapshot.
//!
//! Its replicated state is "the application's latest snapshot plus every committed batch after
//! it", so a Raft snapshot of it is always exact at the applied index even though the
//! application snapshots on its own schedule. Memory held is the batches since the application's
//! last [`CommittedLog::save_snapshot`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::codec;
use crate::state_machine::{ReplicatedStateMachine, StateMachineError};

/// What [`CommittedLog::read_committed`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommittedRead {
    /// Committed batches after the requested index, in order (possibly none).
    Entries(Vec<(u64, Vec<Bytes>)>),
    /// Batches after the requested index were compacted into the application snapshot: load
    /// [`CommittedLog::latest_snapshot`] and continue after its index.
    SnapshotRequired,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// The application's own snapshot and the last index it covers.
    base: Option<(u64, Bytes)>,
    /// Committed batches after `base`.
    tail: BTreeMap<u64, Vec<Bytes>>,
}

impl State {
    fn last_index(&self) -> Option<u64> {
        self.tail
            .keys()
            .next_back()
            .copied()
            .or(self.base.as_ref().map(|(index, _)| *index))
    }
}

/// Committed batches buffered for pull-style readers; see the module docs.
#[derive(Debug)]
pub struct CommittedLog {
    state: Mutex<State>,
    committed_tx: watch::Sender<Option<u64>>,
}

impl CommittedLog {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            committed_tx: watch::channel(None).0,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Index of the newest committed batch (or of the application snapshot), as it advances.
    pub fn committed_index(&self) -> watch::Receiver<Option<u64>> {
        self.committed_tx.subscribe()
    }

    /// Up to `max` committed batches with an index above `after` (`None`: from the start).
    pub fn read_committed(&self, after: Option<u64>, max: usize) -> CommittedRead {
        let state = self.lock();
        if let Some((base_index, _)) = &state.base {
            if after.is_none_or(|after| after < *base_index) {
                return CommittedRead::SnapshotRequired;
            }
        }
        let start = after.map_or(0, |after| after.saturating_add(1));
        CommittedRead::Entries(
            state
                .tail
                .range(start..)
                .take(max)
                .map(|(index, records)| (*index, records.clone()))
                .collect(),
        )
    }

    /// The application snapshot last saved here (or received from the leader) and its index.
    pub fn latest_snapshot(&self) -> Option<(u64, Bytes)> {
        self.lock().base.clone()
    }

    /// Records the application's snapshot covering every batch up to `index`; batches up to it are
    /// dropped. Ignored if an equal or newer snapshot is already held.
    pub fn save_snapshot(&self, index: u64, data: Bytes) {
        let mut state = self.lock();
        if state.base.as_ref().is_some_and(|(base, _)| *base >= index) {
            return;
        }
        state.tail = state.tail.split_off(&(index + 1));
        state.base = Some((index, data));
    }
}

impl ReplicatedStateMachine for CommittedLog {
    fn apply(&self, index: u64, records: &[Bytes]) {
        self.lock().tail.insert(index, records.to_vec());
        self.committed_tx.send_replace(Some(index));
    }

    fn snapshot(&self) -> Vec<u8> {
        // Encoding plain byte vectors and integers cannot fail.
        codec::encode(&*self.lock()).unwrap_or_default()
    }

    fn restore(&self, snapshot: &[u8], _last_index: u64) -> Result<(), StateMachineError> {
        let restored: State =
            codec::decode(snapshot).map_err(|e| StateMachineError(e.to_string()))?;
        let last = restored.last_index();
        *self.lock() = restored;
        self.committed_tx.send_replace(last);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn reads_compacts_and_round_trips_through_snapshots() {
        let log = CommittedLog::new();
        let committed = log.committed_index();
        log.apply(1, &[b("a")]);
        log.apply(3, &[b("b"), b("c")]);
        log.apply(4, &[b("d")]);
        assert_eq!(*committed.borrow(), Some(4));
        assert_eq!(
            log.read_committed(None, 10),
            CommittedRead::Entries(vec![
                (1, vec![b("a")]),
                (3, vec![b("b"), b("c")]),
                (4, vec![b("d")])
            ])
        );
        assert_eq!(
            log.read_committed(Some(1), 1),
            CommittedRead::Entries(vec![(3, vec![b("b"), b("c")])])
        );

        log.save_snapshot(3, b("image@3"));
        assert_eq!(
            log.read_committed(Some(2), 10),
            CommittedRead::SnapshotRequired
        );
        assert_eq!(
            log.read_committed(None, 10),
            CommittedRead::SnapshotRequired
        );
        assert_eq!(
            log.read_committed(Some(3), 10),
            CommittedRead::Entries(vec![(4, vec![b("d")])])
        );
        log.save_snapshot(1, b("older"));
        assert_eq!(log.latest_snapshot(), Some((3, b("image@3"))));

        let copy = CommittedLog::new();
        copy.restore(&log.snapshot(), 4).unwrap();
        assert_eq!(*copy.committed_index().borrow(), Some(4));
        assert_eq!(copy.latest_snapshot(), Some((3, b("image@3"))));
        assert_eq!(
            copy.read_committed(Some(3), 10),
            log.read_committed(Some(3), 10)
        );
        assert!(copy.restore(&[0xff; 3], 0).is_err());
    }
}
