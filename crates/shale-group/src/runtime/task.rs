//! The task that owns one partition's [`CoordinatorShard`]: it serves commands one at a time,
//! fires the shard's timers, appends records and replays them before answering.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use crate::assignor::TopicsImage;
use crate::consumer_types::{ConsumerGroupHeartbeatRequest, DescribedConsumerGroup};

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::clock::Clock;
use super::log::GroupLog;
use crate::core::{CoordinatorShard, Effects, GroupState, RequestToken, Response};
use crate::error::GroupError;
use crate::records::{encode_record, GroupRecord};
use crate::share_types::{
    DescribedShareGroup, ShareGroupHeartbeatInput, ShareOffsetsTopic, SharePartitions,
};
use crate::types::{
    DescribedGroup, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, ListedGroup,
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetFetchRequest,
    OffsetFetchResponse, SyncGroupRequest,
};

/// A request that may change state and is answered with a [`Response`].
pub(crate) enum ShardRequest {
    Join(JoinGroupRequest),
    Sync(SyncGroupRequest),
    Heartbeat(HeartbeatRequest),
    Leave(LeaveGroupRequest),
    Commit(OffsetCommitRequest),
    DeleteOffsets(OffsetDeleteRequest),
    DeleteGroups(Vec<String>),
    ConsumerHeartbeat(ConsumerGroupHeartbeatRequest),
    ShareHeartbeat(ShareGroupHeartbeatInput),
    ShareInitialized(String, SharePartitions),
    ShareUninitialized(String, SharePartitions),
    SharePrepareDeletion(Vec<String>),
    ShareAlterOffsets(String, Vec<ShareOffsetsTopic>),
    SharePrepareOffsetsDeletion(String, Vec<String>),
    ShareCompleteOffsetsDeletion(String, BTreeSet<Uuid>),
}

pub(crate) enum Command {
    Request(ShardRequest, oneshot::Sender<Response>),
    Fetch(
        OffsetFetchRequest,
        oneshot::Sender<Result<OffsetFetchResponse, GroupError>>,
    ),
    Describe(Vec<String>, oneshot::Sender<Vec<DescribedGroup>>),
    List(Vec<GroupState>, oneshot::Sender<Vec<ListedGroup>>),
    PrepareTransactionalOffsets(
        OffsetCommitRequest,
        oneshot::Sender<Result<(OffsetCommitResponse, Vec<GroupRecord>), GroupError>>,
    ),
    TransactionalOffsets(i64, Vec<GroupRecord>, oneshot::Sender<()>),
    TransactionMarker(i64, bool, oneshot::Sender<()>),
    TopicsDeleted(Vec<String>, oneshot::Sender<()>),
    /// OffsetFetch v9+ with the member id and epoch.
    FetchAsMember(
        OffsetFetchRequest,
        Option<String>,
        i32,
        oneshot::Sender<Result<OffsetFetchResponse, GroupError>>,
    ),
    ConsumerDescribe(Vec<String>, oneshot::Sender<Vec<DescribedConsumerGroup>>),
    ShareDescribe(Vec<String>, oneshot::Sender<Vec<DescribedShareGroup>>),
    ShareInitializedPartitions(String, oneshot::Sender<SharePartitions>),
    /// States and types filters of ListGroups v5+.
    ListFiltered(Vec<String>, Vec<String>, oneshot::Sender<Vec<ListedGroup>>),
    /// A topics image and its sequence number (older ones than the last seen are ignored).
    TopicsImage(u64, Arc<TopicsImage>),
}

pub(crate) struct PartitionTask {
    pub(crate) shard: CoordinatorShard,
    pub(crate) log: Arc<dyn GroupLog>,
    pub(crate) clock: Clock,
    pub(crate) commands: mpsc::Receiver<Command>,
    /// Resolves (sender dropped) when the partition is unloaded.
    shutdown: oneshot::Receiver<()>,
    waiters: HashMap<RequestToken, oneshot::Sender<Response>>,
    next_token: u64,
    topics_sequence: u64,
}

impl PartitionTask {
    pub(crate) fn new(
        shard: CoordinatorShard,
        log: Arc<dyn GroupLog>,
        clock: Clock,
        commands: mpsc::Receiver<Command>,
        shutdown: oneshot::Receiver<()>,
        topics_sequence: u64,
    ) -> Self {
        Self {
            shard,
            log,
            clock,
            commands,
            shutdown,
            waiters: HashMap::new(),
            next_token: 0,
            topics_sequence,
        }
    }

    /// Runs until the partition is unloaded. Parked and queued requests are then dropped, which
    /// their callers see as NOT_COORDINATOR.
    pub(crate) async fn run(mut self) {
        loop {
            let deadline = self.shard.next_deadline_ms();
            let sleep_until = deadline.map(|deadline_ms| self.clock.instant_at(deadline_ms));
            tokio::select! {
                biased;
                _ = &mut self.shutdown => break,
                command = self.commands.recv() => match command {
                    Some(command) => self.handle(command).await,
                    None => break,
                },
                _ = sleep(sleep_until), if sleep_until.is_some() => {
                    let effects = self.shard.tick(self.clock.now_ms());
                    self.process(effects).await;
                }
            }
        }
    }

    async fn handle(&mut self, command: Command) {
        let now_ms = self.clock.now_ms();
        match command {
            Command::Request(request, reply) => {
                self.next_token += 1;
                let token = RequestToken(self.next_token);
                self.waiters.insert(token, reply);
                let effects = match request {
                    ShardRequest::Join(request) => self.shard.join_group(token, request, now_ms),
                    ShardRequest::Sync(request) => self.shard.sync_group(token, request, now_ms),
                    ShardRequest::Heartbeat(request) => {
                        self.shard.heartbeat(token, request, now_ms)
                    }
                    ShardRequest::Leave(request) => self.shard.leave_group(token, request, now_ms),
                    ShardRequest::Commit(request) => {
                        self.shard.commit_offsets(token, request, now_ms)
                    }
                    ShardRequest::DeleteOffsets(request) => {
                        self.shard.delete_offsets(token, request, now_ms)
                    }
                    ShardRequest::DeleteGroups(group_ids) => {
                        self.shard.delete_groups(token, group_ids, now_ms)
                    }
                    ShardRequest::ConsumerHeartbeat(request) => {
                        self.shard.consumer_group_heartbeat(token, request, now_ms)
                    }
                    ShardRequest::ShareHeartbeat(request) => {
                        self.shard.share_group_heartbeat(token, request, now_ms)
                    }
                    ShardRequest::ShareInitialized(group_id, topics) => {
                        let result = self
                            .shard
                            .initialize_share_group_state(&group_id, &topics, now_ms);
                        let (records, reply) = match result {
                            Ok(records) => (records, Ok(())),
                            Err(error) => (Vec::new(), Err(error)),
                        };
                        Effects {
                            replies: vec![(token, Response::ShareState(reply))],
                            records,
                        }
                    }
                    ShardRequest::ShareUninitialized(group_id, topics) => Effects {
                        records: self
                            .shard
                            .uninitialize_share_group_state(&group_id, &topics, now_ms),
                        replies: vec![(token, Response::ShareState(Ok(())))],
                    },
                    ShardRequest::ShareAlterOffsets(group_id, topics) => {
                        let (outcome, records) = self
                            .shard
                            .alter_share_group_offsets(&group_id, &topics, now_ms);
                        Effects {
                            replies: vec![(token, Response::ShareAlterOffsets(Ok(outcome)))],
                            records,
                        }
                    }
                    ShardRequest::SharePrepareOffsetsDeletion(group_id, names) => {
                        let (outcome, records) = self
                            .shard
                            .prepare_share_group_offsets_deletion(&group_id, &names, now_ms);
                        Effects {
                            replies: vec![(token, Response::ShareOffsetsDeletion(Ok(outcome)))],
                            records,
                        }
                    }
                    ShardRequest::ShareCompleteOffsetsDeletion(group_id, topic_ids) => Effects {
                        records: self
                            .shard
                            .complete_share_group_offsets_deletion(&group_id, &topic_ids, now_ms),
                        replies: vec![(token, Response::ShareState(Ok(())))],
                    },
                    ShardRequest::SharePrepareDeletion(group_ids) => {
                        let (to_delete, records) =
                            self.shard.prepare_share_groups_deletion(&group_ids, now_ms);
                        Effects {
                            replies: vec![(token, Response::ShareDeletion(Ok(to_delete)))],
                            records,
                        }
                    }
                };
                self.process(effects).await;
            }
            Command::Fetch(request, reply) => {
                let _ = reply.send(self.shard.fetch_offsets(&request));
            }
            Command::Describe(group_ids, reply) => {
                let described = group_ids
                    .iter()
                    .map(|group_id| self.shard.describe_group(group_id))
                    .collect();
                let _ = reply.send(described);
            }
            Command::List(states, reply) => {
                let _ = reply.send(self.shard.list_groups(&states));
            }
            Command::PrepareTransactionalOffsets(request, reply) => {
                let _ = reply.send(self.shard.prepare_transactional_offsets(&request, now_ms));
            }
            Command::TransactionalOffsets(producer_id, records, reply) => {
                for record in &records {
                    self.shard.replay_transactional_offset(producer_id, record);
                }
                let _ = reply.send(());
            }
            Command::TransactionMarker(producer_id, committed, reply) => {
                self.shard.replay_transaction_marker(producer_id, committed);
                let _ = reply.send(());
            }
            Command::TopicsDeleted(topics, reply) => {
                let effects = self.shard.delete_topic_offsets(&topics, now_ms);
                self.process(effects).await;
                let _ = reply.send(());
            }
            Command::FetchAsMember(request, member_id, member_epoch, reply) => {
                let _ = reply.send(self.shard.fetch_offsets_as_member(
                    &request,
                    member_id.as_deref(),
                    member_epoch,
                ));
            }
            Command::ConsumerDescribe(group_ids, reply) => {
                let described = group_ids
                    .iter()
                    .map(|group_id| self.shard.describe_consumer_group(group_id))
                    .collect();
                let _ = reply.send(described);
            }
            Command::ShareDescribe(group_ids, reply) => {
                let described = group_ids
                    .iter()
                    .map(|group_id| self.shard.describe_share_group(group_id))
                    .collect();
                let _ = reply.send(described);
            }
            Command::ShareInitializedPartitions(group_id, reply) => {
                let _ = reply.send(self.shard.initialized_share_partitions(&group_id));
            }
            Command::ListFiltered(states, types, reply) => {
                let _ = reply.send(self.shard.list_groups_filtered(&states, &types));
            }
            Command::TopicsImage(sequence, image) => {
                if sequence > self.topics_sequence {
                    self.topics_sequence = sequence;
                    let effects = self.shard.on_topics_image(image, now_ms);
                    self.process(effects).await;
                }
            }
        }
    }

    /// Appends the records of each batch of effects, replays them, then answers; when the append
    /// fails the answers carry the mapped error and the shard reacts to the lost write.
    async fn process(&mut self, effects: Effects) {
        let mut queue = VecDeque::from([effects]);
        while let Some(effects) = queue.pop_front() {
            if effects.records.is_empty() {
                self.deliver(effects.replies, None);
                continue;
            }
            let encoded = effects.records.iter().map(encode_record).collect();
            match self.log.append(self.shard.partition(), encoded).await {
                Ok(()) => {
                    for record in &effects.records {
                        self.shard.replay(record);
                    }
                    self.deliver(effects.replies, None);
                }
                Err(error) => {
                    tracing::warn!(
                        partition = self.shard.partition(),
                        %error,
                        "failed to append group records"
                    );
                    let error = error.to_group_error();
                    self.deliver(effects.replies, Some(error.clone()));
                    let now_ms = self.clock.now_ms();
                    queue.push_back(
                        self.shard
                            .on_append_failed(&effects.records, &error, now_ms),
                    );
                }
            }
        }
    }

    fn deliver(&mut self, replies: Vec<(RequestToken, Response)>, error: Option<GroupError>) {
        for (token, response) in replies {
            let response = match &error {
                Some(error) => response.failed(error.clone()),
                None => response,
            };
            if let Some(waiter) = self.waiters.remove(&token) {
                let _ = waiter.send(response);
            }
        }
    }
}

async fn sleep(until: Option<tokio::time::Instant>) {
    match until {
        Some(until) => tokio::time::sleep_until(until).await,
        None => std::future::pending().await,
    }
}
