//! DescribeConfigs of a GROUP resource as Kafka 4.4 answers it: every key of Kafka's
//! GroupConfig except its internal ones, whether or not the group exists, each with the
//! group's own value (DYNAMIC_GROUP_CONFIG) or else the value of the broker key it inherits
//! (static, else Kafka's default), and that chain as its synonyms. Keys Shale does not act on
//! are described with Kafka's defaults, which is what a group has while they cannot be set.

use std::collections::BTreeMap;

use shale_metadata::config_defs::ConfigSource;
use shale_metadata::group_config_defs::{described_group_configs, GroupConfigDef};

use super::broker_configs::BrokerConfigEntry;
use crate::config::StaticProperties;

/// One group key: the group's value first, then the broker key's static value and default (a
/// key without a broker synonym is its own, with Kafka's default).
fn entry(
    def: &GroupConfigDef,
    group: &BTreeMap<String, String>,
    static_props: &StaticProperties,
) -> BrokerConfigEntry {
    let mut synonyms: Vec<(String, Option<String>, ConfigSource)> = Vec::new();
    if let Some(value) = group.get(def.name) {
        synonyms.push((
            def.name.to_string(),
            Some(value.clone()),
            ConfigSource::DynamicGroupConfig,
        ));
    }
    let broker_key = def.broker_synonym.unwrap_or(def.name);
    if let Some(value) = def.broker_synonym.and_then(|key| static_props.get(key)) {
        synonyms.push((
            broker_key.to_string(),
            Some(value.to_string()),
            ConfigSource::StaticBrokerConfig,
        ));
    }
    synonyms.push((
        broker_key.to_string(),
        Some(def.default.to_string()),
        ConfigSource::DefaultConfig,
    ));
    let (value, source) = synonyms
        .first()
        .map_or((None, ConfigSource::DefaultConfig), |(_, v, s)| {
            (v.clone(), *s)
        });
    BrokerConfigEntry {
        name: def.name.to_string(),
        value,
        source,
        read_only: false,
        sensitive: false,
        config_type: def.config_type.id(),
        synonyms,
    }
}

/// Every described key of a group, in Kafka's definition order. `group` holds the group's own
/// configs (empty for a group without any, or one that does not exist).
pub(crate) fn describe_group(
    group: &BTreeMap<String, String>,
    static_props: &StaticProperties,
) -> Vec<BrokerConfigEntry> {
    described_group_configs()
        .map(|def| entry(def, group, static_props))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> StaticProperties {
        let mut p = StaticProperties::default();
        for (k, v) in pairs {
            p.set(k, v, crate::config::ValueOrigin::File);
        }
        p
    }

    fn find<'a>(entries: &'a [BrokerConfigEntry], name: &str) -> &'a BrokerConfigEntry {
        entries.iter().find(|e| e.name == name).unwrap()
    }

    fn syn(
        name: &str,
        value: &str,
        source: ConfigSource,
    ) -> (String, Option<String>, ConfigSource) {
        (name.to_string(), Some(value.to_string()), source)
    }

    /// What Kafka 4.4 answered for a group it had never seen, on a broker started with
    /// `group.consumer.heartbeat.interval.ms=3000`.
    #[test]
    fn an_unknown_group_is_described_with_the_brokers_values() {
        let static_props = props(&[("group.consumer.heartbeat.interval.ms", "3000")]);
        let entries = describe_group(&BTreeMap::new(), &static_props);
        assert_eq!(entries.len(), 21);
        assert!(entries.iter().all(|e| !e.read_only && !e.sensitive));
        let heartbeat = find(&entries, "consumer.heartbeat.interval.ms");
        assert_eq!(heartbeat.value.as_deref(), Some("3000"));
        assert_eq!(heartbeat.source, ConfigSource::StaticBrokerConfig);
        assert_eq!(heartbeat.config_type, 3);
        assert_eq!(
            heartbeat.synonyms,
            [
                syn(
                    "group.consumer.heartbeat.interval.ms",
                    "3000",
                    ConfigSource::StaticBrokerConfig
                ),
                syn(
                    "group.consumer.heartbeat.interval.ms",
                    "5000",
                    ConfigSource::DefaultConfig
                ),
            ]
        );
        let session = find(&entries, "consumer.session.timeout.ms");
        assert_eq!(session.value.as_deref(), Some("45000"));
        assert_eq!(session.source, ConfigSource::DefaultConfig);
        let reset = find(&entries, "share.auto.offset.reset");
        assert_eq!(
            (reset.value.as_deref(), reset.config_type),
            (Some("latest"), 2)
        );
        assert_eq!(
            reset.synonyms,
            [syn(
                "share.auto.offset.reset",
                "latest",
                ConfigSource::DefaultConfig
            )]
        );
        let assignor = find(&entries, "streams.assignor.name");
        assert_eq!(
            assignor.synonyms,
            [syn(
                "group.streams.assignors",
                "sticky",
                ConfigSource::DefaultConfig
            )]
        );
        let tags = find(&entries, "streams.rack.aware.assignment.tags");
        assert_eq!((tags.value.as_deref(), tags.config_type), (Some(""), 7));
        assert!(entries.iter().all(
            |e| !e.name.ends_with("offload.enable") && e.name != "streams.num.warmup.replicas"
        ));
    }

    #[test]
    fn a_groups_own_value_comes_first() {
        let group = BTreeMap::from([(
            "consumer.session.timeout.ms".to_string(),
            "50000".to_string(),
        )]);
        let entries = describe_group(&group, &StaticProperties::default());
        let session = find(&entries, "consumer.session.timeout.ms");
        assert_eq!(session.value.as_deref(), Some("50000"));
        assert_eq!(session.source, ConfigSource::DynamicGroupConfig);
        assert_eq!(session.source.id(), 8);
        assert_eq!(
            session.synonyms,
            [
                syn(
                    "consumer.session.timeout.ms",
                    "50000",
                    ConfigSource::DynamicGroupConfig
                ),
                syn(
                    "group.consumer.session.timeout.ms",
                    "45000",
                    ConfigSource::DefaultConfig
                ),
            ]
        );
    }
}
