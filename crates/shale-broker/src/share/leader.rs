//! What the leader of a share-partition does around the state machine: initialize it from its
//! persisted state, persist each change through the share coordinator (and report the outcome
//! back, which reverts a failed acknowledgement), release a member's records, and wake when the
//! first acquisition lock expires.

use std::sync::Arc;

use shale_log::{now_ms, TopicPartition};
use shale_share::coordinator::{ShareStateError, WriteStateRequest};
use shale_share::partition::{SharePartition, SharePartitionConfig, StateWrite};
use shale_share::state::SharePartitionKey;
use tracing::{debug, warn};

pub use super::error::LeaderError;
use super::error::PersisterError;
use shale_metadata::group_config_defs::ShareAutoOffsetReset;

use super::group_configs::{share_group_configs, ShareGroupConfigs};
use super::partitions::{Slot, SlotHandle};
use super::persister::{StateCall, StateReply};
use super::ShareService;
use crate::core::BrokerCore;

/// The share-partition's settings from its group's configs.
pub fn partition_config(configs: &ShareGroupConfigs) -> SharePartitionConfig {
    SharePartitionConfig {
        record_lock_duration_ms: configs.record_lock_duration_ms,
        delivery_count_limit: configs.delivery_count_limit,
        max_in_flight_records: configs.partition_max_record_locks,
        renew_acknowledge_enabled: configs.renew_acknowledge_enabled,
    }
}

impl ShareService {
    /// Makes sure `slot` holds an initialized share-partition at the current leader epoch.
    pub(crate) async fn initialize(
        &self,
        core: &BrokerCore,
        key: &SharePartitionKey,
        tp: &TopicPartition,
        slot: &mut Slot,
    ) -> Result<ShareGroupConfigs, LeaderError> {
        let image = core.image();
        let configs = share_group_configs(&image, &key.group_id, &self.settings);
        let hosted = core
            .replicas
            .get(tp)
            .ok_or(LeaderError::UnknownTopicOrPartition)?;
        if hosted.leader_id() != core.node_id() {
            return Err(LeaderError::NotLeader);
        }
        let leader_epoch = hosted.leader_epoch();
        if let Some(partition) = slot.partition.as_mut() {
            if slot.leader_epoch == leader_epoch {
                partition.set_config(partition_config(&configs));
                return Ok(configs);
            }
        }
        slot.partition = None;
        let reply = self
            .persister
            .call(
                core,
                &self.coordinator,
                key,
                StateCall::Read { leader_epoch },
            )
            .await?;
        let StateReply::Read(mut state) = reply else {
            return Err(LeaderError::InvalidState(
                "the share coordinator answered a read with no state".into(),
            ));
        };
        state.leader_epoch = leader_epoch;
        if state.start_offset < 0 {
            state.start_offset = reset_offset(&hosted, configs.auto_offset_reset);
        }
        let log_start = hosted.log.log_start_offset();
        let mut partition = SharePartition::from_persisted(partition_config(&configs), state)
            .map_err(|e| LeaderError::InvalidState(e.to_string()))?;
        if log_start > partition.start_offset() {
            partition.update_log_start_offset(log_start);
        }
        debug!(group = %key.group_id, %tp, start = partition.start_offset(), "share-partition initialized");
        slot.partition = Some(partition);
        slot.leader_epoch = leader_epoch;
        Ok(configs)
    }

    /// Persists `write` and reports its outcome to the share-partition. A fenced write drops
    /// the share-partition: another leader or a newer state epoch owns it now.
    pub(crate) async fn persist(
        &self,
        core: &BrokerCore,
        key: &SharePartitionKey,
        slot: &mut Slot,
        write: StateWrite,
    ) -> Result<(), PersisterError> {
        let request = WriteStateRequest {
            group_id: key.group_id.clone(),
            topic_id: key.topic_id,
            partition: key.partition,
            state_epoch: write.state_epoch,
            leader_epoch: write.leader_epoch,
            start_offset: write.start_offset,
            delivery_complete_count: write.delivery_complete_count,
            batches: write.batches.clone(),
        };
        let result = self
            .persister
            .call(core, &self.coordinator, key, StateCall::Write(request))
            .await
            .map(|_| ());
        if let Some(partition) = slot.partition.as_mut() {
            let completion = partition.complete_write(write.write_id, result.is_ok(), now_ms_u64());
            if completion.records_available {
                self.records_available.notify_waiters();
            }
        }
        if let Err(e) = &result {
            warn!(group = %key.group_id, topic_id = %key.topic_id, partition = key.partition, "share state not written: {e}");
            if matches!(
                e,
                PersisterError::State(
                    ShareStateError::FencedLeaderEpoch | ShareStateError::FencedStateEpoch
                )
            ) {
                slot.partition = None;
                self.partitions.remove(key);
            }
        }
        result
    }

    /// Releases the records `member_id` holds on `key` (its session ended).
    pub(crate) async fn release(
        self: &Arc<Self>,
        core: &Arc<BrokerCore>,
        key: &SharePartitionKey,
        member_id: &str,
    ) {
        let Some(handle) = self.partitions.existing(key) else {
            return;
        };
        let mut slot = handle.lock().await;
        let Some(partition) = slot.partition.as_mut() else {
            return;
        };
        let Some(write) = partition.release_acquired_records(member_id, now_ms_u64()) else {
            return;
        };
        // Released records are available whatever the write's outcome.
        self.records_available.notify_waiters();
        let _ = self.persist(core, key, &mut slot, write).await;
        self.schedule_expiry(core, key, &handle, &mut slot);
    }

    /// Arranges a wake-up at the share-partition's first lock deadline (replacing a later
    /// one), which expires the locks due and persists what changed.
    pub(crate) fn schedule_expiry(
        self: &Arc<Self>,
        core: &Arc<BrokerCore>,
        key: &SharePartitionKey,
        handle: &SlotHandle,
        slot: &mut Slot,
    ) {
        let Some(deadline_ms) = slot.partition.as_ref().and_then(|p| p.next_deadline_ms()) else {
            return;
        };
        if let Some((scheduled, task)) = &slot.expiry {
            if *scheduled <= deadline_ms && !task.is_finished() {
                return;
            }
            task.abort();
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let service = self.clone();
        let core = core.clone();
        let key = key.clone();
        let weak = Arc::downgrade(handle);
        let task = runtime.spawn(async move {
            let wait_ms = deadline_ms.saturating_sub(now_ms_u64());
            tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
            let Some(handle) = weak.upgrade() else { return };
            let mut slot = handle.lock().await;
            slot.expiry = None;
            let write = slot
                .partition
                .as_mut()
                .and_then(|p| p.expire_locks(now_ms_u64()));
            if let Some(write) = write {
                service.records_available.notify_waiters();
                let _ = service.persist(&core, &key, &mut slot, write).await;
            }
            service.schedule_expiry(&core, &key, &handle, &mut slot);
        });
        slot.expiry = Some((deadline_ms, task.abort_handle()));
    }
}

/// The start offset `share.auto.offset.reset` gives a share-partition with none persisted:
/// the high watermark (latest), the log start (earliest), or the first offset at or after now
/// minus the duration (the high watermark when there is none).
fn reset_offset(hosted: &shale_replica::Partition, reset: ShareAutoOffsetReset) -> i64 {
    match reset {
        ShareAutoOffsetReset::Earliest => hosted.log.log_start_offset(),
        ShareAutoOffsetReset::Latest => hosted.high_watermark(),
        ShareAutoOffsetReset::ByDuration { duration_ms } => {
            let since = now_ms().saturating_sub(duration_ms);
            match hosted.log.offset_for_timestamp(since) {
                Ok(Some((offset, _))) => offset.min(hosted.high_watermark()),
                _ => hosted.high_watermark(),
            }
        }
    }
}

pub(crate) fn now_ms_u64() -> u64 {
    u64::try_from(now_ms()).unwrap_or(0)
}
