//! The coordinator service: many `__consumer_offsets` partitions, each run by its own task over
//! a [`GroupLog`].
//!
//! Requests are routed to the partition of their group ([`crate::placement::partition_for`]).
//! A partition that is not loaded answers NOT_COORDINATOR; one that is loading answers
//! COORDINATOR_LOAD_IN_PROGRESS. Each partition task serves one request at a time and answers
//! only after the records a request produced were appended.

mod clock;
mod log;
mod task;

#[cfg(test)]
mod consumer_tests;
#[cfg(test)]
mod share_tests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

pub use log::{AppendFuture, EncodedRecord, GroupLog, GroupLogError};

use crate::assignor::TopicsImage;
use crate::config::GroupConfig;
use crate::consumer_types::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, DescribedConsumerGroup,
};
use crate::core::{ConsumerSettings, CoordinatorShard, GroupState, Response};
use crate::error::GroupError;
use crate::placement::partition_for;
use crate::records::{decode_record, GroupRecord};
use crate::share_types::{
    AlterShareGroupOffsetsOutcome, DescribedShareGroup, ShareGroupHeartbeatInput,
    ShareGroupHeartbeatOutcome, ShareOffsetsDeletion, ShareOffsetsTopic,
};
use crate::types::*;
use clock::Clock;
use task::{Command, PartitionTask, ShardRequest};

/// How many requests may wait for a partition task.
const PARTITION_QUEUE_MAX: usize = 1_024;

enum Slot {
    Loading {
        epoch: u64,
    },
    Active {
        commands: mpsc::Sender<Command>,
        /// Dropping it stops the partition's task.
        _shutdown: oneshot::Sender<()>,
    },
}

/// What loading a partition found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadSummary {
    pub records_replayed: usize,
    /// Records of types this coordinator does not handle, or undecodable ones, skipped.
    pub records_skipped: usize,
    pub groups: usize,
    /// False when the partition was unloaded or reloaded while this load ran.
    pub activated: bool,
}

/// Rebuilds one partition's state from its records; see [`GroupCoordinator::start_loading`].
pub struct PartitionLoader {
    coordinator: GroupCoordinator,
    partition: i32,
    epoch: u64,
    /// The sequence number of the topics image the shard started from.
    topics_sequence: u64,
    shard: CoordinatorShard,
    summary: LoadSummary,
}

impl std::fmt::Debug for PartitionLoader {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PartitionLoader")
            .field("partition", &self.partition)
            .field("summary", &self.summary)
            .finish()
    }
}

impl PartitionLoader {
    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// A record from a non-transactional batch (or from a committed transaction's batch when
    /// the broker resolves transactions itself).
    pub fn replay(&mut self, key: &[u8], value: Option<&[u8]>) {
        if let Some(record) = self.decode(key, value) {
            self.shard.replay(&record);
        }
    }

    /// A record from a transactional batch of `producer_id` (TxnOffsetCommit).
    pub fn replay_transactional(&mut self, producer_id: i64, key: &[u8], value: Option<&[u8]>) {
        if let Some(record) = self.decode(key, value) {
            match record.clone() {
                GroupRecord::OffsetCommit { value: Some(_), .. } => {
                    self.shard.replay_transactional_offset(producer_id, &record)
                }
                _ => self.shard.replay(&record),
            }
        }
    }

    /// A commit or abort marker of `producer_id`.
    pub fn replay_transaction_marker(&mut self, producer_id: i64, committed: bool) {
        self.shard.replay_transaction_marker(producer_id, committed);
    }

    /// Starts serving the partition; does nothing if it was unloaded or reloaded meanwhile.
    pub fn finish(self) -> LoadSummary {
        let mut summary = self.summary;
        summary.groups = self.shard.list_groups(&[]).len();
        summary.activated =
            self.coordinator
                .activate(self.partition, self.epoch, self.topics_sequence, self.shard);
        summary
    }

    fn decode(&mut self, key: &[u8], value: Option<&[u8]>) -> Option<GroupRecord> {
        match decode_record(key, value) {
            Ok(record) => {
                self.summary.records_replayed += 1;
                Some(record)
            }
            Err(error) => {
                tracing::debug!(partition = self.partition, %error, "skipping __consumer_offsets record");
                self.summary.records_skipped += 1;
                None
            }
        }
    }
}

/// Handle to the group coordinator; cheap to clone.
#[derive(Clone)]
pub struct GroupCoordinator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for GroupCoordinator {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("GroupCoordinator")
            .field("num_partitions", &self.inner.num_partitions)
            .finish()
    }
}

struct Inner {
    config: GroupConfig,
    num_partitions: i32,
    log: Arc<dyn GroupLog>,
    clock: Clock,
    slots: Mutex<HashMap<i32, Slot>>,
    next_epoch: Mutex<u64>,
    consumer: ConsumerSettings,
    /// The latest topics image and its sequence number.
    topics: Mutex<(u64, Arc<TopicsImage>)>,
}

impl GroupCoordinator {
    /// `num_partitions` is `offsets.topic.num.partitions`. Consumer groups get no assignor and
    /// no group configs: see [`GroupCoordinator::with_consumer_settings`].
    pub fn new(config: GroupConfig, num_partitions: i32, log: Arc<dyn GroupLog>) -> Self {
        Self::with_consumer_settings(config, num_partitions, log, ConsumerSettings::default())
    }

    /// A coordinator whose consumer groups assign with `consumer.assignors` (the broker passes
    /// `Arc::new(shale_group::assignor::assignor_named)`) and read per-group settings from
    /// `consumer.group_configs`.
    pub fn with_consumer_settings(
        config: GroupConfig,
        num_partitions: i32,
        log: Arc<dyn GroupLog>,
        consumer: ConsumerSettings,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                num_partitions: num_partitions.max(1),
                log,
                clock: Clock::new(),
                slots: Mutex::new(HashMap::new()),
                next_epoch: Mutex::new(0),
                consumer,
                topics: Mutex::new((0, Arc::new(TopicsImage::default()))),
            }),
        }
    }

    /// The `__consumer_offsets` partition that coordinates `group_id`.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        partition_for(group_id, self.inner.num_partitions)
    }

    /// Starts loading `partition` (this broker became the leader of that `__consumer_offsets`
    /// partition): requests for its groups get COORDINATOR_LOAD_IN_PROGRESS until
    /// [`PartitionLoader::finish`]. Feed the loader the partition's records in log order.
    pub fn start_loading(&self, partition: i32) -> PartitionLoader {
        let epoch = {
            let mut next = lock(&self.inner.next_epoch);
            *next += 1;
            *next
        };
        lock(&self.inner.slots).insert(partition, Slot::Loading { epoch });
        let (topics_sequence, topics) = lock(&self.inner.topics).clone();
        PartitionLoader {
            coordinator: self.clone(),
            partition,
            epoch,
            topics_sequence,
            shard: CoordinatorShard::new(partition, self.inner.config.clone())
                .with_consumer_settings(self.inner.consumer.clone())
                .with_topics_image(topics),
            summary: LoadSummary::default(),
        }
    }

    /// Loads `partition` from all its records at once (see [`GroupCoordinator::start_loading`]
    /// to stream them). Must run inside a tokio runtime.
    pub fn load_partition<I>(&self, partition: i32, records: I) -> LoadSummary
    where
        I: IntoIterator<Item = EncodedRecord>,
    {
        let mut loader = self.start_loading(partition);
        for (key, value) in records {
            loader.replay(&key, value.as_deref());
        }
        loader.finish()
    }

    fn activate(
        &self,
        partition: i32,
        epoch: u64,
        topics_sequence: u64,
        mut shard: CoordinatorShard,
    ) -> bool {
        shard.on_loaded(self.inner.clock.now_ms());
        let mut slots = lock(&self.inner.slots);
        let current = matches!(
            slots.get(&partition),
            Some(Slot::Loading { epoch: loading }) if *loading == epoch
        );
        if !current {
            // Unloaded (or reloaded) meanwhile: this load is stale.
            return false;
        }
        let (sender, receiver) = mpsc::channel(PARTITION_QUEUE_MAX);
        let (shutdown, shutdown_receiver) = oneshot::channel();
        let task = PartitionTask::new(
            shard,
            self.inner.log.clone(),
            self.inner.clock,
            receiver,
            shutdown_receiver,
            topics_sequence,
        );
        tokio::spawn(task.run());
        // An image that arrived while the partition was loading.
        let (latest_sequence, latest) = lock(&self.inner.topics).clone();
        if latest_sequence > topics_sequence {
            let _ = sender.try_send(Command::TopicsImage(latest_sequence, latest));
        }
        slots.insert(
            partition,
            Slot::Active {
                commands: sender,
                _shutdown: shutdown,
            },
        );
        true
    }

    /// ConsumerGroupHeartbeat. Answers once the records it wrote are committed.
    pub async fn consumer_group_heartbeat(
        &self,
        request: ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, GroupError> {
        let group_id = request.group_id.clone();
        match self
            .request(&group_id, ShardRequest::ConsumerHeartbeat(request))
            .await?
        {
            Response::ConsumerHeartbeat(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// ShareGroupHeartbeat. Answers once the records it wrote are committed; a refusal is in
    /// the outcome's response with Kafka's message. When the outcome asks for share-state
    /// initialization the broker sends InitializeShareGroupState and then reports with
    /// [`GroupCoordinator::initialize_share_group_state`] or
    /// [`GroupCoordinator::uninitialize_share_group_state`].
    pub async fn share_group_heartbeat(
        &self,
        request: ShareGroupHeartbeatInput,
    ) -> Result<ShareGroupHeartbeatOutcome, GroupError> {
        let group_id = request.group_id.clone();
        match self
            .request(&group_id, ShardRequest::ShareHeartbeat(request))
            .await?
        {
            Response::ShareHeartbeat(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// ShareGroupDescribe, in request order; a group this broker does not coordinate carries
    /// NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS) in its `error`.
    pub async fn share_group_describe(&self, group_ids: Vec<String>) -> Vec<DescribedShareGroup> {
        self.describe_each(group_ids, Command::ShareDescribe, |group_id, error| {
            DescribedShareGroup::failed(group_id, error, None)
        })
        .await
    }

    /// InitializeShareGroupState succeeded for these share-partitions of `group_id` (asked by a
    /// heartbeat at `group_epoch`, which Kafka does not check either): they become assignable.
    pub async fn initialize_share_group_state(
        &self,
        group_id: &str,
        group_epoch: i32,
        topics: BTreeMap<Uuid, BTreeSet<i32>>,
    ) -> Result<(), GroupError> {
        let _ = group_epoch;
        let request = ShardRequest::ShareInitialized(group_id.to_owned(), topics);
        match self.request(group_id, request).await? {
            Response::ShareState(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// InitializeShareGroupState failed for these share-partitions of `group_id`: they are no
    /// longer initializing, and a later heartbeat asks for them again.
    pub async fn uninitialize_share_group_state(
        &self,
        group_id: &str,
        topics: BTreeMap<Uuid, BTreeSet<i32>>,
    ) -> Result<(), GroupError> {
        let request = ShardRequest::ShareUninitialized(group_id.to_owned(), topics);
        match self.request(group_id, request).await? {
            Response::ShareState(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// The share-partitions of `group_id` that have state: DescribeShareGroupOffsets for all
    /// topics reads these from the share coordinator (none for an unknown group, as Kafka).
    pub async fn share_group_initialized_partitions(
        &self,
        group_id: &str,
    ) -> Result<BTreeMap<Uuid, BTreeSet<i32>>, GroupError> {
        let commands = self.commands_for(group_id)?;
        let (reply, receiver) = oneshot::channel();
        send(
            &commands,
            Command::ShareInitializedPartitions(group_id.to_owned(), reply),
        )
        .await?;
        receiver.await.map_err(|_| GroupError::NotCoordinator)
    }

    /// AlterShareGroupOffsets for an empty (or new) share group: per-partition answers, and
    /// the share-partitions the broker initializes at the given start offsets before reporting
    /// with [`GroupCoordinator::initialize_share_group_state`] (or
    /// [`GroupCoordinator::uninitialize_share_group_state`] on failure).
    pub async fn alter_share_group_offsets(
        &self,
        group_id: &str,
        topics: Vec<ShareOffsetsTopic>,
    ) -> Result<AlterShareGroupOffsetsOutcome, GroupError> {
        let request = ShardRequest::ShareAlterOffsets(group_id.to_owned(), topics);
        match self.request(group_id, request).await? {
            Response::ShareAlterOffsets(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// DeleteShareGroupOffsets, first step: what the broker deletes with
    /// DeleteShareGroupState; then [`GroupCoordinator::complete_share_group_offsets_deletion`]
    /// with the topics whose state was deleted.
    pub async fn prepare_share_group_offsets_deletion(
        &self,
        group_id: &str,
        topic_names: Vec<String>,
    ) -> Result<ShareOffsetsDeletion, GroupError> {
        let request = ShardRequest::SharePrepareOffsetsDeletion(group_id.to_owned(), topic_names);
        match self.request(group_id, request).await? {
            Response::ShareOffsetsDeletion(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// DeleteShareGroupOffsets, last step: these topics' share state was deleted.
    pub async fn complete_share_group_offsets_deletion(
        &self,
        group_id: &str,
        topic_ids: BTreeSet<Uuid>,
    ) -> Result<(), GroupError> {
        let request = ShardRequest::ShareCompleteOffsetsDeletion(group_id.to_owned(), topic_ids);
        match self.request(group_id, request).await? {
            Response::ShareState(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// DeleteGroups, first step for share groups: the share-partitions whose state the broker
    /// must delete with DeleteShareGroupState, by group, marked deleting in the groups' records.
    /// Then [`GroupCoordinator::delete_groups`] deletes the groups (a share group with members
    /// gets NON_EMPTY_GROUP there; one whose state deletion failed should be left out of it).
    /// Groups this broker does not coordinate are left out too.
    pub async fn prepare_share_groups_deletion(
        &self,
        group_ids: Vec<String>,
    ) -> BTreeMap<String, BTreeMap<Uuid, BTreeSet<i32>>> {
        let mut prepared = BTreeMap::new();
        for (partition, indexes) in self.by_partition(&group_ids) {
            let ids: Vec<String> = indexes
                .iter()
                .map(|index| group_ids[*index].clone())
                .collect();
            let Ok(commands) = self.commands_for_partition(partition) else {
                continue;
            };
            if let Ok(Response::ShareDeletion(Ok(groups))) = self
                .request_on(&commands, ShardRequest::SharePrepareDeletion(ids))
                .await
            {
                prepared.extend(groups);
            }
        }
        prepared
    }

    /// ConsumerGroupDescribe, in request order; a group this broker does not coordinate
    /// carries NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS) in its `error`.
    pub async fn consumer_group_describe(
        &self,
        group_ids: Vec<String>,
    ) -> Vec<DescribedConsumerGroup> {
        self.describe_each(group_ids, Command::ConsumerDescribe, |group_id, error| {
            crate::core::consumer::failed_description(group_id, error)
        })
        .await
    }

    /// The cluster's topics changed: every partition served here refreshes its consumer
    /// groups' regular expressions, and a group whose subscribed topics changed moves to a new
    /// epoch. Partitions loading later start from this image. Must run inside a tokio runtime.
    pub fn on_topics_image(&self, image: Arc<TopicsImage>) {
        let sequence = {
            let mut topics = lock(&self.inner.topics);
            topics.0 += 1;
            topics.1 = image.clone();
            topics.0
        };
        let senders: Vec<mpsc::Sender<Command>> = lock(&self.inner.slots)
            .values()
            .filter_map(|slot| match slot {
                Slot::Active { commands, .. } => Some(commands.clone()),
                Slot::Loading { .. } => None,
            })
            .collect();
        for commands in senders {
            match commands.try_send(Command::TopicsImage(sequence, image.clone())) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(command)) => {
                    // A busy partition gets it once its queue has room; the sequence number
                    // keeps a later image from being overtaken.
                    tokio::spawn(async move {
                        let _ = commands.send(command).await;
                    });
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
    }

    /// OffsetFetch v9+ for one group with the member id and epoch the request carries (a
    /// consumer group checks them).
    pub async fn fetch_offsets_for_member(
        &self,
        request: OffsetFetchRequest,
        member_id: Option<String>,
        member_epoch: i32,
    ) -> Result<OffsetFetchResponse, GroupError> {
        let commands = self.commands_for(&request.group_id)?;
        let (reply, receiver) = oneshot::channel();
        send(
            &commands,
            Command::FetchAsMember(request, member_id, member_epoch, reply),
        )
        .await?;
        receiver.await.map_err(|_| GroupError::NotCoordinator)?
    }

    /// ListGroups v5+: states (Kafka's names) and types ("classic", "consumer", "share") filters, both
    /// case-insensitive; empty filters list everything. COORDINATOR_LOAD_IN_PROGRESS while any
    /// partition is loading, as Kafka.
    pub async fn list_groups_filtered(
        &self,
        states: &[String],
        types: &[String],
    ) -> Result<Vec<ListedGroup>, GroupError> {
        let senders = self.active_senders()?;
        let mut groups = Vec::new();
        for commands in senders {
            let (reply, receiver) = oneshot::channel();
            let command = Command::ListFiltered(states.to_vec(), types.to_vec(), reply);
            if send(&commands, command).await.is_err() {
                continue;
            }
            if let Ok(listed) = receiver.await {
                groups.extend(listed);
            }
        }
        groups.sort_by(|left, right| left.group_id.cmp(&right.group_id));
        Ok(groups)
    }

    fn active_senders(&self) -> Result<Vec<mpsc::Sender<Command>>, GroupError> {
        let slots = lock(&self.inner.slots);
        let mut senders = Vec::with_capacity(slots.len());
        for slot in slots.values() {
            match slot {
                Slot::Loading { .. } => return Err(GroupError::CoordinatorLoadInProgress),
                Slot::Active { commands, .. } => senders.push(commands.clone()),
            }
        }
        Ok(senders)
    }

    /// Stops serving `partition` (leadership moved): NOT_COORDINATOR from now on, and requests
    /// parked on it are answered NOT_COORDINATOR.
    pub fn unload_partition(&self, partition: i32) {
        lock(&self.inner.slots).remove(&partition);
    }

    /// Partitions served or loading.
    pub fn partitions(&self) -> Vec<i32> {
        let mut partitions: Vec<i32> = lock(&self.inner.slots).keys().copied().collect();
        partitions.sort_unstable();
        partitions
    }

    pub async fn join_group(
        &self,
        request: JoinGroupRequest,
    ) -> Result<JoinGroupResponse, GroupError> {
        let group_id = request.group_id.clone();
        match self.request(&group_id, ShardRequest::Join(request)).await? {
            Response::Join(result) => result,
            other => Err(unexpected(other)),
        }
    }

    pub async fn sync_group(
        &self,
        request: SyncGroupRequest,
    ) -> Result<SyncGroupResponse, GroupError> {
        let group_id = request.group_id.clone();
        match self.request(&group_id, ShardRequest::Sync(request)).await? {
            Response::Sync(result) => result,
            other => Err(unexpected(other)),
        }
    }

    pub async fn heartbeat(&self, request: HeartbeatRequest) -> Result<(), GroupError> {
        let group_id = request.group_id.clone();
        match self
            .request(&group_id, ShardRequest::Heartbeat(request))
            .await?
        {
            Response::Heartbeat(result) => result,
            other => Err(unexpected(other)),
        }
    }

    pub async fn leave_group(
        &self,
        request: LeaveGroupRequest,
    ) -> Result<LeaveGroupResponse, GroupError> {
        let group_id = request.group_id.clone();
        match self
            .request(&group_id, ShardRequest::Leave(request))
            .await?
        {
            Response::Leave(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// Topic existence (UNKNOWN_TOPIC_OR_PARTITION) is the broker's check, before this call.
    pub async fn commit_offsets(
        &self,
        request: OffsetCommitRequest,
    ) -> Result<OffsetCommitResponse, GroupError> {
        let group_id = request.group_id.clone();
        match self
            .request(&group_id, ShardRequest::Commit(request))
            .await?
        {
            Response::OffsetCommit(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// One group; the broker loops over the groups of OffsetFetch v8+.
    pub async fn fetch_offsets(
        &self,
        request: OffsetFetchRequest,
    ) -> Result<OffsetFetchResponse, GroupError> {
        let commands = self.commands_for(&request.group_id)?;
        let (reply, receiver) = oneshot::channel();
        send(&commands, Command::Fetch(request, reply)).await?;
        receiver.await.map_err(|_| GroupError::NotCoordinator)?
    }

    pub async fn delete_offsets(
        &self,
        request: OffsetDeleteRequest,
    ) -> Result<OffsetDeleteResponse, GroupError> {
        let group_id = request.group_id.clone();
        match self
            .request(&group_id, ShardRequest::DeleteOffsets(request))
            .await?
        {
            Response::OffsetDelete(result) => result,
            other => Err(unexpected(other)),
        }
    }

    /// Describes each group, in request order; a group this broker does not coordinate carries
    /// NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS) in its `error`.
    pub async fn describe_groups(&self, group_ids: Vec<String>) -> Vec<DescribedGroup> {
        self.describe_each(group_ids, Command::Describe, |group_id, error| {
            failed_description(group_id.to_owned(), error)
        })
        .await
    }

    /// Asks each partition's shard to describe its groups with `command`, and answers in
    /// request order; a group whose partition could not answer gets `failed(group, error)`.
    async fn describe_each<T: Clone>(
        &self,
        group_ids: Vec<String>,
        command: impl Fn(Vec<String>, oneshot::Sender<Vec<T>>) -> Command,
        failed: impl Fn(&str, GroupError) -> T,
    ) -> Vec<T> {
        let mut results: Vec<Option<T>> = vec![None; group_ids.len()];
        for (partition, indexes) in self.by_partition(&group_ids) {
            let ids: Vec<String> = indexes
                .iter()
                .map(|index| group_ids[*index].clone())
                .collect();
            let described = match self.commands_for_partition(partition) {
                Ok(commands) => {
                    let (reply, receiver) = oneshot::channel();
                    match send(&commands, command(ids.clone(), reply)).await {
                        Ok(()) => receiver.await.map_err(|_| GroupError::NotCoordinator),
                        Err(error) => Err(error),
                    }
                }
                Err(error) => Err(error),
            };
            for (slot, (index, group_id)) in indexes.into_iter().zip(&ids).enumerate() {
                results[index] = Some(match &described {
                    Ok(described) => described
                        .get(slot)
                        .cloned()
                        .unwrap_or_else(|| failed(group_id, GroupError::NotCoordinator)),
                    Err(error) => failed(group_id, error.clone()),
                });
            }
        }
        results
            .into_iter()
            .zip(group_ids)
            .map(|(result, group_id)| {
                result.unwrap_or_else(|| failed(&group_id, GroupError::NotCoordinator))
            })
            .collect()
    }

    /// Groups of every partition served here, filtered by state (empty filter: all).
    /// COORDINATOR_LOAD_IN_PROGRESS while any partition is loading, as Kafka.
    pub async fn list_groups(&self, states: &[GroupState]) -> Result<Vec<ListedGroup>, GroupError> {
        let senders: Vec<mpsc::Sender<Command>> = {
            let slots = lock(&self.inner.slots);
            let mut senders = Vec::with_capacity(slots.len());
            for slot in slots.values() {
                match slot {
                    Slot::Loading { .. } => return Err(GroupError::CoordinatorLoadInProgress),
                    Slot::Active { commands, .. } => senders.push(commands.clone()),
                }
            }
            senders
        };
        let mut groups = Vec::new();
        for commands in senders {
            let (reply, receiver) = oneshot::channel();
            if send(&commands, Command::List(states.to_vec(), reply))
                .await
                .is_err()
            {
                // Unloaded meanwhile: its groups are no longer ours.
                continue;
            }
            if let Ok(listed) = receiver.await {
                groups.extend(listed);
            }
        }
        groups.sort_by(|left, right| left.group_id.cmp(&right.group_id));
        Ok(groups)
    }

    /// Deletes empty groups, answering per group in request order.
    pub async fn delete_groups(&self, group_ids: Vec<String>) -> Vec<DeleteGroupResult> {
        let mut results: Vec<Option<DeleteGroupResult>> = vec![None; group_ids.len()];
        for (partition, indexes) in self.by_partition(&group_ids) {
            let ids: Vec<String> = indexes
                .iter()
                .map(|index| group_ids[*index].clone())
                .collect();
            let outcome = match self.commands_for_partition(partition) {
                Ok(commands) => self
                    .request_on(&commands, ShardRequest::DeleteGroups(ids.clone()))
                    .await
                    .and_then(|response| match response {
                        Response::DeleteGroups(results) => Ok(results),
                        other => Err(unexpected(other)),
                    }),
                Err(error) => Err(error),
            };
            match outcome {
                Ok(deleted) => {
                    for (index, result) in indexes.into_iter().zip(deleted) {
                        results[index] = Some(result);
                    }
                }
                Err(error) => {
                    for (index, group_id) in indexes.into_iter().zip(ids) {
                        results[index] = Some(DeleteGroupResult {
                            group_id,
                            error: Some(error.clone()),
                        });
                    }
                }
            }
        }
        results
            .into_iter()
            .zip(group_ids)
            .map(|(result, group_id)| {
                result.unwrap_or(DeleteGroupResult {
                    group_id,
                    error: Some(GroupError::NotCoordinator),
                })
            })
            .collect()
    }

    /// Transactions hook: validates a TxnOffsetCommit (routed by its group) and returns the
    /// per-partition results and the records to write, in the producer's transactional batch, to
    /// the group's partition; then call [`GroupCoordinator::add_transactional_offsets`].
    pub async fn prepare_transactional_offsets(
        &self,
        request: OffsetCommitRequest,
    ) -> Result<(OffsetCommitResponse, Vec<GroupRecord>), GroupError> {
        let commands = self.commands_for(&request.group_id)?;
        let (reply, receiver) = oneshot::channel();
        send(
            &commands,
            Command::PrepareTransactionalOffsets(request, reply),
        )
        .await?;
        receiver.await.map_err(|_| GroupError::NotCoordinator)?
    }

    /// Transactions hook: offsets of a TxnOffsetCommit by `producer_id` were written to
    /// `partition` (the transactions layer appends them as a transactional batch). They stay
    /// pending until [`GroupCoordinator::complete_transaction`].
    pub async fn add_transactional_offsets(
        &self,
        partition: i32,
        producer_id: i64,
        records: Vec<GroupRecord>,
    ) -> Result<(), GroupError> {
        let commands = self.commands_for_partition(partition)?;
        let (reply, receiver) = oneshot::channel();
        send(
            &commands,
            Command::TransactionalOffsets(producer_id, records, reply),
        )
        .await?;
        receiver.await.map_err(|_| GroupError::NotCoordinator)
    }

    /// Transactions hook: the commit (`committed`) or abort marker of `producer_id` was written
    /// to `partition`.
    pub async fn complete_transaction(
        &self,
        partition: i32,
        producer_id: i64,
        committed: bool,
    ) -> Result<(), GroupError> {
        let commands = self.commands_for_partition(partition)?;
        let (reply, receiver) = oneshot::channel();
        send(
            &commands,
            Command::TransactionMarker(producer_id, committed, reply),
        )
        .await?;
        receiver.await.map_err(|_| GroupError::NotCoordinator)
    }

    /// Topics were deleted from the cluster: every partition served here removes the groups'
    /// committed offsets of those topics. Completes once the tombstones are written.
    pub async fn on_topics_deleted(&self, topics: Vec<String>) {
        let senders: Vec<mpsc::Sender<Command>> = lock(&self.inner.slots)
            .values()
            .filter_map(|slot| match slot {
                Slot::Active { commands, .. } => Some(commands.clone()),
                Slot::Loading { .. } => None,
            })
            .collect();
        for commands in senders {
            let (reply, receiver) = oneshot::channel();
            if send(&commands, Command::TopicsDeleted(topics.clone(), reply))
                .await
                .is_ok()
            {
                let _ = receiver.await;
            }
        }
    }

    fn by_partition(&self, group_ids: &[String]) -> BTreeMap<i32, Vec<usize>> {
        let mut by_partition: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        for (index, group_id) in group_ids.iter().enumerate() {
            by_partition
                .entry(self.partition_for(group_id))
                .or_default()
                .push(index);
        }
        by_partition
    }

    fn commands_for(&self, group_id: &str) -> Result<mpsc::Sender<Command>, GroupError> {
        self.commands_for_partition(self.partition_for(group_id))
    }

    fn commands_for_partition(&self, partition: i32) -> Result<mpsc::Sender<Command>, GroupError> {
        match lock(&self.inner.slots).get(&partition) {
            None => Err(GroupError::NotCoordinator),
            Some(Slot::Loading { .. }) => Err(GroupError::CoordinatorLoadInProgress),
            Some(Slot::Active { commands, .. }) => Ok(commands.clone()),
        }
    }

    async fn request(&self, group_id: &str, request: ShardRequest) -> Result<Response, GroupError> {
        let commands = self.commands_for(group_id)?;
        self.request_on(&commands, request).await
    }

    async fn request_on(
        &self,
        commands: &mpsc::Sender<Command>,
        request: ShardRequest,
    ) -> Result<Response, GroupError> {
        let (reply, receiver) = oneshot::channel();
        send(commands, Command::Request(request, reply)).await?;
        // The task ends when the partition is unloaded; parked requests are dropped then.
        receiver.await.map_err(|_| GroupError::NotCoordinator)
    }
}

async fn send(commands: &mpsc::Sender<Command>, command: Command) -> Result<(), GroupError> {
    commands
        .send(command)
        .await
        .map_err(|_| GroupError::NotCoordinator)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave these maps half-updated (single inserts and
    // removes), so a poisoned lock is still usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn unexpected(response: Response) -> GroupError {
    GroupError::UnknownServerError(format!("unexpected coordinator response {response:?}"))
}

fn failed_description(group_id: String, error: GroupError) -> DescribedGroup {
    DescribedGroup {
        group_id,
        error: Some(error),
        group_state: GroupState::Dead.kafka_name().to_owned(),
        protocol_type: String::new(),
        protocol_data: String::new(),
        members: Vec::new(),
    }
}
