use super::*;

#[test]
fn defaults_are_kafka_44s() {
    // Printed from Kafka 4.4's ShareCoordinatorConfig.CONFIG_DEF.
    let settings = ShareCoordinatorSettings::default();
    assert_eq!(settings.snapshot_update_records_per_snapshot, 500);
    assert_eq!(settings.state_topic_num_partitions, 50);
    assert_eq!(settings.state_topic_replication_factor, 3);
    assert_eq!(settings.state_topic_min_isr, 2);
    assert_eq!(settings.state_topic_segment_bytes, 104_857_600);
    assert_eq!(settings.load_buffer_size, 5_242_880);
    assert_eq!(settings.write_timeout_ms, 5000);
    assert_eq!(settings.cold_partition_snapshot_interval_ms, 300_000);
    assert_eq!(settings.state_topic_prune_interval_ms, 300_000);
    assert_eq!(settings.append_linger_ms, None);
    assert_eq!(settings.threads, 1);
    assert_eq!(settings.state_topic_compression_codec, 0);
    assert_eq!(settings.cached_buffer_max_bytes, 1_048_588);
}

#[test]
fn the_state_topic_is_created_as_kafka_creates_it() {
    let settings = ShareCoordinatorSettings {
        state_topic_segment_bytes: 1_048_576,
        state_topic_min_isr: 1,
        ..ShareCoordinatorSettings::default()
    };
    let configs = settings.state_topic_configs();
    let configs: Vec<(&str, &str)> = configs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        configs,
        vec![
            ("cleanup.policy", "delete"),
            ("compression.type", "producer"),
            ("segment.bytes", "1048576"),
            ("min.insync.replicas", "1"),
            ("retention.ms", "-1"),
        ]
    );
}
