//! The group coordinator (classic protocol) and committed offsets.
//!
//! - [`placement`]: which `__consumer_offsets` partition coordinates a group.
//! - [`records`]: the records of `__consumer_offsets`, in Kafka's binary schemas.
//! - [`core`]: the pure state machine of one coordinator partition.
//! - [`runtime`]: the tokio service running many partitions over a [`runtime::GroupLog`].
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod config;
pub mod core;
pub mod error;
pub mod placement;
pub mod records;
pub mod runtime;
pub mod types;

pub use config::GroupConfig;
pub use error::GroupError;
