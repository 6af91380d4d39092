//! Tests of the share-partition, one file per behaviour.

mod ack_tests;
mod acquire_tests;
mod lock_tests;
mod log_start_tests;
mod persisted_tests;
mod property_tests;
mod support;
mod txn_tests;
mod types_tests;
mod write_tests;
