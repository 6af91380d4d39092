//! Wall-clock milliseconds, from the log engine (the unit Kafka timestamps use).

pub use shale_log::now_ms;
