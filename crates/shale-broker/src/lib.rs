//! The Shale broker: listeners, connections, the API table and the handlers that answer Kafka
//! clients, standing on the log engine (`shale-log`), the metadata layer (`shale-metadata`) and
//! producer state (`shale-txn`).

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod api_table;
pub mod authorization;
pub mod authorizer;
mod broker;
pub mod config;
mod connection;
mod controller_calls;
mod coordinator_host;
mod core;
mod dispatch;
pub mod errors;
mod groups;
mod handlers;
mod internal_topics;
mod ip_connections;
mod log_config;
mod peer;
mod producer_id_source;
mod quotas;
pub mod replication;
mod request;
mod server;
mod share;
mod time;
mod topic_creation;
mod txn;

use std::sync::Arc;

pub use broker::Broker;
pub use server::{BrokerHandle, StartError};

/// The fixed line printed when the broker is ready for clients.
pub const READY_LINE: &str = "Shale server started";

/// Shared handle type used by handlers.
pub type SharedBroker = Arc<Broker>;
