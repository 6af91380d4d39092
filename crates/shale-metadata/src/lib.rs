//! shale-metadata: the KRaft-style metadata layer.
//!
//! - [`records`]: versioned metadata records, the only way metadata changes.
//! - [`image`]: the immutable [`MetadataImage`] built by replaying records, shared as an `Arc`.
//! - [`controller`]: the pure controller state machine `(image, request, now) -> (response, records)`.
//! - [`config_defs`]: Kafka's topic configs (types, defaults, validation, broker synonyms).
//! - [`quorum`]: the [`QuorumLog`] trait over a replicated log, and [`LocalQuorumLog`], the
//!   single-voter durable implementation.
//! - [`runtime`]: [`MetadataNode`], which drives the controller on a quorum log.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod acl;
pub mod config_defs;
pub mod controller;
pub mod error;
pub mod image;
pub mod local_log;
pub mod meta_properties;
pub mod quorum;
pub mod records;
pub mod runtime;

pub use config_defs::{resolve_topic_config, ConfigSource, ConfigType, ResolvedConfig};
pub use controller::{
    AlterConfigOp, AlterConfigOpType, Controller, ControllerConfig, ControllerRequest,
    ControllerResponse, CreatableTopic, CreatePartitionsTopic, CreatedTopic, ElectionType,
    HeartbeatReply, ProducerIdBlock, ReassignablePartition,
};
pub use error::MetadataError;
pub use image::{BrokerRegistration, MetadataImage, PartitionImage, TopicImage, NO_LEADER};
pub use local_log::LocalQuorumLog;
pub use quorum::{CommittedRead, QuorumLeader, QuorumLog};
pub use records::{ConfigResource, Endpoint, MetadataRecord, SecurityProtocol};
pub use runtime::{MetadataNode, MetadataNodeConfig};
