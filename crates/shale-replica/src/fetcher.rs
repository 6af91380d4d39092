//! Followers: one fetcher task per source broker (the leader of the partitions it serves),
//! as Kafka's ReplicaFetcherThread. Each partition first truncates with
//! OffsetForLeaderEpoch (KIP-101, KIP-279), then fetches with Kafka's Fetch protocol as a
//! replica (`ReplicaState`, v15), appending the leader's batches unchanged and taking the
//! high watermark the leader reports.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use parking_lot::Mutex;
use shale_log::{now_ms, TopicPartition};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};
use uuid::Uuid;

use crate::context::{
    FollowerFetch, FollowerFetchPartition, LeaderLink, LinkError, RemoteError, ReplicaContext,
};
use crate::partition::Partition;
use crate::settings::ReplicationSettings;
use crate::truncation::{decide, TruncationStep};
/// Rounds of OffsetForLeaderEpoch one partition may need (KIP-279 asks again while the
/// follower's log ends in an epoch the leader never had).
const TRUNCATION_ROUNDS_MAX: usize = 16;

/// What a follower needs to fetch one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowTarget {
    pub topic_id: Uuid,
    pub leader_id: i32,
    pub leader_epoch: i32,
}

#[derive(Clone, Debug)]
struct FetchState {
    target: FollowTarget,
    /// False until the log has been truncated against the leader at this epoch.
    truncated: bool,
    /// Skipped until then after an error (the next metadata image usually fixes it).
    retry_at_ms: i64,
}

struct Fetcher {
    partitions: Arc<Mutex<HashMap<TopicPartition, FetchState>>>,
    changed: Arc<Notify>,
    task: JoinHandle<()>,
}

/// Identifies one fetcher: the broker it fetches from and its index among that broker's
/// `num.replica.fetchers` fetchers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct FetcherKey {
    source: i32,
    index: usize,
}

/// The fetcher of `tp` among `fetchers_per_source`, as Kafka spreads partitions over its
/// fetcher threads: `abs(31 * topic.hashCode() + partition) % num.replica.fetchers`.
fn fetcher_index(tp: &TopicPartition, fetchers_per_source: usize) -> usize {
    let hash = 31i32
        .wrapping_mul(shale_group::placement::java_string_hash(&tp.topic))
        .wrapping_add(tp.partition);
    // Kafka's Utils.abs maps i32::MIN to 0 rather than overflowing.
    let positive = if hash == i32::MIN { 0 } else { hash.abs() };
    positive as usize % fetchers_per_source.max(1)
}

/// The fetchers of this broker: `num.replica.fetchers` per source broker, each with its own
/// connection and its share of the partitions led there.
#[derive(Default)]
pub struct FetcherManager {
    fetchers: Mutex<HashMap<FetcherKey, Fetcher>>,
}

impl std::fmt::Debug for FetcherManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetcherManager")
            .field("fetchers", &self.fetchers.lock().keys().collect::<Vec<_>>())
            .finish()
    }
}

impl FetcherManager {
    fn key_of(tp: &TopicPartition, leader_id: i32, fetchers_per_source: usize) -> FetcherKey {
        FetcherKey {
            source: leader_id,
            index: fetcher_index(tp, fetchers_per_source),
        }
    }

    /// Makes the followed set equal to `wanted`: partitions move between fetchers when their
    /// leader changes, and a new leader epoch means truncating again.
    pub fn reconcile(
        &self,
        ctx: &Arc<dyn ReplicaContext>,
        wanted: HashMap<TopicPartition, FollowTarget>,
    ) {
        let per_source = ctx.settings().fetchers_per_source;
        let mut fetchers = self.fetchers.lock();
        for (key, fetcher) in fetchers.iter() {
            let mut parts = fetcher.partitions.lock();
            let before = parts.len();
            parts.retain(|tp, state| {
                wanted.get(tp).is_some_and(|t| {
                    Self::key_of(tp, t.leader_id, per_source) == *key
                        && t.topic_id == state.target.topic_id
                })
            });
            let mut changed = before != parts.len();
            for (tp, state) in parts.iter_mut() {
                if let Some(t) = wanted.get(tp) {
                    if t.leader_epoch != state.target.leader_epoch {
                        state.target = t.clone();
                        state.truncated = false;
                        state.retry_at_ms = 0;
                        changed = true;
                    }
                }
            }
            drop(parts);
            if changed {
                fetcher.changed.notify_one();
            }
        }
        for (tp, target) in wanted {
            let key = Self::key_of(&tp, target.leader_id, per_source);
            let fetcher = fetchers.entry(key).or_insert_with(|| {
                let partitions = Arc::new(Mutex::new(HashMap::new()));
                let changed = Arc::new(Notify::new());
                let task = tokio::spawn(run_fetcher(
                    ctx.clone(),
                    target.leader_id,
                    partitions.clone(),
                    changed.clone(),
                ));
                Fetcher {
                    partitions,
                    changed,
                    task,
                }
            });
            let mut parts = fetcher.partitions.lock();
            if let std::collections::hash_map::Entry::Vacant(slot) = parts.entry(tp) {
                info!(tp = %slot.key(), leader = target.leader_id, epoch = target.leader_epoch, "following");
                slot.insert(FetchState {
                    target,
                    truncated: false,
                    retry_at_ms: 0,
                });
                drop(parts);
                fetcher.changed.notify_one();
            }
        }
        fetchers.retain(|key, f| {
            let keep = !f.partitions.lock().is_empty();
            if !keep {
                debug!(source = key.source, index = key.index, "stopping fetcher");
                f.task.abort();
            }
            keep
        });
    }

    /// Stops every fetcher (shutdown).
    pub fn stop_all(&self) {
        for (_, f) in self.fetchers.lock().drain() {
            f.task.abort();
        }
    }

    /// The source brokers fetched from (tests and diagnostics).
    pub fn sources(&self) -> Vec<i32> {
        let mut sources: Vec<i32> = self.fetchers.lock().keys().map(|k| k.source).collect();
        sources.sort_unstable();
        sources.dedup();
        sources
    }

    /// How many fetchers (connections) run against `source`.
    pub fn fetchers_of(&self, source: i32) -> usize {
        self.fetchers
            .lock()
            .keys()
            .filter(|k| k.source == source)
            .count()
    }
}

async fn run_fetcher(
    ctx: Arc<dyn ReplicaContext>,
    source: i32,
    partitions: Arc<Mutex<HashMap<TopicPartition, FetchState>>>,
    changed: Arc<Notify>,
) {
    let settings = ctx.settings().clone();
    let mut shutdown = ctx.shutdown_signal();
    let mut client: Option<Box<dyn LeaderLink>> = None;
    loop {
        if *shutdown.borrow() {
            return;
        }
        let now = now_ms();
        let snapshot: Vec<(TopicPartition, FetchState)> = partitions
            .lock()
            .iter()
            .map(|(tp, s)| (tp.clone(), s.clone()))
            .collect();
        let ready: Vec<&(TopicPartition, FetchState)> = snapshot
            .iter()
            .filter(|(_, s)| s.retry_at_ms <= now)
            .collect();
        if ready.is_empty() {
            let wait_ms = snapshot
                .iter()
                .map(|(_, s)| s.retry_at_ms - now)
                .min()
                .unwrap_or(settings.fetch_backoff_ms)
                .clamp(1, settings.fetch_backoff_ms.max(1));
            tokio::select! {
                _ = changed.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(wait_ms as u64)) => {}
                _ = shutdown.changed() => return,
            }
            continue;
        }
        if client.is_none() {
            match ctx.connect_to_leader(source).await {
                Ok(c) => client = Some(c),
                Err(e) => {
                    debug!(source, "cannot reach leader: {e}");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(settings.fetch_backoff_ms as u64)) => {}
                        _ = changed.notified() => {}
                        _ = shutdown.changed() => return,
                    }
                    continue;
                }
            }
        }
        let Some(conn) = client.as_deref_mut() else {
            continue;
        };
        let untruncated: Vec<(TopicPartition, FetchState)> = ready
            .iter()
            .filter(|(_, s)| !s.truncated)
            .map(|(tp, s)| (tp.clone(), s.clone()))
            .collect();
        let result = if !untruncated.is_empty() {
            truncate_partitions(&ctx, conn, &partitions, untruncated, &settings).await
        } else {
            let fetchable: Vec<(TopicPartition, FetchState)> = ready
                .iter()
                .map(|(tp, s)| (tp.clone(), s.clone()))
                .collect();
            tokio::select! {
                r = fetch_once(&ctx, conn, &partitions, fetchable, &settings) => r,
                _ = changed.notified() => {
                    // The partition set changed mid-request: the connection now carries a
                    // response nobody reads, so start a new one.
                    client = None;
                    Ok(())
                }
                _ = shutdown.changed() => return,
            }
        };
        if let Err(e) = result {
            debug!(source, "fetcher connection failed: {e}");
            client = None;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(settings.fetch_backoff_ms as u64)) => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// Marks a partition's state, if it still follows the same target.
fn update_state(
    partitions: &Mutex<HashMap<TopicPartition, FetchState>>,
    tp: &TopicPartition,
    target: &FollowTarget,
    f: impl FnOnce(&mut FetchState),
) {
    if let Some(state) = partitions.lock().get_mut(tp) {
        if state.target == *target {
            f(state);
        }
    }
}

fn hosted(ctx: &Arc<dyn ReplicaContext>, tp: &TopicPartition) -> Option<Arc<Partition>> {
    ctx.replicas().get(tp)
}

/// OffsetForLeaderEpoch for every partition that has not truncated at its current epoch.
async fn truncate_partitions(
    ctx: &Arc<dyn ReplicaContext>,
    conn: &mut dyn LeaderLink,
    partitions: &Mutex<HashMap<TopicPartition, FetchState>>,
    wanted: Vec<(TopicPartition, FetchState)>,
    settings: &ReplicationSettings,
) -> Result<(), LinkError> {
    for (tp, state) in wanted {
        let Some(partition) = hosted(ctx, &tp) else {
            continue;
        };
        let mut rounds = 0;
        let outcome = loop {
            rounds += 1;
            let Some(local_epoch) = partition.log.latest_epoch() else {
                // Nothing written under any epoch: nothing can diverge.
                break Ok(());
            };
            let answer = conn
                .epoch_end(
                    &tp,
                    state.target.leader_epoch,
                    local_epoch,
                    Duration::from_millis(settings.socket_timeout_ms as u64),
                )
                .await?;
            let leader = match answer {
                Ok(leader) => leader,
                Err(refused) => break Err(TruncationDeferred::Refused(refused)),
            };
            let step = decide(
                leader,
                |epoch| partition.log.end_offset_for_epoch(epoch),
                partition.log.log_end_offset(),
                partition.high_watermark(),
            );
            let offset = step.offset();
            if offset < partition.log.log_end_offset() {
                info!(
                    %tp,
                    from = partition.log.log_end_offset(),
                    to = offset,
                    leader_epoch = state.target.leader_epoch,
                    "truncating divergent tail"
                );
                if let Err(e) =
                    partition.truncate_as_follower(offset, settings.producer_id_expiration_ms)
                {
                    warn!(%tp, "cannot truncate: {e}");
                    break Err(TruncationDeferred::Storage(e.to_string()));
                }
            }
            match step {
                TruncationStep::Complete(_) => break Ok(()),
                TruncationStep::AskAgain(_) if rounds < TRUNCATION_ROUNDS_MAX => {}
                TruncationStep::AskAgain(_) => break Err(TruncationDeferred::TooManyRounds),
            }
        };
        match outcome {
            Ok(()) => update_state(partitions, &tp, &state.target, |s| s.truncated = true),
            Err(why) => {
                debug!(%tp, "truncation deferred: {why}");
                let retry = now_ms() + settings.fetch_backoff_ms;
                update_state(partitions, &tp, &state.target, |s| s.retry_at_ms = retry);
            }
        }
    }
    Ok(())
}

/// Why a partition's truncation waits for the next round.
#[derive(Debug, thiserror::Error)]
enum TruncationDeferred {
    #[error("the leader refused OffsetForLeaderEpoch: {0}")]
    Refused(RemoteError),
    #[error("the local log cannot be truncated: {0}")]
    Storage(String),
    #[error("no common point after {TRUNCATION_ROUNDS_MAX} rounds")]
    TooManyRounds,
}

/// One Fetch for every truncated partition of this source; appends what comes back.
async fn fetch_once(
    ctx: &Arc<dyn ReplicaContext>,
    conn: &mut dyn LeaderLink,
    partitions: &Mutex<HashMap<TopicPartition, FetchState>>,
    wanted: Vec<(TopicPartition, FetchState)>,
    settings: &ReplicationSettings,
) -> Result<(), LinkError> {
    let mut fetched = Vec::new();
    let mut requested: HashMap<(Uuid, i32), (TopicPartition, FetchState, Arc<Partition>)> =
        HashMap::new();
    for (tp, state) in wanted {
        let Some(partition) = hosted(ctx, &tp) else {
            continue;
        };
        fetched.push(FollowerFetchPartition {
            topic_id: state.target.topic_id,
            partition: tp.partition,
            current_leader_epoch: state.target.leader_epoch,
            fetch_offset: partition.log.log_end_offset(),
            last_fetched_epoch: partition.log.latest_epoch().unwrap_or(-1),
            log_start_offset: partition.log.log_start_offset(),
            partition_max_bytes: settings.fetch_max_bytes,
        });
        requested.insert(
            (state.target.topic_id, tp.partition),
            (tp, state, partition),
        );
    }
    if requested.is_empty() {
        return Ok(());
    }
    let request = FollowerFetch {
        replica_id: ctx.replicas().node_id(),
        replica_epoch: ctx.broker_epoch(),
        max_wait_ms: settings.fetch_wait_max_ms,
        min_bytes: settings.fetch_min_bytes,
        max_bytes: settings.fetch_response_max_bytes,
        partitions: fetched,
    };
    let timeout = Duration::from_millis(
        (settings.fetch_wait_max_ms as i64 + settings.socket_timeout_ms) as u64,
    );
    let answers = conn.fetch(request, timeout).await?;
    let mut appended = false;
    for answer in answers {
        let Some((tp, state, partition)) = requested.get(&(answer.topic_id, answer.partition))
        else {
            continue;
        };
        let backoff = |state_partitions: &Mutex<HashMap<TopicPartition, FetchState>>| {
            let retry = now_ms() + settings.fetch_backoff_ms;
            update_state(state_partitions, tp, &state.target, |s| {
                s.retry_at_ms = retry
            });
        };
        let data = match answer.outcome {
            Ok(data) => data,
            Err(RemoteError::OffsetOutOfRange {
                leader_log_start_offset,
            }) => {
                let leo = partition.log.log_end_offset();
                if leader_log_start_offset > leo {
                    // Everything here is older than the leader's log start: start over from
                    // there.
                    info!(%tp, from = leo, to = leader_log_start_offset, "restarting below the leader's log start");
                    if let Err(e) = partition.restart_as_follower_at(
                        leader_log_start_offset,
                        settings.producer_id_expiration_ms,
                    ) {
                        warn!(%tp, "cannot restart the log: {e}");
                    } else {
                        continue;
                    }
                } else {
                    // The leader's log no longer matches where this one ends: find the
                    // common point again.
                    update_state(partitions, tp, &state.target, |s| s.truncated = false);
                }
                backoff(partitions);
                continue;
            }
            Err(RemoteError::Other(what)) => {
                debug!(%tp, "fetch error: {what}");
                backoff(partitions);
                continue;
            }
        };
        if data.diverging {
            update_state(partitions, tp, &state.target, |s| s.truncated = false);
            continue;
        }
        // Still following the same leader at the same epoch?
        let current = partitions.lock().get(tp).map(|s| s.target.clone());
        if current.as_ref() != Some(&state.target) {
            continue;
        }
        if let Some(records) = data.records.filter(|r| !r.is_empty()) {
            let mut owned = BytesMut::from(records.as_ref());
            match partition.append_as_follower(&mut owned, now_ms()) {
                Ok(()) => appended = true,
                Err(e) => {
                    warn!(%tp, "cannot append replicated batches: {e}");
                    update_state(partitions, tp, &state.target, |s| s.truncated = false);
                    backoff(partitions);
                    continue;
                }
            }
        }
        partition.update_follower_high_watermark(data.high_watermark, data.log_start_offset);
    }
    if appended {
        ctx.replicas().notify_appended();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_spread_over_fetchers_as_kafka_spreads_them() {
        // "orders".hashCode() is -1008770331 in Java; 31 * that + p, made positive, mod 3.
        let indexes: Vec<usize> = (0..6)
            .map(|p| fetcher_index(&TopicPartition::new("orders", p), 3))
            .collect();
        assert_eq!(indexes, vec![2, 1, 0, 2, 1, 0]);
        assert_eq!(fetcher_index(&TopicPartition::new("a", 0), 2), 1);
        assert_eq!(fetcher_index(&TopicPartition::new("a", 1), 2), 0);
        // One fetcher per source takes everything.
        assert_eq!(fetcher_index(&TopicPartition::new("orders", 5), 1), 0);
    }
}
