//! SSL listeners: Kafka's `ssl.*` keys, and their `listener.name.<listener>.ssl.*` overrides
//! (which win for that listener), read into a rustls server configuration before anything
//! binds. Only PEM key material is read (Kafka's `ssl.keystore.type=PEM`); a key this module
//! does not honour is refused by `security`, never accepted and ignored.

use std::sync::Arc;

use rustls::crypto::ring::{cipher_suite, default_provider};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

use super::client_verifier::KafkaAlertsVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};

use super::error::ConfigError;
use super::listener::Listener;
use super::static_props::StaticProperties;

/// The `ssl.*` keys this module reads; any other `ssl.*` key is refused.
pub(crate) const SERVED_SSL_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm",
];

/// Kafka's default `ssl.enabled.protocols`.
const ENABLED_PROTOCOLS_DEFAULT: &[&str] = &["TLSv1.2", "TLSv1.3"];

/// Kafka's `ssl.cipher.suites` names (IANA's, as the JDK spells them) of the suites rustls
/// implements; a name outside this table is refused rather than silently dropped.
const CIPHER_SUITES: &[(&str, SupportedCipherSuite)] = &[
    (
        "TLS_AES_128_GCM_SHA256",
        cipher_suite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_AES_256_GCM_SHA384",
        cipher_suite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// The TLS side of one SSL listener, built at start-up.
#[derive(Clone, Debug)]
pub struct ListenerTls {
    pub listener_name: String,
    pub server_config: Arc<ServerConfig>,
}

/// `ssl.client.auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientAuth {
    None,
    /// Verified when the client offers one; a client without a certificate is let in.
    Requested,
    Required,
}

/// Where a listener's settings come from: its `listener.name.<lower-case name>.` prefix first,
/// then the global key. Errors name the key actually used and the listener.
pub(super) struct Lookup<'a> {
    pub(super) props: &'a StaticProperties,
    pub(super) prefix: Option<String>,
    pub(super) scope: String,
}

impl Lookup<'_> {
    /// The value of `key` for this listener and the name it was found under.
    pub(super) fn get(&self, key: &str) -> Option<(String, &str)> {
        if let Some(prefix) = &self.prefix {
            let prefixed = format!("{prefix}{key}");
            if let Some(v) = self.props.get(&prefixed) {
                return Some((prefixed, v));
            }
        }
        self.props.get(key).map(|v| (key.to_string(), v))
    }

    pub(super) fn error(&self, key: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError::Ssl {
            key: key.to_string(),
            scope: self.scope.clone(),
            reason: reason.into(),
        }
    }
}

/// Settings of one listener, each read and checked; absent ones stay `None`.
pub(super) struct SslSettings {
    /// The certificate chain (leaf first) and its private key.
    pub(super) identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    /// The CAs client certificates must chain to, and the key they came from.
    pub(super) trusted: Option<(RootCertStore, String)>,
    client_auth: (ClientAuth, String),
    pub(super) versions: Vec<&'static SupportedProtocolVersion>,
    /// `None`: every suite rustls offers (Kafka's default of all the JDK enables).
    pub(super) cipher_suites: Option<(Vec<SupportedCipherSuite>, String)>,
    /// `ssl.endpoint.identification.algorithm`: whether this node, dialling out, checks that
    /// the peer's certificate names the host it dialled (Kafka's default, `https`).
    pub(super) verify_hostname: bool,
}

impl SslSettings {
    /// Whether a client without a certificate is refused (`ssl.client.auth=required`).
    pub(super) fn requires_client_certificates(&self) -> bool {
        self.client_auth.0 == ClientAuth::Required
    }
}

/// Builds the server configuration of every SSL listener in `listeners`. With none, the global
/// `ssl.*` values that are set are still read and checked, so a broken keystore path or value
/// fails now rather than when an SSL listener is added.
pub(crate) fn listener_tls(
    props: &StaticProperties,
    listeners: &[Listener],
) -> Result<Vec<ListenerTls>, ConfigError> {
    let ssl_listeners: Vec<&Listener> = listeners
        .iter()
        .filter(|l| matches!(l.security_protocol.as_str(), "SSL" | "SASL_SSL"))
        .collect();
    if ssl_listeners.is_empty() {
        let global = Lookup {
            props,
            prefix: None,
            scope: "the global SSL settings (no listener is SSL)".to_string(),
        };
        read_settings(&global)?;
        return Ok(Vec::new());
    }
    ssl_listeners
        .into_iter()
        .map(|l| {
            let lookup = Lookup {
                props,
                prefix: Some(listener_prefix(&l.name)),
                scope: format!("{} listener {}", l.security_protocol, l.name),
            };
            let settings = read_settings(&lookup)?;
            Ok(ListenerTls {
                listener_name: l.name.clone(),
                server_config: Arc::new(server_config(&lookup, settings)?),
            })
        })
        .collect()
}

/// Kafka's per-listener prefix: `listener.name.` and the listener name in lower case.
pub(crate) fn listener_prefix(listener_name: &str) -> String {
    format!("listener.name.{}.", listener_name.to_ascii_lowercase())
}

pub(super) fn read_settings(lookup: &Lookup<'_>) -> Result<SslSettings, ConfigError> {
    let identity = read_keystore(lookup)?;
    let trusted = read_truststore(lookup)?;
    let client_auth = match lookup.get("ssl.client.auth") {
        None => (ClientAuth::None, "ssl.client.auth".to_string()),
        Some((key, value)) => {
            let auth = match value.trim().to_ascii_lowercase().as_str() {
                "none" => ClientAuth::None,
                "requested" => ClientAuth::Requested,
                "required" => ClientAuth::Required,
                _ => {
                    return Err(lookup.error(
                        &key,
                        format!("{value:?} is not one of none, requested, required"),
                    ))
                }
            };
            (auth, key)
        }
    };
    let versions = match lookup.get("ssl.enabled.protocols") {
        None => ENABLED_PROTOCOLS_DEFAULT
            .iter()
            .filter_map(|p| protocol_version(p))
            .collect(),
        Some((key, value)) => {
            let names = split_list(value);
            if names.is_empty() {
                return Err(lookup.error(&key, "at least one protocol is required"));
            }
            let mut versions = Vec::new();
            for name in &names {
                let version = protocol_version(name).ok_or_else(|| {
                    lookup.error(
                        &key,
                        format!("{name} is not served; Shale speaks TLSv1.2 and TLSv1.3"),
                    )
                })?;
                if !versions.contains(&version) {
                    versions.push(version);
                }
            }
            versions
        }
    };
    // Kafka names the SSLContext's protocol family here; on a broker the enabled versions
    // come from ssl.enabled.protocols, so the accepted values change nothing.
    if let Some((key, value)) = lookup.get("ssl.protocol") {
        if !matches!(value.trim(), "TLSv1.3" | "TLSv1.2" | "TLS") {
            return Err(lookup.error(
                &key,
                format!("{value:?} is not served; use TLSv1.3, TLSv1.2 or TLS"),
            ));
        }
    }
    let cipher_suites = match lookup.get("ssl.cipher.suites") {
        None => None,
        Some((key, value)) => {
            let names = split_list(value);
            if names.is_empty() {
                None
            } else {
                let mut suites = Vec::new();
                for name in &names {
                    let suite = CIPHER_SUITES
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, s)| *s)
                        .ok_or_else(|| {
                            lookup.error(
                                &key,
                                format!(
                                    "cipher suite {name} is not served; Shale serves {}",
                                    CIPHER_SUITES
                                        .iter()
                                        .map(|(n, _)| *n)
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            )
                        })?;
                    suites.push(suite);
                }
                Some((suites, key))
            }
        }
    };
    // A client-side setting: a broker verifies host names when it connects out to other
    // brokers and to the controllers (`tls_client`), with Kafka's default of https.
    let verify_hostname = match lookup.get("ssl.endpoint.identification.algorithm") {
        None => true,
        Some((key, value)) => {
            let value = value.trim();
            if value.is_empty() {
                false
            } else if value.eq_ignore_ascii_case("https") {
                true
            } else {
                return Err(lookup.error(
                    &key,
                    format!(
                        "{value:?} is not an algorithm Kafka knows; use https or leave it empty"
                    ),
                ));
            }
        }
    };
    Ok(SslSettings {
        identity,
        trusted,
        client_auth,
        versions,
        cipher_suites,
        verify_hostname,
    })
}

/// A comma-separated list value, entries trimmed, empty ones dropped.
fn split_list(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

fn protocol_version(name: &str) -> Option<&'static SupportedProtocolVersion> {
    match name {
        "TLSv1.2" => Some(&rustls::version::TLS12),
        "TLSv1.3" => Some(&rustls::version::TLS13),
        _ => None,
    }
}

/// Kafka's `*.type` default is JKS; only PEM is read here, so a store given as a file
/// (`location_key`) must say PEM. Inline PEM values imply it.
fn check_store_type(
    lookup: &Lookup<'_>,
    type_key: &str,
    location_key: Option<&str>,
) -> Result<(), ConfigError> {
    match lookup.get(type_key) {
        Some((_, value)) if value.trim().eq_ignore_ascii_case("PEM") => Ok(()),
        Some((key, value)) => Err(lookup.error(
            &key,
            format!(
                "store type {value:?} is not served; Shale reads PEM only (set {type_key}=PEM)"
            ),
        )),
        None => match location_key {
            Some(location_key) => Err(lookup.error(
                type_key,
                format!(
                    "{location_key} is read as PEM only, and Kafka's default store type is JKS; \
                     set {type_key}=PEM"
                ),
            )),
            None => Ok(()),
        },
    }
}

/// The PEM text of a `*.location` key's file.
fn read_location(lookup: &Lookup<'_>, key: &str, path: &str) -> Result<String, ConfigError> {
    std::fs::read_to_string(path.trim())
        .map_err(|e| lookup.error(key, format!("cannot read {}: {e}", path.trim())))
}

fn read_keystore(
    lookup: &Lookup<'_>,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, ConfigError> {
    let location = lookup.get("ssl.keystore.location");
    let chain = lookup.get("ssl.keystore.certificate.chain");
    let key = lookup.get("ssl.keystore.key");
    match (location, chain, key) {
        (None, None, None) => {
            check_store_type(lookup, "ssl.keystore.type", None)?;
            Ok(None)
        }
        (Some((loc_key, path)), None, None) => {
            check_store_type(lookup, "ssl.keystore.type", Some(&loc_key))?;
            let text = read_location(lookup, &loc_key, path)?;
            let certs = pem_certificates(lookup, &loc_key, &text)?;
            let private_key = pem_private_key(lookup, &loc_key, &text)?;
            Ok(Some((certs, private_key)))
        }
        (None, Some((chain_key, chain)), Some((key_key, key))) => {
            check_store_type(lookup, "ssl.keystore.type", None)?;
            let certs = pem_certificates(lookup, &chain_key, chain)?;
            let private_key = pem_private_key(lookup, &key_key, key)?;
            Ok(Some((certs, private_key)))
        }
        (Some((loc_key, _)), _, _) => Err(lookup.error(
            &loc_key,
            "give the keystore either as a file or inline (ssl.keystore.certificate.chain and \
             ssl.keystore.key), not both",
        )),
        (None, Some((k, _)), None) | (None, None, Some((k, _))) => Err(lookup.error(
            &k,
            "an inline PEM keystore needs both ssl.keystore.certificate.chain and \
             ssl.keystore.key",
        )),
    }
}

fn read_truststore(lookup: &Lookup<'_>) -> Result<Option<(RootCertStore, String)>, ConfigError> {
    let (key, text) =
        match (
            lookup.get("ssl.truststore.location"),
            lookup.get("ssl.truststore.certificates"),
        ) {
            (None, None) => {
                check_store_type(lookup, "ssl.truststore.type", None)?;
                return Ok(None);
            }
            (Some((key, path)), None) => {
                check_store_type(lookup, "ssl.truststore.type", Some(&key))?;
                let text = read_location(lookup, &key, path)?;
                (key, text)
            }
            (None, Some((key, text))) => {
                check_store_type(lookup, "ssl.truststore.type", None)?;
                (key, text.to_string())
            }
            (Some((key, _)), Some(_)) => return Err(lookup.error(
                &key,
                "give the truststore either as a file or inline (ssl.truststore.certificates), \
                 not both",
            )),
        };
    let mut roots = RootCertStore::empty();
    for cert in pem_certificates(lookup, &key, &text)? {
        roots
            .add(cert)
            .map_err(|e| lookup.error(&key, format!("not a usable CA certificate: {e}")))?;
    }
    Ok(Some((roots, key)))
}

fn pem_certificates(
    lookup: &Lookup<'_>,
    key: &str,
    text: &str,
) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let certs = CertificateDer::pem_slice_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| lookup.error(key, format!("malformed PEM: {e}")))?;
    if certs.is_empty() {
        return Err(lookup.error(key, "no PEM CERTIFICATE block found"));
    }
    Ok(certs)
}

fn pem_private_key(
    lookup: &Lookup<'_>,
    key: &str,
    text: &str,
) -> Result<PrivateKeyDer<'static>, ConfigError> {
    if text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(lookup.error(
            key,
            "the private key is encrypted; Shale reads unencrypted PEM keys only \
             (ssl.key.password is not served)",
        ));
    }
    let mut found = None;
    for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(text.as_bytes()) {
        let (kind, der) = section.map_err(|e| lookup.error(key, format!("malformed PEM: {e}")))?;
        let private_key = match kind {
            SectionKind::PrivateKey => PrivateKeyDer::Pkcs8(der.into()),
            SectionKind::RsaPrivateKey => PrivateKeyDer::Pkcs1(der.into()),
            SectionKind::EcPrivateKey => PrivateKeyDer::Sec1(der.into()),
            _ => continue,
        };
        if found.is_some() {
            return Err(lookup.error(key, "more than one private key found"));
        }
        found = Some(private_key);
    }
    found.ok_or_else(|| lookup.error(key, "no PEM PRIVATE KEY block found"))
}

fn server_config(lookup: &Lookup<'_>, settings: SslSettings) -> Result<ServerConfig, ConfigError> {
    let Some((certs, private_key)) = settings.identity else {
        return Err(lookup.error(
            "ssl.keystore.location",
            "an SSL listener needs its certificate and key: ssl.keystore.type=PEM with \
             ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key",
        ));
    };
    let mut provider = default_provider();
    let suites_key = match settings.cipher_suites {
        Some((suites, key)) => {
            provider.cipher_suites = suites;
            key
        }
        None => "ssl.cipher.suites".to_string(),
    };
    let provider: Arc<CryptoProvider> = Arc::new(provider);
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&settings.versions)
        .map_err(|e| {
            lookup.error(
                &suites_key,
                format!("no cipher suite fits ssl.enabled.protocols: {e}"),
            )
        })?;
    let (auth, auth_key) = settings.client_auth;
    let builder = match auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Requested | ClientAuth::Required => {
            let Some((roots, trust_key)) = settings.trusted else {
                return Err(lookup.error(
                    &auth_key,
                    "client certificates are verified against the truststore: set \
                     ssl.truststore.type=PEM with ssl.truststore.location or \
                     ssl.truststore.certificates",
                ));
            };
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| lookup.error(&trust_key, format!("unusable truststore: {e}")))?;
            builder.with_client_cert_verifier(Arc::new(KafkaAlertsVerifier { inner: verifier }))
        }
    };
    let key_source = lookup
        .get("ssl.keystore.location")
        .or_else(|| lookup.get("ssl.keystore.key"))
        .map_or_else(|| "ssl.keystore.location".to_string(), |(k, _)| k);
    builder
        .with_single_cert(certs, private_key)
        .map_err(|e| lookup.error(&key_source, format!("unusable certificate or key: {e}")))
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
