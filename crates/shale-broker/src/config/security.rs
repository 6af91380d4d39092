//! What security this broker actually serves, checked before anything binds.
//!
//! Shale speaks only PLAINTEXT so far. A listener mapped to SSL, SASL_PLAINTEXT or SASL_SSL must
//! never come up as plain, unauthenticated TCP: a client or operator who configured TLS or SASL
//! would believe the port is protected. So such a listener, and every key that only means
//! something for TLS or SASL, stops start-up with an error naming it.

use super::error::ConfigError;
use super::listener::Listener;
use super::static_props::StaticProperties;

/// Kafka's security protocols (`org.apache.kafka.common.security.auth.SecurityProtocol`).
const KAFKA_SECURITY_PROTOCOLS: &[&str] = &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

/// The protocols Shale serves.
const SERVED_SECURITY_PROTOCOLS: &[&str] = &["PLAINTEXT"];

/// Key prefixes that configure TLS, SASL or per-listener overrides of them; none has an effect
/// on a PLAINTEXT listener, so accepting one would pretend.
const UNSERVED_KEY_PREFIXES: &[&str] = &["ssl.", "sasl.", "listener.name."];

/// Keys this module decides on (refused at start-up, or honoured), so the binary does not also
/// warn about them as unknown.
pub(crate) fn is_checked_key(key: &str) -> bool {
    key == "security.inter.broker.protocol"
        || UNSERVED_KEY_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Refuses a listener whose protocol Shale does not serve. `key` is the property the listener
/// came from (`listeners` or `advertised.listeners`).
pub(crate) fn check_listener(key: &str, listener: &Listener) -> Result<(), ConfigError> {
    let protocol = listener.security_protocol.as_str();
    let entry = format!("{}://{}:{}", listener.name, listener.host, listener.port);
    if !KAFKA_SECURITY_PROTOCOLS.contains(&protocol) {
        return Err(ConfigError::UnknownSecurityProtocol {
            key: key.to_string(),
            listener: entry,
            protocol: protocol.to_string(),
        });
    }
    if !SERVED_SECURITY_PROTOCOLS.contains(&protocol) {
        return Err(ConfigError::UnservedSecurityProtocol {
            key: key.to_string(),
            listener: entry,
            protocol: protocol.to_string(),
        });
    }
    Ok(())
}

/// Refuses TLS and SASL keys, and an inter-broker protocol other than PLAINTEXT.
pub(crate) fn check_keys(props: &StaticProperties) -> Result<(), ConfigError> {
    if let Some(protocol) = props.get("security.inter.broker.protocol") {
        let protocol = protocol.trim();
        if !SERVED_SECURITY_PROTOCOLS.contains(&protocol) {
            return Err(ConfigError::UnservedSecurityKey {
                key: "security.inter.broker.protocol".to_string(),
                reason: format!(
                    "brokers would talk to each other over {protocol}, which Shale does not \
                     implement yet (only PLAINTEXT)"
                ),
            });
        }
    }
    for (key, _) in props.iter() {
        if UNSERVED_KEY_PREFIXES.iter().any(|p| key.starts_with(p)) {
            return Err(ConfigError::UnservedSecurityKey {
                key: key.to_string(),
                reason: "TLS, SASL and per-listener settings are not implemented in Shale yet, \
                         so this key would have no effect; remove it"
                    .to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::static_props::ValueOrigin;

    fn listener(protocol: &str) -> Listener {
        Listener {
            name: "EXTERNAL".to_string(),
            host: "127.0.0.1".to_string(),
            port: 19555,
            security_protocol: protocol.to_string(),
        }
    }

    #[test]
    fn plaintext_is_served() {
        check_listener("listeners", &listener("PLAINTEXT")).unwrap();
    }

    #[test]
    fn tls_and_sasl_listeners_are_refused_by_name() {
        for protocol in ["SSL", "SASL_PLAINTEXT", "SASL_SSL"] {
            let err = check_listener("listeners", &listener(protocol))
                .unwrap_err()
                .to_string();
            assert!(err.contains("EXTERNAL://127.0.0.1:19555"), "{err}");
            assert!(err.contains(protocol), "{err}");
            assert!(err.contains("listeners"), "{err}");
            assert!(err.contains("listener.security.protocol.map"), "{err}");
        }
    }

    #[test]
    fn a_protocol_kafka_does_not_know_is_refused() {
        let err = check_listener("advertised.listeners", &listener("TLS"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown security protocol TLS"), "{err}");
        assert!(err.contains("advertised.listeners"), "{err}");
    }

    #[test]
    fn tls_and_sasl_keys_are_refused_by_name() {
        for key in [
            "ssl.keystore.location",
            "sasl.enabled.mechanisms",
            "listener.name.sasl_ssl.plain.sasl.jaas.config",
        ] {
            let mut props = StaticProperties::default();
            props.set(key, "x", ValueOrigin::File);
            let err = check_keys(&props).unwrap_err().to_string();
            assert!(err.contains(key), "{err}");
        }
    }

    #[test]
    fn inter_broker_protocol_must_be_plaintext() {
        let mut props = StaticProperties::default();
        props.set(
            "security.inter.broker.protocol",
            "PLAINTEXT",
            ValueOrigin::File,
        );
        check_keys(&props).unwrap();
        props.set(
            "security.inter.broker.protocol",
            "SASL_SSL",
            ValueOrigin::File,
        );
        let err = check_keys(&props).unwrap_err().to_string();
        assert!(err.contains("security.inter.broker.protocol"), "{err}");
        assert!(err.contains("SASL_SSL"), "{err}");
    }
}
