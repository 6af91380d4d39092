//! Followers: one fetcher task per source broker (the leader of the partitions it serves),
//! as Kafka's ReplicaFetcherThread. Each partition first truncates with
//! OffsetForLeaderEpoch (KIP-101, KIP-279), then fetches with Kafka's Fetch protocol as a
//! replica (`ReplicaState`, v15), appending the leader's batches unchanged and taking the
//! high watermark the leader reports.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, OffsetForLeaderEpochRequest, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use parking_lot::Mutex;
use shale_log::TopicPartition;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};
use uuid::Uuid;

use super::client::{BrokerClient, ClientError};
use super::settings::ReplicationSettings;
use super::truncation::{decide, LeaderEpochEnd, TruncationStep};
use crate::partitions::Partition;
use crate::time::now_ms;
use crate::Broker;

const FETCH_VERSION: i16 = 15;
const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;
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
    /// `num.replica.fetchers`, read from the broker's static configuration at first use (the
    /// manager is built before the broker it belongs to).
    fetchers_per_source: std::sync::OnceLock<usize>,
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
    pub fn reconcile(&self, broker: &Arc<Broker>, wanted: HashMap<TopicPartition, FollowTarget>) {
        let per_source = *self
            .fetchers_per_source
            .get_or_init(|| ReplicationSettings::from_broker(broker).fetchers_per_source);
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
                    broker.clone(),
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
    broker: Arc<Broker>,
    source: i32,
    partitions: Arc<Mutex<HashMap<TopicPartition, FetchState>>>,
    changed: Arc<Notify>,
) {
    let settings = ReplicationSettings::from_broker(&broker);
    let mut shutdown = broker.shutdown_signal();
    let mut client: Option<BrokerClient> = None;
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
            match connect(&broker, source, &settings).await {
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
        let Some(conn) = client.as_mut() else {
            continue;
        };
        let untruncated: Vec<(TopicPartition, FetchState)> = ready
            .iter()
            .filter(|(_, s)| !s.truncated)
            .map(|(tp, s)| (tp.clone(), s.clone()))
            .collect();
        let result = if !untruncated.is_empty() {
            truncate_partitions(&broker, conn, &partitions, untruncated, &settings).await
        } else {
            let fetchable: Vec<(TopicPartition, FetchState)> = ready
                .iter()
                .map(|(tp, s)| (tp.clone(), s.clone()))
                .collect();
            tokio::select! {
                r = fetch_once(&broker, conn, &partitions, fetchable, &settings) => r,
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

async fn connect(
    broker: &Arc<Broker>,
    source: i32,
    settings: &ReplicationSettings,
) -> Result<BrokerClient, ClientError> {
    let image = broker.image();
    let registration = image
        .broker(source)
        .ok_or_else(|| ClientError::Io(std::io::Error::other("leader not registered")))?;
    let endpoint = registration
        .listener(&broker.config.inter_broker_listener_name)
        .or_else(|| registration.listeners.first())
        .ok_or_else(|| ClientError::Io(std::io::Error::other("leader has no listener")))?;
    let addr = format!("{}:{}", endpoint.host, endpoint.port);
    BrokerClient::connect(
        &addr,
        format!("broker-{}-fetcher-{source}", broker.node_id()),
        Duration::from_millis(settings.socket_timeout_ms as u64),
    )
    .await
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

fn hosted(broker: &Arc<Broker>, tp: &TopicPartition) -> Option<Arc<Partition>> {
    broker.replicas.get(tp)
}

/// OffsetForLeaderEpoch for every partition that has not truncated at its current epoch.
async fn truncate_partitions(
    broker: &Arc<Broker>,
    conn: &mut BrokerClient,
    partitions: &Mutex<HashMap<TopicPartition, FetchState>>,
    wanted: Vec<(TopicPartition, FetchState)>,
    settings: &ReplicationSettings,
) -> Result<(), ClientError> {
    for (tp, state) in wanted {
        let Some(partition) = hosted(broker, &tp) else {
            continue;
        };
        let mut rounds = 0;
        let outcome = loop {
            rounds += 1;
            let Some(local_epoch) = partition.log.latest_epoch() else {
                // Nothing written under any epoch: nothing can diverge.
                break Ok(());
            };
            let answer = ask_epoch_end(
                conn,
                &tp,
                state.target.leader_epoch,
                local_epoch,
                broker,
                settings,
            )
            .await?;
            let leader = match answer {
                Ok(leader) => leader,
                Err(code) => break Err(code),
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
                    partition.truncate_as_follower(offset, broker.config.producer_id_expiration_ms)
                {
                    warn!(%tp, "cannot truncate: {e}");
                    break Err(ResponseError::KafkaStorageError.code());
                }
            }
            match step {
                TruncationStep::Complete(_) => break Ok(()),
                TruncationStep::AskAgain(_) if rounds < TRUNCATION_ROUNDS_MAX => {}
                TruncationStep::AskAgain(_) => break Err(ResponseError::UnknownServerError.code()),
            }
        };
        match outcome {
            Ok(()) => update_state(partitions, &tp, &state.target, |s| s.truncated = true),
            Err(code) => {
                debug!(%tp, code, "truncation deferred");
                let retry = now_ms() + settings.fetch_backoff_ms;
                update_state(partitions, &tp, &state.target, |s| s.retry_at_ms = retry);
            }
        }
    }
    Ok(())
}

/// One OffsetForLeaderEpoch round: `Ok(Ok(answer))`, `Ok(Err(error code))` for a partition
/// error, `Err` when the connection failed.
async fn ask_epoch_end(
    conn: &mut BrokerClient,
    tp: &TopicPartition,
    current_leader_epoch: i32,
    local_epoch: i32,
    broker: &Arc<Broker>,
    settings: &ReplicationSettings,
) -> Result<Result<Option<LeaderEpochEnd>, i16>, ClientError> {
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(broker.node_id()))
        .with_topics(vec![OffsetForLeaderTopic::default()
            .with_topic(TopicName(StrBytes::from_string(tp.topic.clone())))
            .with_partitions(vec![OffsetForLeaderPartition::default()
                .with_partition(tp.partition)
                .with_current_leader_epoch(current_leader_epoch)
                .with_leader_epoch(local_epoch)])]);
    let response = conn
        .call(
            ApiKey::OffsetForLeaderEpoch,
            OFFSET_FOR_LEADER_EPOCH_VERSION,
            RequestKind::OffsetForLeaderEpoch(request),
            Duration::from_millis(settings.socket_timeout_ms as u64),
        )
        .await?;
    let ResponseKind::OffsetForLeaderEpoch(response) = response else {
        return Ok(Err(ResponseError::UnknownServerError.code()));
    };
    let Some(p) = response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition == tp.partition)
    else {
        return Ok(Err(ResponseError::UnknownServerError.code()));
    };
    if p.error_code != 0 {
        return Ok(Err(p.error_code));
    }
    if p.leader_epoch < 0 || p.end_offset < 0 {
        return Ok(Ok(None));
    }
    Ok(Ok(Some(LeaderEpochEnd {
        epoch: p.leader_epoch,
        end_offset: p.end_offset,
    })))
}

/// One Fetch for every truncated partition of this source; appends what comes back.
async fn fetch_once(
    broker: &Arc<Broker>,
    conn: &mut BrokerClient,
    partitions: &Mutex<HashMap<TopicPartition, FetchState>>,
    wanted: Vec<(TopicPartition, FetchState)>,
    settings: &ReplicationSettings,
) -> Result<(), ClientError> {
    let mut by_topic: HashMap<Uuid, Vec<FetchPartition>> = HashMap::new();
    let mut requested: HashMap<(Uuid, i32), (TopicPartition, FetchState, Arc<Partition>)> =
        HashMap::new();
    for (tp, state) in wanted {
        let Some(partition) = hosted(broker, &tp) else {
            continue;
        };
        by_topic.entry(state.target.topic_id).or_default().push(
            FetchPartition::default()
                .with_partition(tp.partition)
                .with_current_leader_epoch(state.target.leader_epoch)
                .with_fetch_offset(partition.log.log_end_offset())
                .with_last_fetched_epoch(partition.log.latest_epoch().unwrap_or(-1))
                .with_log_start_offset(partition.log.log_start_offset())
                .with_partition_max_bytes(settings.fetch_max_bytes),
        );
        requested.insert(
            (state.target.topic_id, tp.partition),
            (tp, state, partition),
        );
    }
    if requested.is_empty() {
        return Ok(());
    }
    let request = FetchRequest::default()
        .with_replica_state(
            ReplicaState::default()
                .with_replica_id(BrokerId(broker.node_id()))
                .with_replica_epoch(broker.metadata.broker_epoch()),
        )
        .with_max_wait_ms(settings.fetch_wait_max_ms)
        .with_min_bytes(settings.fetch_min_bytes)
        .with_max_bytes(settings.fetch_response_max_bytes)
        .with_isolation_level(0)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(topic_id, parts)| {
                    FetchTopic::default()
                        .with_topic_id(topic_id)
                        .with_partitions(parts)
                })
                .collect(),
        );
    let timeout = Duration::from_millis(
        (settings.fetch_wait_max_ms as i64 + settings.socket_timeout_ms) as u64,
    );
    let response = conn
        .call(
            ApiKey::Fetch,
            FETCH_VERSION,
            RequestKind::Fetch(request),
            timeout,
        )
        .await?;
    let ResponseKind::Fetch(response) = response else {
        return Err(ClientError::Io(std::io::Error::other(
            "unexpected response kind",
        )));
    };
    if response.error_code != 0 {
        return Err(ClientError::Io(std::io::Error::other(format!(
            "fetch refused with error {}",
            response.error_code
        ))));
    }
    let mut appended = false;
    for topic in response.responses {
        for p in topic.partitions {
            let Some((tp, state, partition)) = requested.get(&(topic.topic_id, p.partition_index))
            else {
                continue;
            };
            let backoff = |state_partitions: &Mutex<HashMap<TopicPartition, FetchState>>| {
                let retry = now_ms() + settings.fetch_backoff_ms;
                update_state(state_partitions, tp, &state.target, |s| {
                    s.retry_at_ms = retry
                });
            };
            if p.error_code != 0 {
                if p.error_code == ResponseError::OffsetOutOfRange.code() {
                    let leo = partition.log.log_end_offset();
                    if p.log_start_offset > leo {
                        // Everything here is older than the leader's log start: start over
                        // from there.
                        info!(%tp, from = leo, to = p.log_start_offset, "restarting below the leader's log start");
                        if let Err(e) = partition.restart_as_follower_at(
                            p.log_start_offset,
                            broker.config.producer_id_expiration_ms,
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
                } else {
                    debug!(%tp, code = p.error_code, "fetch error");
                }
                backoff(partitions);
                continue;
            }
            if p.diverging_epoch.epoch >= 0 {
                update_state(partitions, tp, &state.target, |s| s.truncated = false);
                continue;
            }
            // Still following the same leader at the same epoch?
            let current = partitions.lock().get(tp).map(|s| s.target.clone());
            if current.as_ref() != Some(&state.target) {
                continue;
            }
            if let Some(records) = p.records.filter(|r| !r.is_empty()) {
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
            partition.update_follower_high_watermark(p.high_watermark, p.log_start_offset);
        }
    }
    if appended {
        broker.replicas.notify_appended();
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
