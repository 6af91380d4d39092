//! Kafka's replica settings, read from the static broker properties with Kafka's defaults.

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
    /// `replica.high.watermark.checkpoint.interval.ms`
    pub high_watermark_checkpoint_interval_ms: u64,
    /// `producer.id.expiration.ms`: producer state rebuilt after a truncation keeps it.
    pub producer_id_expiration_ms: i64,
}

impl ReplicationSettings {
    /// The settings from `property` (a broker property's value by name, when set); Kafka's
    /// default where a value is absent or does not parse.
    pub fn from_properties(
        lag_time_max_ms: i64,
        producer_id_expiration_ms: i64,
        property: impl Fn(&str) -> Option<String>,
    ) -> ReplicationSettings {
        fn prop<T: std::str::FromStr>(
            property: &impl Fn(&str) -> Option<String>,
            name: &str,
            default: T,
        ) -> T {
            property(name)
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(default)
        }
        ReplicationSettings {
            lag_time_max_ms,
            fetch_wait_max_ms: prop(&property, "replica.fetch.wait.max.ms", 500),
            fetch_min_bytes: prop(&property, "replica.fetch.min.bytes", 1),
            fetch_max_bytes: prop(&property, "replica.fetch.max.bytes", 1_048_576),
            fetch_response_max_bytes: prop(
                &property,
                "replica.fetch.response.max.bytes",
                10_485_760,
            ),
            fetch_backoff_ms: prop(&property, "replica.fetch.backoff.ms", 1_000).max(1),
            socket_timeout_ms: prop(&property, "replica.socket.timeout.ms", 30_000).max(1),
            fetchers_per_source: prop(&property, "num.replica.fetchers", 1usize).max(1),
            high_watermark_checkpoint_interval_ms: prop(
                &property,
                "replica.high.watermark.checkpoint.interval.ms",
                5_000,
            ),
            producer_id_expiration_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_defaults_where_unset_or_unparsable() {
        let s = ReplicationSettings::from_properties(30_000, 86_400_000, |name| {
            (name == "num.replica.fetchers").then(|| "x".to_string())
        });
        assert_eq!(s.fetch_wait_max_ms, 500);
        assert_eq!(s.fetch_backoff_ms, 1_000);
        assert_eq!(s.fetchers_per_source, 1);
        assert_eq!(s.high_watermark_checkpoint_interval_ms, 5_000);
        let s = ReplicationSettings::from_properties(30_000, 1, |name| {
            (name == "replica.fetch.max.bytes").then(|| " 2048 ".to_string())
        });
        assert_eq!(s.fetch_max_bytes, 2048);
    }
}
