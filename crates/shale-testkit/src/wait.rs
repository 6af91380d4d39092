//! The one wait helper for tests that watch other processes: poll a condition until it holds
//! or a deadline passes. In-process state should be awaited instead.

use std::time::{Duration, Instant};

/// How often a condition on another process's state is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Polls `condition` until it returns true; panics naming `what` when `timeout` passes first.
pub fn wait_until(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        // Another process's state: there is nothing to await in this one.
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Polls `probe` until it yields a value; panics naming `what` when `timeout` passes first.
pub fn wait_for<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let mut found = None;
    wait_until(what, timeout, || {
        found = probe();
        found.is_some()
    });
    found.unwrap_or_else(|| unreachable!("wait_until returned before the probe yielded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_once_the_condition_holds() {
        let mut calls = 0;
        wait_until("three calls", Duration::from_secs(5), || {
            calls += 1;
            calls == 3
        });
        assert_eq!(calls, 3);
    }

    #[test]
    #[should_panic(expected = "timed out waiting for never")]
    fn panics_naming_what_it_waited_for() {
        wait_until("never", Duration::from_millis(120), || false);
    }

    #[test]
    fn wait_for_hands_back_the_value() {
        let mut n = 0;
        let v = wait_for("n to reach 2", Duration::from_secs(5), || {
            n += 1;
            (n >= 2).then_some(n * 10)
        });
        assert_eq!(v, 20);
    }
}
