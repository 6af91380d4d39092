//! The controller-mutation quota of one request (KIP-599, Kafka's
//! `ControllerMutationQuota`): CreateTopics, CreatePartitions and DeleteTopics take one
//! credit per partition they create or delete.
//!
//! - Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): a topic is refused
//!   with THROTTLING_QUOTA_EXCEEDED while the client's credits are below zero; a topic taken
//!   while they are not may take them below zero, and the request is not throttled for it.
//! - Permissive (older versions, which have no such error): every topic goes ahead, and the
//!   request is throttled once the credits are below zero.
//!
//! Kafka charges inside its controller, after a topic passed every other check. Shale
//! charges on the broker that received the request, before the controller decides, and gives
//! back the credits of a topic the controller then refuses; so the credits are the same after
//! the request, and each broker keeps its own (Kafka's active controller keeps one set for
//! the cluster).

use std::sync::Mutex;

use super::precedence::Applied;
use super::rate::Windows;
use super::sensors::{locked, Sensors};
use super::token_bucket::TokenBucket;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strictness {
    Strict,
    Permissive,
}

impl Strictness {
    /// Strict from `strict_since` on.
    pub fn of_version(version: i16, strict_since: i16) -> Strictness {
        if version >= strict_since {
            Strictness::Strict
        } else {
            Strictness::Permissive
        }
    }
}

pub struct MutationQuota<'a> {
    sensors: &'a Mutex<Sensors<TokenBucket>>,
    windows: Windows,
    /// `None`: no entity sets the key, nothing is measured.
    applied: Option<Applied>,
    strictness: Strictness,
    last_throttle_ms: i64,
    recorded_at_ms: i64,
}

impl<'a> MutationQuota<'a> {
    pub(super) fn new(
        sensors: &'a Mutex<Sensors<TokenBucket>>,
        windows: Windows,
        applied: Option<Applied>,
        strictness: Strictness,
    ) -> MutationQuota<'a> {
        MutationQuota {
            sensors,
            windows,
            applied,
            strictness,
            last_throttle_ms: 0,
            recorded_at_ms: 0,
        }
    }

    /// Takes `partitions` credits. A strict quota that is exhausted takes none and answers
    /// the time until it is not (the topic is refused).
    pub fn record(&mut self, partitions: usize, now_ms: i64) -> Result<(), i64> {
        let Some(applied) = &self.applied else {
            return Ok(());
        };
        // No quota in force for this client: Kafka's bound is then Long.MAX_VALUE.
        let Some(limit) = applied.limit else {
            return Ok(());
        };
        let w = self.windows;
        let mut sensors = locked(self.sensors);
        let bucket = sensors.get(applied.sensor.clone(), now_ms);
        match self.strictness {
            Strictness::Strict => {
                let wait_ms = bucket.throttle_ms(w, limit, now_ms);
                if wait_ms > 0 {
                    self.last_throttle_ms = wait_ms;
                    self.recorded_at_ms = now_ms;
                    return Err(wait_ms);
                }
                bucket.record(w, limit, partitions as f64, now_ms);
            }
            Strictness::Permissive => {
                bucket.record(w, limit, partitions as f64, now_ms);
                let wait_ms = bucket.throttle_ms(w, limit, now_ms);
                if wait_ms > 0 {
                    self.last_throttle_ms = wait_ms;
                    self.recorded_at_ms = now_ms;
                }
            }
        }
        Ok(())
    }

    /// Gives back the credits of a topic the controller refused.
    pub fn refund(&mut self, partitions: usize, now_ms: i64) {
        let Some(Applied {
            sensor,
            limit: Some(limit),
        }) = &self.applied
        else {
            return;
        };
        locked(self.sensors).get(sensor.clone(), now_ms).record(
            self.windows,
            *limit,
            -(partitions as f64),
            now_ms,
        );
    }

    /// The throttle time to answer with: the last one noted, less the time since.
    pub fn throttle_ms(&self, now_ms: i64) -> i64 {
        (self.last_throttle_ms - (now_ms - self.recorded_at_ms)).max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quotas::precedence::SensorKey;

    fn applied(limit: f64) -> Option<Applied> {
        Some(Applied {
            sensor: SensorKey {
                user: "u".into(),
                client_id: String::new(),
            },
            limit: Some(limit),
        })
    }

    const W: Windows = Windows {
        samples: 11,
        window_ms: 1000,
    };

    #[test]
    fn strict_refuses_only_once_exhausted_and_never_throttles_the_request_that_exhausts() {
        let sensors = Mutex::new(Sensors::default());
        // 1 partition/s: a burst of 11.
        let mut q = MutationQuota::new(&sensors, W, applied(1.0), Strictness::Strict);
        assert_eq!(q.record(10, 0), Ok(()));
        assert_eq!(q.record(5, 0), Ok(()));
        assert_eq!(q.throttle_ms(0), 0);
        // Now at -4: the next topic waits 4 s.
        assert_eq!(q.record(1, 0), Err(4000));
        assert_eq!(q.throttle_ms(0), 4000);
        assert_eq!(q.throttle_ms(1500), 2500);
        let mut q = MutationQuota::new(&sensors, W, applied(1.0), Strictness::Strict);
        assert_eq!(q.record(1, 4000), Ok(()));
    }

    #[test]
    fn permissive_takes_everything_and_throttles() {
        let sensors = Mutex::new(Sensors::default());
        let mut q = MutationQuota::new(&sensors, W, applied(2.0), Strictness::Permissive);
        assert_eq!(q.record(30, 0), Ok(()));
        // 22 - 30 = -8 at 2/s: 4 s.
        assert_eq!(q.throttle_ms(0), 4000);
        q.refund(30, 0);
        let mut q = MutationQuota::new(&sensors, W, applied(2.0), Strictness::Strict);
        assert_eq!(q.record(22, 0), Ok(()));
    }

    #[test]
    fn without_a_quota_nothing_is_refused() {
        let sensors = Mutex::new(Sensors::default());
        let mut q = MutationQuota::new(&sensors, W, None, Strictness::Strict);
        for _ in 0..100 {
            assert_eq!(q.record(1000, 0), Ok(()));
        }
        assert_eq!(q.throttle_ms(0), 0);
    }
}
