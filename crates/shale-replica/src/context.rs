//! What the replica layer needs from the broker around it, and nothing more: the metadata
//! view, the controller (for ISR changes), connections to leaders, the shutdown signal and
//! the settings. The broker implements [`ReplicaContext`]; the replica layer never names the
//! broker, its config or its wire types.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use shale_log::TopicPartition;
use shale_metadata::{ControllerRequest, ControllerResponse, MetadataError, MetadataImage};
use tokio::sync::watch;
use uuid::Uuid;

use crate::manager::ReplicaManager;
use crate::settings::ReplicationSettings;
use crate::truncation::LeaderEpochEnd;

/// A boxed future, so that the context and the links can be trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The broker as the replica layer sees it.
pub trait ReplicaContext: Send + Sync + 'static {
    fn replicas(&self) -> &ReplicaManager;
    fn image(&self) -> Arc<MetadataImage>;
    /// This broker's epoch in the controller's registration (fetches and ISR changes carry it).
    fn broker_epoch(&self) -> i64;
    fn settings(&self) -> &ReplicationSettings;
    fn shutdown_signal(&self) -> watch::Receiver<bool>;
    /// Sends a request to the active controller (AlterPartition).
    fn submit(
        &self,
        request: ControllerRequest,
    ) -> BoxFuture<'_, Result<ControllerResponse, MetadataError>>;
    /// A connection to `leader_id` on the inter-broker listener, for a follower's fetcher.
    fn connect_to_leader(
        &self,
        leader_id: i32,
    ) -> BoxFuture<'_, Result<Box<dyn LeaderLink>, LinkError>>;
}

/// Why a link to a leader failed as a whole (the fetcher reconnects after a backoff).
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the leader refused the request: {0}")]
    Refused(String),
}

/// A follower's Fetch to its leader, one entry per partition (by topic id).
#[derive(Clone, Debug)]
pub struct FollowerFetch {
    pub replica_id: i32,
    pub replica_epoch: i64,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub partitions: Vec<FollowerFetchPartition>,
}

#[derive(Clone, Debug)]
pub struct FollowerFetchPartition {
    pub topic_id: Uuid,
    pub partition: i32,
    pub current_leader_epoch: i32,
    pub fetch_offset: i64,
    pub last_fetched_epoch: i32,
    pub log_start_offset: i64,
    pub partition_max_bytes: i32,
}

/// The leader's answer for one partition of a [`FollowerFetch`].
#[derive(Clone, Debug)]
pub struct FetchedPartition {
    pub topic_id: Uuid,
    pub partition: i32,
    pub outcome: Result<FetchedData, RemoteError>,
}

#[derive(Clone, Debug)]
pub struct FetchedData {
    pub high_watermark: i64,
    pub log_start_offset: i64,
    /// KIP-320: the follower's last fetched epoch diverges from the leader's log.
    pub diverging: bool,
    pub records: Option<Bytes>,
}

/// A partition-level refusal from the leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteError {
    /// The fetch offset is outside the leader's log, which starts at `leader_log_start_offset`.
    OffsetOutOfRange { leader_log_start_offset: i64 },
    /// Anything else: the fetcher backs off and tries again (named for the log line).
    Other(String),
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteError::OffsetOutOfRange {
                leader_log_start_offset,
            } => write!(
                f,
                "offset out of range (the leader's log starts at {leader_log_start_offset})"
            ),
            RemoteError::Other(what) => f.write_str(what),
        }
    }
}

/// One connection from a follower's fetcher to a leader.
pub trait LeaderLink: Send {
    /// Fetch as a replica; every partition of the request answered.
    fn fetch(
        &mut self,
        request: FollowerFetch,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Vec<FetchedPartition>, LinkError>>;

    /// OffsetForLeaderEpoch for one partition: where the leader's largest epoch at or below
    /// `local_epoch` ends (`None` when it knows no such epoch).
    fn epoch_end(
        &mut self,
        tp: &TopicPartition,
        current_leader_epoch: i32,
        local_epoch: i32,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Result<Option<LeaderEpochEnd>, RemoteError>, LinkError>>;
}
