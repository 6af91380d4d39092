//! Why the configuration stops start-up.

/// A configuration problem that stops start-up; the message names the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid value {value:?} for configuration {key}: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    #[error("cannot read configuration file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("malformed override {0:?}: expected key=value")]
    MalformedOverride(String),
    #[error(
        "listener {listener} in {key} maps to unknown security protocol {protocol} \
         (listener.security.protocol.map); Kafka's are PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
    )]
    UnknownSecurityProtocol {
        key: String,
        listener: String,
        protocol: String,
    },
    #[error("configuration {key} of {scope}: {reason}")]
    Ssl {
        key: String,
        scope: String,
        reason: String,
    },
    #[error("configuration {key} of {scope}: {reason}")]
    Sasl {
        key: String,
        scope: String,
        reason: String,
    },
    #[error("configuration {key} is not honoured: {reason}")]
    UnservedSecurityKey { key: String, reason: String },
}
