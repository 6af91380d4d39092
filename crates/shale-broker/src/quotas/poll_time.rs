//! The time a request's handler runs on a worker thread: Shale's counterpart of the request
//! handler thread time Kafka's `request_percentage` quota measures.
//!
//! Kafka counts the time a request spends on one of its request handler threads
//! (`requestThreadTimeNanos`). Shale handles a request as a future on a tokio worker thread;
//! the time inside that future's `poll` calls is the time it kept a thread busy. Waiting
//! (for replication, a long poll, the controller, the disk to be ready) is not polling and is
//! not counted, as Kafka counts no time a request waits in a purgatory. Decoding the request
//! is counted; encoding and writing the response are not (Kafka counts those on its network
//! threads, which this quota does not throttle on its own).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

/// A future whose time inside `poll` is added up.
pub struct PollTimed<F> {
    inner: F,
    busy_nanos: u64,
}

impl<F> PollTimed<F> {
    pub fn new(inner: F) -> PollTimed<F> {
        PollTimed {
            inner,
            busy_nanos: 0,
        }
    }
}

impl<F: Future + Unpin> Future for PollTimed<F> {
    /// The output and the nanoseconds spent polling it.
    type Output = (F::Output, u64);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let started = Instant::now();
        let polled = Pin::new(&mut self.inner).poll(cx);
        let spent = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.busy_nanos = self.busy_nanos.saturating_add(spent);
        match polled {
            Poll::Ready(output) => Poll::Ready((output, self.busy_nanos)),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn waiting_is_not_counted_and_work_is() {
        let (out, busy_nanos) = PollTimed::new(Box::pin(async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            7
        }))
        .await;
        assert_eq!(out, 7);
        assert!(busy_nanos < 50_000_000, "{busy_nanos}");
        let (_, busy_nanos) = PollTimed::new(Box::pin(async {
            let until = Instant::now() + Duration::from_millis(30);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }))
        .await;
        assert!(busy_nanos >= 30_000_000, "{busy_nanos}");
    }
}
