//! The leader's side of a follower's Fetch: the fetch offset is the follower's log end
//! offset, so it moves the follower's progress, the high watermark and maybe the ISR; the
//! answer reads up to the log end (not the high watermark) and reports where the follower's
//! last fetched epoch diverges (KIP-320).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    EpochEndOffset, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_log::LogError;
use uuid::Uuid;

use super::isr;
use crate::errors::log_error_code;
use crate::partitions::Partition;
use crate::time::now_ms;
use crate::Broker;

/// The follower's broker id when `request` comes from a replica (Fetch v15+ carries it in
/// `ReplicaState`, older versions in `ReplicaId`).
pub fn follower_id(request: &FetchRequest, version: i16) -> Option<i32> {
    let id = if version >= 15 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    };
    (id >= 0).then_some(id)
}

struct Wanted {
    topic_index: usize,
    partition: i32,
    fetch_offset: i64,
    partition_max_bytes: usize,
    /// The hosted partition, or the error code answered for it.
    found: Result<Arc<Partition>, i16>,
    diverging: Option<(i32, i64)>,
}

struct Topic {
    name: String,
    topic_id: Uuid,
}

/// Answers a follower's Fetch.
pub async fn handle(
    broker: &Arc<Broker>,
    version: i16,
    follower: i32,
    request: FetchRequest,
) -> FetchResponse {
    let image = broker.image();
    let now = now_ms();
    let eligible = |id: i32| {
        image
            .broker(id)
            .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown)
    };
    let mut topics = Vec::new();
    let mut wanted = Vec::new();
    let mut high_watermark_moved = false;
    for t in request.topics {
        let found = if version >= 13 {
            image.topic_by_id(t.topic_id)
        } else {
            image.topic(t.topic.0.as_str())
        };
        let topic_index = topics.len();
        topics.push(Topic {
            name: found
                .map(|f| f.name.clone())
                .unwrap_or_else(|| t.topic.0.to_string()),
            topic_id: found.map_or(t.topic_id, |f| f.topic_id),
        });
        for p in t.partitions {
            let lookup = match found {
                None if version >= 13 => Err(ResponseError::UnknownTopicId.code()),
                None => Err(ResponseError::UnknownTopicOrPartition.code()),
                Some(f) => leader_for_follower(
                    broker,
                    &f.name,
                    p.partition,
                    p.current_leader_epoch,
                    follower,
                ),
            };
            let mut diverging = None;
            if let Ok(partition) = &lookup {
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
                        isr::submit(broker, partition, proposal);
                    }
                }
            }
            wanted.push(Wanted {
                topic_index,
                partition: p.partition,
                fetch_offset: p.fetch_offset,
                partition_max_bytes: p.partition_max_bytes.max(0) as usize,
                found: lookup,
                diverging,
            });
        }
    }
    if high_watermark_moved {
        // Consumers long-polling for committed data, and acks=all producers, wake.
        broker.replicas.notify_appended();
    }

    let response_max_bytes = request.max_bytes.max(0) as usize;
    let min_bytes = request.min_bytes.max(0) as usize;
    let deadline =
        tokio::time::Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let mut appends = broker.replicas.subscribe_appends();
    let mut shutdown = broker.shutdown_signal();
    loop {
        appends.borrow_and_update();
        let (results, total, any_error) = read_all(&wanted, response_max_bytes);
        let done = total >= min_bytes.max(1)
            || any_error
            || request.max_wait_ms <= 0
            || tokio::time::Instant::now() >= deadline
            || *shutdown.borrow();
        if done {
            return assemble(&topics, results, version);
        }
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => {}
            _ = appends.changed() => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// The partition when this broker leads it at the follower's epoch and the follower is
/// one of its replicas.
fn leader_for_follower(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
    follower: i32,
) -> Result<Arc<Partition>, i16> {
    let p = crate::handlers::leader_partition(broker, topic, partition, current_leader_epoch)?;
    let is_replica = p
        .replication
        .with_leader(|s| s.replicas().contains(&follower))
        .unwrap_or(false);
    if !is_replica {
        return Err(ResponseError::NotLeaderOrFollower.code());
    }
    Ok(p)
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

fn read_all(
    wanted: &[Wanted],
    response_max_bytes: usize,
) -> (Vec<(usize, PartitionData)>, usize, bool) {
    let mut out = Vec::with_capacity(wanted.len());
    let mut total = 0usize;
    let mut any_error = false;
    for w in wanted {
        let base = PartitionData::default()
            .with_partition_index(w.partition)
            .with_high_watermark(-1)
            .with_last_stable_offset(-1)
            .with_log_start_offset(-1)
            .with_preferred_read_replica(BrokerId(-1))
            .with_records(Some(Bytes::new()));
        let partition = match &w.found {
            Ok(p) => p,
            Err(code) => {
                any_error = true;
                out.push((w.topic_index, base.with_error_code(*code)));
                continue;
            }
        };
        let base = base
            .with_high_watermark(partition.high_watermark())
            .with_last_stable_offset(partition.last_stable_offset())
            .with_log_start_offset(partition.log.log_start_offset());
        if let Some((epoch, end_offset)) = w.diverging {
            any_error = true;
            out.push((
                w.topic_index,
                base.with_diverging_epoch(
                    EpochEndOffset::default()
                        .with_epoch(epoch)
                        .with_end_offset(end_offset),
                ),
            ));
            continue;
        }
        let leo = partition.log.log_end_offset();
        let budget = w
            .partition_max_bytes
            .min(response_max_bytes.saturating_sub(total));
        let min_one = total == 0;
        if (budget == 0 && !min_one) || w.fetch_offset == leo {
            out.push((w.topic_index, base));
            continue;
        }
        let read = partition
            .log
            .read(w.fetch_offset, budget, leo, min_one)
            .and_then(|r| r.to_bytes().map_err(LogError::Storage));
        match read {
            Ok(bytes) => {
                total += bytes.len();
                out.push((w.topic_index, base.with_records(Some(bytes))));
            }
            Err(e) => {
                any_error = true;
                let (code, _) = log_error_code(&e);
                out.push((w.topic_index, base.with_error_code(code)));
            }
        }
    }
    (out, total, any_error)
}

fn assemble(topics: &[Topic], results: Vec<(usize, PartitionData)>, version: i16) -> FetchResponse {
    let mut per_topic: Vec<Vec<PartitionData>> = topics.iter().map(|_| Vec::new()).collect();
    for (i, p) in results {
        per_topic[i].push(p);
    }
    let responses = topics
        .iter()
        .zip(per_topic)
        .map(|(t, partitions)| {
            let r = FetchableTopicResponse::default().with_partitions(partitions);
            if version >= 13 {
                r.with_topic_id(t.topic_id)
            } else {
                r.with_topic(TopicName(StrBytes::from_string(t.name.clone())))
            }
        })
        .collect();
    FetchResponse::default()
        .with_session_id(0)
        .with_responses(responses)
}
