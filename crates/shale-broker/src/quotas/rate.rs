//! Kafka's sampled rate (`Rate` over a `WindowedSum`, with `SampledStat`'s samples), the
//! measure every byte-rate and request-time quota is checked against, and the throttle time
//! of `QuotaUtils.throttleTime`. Pure: every call is given the time.
//!
//! `samples` windows of `window_ms` each (`quota.window.num`, `quota.window.size.seconds`);
//! one extra sample is kept for the window that overlaps the oldest one. A rate is the sum of
//! the kept samples over the time since the oldest sample started, counted as at least
//! `samples - 1` full windows, so a client's first burst is not measured over a few
//! milliseconds.

/// The sampling of a rate: how many windows, each how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    pub samples: usize,
    pub window_ms: i64,
}

impl Windows {
    pub fn new(samples: usize, window_ms: i64) -> Windows {
        Windows {
            samples: samples.max(1),
            window_ms: window_ms.max(1),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    value: f64,
    start_ms: i64,
    last_event_ms: i64,
}

impl Sample {
    fn new(now_ms: i64) -> Sample {
        Sample {
            value: 0.0,
            start_ms: now_ms,
            last_event_ms: now_ms,
        }
    }

    fn reset(&mut self, now_ms: i64) {
        *self = Sample::new(now_ms);
    }
}

/// One sensor's rate (Kafka's `Rate`), in units per second.
#[derive(Clone, Debug, Default)]
pub struct SampledRate {
    samples: Vec<Sample>,
    current: usize,
}

impl SampledRate {
    /// Adds `value` at `now_ms` (negative to take back a value recorded before).
    pub fn record(&mut self, w: Windows, value: f64, now_ms: i64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
        }
        if now_ms - self.samples[self.current].start_ms >= w.window_ms {
            // One more than `samples`: the one overlapping the start of the measured span.
            self.current = (self.current + 1) % (w.samples + 1);
            if self.current >= self.samples.len() {
                self.samples.push(Sample::new(now_ms));
            } else {
                self.samples[self.current].reset(now_ms);
            }
        }
        let sample = &mut self.samples[self.current];
        sample.value += value;
        sample.last_event_ms = now_ms;
    }

    /// Samples without an event in the last `samples` windows start afresh.
    fn purge_obsolete(&mut self, w: Windows, now_ms: i64) {
        let expire_age_ms = w.samples as i64 * w.window_ms;
        for sample in &mut self.samples {
            if now_ms - sample.last_event_ms >= expire_age_ms {
                sample.reset(now_ms);
            }
        }
    }

    /// The span the rate is measured over, in ms (Kafka's `Rate.windowSize`).
    pub fn window_size_ms(&mut self, w: Windows, now_ms: i64) -> i64 {
        self.purge_obsolete(w, now_ms);
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
        }
        let oldest_start_ms = self
            .samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms);
        let mut elapsed_ms = now_ms - oldest_start_ms;
        let full_windows = elapsed_ms / w.window_ms;
        let min_full_windows = w.samples as i64 - 1;
        if full_windows < min_full_windows {
            elapsed_ms += (min_full_windows - full_windows) * w.window_ms;
        }
        elapsed_ms.max(1)
    }

    /// The rate at `now_ms`, per second.
    pub fn measure(&mut self, w: Windows, now_ms: i64) -> f64 {
        self.purge_obsolete(w, now_ms);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (self.window_size_ms(w, now_ms) as f64 / 1000.0)
    }

    /// Records `value` and checks the rate against `bound` (Kafka's `Sensor.record` with
    /// quota checks): the time, in ms, that brings the rate back to the bound if nothing
    /// more is recorded, or 0 when it is within it. If O is the rate over a span W and T the
    /// bound, that time X solves O * W / (W + X) = T.
    pub fn record_and_throttle_ms(
        &mut self,
        w: Windows,
        value: f64,
        now_ms: i64,
        bound: f64,
    ) -> i64 {
        self.record(w, value, now_ms);
        let observed = self.measure(w, now_ms);
        if observed <= bound {
            return 0;
        }
        let window_ms = self.window_size_ms(w, now_ms) as f64;
        ((observed - bound) / bound * window_ms).round() as i64
    }

    /// The last time a value was recorded (for expiring idle sensors).
    pub fn last_event_ms(&self) -> Option<i64> {
        self.samples.iter().map(|s| s.last_event_ms).max()
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
    fn a_first_burst_is_measured_over_ten_windows_at_least() {
        let mut r = SampledRate::default();
        r.record(W, 10_000.0, 1_000_000);
        // 10 full windows of minimum span, 0 ms into the eleventh.
        assert_eq!(r.window_size_ms(W, 1_000_000), 10_000);
        assert_eq!(r.measure(W, 1_000_000), 1000.0);
        assert_eq!(r.window_size_ms(W, 1_000_500), 10_500);
    }

    #[test]
    fn throttle_time_brings_the_rate_back_to_the_bound() {
        let mut r = SampledRate::default();
        // 20 kB at once against 1 kB/s: rate 2000/s over 10 s, so 10 s more.
        assert_eq!(
            r.record_and_throttle_ms(W, 20_000.0, 5_000_000, 1000.0),
            10_000
        );
        // Within the bound: no throttle.
        let mut r = SampledRate::default();
        assert_eq!(r.record_and_throttle_ms(W, 5_000.0, 5_000_000, 1000.0), 0);
    }

    #[test]
    fn samples_advance_per_window_and_old_ones_expire() {
        let mut r = SampledRate::default();
        for second in 0..30 {
            r.record(W, 100.0, second * 1000);
        }
        // Twelve samples are kept (11 and the overlapping one); measuring at 29 000 expires
        // the one of 18 000, leaving 11 of 100 over the 10 s since 19 000.
        assert_eq!(r.measure(W, 29_000), 110.0);
        // Nothing for longer than 11 windows: everything expired.
        assert_eq!(r.measure(W, 29_000 + 11_000), 0.0);
    }

    #[test]
    fn a_taken_back_value_restores_the_rate() {
        let mut r = SampledRate::default();
        r.record(W, 300.0, 0);
        r.record(W, 500.0, 10);
        r.record(W, -500.0, 10);
        assert_eq!(r.measure(W, 10), 300.0 / 10.01);
    }

    #[test]
    fn a_steady_client_below_the_bound_is_never_throttled_and_above_it_is() {
        let bound = 1000.0;
        let mut r = SampledRate::default();
        let mut throttled_ms = 0;
        // 90% of the bound. (At the bound itself Kafka's rate, summing up to 11 windows and
        // a part, now and then measures a little above it.)
        for step in 0..200 {
            throttled_ms += r.record_and_throttle_ms(W, 90.0, step * 100, bound);
        }
        assert_eq!(throttled_ms, 0);
        // Twice the bound: throttled, and waiting the time it says brings it back under.
        let mut r = SampledRate::default();
        let mut now = 0;
        let mut sent = 0.0;
        while now < 60_000 {
            let t = r.record_and_throttle_ms(W, 2000.0, now, bound);
            sent += 2000.0;
            now += 1000 + t;
        }
        let achieved = sent / (now as f64 / 1000.0);
        assert!((achieved - bound).abs() / bound < 0.1, "{achieved}");
    }
}
