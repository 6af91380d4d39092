//! State-machine tests with injected time.

mod consumer_harness;
mod consumer_heartbeat;
mod consumer_membership;
mod consumer_migration;
mod consumer_migration_policies;
mod consumer_migration_rollback;
mod consumer_offsets_admin;
mod harness;
mod join_sync;
mod membership;
mod migration_harness;
mod offsets_admin;
mod random_operations;
mod share_admin;
mod share_harness;
mod share_heartbeat;
mod share_offsets;
mod share_random_operations;
