//! The transaction coordinator of one `__transaction_state` partition, as a pure state
//! machine: each request (with the current time) yields either an immediate reply or a record
//! to append to the transaction log; the append's result then yields the reply and any
//! transaction markers to send. State changes only by [`TxnCoordinator::replay`] of a logged
//! record (plus the in-memory "pending" flag that serialises operations on one id).
//!
//! Both transaction protocols are served: version 1 (KIP-98 with KIP-360 epoch recovery) and
//! version 2 (KIP-890 part 2), which Kafka 4 clients use once the broker finalises
//! `transaction.version >= 2`: every EndTxn bumps the producer epoch, the markers carry the
//! bumped epoch, and the partitions of produced batches are added by their leaders.

use std::collections::{BTreeMap, BTreeSet};

use super::error::{TxnCoordinatorError, TxnLogAppendError};
use super::metadata::{TopicPartition, TxnLogRecord, TxnMetadata};
use super::state::TxnState;
use crate::allocator::ProducerIdAllocator;
use crate::producer_state::{TransactionVersion, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};

/// Kafka's defaults: `transaction.max.timeout.ms` = 15 minutes, `transactional.id.expiration.ms`
/// = 7 days.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnCoordinatorConfig {
    pub transaction_max_timeout_ms: i32,
    pub transactional_id_expiration_ms: i64,
}

impl Default for TxnCoordinatorConfig {
    fn default() -> Self {
        Self {
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerIdAndEpoch {
    pub producer_id: i64,
    pub producer_epoch: i16,
}

/// A successful answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnReply {
    Done,
    ProducerIdAndEpoch(ProducerIdAndEpoch),
}

pub type TxnResult = Result<TxnReply, TxnCoordinatorError>;

/// Whether one partition is part of the producer's ongoing transaction.
pub type PartitionVerification = (TopicPartition, Result<(), TxnCoordinatorError>);

/// What to do with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum TxnDecision {
    /// Answer now; nothing is written.
    Reply(TxnResult),
    /// Append `append.record` to the transaction log (acks=all), then pass the append and its
    /// result to [`TxnCoordinator::complete_append`], which gives the answer.
    Append(TxnAppend),
}

/// Why a record is being appended; decides what happens once it is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendPurpose {
    InitProducerId,
    AddPartitions,
    EndTxn {
        commit: bool,
    },
    /// InitProducerId found an ongoing transaction: abort it under a bumped epoch and tell
    /// the new producer to retry (CONCURRENT_TRANSACTIONS).
    FenceForInitProducerId,
    /// The transaction outlived its timeout: abort it under a bumped epoch.
    TimeoutAbort,
    /// All markers were written.
    CompleteTxn,
    /// The idle transactional id expired (the record is a tombstone).
    Expire,
}

/// A record waiting to be written to the transaction log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnAppend {
    pub record: TxnLogRecord,
    /// The coordinator epoch the decision was taken under.
    pub coordinator_epoch: i32,
    pub purpose: AppendPurpose,
}

/// WriteTxnMarkers work: write a COMMIT or ABORT marker for the producer to every partition,
/// then call [`TxnCoordinator::markers_written`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    pub commit: bool,
    pub partitions: Vec<TopicPartition>,
    /// Version 2 markers carry a bumped epoch, which the partitions check more strictly.
    pub transaction_version: TransactionVersion,
}

/// The result of a transaction-log append.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AppendOutcome {
    /// The answer for the request that caused the append (`None` for internal work).
    pub reply: Option<TxnResult>,
    pub markers: Option<MarkerRequest>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    metadata: TxnMetadata,
    /// The state a logged-but-unacknowledged transition moves to; blocks other transitions.
    pending: Option<TxnState>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnCoordinator {
    config: TxnCoordinatorConfig,
    coordinator_epoch: i32,
    txns: BTreeMap<String, Entry>,
}

fn reply(result: TxnResult) -> TxnDecision {
    TxnDecision::Reply(result)
}

fn fail(error: TxnCoordinatorError) -> TxnDecision {
    TxnDecision::Reply(Err(error))
}

impl TxnCoordinator {
    /// The coordinator for a `__transaction_state` partition this broker now leads at
    /// `coordinator_epoch` (the partition's leader epoch). Load it with [`Self::replay`].
    pub fn new(config: TxnCoordinatorConfig, coordinator_epoch: i32) -> Self {
        Self {
            config,
            coordinator_epoch,
            txns: BTreeMap::new(),
        }
    }

    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// Applies a record of the transaction log. The only way committed state changes.
    pub fn replay(&mut self, record: &TxnLogRecord) {
        match &record.value {
            Some(metadata) => {
                self.txns.insert(
                    record.transactional_id.clone(),
                    Entry {
                        metadata: metadata.clone(),
                        pending: None,
                    },
                );
            }
            None => {
                self.txns.remove(&record.transactional_id);
            }
        }
    }

    /// After loading: transactions caught between prepare and complete need their markers
    /// (re)sent.
    pub fn markers_to_resend(&self) -> Vec<MarkerRequest> {
        self.txns
            .values()
            .filter(|entry| {
                matches!(
                    entry.metadata.state,
                    TxnState::PrepareCommit | TxnState::PrepareAbort
                )
            })
            .map(|entry| self.marker_request(&entry.metadata))
            .collect()
    }

    pub fn metadata(&self, transactional_id: &str) -> Option<&TxnMetadata> {
        self.txns.get(transactional_id).map(|entry| &entry.metadata)
    }

    pub fn pending_state(&self, transactional_id: &str) -> Option<TxnState> {
        self.txns
            .get(transactional_id)
            .and_then(|entry| entry.pending)
    }

    /// DescribeTransactions.
    pub fn describe(&self, transactional_id: &str) -> Result<&TxnMetadata, TxnCoordinatorError> {
        if transactional_id.is_empty() {
            return Err(TxnCoordinatorError::InvalidRequest {
                reason: "empty transactional id",
            });
        }
        match self.metadata(transactional_id) {
            Some(metadata) if metadata.state != TxnState::Dead => Ok(metadata),
            _ => Err(TxnCoordinatorError::TransactionalIdNotFound),
        }
    }

    /// ListTransactions: every live transactional id, optionally filtered by state and by
    /// producer id (empty filters match everything).
    pub fn list<'a>(
        &'a self,
        states: &'a [TxnState],
        producer_ids: &'a [i64],
    ) -> impl Iterator<Item = &'a TxnMetadata> + 'a {
        self.list_running_longer_than(states, producer_ids, -1, 0)
    }

    /// [`Self::list`] with KIP-994's duration filter: with `duration_ms >= 0` only
    /// transactions that started more than `duration_ms` before `now_ms` are listed (as in
    /// Kafka, the start time of an id with no transaction running is `-1`, so it passes).
    pub fn list_running_longer_than<'a>(
        &'a self,
        states: &'a [TxnState],
        producer_ids: &'a [i64],
        duration_ms: i64,
        now_ms: i64,
    ) -> impl Iterator<Item = &'a TxnMetadata> + 'a {
        self.txns
            .values()
            .map(|entry| &entry.metadata)
            .filter(|m| m.state != TxnState::Dead)
            .filter(move |m| states.is_empty() || states.contains(&m.state))
            .filter(move |m| producer_ids.is_empty() || producer_ids.contains(&m.producer_id))
            .filter(move |m| {
                duration_ms < 0 || now_ms.saturating_sub(m.txn_start_timestamp_ms) > duration_ms
            })
    }

    fn marker_request(&self, metadata: &TxnMetadata) -> MarkerRequest {
        MarkerRequest {
            transactional_id: metadata.transactional_id.clone(),
            producer_id: metadata.producer_id,
            producer_epoch: metadata.producer_epoch,
            coordinator_epoch: self.coordinator_epoch,
            commit: metadata.state == TxnState::PrepareCommit,
            partitions: metadata.partitions.iter().cloned().collect(),
            transaction_version: metadata.client_transaction_version,
        }
    }

    /// Marks the transition pending and wraps the record for appending.
    fn append(&mut self, next: TxnMetadata, purpose: AppendPurpose) -> TxnDecision {
        TxnDecision::Append(self.prepare_append(next, purpose))
    }

    fn prepare_append(&mut self, next: TxnMetadata, purpose: AppendPurpose) -> TxnAppend {
        if let Some(entry) = self.txns.get_mut(&next.transactional_id) {
            entry.pending = Some(next.state);
        }
        let value = (next.state != TxnState::Dead).then(|| next.clone());
        TxnAppend {
            record: TxnLogRecord {
                transactional_id: next.transactional_id,
                value,
            },
            coordinator_epoch: self.coordinator_epoch,
            purpose,
        }
    }

    fn validate_timeout(&self, txn_timeout_ms: i32) -> Result<(), TxnCoordinatorError> {
        if txn_timeout_ms > 0 && txn_timeout_ms <= self.config.transaction_max_timeout_ms {
            Ok(())
        } else {
            Err(TxnCoordinatorError::InvalidTransactionTimeout {
                timeout_ms: txn_timeout_ms,
                max_ms: self.config.transaction_max_timeout_ms,
            })
        }
    }

    /// InitProducerId. Without a transactional id the producer is only idempotent and gets a
    /// fresh producer id at epoch 0. `expected` is the producer id and epoch a recovering
    /// producer already has (KIP-360).
    pub fn init_producer_id(
        &mut self,
        transactional_id: Option<&str>,
        txn_timeout_ms: i32,
        expected: Option<ProducerIdAndEpoch>,
        now_ms: i64,
        producer_ids: &mut ProducerIdAllocator,
    ) -> TxnDecision {
        let Some(transactional_id) = transactional_id else {
            return match producer_ids.next() {
                Some(producer_id) => reply(Ok(TxnReply::ProducerIdAndEpoch(ProducerIdAndEpoch {
                    producer_id,
                    producer_epoch: 0,
                }))),
                None => fail(TxnCoordinatorError::CoordinatorLoadInProgress),
            };
        };
        if transactional_id.is_empty() {
            return fail(TxnCoordinatorError::InvalidRequest {
                reason: "empty transactional id",
            });
        }
        if let Err(error) = self.validate_timeout(txn_timeout_ms) {
            return fail(error);
        }
        if !self.txns.contains_key(transactional_id) {
            let Some(producer_id) = producer_ids.next() else {
                return fail(TxnCoordinatorError::CoordinatorLoadInProgress);
            };
            // Cached before it is logged, as Kafka does: a concurrent InitProducerId for the
            // same id then waits on the pending transition instead of taking another id.
            self.txns.insert(
                transactional_id.to_owned(),
                Entry {
                    metadata: TxnMetadata::new(
                        transactional_id,
                        producer_id,
                        txn_timeout_ms,
                        now_ms,
                    ),
                    pending: None,
                },
            );
        }
        let Some(entry) = self.txns.get(transactional_id) else {
            return fail(TxnCoordinatorError::IllegalState {
                reason: "transactional id vanished".to_owned(),
            });
        };
        let metadata = &entry.metadata;
        if entry.pending.is_some() {
            return fail(TxnCoordinatorError::ConcurrentTransactions);
        }
        if let Some(expected) = expected {
            let valid = metadata.producer_epoch == NO_PRODUCER_EPOCH
                || expected.producer_id == metadata.producer_id
                || (expected.producer_id == metadata.prev_producer_id
                    && super::metadata::is_epoch_exhausted(expected.producer_epoch));
            if !valid {
                return fail(TxnCoordinatorError::ProducerFenced {
                    producer_epoch: expected.producer_epoch,
                    current_epoch: metadata.producer_epoch,
                });
            }
        }
        let next = match metadata.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                return fail(TxnCoordinatorError::ConcurrentTransactions)
            }
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                let rotate = metadata.is_producer_epoch_exhausted()
                    && expected.is_none_or(|e| e.producer_epoch == metadata.producer_epoch);
                if rotate {
                    let Some(new_producer_id) = producer_ids.next() else {
                        return fail(TxnCoordinatorError::CoordinatorLoadInProgress);
                    };
                    metadata.prepare_producer_id_rotation(
                        new_producer_id,
                        txn_timeout_ms,
                        now_ms,
                        expected.is_some(),
                    )
                } else {
                    metadata.prepare_increment_epoch(
                        txn_timeout_ms,
                        expected.map(|e| e.producer_epoch),
                        now_ms,
                    )
                }
            }
            TxnState::Ongoing => {
                return match metadata.prepare_fence_and_abort(now_ms) {
                    Ok(next) => self.append(next, AppendPurpose::FenceForInitProducerId),
                    Err(error) => fail(error),
                };
            }
            TxnState::Dead | TxnState::PrepareEpochFence => {
                Err(TxnCoordinatorError::IllegalState {
                    reason: format!("transactional id in state {:?}", metadata.state),
                })
            }
        };
        match next {
            Ok(next) => self.append(next, AppendPurpose::InitProducerId),
            Err(error) => fail(error),
        }
    }

    /// Looks up the transactional id for a request from its producer.
    fn producer_entry(
        &self,
        transactional_id: &str,
        producer_id: i64,
    ) -> Result<&Entry, TxnCoordinatorError> {
        if transactional_id.is_empty() {
            return Err(TxnCoordinatorError::InvalidRequest {
                reason: "empty transactional id",
            });
        }
        match self.txns.get(transactional_id) {
            Some(entry) if entry.metadata.producer_id == producer_id => Ok(entry),
            _ => Err(TxnCoordinatorError::InvalidProducerIdMapping { producer_id }),
        }
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn, with the group's `__consumer_offsets`
    /// partition) from a transaction version 1 client.
    pub fn add_partitions(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        now_ms: i64,
    ) -> TxnDecision {
        self.add_partitions_with_version(
            transactional_id,
            producer_id,
            producer_epoch,
            partitions,
            TransactionVersion::Legacy,
            now_ms,
        )
    }

    /// AddPartitionsToTxn under either protocol. Under version 2 the partition leaders send
    /// it (implicitly, for the first batch of a transaction on a partition) and TxnOffsetCommit
    /// v5 for the group's partition.
    pub fn add_partitions_with_version(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        transaction_version: TransactionVersion,
        now_ms: i64,
    ) -> TxnDecision {
        let entry = match self.producer_entry(transactional_id, producer_id) {
            Ok(entry) => entry,
            Err(error) => return fail(error),
        };
        let metadata = &entry.metadata;
        if metadata.producer_epoch != producer_epoch {
            return fail(TxnCoordinatorError::ProducerFenced {
                producer_epoch,
                current_epoch: metadata.producer_epoch,
            });
        }
        if entry.pending.is_some()
            || matches!(
                metadata.state,
                TxnState::PrepareCommit | TxnState::PrepareAbort
            )
        {
            return fail(TxnCoordinatorError::ConcurrentTransactions);
        }
        if metadata.state == TxnState::Ongoing && partitions.is_subset(&metadata.partitions) {
            return reply(Ok(TxnReply::Done));
        }
        match metadata.prepare_add_partitions(partitions, transaction_version, now_ms) {
            Ok(next) => self.append(next, AppendPurpose::AddPartitions),
            Err(error) => fail(error),
        }
    }

    /// AddPartitionsToTxn with `verify_only` (the broker's produce-time check that a
    /// transactional batch's partition was added): one result per partition.
    pub fn verify_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
    ) -> Result<Vec<PartitionVerification>, TxnCoordinatorError> {
        let entry = self.producer_entry(transactional_id, producer_id)?;
        let metadata = &entry.metadata;
        if metadata.producer_epoch != producer_epoch {
            return Err(TxnCoordinatorError::ProducerFenced {
                producer_epoch,
                current_epoch: metadata.producer_epoch,
            });
        }
        if entry.pending.is_some() {
            return Err(TxnCoordinatorError::ConcurrentTransactions);
        }
        Ok(partitions
            .iter()
            .map(|tp| {
                let found = metadata.state == TxnState::Ongoing && metadata.partitions.contains(tp);
                let result = if found {
                    Ok(())
                } else {
                    Err(TxnCoordinatorError::InvalidTxnState {
                        state: metadata.state,
                        action: "write to a partition not added to",
                    })
                };
                (tp.clone(), result)
            })
            .collect())
    }

    /// EndTxn from a transaction version 1 producer (EndTxn v0-v4).
    pub fn end_txn(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        now_ms: i64,
    ) -> TxnDecision {
        self.end_txn_with_version(
            transactional_id,
            producer_id,
            producer_epoch,
            commit,
            TransactionVersion::Legacy,
            now_ms,
            &mut ProducerIdAllocator::new(),
        )
    }

    /// EndTxn under either protocol. Under version 2 (EndTxn v5+) the epoch is bumped and
    /// answered; `producer_ids` must hold one id when the bump exhausts the epochs
    /// (see [`TxnMetadata::is_producer_epoch_exhausted`]).
    #[allow(clippy::too_many_arguments)]
    pub fn end_txn_with_version(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        transaction_version: TransactionVersion,
        now_ms: i64,
        producer_ids: &mut ProducerIdAllocator,
    ) -> TxnDecision {
        if transactional_id.is_empty() {
            return fail(TxnCoordinatorError::InvalidRequest {
                reason: "empty transactional id",
            });
        }
        let Some(entry) = self.txns.get(transactional_id) else {
            return fail(TxnCoordinatorError::InvalidProducerIdMapping { producer_id });
        };
        let metadata = &entry.metadata;
        let v2 = transaction_version == TransactionVersion::V2;
        // Version 2 retries: the producer does not know yet about the bump its EndTxn caused
        // (or the one a timeout abort caused), or about the producer id that followed an
        // exhausted epoch.
        let retry_on_bump = v2
            && producer_id == metadata.producer_id
            && i32::from(producer_epoch) + 1 == i32::from(metadata.producer_epoch);
        let retry_on_overflow = v2
            && producer_id != metadata.producer_id
            && producer_id == metadata.prev_producer_id
            && metadata.producer_epoch == 0
            && super::metadata::is_epoch_exhausted(producer_epoch);
        let is_retry = retry_on_bump || retry_on_overflow;
        if producer_id != metadata.producer_id && !retry_on_overflow {
            return fail(TxnCoordinatorError::InvalidProducerIdMapping { producer_id });
        }
        // Clients never bump the epoch themselves, so theirs must match exactly.
        if producer_epoch != metadata.producer_epoch && !is_retry {
            return fail(TxnCoordinatorError::ProducerFenced {
                producer_epoch,
                current_epoch: metadata.producer_epoch,
            });
        }
        if entry.pending.is_some() {
            return fail(TxnCoordinatorError::ConcurrentTransactions);
        }
        let action = if commit { "commit" } else { "abort" };
        let invalid = || {
            fail(TxnCoordinatorError::InvalidTxnState {
                state: metadata.state,
                action,
            })
        };
        let current = || {
            reply(Ok(if v2 {
                TxnReply::ProducerIdAndEpoch(ProducerIdAndEpoch {
                    producer_id: metadata.producer_id,
                    producer_epoch: metadata.producer_epoch,
                })
            } else {
                TxnReply::Done
            }))
        };
        match (metadata.state, commit) {
            (TxnState::Ongoing, _) if is_retry => fail(TxnCoordinatorError::ProducerFenced {
                producer_epoch,
                current_epoch: metadata.producer_epoch,
            }),
            // Version 2 aborts even when no transaction is open: the epoch bump fences any
            // write the producer may still have in flight.
            (TxnState::Ongoing, _)
            | (TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort, false)
                if !is_retry && (metadata.state == TxnState::Ongoing || v2) =>
            {
                let next_producer_id = if v2 && metadata.is_producer_epoch_exhausted() {
                    match producer_ids.next() {
                        Some(id) => id,
                        None => return fail(TxnCoordinatorError::CoordinatorLoadInProgress),
                    }
                } else {
                    NO_PRODUCER_ID
                };
                match metadata.prepare_abort_or_commit(
                    commit,
                    transaction_version,
                    next_producer_id,
                    now_ms,
                ) {
                    Ok(next) => self.append(next, AppendPurpose::EndTxn { commit }),
                    Err(error) => fail(error),
                }
            }
            // A retry of an EndTxn that already completed (under version 2 with the epoch it
            // bumped from).
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false)
                if is_retry || !v2 =>
            {
                current()
            }
            // A retry while the markers are still being written.
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                fail(TxnCoordinatorError::ConcurrentTransactions)
            }
            (
                TxnState::Empty
                | TxnState::CompleteCommit
                | TxnState::CompleteAbort
                | TxnState::PrepareCommit
                | TxnState::PrepareAbort,
                _,
            ) => invalid(),
            (TxnState::Ongoing, _) => invalid(),
            (TxnState::Dead | TxnState::PrepareEpochFence, _) => {
                fail(TxnCoordinatorError::IllegalState {
                    reason: format!("EndTxn in state {:?}", metadata.state),
                })
            }
        }
    }

    /// Every partition acknowledged its marker: complete the transaction.
    pub fn markers_written(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        now_ms: i64,
    ) -> TxnDecision {
        let entry = match self.producer_entry(transactional_id, producer_id) {
            Ok(entry) => entry,
            Err(error) => return fail(error),
        };
        if entry.metadata.producer_epoch != producer_epoch {
            return fail(TxnCoordinatorError::ProducerFenced {
                producer_epoch,
                current_epoch: entry.metadata.producer_epoch,
            });
        }
        if entry.pending.is_some() {
            return fail(TxnCoordinatorError::ConcurrentTransactions);
        }
        match entry.metadata.prepare_complete(now_ms) {
            Ok(next) => self.append(next, AppendPurpose::CompleteTxn),
            Err(error) => fail(error),
        }
    }

    /// Aborts, under a bumped epoch, every ongoing transaction older than its timeout
    /// (Kafka checks this every `transaction.abort.timed.out.transaction.cleanup.interval.ms`).
    pub fn abort_timed_out(&mut self, now_ms: i64) -> Vec<TxnAppend> {
        let timed_out: Vec<TxnMetadata> = self
            .txns
            .values()
            .filter(|entry| {
                entry.pending.is_none()
                    && entry.metadata.state == TxnState::Ongoing
                    && entry
                        .metadata
                        .txn_start_timestamp_ms
                        .saturating_add(i64::from(entry.metadata.txn_timeout_ms))
                        < now_ms
            })
            .filter_map(|entry| entry.metadata.prepare_fence_and_abort(now_ms).ok())
            .collect();
        timed_out
            .into_iter()
            .map(|next| self.prepare_append(next, AppendPurpose::TimeoutAbort))
            .collect()
    }

    /// Expires transactional ids idle for `transactional.id.expiration.ms` with no
    /// transaction running; each yields a tombstone to append.
    pub fn expire_transactional_ids(&mut self, now_ms: i64) -> Vec<TxnAppend> {
        let expiration_ms = self.config.transactional_id_expiration_ms;
        let expired: Vec<TxnMetadata> = self
            .txns
            .values()
            .filter(|entry| {
                entry.pending.is_none()
                    && entry.metadata.state.is_expiration_allowed()
                    && entry
                        .metadata
                        .txn_last_update_timestamp_ms
                        .saturating_add(expiration_ms)
                        <= now_ms
            })
            .filter_map(|entry| entry.metadata.prepare_dead().ok())
            .collect();
        expired
            .into_iter()
            .map(|next| self.prepare_append(next, AppendPurpose::Expire))
            .collect()
    }

    /// The transaction log append for `append` finished with `result`.
    pub fn complete_append(
        &mut self,
        append: TxnAppend,
        result: Result<(), TxnLogAppendError>,
    ) -> AppendOutcome {
        let internal = matches!(
            append.purpose,
            AppendPurpose::TimeoutAbort | AppendPurpose::CompleteTxn | AppendPurpose::Expire
        );
        let outcome_error = |error: TxnCoordinatorError| AppendOutcome {
            reply: (!internal).then_some(Err(error)),
            markers: None,
        };
        if append.coordinator_epoch != self.coordinator_epoch {
            return outcome_error(TxnCoordinatorError::NotCoordinator);
        }
        let transactional_id = &append.record.transactional_id;
        let expected_state = append
            .record
            .value
            .as_ref()
            .map_or(TxnState::Dead, |m| m.state);
        let Some(entry) = self.txns.get_mut(transactional_id) else {
            return outcome_error(TxnCoordinatorError::NotCoordinator);
        };
        if entry.pending != Some(expected_state) {
            return outcome_error(TxnCoordinatorError::IllegalState {
                reason: format!(
                    "append of {expected_state:?} completed while pending {:?}",
                    entry.pending
                ),
            });
        }
        if let Err(error) = result {
            entry.pending = None;
            return outcome_error(error.to_coordinator_error());
        }
        self.replay(&append.record);
        let Some(metadata) = append.record.value.as_ref() else {
            return AppendOutcome::default();
        };
        match append.purpose {
            AppendPurpose::InitProducerId => AppendOutcome {
                reply: Some(Ok(TxnReply::ProducerIdAndEpoch(ProducerIdAndEpoch {
                    producer_id: metadata.producer_id,
                    producer_epoch: metadata.producer_epoch,
                }))),
                markers: None,
            },
            AppendPurpose::AddPartitions => AppendOutcome {
                reply: Some(Ok(TxnReply::Done)),
                markers: None,
            },
            AppendPurpose::EndTxn { .. } => {
                let reply = if metadata.client_transaction_version == TransactionVersion::V2 {
                    // The producer continues under the bumped epoch, or under the next
                    // producer id at epoch 0 once the epochs ran out.
                    let continues_as = if metadata.next_producer_id == NO_PRODUCER_ID {
                        ProducerIdAndEpoch {
                            producer_id: metadata.producer_id,
                            producer_epoch: metadata.producer_epoch,
                        }
                    } else {
                        ProducerIdAndEpoch {
                            producer_id: metadata.next_producer_id,
                            producer_epoch: 0,
                        }
                    };
                    TxnReply::ProducerIdAndEpoch(continues_as)
                } else {
                    TxnReply::Done
                };
                AppendOutcome {
                    reply: Some(Ok(reply)),
                    markers: Some(self.marker_request(metadata)),
                }
            }
            AppendPurpose::FenceForInitProducerId => AppendOutcome {
                reply: Some(Err(TxnCoordinatorError::ConcurrentTransactions)),
                markers: Some(self.marker_request(metadata)),
            },
            AppendPurpose::TimeoutAbort => AppendOutcome {
                reply: None,
                markers: Some(self.marker_request(metadata)),
            },
            AppendPurpose::CompleteTxn | AppendPurpose::Expire => AppendOutcome::default(),
        }
    }
}
