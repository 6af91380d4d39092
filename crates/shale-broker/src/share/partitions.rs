//! The share-partitions this broker leads: one slot per (group, topic, partition), made on the
//! first ShareFetch that names it, initialized from the state its share coordinator keeps (and
//! from `share.auto.offset.reset` when none was ever written), and dropped when this broker
//! stops leading the partition or a state write is fenced. A slot's lock serializes everything
//! done to its share-partition, persisting included, so a state write never races the next
//! change.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use shale_log::TopicPartition;
use shale_share::partition::SharePartition;
use shale_share::state::SharePartitionKey;

/// One share-partition slot: empty until initialized.
#[derive(Debug, Default)]
pub struct Slot {
    pub partition: Option<SharePartition>,
    /// The leader epoch the share-partition was initialized at: a new epoch re-reads the state.
    pub leader_epoch: i32,
    /// The pending lock-expiry task and the deadline it wakes at.
    pub expiry: Option<(u64, tokio::task::AbortHandle)>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some((_, task)) = self.expiry.take() {
            task.abort();
        }
    }
}

pub type SlotHandle = Arc<tokio::sync::Mutex<Slot>>;

#[derive(Debug, Default)]
pub struct SharePartitions {
    slots: Mutex<HashMap<SharePartitionKey, (TopicPartition, SlotHandle)>>,
}

impl SharePartitions {
    /// The slot of `key` (made empty when there is none yet).
    pub fn slot(&self, key: &SharePartitionKey, tp: &TopicPartition) -> SlotHandle {
        self.slots
            .lock()
            .entry(key.clone())
            .or_insert_with(|| (tp.clone(), Arc::default()))
            .1
            .clone()
    }

    /// The slot of `key` if there is one.
    pub fn existing(&self, key: &SharePartitionKey) -> Option<SlotHandle> {
        self.slots.lock().get(key).map(|(_, slot)| slot.clone())
    }

    /// Drops the slots of partitions `still_led` no longer accepts (this broker stopped leading
    /// them, or the topic is gone).
    pub fn retain(&self, still_led: impl Fn(&SharePartitionKey, &TopicPartition) -> bool) {
        self.slots.lock().retain(|key, (tp, _)| still_led(key, tp));
    }

    /// Drops one slot (its state write was fenced: a newer leader or state epoch exists).
    pub fn remove(&self, key: &SharePartitionKey) {
        self.slots.lock().remove(key);
    }

    /// Every slot of `group_id`.
    pub fn of_group(&self, group_id: &str) -> Vec<(SharePartitionKey, SlotHandle)> {
        self.slots
            .lock()
            .iter()
            .filter(|(key, _)| key.group_id == group_id)
            .map(|(key, (_, slot))| (key.clone(), slot.clone()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.slots.lock().len()
    }
}
