//! shale-metadata: the KRaft-style metadata layer.
//!
//! - [`records`]: versioned metadata records, the only way metadata changes. A log entry is a
//!   batch of records committed atomically (one controller request). Records, snapshots and
//!   forwarded controller requests use the versioned encoding of `shale_raft::encoding` (each
//!   struct with a version and tagged fields; codecs in `codec.rs`); what the first releases
//!   wrote with bincode is still read (`legacy.rs`) and replaced by the first snapshot.
//! - [`image`]: the immutable [`MetadataImage`] built by replaying records, shared as an `Arc`;
//!   persistent maps make a clone cheap and a change O(log n).
//! - [`controller`]: the pure controller state machine
//!   `(image, request, now_ms) -> (response, records)`, with seeded randomness.
//! - [`config_defs`]: Kafka's topic configs (types, defaults, validation, broker synonyms) and
//!   DescribeConfigs resolution.
//! - [`quorum`]: the [`QuorumLog`] trait over a replicated log, and [`LocalQuorumLog`], the
//!   single-voter implementation on local files.
//! - [`runtime`]: [`MetadataNode`], which drives the controller on a quorum log, publishes
//!   images, registers and heartbeats the local broker.
//! - [`meta_properties`]: cluster and node ids stored in every log directory.
//!
//! Write path: `MetadataNode::submit` queues the request; the controller task handles queued
//! requests one by one against the latest image (each sees the earlier ones), appends their
//! entries with one durable append, waits until the applier has published the image containing
//! them, then answers. Read path: `MetadataNode::image()` is an `Arc` swap, no lock is held
//! while reading.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod acl;
mod codec;
pub mod config_defs;
pub mod controller;
pub mod error;
mod forward;
pub mod group_config_defs;
pub mod image;
mod legacy;
mod liveness;
pub mod local_log;
pub mod meta_properties;
pub mod quorum;
pub mod quota_filter;
pub mod raft_log;
pub mod records;
pub mod runtime;

pub use config_defs::{resolve_topic_config, ConfigSource, ConfigType, ResolvedConfig};
pub use controller::{
    validate_topic_name, AlterConfigOp, AlterConfigOpType, Controller, ControllerConfig,
    ControllerRequest, ControllerResponse, CreatableTopic, CreatePartitionsTopic, CreatedTopic,
    ElectionType, HeartbeatReply, ProducerIdBlock, ReassignablePartition, ScramDeletion,
    ScramUpsertion,
};
pub use error::MetadataError;
pub use image::{
    BrokerRegistration, MetadataImage, PartitionImage, TopicImage,
    ELIGIBLE_LEADER_REPLICAS_FEATURE, ELIGIBLE_LEADER_REPLICAS_VERSION, NO_LEADER,
};
pub use local_log::LocalQuorumLog;
pub use quorum::{CommittedRead, QuorumDescription, QuorumLeader, QuorumLog, ReplicaState};
pub use raft_log::RaftQuorumLog;
pub use records::{ConfigResource, Endpoint, MetadataRecord, SecurityProtocol};
pub use runtime::{MetadataNode, MetadataNodeConfig, QuorumIo, QuorumMode, QuorumVoter};
/// How the controller port's connections are secured (see `MetadataNodeConfig::peer_security`).
pub use shale_raft::{BoxedPeerStream, PeerSecurity, PeerStream, Plaintext, SecureFuture};
