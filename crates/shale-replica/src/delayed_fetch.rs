//! Kafka's DelayedFetch: a fetch that found less than `min_bytes` waits, up to
//! `max_wait_ms`, for appends (or a high watermark move) to bring more, and reads again each
//! time; an error, enough bytes, the deadline or shutdown ends the wait with the last read.
//! Consumer and follower fetches both wait this way.

use std::time::Duration;

use tokio::sync::watch;

use crate::manager::ReplicaManager;

/// One read of every partition of a fetch.
pub struct FetchPass<T> {
    pub answer: T,
    /// Record bytes the pass found.
    pub bytes: usize,
    /// Whether any partition answered with an error (the fetch then answers at once).
    pub any_error: bool,
}

/// Reads with `read` until it finds `min_bytes` (at least one), an error, `max_wait_ms`
/// passes or `shutdown` is signalled, and returns the last read's answer.
pub async fn wait_for_data<T>(
    replicas: &ReplicaManager,
    mut shutdown: watch::Receiver<bool>,
    max_wait_ms: i32,
    min_bytes: usize,
    mut read: impl FnMut() -> FetchPass<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(max_wait_ms.max(0) as u64);
    let mut appends = replicas.subscribe_appends();
    loop {
        // Marked seen before the read: an append during it wakes the wait below.
        appends.borrow_and_update();
        let pass = read();
        let done = pass.bytes >= min_bytes.max(1)
            || pass.any_error
            || max_wait_ms <= 0
            || tokio::time::Instant::now() >= deadline
            || *shutdown.borrow();
        if done {
            return pass.answer;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => {}
            _ = appends.changed() => {}
            _ = shutdown.changed() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use shale_log::LogManager;

    use super::*;

    fn replicas(dir: &tempfile::TempDir) -> ReplicaManager {
        let logs = LogManager::open(vec![dir.path().to_path_buf()], 1).unwrap();
        ReplicaManager::new(1, Arc::new(logs), 3_600_000)
    }

    #[tokio::test(start_paused = true)]
    async fn an_empty_fetch_waits_until_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let replicas = replicas(&dir);
        let (_shutdown_tx, shutdown) = watch::channel(false);
        let started = tokio::time::Instant::now();
        let mut reads = 0;
        let answer = wait_for_data(&replicas, shutdown, 500, 1, || {
            reads += 1;
            FetchPass {
                answer: reads,
                bytes: 0,
                any_error: false,
            }
        })
        .await;
        assert_eq!(started.elapsed(), Duration::from_millis(500));
        // One read at the start, one at the deadline.
        assert_eq!(answer, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_append_wakes_the_wait_and_enough_bytes_end_it() {
        let dir = tempfile::tempdir().unwrap();
        let replicas = Arc::new(replicas(&dir));
        let (_shutdown_tx, shutdown) = watch::channel(false);
        let notifier = replicas.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            notifier.notify_appended();
        });
        let started = tokio::time::Instant::now();
        let mut reads = 0;
        let bytes_found = wait_for_data(&replicas, shutdown, 10_000, 10, || {
            reads += 1;
            let bytes = if reads == 1 { 0 } else { 10 };
            FetchPass {
                answer: bytes,
                bytes,
                any_error: false,
            }
        })
        .await;
        assert_eq!(bytes_found, 10);
        assert_eq!(started.elapsed(), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_or_shutdown_answers_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let replicas = replicas(&dir);
        let (_shutdown_tx, shutdown) = watch::channel(false);
        let started = tokio::time::Instant::now();
        wait_for_data(&replicas, shutdown, 10_000, 1, || FetchPass {
            answer: (),
            bytes: 0,
            any_error: true,
        })
        .await;
        let (shutdown_tx, shutdown) = watch::channel(false);
        shutdown_tx.send_replace(true);
        wait_for_data(&replicas, shutdown, 10_000, 1, || FetchPass {
            answer: (),
            bytes: 0,
            any_error: false,
        })
        .await;
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
