use super::*;

fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The broker of the differential script: bounds lowered so every check can be reached.
fn lowered() -> GroupConfigBounds {
    GroupConfigBounds {
        session_timeout_ms_min: 2_000,
        heartbeat_interval_ms: 3_000,
        heartbeat_interval_ms_min: 1_000,
        ..GroupConfigBounds::default()
    }
}

fn refusal(pairs: &[(&str, &str)], bounds: &GroupConfigBounds) -> String {
    match validate_group_configs(&configs(pairs), bounds, &ShareGroupConfigBounds::default()) {
        Err(MetadataError::InvalidConfig(message)) => message,
        other => panic!("expected INVALID_CONFIG, got {other:?}"),
    }
}

#[test]
fn kafka_lists_twenty_one_keys_and_knows_twenty_seven() {
    assert_eq!(GROUP_CONFIGS.len(), 27);
    assert_eq!(described_group_configs().count(), 21);
    assert!(described_group_configs().all(|d| d.name != "consumer.assignor.offload.enable"));
    let served: Vec<&str> = GROUP_CONFIGS
        .iter()
        .filter(|d| d.served)
        .map(|d| d.name)
        .collect();
    assert_eq!(
        served,
        [
            CONSUMER_SESSION_TIMEOUT_MS,
            CONSUMER_HEARTBEAT_INTERVAL_MS,
            SHARE_SESSION_TIMEOUT_MS,
            SHARE_HEARTBEAT_INTERVAL_MS,
            SHARE_RECORD_LOCK_DURATION_MS,
            SHARE_DELIVERY_COUNT_LIMIT,
            SHARE_PARTITION_MAX_RECORD_LOCKS,
            SHARE_AUTO_OFFSET_RESET,
            SHARE_ISOLATION_LEVEL,
            SHARE_RENEW_ACKNOWLEDGE_ENABLE,
        ]
    );
    // Kafka 4.4 defines its assignor offload keys internally, on by default.
    for def in GROUP_CONFIGS
        .iter()
        .filter(|d| d.name.ends_with(".assignor.offload.enable"))
    {
        assert!(def.internal && def.default == "true", "{}", def.name);
    }
}

#[test]
fn values_within_the_broker_bounds_are_accepted() {
    let bounds = lowered();
    let share = ShareGroupConfigBounds::default();
    validate_group_configs(
        &configs(&[(CONSUMER_SESSION_TIMEOUT_MS, "50000")]),
        &bounds,
        &share,
    )
    .unwrap();
    validate_group_configs(
        &configs(&[
            (CONSUMER_SESSION_TIMEOUT_MS, "20000"),
            (CONSUMER_HEARTBEAT_INTERVAL_MS, "2000"),
        ]),
        &bounds,
        &share,
    )
    .unwrap();
    // Above the inherited heartbeat interval (3000), below Kafka's static default (5000).
    validate_group_configs(
        &configs(&[(CONSUMER_SESSION_TIMEOUT_MS, "4000")]),
        &bounds,
        &share,
    )
    .unwrap();
    validate_group_configs(&BTreeMap::new(), &GroupConfigBounds::default(), &share).unwrap();
}

#[test]
fn refusals_carry_kafkas_texts() {
    let bounds = lowered();
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("bogus", "1")], "Unknown group config name: bogus"),
        (
            &[(CONSUMER_SESSION_TIMEOUT_MS, "1000")],
            "consumer.session.timeout.ms must be in the range 2000 to 60000 inclusive.",
        ),
        (
            &[(CONSUMER_SESSION_TIMEOUT_MS, "70000")],
            "consumer.session.timeout.ms must be in the range 2000 to 60000 inclusive.",
        ),
        (
            &[(CONSUMER_HEARTBEAT_INTERVAL_MS, "500")],
            "consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive.",
        ),
        (
            &[(CONSUMER_SESSION_TIMEOUT_MS, "0")],
            "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be \
             at least 1",
        ),
        (
            &[(CONSUMER_SESSION_TIMEOUT_MS, "abc")],
            "Invalid value abc for configuration consumer.session.timeout.ms: Not a number \
             of type INT",
        ),
        (
            &[(CONSUMER_SESSION_TIMEOUT_MS, "2500")],
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
        ),
        (
            &[
                (CONSUMER_SESSION_TIMEOUT_MS, "3000"),
                (CONSUMER_HEARTBEAT_INTERVAL_MS, "3000"),
            ],
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
        ),
        // The name check comes first, as Kafka's validateNames.
        (
            &[(CONSUMER_SESSION_TIMEOUT_MS, "abc"), ("bogus", "1")],
            "Unknown group config name: bogus",
        ),
        // Both out of bounds: the heartbeat interval is checked first.
        (
            &[
                (CONSUMER_SESSION_TIMEOUT_MS, "1"),
                (CONSUMER_HEARTBEAT_INTERVAL_MS, "1"),
            ],
            "consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive.",
        ),
    ];
    for (pairs, expected) in cases {
        assert_eq!(refusal(pairs, &bounds), *expected, "{pairs:?}");
    }
}

#[test]
fn keys_shale_does_not_serve_are_refused_by_name() {
    for def in GROUP_CONFIGS.iter().filter(|d| !d.served) {
        let message = refusal(&[(def.name, def.default)], &GroupConfigBounds::default());
        assert!(
            message.starts_with(&format!(
                "Shale does not serve the group config {}",
                def.name
            )),
            "{message}"
        );
    }
}
