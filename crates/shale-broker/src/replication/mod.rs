//! Replicated partitions (Kafka's replication protocol): the leader tracks its followers'
//! log end offsets and the ISR, the high watermark follows the ISR, followers copy the
//! leader's batches as they are with Fetch after truncating with OffsetForLeaderEpoch, and
//! ISR changes are committed through the controller (AlterPartition).

pub mod client;
pub mod leader_state;
pub mod state;
pub mod truncation;
