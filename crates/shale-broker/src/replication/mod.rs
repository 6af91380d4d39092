//! The broker's side of replication: the inter-broker client, the replica layer's link to
//! leaders and its context (the partitions, ISR and fetchers themselves are
//! `shale-replica`), and the replication admin APIs answered through the controller.

pub mod admin;
pub mod client;
mod context;
mod link;
