//! `connections.max.idle.ms`: a connection that has read nothing, written nothing and has no
//! request in flight for that long is closed, as Kafka's selector expires idle channels. A
//! negative value turns expiry off, as in Kafka.
//!
//! Time is tokio's, so that tests can run it paused.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

/// When a connection last did something, shared by its reader and its writer.
#[derive(Debug)]
pub(super) struct Activity {
    started: Instant,
    last_ms: AtomicU64,
    requests_in_flight: AtomicUsize,
}

/// The reader's view: the connection's activity and how long it may stay idle.
#[derive(Clone, Debug)]
pub(super) struct IdleTimer {
    activity: Arc<Activity>,
    idle_max: Option<Duration>,
}

impl IdleTimer {
    /// `idle_max_ms` is the configured `connections.max.idle.ms`.
    pub(super) fn new(idle_max_ms: i64) -> Self {
        IdleTimer {
            activity: Arc::new(Activity {
                started: Instant::now(),
                last_ms: AtomicU64::new(0),
                requests_in_flight: AtomicUsize::new(0),
            }),
            idle_max: u64::try_from(idle_max_ms).ok().map(Duration::from_millis),
        }
    }

    /// Bytes were read or written.
    pub(super) fn touch(&self) {
        let elapsed_ms =
            u64::try_from(self.activity.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.activity
            .last_ms
            .fetch_max(elapsed_ms, Ordering::Relaxed);
    }

    /// A request was handed to the processing task; its answer (or silence) ends it.
    pub(super) fn request_started(&self) {
        self.activity
            .requests_in_flight
            .fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn request_finished(&self) {
        self.touch();
        self.activity
            .requests_in_flight
            .fetch_sub(1, Ordering::Relaxed);
    }

    /// When the connection will have been idle for `connections.max.idle.ms`, counted from
    /// now while a request is in flight (its answer will be activity); `None` when expiry is
    /// off.
    pub(super) fn deadline(&self) -> Option<Instant> {
        let idle_max = self.idle_max?;
        if self.activity.requests_in_flight.load(Ordering::Relaxed) > 0 {
            return Some(Instant::now() + idle_max);
        }
        let last = self.activity.started
            + Duration::from_millis(self.activity.last_ms.load(Ordering::Relaxed));
        Some(last + idle_max)
    }

    /// Whether the connection has now been idle for `connections.max.idle.ms`.
    pub(super) fn expired(&self) -> bool {
        self.deadline().is_some_and(|d| d <= Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_quiet_connection_expires_after_the_idle_time() {
        let timer = IdleTimer::new(1_000);
        assert!(!timer.expired());
        tokio::time::advance(Duration::from_millis(999)).await;
        assert!(!timer.expired());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(timer.expired());
    }

    #[tokio::test(start_paused = true)]
    async fn activity_restarts_the_idle_time() {
        let timer = IdleTimer::new(1_000);
        tokio::time::advance(Duration::from_millis(800)).await;
        timer.touch();
        tokio::time::advance(Duration::from_millis(800)).await;
        assert!(!timer.expired());
        tokio::time::advance(Duration::from_millis(200)).await;
        assert!(timer.expired());
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_in_flight_keeps_the_connection() {
        let timer = IdleTimer::new(1_000);
        timer.request_started();
        tokio::time::advance(Duration::from_millis(5_000)).await;
        assert!(!timer.expired());
        timer.request_finished();
        tokio::time::advance(Duration::from_millis(999)).await;
        assert!(!timer.expired());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(timer.expired());
    }

    #[tokio::test(start_paused = true)]
    async fn a_negative_idle_time_never_expires() {
        let timer = IdleTimer::new(-1);
        assert_eq!(timer.deadline(), None);
        tokio::time::advance(Duration::from_secs(86_400)).await;
        assert!(!timer.expired());
    }
}
