//! KIP-890 part 1 on the partition leader: the first transactional batch of a producer on a
//! partition is appended only if the coordinator confirms the partition belongs to the
//! producer's ongoing transaction, and only if no marker for that producer was written to the
//! partition meanwhile. Otherwise a late write would open a transaction nobody ever ends (a
//! hanging transaction, holding the last stable offset back for good).
//!
//! The gate serialises, per partition, "check producer state + append" of transactional
//! batches against marker writes; non-transactional appends never take it. A verification in
//! flight holds a guard that any marker for the producer on the partition removes; the append
//! after the coordinator's answer goes ahead only while its guard is still there (Kafka's
//! verification guard).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use shale_log::TopicPartition;

/// Partitions hash onto this many locks: enough that unrelated partitions rarely wait.
const STRIPES: usize = 64;

pub struct TxnGate {
    stripes: Vec<Mutex<()>>,
    hasher: std::collections::hash_map::RandomState,
    /// (partition, producer id) -> token of the verification in flight.
    guards: Mutex<HashMap<(TopicPartition, i64), u64>>,
    next_token: AtomicU64,
}

impl std::fmt::Debug for TxnGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnGate")
            .field("guards", &self.guards.lock().len())
            .finish()
    }
}

impl Default for TxnGate {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            hasher: std::collections::hash_map::RandomState::new(),
            guards: Mutex::new(HashMap::new()),
            next_token: AtomicU64::new(1),
        }
    }
}

impl TxnGate {
    fn stripe(&self, tp: &TopicPartition) -> &Mutex<()> {
        let index = (self.hasher.hash_one(tp) % STRIPES as u64) as usize;
        &self.stripes[index]
    }

    /// Runs `write` (a marker append) with the partition's gate held, after dropping the
    /// producer's verification guard there.
    pub fn write_marker<T>(
        &self,
        tp: &TopicPartition,
        producer_id: i64,
        write: impl FnOnce() -> T,
    ) -> T {
        let _held = self.stripe(tp).lock();
        self.guards.lock().remove(&(tp.clone(), producer_id));
        write()
    }

    /// Runs `append` on `batch` with the partition's gate held if `in_transaction` (checked
    /// under the gate) says the producer's transaction is already open on the partition;
    /// otherwise the batch comes back, and it needs verifying.
    pub fn append_in_open_transaction<B, T>(
        &self,
        tp: &TopicPartition,
        in_transaction: impl FnOnce() -> bool,
        batch: B,
        append: impl FnOnce(B) -> T,
    ) -> Result<T, B> {
        let _held = self.stripe(tp).lock();
        if in_transaction() {
            Ok(append(batch))
        } else {
            Err(batch)
        }
    }

    /// Starts a verification: a guard any marker for the producer on `tp` will remove.
    /// Concurrent verifications of one producer share the guard.
    pub fn begin_verification(&self, tp: &TopicPartition, producer_id: i64) -> u64 {
        *self
            .guards
            .lock()
            .entry((tp.clone(), producer_id))
            .or_insert_with(|| self.next_token.fetch_add(1, Ordering::Relaxed))
    }

    /// Drops a guard whose verification failed.
    pub fn abandon_verification(&self, tp: &TopicPartition, producer_id: i64, token: u64) {
        let mut guards = self.guards.lock();
        if guards.get(&(tp.clone(), producer_id)) == Some(&token) {
            guards.remove(&(tp.clone(), producer_id));
        }
    }

    /// Runs `append` with the gate held if the guard of a successful verification survived
    /// (no marker was written meanwhile); `None` if it did not.
    pub fn append_verified<T>(
        &self,
        tp: &TopicPartition,
        producer_id: i64,
        token: u64,
        append: impl FnOnce() -> T,
    ) -> Option<T> {
        let _held = self.stripe(tp).lock();
        let key = (tp.clone(), producer_id);
        let mut guards = self.guards.lock();
        if guards.get(&key) != Some(&token) {
            return None;
        }
        guards.remove(&key);
        drop(guards);
        Some(append())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp() -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: 0,
        }
    }

    #[test]
    fn a_marker_between_verification_and_append_refuses_the_append() {
        let gate = TxnGate::default();
        let token = gate.begin_verification(&tp(), 7);
        gate.write_marker(&tp(), 7, || ());
        assert_eq!(gate.append_verified(&tp(), 7, token, || 1), None);
    }

    #[test]
    fn a_verified_append_goes_ahead_once() {
        let gate = TxnGate::default();
        let token = gate.begin_verification(&tp(), 7);
        // Another producer's marker leaves the guard alone.
        gate.write_marker(&tp(), 8, || ());
        assert_eq!(gate.begin_verification(&tp(), 7), token);
        assert_eq!(gate.append_verified(&tp(), 7, token, || 1), Some(1));
        assert_eq!(gate.append_verified(&tp(), 7, token, || 1), None);
    }

    #[test]
    fn abandoned_verifications_leave_no_guard() {
        let gate = TxnGate::default();
        let token = gate.begin_verification(&tp(), 7);
        gate.abandon_verification(&tp(), 7, token);
        assert_ne!(gate.begin_verification(&tp(), 7), token);
        assert_eq!(
            gate.append_in_open_transaction(&tp(), || false, 0, |b| b + 1),
            Err(0)
        );
        assert_eq!(
            gate.append_in_open_transaction(&tp(), || true, 0, |b| b + 1),
            Ok(1)
        );
    }
}
