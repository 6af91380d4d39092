//! The share coordinator wired into the broker: `__share_group_state` as its log, one shard
//! (`shale_share::coordinator::ShareCoordinatorShard`) per partition this broker leads, loaded
//! by replaying the partition and fed every record it writes. A request for one share-partition
//! runs on its shard under the shard's lock: the records of its decision are appended and
//! replayed before the next request reads the shard, and the answer waits until the in-sync
//! replicas have them.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use shale_log::TopicPartition;
use shale_metadata::MetadataImage;
use shale_replica::Partition;
use shale_share::coordinator::{
    decode_record, encode_record, partition_for, Outcome, ShareCoordinatorSettings,
    ShareCoordinatorShard, ShareRecord,
};
use shale_share::state::SharePartitionKey;
use tracing::{info, warn};
use uuid::Uuid;

pub use super::error::ShareCoordinatorError;
use crate::coordinator_host::{append_records, replay_partition, CoordinatorHost};
use crate::core::BrokerCore;
use crate::internal_topics::SHARE_STATE_TOPIC;
use crate::topic_creation::ensure_internal_topic;

/// The shard's settings from the broker's `share.coordinator.*` configs.
pub fn coordinator_settings(
    config: &crate::config::ShareCoordinatorSettings,
) -> ShareCoordinatorSettings {
    let to_u64 = |v: i32| u64::try_from(v).unwrap_or(0);
    ShareCoordinatorSettings {
        snapshot_update_records_per_snapshot: usize::try_from(
            config.snapshot_update_records_per_snapshot,
        )
        .unwrap_or(0),
        state_topic_num_partitions: config.state_topic_num_partitions,
        state_topic_replication_factor: config.state_topic_replication_factor,
        state_topic_min_isr: config.state_topic_min_isr,
        state_topic_segment_bytes: i64::from(config.state_topic_segment_bytes),
        load_buffer_size: usize::try_from(config.load_buffer_size_bytes).unwrap_or(0),
        write_timeout_ms: to_u64(config.write_timeout_ms),
        cold_partition_snapshot_interval_ms: to_u64(config.cold_partition_snapshot_interval_ms),
        state_topic_prune_interval_ms: to_u64(config.state_topic_prune_interval_ms),
        append_linger_ms: config.append_linger_ms.map(to_u64),
        ..ShareCoordinatorSettings::default()
    }
}

enum ShardSlot {
    Loading,
    Active(Arc<tokio::sync::Mutex<ShareCoordinatorShard>>),
}

pub struct ShareCoordinatorService {
    settings: ShareCoordinatorSettings,
    /// The partition count placement uses: the topic's, once it exists.
    num_partitions: Mutex<i32>,
    host: CoordinatorHost<Uuid>,
    shards: Arc<Mutex<HashMap<i32, ShardSlot>>>,
    /// Partition counts of the topics in the last image: the shards refuse state of unknown
    /// share-partitions.
    topics: Mutex<Arc<HashMap<Uuid, i32>>>,
}

impl std::fmt::Debug for ShareCoordinatorService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareCoordinatorService")
            .field("shards", &self.shards.lock().len())
            .finish()
    }
}

impl ShareCoordinatorService {
    pub fn new(settings: ShareCoordinatorSettings, image: &MetadataImage) -> Self {
        let num_partitions = image
            .topic(SHARE_STATE_TOPIC)
            .map(|t| i32::try_from(t.partitions.len()).unwrap_or(i32::MAX))
            .filter(|n| *n > 0)
            .unwrap_or(settings.state_topic_num_partitions);
        ShareCoordinatorService {
            settings,
            num_partitions: Mutex::new(num_partitions),
            host: CoordinatorHost::new(SHARE_STATE_TOPIC),
            shards: Arc::new(Mutex::new(HashMap::new())),
            topics: Mutex::new(Arc::new(HashMap::new())),
        }
    }

    pub fn settings(&self) -> &ShareCoordinatorSettings {
        &self.settings
    }

    /// The `__share_group_state` partition that keeps `key`'s state.
    pub fn partition_for(&self, key: &SharePartitionKey) -> i32 {
        partition_for(key, *self.num_partitions.lock())
    }

    /// The node leading `key`'s state partition, if the topic exists and has a leader.
    pub fn leader_of(&self, image: &MetadataImage, key: &SharePartitionKey) -> Option<i32> {
        let partition = self.partition_for(key);
        image
            .topic(SHARE_STATE_TOPIC)
            .and_then(|t| t.partitions.get(&partition))
            .map(|p| p.leader)
            .filter(|leader| *leader >= 0)
    }

    /// Creates `__share_group_state` on first use, as Kafka does when the first share-partition
    /// state is initialized.
    pub async fn ensure_state_topic(&self, broker: &BrokerCore) {
        let settings = &self.settings;
        let num_partitions = settings.state_topic_num_partitions;
        let create = || {
            ensure_internal_topic(
                broker,
                SHARE_STATE_TOPIC,
                num_partitions,
                "share.coordinator.state.topic.replication.factor",
                settings.state_topic_replication_factor,
                |replication_factor| {
                    // On fewer brokers than the configured factor the minimum ISR follows it
                    // down, as for the other internal topics.
                    let min_isr = settings.state_topic_min_isr.min(replication_factor);
                    settings
                        .state_topic_configs()
                        .into_iter()
                        .map(|(k, v)| {
                            if k == "min.insync.replicas" {
                                (k, Some(min_isr.to_string()))
                            } else {
                                (k, Some(v))
                            }
                        })
                        .collect()
                },
            )
        };
        let exists = || broker.image().topic(SHARE_STATE_TOPIC).is_some();
        self.host.ensure_topic(exists, create).await;
    }

    /// Follows leadership of `__share_group_state` and gives the shards the topics they may
    /// hold state for.
    pub fn reconcile(&self, broker: &BrokerCore, image: &MetadataImage) {
        if let Some(topic) = image.topic(SHARE_STATE_TOPIC) {
            let n = i32::try_from(topic.partitions.len()).unwrap_or(i32::MAX);
            if n > 0 {
                *self.num_partitions.lock() = n;
            }
        }
        let topics: HashMap<Uuid, i32> = image
            .topics()
            .map(|t| {
                (
                    t.topic_id,
                    i32::try_from(t.partitions.len()).unwrap_or(i32::MAX),
                )
            })
            .collect();
        let topics = Arc::new(topics);
        *self.topics.lock() = topics.clone();
        let active: Vec<_> = self
            .shards
            .lock()
            .values()
            .filter_map(|slot| match slot {
                ShardSlot::Active(shard) => Some(shard.clone()),
                ShardSlot::Loading => None,
            })
            .collect();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let update = topics.clone();
            runtime.spawn(async move {
                for shard in active {
                    shard.lock().await.set_topics((*update).clone());
                }
            });
        }
        let read_bytes_max = self.settings.load_buffer_size.max(1024);
        self.host.follow_leadership(
            &broker.replicas,
            image,
            |topic_id, _| topic_id,
            |partition| {
                self.shards.lock().remove(&partition);
                info!(partition, "unloaded {SHARE_STATE_TOPIC} partition");
            },
            |partition, _, hosted| {
                self.shards.lock().insert(partition, ShardSlot::Loading);
                self.spawn_load(partition, hosted, topics.clone(), read_bytes_max);
            },
        );
    }

    fn spawn_load(
        &self,
        partition: i32,
        hosted: Arc<Partition>,
        topics: Arc<HashMap<Uuid, i32>>,
        read_bytes_max: usize,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            warn!("no runtime to load {SHARE_STATE_TOPIC}-{partition}");
            return;
        };
        let settings = self.settings.clone();
        let loaded = runtime.spawn_blocking(move || {
            let mut shard = ShareCoordinatorShard::new(settings);
            shard.set_topics((*topics).clone());
            let mut replayed = 0u64;
            let result = replay_partition(&hosted, read_bytes_max, |record| {
                if record.batch.is_control() {
                    return;
                }
                let Some(key) = record.key else { return };
                match decode_record(key, record.value) {
                    Ok(decoded) => {
                        shard.replay(record.offset, &decoded);
                        replayed += 1;
                    }
                    Err(e) if e.is_unknown_kind() => {}
                    Err(e) => warn!(tp = %hosted.tp, offset = record.offset, "skipping unreadable share state record: {e}"),
                }
            });
            if let Err(e) = result {
                warn!(tp = %hosted.tp, "loading stopped early: {e}");
            }
            info!(tp = %hosted.tp, records = replayed, "loaded share coordinator partition");
            shard
        });
        let shards = self.shards.clone();
        runtime.spawn(async move {
            let Ok(shard) = loaded.await else { return };
            let mut slots = shards.lock();
            // Unloaded meanwhile: leave it unloaded.
            if let Some(slot @ ShardSlot::Loading) = slots.get_mut(&partition) {
                *slot = ShardSlot::Active(Arc::new(tokio::sync::Mutex::new(shard)));
            }
        });
    }

    /// The shard of `partition` when this broker serves it.
    fn shard(
        &self,
        partition: i32,
    ) -> Result<Arc<tokio::sync::Mutex<ShareCoordinatorShard>>, ShareCoordinatorError> {
        match self.shards.lock().get(&partition) {
            Some(ShardSlot::Active(shard)) => Ok(shard.clone()),
            Some(ShardSlot::Loading) => Err(ShareCoordinatorError::LoadInProgress),
            None => Err(ShareCoordinatorError::NotCoordinator),
        }
    }

    /// Runs `decide` on the shard holding `key`'s state; its records are appended and replayed
    /// before the shard is released, and the answer comes once they are replicated.
    pub async fn execute<T>(
        &self,
        broker: &BrokerCore,
        key: &SharePartitionKey,
        decide: impl FnOnce(&ShareCoordinatorShard, i64) -> Outcome<T>,
    ) -> Result<T, ShareCoordinatorError> {
        let partition = self.partition_for(key);
        let shard = self.shard(partition)?;
        let mut shard = shard.lock().await;
        let outcome = decide(&shard, shale_log::now_ms());
        if outcome.records.is_empty() {
            return Ok(outcome.answer);
        }
        let appended = self.append(broker, partition, &mut shard, &outcome.records)?;
        drop(shard);
        if let Some(appended) = appended {
            let timeout_ms = i32::try_from(self.settings.write_timeout_ms).unwrap_or(i32::MAX);
            appended
                .replicated(timeout_ms)
                .await
                .map_err(|e| ShareCoordinatorError::WriteFailed(e.to_string()))?;
        }
        Ok(outcome.answer)
    }

    /// Appends `records` to the local leader of `partition` and replays them into `shard`.
    fn append(
        &self,
        broker: &BrokerCore,
        partition: i32,
        shard: &mut ShareCoordinatorShard,
        records: &[ShareRecord],
    ) -> Result<Option<crate::coordinator_host::CoordinatorAppend>, ShareCoordinatorError> {
        let tp = TopicPartition {
            topic: SHARE_STATE_TOPIC.to_string(),
            partition,
        };
        let encoded: Vec<(Vec<u8>, Option<Vec<u8>>)> = records
            .iter()
            .map(|r| {
                let (key, value) = encode_record(r);
                (key.to_vec(), value.map(|v| v.to_vec()))
            })
            .collect();
        let min_insync = broker
            .topic_config_value(&broker.image(), SHARE_STATE_TOPIC, "min.insync.replicas")
            .and_then(|v| v.trim().parse::<i32>().ok())
            .unwrap_or(i32::from(self.settings.state_topic_min_isr));
        let appended =
            append_records(&broker.replicas, &tp, &encoded, min_insync).map_err(|e| match e {
                crate::coordinator_host::CoordinatorAppendError::NotLeader(_) => {
                    ShareCoordinatorError::NotCoordinator
                }
                other => ShareCoordinatorError::WriteFailed(other.to_string()),
            })?;
        if let Some(appended) = &appended {
            for (i, record) in records.iter().enumerate() {
                shard.replay(appended.base_offset() + i as i64, record);
            }
        }
        Ok(appended)
    }

    /// The shards loaded and serving, by partition.
    fn active_shards(&self) -> Vec<(i32, Arc<tokio::sync::Mutex<ShareCoordinatorShard>>)> {
        self.shards
            .lock()
            .iter()
            .filter_map(|(p, slot)| match slot {
                ShardSlot::Active(shard) => Some((*p, shard.clone())),
                ShardSlot::Loading => None,
            })
            .collect()
    }

    /// Kafka's cold-partition snapshot job (`share.coordinator.cold.partition.snapshot.interval.ms`):
    /// a snapshot of every share-partition whose state has only updates since its last one.
    pub async fn snapshot_cold_partitions(&self, broker: &BrokerCore) {
        for (partition, shard) in self.active_shards() {
            let mut shard = shard.lock().await;
            let records = shard.snapshot_cold_partitions(shale_log::now_ms());
            if !records.is_empty() {
                if let Err(e) = self.append(broker, partition, &mut shard, &records) {
                    warn!(partition, "cannot snapshot cold share-partitions: {e}");
                }
            }
        }
    }

    /// Kafka's prune job (`share.coordinator.state.topic.prune.interval.ms`): the records every
    /// state has moved past are deleted from `__share_group_state`.
    pub async fn prune(&self, broker: &BrokerCore) {
        for (partition, shard) in self.active_shards() {
            let Some(redundant) = shard.lock().await.last_redundant_offset() else {
                continue;
            };
            let tp = TopicPartition {
                topic: SHARE_STATE_TOPIC.to_string(),
                partition,
            };
            if let Some(hosted) = broker.replicas.get(&tp) {
                if redundant > hosted.log.log_start_offset() {
                    if let Err(e) = hosted.delete_records_before(redundant) {
                        warn!(partition, "cannot prune {SHARE_STATE_TOPIC}: {e}");
                    }
                }
            }
        }
    }

    /// Tombstones the state of share-partitions of deleted topics, on every served shard.
    pub async fn clean_up_deleted_topics(&self, broker: &BrokerCore, deleted: &[Uuid]) {
        for (partition, shard) in self.active_shards() {
            let mut shard = shard.lock().await;
            let records = shard.cleanup_deleted_topics(deleted);
            if !records.is_empty() {
                if let Err(e) = self.append(broker, partition, &mut shard, &records) {
                    warn!(
                        partition,
                        "cannot delete share state of deleted topics: {e}"
                    );
                }
            }
        }
    }
}
