use std::collections::BTreeMap;

use bytes::Bytes;

use crate::config::GroupConfig;
use crate::core::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::consumer_protocol::encode_subscription;
use crate::records::GroupRecord;
use crate::types::*;

pub(super) const GROUP: &str = "group-1";
pub(super) const SESSION_MS: i32 = 10_000;
pub(super) const REBALANCE_MS: i32 = 30_000;

pub(super) fn test_config(initial_rebalance_delay_ms: i32) -> GroupConfig {
    GroupConfig {
        session_timeout_ms_min: 1_000,
        initial_rebalance_delay_ms,
        ..GroupConfig::default()
    }
}

/// Drives a shard like the runtime does: records are replayed, then replies are collected.
pub(super) struct Harness {
    pub(super) shard: CoordinatorShard,
    pub(super) now_ms: i64,
    next_token: u64,
    replies: BTreeMap<RequestToken, Response>,
    taken: std::collections::BTreeSet<RequestToken>,
    pub(super) log: Vec<GroupRecord>,
}

impl Harness {
    pub(super) fn new(config: GroupConfig) -> Self {
        let mut counter = 0u64;
        let shard = CoordinatorShard::with_member_ids(
            0,
            config,
            Box::new(move |prefix| {
                counter += 1;
                format!("{prefix}-{counter}")
            }),
        );
        let mut harness = Self {
            shard,
            now_ms: 1_000_000,
            next_token: 0,
            replies: BTreeMap::new(),
            taken: std::collections::BTreeSet::new(),
            log: Vec::new(),
        };
        harness.shard.on_loaded(harness.now_ms);
        harness
    }

    /// Tokens issued so far that never got a reply.
    pub(super) fn unanswered(&self) -> Vec<RequestToken> {
        (1..=self.next_token)
            .map(RequestToken)
            .filter(|token| !self.replies.contains_key(token) && !self.taken.contains(token))
            .collect()
    }

    pub(super) fn token(&mut self) -> RequestToken {
        self.next_token += 1;
        RequestToken(self.next_token)
    }

    pub(super) fn apply(&mut self, effects: Effects) {
        for record in effects.records {
            self.shard.replay(&record);
            self.log.push(record);
        }
        for (token, response) in effects.replies {
            assert!(
                !self.taken.contains(&token) && self.replies.insert(token, response).is_none(),
                "two replies to one request"
            );
        }
    }

    /// Like the runtime when the append of `effects.records` fails with `error`: nothing is
    /// replayed or logged, the batch's replies carry the error, and the shard reacts.
    pub(super) fn apply_failed(&mut self, effects: Effects, error: GroupError) {
        let reaction = self
            .shard
            .on_append_failed(&effects.records, &error, self.now_ms);
        let replies = effects
            .replies
            .into_iter()
            .map(|(token, response)| (token, response.failed(error.clone())))
            .collect();
        self.apply(Effects {
            replies,
            records: Vec::new(),
        });
        self.apply(reaction);
    }

    pub(super) fn advance(&mut self, ms: i64) {
        self.now_ms += ms;
        let effects = self.shard.tick(self.now_ms);
        self.apply(effects);
    }

    pub(super) fn take(&mut self, token: RequestToken) -> Option<Response> {
        let response = self.replies.remove(&token)?;
        self.taken.insert(token);
        Some(response)
    }

    pub(super) fn join(&mut self, request: JoinGroupRequest) -> RequestToken {
        let token = self.token();
        let effects = self.shard.join_group(token, request, self.now_ms);
        self.apply(effects);
        token
    }

    pub(super) fn join_result(
        &mut self,
        token: RequestToken,
    ) -> Option<Result<JoinGroupResponse, GroupError>> {
        match self.take(token)? {
            Response::Join(result) => Some(result),
            other => panic!("not a join reply: {other:?}"),
        }
    }

    /// Joins a new dynamic member the v4+ way (MEMBER_ID_REQUIRED, then rejoin); returns the
    /// parked token and the member id.
    pub(super) fn join_new(
        &mut self,
        client_id: &str,
        protocols: &[(&str, &[&str])],
    ) -> (RequestToken, String) {
        let first = self.join(join_request("", None, client_id, protocols));
        let member_id = match self.join_result(first) {
            Some(Err(GroupError::MemberIdRequired { member_id })) => member_id,
            other => panic!("expected MEMBER_ID_REQUIRED, got {other:?}"),
        };
        let token = self.join(join_request(&member_id, None, client_id, protocols));
        (token, member_id)
    }

    pub(super) fn rejoin(
        &mut self,
        member_id: &str,
        protocols: &[(&str, &[&str])],
    ) -> RequestToken {
        self.join(join_request(member_id, None, "client", protocols))
    }

    pub(super) fn sync(
        &mut self,
        member_id: &str,
        generation_id: i32,
        assignments: &[(&str, &[u8])],
    ) -> RequestToken {
        let token = self.token();
        let request = SyncGroupRequest {
            group_id: GROUP.into(),
            generation_id,
            member_id: member_id.into(),
            group_instance_id: None,
            protocol_type: Some("consumer".into()),
            protocol_name: None,
            assignments: assignments
                .iter()
                .map(|(member, bytes)| SyncGroupAssignment {
                    member_id: (*member).into(),
                    assignment: Bytes::copy_from_slice(bytes),
                })
                .collect(),
        };
        let effects = self.shard.sync_group(token, request, self.now_ms);
        self.apply(effects);
        token
    }

    pub(super) fn sync_result(
        &mut self,
        token: RequestToken,
    ) -> Option<Result<SyncGroupResponse, GroupError>> {
        match self.take(token)? {
            Response::Sync(result) => Some(result),
            other => panic!("not a sync reply: {other:?}"),
        }
    }

    pub(super) fn heartbeat(
        &mut self,
        member_id: &str,
        generation_id: i32,
    ) -> Result<(), GroupError> {
        self.heartbeat_static(member_id, None, generation_id)
    }

    pub(super) fn heartbeat_static(
        &mut self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Result<(), GroupError> {
        let token = self.token();
        let request = HeartbeatRequest {
            group_id: GROUP.into(),
            generation_id,
            member_id: member_id.into(),
            group_instance_id: group_instance_id.map(Into::into),
        };
        let effects = self.shard.heartbeat(token, request, self.now_ms);
        self.apply(effects);
        match self.take(token) {
            Some(Response::Heartbeat(result)) => result,
            other => panic!("not a heartbeat reply: {other:?}"),
        }
    }

    pub(super) fn leave(
        &mut self,
        members: Vec<LeavingMember>,
    ) -> Result<LeaveGroupResponse, GroupError> {
        let token = self.token();
        let request = LeaveGroupRequest {
            group_id: GROUP.into(),
            members,
        };
        let effects = self.shard.leave_group(token, request, self.now_ms);
        self.apply(effects);
        match self.take(token) {
            Some(Response::Leave(result)) => result,
            other => panic!("not a leave reply: {other:?}"),
        }
    }

    pub(super) fn commit(
        &mut self,
        group_id: &str,
        generation_id: i32,
        member_id: &str,
        offsets: &[(&str, i32, i64, &str)],
    ) -> Result<OffsetCommitResponse, GroupError> {
        let token = self.token();
        let mut topics: Vec<OffsetCommitTopic> = Vec::new();
        for (topic, partition, offset, metadata) in offsets {
            let entry = OffsetCommitPartition {
                partition_index: *partition,
                committed_offset: *offset,
                committed_leader_epoch: 1,
                committed_metadata: Some((*metadata).into()),
            };
            match topics.iter_mut().find(|existing| existing.name == *topic) {
                Some(existing) => existing.partitions.push(entry),
                None => topics.push(OffsetCommitTopic {
                    name: (*topic).into(),
                    partitions: vec![entry],
                }),
            }
        }
        let request = OffsetCommitRequest {
            group_id: group_id.into(),
            generation_id,
            member_id: member_id.into(),
            group_instance_id: None,
            retention_time_ms: -1,
            reports_missing_group: false,
            topics,
        };
        let effects = self.shard.commit_offsets(token, request, self.now_ms);
        self.apply(effects);
        match self.take(token) {
            Some(Response::OffsetCommit(result)) => result,
            other => panic!("not a commit reply: {other:?}"),
        }
    }

    pub(super) fn fetch(&self, group_id: &str, topic: &str, partition: i32) -> i64 {
        let response = self
            .shard
            .fetch_offsets(&OffsetFetchRequest {
                group_id: group_id.into(),
                topics: Some(vec![OffsetFetchTopic {
                    name: topic.into(),
                    partition_indexes: vec![partition],
                }]),
                require_stable: false,
            })
            .unwrap();
        response.topics[0].partitions[0].committed_offset
    }

    /// Forms a stable group of dynamic members with assignment `assign-<member>` (needs an
    /// initial rebalance delay so that all join one generation); returns the member ids in join
    /// order and the generation.
    pub(super) fn stable_group(&mut self, clients: &[&str]) -> (Vec<String>, i32) {
        assert!(self.shard.config().initial_rebalance_delay_ms > 0);
        let topics: &[&str] = &["topic-a"];
        let protocols: &[(&str, &[&str])] = &[("range", topics)];
        let joins: Vec<(RequestToken, String)> = clients
            .iter()
            .map(|client| self.join_new(client, protocols))
            .collect();
        let mut responses = Vec::new();
        for (token, _) in &joins {
            let mut waited = 0;
            let response = loop {
                if let Some(result) = self.join_result(*token) {
                    break result.unwrap();
                }
                assert!(waited < i64::from(REBALANCE_MS), "join never completed");
                self.advance(500);
                waited += 500;
            };
            responses.push(response);
        }
        let generation = responses[0].generation_id;
        let leader = responses[0].leader.clone();
        let members: Vec<String> = joins
            .iter()
            .map(|(_, member_id)| member_id.clone())
            .collect();
        let assignments: Vec<(String, Vec<u8>)> = members
            .iter()
            .map(|member| (member.clone(), format!("assign-{member}").into_bytes()))
            .collect();
        let borrowed: Vec<(&str, &[u8])> = assignments
            .iter()
            .map(|(member, bytes)| (member.as_str(), bytes.as_slice()))
            .collect();
        let mut syncs = Vec::new();
        for member in members.iter().filter(|member| **member != leader) {
            syncs.push(self.sync(member, generation, &[]));
        }
        syncs.push(self.sync(&leader, generation, &borrowed));
        for token in syncs {
            self.sync_result(token).unwrap().unwrap();
        }
        assert_eq!(
            self.shard.group_state(GROUP),
            Some(crate::core::GroupState::Stable)
        );
        (members, generation)
    }
}

pub(super) fn join_request(
    member_id: &str,
    group_instance_id: Option<&str>,
    client_id: &str,
    protocols: &[(&str, &[&str])],
) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: GROUP.into(),
        session_timeout_ms: SESSION_MS,
        rebalance_timeout_ms: REBALANCE_MS,
        member_id: member_id.into(),
        group_instance_id: group_instance_id.map(Into::into),
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|(name, topics)| JoinGroupProtocol {
                name: (*name).into(),
                metadata: Bytes::from(encode_subscription(topics)),
            })
            .collect(),
        reason: None,
        client_id: client_id.into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: true,
        supports_skip_assignment: true,
    }
}
