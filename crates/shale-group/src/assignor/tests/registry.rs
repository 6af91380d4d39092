//! The assignors by Kafka's short names.

use crate::assignor::{assignor_named, assignor_names};

#[test]
fn assignors_are_found_by_kafkas_names() {
    assert_eq!(assignor_names(), ["uniform", "range"]);
    for name in assignor_names() {
        assert_eq!(assignor_named(name).map(|a| a.name()), Some(name));
    }
}

#[test]
fn other_names_are_unknown() {
    for name in [
        "Uniform",
        "RANGE",
        "sticky",
        "",
        "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
    ] {
        assert!(assignor_named(name).is_none(), "{name}");
    }
}
