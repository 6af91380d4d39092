//! The leader's side of a follower's Fetch: the fetch offset is the follower's log end
//! offset, so it moves the follower's progress, the high watermark and maybe the ISR; the
//! answer reads up to the log end (not the high watermark) and reports where the follower's
//! last fetched epoch diverges (KIP-320). The broker translates the wire request into a
//! [`FollowerRead`] and the [`ServedPartition`]s back.

use std::sync::Arc;

use bytes::Bytes;
use shale_log::{now_ms, LogError};

use crate::context::ReplicaContext;
use crate::delayed_fetch::{wait_for_data, FetchPass};
use crate::error::ReplicaError;
use crate::isr;
use crate::partition::Partition;

/// A follower's fetch, its topics already resolved by the broker.
#[derive(Clone, Debug)]
pub struct FollowerRead {
    pub follower: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub partitions: Vec<FollowerReadPartition>,
}

#[derive(Clone, Debug)]
pub struct FollowerReadPartition {
    /// The topic's name (shared by the topic's partitions), or why the request's topic names
    /// none here.
    pub topic: Result<Arc<str>, ReplicaError>,
    pub partition: i32,
    pub fetch_offset: i64,
    pub current_leader_epoch: i32,
    pub last_fetched_epoch: i32,
    pub partition_max_bytes: i32,
}

/// The answer for one partition, in the request's order.
#[derive(Debug)]
pub struct ServedPartition {
    pub partition: i32,
    pub result: Result<ServedData, ReplicaError>,
}

#[derive(Debug)]
pub struct ServedData {
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// KIP-320: the epoch and end offset where the follower's log stops matching this one.
    pub diverging_epoch: Option<(i32, i64)>,
    /// The batches from the fetch offset, or why they could not be read.
    pub records: Result<Bytes, LogError>,
}

struct Wanted {
    partition: i32,
    fetch_offset: i64,
    partition_max_bytes: usize,
    found: Result<Arc<Partition>, ReplicaError>,
    diverging: Option<(i32, i64)>,
}

/// Answers a follower's Fetch: waits up to `max_wait_ms` for `min_bytes`, as Kafka's
/// DelayedFetch does for replicas.
pub async fn serve(ctx: &Arc<dyn ReplicaContext>, request: FollowerRead) -> Vec<ServedPartition> {
    let image = ctx.image();
    let replicas = ctx.replicas();
    let follower = request.follower;
    let now = now_ms();
    let eligible = |id: i32| {
        image
            .broker(id)
            .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown)
    };
    let mut wanted = Vec::with_capacity(request.partitions.len());
    let mut high_watermark_moved = false;
    for p in request.partitions {
        let found = p.topic.and_then(|topic| {
            let partition =
                replicas.leader_for(&image, &topic, p.partition, p.current_leader_epoch)?;
            let is_replica = partition
                .replication
                .with_leader(|s| s.replicas().contains(&follower))
                .unwrap_or(false);
            if is_replica {
                Ok(partition)
            } else {
                Err(ReplicaError::NotLeaderOrFollower)
            }
        });
        let mut diverging = None;
        if let Ok(partition) = &found {
            if p.last_fetched_epoch >= 0 {
                diverging = diverging_epoch(partition, p.last_fetched_epoch, p.fetch_offset);
            }
            if diverging.is_none() {
                let leo = partition.log.log_end_offset();
                partition
                    .replication
                    .with_leader(|s| s.record_fetch(follower, p.fetch_offset, leo, now));
                high_watermark_moved |= partition.maybe_advance_high_watermark();
                let hw = partition.high_watermark();
                if let Some(Some(proposal)) = partition
                    .replication
                    .with_leader(|s| s.maybe_expand(follower, hw, eligible))
                {
                    isr::submit(ctx, partition, proposal);
                }
            }
        }
        wanted.push(Wanted {
            partition: p.partition,
            fetch_offset: p.fetch_offset,
            partition_max_bytes: p.partition_max_bytes.max(0) as usize,
            found,
            diverging,
        });
    }
    if high_watermark_moved {
        // Consumers long-polling for committed data, and acks=all producers, wake.
        replicas.notify_appended();
    }

    let response_max_bytes = request.max_bytes.max(0) as usize;
    wait_for_data(
        replicas,
        ctx.shutdown_signal(),
        request.max_wait_ms,
        request.min_bytes.max(0) as usize,
        || read_all(&wanted, response_max_bytes),
    )
    .await
}

/// KIP-320: where the follower's last fetched epoch ends here, when that is before its
/// fetch offset (or the epoch is not one of ours).
fn diverging_epoch(
    partition: &Partition,
    last_fetched_epoch: i32,
    fetch_offset: i64,
) -> Option<(i32, i64)> {
    match partition.log.end_offset_for_epoch(last_fetched_epoch) {
        Some((epoch, end)) if epoch == last_fetched_epoch && end >= fetch_offset => None,
        Some((epoch, end)) => Some((epoch, end)),
        // The follower has an epoch newer than any here: everything of it diverges.
        None => Some(match partition.log.latest_epoch() {
            Some(epoch) => (epoch, partition.log.log_end_offset()),
            None => (0, partition.log.log_start_offset()),
        }),
    }
}

fn read_all(wanted: &[Wanted], response_max_bytes: usize) -> FetchPass<Vec<ServedPartition>> {
    let mut out = Vec::with_capacity(wanted.len());
    let mut total = 0usize;
    let mut any_error = false;
    for w in wanted {
        let partition = match &w.found {
            Ok(p) => p,
            Err(e) => {
                any_error = true;
                out.push(ServedPartition {
                    partition: w.partition,
                    result: Err(e.clone()),
                });
                continue;
            }
        };
        let mut data = ServedData {
            high_watermark: partition.high_watermark(),
            last_stable_offset: partition.last_stable_offset(),
            log_start_offset: partition.log.log_start_offset(),
            diverging_epoch: w.diverging,
            records: Ok(Bytes::new()),
        };
        if w.diverging.is_some() {
            any_error = true;
        } else {
            let leo = partition.log.log_end_offset();
            let budget = w
                .partition_max_bytes
                .min(response_max_bytes.saturating_sub(total));
            let min_one = total == 0;
            if !((budget == 0 && !min_one) || w.fetch_offset == leo) {
                data.records = partition
                    .log
                    .read(w.fetch_offset, budget, leo, min_one)
                    .and_then(|r| r.to_bytes().map_err(LogError::Storage));
                match &data.records {
                    Ok(bytes) => total += bytes.len(),
                    Err(_) => any_error = true,
                }
            }
        }
        out.push(ServedPartition {
            partition: w.partition,
            result: Ok(data),
        });
    }
    FetchPass {
        answer: out,
        bytes: total,
        any_error,
    }
}
