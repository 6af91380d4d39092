//! The consumer group protocol's broker keys (`group.consumer.*`, KIP-848), validated as Kafka's
//! GroupCoordinatorConfig validates them.

use super::error::ConfigError;
use super::typed::{invalid, Reader};

/// `group.consumer.*`, checked against each other at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroupSettings {
    pub session_timeout_ms: i32,
    pub session_timeout_ms_min: i32,
    pub session_timeout_ms_max: i32,
    pub heartbeat_interval_ms: i32,
    pub heartbeat_interval_ms_min: i32,
    pub heartbeat_interval_ms_max: i32,
    pub group_size_max: i32,
    /// Short names (`uniform`, `range`), in the configured order; the first is the default.
    pub assignors: Vec<String>,
    pub migration_policy: shale_group::MigrationPolicy,
}

/// Kafka's built-in assignors, by short name and by class name.
const BUILT_IN_ASSIGNORS: &[(&str, &str)] = &[
    (
        "uniform",
        "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
    ),
    (
        "range",
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
    ),
];

pub(super) fn consumer_group_settings(
    r: &Reader<'_>,
) -> Result<ConsumerGroupSettings, ConfigError> {
    let settings = ConsumerGroupSettings {
        session_timeout_ms: r.int("group.consumer.session.timeout.ms")?,
        session_timeout_ms_min: r.int("group.consumer.min.session.timeout.ms")?,
        session_timeout_ms_max: r.int("group.consumer.max.session.timeout.ms")?,
        heartbeat_interval_ms: r.int("group.consumer.heartbeat.interval.ms")?,
        heartbeat_interval_ms_min: r.int("group.consumer.min.heartbeat.interval.ms")?,
        heartbeat_interval_ms_max: r.int("group.consumer.max.heartbeat.interval.ms")?,
        group_size_max: r.int("group.consumer.max.size")?,
        assignors: assignors(&r.list("group.consumer.assignors"))?,
        migration_policy: migration_policy(
            &r.raw("group.consumer.migration.policy").unwrap_or_default(),
        )?,
    };
    at_least(
        "group.consumer.session.timeout.ms",
        settings.session_timeout_ms,
        "group.consumer.min.session.timeout.ms",
        settings.session_timeout_ms_min,
    )?;
    at_most(
        "group.consumer.session.timeout.ms",
        settings.session_timeout_ms,
        "group.consumer.max.session.timeout.ms",
        settings.session_timeout_ms_max,
    )?;
    at_least(
        "group.consumer.heartbeat.interval.ms",
        settings.heartbeat_interval_ms,
        "group.consumer.min.heartbeat.interval.ms",
        settings.heartbeat_interval_ms_min,
    )?;
    at_most(
        "group.consumer.heartbeat.interval.ms",
        settings.heartbeat_interval_ms,
        "group.consumer.max.heartbeat.interval.ms",
        settings.heartbeat_interval_ms_max,
    )?;
    if settings.heartbeat_interval_ms >= settings.session_timeout_ms {
        return Err(invalid(
            "group.consumer.heartbeat.interval.ms",
            &settings.heartbeat_interval_ms.to_string(),
            "group.consumer.heartbeat.interval.ms must be less than \
             group.consumer.session.timeout.ms",
        ));
    }
    Ok(settings)
}

/// Kafka's message: "<key> must be greater than or equal to <bound key>".
fn at_least(key: &str, value: i32, bound_key: &str, bound: i32) -> Result<(), ConfigError> {
    if value < bound {
        return Err(invalid(
            key,
            &value.to_string(),
            &format!("{key} must be greater than or equal to {bound_key}"),
        ));
    }
    Ok(())
}

fn at_most(key: &str, value: i32, bound_key: &str, bound: i32) -> Result<(), ConfigError> {
    if value > bound {
        return Err(invalid(
            key,
            &value.to_string(),
            &format!("{key} must be less than or equal to {bound_key}"),
        ));
    }
    Ok(())
}

/// Built-in assignors by either name; a custom class is refused because Shale cannot load it.
fn assignors(names: &[String]) -> Result<Vec<String>, ConfigError> {
    let key = "group.consumer.assignors";
    if names.is_empty() {
        return Err(invalid(key, "", "at least one assignor is required"));
    }
    let mut short_names: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let Some((short, _)) = BUILT_IN_ASSIGNORS
            .iter()
            .find(|(short, class)| name == short || name == class)
        else {
            return Err(invalid(
                key,
                &names.join(","),
                &format!(
                    "Shale serves the built-in assignors uniform and range and cannot load \
                     the class {name}"
                ),
            ));
        };
        if short_names.iter().any(|seen| seen == short) {
            return Err(invalid(
                key,
                &names.join(","),
                &format!("the assignor {short} is named twice"),
            ));
        }
        short_names.push((*short).to_string());
    }
    Ok(short_names)
}

fn migration_policy(value: &str) -> Result<shale_group::MigrationPolicy, ConfigError> {
    shale_group::MigrationPolicy::parse(value.trim()).ok_or_else(|| {
        invalid(
            "group.consumer.migration.policy",
            value,
            "expected one of disabled, downgrade, upgrade, bidirectional",
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::config::{BrokerConfig, StaticProperties, ValueOrigin};

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
            error
                .contains("must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
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
    fn migration_policy_is_kafkas_case_insensitive_enum() {
        let settings = config(&[("group.consumer.migration.policy", "UPGRADE")])
            .unwrap()
            .consumer_groups;
        assert_eq!(
            settings.migration_policy,
            shale_group::MigrationPolicy::Upgrade
        );
        let error = config(&[("group.consumer.migration.policy", "sometimes")]).unwrap_err();
        assert!(error.contains("group.consumer.migration.policy"), "{error}");
    }
}
