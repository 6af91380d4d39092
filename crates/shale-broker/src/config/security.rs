//! What security this broker actually serves, checked before anything binds.
//!
//! Shale serves PLAINTEXT, SSL (TLS through rustls, see `tls`), SASL_PLAINTEXT and SASL_SSL
//! listeners (SASL/PLAIN and SCRAM, see `sasl`). A listener must never come up weaker than configured:
//! a client or operator who configured a mechanism or a TLS setting would believe the port is
//! protected by it. So every key Shale does not honour (a `sasl.*` key other than
//! `sasl.enabled.mechanisms`, an `ssl.*` key outside `tls::SERVED_SSL_KEYS`, a per-listener
//! override of anything but the SSL keys of an SSL or SASL_SSL listener and the SASL keys of a
//! SASL listener) stops start-up with an error naming it; the mechanisms themselves are
//! checked by `sasl`. How this node reaches the other nodes (the inter-broker and controller
//! listeners, their mechanisms and credentials) is decided by `peer`.

use super::error::ConfigError;
use super::listener::Listener;
use super::peer::{CONTROLLER_MECHANISM_KEY, INTER_BROKER_MECHANISM_KEY};
use super::sasl::{
    is_sasl_protocol, ENABLED_MECHANISMS_KEY, OAUTHBEARER_JAAS_KEY, PLAIN_JAAS_KEY, SCRAM_JAAS_KEYS,
};
use super::static_props::StaticProperties;
use super::tls::{listener_prefix, SERVED_SSL_KEYS};

/// Kafka's security protocols (`org.apache.kafka.common.security.auth.SecurityProtocol`).
const KAFKA_SECURITY_PROTOCOLS: &[&str] = &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

/// Key prefixes this module decides on: TLS, SASL and per-listener overrides.
const SECURITY_KEY_PREFIXES: &[&str] = &["ssl.", "sasl.", "listener.name."];

/// Keys this module decides on (refused at start-up, or honoured), so the binary does not also
/// warn about them as unknown.
pub(crate) fn is_checked_key(key: &str) -> bool {
    key == "security.inter.broker.protocol"
        || SECURITY_KEY_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Refuses a listener whose protocol Kafka does not know. `key` is the property the listener
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
    Ok(())
}

/// A listener per-listener keys may name: its name and security protocol. Besides
/// `listeners`, a broker-only node names the controller listener it dials.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NamedListener<'a> {
    pub name: &'a str,
    pub security_protocol: &'a str,
}

/// Refuses SASL and `ssl.*` keys Shale does not honour, and per-listener overrides other than
/// the served SSL keys of a TLS listener and SASL keys of a SASL listener.
pub(crate) fn check_keys(
    props: &StaticProperties,
    listeners: &[NamedListener<'_>],
) -> Result<(), ConfigError> {
    for (key, _) in props.iter() {
        if let Some(reason) = refusal(key, listeners) {
            return Err(ConfigError::UnservedSecurityKey {
                key: key.to_string(),
                reason,
            });
        }
    }
    Ok(())
}

/// Why `key` is refused, or `None` when it is honoured (or not a security key).
fn refusal(key: &str, listeners: &[NamedListener<'_>]) -> Option<String> {
    if key.starts_with("sasl.") {
        return sasl_refusal(key);
    }
    if key.starts_with("ssl.") {
        return ssl_refusal(key);
    }
    let rest = key.strip_prefix("listener.name.")?;
    let Some((name, listener_key)) = rest.split_once('.') else {
        return Some("expected listener.name.<listener>.<key>".to_string());
    };
    let listener = listeners
        .iter()
        .find(|l| listener_prefix(l.name) == format!("listener.name.{name}."));
    if listener_key.starts_with("ssl.") {
        return match listener {
            Some(l) if is_tls_protocol(l.security_protocol) => ssl_refusal(listener_key),
            Some(l) => Some(format!(
                "listener {} maps to {}, not SSL, so this key would have no effect; remove it",
                l.name, l.security_protocol
            )),
            None => Some(format!(
                "no listener in listeners is named {name} (listener names are matched in \
                 lower case), so this key would have no effect; remove it"
            )),
        };
    }
    if listener_key.contains("sasl.") {
        return match listener {
            Some(l) if is_sasl_protocol(l.security_protocol) => {
                if listener_key == ENABLED_MECHANISMS_KEY
                    || listener_key == PLAIN_JAAS_KEY
                    || listener_key == OAUTHBEARER_JAAS_KEY
                    || SCRAM_JAAS_KEYS.contains(&listener_key)
                {
                    None
                } else if let Some(reason) = oauthbearer_refusal(listener_key) {
                    Some(reason)
                } else if listener_key.ends_with(".sasl.jaas.config") {
                    Some(
                        "Shale serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER, so only \
                         listener.name.<listener>.{plain,scram-sha-256,scram-sha-512,oauthbearer}.sasl.jaas.config \
                         are read; remove this key"
                            .to_string(),
                    )
                } else {
                    sasl_refusal(listener_key)
                }
            }
            Some(l) => Some(format!(
                "listener {} maps to {}, not SASL_PLAINTEXT or SASL_SSL, so this key would have \
                 no effect; remove it",
                l.name, l.security_protocol
            )),
            None => Some(format!(
                "no listener in listeners is named {name} (listener names are matched in \
                 lower case), so this key would have no effect; remove it"
            )),
        };
    }
    Some(
        "per-listener overrides are served for the ssl.* keys of SSL and SASL_SSL listeners and \
         the SASL keys of SASL listeners only, so this key would have no effect; remove it"
            .to_string(),
    )
}

fn is_tls_protocol(protocol: &str) -> bool {
    matches!(protocol, "SSL" | "SASL_SSL")
}

/// Why a key of OAuth token validation is refused: Shale serves OAUTHBEARER only with Kafka's
/// default broker validator, the unsecured one, so a server callback handler (Kafka's
/// `OAuthBearerValidatorCallbackHandler` for JWKS) or a `sasl.oauthbearer.*` setting of
/// signed-token validation would be ignored, and a listener would trust unsigned tokens its
/// operator meant to refuse.
fn oauthbearer_refusal(key: &str) -> Option<String> {
    let reason = if key.ends_with("sasl.server.callback.handler.class") {
        "a SASL server callback handler is not served: OAUTHBEARER is checked only by Kafka's \
         default unsecured validator (unsecuredValidator* options of the OAuthBearerLoginModule \
         entry); signature validation against a JWKS endpoint is not served yet; remove this key"
    } else if key.contains("sasl.oauthbearer.") {
        "OAuth token validation against a JWKS endpoint (and its audience, issuer, claim and \
         retry settings) is not served yet: OAUTHBEARER is checked only by Kafka's unsecured \
         validator, configured in the OAuthBearerLoginModule entry; remove this key"
    } else {
        return None;
    };
    Some(reason.to_string())
}

/// Why a `sasl.*` key (without its listener prefix) is refused, or `None` when it is served.
fn sasl_refusal(key: &str) -> Option<String> {
    if let Some(reason) = oauthbearer_refusal(key) {
        return Some(reason);
    }
    let reason = match key {
        // Their values are checked where they are used (`peer`).
        ENABLED_MECHANISMS_KEY | INTER_BROKER_MECHANISM_KEY | CONTROLLER_MECHANISM_KEY => {
            return None
        }
        "sasl.jaas.config" => {
            "a broker reads its listeners' JAAS entries from \
             listener.name.<listener>.<mechanism>.sasl.jaas.config (for PLAIN: \
             listener.name.<listener>.plain.sasl.jaas.config); remove this key"
        }
        _ => "Shale does not implement this SASL setting, so it would have no effect; remove it",
    };
    Some(reason.to_string())
}

/// Why an `ssl.*` key (without its listener prefix) is refused, or `None` when it is served.
fn ssl_refusal(key: &str) -> Option<String> {
    if SERVED_SSL_KEYS.contains(&key) {
        return None;
    }
    let reason = match key {
        "ssl.key.password" => {
            "encrypted private keys are not supported; store the PEM key unencrypted and \
             remove this key"
        }
        "ssl.keystore.password" | "ssl.truststore.password" => {
            "Shale reads PEM stores only, which Kafka gives no password; remove this key"
        }
        _ => "Shale does not implement this SSL setting, so it would have no effect; remove it",
    };
    Some(reason.to_string())
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

    fn named(listeners: &[Listener]) -> Vec<NamedListener<'_>> {
        listeners
            .iter()
            .map(|l| NamedListener {
                name: &l.name,
                security_protocol: &l.security_protocol,
            })
            .collect()
    }

    fn props(pairs: &[(&str, &str)]) -> StaticProperties {
        let mut props = StaticProperties::default();
        for (k, v) in pairs {
            props.set(k, v, ValueOrigin::File);
        }
        props
    }

    #[test]
    fn every_kafka_protocol_is_served() {
        for protocol in ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] {
            check_listener("listeners", &listener(protocol)).unwrap();
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
    fn unserved_tls_and_sasl_keys_are_refused_by_name() {
        let listeners = [listener("SSL"), {
            let mut l = listener("PLAINTEXT");
            l.name = "PLAIN".to_string();
            l
        }];
        for key in [
            "ssl.principal.mapping.rules",
            "ssl.engine.factory.class",
            "ssl.key.password",
            "ssl.keystore.password",
            "ssl.truststore.password",
            "ssl.keymanager.algorithm",
            "sasl.jaas.config",
            "sasl.server.max.receive.size",
            "listener.name.sasl_ssl.plain.sasl.jaas.config",
            "listener.name.external.sasl.enabled.mechanisms",
            "listener.name.external.ssl.principal.mapping.rules",
            // Not SSL, or no such listener: the override would have no effect.
            "listener.name.plain.ssl.keystore.location",
            "listener.name.other.ssl.keystore.location",
            // Per-listener overrides of other keys are not served.
            "listener.name.external.max.connections",
            "listener.name.external",
        ] {
            let err = check_keys(&props(&[(key, "x")]), &named(&listeners))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{err}");
        }
    }

    #[test]
    fn sasl_listener_keys_pass_and_other_mechanisms_keys_are_refused() {
        let listeners = [listener("SASL_SSL")];
        for key in [
            "sasl.enabled.mechanisms",
            "listener.name.external.sasl.enabled.mechanisms",
            "listener.name.external.plain.sasl.jaas.config",
            "listener.name.external.scram-sha-256.sasl.jaas.config",
            "listener.name.external.scram-sha-512.sasl.jaas.config",
            "listener.name.external.oauthbearer.sasl.jaas.config",
            "listener.name.external.ssl.keystore.location",
        ] {
            check_keys(&props(&[(key, "x")]), &named(&listeners)).unwrap();
        }
        // OAUTHBEARER is served with Kafka's unsecured validator only.
        for key in [
            "sasl.oauthbearer.jwks.endpoint.url",
            "sasl.oauthbearer.expected.audience",
            "sasl.oauthbearer.expected.issuer",
            "sasl.server.callback.handler.class",
            "listener.name.external.oauthbearer.sasl.server.callback.handler.class",
            "listener.name.external.oauthbearer.sasl.oauthbearer.jwks.endpoint.url",
        ] {
            let err = check_keys(&props(&[(key, "x")]), &named(&listeners))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{err}");
            assert!(err.contains("JWKS"), "{err}");
        }
        for key in [
            "listener.name.external.scram-sha-1.sasl.jaas.config",
            "listener.name.external.gssapi.sasl.jaas.config",
            "listener.name.external.sasl.server.callback.handler.class",
        ] {
            let err = check_keys(&props(&[(key, "x")]), &named(&listeners))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{err}");
        }
        // A SASL_PLAINTEXT listener has no TLS to configure.
        let plain = [listener("SASL_PLAINTEXT")];
        let key = "listener.name.external.ssl.keystore.location";
        let err = check_keys(&props(&[(key, "x")]), &named(&plain))
            .unwrap_err()
            .to_string();
        assert!(err.contains("SASL_PLAINTEXT"), "{err}");
    }

    #[test]
    fn served_ssl_keys_and_their_listener_overrides_pass() {
        let listeners = [listener("SSL")];
        for key in SERVED_SSL_KEYS {
            check_keys(&props(&[(key, "x")]), &named(&listeners)).unwrap();
            let prefixed = format!("listener.name.external.{key}");
            check_keys(&props(&[(&prefixed, "x")]), &named(&listeners)).unwrap();
        }
    }
}
