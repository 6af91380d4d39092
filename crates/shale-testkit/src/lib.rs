//! Helpers shared by the integration tests of several crates.

pub mod ports;

pub use ports::free_port;
