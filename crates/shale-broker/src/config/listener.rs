//! One listener of the broker.

/// `NAME://host:port` from `listeners` / `advertised.listeners`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub security_protocol: String,
}
