//! Assignor tests: tables worked by hand from Kafka's documented examples and algorithms, and
//! properties over random groups.

mod properties;
mod range_tables;
mod registry;
mod simple_kafka_cases;
mod simple_tables;
mod support;
mod uniform_heterogeneous_tables;
mod uniform_homogeneous_tables;
