//! What the coordinator stores per transactional id, and the pure transitions on it.

use std::collections::BTreeSet;

use super::error::TxnCoordinatorError;
use super::state::TxnState;
use crate::producer_state::{TransactionVersion, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};

/// A partition taking part in a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

/// The value of a `__transaction_state` record: everything the coordinator knows about one
/// transactional id (Kafka's `TransactionMetadata` without the in-memory pending state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    /// The producer id before the last transition (differs after an id rotation).
    pub prev_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last bump, so that a retried InitProducerId is recognised.
    pub last_producer_epoch: i16,
    pub txn_timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<TopicPartition>,
    /// When the first partition was added (`-1` when no transaction is running).
    pub txn_start_timestamp_ms: i64,
    pub txn_last_update_timestamp_ms: i64,
    /// Transaction version 2: the producer id the transaction continues under once its
    /// markers are written, because the epoch bump of this EndTxn exhausted the epochs.
    pub next_producer_id: i64,
    /// The transaction protocol of the client's last AddPartitions or EndTxn: under version 2
    /// every EndTxn bumps the epoch (KIP-890).
    pub client_transaction_version: TransactionVersion,
}

/// One record of the transaction log: a new value for the transactional id, or a tombstone
/// (`None`) when it expired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnLogRecord {
    pub transactional_id: String,
    pub value: Option<TxnMetadata>,
}

/// An epoch this close to `i16::MAX` is exhausted: the coordinator must keep one epoch in
/// reserve to fence the producer, so the next InitProducerId rotates to a new producer id.
pub fn is_epoch_exhausted(producer_epoch: i16) -> bool {
    producer_epoch >= i16::MAX - 1
}

impl TxnMetadata {
    /// A transactional id seen for the first time.
    pub fn new(
        transactional_id: impl Into<String>,
        producer_id: i64,
        txn_timeout_ms: i32,
        now_ms: i64,
    ) -> Self {
        Self {
            transactional_id: transactional_id.into(),
            producer_id,
            prev_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            txn_start_timestamp_ms: -1,
            txn_last_update_timestamp_ms: now_ms,
            next_producer_id: NO_PRODUCER_ID,
            client_transaction_version: TransactionVersion::Legacy,
        }
    }

    pub fn is_producer_epoch_exhausted(&self) -> bool {
        is_epoch_exhausted(self.producer_epoch)
    }

    /// The metadata in `next` state, checked against the transition table.
    fn transit(&self, next: TxnState) -> Result<Self, TxnCoordinatorError> {
        if !self.state.can_transition_to(next) {
            return Err(TxnCoordinatorError::IllegalState {
                reason: format!(
                    "transactional id {:?}: no transition from {:?} to {next:?}",
                    self.transactional_id, self.state
                ),
            });
        }
        Ok(Self {
            state: next,
            prev_producer_id: self.producer_id,
            ..self.clone()
        })
    }

    /// InitProducerId on an idle transactional id: bump the epoch, or recognise a retry.
    /// `expected_epoch` is the epoch the producer says it has (KIP-360), if any.
    pub fn prepare_increment_epoch(
        &self,
        txn_timeout_ms: i32,
        expected_epoch: Option<i16>,
        now_ms: i64,
    ) -> Result<Self, TxnCoordinatorError> {
        let mut next = self.transit(TxnState::Empty)?;
        let bump = |epoch: i16| {
            epoch
                .checked_add(1)
                .filter(|_| !is_epoch_exhausted(epoch))
                .ok_or_else(|| TxnCoordinatorError::IllegalState {
                    reason: format!("producer epoch {epoch} is exhausted"),
                })
        };
        match expected_epoch {
            None => {
                next.producer_epoch = bump(self.producer_epoch)?;
                next.last_producer_epoch = NO_PRODUCER_EPOCH;
            }
            Some(expected)
                if self.producer_epoch == NO_PRODUCER_EPOCH || expected == self.producer_epoch =>
            {
                // The producer recovers from an error and nobody else initialised meanwhile.
                next.producer_epoch = bump(self.producer_epoch)?;
                next.last_producer_epoch = self.producer_epoch;
            }
            Some(expected) if expected == self.last_producer_epoch => {
                // A retry of a bump that succeeded: answer with the current epoch again.
            }
            Some(expected) => {
                return Err(TxnCoordinatorError::ProducerFenced {
                    producer_epoch: expected,
                    current_epoch: self.producer_epoch,
                })
            }
        }
        next.txn_timeout_ms = txn_timeout_ms;
        next.partitions.clear();
        next.txn_start_timestamp_ms = -1;
        next.txn_last_update_timestamp_ms = now_ms;
        Ok(next)
    }

    /// InitProducerId when the epoch is exhausted: continue under a new producer id.
    pub fn prepare_producer_id_rotation(
        &self,
        new_producer_id: i64,
        txn_timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> Result<Self, TxnCoordinatorError> {
        if matches!(
            self.state,
            TxnState::Ongoing | TxnState::PrepareCommit | TxnState::PrepareAbort
        ) {
            return Err(TxnCoordinatorError::IllegalState {
                reason: "cannot rotate producer ids while a transaction is pending".to_owned(),
            });
        }
        let mut next = self.transit(TxnState::Empty)?;
        next.producer_id = new_producer_id;
        next.producer_epoch = 0;
        next.last_producer_epoch = if record_last_epoch {
            self.producer_epoch
        } else {
            NO_PRODUCER_EPOCH
        };
        next.txn_timeout_ms = txn_timeout_ms;
        next.partitions.clear();
        next.txn_start_timestamp_ms = -1;
        next.txn_last_update_timestamp_ms = now_ms;
        Ok(next)
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: the transaction starts or grows.
    pub fn prepare_add_partitions(
        &self,
        partitions: &BTreeSet<TopicPartition>,
        transaction_version: TransactionVersion,
        now_ms: i64,
    ) -> Result<Self, TxnCoordinatorError> {
        let mut next = self.transit(TxnState::Ongoing)?;
        next.client_transaction_version = transaction_version;
        if self.state != TxnState::Ongoing {
            next.txn_start_timestamp_ms = now_ms;
        }
        next.partitions.extend(partitions.iter().cloned());
        next.txn_last_update_timestamp_ms = now_ms;
        Ok(next)
    }

    /// EndTxn: prepare to commit or abort. Under transaction version 2 the epoch is bumped
    /// (the markers carry the new one, fencing late writes of this transaction), and
    /// `next_producer_id` is where the producer continues once the bump exhausted the epochs.
    pub fn prepare_abort_or_commit(
        &self,
        commit: bool,
        transaction_version: TransactionVersion,
        next_producer_id: i64,
        now_ms: i64,
    ) -> Result<Self, TxnCoordinatorError> {
        let target = if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        let mut next = self.transit(target)?;
        next.client_transaction_version = transaction_version;
        if transaction_version == TransactionVersion::V2 {
            next.producer_epoch = self.producer_epoch.checked_add(1).ok_or_else(|| {
                TxnCoordinatorError::IllegalState {
                    reason: format!("producer epoch {} cannot be bumped", self.producer_epoch),
                }
            })?;
            next.last_producer_epoch = self.producer_epoch;
            next.next_producer_id = next_producer_id;
        }
        if self.state != TxnState::Ongoing {
            // Aborting with no transaction open (version 2): nothing to write markers to.
            next.partitions.clear();
        }
        next.txn_last_update_timestamp_ms = now_ms;
        Ok(next)
    }

    /// Abort an ongoing transaction under a bumped epoch, fencing its producer (on timeout,
    /// or when a new instance calls InitProducerId). Goes through the never-logged
    /// PrepareEpochFence state, as in Kafka.
    pub fn prepare_fence_and_abort(&self, now_ms: i64) -> Result<Self, TxnCoordinatorError> {
        let mut fencing = self.transit(TxnState::PrepareEpochFence)?;
        // At i16::MAX there is nothing left to bump to; abort with the same epoch.
        fencing.producer_epoch = self.producer_epoch.saturating_add(1);
        fencing.last_producer_epoch = NO_PRODUCER_EPOCH;
        let mut next = fencing.transit(TxnState::PrepareAbort)?;
        next.txn_last_update_timestamp_ms = now_ms;
        Ok(next)
    }

    /// All markers are written: the transaction is complete.
    pub fn prepare_complete(&self, now_ms: i64) -> Result<Self, TxnCoordinatorError> {
        let target = match self.state {
            TxnState::PrepareCommit => TxnState::CompleteCommit,
            TxnState::PrepareAbort => TxnState::CompleteAbort,
            other => {
                return Err(TxnCoordinatorError::IllegalState {
                    reason: format!("cannot complete a transaction in state {other:?}"),
                })
            }
        };
        let mut next = self.transit(target)?;
        next.partitions.clear();
        next.txn_last_update_timestamp_ms = now_ms;
        if self.next_producer_id != NO_PRODUCER_ID {
            // The epoch bump of a version 2 EndTxn exhausted the epochs: continue afresh.
            next.producer_id = self.next_producer_id;
            next.prev_producer_id = self.producer_id;
            next.producer_epoch = 0;
            next.last_producer_epoch = NO_PRODUCER_EPOCH;
            next.next_producer_id = NO_PRODUCER_ID;
        }
        Ok(next)
    }

    /// The transactional id expired.
    pub fn prepare_dead(&self) -> Result<Self, TxnCoordinatorError> {
        let mut next = self.transit(TxnState::Dead)?;
        next.partitions.clear();
        Ok(next)
    }
}
