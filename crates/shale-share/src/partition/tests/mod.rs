//! Tests of the share-partition, one file per behaviour.

mod ack_tests;
mod acquire_tests;
mod lock_tests;
mod support;
