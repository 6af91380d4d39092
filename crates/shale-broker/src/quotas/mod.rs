//! Client quotas with Kafka's semantics (its ClientQuotaManager, ClientRequestQuotaManager and
//! ControllerMutationQuotaManager): what each client used is measured per quota key, against
//! the quota the metadata image sets for it (`precedence`), and a client over its quota is
//! told how long to wait (`throttle_time_ms`) and is not read from for that long (the
//! connection does that, `connection/throttle.rs`).
//!
//! The quotas are read from the current image on every request, so every broker of a cluster
//! applies the same ones and a change applies at once to open connections. Usage is kept per
//! broker, as in Kafka; a sensor idle for an hour is dropped, as Kafka drops it.
//!
//! - `producer_byte_rate`: the bytes of each Produce request, after it is answered.
//! - `consumer_byte_rate`: the bytes of each consumer Fetch answer; a throttled fetch is
//!   answered empty and its bytes are taken back, and no fetch asks for more than the quota
//!   allows in one span of windows.
//! - `request_percentage`: the time a request's handler runs on a worker thread, in percent
//!   of one thread per window (`poll_time.rs` says what is counted).
//! - `controller_mutation_rate`: the partitions CreateTopics, CreatePartitions and
//!   DeleteTopics create or delete, in a token bucket (KIP-599, `mutations.rs`).

mod mutations;
pub mod poll_time;
mod precedence;
mod rate;
mod sensors;
mod token_bucket;

use std::sync::{Arc, Mutex};

use shale_metadata::MetadataImage;

use crate::config::BrokerConfig;

pub use mutations::{MutationQuota, Strictness};
pub use precedence::QuotaIndex;
pub use rate::{SampledRate, Windows};
use sensors::{locked, Sensors};
pub use token_bucket::TokenBucket;

pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";

/// Kafka's `ClientRequestQuotaManager.NanosToPercentagePerSecond`.
const PERCENT_PER_NANOSECOND: f64 = 100.0 / 1_000_000_000.0;

/// Who a request comes from, as quotas name it: the principal's name (`alice` of
/// `User:alice`, `ANONYMOUS` without authentication) and the header's client id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    pub user: String,
    pub client_id: String,
}

impl Client {
    /// From a principal as `RequestContext` holds it (`User:<name>`) and a client id.
    pub fn new(principal: &str, client_id: Option<&str>) -> Client {
        let user = principal
            .split_once(':')
            .map_or(principal, |(_, name)| name)
            .to_string();
        Client {
            user,
            client_id: client_id.unwrap_or_default().to_string(),
        }
    }
}

/// The byte-rate quotas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteRate {
    Produce,
    Fetch,
}

/// The quota state of one broker.
#[derive(Debug)]
pub struct ClientQuotas {
    /// `quota.window.num`, `quota.window.size.seconds`.
    windows: Windows,
    /// `controller.quota.window.num`, `controller.quota.window.size.seconds`.
    mutation_windows: Windows,
    /// The index of the newest image seen, by its offset.
    index: Mutex<(i64, Arc<QuotaIndex>)>,
    /// The index of an image without quotas.
    no_quotas: Arc<QuotaIndex>,
    produce: Mutex<Sensors<SampledRate>>,
    fetch: Mutex<Sensors<SampledRate>>,
    request: Mutex<Sensors<SampledRate>>,
    mutation: Mutex<Sensors<TokenBucket>>,
}

impl ClientQuotas {
    pub fn new(windows: Windows, mutation_windows: Windows) -> ClientQuotas {
        ClientQuotas {
            windows,
            mutation_windows,
            index: Mutex::new((i64::MIN, Arc::new(QuotaIndex::default()))),
            no_quotas: Arc::new(QuotaIndex::default()),
            produce: Mutex::new(Sensors::default()),
            fetch: Mutex::new(Sensors::default()),
            request: Mutex::new(Sensors::default()),
            mutation: Mutex::new(Sensors::default()),
        }
    }

    /// The sampling `quota.window.*` and `controller.quota.window.*` configure.
    pub fn from_config(config: &BrokerConfig) -> ClientQuotas {
        let windows = |num: i32, size_seconds: i32| {
            Windows::new(
                usize::try_from(num).unwrap_or(1),
                i64::from(size_seconds) * 1000,
            )
        };
        ClientQuotas::new(
            windows(config.quota_window_num, config.quota_window_size_seconds),
            windows(
                config.controller_quota_window_num,
                config.controller_quota_window_size_seconds,
            ),
        )
    }

    /// The quotas of `image`, indexed once per image.
    pub fn index(&self, image: &MetadataImage) -> Arc<QuotaIndex> {
        // Every request asks; with no quota set (the usual case) it is answered without the
        // lock every connection would otherwise share.
        if image.client_quotas().next().is_none() {
            return self.no_quotas.clone();
        }
        let mut cached = locked(&self.index);
        if cached.0 != image.offset {
            *cached = (image.offset, Arc::new(QuotaIndex::from_image(image)));
        }
        cached.1.clone()
    }

    fn byte_sensors(&self, kind: ByteRate) -> (&Mutex<Sensors<SampledRate>>, &'static str) {
        match kind {
            ByteRate::Produce => (&self.produce, PRODUCER_BYTE_RATE),
            ByteRate::Fetch => (&self.fetch, CONSUMER_BYTE_RATE),
        }
    }

    /// Records `bytes` for `client` and returns the throttle time in ms (0 within quota).
    /// Nothing is recorded while no entity sets the key.
    pub fn record_bytes(
        &self,
        kind: ByteRate,
        image: &MetadataImage,
        client: &Client,
        bytes: usize,
        now_ms: i64,
    ) -> i64 {
        let (sensors, key) = self.byte_sensors(kind);
        let Some(applied) = self
            .index(image)
            .applied(key, &client.user, &client.client_id)
        else {
            return 0;
        };
        let w = self.windows;
        let mut sensors = locked(sensors);
        let rate = sensors.get(applied.sensor, now_ms);
        match applied.limit {
            Some(limit) => rate.record_and_throttle_ms(w, bytes as f64, now_ms, limit),
            None => {
                rate.record(w, bytes as f64, now_ms);
                0
            }
        }
    }

    /// Takes back bytes recorded by [`ClientQuotas::record_bytes`] (a throttled fetch
    /// returns nothing).
    pub fn unrecord_bytes(
        &self,
        kind: ByteRate,
        image: &MetadataImage,
        client: &Client,
        bytes: usize,
        now_ms: i64,
    ) {
        let (sensors, key) = self.byte_sensors(kind);
        if let Some(applied) = self
            .index(image)
            .applied(key, &client.user, &client.client_id)
        {
            locked(sensors).get(applied.sensor, now_ms).record(
                self.windows,
                -(bytes as f64),
                now_ms,
            );
        }
    }

    /// The most a fetch may ask for: what the quota allows over `samples - 1` windows, so
    /// one answer never has to be throttled on its own (`getMaxValueInQuotaWindow`).
    pub fn fetch_bytes_max(&self, image: &MetadataImage, client: &Client) -> Option<usize> {
        let limit = self
            .index(image)
            .applied(CONSUMER_BYTE_RATE, &client.user, &client.client_id)?
            .limit?;
        let w = self.windows;
        let span_s = (w.samples as f64 - 1.0) * (w.window_ms as f64 / 1000.0);
        Some((limit * span_s).min(i32::MAX as f64) as usize)
    }

    /// Records a request's handling time and returns its throttle time in ms, at most one
    /// window (Kafka bounds request throttles by `quota.window.size.seconds`).
    pub fn record_request_time(
        &self,
        image: &MetadataImage,
        client: &Client,
        handling_nanos: u64,
        now_ms: i64,
    ) -> i64 {
        let Some(applied) =
            self.index(image)
                .applied(REQUEST_PERCENTAGE, &client.user, &client.client_id)
        else {
            return 0;
        };
        let w = self.windows;
        let value = handling_nanos as f64 * PERCENT_PER_NANOSECOND;
        let mut sensors = locked(&self.request);
        let rate = sensors.get(applied.sensor, now_ms);
        match applied.limit {
            Some(limit) => rate
                .record_and_throttle_ms(w, value, now_ms, limit)
                .min(w.window_ms),
            None => {
                rate.record(w, value, now_ms);
                0
            }
        }
    }

    /// The controller-mutation quota of one request (see `mutations.rs`).
    pub fn mutation_quota(
        &self,
        image: &MetadataImage,
        client: &Client,
        strictness: Strictness,
    ) -> MutationQuota<'_> {
        let applied =
            self.index(image)
                .applied(CONTROLLER_MUTATION_RATE, &client.user, &client.client_id);
        MutationQuota::new(&self.mutation, self.mutation_windows, applied, strictness)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_metadata::MetadataRecord;

    fn with_quota(key: &str, entity: &[(&str, Option<&str>)], value: f64) -> MetadataImage {
        let mut image = MetadataImage::empty("c");
        image.replay(&MetadataRecord::ClientQuota {
            entity: entity
                .iter()
                .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                .collect(),
            key: key.into(),
            value: Some(value),
        });
        image
    }

    fn quotas() -> ClientQuotas {
        ClientQuotas::new(Windows::new(11, 1000), Windows::new(11, 1000))
    }

    #[test]
    fn principals_name_the_user() {
        assert_eq!(Client::new("User:alice", Some("app")).user, "alice");
        assert_eq!(
            Client::new("User:CN=app,O=Example", None),
            Client {
                user: "CN=app,O=Example".into(),
                client_id: String::new()
            }
        );
    }

    #[test]
    fn a_producer_over_its_quota_is_throttled_and_others_are_not() {
        let q = quotas();
        let image = with_quota(PRODUCER_BYTE_RATE, &[("client-id", Some("slow"))], 1000.0);
        let slow = Client::new("User:ANONYMOUS", Some("slow"));
        let other = Client::new("User:ANONYMOUS", Some("other"));
        assert_eq!(
            q.record_bytes(ByteRate::Produce, &image, &slow, 20_000, 0),
            10_000
        );
        assert_eq!(
            q.record_bytes(ByteRate::Produce, &image, &other, 20_000, 0),
            0
        );
        // The consumer side is a quota of its own.
        assert_eq!(q.record_bytes(ByteRate::Fetch, &image, &slow, 20_000, 0), 0);
        assert_eq!(q.fetch_bytes_max(&image, &slow), None);
    }

    #[test]
    fn a_quota_change_applies_to_the_usage_already_measured() {
        let q = quotas();
        let client = Client::new("User:u", Some("c"));
        let image = with_quota(CONSUMER_BYTE_RATE, &[("user", Some("u"))], 1_000_000.0);
        assert_eq!(
            q.record_bytes(ByteRate::Fetch, &image, &client, 20_000, 0),
            0
        );
        let mut lowered = with_quota(CONSUMER_BYTE_RATE, &[("user", Some("u"))], 1000.0);
        lowered.offset = image.offset + 1;
        // 20 000 + 10 000 over 10 s = 3000/s against 1000/s: 20 s.
        assert_eq!(
            q.record_bytes(ByteRate::Fetch, &lowered, &client, 10_000, 0),
            20_000
        );
        assert_eq!(q.fetch_bytes_max(&lowered, &client), Some(10_000));
    }

    #[test]
    fn request_time_throttles_are_bounded_by_one_window() {
        let q = quotas();
        let client = Client::new("User:u", None);
        let image = with_quota(REQUEST_PERCENTAGE, &[("user", None)], 1.0);
        // 5 s of handling in one request: 500% over 10 s against 1%.
        let t = q.record_request_time(&image, &client, 5_000_000_000, 0);
        assert_eq!(t, 1000);
    }
}
