//! Kafka broker keys that Shale does not act on and whose value, kept and ignored, would leave a
//! broker other than its configuration says: weaker (a client believed to re-authenticate, a
//! custom principal builder believed to map names) or behaving differently (a consumer group
//! coordinator believed to batch regex refreshes). Start-up stops naming them. A value equal to
//! the behaviour Shale has passes.

use super::error::ConfigError;
use super::static_props::StaticProperties;

/// (key, Kafka's default if one means "off", why Shale refuses any other value).
const UNSERVED_KEYS: &[(&str, Option<&str>, &str)] = &[
    (
        "connections.max.reauth.ms",
        Some("0"),
        "re-authentication (KIP-368) is not served: sessions last as long as their connection",
    ),
    (
        "principal.builder.class",
        None,
        "Shale cannot load a Java principal builder; principals are User:<SASL name> or \
         User:<certificate subject>",
    ),
    (
        "client.quota.callback.class",
        None,
        "Shale cannot load a Java quota callback",
    ),
    (
        "delegation.token.secret.key",
        None,
        "delegation tokens are not served",
    ),
    (
        "delegation.token.master.key",
        None,
        "delegation tokens are not served",
    ),
    (
        "security.providers",
        None,
        "Shale cannot load Java security providers",
    ),
    (
        "group.consumer.assignor.offload.enable",
        Some("false"),
        "target assignments are computed on the coordinator's request path, which is Kafka's \
         false",
    ),
    (
        "group.consumer.regex.refresh.interval.ms",
        None,
        "subscription regular expressions are resolved again on every change of the cluster's \
         topics, not on an interval",
    ),
    (
        "group.share.assignor.offload.enable",
        Some("false"),
        "share group target assignments are computed on the coordinator's request path, which \
         is false; Kafka 4.4's default, true, computes them on a background thread",
    ),
    (
        "group.share.persister.class.name",
        Some("org.apache.kafka.server.share.persister.DefaultStatePersister"),
        "share-partition state is kept by the share coordinator in __share_group_state, as \
         Kafka's DefaultStatePersister keeps it; Shale cannot load another Java persister",
    ),
    (
        "group.share.dlq.manager.class.name",
        Some("org.apache.kafka.server.share.dlq.DefaultShareGroupDLQManager"),
        "Shale cannot load a Java dead-letter queue manager",
    ),
    (
        "errors.deadletterqueue.auto.create.topics.enable",
        Some("false"),
        "share group dead-letter queues (KIP-1191) are not served, so no DLQ topic is created",
    ),
    (
        "max.connection.creation.rate",
        Some("2147483647"),
        "connection creation rates are not limited",
    ),
];

/// Refuses a key of `UNSERVED_KEYS` set to anything but its "off" default.
pub(crate) fn check_unserved_keys(props: &StaticProperties) -> Result<(), ConfigError> {
    for (key, off, reason) in UNSERVED_KEYS {
        let Some(value) = props.get(key) else {
            continue;
        };
        let value = value.trim();
        if value.is_empty() || Some(value) == *off {
            continue;
        }
        return Err(ConfigError::UnservedSecurityKey {
            key: key.to_string(),
            reason: format!("{reason}; remove it (it is {value:?})"),
        });
    }
    Ok(())
}

/// Whether `key` is decided here, so that the binary does not also call it unknown.
pub(crate) fn is_unserved_key(key: &str) -> bool {
    UNSERVED_KEYS.iter().any(|(k, _, _)| *k == key)
}

#[cfg(test)]
mod tests {
    use super::super::static_props::ValueOrigin;
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> StaticProperties {
        let mut p = StaticProperties::default();
        for (k, v) in pairs {
            p.set(k, v, ValueOrigin::Override);
        }
        p
    }

    #[test]
    fn a_key_shale_does_not_act_on_is_refused_by_name() {
        for (key, value) in [
            ("connections.max.reauth.ms", "3600000"),
            ("principal.builder.class", "com.example.Builder"),
            ("delegation.token.secret.key", "s3cret"),
            ("max.connection.creation.rate", "10"),
            ("group.consumer.assignor.offload.enable", "true"),
            ("group.consumer.regex.refresh.interval.ms", "600000"),
        ] {
            let err = check_unserved_keys(&props(&[(key, value)]))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{err}");
        }
    }

    #[test]
    fn kafkas_off_values_pass() {
        check_unserved_keys(&props(&[
            ("connections.max.reauth.ms", "0"),
            ("max.connection.creation.rate", "2147483647"),
            ("principal.builder.class", ""),
            ("group.consumer.assignor.offload.enable", "false"),
        ]))
        .unwrap();
        assert!(is_unserved_key("connections.max.reauth.ms"));
        assert!(!is_unserved_key("log.dirs"));
    }
}
