//! Helpers shared by the integration tests of several crates.

pub mod batch;
pub mod ports;
pub mod wait;

pub use batch::record_batch;
pub use ports::free_port;
pub use wait::{wait_for, wait_until};
