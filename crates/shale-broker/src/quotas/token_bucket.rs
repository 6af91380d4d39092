//! Kafka's `TokenBucket` (KIP-599), the measure of `controller_mutation_rate`: credits refill
//! at the quota's rate up to a burst of `samples * window * quota`, each partition created or
//! deleted takes one, and the quota is exhausted while the credits are below zero. Pure:
//! every call is given the time and the quota in force.

use super::rate::Windows;

/// One sensor's bucket. It starts full (as Kafka's, whose first refill covers all time since
/// the epoch).
#[derive(Clone, Debug)]
pub struct TokenBucket {
    tokens: f64,
    last_update_ms: Option<i64>,
}

impl Default for TokenBucket {
    fn default() -> TokenBucket {
        TokenBucket {
            tokens: 0.0,
            last_update_ms: None,
        }
    }
}

impl TokenBucket {
    fn burst(w: Windows, quota: f64) -> f64 {
        w.samples as f64 * (w.window_ms as f64 / 1000.0) * quota
    }

    fn refill(&mut self, w: Windows, quota: f64, now_ms: i64) {
        let burst = Self::burst(w, quota);
        self.tokens = match self.last_update_ms {
            None => burst,
            Some(last_ms) => {
                let elapsed_s = (now_ms - last_ms).max(0) as f64 / 1000.0;
                burst.min(self.tokens + quota * elapsed_s)
            }
        };
        self.last_update_ms = Some(now_ms);
    }

    /// The credits left at `now_ms`.
    pub fn measure(&mut self, w: Windows, quota: f64, now_ms: i64) -> f64 {
        self.refill(w, quota, now_ms);
        self.tokens
    }

    /// Takes `permits` credits (negative gives them back).
    pub fn record(&mut self, w: Windows, quota: f64, permits: f64, now_ms: i64) {
        self.refill(w, quota, now_ms);
        self.tokens = Self::burst(w, quota).min(self.tokens - permits);
    }

    /// The time until the credits are back at zero, or 0 when they are not below it
    /// (`ControllerMutationQuotaManager.throttleTimeMs`).
    pub fn throttle_ms(&mut self, w: Windows, quota: f64, now_ms: i64) -> i64 {
        let tokens = self.measure(w, quota, now_ms);
        if tokens >= 0.0 {
            0
        } else {
            (-tokens / quota * 1000.0).round() as i64
        }
    }

    pub fn last_event_ms(&self) -> Option<i64> {
        self.last_update_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Windows = Windows {
        samples: 11,
        window_ms: 1000,
    };

    #[test]
    fn starts_full_and_refills_at_the_quota_rate() {
        let mut b = TokenBucket::default();
        // Quota 5/s: a burst of 55.
        assert_eq!(b.measure(W, 5.0, 1_000), 55.0);
        b.record(W, 5.0, 60.0, 1_000);
        assert_eq!(b.measure(W, 5.0, 1_000), -5.0);
        // One second back to zero.
        assert_eq!(b.throttle_ms(W, 5.0, 1_000), 1000);
        assert_eq!(b.throttle_ms(W, 5.0, 1_500), 500);
        assert_eq!(b.throttle_ms(W, 5.0, 2_000), 0);
        // Refilling stops at the burst.
        assert_eq!(b.measure(W, 5.0, 100_000), 55.0);
    }

    #[test]
    fn kip_599s_example() {
        // Quota 5, 100 samples of 1 s: a burst of 560 waits 12 s.
        let w = Windows::new(100, 1000);
        let mut b = TokenBucket::default();
        b.record(w, 5.0, 560.0, 0);
        assert_eq!(b.throttle_ms(w, 5.0, 0), 12_000);
    }
}
