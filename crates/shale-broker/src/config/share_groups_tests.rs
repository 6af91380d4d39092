use crate::config::static_props::{StaticProperties, ValueOrigin};
use crate::config::typed::BrokerConfig;

use super::ShareGroupSettings;

fn config(pairs: &[(&str, &str)]) -> Result<BrokerConfig, String> {
    let mut props = StaticProperties::default();
    for (key, value) in pairs {
        props.set(key, value, ValueOrigin::Override);
    }
    BrokerConfig::from_properties(props).map_err(|error| error.to_string())
}

fn settings(pairs: &[(&str, &str)]) -> ShareGroupSettings {
    match config(pairs) {
        Ok(config) => config.share_groups,
        Err(error) => panic!("{pairs:?}: {error}"),
    }
}

/// The refusal of `pairs`, which must name `key` and end with Kafka's `message`.
fn refused(pairs: &[(&str, &str)], key: &str, message: &str) {
    let error = match config(pairs) {
        Ok(_) => panic!("{pairs:?} was accepted"),
        Err(error) => error,
    };
    assert!(
        error.contains(&format!("for configuration {key}: ")) && error.ends_with(message),
        "{pairs:?}: {error}"
    );
}

#[test]
fn kafka_44_defaults() {
    assert_eq!(
        settings(&[]),
        ShareGroupSettings {
            session_timeout_ms: 45_000,
            session_timeout_ms_min: 45_000,
            session_timeout_ms_max: 60_000,
            heartbeat_interval_ms: 5_000,
            heartbeat_interval_ms_min: 5_000,
            heartbeat_interval_ms_max: 15_000,
            group_size_max: 200,
            assignment_interval_ms: 1_000,
            assignment_interval_ms_min: 0,
            assignment_interval_ms_max: 15_000,
            record_lock_duration_ms: 30_000,
            record_lock_duration_ms_min: 15_000,
            record_lock_duration_ms_max: 60_000,
            delivery_count_limit: 5,
            delivery_count_limit_min: 2,
            delivery_count_limit_max: 10,
            partition_max_record_locks: 2_000,
            partition_max_record_locks_min: 100,
            partition_max_record_locks_max: 4_000,
            share_sessions_max: 2_000,
            initialize_retry_interval_ms: 30_000,
        }
    );
}

#[test]
fn every_key_is_read() {
    let s = settings(&[
        ("group.share.min.session.timeout.ms", "1000"),
        ("group.share.session.timeout.ms", "10000"),
        ("group.share.max.session.timeout.ms", "20000"),
        ("group.share.min.heartbeat.interval.ms", "100"),
        ("group.share.heartbeat.interval.ms", "500"),
        ("group.share.max.heartbeat.interval.ms", "900"),
        ("group.share.max.size", "10"),
        ("group.share.min.assignment.interval.ms", "10"),
        ("group.share.assignment.interval.ms", "20"),
        ("group.share.max.assignment.interval.ms", "30"),
        ("group.share.min.record.lock.duration.ms", "1000"),
        ("group.share.record.lock.duration.ms", "2000"),
        ("group.share.max.record.lock.duration.ms", "3600000"),
        ("group.share.min.delivery.count.limit", "3"),
        ("group.share.delivery.count.limit", "4"),
        ("group.share.max.delivery.count.limit", "25"),
        ("group.share.min.partition.max.record.locks", "200"),
        ("group.share.partition.max.record.locks", "300"),
        ("group.share.max.partition.max.record.locks", "10000"),
        ("group.share.max.share.sessions", "10"),
        ("group.share.initialize.retry.interval.ms", "1"),
    ]);
    assert_eq!(
        (
            s.session_timeout_ms_min,
            s.session_timeout_ms,
            s.session_timeout_ms_max
        ),
        (1000, 10_000, 20_000)
    );
    assert_eq!(
        (
            s.heartbeat_interval_ms_min,
            s.heartbeat_interval_ms,
            s.heartbeat_interval_ms_max
        ),
        (100, 500, 900)
    );
    assert_eq!(s.group_size_max, 10);
    assert_eq!(
        (
            s.assignment_interval_ms_min,
            s.assignment_interval_ms,
            s.assignment_interval_ms_max
        ),
        (10, 20, 30)
    );
    assert_eq!(
        (
            s.record_lock_duration_ms_min,
            s.record_lock_duration_ms,
            s.record_lock_duration_ms_max
        ),
        (1000, 2000, 3_600_000)
    );
    assert_eq!(
        (
            s.delivery_count_limit_min,
            s.delivery_count_limit,
            s.delivery_count_limit_max
        ),
        (3, 4, 25)
    );
    assert_eq!(
        (
            s.partition_max_record_locks_min,
            s.partition_max_record_locks,
            s.partition_max_record_locks_max
        ),
        (200, 300, 10_000)
    );
    assert_eq!(s.share_sessions_max, 10);
    assert_eq!(s.initialize_retry_interval_ms, 1);
}

/// Each key's own range (Kafka's ConfigDef validators), as Kafka 4.4 refuses a value outside it.
#[test]
fn each_key_lies_within_kafkas_range() {
    for (key, low, high) in [
        ("group.share.max.size", "0", Some("1001")),
        ("group.share.delivery.count.limit", "1", Some("11")),
        ("group.share.min.delivery.count.limit", "1", Some("6")),
        ("group.share.max.delivery.count.limit", "4", Some("26")),
        (
            "group.share.record.lock.duration.ms",
            "999",
            Some("3600001"),
        ),
        (
            "group.share.min.record.lock.duration.ms",
            "999",
            Some("30001"),
        ),
        (
            "group.share.max.record.lock.duration.ms",
            "29999",
            Some("3600001"),
        ),
        (
            "group.share.partition.max.record.locks",
            "99",
            Some("10001"),
        ),
        (
            "group.share.min.partition.max.record.locks",
            "99",
            Some("2001"),
        ),
        (
            "group.share.max.partition.max.record.locks",
            "1999",
            Some("10001"),
        ),
        ("group.share.session.timeout.ms", "0", None),
        ("group.share.min.session.timeout.ms", "0", None),
        ("group.share.max.session.timeout.ms", "0", None),
        ("group.share.heartbeat.interval.ms", "0", None),
        ("group.share.min.heartbeat.interval.ms", "0", None),
        ("group.share.max.heartbeat.interval.ms", "0", None),
        ("group.share.assignment.interval.ms", "-1", None),
        ("group.share.min.assignment.interval.ms", "-1", None),
        ("group.share.max.assignment.interval.ms", "-1", None),
        ("group.share.max.share.sessions", "0", None),
        ("group.share.initialize.retry.interval.ms", "0", None),
    ] {
        let error = config(&[(key, low)]).unwrap_err();
        assert!(
            error.contains(key) && error.contains("must be at least"),
            "{key}={low}: {error}"
        );
        if let Some(high) = high {
            let error = config(&[(key, high)]).unwrap_err();
            assert!(
                error.contains(key) && error.contains("must be no more than"),
                "{key}={high}: {error}"
            );
        }
    }
    refused(
        &[("group.share.max.size", "1001")],
        "group.share.max.size",
        "must be no more than 1000",
    );
    refused(
        &[("group.share.delivery.count.limit", "x")],
        "group.share.delivery.count.limit",
        "expected a whole number",
    );
}

/// Properties, the key refused and Kafka's message.
type RefusalCase = (
    &'static [(&'static str, &'static str)],
    &'static str,
    &'static str,
);

/// GroupCoordinatorConfig's and ShareGroupConfig's checks of one key against another, with the
/// messages Kafka 4.4 gave for the same properties.
#[test]
fn keys_are_checked_against_each_other_in_kafkas_words() {
    let cases: &[RefusalCase] = &[
        (
            &[("group.share.session.timeout.ms", "1000")],
            "group.share.session.timeout.ms",
            "group.share.session.timeout.ms must be greater than or equal to \
             group.share.min.session.timeout.ms",
        ),
        (
            &[("group.share.session.timeout.ms", "70000")],
            "group.share.session.timeout.ms",
            "group.share.session.timeout.ms must be less than or equal to \
             group.share.max.session.timeout.ms",
        ),
        (
            &[("group.share.min.session.timeout.ms", "70000")],
            "group.share.max.session.timeout.ms",
            "group.share.max.session.timeout.ms must be greater than or equal to \
             group.share.min.session.timeout.ms",
        ),
        (
            &[("group.share.heartbeat.interval.ms", "1000")],
            "group.share.heartbeat.interval.ms",
            "group.share.heartbeat.interval.ms must be greater than or equal to \
             group.share.min.heartbeat.interval.ms",
        ),
        (
            &[("group.share.heartbeat.interval.ms", "20000")],
            "group.share.heartbeat.interval.ms",
            "group.share.heartbeat.interval.ms must be less than or equal to \
             group.share.max.heartbeat.interval.ms",
        ),
        (
            &[("group.share.min.heartbeat.interval.ms", "20000")],
            "group.share.max.heartbeat.interval.ms",
            "group.share.max.heartbeat.interval.ms must be greater than or equal to \
             group.share.min.heartbeat.interval.ms",
        ),
        (
            &[
                ("group.share.min.session.timeout.ms", "1000"),
                ("group.share.session.timeout.ms", "2000"),
                ("group.share.min.heartbeat.interval.ms", "1000"),
                ("group.share.heartbeat.interval.ms", "2000"),
            ],
            "group.share.heartbeat.interval.ms",
            "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms",
        ),
        (
            &[("group.share.assignment.interval.ms", "20000")],
            "group.share.assignment.interval.ms",
            "group.share.assignment.interval.ms must be less than or equal to \
             group.share.max.assignment.interval.ms",
        ),
        (
            &[
                ("group.share.min.assignment.interval.ms", "500"),
                ("group.share.assignment.interval.ms", "100"),
            ],
            "group.share.assignment.interval.ms",
            "group.share.assignment.interval.ms must be greater than or equal to \
             group.share.min.assignment.interval.ms",
        ),
        (
            &[("group.share.min.assignment.interval.ms", "20000")],
            "group.share.max.assignment.interval.ms",
            "group.share.max.assignment.interval.ms must be greater than or equal to \
             group.share.min.assignment.interval.ms",
        ),
        (
            &[
                ("group.share.min.delivery.count.limit", "5"),
                ("group.share.delivery.count.limit", "4"),
            ],
            "group.share.delivery.count.limit",
            "group.share.delivery.count.limit must be greater than or equal to \
             group.share.min.delivery.count.limit",
        ),
        (
            &[
                ("group.share.max.delivery.count.limit", "6"),
                ("group.share.delivery.count.limit", "7"),
            ],
            "group.share.max.delivery.count.limit",
            "group.share.max.delivery.count.limit must be greater than or equal to \
             group.share.delivery.count.limit",
        ),
        (
            &[("group.share.partition.max.record.locks", "5000")],
            "group.share.max.partition.max.record.locks",
            "group.share.max.partition.max.record.locks must be greater than or equal to \
             group.share.partition.max.record.locks",
        ),
        (
            &[
                ("group.share.min.partition.max.record.locks", "2000"),
                ("group.share.partition.max.record.locks", "1500"),
            ],
            "group.share.partition.max.record.locks",
            "group.share.partition.max.record.locks must be greater than or equal to \
             group.share.min.partition.max.record.locks",
        ),
        (
            &[("group.share.record.lock.duration.ms", "10000")],
            "group.share.record.lock.duration.ms",
            "group.share.record.lock.duration.ms must be greater than or equal to \
             group.share.min.record.lock.duration.ms",
        ),
        (
            &[("group.share.record.lock.duration.ms", "100000")],
            "group.share.max.record.lock.duration.ms",
            "group.share.max.record.lock.duration.ms must be greater than or equal to \
             group.share.record.lock.duration.ms",
        ),
        (
            &[("group.share.max.share.sessions", "100")],
            "group.share.max.share.sessions",
            "group.share.max.share.sessions must be greater than or equal to \
             group.share.max.size",
        ),
    ];
    for (pairs, key, message) in cases {
        refused(pairs, key, message);
    }
    // Equal bounds pass, as Kafka's checks are inclusive.
    let s = settings(&[
        ("group.share.max.share.sessions", "100"),
        ("group.share.max.size", "100"),
    ]);
    assert_eq!((s.share_sessions_max, s.group_size_max), (100, 100));
}

#[test]
fn only_the_simple_assignor_is_served() {
    for value in [
        "simple",
        "org.apache.kafka.coordinator.group.assignor.SimpleAssignor",
        " simple , simple ",
    ] {
        settings(&[("group.share.assignors", value)]);
    }
    refused(
        &[(
            "group.share.assignors",
            "simple,org.apache.kafka.coordinator.group.assignor.SimpleAssignor",
        )],
        "group.share.assignors",
        "group.share.assignors must contain exactly one assignor, but found 2",
    );
    refused(
        &[("group.share.assignors", "")],
        "group.share.assignors",
        "Configuration 'group.share.assignors' must not be empty. Valid values include: any \
         non-empty value",
    );
    for other in [
        "uniform",
        "SIMPLE",
        "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
        "com.example.MyShareAssignor",
    ] {
        refused(
            &[("group.share.assignors", other)],
            "group.share.assignors",
            &format!("cannot load the class {other}"),
        );
    }
}

#[test]
fn keys_shale_cannot_honour_are_refused_by_name() {
    for (key, value) in [
        ("group.share.assignor.offload.enable", "true"),
        ("group.share.persister.class.name", "com.example.Persister"),
        ("group.share.dlq.manager.class.name", "com.example.Dlq"),
        ("errors.deadletterqueue.auto.create.topics.enable", "true"),
    ] {
        let error = config(&[(key, value)]).unwrap_err();
        assert!(
            error.starts_with(&format!("configuration {key} is not honoured: ")),
            "{error}"
        );
    }
    settings(&[
        ("group.share.assignor.offload.enable", "false"),
        (
            "group.share.persister.class.name",
            "org.apache.kafka.server.share.persister.DefaultStatePersister",
        ),
        (
            "group.share.dlq.manager.class.name",
            "org.apache.kafka.server.share.dlq.DefaultShareGroupDLQManager",
        ),
        ("errors.deadletterqueue.auto.create.topics.enable", "false"),
        ("errors.deadletterqueue.topic.name.prefix", "dead."),
        ("share.fetch.purgatory.purge.interval.requests", "10"),
    ]);
}

#[test]
fn share_keys_are_kafka_keys_and_internal_ones_are_not_described() {
    use crate::config::defs::{self, BROKER_CONFIGS, INTERNAL_BROKER_CONFIGS};
    use crate::config::kafka_keys::is_kafka_broker_key;
    for def in BROKER_CONFIGS
        .iter()
        .filter(|d| d.name.starts_with("group.share.") || d.name.starts_with("share."))
    {
        assert!(is_kafka_broker_key(def.name), "{}", def.name);
    }
    for def in INTERNAL_BROKER_CONFIGS {
        assert!(!is_kafka_broker_key(def.name), "{}", def.name);
        assert!(defs::find(def.name).is_some());
    }
    let mut props = StaticProperties::default();
    for key in [
        "group.share.initialize.retry.interval.ms",
        "share.coordinator.state.topic.prune.interval.ms",
        "group.share.persister.class.name",
        "group.share.max.size",
    ] {
        props.set(key, "1", ValueOrigin::File);
    }
    assert!(
        props.unknown_keys().is_empty(),
        "{:?}",
        props.unknown_keys()
    );
}

#[test]
fn the_controller_checks_groups_against_these_bounds() {
    let bounds = settings(&[]).group_config_bounds();
    assert_eq!(
        bounds,
        shale_metadata::group_config_defs::ShareGroupConfigBounds::default()
    );
    let bounds = settings(&[
        ("group.share.min.record.lock.duration.ms", "1000"),
        ("group.share.max.delivery.count.limit", "20"),
    ])
    .group_config_bounds();
    assert_eq!(
        (
            bounds.record_lock_duration_ms_min,
            bounds.delivery_count_limit_max
        ),
        (1000, 20)
    );
}
