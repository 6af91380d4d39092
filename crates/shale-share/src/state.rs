//! What a share-partition persists through the share coordinator and reads back from it: the
//! fields of Kafka's WriteShareGroupState and ReadShareGroupState, without their wire types.

use uuid::Uuid;

/// The share-partition a state belongs to (Kafka's SharePartitionKey).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharePartitionKey {
    pub group_id: String,
    pub topic_id: Uuid,
    pub partition: i32,
}

impl SharePartitionKey {
    /// The key FindCoordinator (key type SHARE) and the share coordinator's partition choice
    /// use: `groupId:topicId:partition`, the topic id in Kafka's base64 form.
    pub fn coordinator_key(&self, topic_id_base64: &str) -> String {
        format!("{}:{}:{}", self.group_id, topic_id_base64, self.partition)
    }
}

/// The delivery state of a persisted range of offsets, with Kafka's numbers (RecordState).
/// Acquired records are persisted as available: a lock does not survive its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryState {
    Available,
    Acknowledged,
    Archived,
}

impl DeliveryState {
    pub fn id(self) -> i8 {
        match self {
            DeliveryState::Available => 0,
            DeliveryState::Acknowledged => 2,
            DeliveryState::Archived => 4,
        }
    }

    /// None for a number Kafka never persists (1, acquired) or does not define.
    pub fn from_id(id: i8) -> Option<DeliveryState> {
        match id {
            0 => Some(DeliveryState::Available),
            2 => Some(DeliveryState::Acknowledged),
            4 => Some(DeliveryState::Archived),
            _ => None,
        }
    }
}

/// One persisted range: offsets `first_offset..=last_offset` share a state and a delivery count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_state: DeliveryState,
    pub delivery_count: i16,
}

/// A share-partition's durable state: everything below `start_offset` is done, and the batches
/// describe offsets at or above it whose state is not plain "available, never delivered".
/// `start_offset` -1 means not yet known: the partition takes it from `share.auto.offset.reset`
/// on first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistedState {
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub batches: Vec<StateBatch>,
}
