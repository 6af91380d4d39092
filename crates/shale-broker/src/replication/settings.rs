//! Kafka's replica settings, read from the static broker properties with Kafka's defaults.

use crate::Broker;

#[derive(Clone, Debug)]
pub struct ReplicationSettings {
    /// `replica.lag.time.max.ms`
    pub lag_time_max_ms: i64,
    /// `replica.fetch.wait.max.ms`
    pub fetch_wait_max_ms: i32,
    /// `replica.fetch.min.bytes`
    pub fetch_min_bytes: i32,
    /// `replica.fetch.max.bytes` (per partition)
    pub fetch_max_bytes: i32,
    /// `replica.fetch.response.max.bytes`
    pub fetch_response_max_bytes: i32,
    /// `replica.fetch.backoff.ms`
    pub fetch_backoff_ms: i64,
    /// `replica.socket.timeout.ms`
    pub socket_timeout_ms: i64,
    /// `num.replica.fetchers`: fetchers (each with its own connection) per source broker.
    pub fetchers_per_source: usize,
}

fn prop<T: std::str::FromStr>(broker: &Broker, name: &str, default: T) -> T {
    broker
        .config
        .properties
        .get(name)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

impl ReplicationSettings {
    pub fn from_broker(broker: &Broker) -> ReplicationSettings {
        ReplicationSettings {
            lag_time_max_ms: broker.config.replica_lag_time_max_ms,
            fetch_wait_max_ms: prop(broker, "replica.fetch.wait.max.ms", 500),
            fetch_min_bytes: prop(broker, "replica.fetch.min.bytes", 1),
            fetch_max_bytes: prop(broker, "replica.fetch.max.bytes", 1_048_576),
            fetch_response_max_bytes: prop(broker, "replica.fetch.response.max.bytes", 10_485_760),
            fetch_backoff_ms: prop(broker, "replica.fetch.backoff.ms", 1_000).max(1),
            socket_timeout_ms: prop(broker, "replica.socket.timeout.ms", 30_000).max(1),
            fetchers_per_source: prop(broker, "num.replica.fetchers", 1usize).max(1),
        }
    }
}
