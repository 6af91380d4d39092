//! SASL listeners (SASL_PLAINTEXT, SASL_SSL): the mechanisms each one serves and, for PLAIN,
//! its users, read from Kafka's keys before anything binds.
//!
//! Kafka's default `sasl.enabled.mechanisms` is GSSAPI, which Shale does not serve, so a SASL
//! listener needs the key set (globally or as `listener.name.<listener>.sasl.enabled.mechanisms`).
//! PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are served; GSSAPI is refused by
//! name. As on a Kafka broker, each enabled mechanism needs its listener's JAAS entry,
//! `listener.name.<listener>.<mechanism in lower case>.sasl.jaas.config`: PLAIN's holds the
//! users (`user_<name>="<password>"` options of a `PlainLoginModule` entry); SCRAM's is a
//! `ScramLoginModule` entry holding no users, since SCRAM credentials live in the cluster
//! metadata (AlterUserScramCredentials) and are looked up when a client authenticates.
//! OAUTHBEARER's is an `OAuthBearerLoginModule` entry whose `unsecuredValidator*` options
//! configure Kafka's default broker-side validator, the unsecured one: it is served only while
//! no `oauthbearer.sasl.server.callback.handler.class` is set (that key, and every
//! `sasl.oauthbearer.*` key of JWKS validation, is refused in `security`). It trusts any
//! well-formed token, as Kafka documents: for test environments only.

use std::sync::Arc;

use shale_auth::jaas::{JaasEntry, SCRAM_LOGIN_MODULE};
use shale_auth::oauthbearer::OAUTHBEARER_LOGIN_MODULE;
use shale_auth::scram::TOKEN_AUTH_EXTENSION;
use shale_auth::{Mechanism, PlainUsers, ScramMechanism, UnsecuredValidatorOptions};

use super::error::ConfigError;
use super::listener::Listener;
use super::static_props::StaticProperties;
use super::tls::listener_prefix;

/// The key listing a listener's mechanisms (globally, or after a listener's prefix).
pub(crate) const ENABLED_MECHANISMS_KEY: &str = "sasl.enabled.mechanisms";

/// PLAIN's JAAS entry, after a listener's prefix.
pub(crate) const PLAIN_JAAS_KEY: &str = "plain.sasl.jaas.config";

/// The SCRAM mechanisms' JAAS entries, after a listener's prefix.
pub(crate) const SCRAM_JAAS_KEYS: [&str; 2] = [
    "scram-sha-256.sasl.jaas.config",
    "scram-sha-512.sasl.jaas.config",
];

/// OAUTHBEARER's JAAS entry, after a listener's prefix.
pub(crate) const OAUTHBEARER_JAAS_KEY: &str = "oauthbearer.sasl.jaas.config";

/// Mechanisms Kafka knows that Shale does not serve.
const UNSERVED_MECHANISMS: &[&str] = &["GSSAPI"];

/// The options of a broker's `ScramLoginModule` entry that Kafka reads: the credentials the
/// broker itself would log in with as a client of that listener, which only an inter-broker
/// listener does (Shale's brokers talk to each other in plain text), exactly as on a Kafka
/// broker whose listener is not the inter-broker one.
const SCRAM_LOGIN_OPTIONS: &[&str] = &["username", "password"];

/// Whether a listener of this security protocol authenticates with SASL.
pub(crate) fn is_sasl_protocol(protocol: &str) -> bool {
    matches!(protocol, "SASL_PLAINTEXT" | "SASL_SSL")
}

/// The SASL side of one SASL listener, built at start-up.
#[derive(Clone, Debug)]
pub struct ListenerSasl {
    pub listener_name: String,
    /// In the order of `sasl.enabled.mechanisms`, as SaslHandshake lists them.
    pub mechanisms: Vec<Mechanism>,
    /// PLAIN's users, when PLAIN is enabled.
    pub plain_users: Option<Arc<PlainUsers>>,
    /// How OAUTHBEARER tokens are checked (Kafka's unsecured validator), when it is enabled.
    pub oauthbearer: Option<Arc<UnsecuredValidatorOptions>>,
}

fn error(key: &str, listener: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Sasl {
        key: key.to_string(),
        scope: format!("SASL listener {listener}"),
        reason: reason.into(),
    }
}

/// Reads every SASL listener's mechanisms and users.
pub(crate) fn listener_sasl(
    props: &StaticProperties,
    listeners: &[Listener],
) -> Result<Vec<ListenerSasl>, ConfigError> {
    listeners
        .iter()
        .filter(|l| is_sasl_protocol(&l.security_protocol))
        .map(|l| read_listener(props, l))
        .collect()
}

fn read_listener(props: &StaticProperties, l: &Listener) -> Result<ListenerSasl, ConfigError> {
    let prefix = listener_prefix(&l.name);
    let prefixed = format!("{prefix}{ENABLED_MECHANISMS_KEY}");
    let (key, value) = match props.get(&prefixed) {
        Some(v) => (prefixed, v),
        None => match props.get(ENABLED_MECHANISMS_KEY) {
            Some(v) => (ENABLED_MECHANISMS_KEY.to_string(), v),
            None => {
                return Err(error(
                    ENABLED_MECHANISMS_KEY,
                    &l.name,
                    "not set; Kafka's default is GSSAPI, which Shale does not serve: set \
                     sasl.enabled.mechanisms=PLAIN",
                ))
            }
        },
    };
    let mut mechanisms = Vec::new();
    for name in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let mechanism = match Mechanism::from_name(name) {
            Some(mechanism) => mechanism,
            None if UNSERVED_MECHANISMS.contains(&name) => {
                return Err(error(
                    &key,
                    &l.name,
                    format!(
                        "mechanism {name} is not served; Shale serves PLAIN, SCRAM-SHA-256, \
                         SCRAM-SHA-512 and OAUTHBEARER"
                    ),
                ))
            }
            _ => {
                return Err(error(
                    &key,
                    &l.name,
                    format!(
                        "{name} is not a SASL mechanism Kafka knows (names are case-sensitive)"
                    ),
                ))
            }
        };
        if !mechanisms.contains(&mechanism) {
            mechanisms.push(mechanism);
        }
    }
    if mechanisms.is_empty() {
        return Err(error(&key, &l.name, "at least one mechanism is required"));
    }
    let jaas_key = format!("{prefix}{PLAIN_JAAS_KEY}");
    let plain_users =
        match (mechanisms.contains(&Mechanism::Plain), props.get(&jaas_key)) {
            (true, Some(text)) => {
                let users = PlainUsers::from_jaas_config(text)
                    .map_err(|e| error(&jaas_key, &l.name, e.to_string()))?;
                Some(Arc::new(users))
            }
            (true, None) => {
                return Err(error(
                    &jaas_key,
                    &l.name,
                    "not set; PLAIN needs a PlainLoginModule entry with the users, e.g. \
                 org.apache.kafka.common.security.plain.PlainLoginModule required \
                 user_alice=\"alice-secret\";",
                ))
            }
            (false, Some(_)) => return Err(error(
                &jaas_key,
                &l.name,
                "PLAIN is not in the listener's sasl.enabled.mechanisms, so this key would have \
                 no effect; remove it",
            )),
            (false, None) => None,
        };
    for (scram, jaas_key) in ScramMechanism::ALL.into_iter().zip(SCRAM_JAAS_KEYS) {
        let jaas_key = format!("{prefix}{jaas_key}");
        match (
            mechanisms.contains(&Mechanism::Scram(scram)),
            props.get(&jaas_key),
        ) {
            (true, Some(text)) => {
                check_scram_entry(text).map_err(|r| error(&jaas_key, &l.name, r))?
            }
            (true, None) => {
                return Err(error(
                    &jaas_key,
                    &l.name,
                    format!(
                        "not set; {scram} needs a ScramLoginModule entry, as on a Kafka broker: \
                         {SCRAM_LOGIN_MODULE} required; (its users are created with \
                         AlterUserScramCredentials, e.g. kafka-configs.sh --alter --add-config \
                         '{scram}=[password=...]' --entity-type users --entity-name <user>)"
                    ),
                ))
            }
            (false, Some(_)) => {
                return Err(error(
                    &jaas_key,
                    &l.name,
                    format!(
                        "{scram} is not in the listener's sasl.enabled.mechanisms, so this key \
                         would have no effect; remove it"
                    ),
                ))
            }
            (false, None) => {}
        }
    }
    let oauthbearer = read_oauthbearer(props, &prefix, l, &mechanisms)?;
    Ok(ListenerSasl {
        listener_name: l.name.clone(),
        mechanisms,
        plain_users,
        oauthbearer,
    })
}

/// OAUTHBEARER's `OAuthBearerLoginModule` entry, read into the unsecured validator's options.
fn read_oauthbearer(
    props: &StaticProperties,
    prefix: &str,
    l: &Listener,
    mechanisms: &[Mechanism],
) -> Result<Option<Arc<UnsecuredValidatorOptions>>, ConfigError> {
    let jaas_key = format!("{prefix}{OAUTHBEARER_JAAS_KEY}");
    match (
        mechanisms.contains(&Mechanism::OAuthBearer),
        props.get(&jaas_key),
    ) {
        (true, Some(text)) => {
            let options = UnsecuredValidatorOptions::from_jaas_config(text)
                .map_err(|e| error(&jaas_key, &l.name, e.to_string()))?;
            Ok(Some(Arc::new(options)))
        }
        (true, None) => Err(error(
            &jaas_key,
            &l.name,
            format!(
                "not set; OAUTHBEARER needs an OAuthBearerLoginModule entry, as on a Kafka \
                 broker: {OAUTHBEARER_LOGIN_MODULE} required unsecuredLoginStringClaim_sub=\"admin\";"
            ),
        )),
        (false, Some(_)) => Err(error(
            &jaas_key,
            &l.name,
            "OAUTHBEARER is not in the listener's sasl.enabled.mechanisms, so this key would \
             have no effect; remove it",
        )),
        (false, None) => Ok(None),
    }
}

/// A SCRAM mechanism's JAAS value: one `ScramLoginModule` entry with no options but the
/// broker's own client login. `tokenauth` asks for delegation tokens, which are not served.
fn check_scram_entry(text: &str) -> Result<(), String> {
    let entry = JaasEntry::parse_single(text).map_err(|e| e.to_string())?;
    if entry.login_module != SCRAM_LOGIN_MODULE {
        return Err(format!(
            "JAAS config names login module '{}', but SCRAM needs {SCRAM_LOGIN_MODULE}",
            entry.login_module
        ));
    }
    for option in entry.options.keys() {
        if option == TOKEN_AUTH_EXTENSION {
            return Err(format!(
                "option {option} asks for delegation-token authentication, which Shale does not \
                 serve; remove it"
            ));
        }
        if !SCRAM_LOGIN_OPTIONS.contains(&option.as_str()) {
            return Err(format!(
                "option {option} of the ScramLoginModule entry is not read by Shale, so it \
                 would have no effect; remove it"
            ));
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

    fn props(pairs: &[(&str, &str)]) -> StaticProperties {
        let mut props = StaticProperties::default();
        for (k, v) in pairs {
            props.set(k, v, ValueOrigin::File);
        }
        props
    }

    const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                        user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

    #[test]
    fn plain_users_come_from_the_listener_jaas_entry() {
        let sasl = listener_sasl(
            &props(&[
                ("sasl.enabled.mechanisms", "PLAIN"),
                ("listener.name.external.plain.sasl.jaas.config", JAAS),
            ]),
            &[listener("SASL_PLAINTEXT"), {
                let mut l = listener("PLAINTEXT");
                l.name = "PLAIN".to_string();
                l
            }],
        )
        .unwrap();
        assert_eq!(sasl.len(), 1);
        assert_eq!(sasl[0].listener_name, "EXTERNAL");
        assert_eq!(sasl[0].mechanisms, vec![Mechanism::Plain]);
        let users = sasl[0].plain_users.as_ref().unwrap();
        assert!(users.contains("alice") && users.contains("bob"));
        assert_eq!(users.len(), 2);
    }

    const SCRAM_JAAS: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required;";

    #[test]
    fn scram_mechanisms_are_served_with_their_login_module_entries() {
        let sasl = listener_sasl(
            &props(&[
                (
                    "listener.name.external.sasl.enabled.mechanisms",
                    "SCRAM-SHA-512,PLAIN,SCRAM-SHA-256",
                ),
                ("listener.name.external.plain.sasl.jaas.config", JAAS),
                (
                    "listener.name.external.scram-sha-256.sasl.jaas.config",
                    SCRAM_JAAS,
                ),
                (
                    "listener.name.external.scram-sha-512.sasl.jaas.config",
                    "org.apache.kafka.common.security.scram.ScramLoginModule required \
                     username=\"admin\" password=\"admin-secret\";",
                ),
            ]),
            &[listener("SASL_SSL")],
        )
        .unwrap();
        assert_eq!(
            sasl[0].mechanisms,
            vec![
                Mechanism::Scram(ScramMechanism::Sha512),
                Mechanism::Plain,
                Mechanism::Scram(ScramMechanism::Sha256),
            ]
        );
        let scram_only = listener_sasl(
            &props(&[
                ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
                (
                    "listener.name.external.scram-sha-256.sasl.jaas.config",
                    SCRAM_JAAS,
                ),
            ]),
            &[listener("SASL_PLAINTEXT")],
        )
        .unwrap();
        assert!(scram_only[0].plain_users.is_none());
    }

    const OAUTH_JAAS: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                              required unsecuredLoginStringClaim_sub=\"admin\" \
                              unsecuredValidatorRequiredScope=\"kafka\";";

    #[test]
    fn oauthbearer_reads_the_unsecured_validator_options_of_its_entry() {
        let sasl = listener_sasl(
            &props(&[
                (
                    "listener.name.external.sasl.enabled.mechanisms",
                    "OAUTHBEARER",
                ),
                (
                    "listener.name.external.oauthbearer.sasl.jaas.config",
                    OAUTH_JAAS,
                ),
            ]),
            &[listener("SASL_PLAINTEXT")],
        )
        .unwrap();
        assert_eq!(sasl[0].mechanisms, vec![Mechanism::OAuthBearer]);
        let options = sasl[0].oauthbearer.as_ref().unwrap();
        assert_eq!(options.required_scope, vec!["kafka".to_string()]);
        assert_eq!(options.principal_claim_name, "sub");
        assert!(sasl[0].plain_users.is_none());
    }

    #[test]
    fn the_listener_override_wins_and_each_refusal_names_its_key() {
        let ok = listener_sasl(
            &props(&[
                ("sasl.enabled.mechanisms", "GSSAPI"),
                ("listener.name.external.sasl.enabled.mechanisms", "PLAIN"),
                ("listener.name.external.plain.sasl.jaas.config", JAAS),
            ]),
            &[listener("SASL_SSL")],
        );
        assert!(ok.is_ok(), "{ok:?}");
        // The properties, the key the error names, a text it holds.
        type Case = (
            &'static [(&'static str, &'static str)],
            &'static str,
            &'static str,
        );
        let cases: &[Case] = &[
            (&[], "sasl.enabled.mechanisms", "GSSAPI"),
            (
                &[("sasl.enabled.mechanisms", "SCRAM-SHA-256")],
                "listener.name.external.scram-sha-256.sasl.jaas.config",
                "ScramLoginModule",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
                    (
                        "listener.name.external.scram-sha-512.sasl.jaas.config",
                        JAAS,
                    ),
                ],
                "listener.name.external.scram-sha-512.sasl.jaas.config",
                "SCRAM needs org.apache.kafka.common.security.scram.ScramLoginModule",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
                    (
                        "listener.name.external.scram-sha-512.sasl.jaas.config",
                        "org.apache.kafka.common.security.scram.ScramLoginModule required \
                         tokenauth=true;",
                    ),
                ],
                "listener.name.external.scram-sha-512.sasl.jaas.config",
                "delegation-token",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
                    (
                        "listener.name.external.scram-sha-256.sasl.jaas.config",
                        "org.apache.kafka.common.security.scram.ScramLoginModule required \
                         user_alice=\"x\";",
                    ),
                ],
                "listener.name.external.scram-sha-256.sasl.jaas.config",
                "option user_alice",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
                    (
                        "listener.name.external.scram-sha-256.sasl.jaas.config",
                        SCRAM_JAAS,
                    ),
                    (
                        "listener.name.external.scram-sha-512.sasl.jaas.config",
                        SCRAM_JAAS,
                    ),
                ],
                "listener.name.external.scram-sha-512.sasl.jaas.config",
                "not in the listener's sasl.enabled.mechanisms",
            ),
            (
                &[("listener.name.external.sasl.enabled.mechanisms", "GSSAPI")],
                "listener.name.external.sasl.enabled.mechanisms",
                "GSSAPI is not served",
            ),
            (
                &[("sasl.enabled.mechanisms", "OAUTHBEARER")],
                "listener.name.external.oauthbearer.sasl.jaas.config",
                "OAuthBearerLoginModule",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "OAUTHBEARER"),
                    ("listener.name.external.oauthbearer.sasl.jaas.config", JAAS),
                ],
                "listener.name.external.oauthbearer.sasl.jaas.config",
                "OAUTHBEARER needs org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "OAUTHBEARER"),
                    (
                        "listener.name.external.oauthbearer.sasl.jaas.config",
                        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                         required unsecuredValidatorAllowableClockSkewMs=\"-5\";",
                    ),
                ],
                "listener.name.external.oauthbearer.sasl.jaas.config",
                "must not be negative",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "PLAIN"),
                    ("listener.name.external.plain.sasl.jaas.config", JAAS),
                    ("listener.name.external.oauthbearer.sasl.jaas.config", OAUTH_JAAS),
                ],
                "listener.name.external.oauthbearer.sasl.jaas.config",
                "not in the listener's sasl.enabled.mechanisms",
            ),
            (
                &[("sasl.enabled.mechanisms", "plain")],
                "sasl.enabled.mechanisms",
                "not a SASL mechanism",
            ),
            (
                &[("sasl.enabled.mechanisms", " , ")],
                "sasl.enabled.mechanisms",
                "at least one",
            ),
            (
                &[("sasl.enabled.mechanisms", "PLAIN")],
                "listener.name.external.plain.sasl.jaas.config",
                "PlainLoginModule",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "PLAIN"),
                    ("listener.name.external.plain.sasl.jaas.config", "nonsense"),
                ],
                "listener.name.external.plain.sasl.jaas.config",
                "",
            ),
            (
                &[
                    ("sasl.enabled.mechanisms", "PLAIN"),
                    (
                        "listener.name.external.plain.sasl.jaas.config",
                        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                    ),
                ],
                "listener.name.external.plain.sasl.jaas.config",
                "ScramLoginModule",
            ),
        ];
        for (pairs, key, text) in cases {
            let err = listener_sasl(&props(pairs), &[listener("SASL_PLAINTEXT")])
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{err}");
            assert!(err.contains(text), "{err}");
            assert!(err.contains("EXTERNAL"), "{err}");
        }
    }
}
