//! State-machine tests with injected time.

mod harness;
mod join_sync;
mod membership;
mod offsets_admin;
mod random_operations;
