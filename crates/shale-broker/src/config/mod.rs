//! Broker configuration: Kafka's property names, read from a properties file, the environment
//! (Apache Kafka container style, `KAFKA_LOG_DIRS` -> `log.dirs`) and `--override key=value`,
//! in that order of precedence (later wins).

mod authorizer;
mod bounds;
mod client_verifier;
mod connection_limits;
mod consumer_groups;
pub mod defs;
mod error;
pub mod kafka_keys;
mod listener;
mod peer;
mod properties;
mod reader;
mod sasl;
mod security;
mod share_coordinator;
mod share_groups;
mod static_props;
mod storage;
mod tls;
mod tls_client;
mod typed;
mod unserved;

pub use connection_limits::ConnectionsPerIp;
pub use consumer_groups::ConsumerGroupSettings;
pub use defs::{BrokerConfigDef, ConfigKind, BROKER_CONFIGS};
pub use error::ConfigError;
pub use peer::{PeerClient, SaslCredentials};
pub use properties::parse_properties;
pub use sasl::ListenerSasl;
pub use share_coordinator::ShareCoordinatorSettings;
pub use share_groups::ShareGroupSettings;
pub use static_props::{env_var_to_property, StaticProperties, ValueOrigin};
pub use storage::{format_storage, random_cluster_id, storage_dirs};
pub use tls::ListenerTls;
pub use typed::{BrokerConfig, Listener, ProcessRole, QuorumRole, QuorumVoter};

impl StaticProperties {
    /// Keys Kafka would not recognise; the binary warns about each.
    pub fn unknown_keys(&self) -> Vec<String> {
        self.iter()
            .map(|(k, _)| k)
            .filter(|k| {
                defs::find(k).is_none()
                    && !security::is_checked_key(k)
                    && !authorizer::is_authorizer_key(k)
                    && !unserved::is_unserved_key(k)
            })
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_follow_the_kafka_image() {
        assert_eq!(
            env_var_to_property("KAFKA_LOG_DIRS").as_deref(),
            Some("log.dirs")
        );
        assert_eq!(
            env_var_to_property("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP").as_deref(),
            Some("listener.security.protocol.map")
        );
        assert_eq!(
            env_var_to_property("KAFKA_FOO__BAR___BAZ").as_deref(),
            Some("foo_bar-baz")
        );
        assert_eq!(env_var_to_property("KAFKA_HEAP_OPTS"), None);
        assert_eq!(env_var_to_property("PATH"), None);
    }

    #[test]
    fn overrides_beat_environment_beat_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.properties");
        std::fs::write(&path, "num.partitions=2\nlog.dirs=/a\nnode.id=5\n").unwrap();
        let env = vec![
            ("KAFKA_LOG_DIRS".to_string(), "/b".to_string()),
            ("KAFKA_NUM_PARTITIONS".to_string(), "3".to_string()),
        ];
        let props =
            StaticProperties::load(Some(&path), env, &["num.partitions=4".to_string()]).unwrap();
        assert_eq!(props.get("num.partitions"), Some("4"));
        assert_eq!(props.get("log.dirs"), Some("/b"));
        assert_eq!(props.get("node.id"), Some("5"));
        assert_eq!(props.origin("node.id"), Some(ValueOrigin::File));
    }

    #[test]
    fn malformed_override_is_refused() {
        let err = StaticProperties::load(None, Vec::new(), &["novalue".to_string()]).unwrap_err();
        assert!(err.to_string().contains("novalue"));
    }

    #[test]
    fn unknown_keys_are_reported() {
        let mut props = StaticProperties::default();
        props.set("num.partitions", "1", ValueOrigin::File);
        props.set("no.such.key", "1", ValueOrigin::File);
        assert_eq!(props.unknown_keys(), vec!["no.such.key".to_string()]);
    }
}
