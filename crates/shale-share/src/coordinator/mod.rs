//! The share coordinator (KIP-932; Kafka's share-coordinator module): the durable state of
//! share-partitions, kept in `__share_group_state` as ShareSnapshot and ShareUpdate records.
//!
//! - `records`: the records, byte for byte as Kafka writes them.
//! - `shard`: one `__share_group_state` partition's share-partitions (ShareCoordinatorShard),
//!   a pure state machine: handlers return an answer and the records to append, `replay`
//!   applies records.
//! - `combiner`: how the state batches of successive writes combine
//!   (PersisterStateBatchCombiner).
//! - `placement`: which partition of `__share_group_state` holds a share-partition.
//! - `settings`: the `share.coordinator.*` settings and the state topic's configs.

mod combiner;
mod offsets;
mod placement;
mod records;
mod requests;
mod settings;
mod shard;
mod wire;

#[cfg(test)]
mod combiner_tests;
#[cfg(test)]
mod offsets_tests;
#[cfg(test)]
mod placement_tests;
#[cfg(test)]
mod records_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod shard_kafka_tests;
#[cfg(test)]
mod shard_tests;

pub use combiner::combine_state_batches;
pub use placement::{
    coordinator_key, java_string_hash, kafka_abs, kafka_uuid_string, parse_coordinator_key,
    parse_kafka_uuid, partition_for,
};
pub use records::{
    decode_record, encode_record, RecordKind, ShareRecord, ShareRecordError, ShareSnapshotValue,
    ShareUpdateValue, UNKNOWN_DELIVERY_COMPLETE_COUNT,
};
pub use requests::{
    DeleteStateAnswer, InitializeStateAnswer, InvalidRequest, Outcome, ReadStateAnswer,
    ReadStateSummaryAnswer, ShareOperation, ShareStateError, StateSummary, WriteStateAnswer,
    WriteStateRequest,
};
pub use settings::ShareCoordinatorSettings;
pub use shard::{ShareCoordinatorShard, ShareGroupOffset};
