use crate::config::static_props::{StaticProperties, ValueOrigin};
use crate::config::typed::BrokerConfig;

fn config(pairs: &[(&str, &str)]) -> Result<BrokerConfig, String> {
    let mut props = StaticProperties::default();
    for (key, value) in pairs {
        props.set(key, value, ValueOrigin::Override);
    }
    BrokerConfig::from_properties(props).map_err(|error| error.to_string())
}

#[test]
fn kafka_defaults() {
    let settings = config(&[]).unwrap().consumer_groups;
    assert_eq!(settings.session_timeout_ms, 45_000);
    assert_eq!(settings.heartbeat_interval_ms, 5_000);
    assert_eq!(settings.assignors, vec!["uniform", "range"]);
    assert_eq!(
        settings.migration_policy,
        shale_group::MigrationPolicy::Bidirectional
    );
}

#[test]
fn bounds_are_checked_against_each_other_with_kafkas_words() {
    let error = config(&[("group.consumer.session.timeout.ms", "1000")]).unwrap_err();
    assert!(
        error.contains(
            "group.consumer.session.timeout.ms must be greater than or equal to \
             group.consumer.min.session.timeout.ms"
        ),
        "{error}"
    );
    let error = config(&[("group.consumer.heartbeat.interval.ms", "20000")]).unwrap_err();
    assert!(
        error.contains("must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
        "{error}"
    );
    let error = config(&[
        ("group.consumer.min.session.timeout.ms", "1000"),
        ("group.consumer.session.timeout.ms", "2000"),
        ("group.consumer.min.heartbeat.interval.ms", "1000"),
        ("group.consumer.heartbeat.interval.ms", "2000"),
    ])
    .unwrap_err();
    assert!(
        error.contains(
            "group.consumer.heartbeat.interval.ms must be less than \
             group.consumer.session.timeout.ms"
        ),
        "{error}"
    );
    let settings = config(&[
        ("group.consumer.min.session.timeout.ms", "1000"),
        ("group.consumer.session.timeout.ms", "3000"),
        ("group.consumer.min.heartbeat.interval.ms", "100"),
        ("group.consumer.heartbeat.interval.ms", "500"),
    ])
    .unwrap()
    .consumer_groups;
    assert_eq!(
        (settings.session_timeout_ms, settings.heartbeat_interval_ms),
        (3000, 500)
    );
}

#[test]
fn assignors_by_short_or_class_name_and_custom_classes_refused() {
    let settings = config(&[(
        "group.consumer.assignors",
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform",
    )])
    .unwrap()
    .consumer_groups;
    assert_eq!(settings.assignors, vec!["range", "uniform"]);
    let error = config(&[("group.consumer.assignors", "com.example.MyAssignor")]).unwrap_err();
    assert!(
        error.contains("group.consumer.assignors") && error.contains("com.example.MyAssignor"),
        "{error}"
    );
    let error = config(&[("group.consumer.assignors", "range,range")]).unwrap_err();
    assert!(error.contains("named twice"), "{error}");
}

#[test]
fn every_migration_policy_is_accepted_case_insensitively() {
    use shale_group::MigrationPolicy::*;
    for (value, policy) in [
        ("DISABLED", Disabled),
        ("upgrade", Upgrade),
        ("Downgrade", Downgrade),
        ("bidirectional", Bidirectional),
    ] {
        let settings = config(&[("group.consumer.migration.policy", value)])
            .unwrap()
            .consumer_groups;
        assert_eq!(settings.migration_policy, policy, "{value}");
    }
    let error = config(&[("group.consumer.migration.policy", "sometimes")]).unwrap_err();
    assert!(error.contains("group.consumer.migration.policy"), "{error}");
}

#[test]
fn the_assignment_interval_lies_within_its_bounds() {
    assert_eq!(
        config(&[]).unwrap().consumer_groups.assignment_interval_ms,
        1000
    );
    let error = config(&[("group.consumer.assignment.interval.ms", "20000")]).unwrap_err();
    assert!(
        error.contains(
            "group.consumer.assignment.interval.ms must be less than or equal to \
             group.consumer.max.assignment.interval.ms"
        ),
        "{error}"
    );
    let settings = config(&[("group.consumer.assignment.interval.ms", "0")])
        .unwrap()
        .consumer_groups;
    assert_eq!(settings.assignment_interval_ms, 0);
}
