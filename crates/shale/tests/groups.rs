//! Consumer groups end to end: librdkafka consumers with `subscribe()` against the real `shale`
//! binary (group coordinator, `__consumer_offsets`, rebalances, offsets across restarts).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use common::{admin, block_on, create_topic, produce, Shale};
use kafka_protocol::messages::heartbeat_request::HeartbeatRequest;
use kafka_protocol::messages::heartbeat_response::HeartbeatResponse;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{
    ApiKey, GroupId, JoinGroupRequest, JoinGroupResponse, RequestHeader, ResponseHeader,
    SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use rdkafka::admin::AdminOptions;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Offset, TopicPartitionList};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Counts rebalance callbacks and remembers every partition revoked from the member.
#[derive(Default)]
struct Recorder {
    rebalances: AtomicUsize,
    revoked: Mutex<Vec<i32>>,
}

impl ClientContext for Recorder {}

impl ConsumerContext for Recorder {
    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        self.rebalances.fetch_add(1, Ordering::SeqCst);
        if let Rebalance::Revoke(list) = rebalance {
            let mut revoked = self.revoked.lock().unwrap();
            revoked.extend(list.elements().iter().map(|e| e.partition()));
        }
    }
}

type Member = BaseConsumer<Recorder>;

fn member(shale: &Shale, group: &str, topic: &str, extra: &[(&str, &str)]) -> Member {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", shale.bootstrap())
        .set("group.id", group)
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "300")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest");
    for (k, v) in extra {
        cfg.set(*k, *v);
    }
    let consumer: Member = cfg
        .create_with_context(Recorder::default())
        .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    consumer
}

fn assignment<C: ConsumerContext>(consumer: &BaseConsumer<C>) -> BTreeSet<i32> {
    consumer
        .assignment()
        .map(|list| list.elements().iter().map(|e| e.partition()).collect())
        .unwrap_or_default()
}

/// Polls every member until `done` holds, failing after [`TIMEOUT`].
fn poll_until(members: &[&Member], what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        for m in members {
            let _ = m.poll(Duration::from_millis(20));
        }
        if done() {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

/// The members' assignments are disjoint and cover `0..partitions`; every member has some.
fn balanced(members: &[&Member], partitions: i32) -> bool {
    let mut all = BTreeSet::new();
    let mut total = 0;
    for m in members {
        let a = assignment(*m);
        if a.is_empty() {
            return false;
        }
        total += a.len();
        all.extend(a);
    }
    total == partitions as usize && all == (0..partitions).collect()
}

#[test]
fn members_share_partitions_and_rebalance_when_one_leaves() {
    let shale = Shale::start();
    create_topic(&shale, "six", 6);
    let a = member(&shale, "g-three", "six", &[]);
    let b = member(&shale, "g-three", "six", &[]);
    let c = member(&shale, "g-three", "six", &[]);
    poll_until(&[&a, &b, &c], "three balanced members", || {
        balanced(&[&a, &b, &c], 6)
    });
    for m in [&a, &b, &c] {
        assert_eq!(assignment(m).len(), 2, "six partitions over three members");
    }
    // A member leaving (close sends LeaveGroup) hands its partitions to the others.
    drop(c);
    poll_until(&[&a, &b], "reassignment after a leave", || {
        balanced(&[&a, &b], 6)
    });
    assert_eq!(assignment(&a).len() + assignment(&b).len(), 6);
}

/// A raw protocol connection, for a member that dies without leaving.
struct RawClient {
    stream: TcpStream,
    correlation_id: i32,
}

impl RawClient {
    fn connect(bootstrap: &str) -> RawClient {
        let stream = TcpStream::connect(bootstrap).unwrap();
        stream.set_nodelay(true).unwrap();
        RawClient {
            stream,
            correlation_id: 0,
        }
    }

    fn call<Req: Encodable + HeaderVersion, Resp: Decodable + HeaderVersion>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Resp {
        self.correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("raw-member")));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, Req::header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        let mut frame = BytesMut::new();
        frame.put_i32(body.len() as i32);
        frame.extend_from_slice(&body);
        self.stream.write_all(&frame).unwrap();
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).unwrap();
        let mut response = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut response).unwrap();
        let mut buf = Bytes::from(response);
        let header = ResponseHeader::decode(&mut buf, Resp::header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation_id);
        let decoded = Resp::decode(&mut buf, version).unwrap();
        assert_eq!(buf.remaining(), 0);
        decoded
    }
}

/// ConsumerProtocolSubscription v0 for one topic.
fn subscription(topic: &str) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i16(0);
    out.put_i32(1);
    out.put_i16(topic.len() as i16);
    out.extend_from_slice(topic.as_bytes());
    out.put_i32(-1);
    out.freeze()
}

/// Joins `group` as a plain protocol member, syncs, then heartbeats until told to die, at which
/// point it drops its connection without leaving (a crashed process).
fn raw_member(bootstrap: &str, group: &str, topic: &str, die: mpsc::Receiver<()>) {
    let mut client = RawClient::connect(bootstrap);
    let mut member_id = String::new();
    let deadline = Instant::now() + TIMEOUT;
    let joined: JoinGroupResponse = loop {
        let request = JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.into())))
            .with_session_timeout_ms(2000)
            .with_rebalance_timeout_ms(20_000)
            .with_member_id(StrBytes::from_string(member_id.clone()))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(subscription(topic))]);
        let response: JoinGroupResponse = client.call(ApiKey::JoinGroup, 5, &request);
        match response.error_code {
            0 => break response,
            // MEMBER_ID_REQUIRED: rejoin with the id the coordinator gave.
            79 => member_id = response.member_id.to_string(),
            code => assert!(Instant::now() < deadline, "JoinGroup failed with {code}"),
        }
    };
    let member_id = joined.member_id.clone();
    let generation_id = joined.generation_id;
    let synced: SyncGroupResponse = client.call(
        ApiKey::SyncGroup,
        3,
        &SyncGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.into())))
            .with_generation_id(generation_id)
            .with_member_id(member_id.clone()),
    );
    assert_eq!(synced.error_code, 0, "SyncGroup");
    while die.recv_timeout(Duration::from_millis(300)).is_err() {
        let beat: HeartbeatResponse = client.call(
            ApiKey::Heartbeat,
            3,
            &HeartbeatRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.into())))
                .with_generation_id(generation_id)
                .with_member_id(member_id.clone()),
        );
        assert_eq!(beat.error_code, 0, "heartbeat of the raw member");
    }
    // Dropping the connection without LeaveGroup: the coordinator only learns from the
    // session timeout.
}

#[test]
fn a_dead_member_is_evicted_after_its_session_timeout() {
    let shale = Shale::start();
    create_topic(&shale, "evict", 6);
    let survivor = member(&shale, "g-evict", "evict", &[]);
    poll_until(&[&survivor], "the first member owns everything", || {
        assignment(&survivor).len() == 6
    });
    let (die, dying) = mpsc::channel();
    let bootstrap = shale.bootstrap();
    let raw = std::thread::spawn(move || raw_member(&bootstrap, "g-evict", "evict", dying));
    poll_until(
        &[&survivor],
        "the survivor to share with the raw member",
        || assignment(&survivor).len() == 3,
    );
    die.send(()).unwrap();
    raw.join().unwrap();
    let died = Instant::now();
    poll_until(&[&survivor], "the dead member's eviction", || {
        assignment(&survivor).len() == 6
    });
    // Eviction waits for the 2 s session timeout (never earlier than most of it).
    assert!(
        died.elapsed() >= Duration::from_millis(1500),
        "evicted after {:?}",
        died.elapsed()
    );
}

fn committed(consumer: &Member, topic: &str, partition: i32) -> Option<i64> {
    let mut list = TopicPartitionList::new();
    list.add_partition(topic, partition);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        // Right after a restart the coordinator may still be loading: retry.
        match consumer.committed_offsets(list.clone(), Duration::from_secs(5)) {
            Ok(result) => {
                return match result.find_partition(topic, partition)?.offset() {
                    Offset::Offset(o) => Some(o),
                    _ => None,
                }
            }
            Err(e) => assert!(Instant::now() < deadline, "committed offsets: {e}"),
        }
    }
}

fn commit(consumer: &Member, topic: &str, partition: i32, offset: i64) {
    let mut list = TopicPartitionList::new();
    list.add_partition_offset(topic, partition, Offset::Offset(offset))
        .unwrap();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match consumer.commit(&list, CommitMode::Sync) {
            Ok(()) => return,
            Err(e) => assert!(Instant::now() < deadline, "commit: {e}"),
        }
    }
}

#[test]
fn committed_offsets_survive_restart_and_kill() {
    let mut shale = Shale::start();
    create_topic(&shale, "kept", 2);
    produce(&shale, "kept", 0, 10);
    {
        let c = member(&shale, "g-kept", "kept", &[]);
        poll_until(&[&c], "an assignment", || assignment(&c).len() == 2);
        commit(&c, "kept", 0, 7);
        assert_eq!(committed(&c, "kept", 0), Some(7));
        assert_eq!(committed(&c, "kept", 1), None);
    }
    shale.restart();
    {
        let c = member(&shale, "g-kept", "kept", &[]);
        assert_eq!(committed(&c, "kept", 0), Some(7), "after a clean restart");
        poll_until(&[&c], "an assignment", || assignment(&c).len() == 2);
        commit(&c, "kept", 0, 9);
    }
    shale.restart_after_kill();
    let c = member(&shale, "g-kept", "kept", &[]);
    assert_eq!(committed(&c, "kept", 0), Some(9), "after kill -9");
    // The consumer resumes from the committed offset: the first record it reads is offset 9.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(Ok(message)) = c.poll(Duration::from_millis(100)) {
            use rdkafka::Message;
            if message.partition() == 0 {
                assert_eq!(message.offset(), 9);
                break;
            }
        }
        assert!(Instant::now() < deadline, "no record after the restart");
    }
}

#[test]
fn offsets_of_a_deleted_topic_are_removed() {
    let shale = Shale::start();
    create_topic(&shale, "gone", 1);
    let c = member(&shale, "g-gone", "gone", &[]);
    commit(&c, "gone", 0, 4);
    assert_eq!(committed(&c, "gone", 0), Some(4));
    let deleted = block_on(admin(&shale).delete_topics(&["gone"], &AdminOptions::new())).unwrap();
    assert!(deleted[0].is_ok());
    create_topic(&shale, "gone", 1);
    // The removal follows the metadata change asynchronously.
    let deadline = Instant::now() + TIMEOUT;
    while committed(&c, "gone", 0).is_some() {
        assert!(
            Instant::now() < deadline,
            "offsets of the deleted topic remain"
        );
        let _ = c.poll(Duration::from_millis(50));
    }
}

#[test]
fn a_static_member_restarting_within_its_timeout_causes_no_rebalance() {
    let shale = Shale::start();
    create_topic(&shale, "static", 4);
    let static_cfg =
        |id: &'static str| [("group.instance.id", id), ("session.timeout.ms", "10000")];
    let a = member(&shale, "g-static", "static", &static_cfg("s-a"));
    let b = member(&shale, "g-static", "static", &static_cfg("s-b"));
    poll_until(&[&a, &b], "two balanced static members", || {
        balanced(&[&a, &b], 4)
    });
    let b_before = assignment(&b);
    let a_rebalances = a.context().rebalances.load(Ordering::SeqCst);
    // A static member does not send LeaveGroup on close; its replacement takes its place.
    drop(b);
    let b = member(&shale, "g-static", "static", &static_cfg("s-b"));
    poll_until(
        &[&a, &b],
        "the restarted static member's assignment",
        || !assignment(&b).is_empty(),
    );
    assert_eq!(
        assignment(&b),
        b_before,
        "same partitions after the restart"
    );
    // Keep polling a little past a heartbeat cycle: the other member saw no rebalance.
    let settle = Instant::now() + Duration::from_secs(2);
    poll_until(&[&a, &b], "a settled group", || Instant::now() >= settle);
    assert_eq!(
        a.context().rebalances.load(Ordering::SeqCst),
        a_rebalances,
        "the other member was not rebalanced"
    );
    assert!(balanced(&[&a, &b], 4));
}

#[test]
fn cooperative_sticky_members_rebalance_incrementally() {
    let shale = Shale::start();
    create_topic(&shale, "coop", 6);
    let cfg = [("partition.assignment.strategy", "cooperative-sticky")];
    let a = member(&shale, "g-coop", "coop", &cfg);
    poll_until(&[&a], "the first member owns everything", || {
        assignment(&a).len() == 6
    });
    let b = member(&shale, "g-coop", "coop", &cfg);
    poll_until(&[&a, &b], "two balanced members", || balanced(&[&a, &b], 6));
    // Incremental: only the three partitions that moved were revoked from the first member.
    let revoked = a.context().revoked.lock().unwrap().clone();
    assert_eq!(revoked.len(), 3, "revoked {revoked:?}");
    assert!(revoked.iter().all(|p| assignment(&b).contains(p)));
    assert_eq!(assignment(&a).len(), 3);
}

#[test]
fn describe_list_and_delete_groups() {
    let shale = Shale::start();
    create_topic(&shale, "adm", 2);
    let a = member(&shale, "g-admin", "adm", &[]);
    let b = member(&shale, "g-admin", "adm", &[]);
    poll_until(&[&a, &b], "two balanced members", || balanced(&[&a, &b], 2));
    let described = a
        .fetch_group_list(Some("g-admin"), Duration::from_secs(10))
        .unwrap();
    let group = &described.groups()[0];
    assert_eq!(group.name(), "g-admin");
    assert_eq!(group.state(), "Stable");
    assert_eq!(group.protocol_type(), "consumer");
    assert_eq!(group.members().len(), 2);
    let listed = a.fetch_group_list(None, Duration::from_secs(10)).unwrap();
    assert!(listed.groups().iter().any(|g| g.name() == "g-admin"));

    let admin = admin(&shale);
    let results = block_on(admin.delete_groups(&["g-admin"], &AdminOptions::new())).unwrap();
    assert_eq!(
        results[0],
        Err(("g-admin".to_string(), RDKafkaErrorCode::NonEmptyGroup))
    );

    drop(a);
    drop(b);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let results = block_on(admin.delete_groups(&["g-admin"], &AdminOptions::new())).unwrap();
        if results[0].is_ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "group not deletable: {results:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let probe: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .create()
        .unwrap();
    let after = probe
        .fetch_group_list(Some("g-admin"), Duration::from_secs(10))
        .unwrap();
    assert!(after.groups().iter().all(|g| g.state() == "Dead"));
    let all = probe
        .fetch_group_list(None, Duration::from_secs(10))
        .unwrap();
    assert!(all.groups().iter().all(|g| g.name() != "g-admin"));
}

#[test]
fn ten_members_reach_stable_from_a_cold_start() {
    let shale = Shale::start();
    create_topic(&shale, "ten", 10);
    let started = Instant::now();
    let members: Vec<Member> = (0..10)
        .map(|_| member(&shale, "g-ten", "ten", &[]))
        .collect();
    let refs: Vec<&Member> = members.iter().collect();
    poll_until(&refs, "ten members with one partition each", || {
        balanced(&refs, 10)
    });
    eprintln!(
        "10 members stable after {} ms (cold start, group.initial.rebalance.delay.ms=0)",
        started.elapsed().as_millis()
    );
    // A synchronous commit blocks its member's poll, so it must not start while a rebalance is
    // still pending (the member could not answer it and the commit would wait on it).
    poll_until(&refs, "the group Stable with ten balanced members", || {
        balanced(&refs, 10)
            && members[0]
                .fetch_group_list(Some("g-ten"), Duration::from_secs(5))
                .map(|list| list.groups().iter().any(|g| g.state() == "Stable"))
                .unwrap_or(false)
    });
    let commits = 200;
    let started = Instant::now();
    for i in 0..commits {
        commit(
            &members[0],
            "ten",
            *assignment(&members[0]).first().unwrap(),
            i,
        );
    }
    eprintln!(
        "{} synchronous offset commits/s from one member",
        (commits as f64 / started.elapsed().as_secs_f64()) as u64
    );
    // Dropping the members one by one can hang inside librdkafka: a member whose revocation
    // from the previous member's leave is still unserved gets a second one from its own close,
    // and its rebalance callback then waits forever on a queue the close has stopped (seen
    // under load; the group itself had ended Empty with every commit stored). Leaving through
    // unsubscribe, with every member polled, keeps revocations on the normal path.
    for m in &members {
        m.unsubscribe();
    }
    poll_until(&refs, "every member to release its partitions", || {
        refs.iter().all(|m| assignment(*m).is_empty())
    });
}

/// Per-version conversions that librdkafka does not exercise: the oldest and newest versions
/// of each group API, spoken directly.
#[test]
fn group_apis_across_versions() {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    };
    use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
    use kafka_protocol::messages::*;

    let shale = Shale::start();
    create_topic(&shale, "raw", 1);
    let mut client = RawClient::connect(&shale.bootstrap());
    let group = |name: &str| GroupId(StrBytes::from_string(name.into()));
    let text = |value: &str| StrBytes::from_string(value.into());

    let found: FindCoordinatorResponse = client.call(
        ApiKey::FindCoordinator,
        0,
        &FindCoordinatorRequest::default().with_key(text("g-raw")),
    );
    assert_eq!(found.error_code, 0);
    assert_eq!(found.port, i32::from(shale.port));
    let found: FindCoordinatorResponse = client.call(
        ApiKey::FindCoordinator,
        4,
        &FindCoordinatorRequest::default()
            .with_key_type(9)
            .with_coordinator_keys(vec![text("g-raw")]),
    );
    assert_eq!(
        found.coordinators[0].error_code, 42,
        "an unknown key type is INVALID_REQUEST"
    );

    // JoinGroup v0: no member id round trip, no rebalance timeout. Retry while the freshly
    // created offsets partition loads.
    let deadline = Instant::now() + TIMEOUT;
    let joined: JoinGroupResponse = loop {
        let joined: JoinGroupResponse = client.call(
            ApiKey::JoinGroup,
            0,
            &JoinGroupRequest::default()
                .with_group_id(group("g-raw"))
                .with_session_timeout_ms(10_000)
                .with_protocol_type(text("consumer"))
                .with_protocols(vec![JoinGroupRequestProtocol::default()
                    .with_name(text("range"))
                    .with_metadata(subscription("raw"))]),
        );
        if !matches!(joined.error_code, 14 | 16) {
            break joined;
        }
        assert!(Instant::now() < deadline, "coordinator never loaded");
    };
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader, joined.member_id);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    let member_id = joined.member_id.clone();
    let synced: SyncGroupResponse = client.call(
        ApiKey::SyncGroup,
        0,
        &SyncGroupRequest::default()
            .with_group_id(group("g-raw"))
            .with_generation_id(1)
            .with_member_id(member_id.clone())
            .with_assignments(vec![SyncGroupRequestAssignment::default()
                .with_member_id(member_id.clone())
                .with_assignment(Bytes::from_static(b"assigned"))]),
    );
    assert_eq!(synced.error_code, 0);
    assert_eq!(synced.assignment.as_ref(), b"assigned");
    let beat: HeartbeatResponse = client.call(
        ApiKey::Heartbeat,
        0,
        &HeartbeatRequest::default()
            .with_group_id(group("g-raw"))
            .with_generation_id(1)
            .with_member_id(member_id.clone()),
    );
    assert_eq!(beat.error_code, 0);
    let stale: HeartbeatResponse = client.call(
        ApiKey::Heartbeat,
        4,
        &HeartbeatRequest::default()
            .with_group_id(group("g-raw"))
            .with_generation_id(7)
            .with_member_id(member_id.clone()),
    );
    assert_eq!(stale.error_code, 22, "ILLEGAL_GENERATION");

    // OffsetCommit v2 (with retention) and the unknown-topic check of the broker.
    let committed: OffsetCommitResponse = client.call(
        ApiKey::OffsetCommit,
        2,
        &OffsetCommitRequest::default()
            .with_group_id(group("g-raw"))
            .with_generation_id_or_member_epoch(1)
            .with_member_id(member_id.clone())
            .with_retention_time_ms(-1)
            .with_topics(vec![
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(text("raw")))
                    .with_partitions(vec![OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(11)
                        .with_committed_metadata(Some(text("meta")))]),
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(text("no-such-topic")))
                    .with_partitions(vec![OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(1)]),
            ]),
    );
    let code_of = |name: &str| {
        committed
            .topics
            .iter()
            .find(|t| t.name.0.as_str() == name)
            .unwrap()
            .partitions[0]
            .error_code
    };
    assert_eq!(code_of("raw"), 0);
    assert_eq!(code_of("no-such-topic"), 3);

    let fetched: OffsetFetchResponse = client.call(
        ApiKey::OffsetFetch,
        1,
        &OffsetFetchRequest::default()
            .with_group_id(group("g-raw"))
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(TopicName(text("raw")))
                .with_partition_indexes(vec![0])])),
    );
    assert_eq!(fetched.topics[0].partitions[0].committed_offset, 11);
    assert_eq!(
        fetched.topics[0].partitions[0].metadata.as_deref(),
        Some("meta")
    );
    // v8: several groups at once, one of them unknown; null topics means "all".
    let fetched: OffsetFetchResponse = client.call(
        ApiKey::OffsetFetch,
        8,
        &OffsetFetchRequest::default()
            .with_require_stable(true)
            .with_groups(vec![
                OffsetFetchRequestGroup::default()
                    .with_group_id(group("g-raw"))
                    .with_topics(None),
                OffsetFetchRequestGroup::default()
                    .with_group_id(group("g-unknown"))
                    .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                        .with_name(TopicName(text("raw")))
                        .with_partition_indexes(vec![0])])),
            ]),
    );
    assert_eq!(fetched.groups.len(), 2);
    assert_eq!(fetched.groups[0].error_code, 0);
    assert_eq!(
        fetched.groups[0].topics[0].partitions[0].committed_offset,
        11
    );
    assert_eq!(
        fetched.groups[1].topics[0].partitions[0].committed_offset,
        -1
    );

    // DescribeGroups: an unknown group is "Dead" without error before v6, GROUP_ID_NOT_FOUND
    // from v6.
    let described: DescribeGroupsResponse = client.call(
        ApiKey::DescribeGroups,
        0,
        &DescribeGroupsRequest::default().with_groups(vec![group("g-raw"), group("nope")]),
    );
    assert_eq!(described.groups[0].group_state.as_str(), "Stable");
    assert_eq!(
        described.groups[0].members[0].client_host.as_str(),
        "/127.0.0.1"
    );
    assert_eq!(described.groups[1].error_code, 0);
    assert_eq!(described.groups[1].group_state.as_str(), "Dead");
    let described: DescribeGroupsResponse = client.call(
        ApiKey::DescribeGroups,
        6,
        &DescribeGroupsRequest::default().with_groups(vec![group("nope")]),
    );
    assert_eq!(described.groups[0].error_code, 69);

    // ListGroups v4+ filters by state, v5 by type.
    let listed = |client: &mut RawClient, version: i16, states: &[&str], types: &[&str]| {
        let response: ListGroupsResponse = client.call(
            ApiKey::ListGroups,
            version,
            &ListGroupsRequest::default()
                .with_states_filter(states.iter().map(|s| text(s)).collect())
                .with_types_filter(types.iter().map(|s| text(s)).collect()),
        );
        assert_eq!(response.error_code, 0);
        response
            .groups
            .iter()
            .map(|g| g.group_id.0.to_string())
            .collect::<Vec<_>>()
    };
    assert!(listed(&mut client, 0, &[], &[]).contains(&"g-raw".to_string()));
    assert!(listed(&mut client, 4, &["stable"], &[]).contains(&"g-raw".to_string()));
    assert!(!listed(&mut client, 4, &["Empty"], &[]).contains(&"g-raw".to_string()));
    assert!(listed(&mut client, 5, &[], &["classic"]).contains(&"g-raw".to_string()));
    assert!(listed(&mut client, 5, &[], &["consumer"]).is_empty());

    // LeaveGroup v0 answers the member's outcome at the top level.
    let left: LeaveGroupResponse = client.call(
        ApiKey::LeaveGroup,
        0,
        &LeaveGroupRequest::default()
            .with_group_id(group("g-raw"))
            .with_member_id(member_id.clone()),
    );
    assert_eq!(left.error_code, 0);
    let left: LeaveGroupResponse = client.call(
        ApiKey::LeaveGroup,
        0,
        &LeaveGroupRequest::default()
            .with_group_id(group("g-raw"))
            .with_member_id(member_id),
    );
    assert_eq!(left.error_code, 25, "UNKNOWN_MEMBER_ID");

    let deleted: OffsetDeleteResponse = client.call(
        ApiKey::OffsetDelete,
        0,
        &OffsetDeleteRequest::default()
            .with_group_id(group("g-raw"))
            .with_topics(vec![
                offset_delete_request::OffsetDeleteRequestTopic::default()
                    .with_name(TopicName(text("raw")))
                    .with_partitions(vec![
                        offset_delete_request::OffsetDeleteRequestPartition::default()
                            .with_partition_index(0),
                    ]),
            ]),
    );
    assert_eq!(deleted.error_code, 0);
    assert_eq!(deleted.topics[0].partitions[0].error_code, 0);
    let removed: DeleteGroupsResponse = client.call(
        ApiKey::DeleteGroups,
        0,
        &DeleteGroupsRequest::default().with_groups_names(vec![group("g-raw"), group("nope")]),
    );
    assert_eq!(removed.results[0].error_code, 0);
    assert_eq!(removed.results[1].error_code, 69);
}
