//! State-machine tests with injected time.

mod consumer_harness;
mod consumer_heartbeat;
mod consumer_membership;
mod consumer_offsets_admin;
mod harness;
mod join_sync;
mod membership;
mod offsets_admin;
mod random_operations;
