//! Wall-clock milliseconds derived from tokio's clock, so paused tokio time drives the
//! coordinator's timers in tests.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    base_instant: Instant,
    base_wall_ms: i64,
}

impl Clock {
    pub(crate) fn new() -> Self {
        let base_wall_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Self {
            base_instant: Instant::now(),
            base_wall_ms,
        }
    }

    pub(crate) fn now_ms(&self) -> i64 {
        let elapsed = Instant::now().saturating_duration_since(self.base_instant);
        self.base_wall_ms
            .saturating_add(i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
    }

    pub(crate) fn instant_at(&self, deadline_ms: i64) -> Instant {
        let offset_ms = deadline_ms.saturating_sub(self.base_wall_ms).max(0);
        self.base_instant + Duration::from_millis(u64::try_from(offset_ms).unwrap_or(0))
    }
}
