//! The partitions this broker hosts, kept in line with the metadata image.
//!
//! In a single-node cluster every replica is the leader and the ISR is the leader alone, so the
//! high watermark follows the log end offset as soon as an append is on disk (page cache).
//! Appends hold the partition's write lock across the producer-state check, the log append and
//! the producer-state update, so a retried batch can never be appended twice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use shale_log::batch::{parse_batches, BatchHeader};
use shale_log::{
    AbortedTxn, AppendOrigin, Log, LogError, LogManager, StableOffsets, TopicPartition,
};
use shale_txn::{
    ProducerBatch, ProducerStateError, ProducerStateManager, SequenceCheck, TxnMarker,
};
use tokio::sync::watch;
use tracing::{error, info, warn};
use uuid::Uuid;

use crate::replication::state::{PartitionReplication, RoleUpdate};
use crate::txn::control::{decode_control_batch, encode_control_batch, ControlMarker};

#[path = "replication/partition_ops.rs"]
mod replication_ops;

#[cfg(test)]
#[path = "partitions_tests.rs"]
mod tests;

/// Where earlier versions kept one aborted-transaction index for the whole partition; the
/// log now keeps one `.txnindex` per segment, rebuilt from the log when this file is found.
const LEGACY_TXN_INDEX_FILE: &str = "partition.txnindex";

/// Why an append was refused.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Producer(#[from] ProducerStateError),
}

/// The outcome of a successful (or duplicate) append.
#[derive(Clone, Copy, Debug)]
pub struct Appended {
    pub base_offset: i64,
    pub last_offset: i64,
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
}

/// One hosted partition. Its high watermark lives in its log (as Kafka keeps it in
/// `UnifiedLog`), so retention and the cleaner see every move of it.
pub struct Partition {
    pub tp: TopicPartition,
    pub topic_id: Uuid,
    pub log: Arc<Log>,
    producers: Mutex<ProducerStateManager>,
    leader_epoch: AtomicI32,
    leader_id: AtomicI32,
    pub(crate) replication: PartitionReplication,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition").field("tp", &self.tp).finish()
    }
}

fn producer_batch(h: &BatchHeader) -> ProducerBatch {
    ProducerBatch {
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
        base_sequence: h.base_sequence,
        last_sequence: h.last_sequence(),
        first_offset: h.base_offset,
        last_offset: h.last_offset(),
        max_timestamp_ms: h.max_timestamp,
        is_transactional: h.is_transactional(),
        is_control: h.is_control(),
        record_count: h.record_count,
    }
}

impl Partition {
    pub fn high_watermark(&self) -> i64 {
        self.log.high_watermark()
    }

    /// The last stable offset: the high watermark unless a transaction is open below it.
    pub fn last_stable_offset(&self) -> i64 {
        let hw = self.high_watermark();
        match self.producers.lock().first_unstable_offset() {
            Some(first) => first.min(hw),
            None => hw,
        }
    }

    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(Ordering::Acquire)
    }

    pub fn leader_id(&self) -> i32 {
        self.leader_id.load(Ordering::Acquire)
    }

    /// Appends client batches: validates framing and CRCs, checks idempotent sequences, writes.
    pub fn append_client(&self, records: &mut [u8], now_ms: i64) -> Result<Appended, AppendError> {
        let headers = parse_batches(records)?;
        let mut producers = self.producers.lock();
        for h in headers.iter().filter(|h| h.producer_id >= 0) {
            if let SequenceCheck::Duplicate {
                first_offset,
                last_offset,
                log_append_time_ms,
            } = producers.check(&producer_batch(h), now_ms)?
            {
                return Ok(Appended {
                    base_offset: first_offset,
                    last_offset,
                    log_append_time_ms,
                    log_start_offset: self.log.log_start_offset(),
                });
            }
        }
        let info = self
            .log
            .append(records, self.leader_epoch(), now_ms, AppendOrigin::Client)?;
        for h in info.batches.iter().filter(|h| h.producer_id >= 0) {
            producers.record(&producer_batch(h), now_ms, info.log_append_time_ms);
        }
        drop(producers);
        // The ISR decides when the append is committed (at once when the leader is alone).
        self.maybe_advance_high_watermark();
        Ok(Appended {
            base_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time_ms: info.log_append_time_ms,
            log_start_offset: info.log_start_offset,
        })
    }

    /// Writes a COMMIT/ABORT marker for a producer (the transaction coordinator's
    /// WriteTxnMarkers), completing its transaction here; an abort is recorded in the
    /// aborted-transaction index for read_committed fetches. The marker's epoch is checked
    /// with the rule of the transaction version that wrote it.
    pub fn append_marker(
        &self,
        marker: &ControlMarker,
        transaction_version: shale_txn::TransactionVersion,
        now_ms: i64,
    ) -> Result<(), AppendError> {
        let mut producers = self.producers.lock();
        let mut txn_marker = TxnMarker {
            producer_id: marker.producer_id,
            producer_epoch: marker.producer_epoch,
            coordinator_epoch: marker.coordinator_epoch,
            commit: marker.commit,
            offset: -1,
            timestamp_ms: now_ms,
            transaction_version,
        };
        producers.check_marker(&txn_marker)?;
        let mut batch = encode_control_batch(marker, now_ms)?;
        let info = self.log.append(
            &mut batch,
            self.leader_epoch(),
            now_ms,
            AppendOrigin::Coordinator,
        )?;
        txn_marker.offset = info.first_offset;
        let completed = producers.complete_txn(&txn_marker)?;
        if let Some(txn) = completed {
            index_if_aborted(&self.log, &txn);
        }
        drop(producers);
        self.maybe_advance_high_watermark();
        Ok(())
    }

    /// Appends a batch the broker built for a producer (a TxnOffsetCommit's offsets in the
    /// producer's transaction): the producer epoch is checked and the transaction tracked, but
    /// the batch carries no sequence.
    pub fn append_for_producer(&self, batch: &mut [u8], now_ms: i64) -> Result<(), AppendError> {
        let headers = parse_batches(batch)?;
        let mut producers = self.producers.lock();
        for h in &headers {
            producers.check(&producer_batch(h), now_ms)?;
        }
        let info = self.log.append(
            batch,
            self.leader_epoch(),
            now_ms,
            AppendOrigin::Coordinator,
        )?;
        for h in info.batches.iter().filter(|h| h.producer_id >= 0) {
            producers.record(&producer_batch(h), now_ms, info.log_append_time_ms);
        }
        drop(producers);
        self.maybe_advance_high_watermark();
        Ok(())
    }

    /// Aborted transactions overlapping `[fetch_offset, upper_bound_offset)`, from the
    /// indexes of the segments from the one holding `fetch_offset` on.
    pub fn aborted_txns(&self, fetch_offset: i64, upper_bound_offset: i64) -> Vec<AbortedTxn> {
        match self
            .log
            .collect_aborted_txns(fetch_offset, upper_bound_offset)
        {
            Ok(aborted) => aborted,
            Err(e) => {
                warn!(tp = %self.tp, "cannot read the aborted-transaction index: {e}");
                Vec::new()
            }
        }
    }

    /// Appends a batch the broker itself built (group coordinator records): offsets assigned
    /// here, no producer state involved, and the high watermark follows as for client writes.
    pub fn append_coordinator(
        &self,
        batch: &mut [u8],
        now_ms: i64,
    ) -> Result<Appended, AppendError> {
        let producers = self.producers.lock();
        let info = self.log.append(
            batch,
            self.leader_epoch(),
            now_ms,
            AppendOrigin::Coordinator,
        )?;
        drop(producers);
        self.maybe_advance_high_watermark();
        Ok(Appended {
            base_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time_ms: info.log_append_time_ms,
            log_start_offset: info.log_start_offset,
        })
    }

    /// Producer state rebuilt for the log as it now is (after a truncation).
    fn reload_producers(&self, expiration_ms: i64) -> ProducerStateManager {
        load_producers(&self.log, expiration_ms)
    }

    /// Snapshot of producer state for DescribeProducers.
    pub fn producer_entries(&self) -> Vec<shale_txn::ProducerSnapshotEntry> {
        self.producers.lock().producers().collect()
    }

    /// Writes a producer-state snapshot at the current log end offset.
    pub fn snapshot_producers(&self) {
        let producers = self.producers.lock();
        let offset = self.log.log_end_offset();
        if let Err(e) = producers.write_snapshot(self.log.dir(), offset) {
            warn!(tp = %self.tp, "cannot write producer snapshot: {e}");
        }
    }

    /// Moves the log start offset forward (DeleteRecords).
    pub fn delete_records_before(&self, offset: i64) -> Result<i64, LogError> {
        let target = if offset == -1 {
            self.high_watermark()
        } else {
            offset
        };
        self.log.delete_records_before(target)
    }
}

/// Opens the segments' aborted-transaction indexes. `true` when their entries must be
/// rebuilt from the log start: an index was torn or corrupt, or the partition still has the
/// single index file of earlier versions.
fn txn_indexes_need_rebuild(log: &Log) -> bool {
    let legacy = log.dir().join(LEGACY_TXN_INDEX_FILE);
    let legacy_found = match std::fs::remove_file(&legacy) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => {
            warn!(path = %legacy.display(), "cannot remove the old aborted-transaction index: {e}");
            true
        }
    };
    match log.load_txn_indexes() {
        Ok(rebuilt) => rebuilt || legacy_found,
        Err(e) => {
            warn!(dir = %log.dir().display(), "cannot open the aborted-transaction indexes: {e}");
            true
        }
    }
}

/// Rebuilds producer state from the newest snapshot plus the batches written after it, and
/// the aborted-transaction index entries of the markers in that replay. When an index needs
/// a full rebuild the replay starts at the log start with empty producer state, so every
/// transaction's first offset is seen again.
fn load_producers(log: &Log, expiration_ms: i64) -> ProducerStateManager {
    let end = log.log_end_offset();
    let snapshot = if txn_indexes_need_rebuild(log) {
        info!(dir = %log.dir().display(), "rebuilding aborted-transaction indexes from the log");
        None
    } else {
        // After a crash, index entries of markers above the flushed part may be lost: the
        // replay starts at or below it so it indexes them again.
        let replay_bound = log
            .txn_index_unflushed_from()
            .map_or(end, |from| from.min(end));
        match ProducerStateManager::load_latest_snapshot(
            log.dir(),
            replay_bound,
            expiration_ms,
            crate::time::now_ms(),
        ) {
            Ok(loaded) => Some(loaded),
            Err(e) => {
                warn!(dir = %log.dir().display(), "producer snapshot unusable, rebuilding: {e}");
                None
            }
        }
    };
    let (mut producers, mut offset) = snapshot.unwrap_or_else(|| {
        (
            ProducerStateManager::new(expiration_ms),
            log.log_start_offset(),
        )
    });
    offset = offset.max(log.log_start_offset());
    // Markers at or after the replay start are indexed again below.
    if let Err(e) = log.truncate_aborted_txns_from(offset) {
        warn!(dir = %log.dir().display(), "cannot truncate the aborted-transaction index: {e}");
    }
    while offset < end {
        let read = match log.read(offset, 1 << 20, end, true) {
            Ok(r) => r,
            Err(e) => {
                warn!(dir = %log.dir().display(), "cannot replay producer state: {e}");
                break;
            }
        };
        let bytes = match read.to_bytes() {
            Ok(b) => b,
            Err(e) => {
                warn!(dir = %log.dir().display(), "cannot replay producer state: {e}");
                break;
            }
        };
        let headers = match parse_batches(&bytes) {
            Ok(h) => h,
            Err(e) => {
                warn!(dir = %log.dir().display(), "cannot replay producer state: {e}");
                break;
            }
        };
        let Some(last) = headers.last() else { break };
        let next = last.last_offset() + 1;
        let mut position = 0usize;
        for h in &headers {
            let batch = bytes
                .get(position..position + h.total_len())
                .unwrap_or_default();
            position += h.total_len();
            if h.producer_id < 0 || h.last_offset() < offset {
                continue;
            }
            match decode_control_batch(h, batch) {
                Some(marker) if h.base_offset >= offset => {
                    replay_marker(&mut producers, log, h, &marker);
                }
                _ => producers.replay(&producer_batch(h)),
            }
        }
        producers.on_high_watermark_updated(end);
        if next <= offset {
            break;
        }
        offset = next;
    }
    producers
}

/// Replays a control batch already in the log into producer state, and indexes the
/// transaction it aborts (recovery and followers both learn markers this way).
pub(crate) fn replay_marker(
    producers: &mut ProducerStateManager,
    log: &Log,
    header: &BatchHeader,
    marker: &ControlMarker,
) {
    let completed = producers.replay_marker(&TxnMarker {
        producer_id: marker.producer_id,
        producer_epoch: marker.producer_epoch,
        coordinator_epoch: marker.coordinator_epoch,
        commit: marker.commit,
        offset: header.base_offset,
        timestamp_ms: header.max_timestamp,
        transaction_version: shale_txn::TransactionVersion::Legacy,
    });
    if let Some(txn) = completed {
        index_if_aborted(log, &txn);
    }
}

/// Adds an aborted transaction to the index of the segment holding its marker, so
/// read_committed fetches can list it. A failure is logged: the marker itself is in the log,
/// and recovery rebuilds a torn index from it.
fn index_if_aborted(log: &Log, txn: &shale_txn::CompletedTxn) {
    if !txn.is_aborted {
        return;
    }
    let entry = AbortedTxn {
        producer_id: txn.producer_id,
        first_offset: txn.first_offset,
        last_offset: txn.last_offset,
        last_stable_offset: txn.last_stable_offset,
    };
    if let Err(e) = log.append_aborted_txn(entry) {
        warn!(dir = %log.dir().display(), "cannot index an aborted transaction: {e}");
    }
}

/// The partitions of `topic` that `node_id` leads: partition -> (topic id, leader epoch).
/// Coordinators use it to follow leadership of their internal topics.
pub fn led_partitions(
    image: &shale_metadata::MetadataImage,
    topic: &str,
    node_id: i32,
) -> HashMap<i32, (Uuid, i32)> {
    image
        .topic(topic)
        .map(|t| {
            t.partitions
                .iter()
                .filter(|(_, p)| p.leader == node_id)
                .map(|(&partition, p)| (partition, (t.topic_id, p.leader_epoch)))
                .collect()
        })
        .unwrap_or_default()
}

/// How a coordinator's served partitions of `topic` must change to match `wanted`: the
/// partitions to unload (removed from `served`), and those to load with their hosted log. A
/// wanted partition whose log this broker does not host yet is skipped (with a warning) and
/// retried at the next image.
pub fn leadership_delta<K: PartialEq + Clone>(
    broker: &crate::Broker,
    topic: &str,
    served: &mut HashMap<i32, K>,
    wanted: HashMap<i32, K>,
) -> LeadershipDelta<K> {
    let lost: Vec<i32> = served
        .iter()
        .filter(|(p, key)| wanted.get(p) != Some(key))
        .map(|(p, _)| *p)
        .collect();
    for partition in &lost {
        served.remove(partition);
    }
    let mut gained = Vec::new();
    for (partition, key) in wanted {
        if served.contains_key(&partition) {
            continue;
        }
        let tp = TopicPartition {
            topic: topic.to_owned(),
            partition,
        };
        match broker.replicas.get(&tp) {
            Some(hosted) => gained.push((partition, key, hosted)),
            None => warn!(partition, "leader of {topic} partition without its log"),
        }
    }
    LeadershipDelta { lost, gained }
}

/// What [`leadership_delta`] found.
pub struct LeadershipDelta<K> {
    /// Partitions no longer led at the served key: unload them.
    pub lost: Vec<i32>,
    /// Partitions now led, with their key and hosted log: load them.
    pub gained: Vec<(i32, K, Arc<Partition>)>,
}

/// Everything the broker needs to know to host one partition.
#[derive(Clone, Debug)]
pub struct PartitionAssignment {
    pub tp: TopicPartition,
    pub topic_id: Uuid,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub config: shale_log::LogConfig,
    /// Leader, replicas and ISR as the image has them, for the replication state.
    pub role: RoleUpdate,
}

/// Applies leader, ISR, replicas and min ISR from the image to the replication state;
/// true when the high watermark moved as a result.
fn apply_role(p: &Arc<Partition>, role: RoleUpdate) -> bool {
    let epoch = role.assignment.leader_epoch;
    let epoch_start = p
        .log
        .epoch_entries()
        .iter()
        .find(|(e, _)| *e == epoch)
        .map_or(p.log.log_end_offset(), |(_, start)| *start);
    p.replication
        .apply(role, epoch_start, crate::time::now_ms());
    p.maybe_advance_high_watermark()
}

/// All hosted partitions.
pub struct ReplicaManager {
    logs: Arc<LogManager>,
    partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
    producer_id_expiration_ms: i64,
    /// Bumped after every append; long-polling fetches wait on it.
    appended: watch::Sender<u64>,
}

impl ReplicaManager {
    pub fn new(logs: Arc<LogManager>, producer_id_expiration_ms: i64) -> ReplicaManager {
        ReplicaManager {
            logs,
            partitions: RwLock::new(HashMap::new()),
            producer_id_expiration_ms,
            appended: watch::channel(0).0,
        }
    }

    pub fn logs(&self) -> &Arc<LogManager> {
        &self.logs
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        self.partitions.read().get(tp).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Partition>> {
        self.partitions.read().values().cloned().collect()
    }

    pub fn subscribe_appends(&self) -> watch::Receiver<u64> {
        self.appended.subscribe()
    }

    pub fn notify_appended(&self) {
        self.appended.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Makes the hosted set equal to `wanted`: opens or creates logs, updates epochs and configs,
    /// deletes logs of partitions that are gone. A wanted partition that fails is left as it
    /// was and the others are still applied (one bad partition directory must not hold back the
    /// rest); those failures come back so that the caller can try again. A removed partition
    /// whose directory cannot be deleted is only logged: it is no longer hosted, and another
    /// pass would not find it to try again.
    pub fn reconcile(
        &self,
        wanted: Vec<PartitionAssignment>,
    ) -> Result<(), Vec<(TopicPartition, LogError)>> {
        let mut failed = Vec::new();
        let mut keep: HashMap<TopicPartition, PartitionAssignment> = HashMap::new();
        for a in wanted {
            keep.insert(a.tp.clone(), a);
        }
        let existing: Vec<TopicPartition> = self.partitions.read().keys().cloned().collect();
        for tp in existing {
            let gone = match keep.get(&tp) {
                None => true,
                Some(a) => self
                    .get(&tp)
                    .map(|p| p.topic_id != a.topic_id)
                    .unwrap_or(false),
            };
            if gone {
                if let Some(p) = self.partitions.write().remove(&tp) {
                    info!(tp = %tp, "deleting partition");
                    drop(p);
                    if let Err(e) = self.logs.delete(&tp) {
                        error!(tp = %tp, "cannot delete the log of a removed partition; its directory stays: {e}");
                    }
                }
            }
        }
        let mut high_watermark_moved = false;
        for (tp, a) in keep {
            match self.apply_assignment(&tp, a) {
                Ok(moved) => high_watermark_moved |= moved,
                Err(e) => failed.push((tp, e)),
            }
        }
        if high_watermark_moved {
            // Consumers long-polling for data below the new high watermark.
            self.notify_appended();
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(failed)
        }
    }

    /// Hosts one wanted partition, or brings the hosted one to its assignment. Returns whether
    /// its high watermark moved.
    fn apply_assignment(
        &self,
        tp: &TopicPartition,
        a: PartitionAssignment,
    ) -> Result<bool, LogError> {
        if let Some(p) = self.get(tp) {
            if p.log.config() != a.config {
                p.log.update_config(a.config.clone());
            }
            let leads = a.leader_id == a.role.local_id;
            if p.leader_epoch() != a.leader_epoch {
                p.leader_epoch.store(a.leader_epoch, Ordering::Release);
                // Only a leader starts an epoch in its log; a follower's epochs come with
                // the batches it copies.
                if leads {
                    p.log
                        .assign_epoch_start_offset(a.leader_epoch, p.log.log_end_offset())?;
                }
            }
            p.leader_id.store(a.leader_id, Ordering::Release);
            return Ok(apply_role(&p, a.role));
        }
        let log = self.logs.get_or_create(tp, a.config.clone())?;
        // A log found on disk at start-up was opened with the default config.
        if log.config() != a.config {
            log.update_config(a.config.clone());
        }
        let leads = a.leader_id == a.role.local_id;
        if leads && log.latest_epoch().is_none_or(|e| e < a.leader_epoch) {
            log.assign_epoch_start_offset(a.leader_epoch, log.log_end_offset())?;
        }
        let producers = load_producers(&log, self.producer_id_expiration_ms);
        // A replicated partition starts from its checkpointed high watermark (else its
        // log start): followers' fetches raise it, and nothing unreplicated is exposed.
        // The log keeps it within its start and end.
        let hw = log.set_high_watermark(if a.role.assignment.replicas.len() > 1 {
            crate::replication::checkpoint::lookup(log.dir(), tp)
                .unwrap_or_else(|| log.log_start_offset())
        } else {
            log.log_end_offset()
        });
        let partition = Arc::new(Partition {
            tp: tp.clone(),
            topic_id: a.topic_id,
            log,
            producers: Mutex::new(producers),
            leader_epoch: AtomicI32::new(a.leader_epoch),
            leader_id: AtomicI32::new(a.leader_id),
            replication: PartitionReplication::new(hw),
        });
        let moved = apply_role(&partition, a.role);
        self.partitions.write().insert(tp.clone(), partition);
        Ok(moved)
    }

    /// One compaction pass over the hosted logs, none past its partition's last stable offset.
    pub fn run_cleaner_once(&self, now_ms: i64) -> Result<shale_log::CleanerReport, LogError> {
        self.logs.run_cleaner_once_bounded(now_ms, self)
    }

    /// Expires idle producers and snapshots producer state (called periodically and at shutdown).
    pub fn checkpoint_producers(&self, now_ms: i64) {
        for p in self.all() {
            p.producers.lock().remove_expired(now_ms);
            p.snapshot_producers();
        }
    }
}

/// The cleaner stops at each partition's last stable offset (Kafka's `cleanableOffsets`): an
/// open transaction's records, whatever follows them and whatever is not committed stay as
/// written. A log this broker does not host is left alone.
impl StableOffsets for ReplicaManager {
    fn last_stable_offset(&self, topic_partition: &TopicPartition) -> Option<i64> {
        self.get(topic_partition).map(|p| p.last_stable_offset())
    }
}

#[cfg(test)]
#[path = "partitions_recompress_tests.rs"]
mod recompress_tests;
