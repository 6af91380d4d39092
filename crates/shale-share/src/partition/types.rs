//! The values the broker exchanges with a share-partition: its settings, what a log read
//! handed it, what it acquired, the acknowledgements it is given and the state writes it asks
//! for.

use crate::state::StateBatch;

/// The group's settings a share-partition applies (Kafka's GroupConfig share keys, each
/// defaulting to its `group.share.*` broker key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartitionConfig {
    /// `share.record.lock.duration.ms`: how long an acquired record stays locked to its member.
    pub record_lock_duration_ms: u64,
    /// `share.delivery.count.limit`: a record delivered this many times is archived instead of
    /// being offered again.
    pub delivery_count_limit: i16,
    /// `group.share.partition.max.record.locks` (`share.partition.max.record.locks`): how many
    /// records may be in flight between the start and end offsets before acquisition stops.
    pub max_in_flight_records: usize,
    /// `share.renew.acknowledge.enable`: whether the RENEW acknowledgement (KIP-1222) is served.
    pub renew_acknowledge_enabled: bool,
}

/// ShareFetch v2's ShareAcquireMode (KIP-1206).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireMode {
    /// 0: whole log batches are acquired, `max_records` is a soft limit.
    BatchOptimized,
    /// 1: no more than `max_records` records are acquired, splitting a log batch if needed.
    RecordLimit,
}

impl AcquireMode {
    pub fn from_wire(id: i8) -> Option<Self> {
        match id {
            0 => Some(AcquireMode::BatchOptimized),
            1 => Some(AcquireMode::RecordLimit),
            _ => None,
        }
    }

    pub fn wire_id(self) -> i8 {
        match self {
            AcquireMode::BatchOptimized => 0,
            AcquireMode::RecordLimit => 1,
        }
    }
}

/// One record batch of a log read, as far as acquisition needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    /// -1 when the batch has no producer id.
    pub producer_id: i64,
    pub is_transactional: bool,
    pub is_control: bool,
}

/// A log read for a share fetch, turned into what the share-partition decides from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRead {
    /// The offset the log was read from: `next_fetch_offset()` when the read started. Batches
    /// cached between it and the first batch read were compacted away and are archived.
    pub fetch_offset: i64,
    /// The batches read, in offset order, control batches included.
    pub batches: Vec<LogBatch>,
    pub log_start_offset: i64,
    /// Exclusive upper bound of what may be acquired: the high watermark, or the last stable
    /// offset under read_committed.
    pub high_watermark: i64,
    /// The aborted transactions of the range read, as `(producer_id, first_offset)`.
    pub aborted: Vec<(i64, i64)>,
    pub read_committed: bool,
}

/// One acquired range, as ShareFetch's AcquiredRecords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquiredRecords {
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_count: i16,
}

/// What one acquisition handed to a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareAcquiredRecords {
    pub acquired: Vec<AcquiredRecords>,
    /// How many offsets `acquired` covers.
    pub count: usize,
    /// Where the next log read for this share-partition starts.
    pub next_fetch_offset: i64,
}

/// An acknowledgement type with Kafka's wire numbers (AcknowledgeType); 0 on the wire is a gap,
/// an offset without a record, and is not one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckType {
    Accept,
    Release,
    Reject,
    Renew,
}

impl AckType {
    pub const GAP_WIRE_ID: i8 = 0;

    pub fn from_wire(id: i8) -> Option<Self> {
        match id {
            1 => Some(AckType::Accept),
            2 => Some(AckType::Release),
            3 => Some(AckType::Reject),
            4 => Some(AckType::Renew),
            _ => None,
        }
    }

    pub fn wire_id(self) -> i8 {
        match self {
            AckType::Accept => 1,
            AckType::Release => 2,
            AckType::Reject => 3,
            AckType::Renew => 4,
        }
    }
}

/// One acknowledgement batch as on the wire: a single type for the whole range, or one per
/// offset (0 = gap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub ack_types: Vec<i8>,
}

/// A WriteShareGroupState the share-partition needs sent to the share coordinator. Acquired
/// records are never in it: a lock does not outlive its leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateWrite {
    /// Pass back to `complete_write` with the outcome.
    pub write_id: u64,
    pub start_offset: i64,
    /// The ranges whose state changed, in the order they changed.
    pub batches: Vec<StateBatch>,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    /// KIP-1226's DeliveryCompleteCount: acknowledged and archived records at or above the
    /// start offset, from which the group coordinator computes the lag.
    pub delivery_complete_count: i32,
}

/// What finishing a state write changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteCompletion {
    /// Records became acquirable or the start offset moved: waiting share fetches may be
    /// answered now (Kafka's maybeCompleteDelayedShareFetchRequest).
    pub records_available: bool,
}
