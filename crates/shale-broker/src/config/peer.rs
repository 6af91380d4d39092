//! How this node reaches the other nodes, read from Kafka's keys before anything binds: the
//! inter-broker listener (replica fetches, transaction markers) and the controller listener
//! (Raft, observer fetches, forwarded controller requests), each dialled with the security
//! protocol `listener.security.protocol.map` gives it.
//!
//! - The inter-broker listener is `inter.broker.listener.name`, or the listener named after
//!   `security.inter.broker.protocol`, or `PLAINTEXT`; setting both keys is an error, and a
//!   broker must advertise it (Kafka's KafkaConfig rules and messages).
//! - The controller listener is the first of `controller.listener.names`.
//! - Over SSL and SASL_SSL this node verifies the peer against its truststore and presents its
//!   keystore (`tls_client`). Over SASL it authenticates with
//!   `sasl.mechanism.inter.broker.protocol` / `sasl.mechanism.controller.protocol` (Kafka's
//!   default for both is GSSAPI, which Shale does not serve: PLAIN must be named), with the
//!   `username` and `password` options of the listener's JAAS entry
//!   (`listener.name.<listener>.plain.sasl.jaas.config`), as a Kafka broker does. SCRAM
//!   between nodes is refused by name until it is served.
//! - On the controller port a connection that does not authenticate as a node can submit
//!   nothing: an SSL controller listener must require client certificates
//!   (`ssl.client.auth=required`), and a SASL one must enable the mechanism the nodes use.

use std::sync::Arc;

use rustls::ClientConfig;
use shale_auth::jaas::{JaasEntry, PLAIN_LOGIN_MODULE};

use super::error::ConfigError;
use super::listener::Listener;
use super::sasl::{is_sasl_protocol, ENABLED_MECHANISMS_KEY, PLAIN_JAAS_KEY};
use super::static_props::StaticProperties;
use super::tls::listener_prefix;
use super::tls_client;

pub(crate) const INTER_BROKER_MECHANISM_KEY: &str = "sasl.mechanism.inter.broker.protocol";
pub(crate) const CONTROLLER_MECHANISM_KEY: &str = "sasl.mechanism.controller.protocol";

/// How this node dials one listener of the other nodes.
#[derive(Clone)]
pub struct PeerClient {
    pub listener_name: String,
    pub security_protocol: String,
    /// The TLS client side, on SSL and SASL_SSL.
    pub tls: Option<Arc<ClientConfig>>,
    /// Who this node authenticates as, on SASL_PLAINTEXT and SASL_SSL.
    pub sasl: Option<SaslCredentials>,
}

impl std::fmt::Debug for PeerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerClient")
            .field("listener_name", &self.listener_name)
            .field("security_protocol", &self.security_protocol)
            .field("tls", &self.tls.is_some())
            .field("sasl", &self.sasl)
            .finish()
    }
}

/// SASL/PLAIN credentials this node presents to its peers.
#[derive(Clone)]
pub struct SaslCredentials {
    pub username: String,
    password: String,
}

impl SaslCredentials {
    pub fn password(&self) -> &str {
        &self.password
    }
}

impl std::fmt::Debug for SaslCredentials {
    // The password never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslCredentials")
            .field("mechanism", &"PLAIN")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// The protocol `listener.security.protocol.map` gives listener `name`.
pub(super) fn protocol_of<'a>(protocol_map: &'a [(String, String)], name: &str) -> Option<&'a str> {
    protocol_map
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, p)| p.as_str())
}

/// The inter-broker listener's name and protocol, by Kafka's rules. `advertised` are the
/// broker listeners this node advertises; a broker must advertise the inter-broker one.
pub(super) fn inter_broker_listener(
    props: &StaticProperties,
    advertised: &[Listener],
    protocol_map: &[(String, String)],
    is_broker: bool,
) -> Result<(String, String), ConfigError> {
    let named = props.get("inter.broker.listener.name").map(str::trim);
    let by_protocol = props.get("security.inter.broker.protocol").map(str::trim);
    let (key, name, protocol) = match (named, by_protocol) {
        (Some(name), Some(_)) => {
            return Err(invalid(
                "inter.broker.listener.name",
                name,
                "Only one of inter.broker.listener.name and security.inter.broker.protocol \
                 should be set.",
            ))
        }
        (Some(name), None) => {
            // Kafka's ListenerName.normalised: listener names are upper case.
            let name = name.to_ascii_uppercase();
            let Some(protocol) = protocol_of(protocol_map, &name) else {
                return Err(invalid(
                    "inter.broker.listener.name",
                    &name,
                    format!(
                        "Listener with name {name} defined in inter.broker.listener.name not \
                         found in listener.security.protocol.map."
                    ),
                ));
            };
            ("inter.broker.listener.name", name, protocol.to_string())
        }
        (None, Some(protocol)) => {
            if !matches!(
                protocol,
                "PLAINTEXT" | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL"
            ) {
                return Err(invalid(
                    "security.inter.broker.protocol",
                    protocol,
                    "not a security protocol Kafka knows (PLAINTEXT, SSL, SASL_PLAINTEXT, \
                     SASL_SSL)",
                ));
            }
            (
                "security.inter.broker.protocol",
                protocol.to_string(),
                protocol.to_string(),
            )
        }
        (None, None) => (
            "inter.broker.listener.name",
            "PLAINTEXT".to_string(),
            "PLAINTEXT".to_string(),
        ),
    };
    if is_broker && !advertised.iter().any(|l| l.name == name) {
        let options = advertised
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
            .join(",");
        return Err(invalid(
            key,
            &name,
            format!(
                "inter.broker.listener.name must be a listener name defined in \
                 advertised.listeners. The valid options based on currently configured \
                 listeners are {options} (without either key the inter-broker listener is \
                 PLAINTEXT; with security.inter.broker.protocol it is the listener named \
                 after the protocol)"
            ),
        ));
    }
    Ok((name, protocol))
}

/// The client side of the inter-broker listener.
pub(super) fn inter_broker_client(
    props: &StaticProperties,
    name: &str,
    protocol: &str,
) -> Result<PeerClient, ConfigError> {
    let purpose = "connections to other brokers";
    let client = peer_client(props, name, protocol, INTER_BROKER_MECHANISM_KEY, purpose)?;
    if client.sasl.is_some() && !enabled_mechanisms(props, name).contains(&"PLAIN") {
        return Err(invalid(
            INTER_BROKER_MECHANISM_KEY,
            "PLAIN",
            format!(
                "sasl.mechanism.inter.broker.protocol must be included in \
                 sasl.enabled.mechanisms when SASL is used for inter-broker communication \
                 (listener {name})"
            ),
        ));
    }
    Ok(client)
}

/// The client side of the controller listener (the first of `controller.listener.names`),
/// with the checks that keep a connection that is not a node's from submitting anything.
/// `voter_listener` is this node's own controller listener, when it is a voter.
pub(super) fn controller_client(
    props: &StaticProperties,
    controller_listener_names: &[String],
    protocol_map: &[(String, String)],
    voter_listener: Option<&Listener>,
) -> Result<PeerClient, ConfigError> {
    let Some(name) = controller_listener_names.first() else {
        return Err(invalid(
            "controller.listener.names",
            "",
            "a node of a quorum needs the name of the controllers' listener",
        ));
    };
    let Some(protocol) = protocol_of(protocol_map, name) else {
        return Err(invalid(
            "controller.listener.names",
            name,
            format!(
                "Controller listener with name {name} defined in controller.listener.names not \
                 found in listener.security.protocol.map"
            ),
        ));
    };
    let purpose = "connections to the controllers";
    let client = peer_client(props, name, protocol, CONTROLLER_MECHANISM_KEY, purpose)?;
    if protocol == "SSL" {
        // Over SSL a node is known by its certificate: it must have one to present.
        if !tls_client::has_keystore(props, name) {
            return Err(ConfigError::Ssl {
                key: "ssl.keystore.location".to_string(),
                scope: format!("{purpose} (SSL listener {name})"),
                reason: "the controllers recognise nodes by their certificates on an SSL \
                         controller listener: give this node a keystore (ssl.keystore.type=PEM \
                         with ssl.keystore.location)"
                    .to_string(),
            });
        }
        if voter_listener.is_some() && !tls_client::requires_client_certificates(props, name)? {
            let prefixed = format!("{}ssl.client.auth", listener_prefix(name));
            let key = if props.get(&prefixed).is_some() {
                prefixed
            } else {
                "ssl.client.auth".to_string()
            };
            return Err(ConfigError::Ssl {
                key,
                scope: format!("SSL controller listener {name}"),
                reason: "must be required: the controller port accepts only nodes, known by \
                         certificates signed by the truststore, and without client \
                         certificates anyone reaching it could submit controller requests"
                    .to_string(),
            });
        }
    }
    if client.sasl.is_some()
        && voter_listener.is_some()
        && !enabled_mechanisms(props, name).contains(&"PLAIN")
    {
        return Err(invalid(
            CONTROLLER_MECHANISM_KEY,
            "PLAIN",
            format!(
                "the voters authenticate to each other on controller listener {name} with \
                 PLAIN, which its sasl.enabled.mechanisms does not include"
            ),
        ));
    }
    Ok(client)
}

/// A listener's `sasl.enabled.mechanisms` (its override first).
fn enabled_mechanisms<'a>(props: &'a StaticProperties, name: &str) -> Vec<&'a str> {
    let prefixed = format!("{}{ENABLED_MECHANISMS_KEY}", listener_prefix(name));
    props
        .get(&prefixed)
        .or_else(|| props.get(ENABLED_MECHANISMS_KEY))
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

fn peer_client(
    props: &StaticProperties,
    name: &str,
    protocol: &str,
    mechanism_key: &str,
    purpose: &str,
) -> Result<PeerClient, ConfigError> {
    let tls = match protocol {
        "SSL" | "SASL_SSL" => Some(tls_client::client_config(props, name, protocol, purpose)?),
        _ => None,
    };
    let sasl = if is_sasl_protocol(protocol) {
        check_mechanism(props, mechanism_key, name)?;
        Some(credentials(props, name, purpose)?)
    } else {
        None
    };
    Ok(PeerClient {
        listener_name: name.to_string(),
        security_protocol: protocol.to_string(),
        tls,
        sasl,
    })
}

/// The mechanism nodes use with each other: PLAIN, the only one served between nodes.
fn check_mechanism(
    props: &StaticProperties,
    key: &str,
    listener_name: &str,
) -> Result<(), ConfigError> {
    let Some(value) = props.get(key).map(str::trim) else {
        return Err(invalid(
            key,
            "",
            format!(
                "not set, and listener {listener_name} uses SASL; Kafka's default is GSSAPI, \
                 which Shale does not serve: set {key}=PLAIN"
            ),
        ));
    };
    let reason = match value {
        "PLAIN" => return Ok(()),
        "SCRAM-SHA-256" | "SCRAM-SHA-512" => {
            "SCRAM between nodes is not served yet; nodes authenticate to each other with PLAIN"
        }
        "OAUTHBEARER" => {
            "OAUTHBEARER is served to clients only (unsecured tokens); nodes authenticate to each \
             other with PLAIN"
        }
        "GSSAPI" => "this mechanism is not served; nodes authenticate to each other with PLAIN",
        _ => "not a SASL mechanism Kafka knows (names are case-sensitive); use PLAIN",
    };
    Err(invalid(key, value, reason))
}

/// The `username` and `password` options of the listener's PLAIN JAAS entry: who this node
/// is to its peers (Kafka's PlainLoginModule client options).
fn credentials(
    props: &StaticProperties,
    listener_name: &str,
    purpose: &str,
) -> Result<SaslCredentials, ConfigError> {
    let key = format!("{}{PLAIN_JAAS_KEY}", listener_prefix(listener_name));
    let error = |reason: String| ConfigError::Sasl {
        key: key.clone(),
        scope: format!("{purpose} (listener {listener_name})"),
        reason,
    };
    let Some(text) = props.get(&key) else {
        return Err(error(
            "not set; this node authenticates to its peers with the username and password \
             options of a PlainLoginModule entry, e.g. \
             org.apache.kafka.common.security.plain.PlainLoginModule required \
             username=\"node\" password=\"node-secret\" user_node=\"node-secret\";"
                .to_string(),
        ));
    };
    let entry = JaasEntry::parse_single(text).map_err(|e| error(e.to_string()))?;
    if entry.login_module != PLAIN_LOGIN_MODULE {
        return Err(error(format!(
            "the entry's login module is {}, expected {PLAIN_LOGIN_MODULE}",
            entry.login_module
        )));
    }
    match (entry.option("username"), entry.option("password")) {
        (Some(username), Some(password)) => Ok(SaslCredentials {
            username: username.to_string(),
            password: password.to_string(),
        }),
        _ => Err(error(
            "the entry needs username and password options: the credentials this node \
             presents to its peers"
                .to_string(),
        )),
    }
}

#[cfg(test)]
#[path = "peer_tests.rs"]
mod tests;
