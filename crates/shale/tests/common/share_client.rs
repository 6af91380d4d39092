//! A share group member (KIP-932) that survives broker failures, in raw frames: it finds its
//! group coordinator and the partition leader through whichever node answers, heartbeats,
//! fetches and acknowledges, and starts over (a new share session at epoch 0, a rejoin at
//! member epoch 0) whenever a node dies, moves a role away or fences it. Every record it is
//! handed and every acknowledgement that succeeded goes into a shared [`Ledger`], in one
//! order, so that a test can check what was delivered after what was acknowledged.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, MetadataRequest, RequestKind, ResponseKind,
    ShareGroupHeartbeatRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::newer::{
    describe_share_group_offsets_request as offsets_wire, share_acknowledge_request as ack_wire,
    share_fetch_request as fetch_wire,
};
use shale_protocol::{NewerRequest, NewerResponse, RequestHeader, Response};
use uuid::Uuid;

pub const ACCEPT: i8 = 1;
pub const KEY_TYPE_GROUP: i8 = 0;
pub const KEY_TYPE_SHARE: i8 = 2;

const UNKNOWN_MEMBER_ID: i16 = 25;
const FENCED_MEMBER_EPOCH: i16 = 110;

/// A node's client address, by node id.
pub type Nodes = Vec<(i32, String)>;

pub fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// One connection that reports a dead peer as `None` instead of panicking.
pub struct Link {
    stream: TcpStream,
    correlation: i32,
}

impl Link {
    pub fn open(addr: &str) -> Option<Link> {
        let addr: SocketAddr = addr.parse().ok()?;
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
        // A live broker answers within a fetch's wait; silence this long is a dead one.
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .ok()?;
        Some(Link {
            stream,
            correlation: 1,
        })
    }

    fn header(&mut self, key: ApiKey, version: i16) -> RequestHeader {
        self.correlation += 1;
        RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id: self.correlation,
            client_id: Some("share-cluster-test".into()),
            header_version: key.request_header_version(version),
        }
    }

    fn exchange(&mut self, frame: &[u8]) -> Option<Bytes> {
        self.stream.write_all(frame).ok()?;
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).ok()?;
        let mut buf = vec![0u8; usize::try_from(i32::from_be_bytes(len)).ok()?];
        self.stream.read_exact(&mut buf).ok()?;
        Some(Bytes::from(buf))
    }

    pub fn kafka(
        &mut self,
        key: ApiKey,
        version: i16,
        request: RequestKind,
    ) -> Option<ResponseKind> {
        let header = self.header(key, version);
        let frame = shale_protocol::encode_request(&header, &request).unwrap();
        let answer = self.exchange(&frame)?;
        let (correlation, response) =
            shale_protocol::decode_response(key as i16, version, answer).unwrap();
        assert_eq!(correlation, header.correlation_id);
        Some(response)
    }

    pub fn newer(
        &mut self,
        key: ApiKey,
        version: i16,
        request: NewerRequest,
    ) -> Option<NewerResponse> {
        let header = self.header(key, version);
        let frame = shale_protocol::encode_newer_request(&header, &request).unwrap();
        let answer = self.exchange(&frame)?;
        match shale_protocol::decode_any_response(key as i16, version, answer).unwrap() {
            (correlation, Response::Newer(newer)) => {
                assert_eq!(correlation, header.correlation_id);
                Some(newer)
            }
            (_, other) => panic!("{other:?}"),
        }
    }
}

/// One request to the first node of `nodes` that answers it.
pub fn ask_any(
    nodes: &Nodes,
    key: ApiKey,
    version: i16,
    request: &RequestKind,
) -> Option<ResponseKind> {
    nodes
        .iter()
        .find_map(|(_, addr)| Link::open(addr)?.kafka(key, version, request.clone()))
}

/// The node coordinating `key` (a group, or a share-partition's state), as a live node says.
pub fn find_coordinator(nodes: &Nodes, key_type: i8, key: &str) -> Option<i32> {
    let request = FindCoordinatorRequest::default()
        .with_key_type(key_type)
        .with_coordinator_keys(vec![s(key)]);
    match ask_any(
        nodes,
        ApiKey::FindCoordinator,
        // Share coordinator keys need v6.
        6,
        &RequestKind::FindCoordinator(request),
    )? {
        ResponseKind::FindCoordinator(r) => {
            let found = r.coordinators.first()?;
            (found.error_code == 0 && found.node_id.0 >= 0).then_some(found.node_id.0)
        }
        other => panic!("{other:?}"),
    }
}

/// Partition 0 of `topic`: its leader (once it has one) and the topic id.
pub fn partition_leader(nodes: &Nodes, topic: &str) -> Option<(i32, Uuid)> {
    let request = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(TopicName(s(topic))))
        ]))
        .with_allow_auto_topic_creation(false);
    match ask_any(nodes, ApiKey::Metadata, 12, &RequestKind::Metadata(request))? {
        ResponseKind::Metadata(r) => {
            let t = r.topics.first()?;
            let p = t.partitions.iter().find(|p| p.partition_index == 0)?;
            (t.error_code == 0 && p.error_code == 0 && p.leader_id.0 >= 0)
                .then_some((p.leader_id.0, t.topic_id))
        }
        other => panic!("{other:?}"),
    }
}

/// Partition 0's start offset in the share group's persisted state, as the group
/// coordinator describes it (DescribeShareGroupOffsets).
pub fn share_start_offset(nodes: &Nodes, group: &str, topic: &str) -> Option<i64> {
    let coordinator = find_coordinator(nodes, KEY_TYPE_GROUP, group)?;
    let addr = &nodes.iter().find(|(n, _)| *n == coordinator)?.1;
    let request = offsets_wire::DescribeShareGroupOffsetsRequest {
        groups: vec![offsets_wire::DescribeShareGroupOffsetsRequestGroup {
            group_id: s(group),
            topics: Some(vec![offsets_wire::DescribeShareGroupOffsetsRequestTopic {
                topic_name: s(topic),
                partitions: vec![0],
            }]),
        }],
    };
    match Link::open(addr)?.newer(
        ApiKey::DescribeShareGroupOffsets,
        1,
        NewerRequest::DescribeShareGroupOffsets(request),
    )? {
        NewerResponse::DescribeShareGroupOffsets(r) => {
            let g = r.groups.first()?;
            let p = g.topics.first()?.partitions.first()?;
            (g.error_code == 0 && p.error_code == 0).then_some(p.start_offset)
        }
        other => panic!("{other:?}"),
    }
}

/// A record as a ShareFetch handed it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    pub offset: i64,
    pub delivery_count: i16,
    /// Position in the ledger's order.
    pub step: u64,
    pub member: &'static str,
}

/// Everything the members saw, in the order they saw it.
#[derive(Debug, Default)]
pub struct Ledger {
    step: u64,
    pub deliveries: Vec<Delivery>,
    /// Each offset's first successful acknowledgement (its step).
    pub acknowledged: BTreeMap<i64, u64>,
    /// Offsets whose acknowledgement got no answer: the broker may or may not have taken it.
    pub unanswered: BTreeMap<i64, u64>,
    /// Failed acknowledgements by error code, for the report.
    pub ack_errors: BTreeMap<i16, usize>,
}

impl Ledger {
    pub fn next_step(&mut self) -> u64 {
        self.step += 1;
        self.step
    }

    fn delivered(&mut self, member: &'static str, records: &[(i64, i16)]) {
        for &(offset, delivery_count) in records {
            let step = self.next_step();
            self.deliveries.push(Delivery {
                offset,
                delivery_count,
                step,
                member,
            });
        }
    }

    fn acknowledged(&mut self, offsets: &[i64]) {
        let step = self.next_step();
        for &offset in offsets {
            self.acknowledged.entry(offset).or_insert(step);
        }
    }

    fn unanswered(&mut self, offsets: &[i64]) {
        let step = self.next_step();
        for &offset in offsets {
            self.unanswered.entry(offset).or_insert(step);
        }
    }

    fn failed(&mut self, code: i16) {
        *self.ack_errors.entry(code).or_default() += 1;
    }

    /// Every offset below `end` was acknowledged, or acknowledged without an answer.
    pub fn settled(&self, end: i64) -> bool {
        (0..end).all(|o| self.acknowledged.contains_key(&o) || self.unanswered.contains_key(&o))
    }
}

/// The ledger the members write and the test reads, with a signal on every change so that
/// the test can act the moment a condition holds (a kill mid-way) rather than polling.
#[derive(Debug, Default)]
pub struct Shared {
    ledger: Mutex<Ledger>,
    changed: Condvar,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap()
    }

    /// Blocks until `condition` holds for the ledger, and hands it over still locked (the
    /// members wait meanwhile); panics naming `what` after `timeout`.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut condition: impl FnMut(&Ledger) -> bool,
    ) -> MutexGuard<'_, Ledger> {
        let (guard, result) = self
            .changed
            .wait_timeout_while(self.lock(), timeout, |l| !condition(l))
            .unwrap();
        assert!(!result.timed_out(), "timed out waiting for {what}");
        guard
    }

    fn update(&self, change: impl FnOnce(&mut Ledger)) {
        change(&mut self.lock());
        self.changed.notify_all();
    }
}

/// Contiguous runs of `offsets` as (first, last) pairs.
fn ranges(offsets: &[i64]) -> Vec<(i64, i64)> {
    let sorted: BTreeSet<i64> = offsets.iter().copied().collect();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for offset in sorted {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == offset => *last = offset,
            _ => out.push((offset, offset)),
        }
    }
    out
}

/// How a member acknowledges what it got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckStyle {
    /// A ShareAcknowledge right after each ShareFetch.
    Separate,
    /// On the next ShareFetch of the same share session.
    Piggybacked,
}

pub struct ShareMember {
    pub name: &'static str,
    group: String,
    topic: String,
    member_id: String,
    member_epoch: i32,
    style: AckStyle,
    nodes: Nodes,
    ledger: Arc<Shared>,
    coordinator: Option<Link>,
    last_heartbeat: Option<Instant>,
    /// The topic id once partition 0 is assigned to this member.
    assigned: Option<Uuid>,
    leader: Option<Link>,
    session_epoch: i32,
    /// Acquired on the current share session and not yet acknowledged.
    held: Vec<i64>,
    /// Records asked for per ShareFetch, so that the work takes many rounds.
    pub max_records: i32,
    /// The last refusals and failures (what, error code; -1 for no answer), for a failure's
    /// message.
    refusals: std::collections::VecDeque<(&'static str, i16)>,
}

/// How often a member heartbeats (the cluster's `group.share.heartbeat.interval.ms`).
const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(500);
/// Pause before asking again after a node did not answer or refused for now.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

impl ShareMember {
    pub fn new(
        name: &'static str,
        group: &str,
        topic: &str,
        style: AckStyle,
        nodes: Nodes,
        ledger: Arc<Shared>,
    ) -> ShareMember {
        ShareMember {
            name,
            group: group.to_string(),
            topic: topic.to_string(),
            member_id: Uuid::new_v4().to_string(),
            member_epoch: 0,
            style,
            nodes,
            ledger,
            coordinator: None,
            last_heartbeat: None,
            assigned: None,
            leader: None,
            session_epoch: 0,
            held: Vec::new(),
            max_records: 10,
            refusals: std::collections::VecDeque::new(),
        }
    }

    /// Where the member stands, for a failure's message.
    pub fn describe(&self) -> String {
        format!(
            "member {} epoch {} assigned {:?} coordinator {} leader {} share session epoch {} \
             holding {:?}; last refusals {:?}",
            self.name,
            self.member_epoch,
            self.assigned,
            self.coordinator.is_some(),
            self.leader.is_some(),
            self.session_epoch,
            self.held,
            self.refusals,
        )
    }

    fn note(&mut self, what: &'static str, code: i16) {
        if self.refusals.len() == 8 {
            self.refusals.pop_front();
        }
        self.refusals.push_back((what, code));
    }

    /// A heartbeat when one is due. Whatever goes wrong is forgotten and asked again: a
    /// coordinator that died or moved is looked up anew, a fenced member rejoins.
    fn heartbeat(&mut self) {
        let due = self
            .last_heartbeat
            .is_none_or(|at| at.elapsed() >= HEARTBEAT_INTERVAL);
        if !due && self.assigned.is_some() {
            return;
        }
        if self.coordinator.is_none() {
            let addr = find_coordinator(&self.nodes, KEY_TYPE_GROUP, &self.group)
                .and_then(|id| self.nodes.iter().find(|(n, _)| *n == id))
                .map(|(_, addr)| addr.clone());
            self.coordinator = addr.as_deref().and_then(Link::open);
            if self.coordinator.is_none() {
                std::thread::sleep(RETRY_PAUSE);
                return;
            }
        }
        let request = ShareGroupHeartbeatRequest::default()
            .with_group_id(s(&self.group).into())
            .with_member_id(s(&self.member_id))
            .with_member_epoch(self.member_epoch)
            .with_subscribed_topic_names(Some(vec![TopicName(s(&self.topic))]));
        let answer = self.coordinator.as_mut().and_then(|c| {
            c.kafka(
                ApiKey::ShareGroupHeartbeat,
                1,
                RequestKind::ShareGroupHeartbeat(request),
            )
        });
        let answer = match answer {
            Some(ResponseKind::ShareGroupHeartbeat(r)) => r,
            Some(other) => panic!("{other:?}"),
            None => {
                self.note("heartbeat", -1);
                self.coordinator = None;
                return;
            }
        };
        if answer.error_code != 0 {
            self.note("heartbeat", answer.error_code);
        }
        match answer.error_code {
            0 => {}
            UNKNOWN_MEMBER_ID | FENCED_MEMBER_EPOCH => {
                self.member_epoch = 0;
                self.assigned = None;
                return;
            }
            // NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a load in progress, a timeout: the
            // coordinator is moving; find it again.
            _ => {
                self.coordinator = None;
                std::thread::sleep(RETRY_PAUSE);
                return;
            }
        }
        self.member_epoch = answer.member_epoch;
        self.last_heartbeat = Some(Instant::now());
        if let Some(assignment) = answer.assignment {
            self.assigned = assignment
                .topic_partitions
                .iter()
                .find(|t| t.partitions.contains(&0))
                .map(|t| t.topic_id);
        }
    }

    /// A share session on the partition's current leader, opened if there is none.
    fn connect_leader(&mut self) -> bool {
        if self.leader.is_some() {
            return true;
        }
        self.held.clear();
        self.session_epoch = 0;
        let addr = partition_leader(&self.nodes, &self.topic)
            .and_then(|(id, _)| self.nodes.iter().find(|(n, _)| *n == id))
            .map(|(_, addr)| addr.clone());
        self.leader = addr.as_deref().and_then(Link::open);
        if self.leader.is_none() {
            self.note("leader lookup", -1);
        }
        self.leader.is_some()
    }

    /// Drops the share session: the leader died, moved, or refused it.
    fn lose_leader(&mut self) {
        self.leader = None;
        self.held.clear();
        self.session_epoch = 0;
        std::thread::sleep(RETRY_PAUSE);
    }

    /// One round: a heartbeat if due, a ShareFetch (carrying the acknowledgements of what
    /// the last one acquired when piggybacking), and a ShareAcknowledge of what it acquired
    /// when acknowledging separately. How many records the fetch acquired, or `None` when it
    /// did not get an answer.
    pub fn round(&mut self) -> Option<usize> {
        self.heartbeat();
        let Some(topic_id) = self.assigned else {
            std::thread::sleep(RETRY_PAUSE);
            return None;
        };
        if !self.connect_leader() {
            std::thread::sleep(RETRY_PAUSE);
            return None;
        }
        let acks = match self.style {
            AckStyle::Piggybacked if self.session_epoch > 0 => std::mem::take(&mut self.held),
            _ => Vec::new(),
        };
        let acquired = self.fetch(topic_id, &acks)?;
        if self.style == AckStyle::Separate && !self.held.is_empty() {
            let acks = std::mem::take(&mut self.held);
            self.acknowledge(topic_id, &acks);
        }
        Some(acquired)
    }

    fn fetch(&mut self, topic_id: Uuid, acks: &[i64]) -> Option<usize> {
        let request = fetch_wire::ShareFetchRequest {
            group_id: Some(s(&self.group)),
            member_id: Some(s(&self.member_id)),
            share_session_epoch: self.session_epoch,
            max_wait_ms: 200,
            min_bytes: 1,
            max_bytes: 1 << 20,
            max_records: self.max_records,
            batch_size: self.max_records,
            topics: vec![fetch_wire::FetchTopic {
                topic_id,
                partitions: vec![fetch_wire::FetchPartition {
                    partition_index: 0,
                    acknowledgement_batches: ranges(acks)
                        .into_iter()
                        .map(
                            |(first_offset, last_offset)| fetch_wire::AcknowledgementBatch {
                                first_offset,
                                last_offset,
                                acknowledge_types: vec![ACCEPT],
                            },
                        )
                        .collect(),
                    ..Default::default()
                }],
            }],
            ..Default::default()
        };
        let answer = self
            .leader
            .as_mut()
            .and_then(|l| l.newer(ApiKey::ShareFetch, 1, NewerRequest::ShareFetch(request)));
        let answer = match answer {
            Some(NewerResponse::ShareFetch(r)) => r,
            Some(other) => panic!("{other:?}"),
            None => {
                self.note("share fetch", -1);
                if !acks.is_empty() {
                    self.ledger.update(|l| l.unanswered(acks));
                }
                self.lose_leader();
                return None;
            }
        };
        if answer.error_code != 0 {
            self.note("share fetch", answer.error_code);
            // A refused session carries no acknowledgement.
            if !acks.is_empty() {
                self.ledger.update(|l| l.failed(answer.error_code));
            }
            self.lose_leader();
            return None;
        }
        self.session_epoch += 1;
        let mut acquired = Vec::new();
        let mut ack_code = None;
        let mut partition_error = 0;
        for p in answer
            .responses
            .iter()
            .filter(|t| t.topic_id == topic_id)
            .flat_map(|t| &t.partitions)
            .filter(|p| p.partition_index == 0)
        {
            ack_code = Some(p.acknowledge_error_code);
            partition_error = p.error_code;
            for range in &p.acquired_records {
                for offset in range.first_offset..=range.last_offset {
                    acquired.push((offset, range.delivery_count));
                }
            }
        }
        // Kafka answers for every partition whose acknowledgements the request carried, even
        // in an incremental answer with nothing else to say about it.
        assert!(
            acks.is_empty() || ack_code.is_some(),
            "a ShareFetch with acknowledgements answered without their partition: {answer:?}"
        );
        self.ledger.update(|ledger| {
            match ack_code {
                _ if acks.is_empty() => {}
                Some(0) => ledger.acknowledged(acks),
                Some(code) => ledger.failed(code),
                None => {}
            }
            ledger.delivered(self.name, &acquired);
        });
        self.held.extend(acquired.iter().map(|(offset, _)| *offset));
        if partition_error != 0 {
            self.note("share fetch partition", partition_error);
            self.lose_leader();
            return None;
        }
        Some(acquired.len())
    }

    fn acknowledge(&mut self, topic_id: Uuid, acks: &[i64]) {
        let request = ack_wire::ShareAcknowledgeRequest {
            group_id: Some(s(&self.group)),
            member_id: Some(s(&self.member_id)),
            share_session_epoch: self.session_epoch,
            topics: vec![ack_wire::AcknowledgeTopic {
                topic_id,
                partitions: vec![ack_wire::AcknowledgePartition {
                    partition_index: 0,
                    acknowledgement_batches: ranges(acks)
                        .into_iter()
                        .map(
                            |(first_offset, last_offset)| ack_wire::AcknowledgementBatch {
                                first_offset,
                                last_offset,
                                acknowledge_types: vec![ACCEPT],
                            },
                        )
                        .collect(),
                }],
            }],
            ..Default::default()
        };
        let answer = self.leader.as_mut().and_then(|l| {
            l.newer(
                ApiKey::ShareAcknowledge,
                1,
                NewerRequest::ShareAcknowledge(request),
            )
        });
        let answer = match answer {
            Some(NewerResponse::ShareAcknowledge(r)) => r,
            Some(other) => panic!("{other:?}"),
            None => {
                self.note("share acknowledge", -1);
                self.ledger.update(|l| l.unanswered(acks));
                self.lose_leader();
                return;
            }
        };
        if answer.error_code != 0 {
            self.note("share acknowledge", answer.error_code);
            self.ledger.update(|l| l.failed(answer.error_code));
            self.lose_leader();
            return;
        }
        self.session_epoch += 1;
        let code = answer
            .responses
            .iter()
            .filter(|t| t.topic_id == topic_id)
            .flat_map(|t| &t.partitions)
            .find(|p| p.partition_index == 0)
            .map(|p| p.error_code);
        match code {
            Some(0) => self.ledger.update(|l| l.acknowledged(acks)),
            Some(code) => {
                self.ledger.update(|l| l.failed(code));
                if code != 121 {
                    // Anything but INVALID_RECORD_STATE (a lock that ran out) means the
                    // leader is no longer this one's.
                    self.lose_leader();
                }
            }
            None => panic!("ShareAcknowledge answered without the partition: {answer:?}"),
        }
    }
}
