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
use tokio::sync::watch;

use crate::encoding::{self, DecodeError};
use crate::legacy::LegacyReader;
use crate::state_machine::{ReplicatedStateMachine, StateMachineError};

/// First bytes of a [`CommittedLog`] snapshot in the versioned encoding, then its format
/// version. A bincode-era snapshot starts with an `Option` tag (0 or 1) instead.
const STATE_MAGIC: &[u8; 4] = b"SHCL";
const STATE_FORMAT_VERSION: u8 = 1;

/// What [`CommittedLog::read_committed`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommittedRead {
    /// Committed batches after the requested index, in order (possibly none).
    Entries(Vec<(u64, Vec<Bytes>)>),
    /// Batches after the requested index were compacted into the application snapshot: load
    /// [`CommittedLog::latest_snapshot`] and continue after its index.
    SnapshotRequired,
}

#[derive(Debug, Default)]
struct State {
    /// The application's own snapshot and the last index it covers.
    base: Option<(u64, Bytes)>,
    /// Committed batches after `base`.
    tail: BTreeMap<u64, Vec<Bytes>>,
}

crate::versioned_struct!(State { base, tail });

impl State {
    fn encode_snapshot(&self) -> Vec<u8> {
        let mut out = STATE_MAGIC.to_vec();
        out.push(STATE_FORMAT_VERSION);
        encoding::Encode::encode(self, &mut out);
        out
    }

    fn decode_snapshot(bytes: &[u8]) -> Result<State, DecodeError> {
        let Some(rest) = bytes.strip_prefix(STATE_MAGIC) else {
            return Self::decode_legacy(bytes);
        };
        match rest.split_first() {
            Some((&STATE_FORMAT_VERSION, encoded)) => encoding::from_slice(encoded),
            Some((&version, _)) => Err(DecodeError::UnknownVersion {
                type_name: "committed log snapshot",
                version: u64::from(version),
                max: u64::from(STATE_FORMAT_VERSION),
            }),
            None => Err(DecodeError::Invalid(
                "committed log snapshot without a version",
            )),
        }
    }

    /// The state as bincode wrote it: `base` as an option of (u64, bytes), `tail` as a map.
    fn decode_legacy(bytes: &[u8]) -> Result<State, DecodeError> {
        let mut r = LegacyReader::new(bytes);
        let base = r.option(|r| Ok((r.u64()?, Bytes::copy_from_slice(r.bytes()?))))?;
        let tail = r
            .seq(|r| {
                let index = r.u64()?;
                Ok((index, r.seq(|r| Ok(Bytes::copy_from_slice(r.bytes()?)))?))
            })?
            .into_iter()
            .collect();
        Ok(State { base, tail })
    }

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
        self.lock().encode_snapshot()
    }

    fn restore(&self, snapshot: &[u8], _last_index: u64) -> Result<(), StateMachineError> {
        let restored =
            State::decode_snapshot(snapshot).map_err(|e| StateMachineError(e.to_string()))?;
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
        assert!(copy.restore(b"SHCL\x09", 0).is_err());
    }

    #[test]
    fn a_bincode_era_snapshot_restores() {
        // base: Some((3, "img")), tail: {4: ["d"]}, as bincode wrote it.
        let mut old = vec![1];
        old.extend_from_slice(&3u64.to_le_bytes());
        old.extend_from_slice(&3u64.to_le_bytes());
        old.extend_from_slice(b"img");
        old.extend_from_slice(&1u64.to_le_bytes());
        old.extend_from_slice(&4u64.to_le_bytes());
        old.extend_from_slice(&1u64.to_le_bytes());
        old.extend_from_slice(&1u64.to_le_bytes());
        old.extend_from_slice(b"d");
        let log = CommittedLog::new();
        log.restore(&old, 4).unwrap();
        assert_eq!(log.latest_snapshot(), Some((3, b("img"))));
        assert_eq!(
            log.read_committed(Some(3), 10),
            CommittedRead::Entries(vec![(4, vec![b("d")])])
        );
        assert!(log.snapshot().starts_with(STATE_MAGIC));
        for cut in 0..old.len() {
            assert!(CommittedLog::new().restore(&old[..cut], 4).is_err());
        }
    }
}
