use crate::config::static_props::{StaticProperties, ValueOrigin};
use crate::config::typed::BrokerConfig;

use super::ShareCoordinatorSettings;

fn config(pairs: &[(&str, &str)]) -> Result<BrokerConfig, String> {
    let mut props = StaticProperties::default();
    for (key, value) in pairs {
        props.set(key, value, ValueOrigin::Override);
    }
    BrokerConfig::from_properties(props).map_err(|error| error.to_string())
}

fn settings(pairs: &[(&str, &str)]) -> ShareCoordinatorSettings {
    match config(pairs) {
        Ok(config) => config.share_coordinator,
        Err(error) => panic!("{pairs:?}: {error}"),
    }
}

#[test]
fn kafka_44_defaults() {
    assert_eq!(
        settings(&[]),
        ShareCoordinatorSettings {
            state_topic_num_partitions: 50,
            state_topic_replication_factor: 3,
            state_topic_min_isr: 2,
            state_topic_segment_bytes: 104_857_600,
            snapshot_update_records_per_snapshot: 500,
            write_timeout_ms: 5_000,
            load_buffer_size_bytes: 5_242_880,
            append_linger_ms: None,
            state_topic_prune_interval_ms: 300_000,
            cold_partition_snapshot_interval_ms: 300_000,
        }
    );
}

#[test]
fn every_key_is_read() {
    let s = settings(&[
        ("share.coordinator.state.topic.num.partitions", "3"),
        ("share.coordinator.state.topic.replication.factor", "1"),
        ("share.coordinator.state.topic.min.isr", "1"),
        ("share.coordinator.state.topic.segment.bytes", "1048576"),
        (
            "share.coordinator.snapshot.update.records.per.snapshot",
            "0",
        ),
        ("share.coordinator.write.timeout.ms", "100"),
        ("share.coordinator.load.buffer.size", "1024"),
        ("share.coordinator.append.linger.ms", "0"),
        ("share.coordinator.state.topic.prune.interval.ms", "1000"),
        (
            "share.coordinator.cold.partition.snapshot.interval.ms",
            "2000",
        ),
        ("share.coordinator.state.topic.compression.codec", "0"),
        ("share.coordinator.threads", "8"),
        ("share.coordinator.cached.buffer.max.bytes", "524288"),
    ]);
    assert_eq!(
        s,
        ShareCoordinatorSettings {
            state_topic_num_partitions: 3,
            state_topic_replication_factor: 1,
            state_topic_min_isr: 1,
            state_topic_segment_bytes: 1_048_576,
            snapshot_update_records_per_snapshot: 0,
            write_timeout_ms: 100,
            load_buffer_size_bytes: 1024,
            append_linger_ms: Some(0),
            state_topic_prune_interval_ms: 1000,
            cold_partition_snapshot_interval_ms: 2000,
        }
    );
    assert_eq!(
        settings(&[("share.coordinator.append.linger.ms", "0")]).append_linger_ms,
        Some(0)
    );
}

#[test]
fn each_key_lies_within_kafkas_range() {
    for (key, value, why) in [
        (
            "share.coordinator.state.topic.num.partitions",
            "0",
            "must be at least 1",
        ),
        (
            "share.coordinator.state.topic.replication.factor",
            "0",
            "must be at least 1",
        ),
        (
            "share.coordinator.state.topic.min.isr",
            "0",
            "must be at least 1",
        ),
        (
            "share.coordinator.state.topic.segment.bytes",
            "0",
            "must be at least 1",
        ),
        (
            "share.coordinator.snapshot.update.records.per.snapshot",
            "501",
            "must be no more than 500",
        ),
        (
            "share.coordinator.snapshot.update.records.per.snapshot",
            "-1",
            "must be at least 0",
        ),
        (
            "share.coordinator.write.timeout.ms",
            "0",
            "must be at least 1",
        ),
        (
            "share.coordinator.load.buffer.size",
            "0",
            "must be at least 1",
        ),
        (
            "share.coordinator.append.linger.ms",
            "-2",
            "must be at least -1",
        ),
        (
            "share.coordinator.state.topic.prune.interval.ms",
            "0",
            "must be at least 1",
        ),
        (
            "share.coordinator.cold.partition.snapshot.interval.ms",
            "0",
            "must be at least 1",
        ),
        ("share.coordinator.threads", "0", "must be at least 1"),
        (
            "share.coordinator.cached.buffer.max.bytes",
            "1000",
            "must be at least 524288",
        ),
        (
            "share.coordinator.state.topic.replication.factor",
            "40000",
            "out of range",
        ),
        (
            "share.coordinator.state.topic.compression.codec",
            "zstd",
            "expected a whole number",
        ),
    ] {
        let error = config(&[(key, value)]).unwrap_err();
        assert!(
            error.contains(&format!("for configuration {key}: ")) && error.ends_with(why),
            "{key}={value}: {error}"
        );
    }
}

#[test]
fn only_an_uncompressed_state_topic_is_served() {
    let key = "share.coordinator.state.topic.compression.codec";
    for id in ["1", "2", "3", "4"] {
        let error = config(&[(key, id)]).unwrap_err();
        assert!(
            error.contains(key) && error.ends_with("only 0 (none) is served"),
            "{error}"
        );
    }
    let error = config(&[(key, "9")]).unwrap_err();
    assert!(error.ends_with("Unknown compression type id: 9"), "{error}");
}

#[test]
fn a_positive_append_linger_is_refused_by_name() {
    let key = "share.coordinator.append.linger.ms";
    let error = config(&[(key, "5")]).unwrap_err();
    assert!(
        error.contains(key) && error.ends_with("only -1 (adaptive) and 0 are served"),
        "{error}"
    );
    assert_eq!(settings(&[(key, "-1")]).append_linger_ms, None);
}
