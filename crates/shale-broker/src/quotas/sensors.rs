//! The measured usage of one quota key, per sensor (who is measured together). A sensor idle
//! for an hour is dropped, as Kafka expires its quota sensors
//! (`InactiveSensorExpirationTimeSeconds`): a client rotating client ids cannot grow the map
//! without bound over time.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::precedence::SensorKey;
use super::rate::SampledRate;
use super::token_bucket::TokenBucket;

const INACTIVE_EXPIRATION_MS: i64 = 3_600_000;
/// How often the map is swept for idle sensors.
const SWEEP_INTERVAL_MS: i64 = 60_000;

/// A sensor map's lock. A panic while holding one leaves numbers, never a broken invariant.
pub fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a sensor measures with.
pub trait Stat: Default {
    fn last_event_ms(&self) -> Option<i64>;
}

impl Stat for SampledRate {
    fn last_event_ms(&self) -> Option<i64> {
        SampledRate::last_event_ms(self)
    }
}

impl Stat for TokenBucket {
    fn last_event_ms(&self) -> Option<i64> {
        TokenBucket::last_event_ms(self)
    }
}

#[derive(Debug)]
pub struct Sensors<S> {
    by_key: HashMap<SensorKey, S>,
    last_sweep_ms: i64,
}

impl<S> Default for Sensors<S> {
    fn default() -> Self {
        Sensors {
            by_key: HashMap::new(),
            last_sweep_ms: i64::MIN,
        }
    }
}

impl<S: Stat> Sensors<S> {
    /// The sensor of `key`, made when missing.
    pub fn get(&mut self, key: SensorKey, now_ms: i64) -> &mut S {
        if now_ms.saturating_sub(self.last_sweep_ms) >= SWEEP_INTERVAL_MS {
            self.last_sweep_ms = now_ms;
            self.by_key.retain(|_, s| {
                s.last_event_ms()
                    .is_none_or(|last_ms| now_ms - last_ms < INACTIVE_EXPIRATION_MS)
            });
        }
        self.by_key.entry(key).or_default()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quotas::rate::Windows;

    #[test]
    fn idle_sensors_expire_after_an_hour() {
        let w = Windows::new(11, 1000);
        let mut sensors: Sensors<SampledRate> = Sensors::default();
        let key = |c: &str| SensorKey {
            user: String::new(),
            client_id: c.into(),
        };
        sensors.get(key("a"), 0).record(w, 1.0, 0);
        sensors.get(key("b"), 1_800_000).record(w, 1.0, 1_800_000);
        assert_eq!(sensors.len(), 2);
        sensors.get(key("b"), 3_600_000);
        assert_eq!(sensors.len(), 1);
    }
}
