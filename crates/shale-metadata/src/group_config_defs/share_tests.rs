//! The share group keys: what Kafka 4.4's GroupConfig.validate answered for the same values
//! (against a broker with Kafka's defaults unless the bounds say otherwise).

use super::*;

fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn check(pairs: &[(&str, &str)], share: &ShareGroupConfigBounds) -> Result<(), String> {
    match validate_group_configs(&configs(pairs), &GroupConfigBounds::default(), share) {
        Ok(()) => Ok(()),
        Err(MetadataError::InvalidConfig(message)) => Err(message),
        Err(other) => panic!("expected INVALID_CONFIG, got {other:?}"),
    }
}

fn refusal(pairs: &[(&str, &str)]) -> String {
    match check(pairs, &ShareGroupConfigBounds::default()) {
        Ok(()) => panic!("{pairs:?} accepted"),
        Err(message) => message,
    }
}

/// The bounds of a broker with lowered share-group minimums, so every check can be reached.
fn lowered() -> ShareGroupConfigBounds {
    ShareGroupConfigBounds {
        session_timeout_ms_min: 2_000,
        heartbeat_interval_ms: 3_000,
        heartbeat_interval_ms_min: 1_000,
        ..ShareGroupConfigBounds::default()
    }
}

#[test]
fn the_share_keys_are_served_with_kafkas_defaults_and_broker_synonyms() {
    let expect = [
        (
            SHARE_SESSION_TIMEOUT_MS,
            "45000",
            Some("group.share.session.timeout.ms"),
        ),
        (
            SHARE_HEARTBEAT_INTERVAL_MS,
            "5000",
            Some("group.share.heartbeat.interval.ms"),
        ),
        (
            SHARE_RECORD_LOCK_DURATION_MS,
            "30000",
            Some("group.share.record.lock.duration.ms"),
        ),
        (
            SHARE_DELIVERY_COUNT_LIMIT,
            "5",
            Some("group.share.delivery.count.limit"),
        ),
        (
            SHARE_PARTITION_MAX_RECORD_LOCKS,
            "2000",
            Some("group.share.partition.max.record.locks"),
        ),
        (SHARE_AUTO_OFFSET_RESET, "latest", None),
        (SHARE_ISOLATION_LEVEL, "read_uncommitted", None),
        (SHARE_RENEW_ACKNOWLEDGE_ENABLE, "true", None),
    ];
    for (name, default, synonym) in expect {
        let def = group_config_def(name).unwrap();
        assert!(def.served && !def.internal, "{name}");
        assert_eq!(
            (def.default, def.broker_synonym),
            (default, synonym),
            "{name}"
        );
        assert!(described_group_configs().any(|d| d.name == name), "{name}");
    }
    // Every share key with a default is accepted at that default.
    let defaults: Vec<(&str, &str)> = expect.iter().map(|(n, d, _)| (*n, *d)).collect();
    check(&defaults, &ShareGroupConfigBounds::default()).unwrap();
}

#[test]
fn share_keys_shale_does_not_serve_are_refused_by_name() {
    for name in [
        "share.assignment.interval.ms",
        "share.assignor.offload.enable",
    ] {
        let message = refusal(&[(name, "1000")]);
        assert!(
            message.starts_with(&format!(
                "Shale does not serve the group config {name}; only "
            )),
            "{message}"
        );
        assert!(message.contains(SHARE_RECORD_LOCK_DURATION_MS), "{message}");
    }
}

#[test]
fn values_within_the_broker_bounds_are_accepted() {
    let share = ShareGroupConfigBounds::default();
    for pairs in [
        &[(SHARE_SESSION_TIMEOUT_MS, "50000")][..],
        &[(SHARE_HEARTBEAT_INTERVAL_MS, "15000")],
        &[(SHARE_RECORD_LOCK_DURATION_MS, "15000")],
        &[(SHARE_RECORD_LOCK_DURATION_MS, "60000")],
        &[(SHARE_DELIVERY_COUNT_LIMIT, "2")],
        &[(SHARE_DELIVERY_COUNT_LIMIT, "10")],
        &[(SHARE_PARTITION_MAX_RECORD_LOCKS, "100")],
        &[(SHARE_PARTITION_MAX_RECORD_LOCKS, "4000")],
        &[(SHARE_ISOLATION_LEVEL, "read_committed")],
        &[(SHARE_ISOLATION_LEVEL, " read_uncommitted ")],
        &[(SHARE_RENEW_ACKNOWLEDGE_ENABLE, "FALSE")],
        &[(SHARE_AUTO_OFFSET_RESET, "earliest")],
        &[(SHARE_AUTO_OFFSET_RESET, " earliest ")],
        &[(SHARE_AUTO_OFFSET_RESET, "by_duration:PT1H")],
    ] {
        check(pairs, &share).unwrap_or_else(|e| panic!("{pairs:?}: {e}"));
    }
    // Above the inherited heartbeat interval (3000), below Kafka's static default (5000).
    check(&[(SHARE_SESSION_TIMEOUT_MS, "4000")], &lowered()).unwrap();
}

#[test]
fn refusals_carry_kafkas_texts() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[(SHARE_SESSION_TIMEOUT_MS, "0")],
            "Invalid value 0 for configuration share.session.timeout.ms: Value must be at least 1",
        ),
        (
            &[(SHARE_SESSION_TIMEOUT_MS, "1000")],
            "share.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        (
            &[(SHARE_HEARTBEAT_INTERVAL_MS, "1000")],
            "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
        (
            &[(SHARE_RECORD_LOCK_DURATION_MS, "500")],
            "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be \
             at least 1000",
        ),
        (
            &[(SHARE_RECORD_LOCK_DURATION_MS, "10000")],
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
        ),
        (
            &[(SHARE_RECORD_LOCK_DURATION_MS, "70000")],
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
        ),
        (
            &[(SHARE_DELIVERY_COUNT_LIMIT, "1")],
            "Invalid value 1 for configuration share.delivery.count.limit: Value must be at \
             least 2",
        ),
        (
            &[(SHARE_DELIVERY_COUNT_LIMIT, "11")],
            "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
        ),
        (
            &[(SHARE_PARTITION_MAX_RECORD_LOCKS, "50")],
            "Invalid value 50 for configuration share.partition.max.record.locks: Value must \
             be at least 100",
        ),
        (
            &[(SHARE_PARTITION_MAX_RECORD_LOCKS, "5000")],
            "share.partition.max.record.locks must be in the range 100 to 4000 inclusive.",
        ),
        (
            &[(SHARE_ISOLATION_LEVEL, "READ_COMMITTED")],
            "Invalid value READ_COMMITTED for configuration share.isolation.level: String must \
             be one of: read_committed, read_uncommitted",
        ),
        (
            &[(SHARE_RENEW_ACKNOWLEDGE_ENABLE, "maybe")],
            "Invalid value maybe for configuration share.renew.acknowledge.enable: Expected \
             value to be either true or false",
        ),
        (
            &[(SHARE_DELIVERY_COUNT_LIMIT, "x")],
            "Invalid value x for configuration share.delivery.count.limit: Not a number of \
             type INT",
        ),
        // Every value is parsed before any range is checked.
        (
            &[
                (SHARE_SESSION_TIMEOUT_MS, "1"),
                (SHARE_HEARTBEAT_INTERVAL_MS, "1"),
                (SHARE_RECORD_LOCK_DURATION_MS, "1"),
            ],
            "Invalid value 1 for configuration share.record.lock.duration.ms: Value must be at \
             least 1000",
        ),
        // The consumer keys' ranges come before the share keys'.
        (
            &[
                (CONSUMER_SESSION_TIMEOUT_MS, "1"),
                (SHARE_HEARTBEAT_INTERVAL_MS, "1"),
            ],
            "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        // The heartbeat interval's range before the session timeout's.
        (
            &[
                (SHARE_SESSION_TIMEOUT_MS, "1"),
                (SHARE_HEARTBEAT_INTERVAL_MS, "1"),
            ],
            "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
        ),
    ];
    for (pairs, expected) in cases {
        assert_eq!(refusal(pairs), *expected, "{pairs:?}");
    }
}

#[test]
fn the_session_timeout_exceeds_the_heartbeat_interval() {
    let share = lowered();
    let expected = "share.session.timeout.ms must be greater than share.heartbeat.interval.ms";
    assert_eq!(
        check(&[(SHARE_SESSION_TIMEOUT_MS, "2500")], &share),
        Err(expected.to_string())
    );
    assert_eq!(
        check(
            &[
                (SHARE_SESSION_TIMEOUT_MS, "3000"),
                (SHARE_HEARTBEAT_INTERVAL_MS, "3000")
            ],
            &share
        ),
        Err(expected.to_string())
    );
    check(
        &[
            (SHARE_SESSION_TIMEOUT_MS, "3000"),
            (SHARE_HEARTBEAT_INTERVAL_MS, "2000"),
        ],
        &share,
    )
    .unwrap();
    // The consumer pair is checked first.
    let bounds = GroupConfigBounds {
        session_timeout_ms_min: 2_000,
        heartbeat_interval_ms: 3_000,
        heartbeat_interval_ms_min: 1_000,
        ..GroupConfigBounds::default()
    };
    let both = configs(&[
        (CONSUMER_SESSION_TIMEOUT_MS, "2500"),
        (SHARE_SESSION_TIMEOUT_MS, "2500"),
    ]);
    assert_eq!(
        validate_group_configs(&both, &bounds, &share),
        Err(MetadataError::InvalidConfig(
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
                .into()
        ))
    );
}

#[test]
fn auto_offset_reset_values_as_kafka_reads_them() {
    use ShareAutoOffsetReset::*;
    let cases = [
        ("earliest", Some(Earliest)),
        ("latest", Some(Latest)),
        (
            "by_duration:PT1H",
            Some(ByDuration {
                duration_ms: 3_600_000,
            }),
        ),
        (
            "by_duration:pt1h",
            Some(ByDuration {
                duration_ms: 3_600_000,
            }),
        ),
        (
            "by_duration:P1D",
            Some(ByDuration {
                duration_ms: 86_400_000,
            }),
        ),
        (
            "by_duration:p1d",
            Some(ByDuration {
                duration_ms: 86_400_000,
            }),
        ),
        (
            "by_duration:P1Dt1H",
            Some(ByDuration {
                duration_ms: 90_000_000,
            }),
        ),
        (
            "by_duration:P1DT2H3M4.5S",
            Some(ByDuration {
                duration_ms: 93_784_500,
            }),
        ),
        (
            "by_duration:PT1,5S",
            Some(ByDuration { duration_ms: 1_500 }),
        ),
        ("by_duration:PT1.S", Some(ByDuration { duration_ms: 1_000 })),
        (
            "by_duration:PT1.123456789S",
            Some(ByDuration { duration_ms: 1_123 }),
        ),
        (
            "by_duration:+PT1H",
            Some(ByDuration {
                duration_ms: 3_600_000,
            }),
        ),
        (
            "by_duration:PT1H-30M",
            Some(ByDuration {
                duration_ms: 1_800_000,
            }),
        ),
        (
            "by_duration:P-1DT48H",
            Some(ByDuration {
                duration_ms: 86_400_000,
            }),
        ),
        ("by_duration:PT1M-60S", Some(ByDuration { duration_ms: 0 })),
        ("by_duration:PT0S", Some(ByDuration { duration_ms: 0 })),
        ("by_duration:-PT0S", Some(ByDuration { duration_ms: 0 })),
        ("by_duration:PT-0S", Some(ByDuration { duration_ms: 0 })),
        ("by_duration:P0D", Some(ByDuration { duration_ms: 0 })),
        (
            "by_duration:PT9223372036854775807S",
            Some(ByDuration {
                duration_ms: i64::MAX,
            }),
        ),
        (
            "by_duration:-P-1D",
            Some(ByDuration {
                duration_ms: 86_400_000,
            }),
        ),
        (
            "by_duration:P+1D",
            Some(ByDuration {
                duration_ms: 86_400_000,
            }),
        ),
        ("by_duration:PT0.S", Some(ByDuration { duration_ms: 0 })),
        ("EARLIEST", None),
        ("by_duration:PT.5S", None),
        ("by_duration:P1D2H", None),
        ("by_duration:PT1H1H", None),
        ("by_duration:PT++1H", None),
        ("by_duration:-PT-9223372036854775808S", None),
        ("none", None),
        ("bogus", None),
        ("BY_DURATION:PT1H", None),
        ("by_duration:", None),
        ("by_duration:xyz", None),
        ("by_duration: PT1H", None),
        ("by_duration:-PT1H", None),
        ("by_duration:PT-1H", None),
        ("by_duration:PT-0.5S", None),
        ("by_duration:P", None),
        ("by_duration:PT", None),
        ("by_duration:P1DT", None),
        ("by_duration:P1W", None),
        ("by_duration:PT1.5H", None),
        ("by_duration:PT1.1234567891S", None),
        ("by_duration:PT1S1M", None),
        ("by_duration:PT100000000000000000000H", None),
        ("by_duration:PT9223372036854775808S", None),
        ("by_duration:P106751991167301D", None),
    ];
    for (value, expected) in cases {
        assert_eq!(ShareAutoOffsetReset::parse(value), expected, "{value}");
    }
    assert_eq!(
        refusal(&[(SHARE_AUTO_OFFSET_RESET, " bogus ")]),
        "Invalid value bogus for configuration share.auto.offset.reset: Invalid value `bogus` \
         for configuration share.auto.offset.reset. The value must be either 'earliest', \
         'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
    );
}

#[test]
fn a_groups_share_values_are_clamped_to_the_nodes_bounds() {
    assert_eq!(
        share_group_overrides(&BTreeMap::new(), &ShareGroupConfigBounds::default()),
        ShareGroupOverrides::default()
    );
    let stored = configs(&[
        (SHARE_SESSION_TIMEOUT_MS, "50000"),
        (SHARE_HEARTBEAT_INTERVAL_MS, "1000"),
        (SHARE_RECORD_LOCK_DURATION_MS, "90000"),
        (SHARE_DELIVERY_COUNT_LIMIT, "3"),
        (SHARE_PARTITION_MAX_RECORD_LOCKS, "5000"),
        (SHARE_AUTO_OFFSET_RESET, "by_duration:PT1M"),
        (SHARE_ISOLATION_LEVEL, "read_committed"),
        (SHARE_RENEW_ACKNOWLEDGE_ENABLE, "False"),
    ]);
    assert_eq!(
        share_group_overrides(&stored, &ShareGroupConfigBounds::default()),
        ShareGroupOverrides {
            session_timeout_ms: Some(50_000),
            heartbeat_interval_ms: Some(5_000),
            record_lock_duration_ms: Some(60_000),
            delivery_count_limit: Some(3),
            partition_max_record_locks: Some(4_000),
            auto_offset_reset: ShareAutoOffsetReset::ByDuration {
                duration_ms: 60_000
            },
            isolation_level: ShareIsolationLevel::ReadCommitted,
            renew_acknowledge_enabled: false,
        }
    );
    let earliest = configs(&[(SHARE_AUTO_OFFSET_RESET, "earliest")]);
    assert_eq!(
        share_group_overrides(&earliest, &ShareGroupConfigBounds::default()).auto_offset_reset,
        ShareAutoOffsetReset::Earliest
    );
}
