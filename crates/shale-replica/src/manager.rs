//! All hosted partitions, kept in line with the metadata image.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use shale_log::{LogError, LogManager, StableOffsets, TopicPartition};
use tokio::sync::watch;
use tracing::{error, info};
use uuid::Uuid;

use crate::partition::Partition;
use crate::producer_replay::load_producers;
use crate::state::{PartitionReplication, RoleUpdate};

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
    p.replication.apply(role, epoch_start, shale_log::now_ms());
    p.maybe_advance_high_watermark()
}

/// All hosted partitions.
pub struct ReplicaManager {
    /// This broker's id: the leader checks compare the partitions' leaders with it.
    node_id: i32,
    logs: Arc<LogManager>,
    partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
    producer_id_expiration_ms: i64,
    /// Bumped after every append; long-polling fetches wait on it.
    appended: watch::Sender<u64>,
}

impl ReplicaManager {
    pub fn new(
        node_id: i32,
        logs: Arc<LogManager>,
        producer_id_expiration_ms: i64,
    ) -> ReplicaManager {
        ReplicaManager {
            node_id,
            logs,
            partitions: RwLock::new(HashMap::new()),
            producer_id_expiration_ms,
            appended: watch::channel(0).0,
        }
    }

    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    pub fn producer_id_expiration_ms(&self) -> i64 {
        self.producer_id_expiration_ms
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
            crate::checkpoint::lookup(log.dir(), tp).unwrap_or_else(|| log.log_start_offset())
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
