//! shale-replica: the partitions a broker hosts and their replication (Kafka's
//! ReplicaManager, Partition and ReplicaFetcher): leader and follower state, the ISR and the
//! high watermark, acks=all waits (delayed produce), the leader's side of a follower's fetch,
//! the followers' fetchers and their truncation (KIP-101, KIP-279, KIP-320), the
//! high-watermark checkpoint, and producer state rebuilt from each log.
//!
//! Every leader-only request goes through one check ([`ReplicaManager::leader_for`],
//! [`ReplicaManager::leader_for_append`], [`ReplicaManager::read`]); a produce's batches are
//! parsed and CRC-checked once ([`shale_log::ValidatedBatches`]) and appended without a
//! second pass. The broker is reached only through [`ReplicaContext`], and leaders only
//! through [`LeaderLink`]: no wire-protocol type, broker config or Kafka error code appears
//! here (the broker's error mapping turns [`ReplicaError`], [`AppendError`] and [`AckError`]
//! into codes).

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod access;
pub mod checkpoint;
mod context;
pub mod delayed_fetch;
pub mod delayed_produce;
mod error;
mod fetcher;
mod follower_fetch;
mod follower_ops;
mod followers;
pub mod isr;
pub mod leader_state;
mod leadership;
mod manager;
mod partition;
mod producer_replay;
mod settings;
pub mod state;
pub mod truncation;

#[cfg(test)]
mod partition_tests;
#[cfg(test)]
mod recompress_tests;

pub use access::{PartitionRead, ReadRequest};
pub use context::{
    BoxFuture, FetchedData, FetchedPartition, FollowerFetch, FollowerFetchPartition, LeaderLink,
    LinkError, RemoteError, ReplicaContext,
};
pub use delayed_produce::PendingAck;
pub use error::{AckError, AppendError, ReplicaError};
pub use fetcher::FollowTarget;
pub use follower_fetch::{
    serve as serve_follower_fetch, FollowerRead, FollowerReadPartition, ServedData, ServedPartition,
};
pub use followers::Followers;
pub use leader_state::Assignment;
pub use leadership::{leadership_delta, led_partitions, LeadershipDelta};
pub use manager::{PartitionAssignment, ReplicaManager};
pub use partition::{Appended, Partition};
pub use settings::ReplicationSettings;
pub use state::RoleUpdate;
pub use truncation::LeaderEpochEnd;
