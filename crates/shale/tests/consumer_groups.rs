//! The consumer group protocol (KIP-848) end to end: librdkafka consumers with
//! `group.protocol=consumer` and raw ConsumerGroupHeartbeat/ConsumerGroupDescribe frames against
//! the real `shale` binary: server-side assignment, revocation before assignment, leave,
//! session expiry, commit and resume, and Kafka's error codes for bad heartbeats.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cluster_support::call;
use common::{create_topic, produce, Shale};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, GroupId, ListGroupsRequest, MetadataRequest, RequestKind,
    ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::ClientContext;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Short consumer-protocol timeouts so that an expired session is seen within the test.
const BROKER_OVERRIDES: &[&str] = &[
    "group.consumer.min.session.timeout.ms=1000",
    "group.consumer.session.timeout.ms=3000",
    "group.consumer.min.heartbeat.interval.ms=100",
    "group.consumer.heartbeat.interval.ms=300",
];

/// Every partition revoked from the member, in the order revoked.
#[derive(Default)]
struct Recorder {
    revoked: Mutex<Vec<i32>>,
}

impl ClientContext for Recorder {}

impl ConsumerContext for Recorder {
    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(list) = rebalance {
            let mut revoked = self.revoked.lock().unwrap();
            revoked.extend(list.elements().iter().map(|e| e.partition()));
        }
    }
}

type Member = BaseConsumer<Recorder>;

fn member(shale: &Shale, group: &str, topic: &str) -> Member {
    let consumer: Member = ClientConfig::new()
        .set("bootstrap.servers", shale.bootstrap())
        .set("group.id", group)
        .set("group.protocol", "consumer")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create_with_context(Recorder::default())
        .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    consumer
}

fn assignment(consumer: &Member) -> BTreeSet<i32> {
    consumer
        .assignment()
        .map(|list| list.elements().iter().map(|e| e.partition()).collect())
        .unwrap_or_default()
}

/// Polls every member until `done` holds; after each round `invariant` must hold too.
fn poll_until(
    members: &[&Member],
    what: &str,
    mut invariant: impl FnMut() -> Result<(), String>,
    mut done: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        for m in members {
            let _ = m.poll(Duration::from_millis(20));
        }
        if let Err(broken) = invariant() {
            panic!("while waiting for {what}: {broken}");
        }
        if done() {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

fn no_invariant() -> Result<(), String> {
    Ok(())
}

/// No partition is owned by two members at once.
fn disjoint(members: &[&Member]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for m in members {
        for partition in assignment(m) {
            if !seen.insert(partition) {
                return Err(format!("partition {partition} is owned by two members"));
            }
        }
    }
    Ok(())
}

fn covers(members: &[&Member], partitions: i32) -> bool {
    let all: BTreeSet<i32> = members.iter().flat_map(|m| assignment(m)).collect();
    all == (0..partitions).collect() && members.iter().all(|m| !assignment(m).is_empty())
}

#[test]
fn a_second_member_takes_only_the_partitions_moved_to_it_and_they_move_back_when_it_leaves() {
    let shale = Shale::start_with(BROKER_OVERRIDES);
    create_topic(&shale, "six", 6);
    let first = member(&shale, "g848", "six");
    poll_until(
        &[&first],
        "the first member owns every partition",
        no_invariant,
        || assignment(&first).len() == 6,
    );
    assert!(first.context().revoked.lock().unwrap().is_empty());

    let second = member(&shale, "g848", "six");
    poll_until(
        &[&first, &second],
        "the partitions are split between the members",
        || disjoint(&[&first, &second]),
        || covers(&[&first, &second], 6) && assignment(&first).len() == 3,
    );
    let revoked: BTreeSet<i32> = first
        .context()
        .revoked
        .lock()
        .unwrap()
        .iter()
        .copied()
        .collect();
    assert_eq!(
        revoked,
        assignment(&second),
        "only the partitions given to the second member were revoked from the first"
    );

    drop(second);
    poll_until(
        &[&first],
        "the first member owns every partition again",
        no_invariant,
        || assignment(&first).len() == 6,
    );
}

/// A member that joins by raw ConsumerGroupHeartbeat v1 and then stops heartbeating.
fn raw_join(
    shale: &Shale,
    group: &str,
    topic: &str,
    member_id: &str,
) -> ConsumerGroupHeartbeatResponse {
    heartbeat(
        shale,
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_member_id(StrBytes::from_string(member_id.to_string()))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(5_000)
            .with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_string(
                topic.to_string(),
            ))]))
            .with_topic_partitions(Some(vec![])),
    )
}

fn heartbeat(
    shale: &Shale,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    match call(
        &shale.bootstrap(),
        ApiKey::ConsumerGroupHeartbeat,
        1,
        RequestKind::ConsumerGroupHeartbeat(request),
    ) {
        ResponseKind::ConsumerGroupHeartbeat(response) => response,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_member_whose_heartbeats_stop_loses_its_partitions_after_the_session_timeout() {
    let shale = Shale::start_with(BROKER_OVERRIDES);
    create_topic(&shale, "four", 4);
    // The coordinator must exist before the raw member talks to it directly: a single node
    // coordinates every group, so the first heartbeat may only need the offsets topic.
    let joined = shale_testkit::wait_for("the raw member joins", TIMEOUT, || {
        let response = raw_join(&shale, "expiring", "four", "raw-member-0000000000001");
        (response.error_code == 0).then_some(response)
    });
    // As Kafka 4.4: a new group starts at epoch 1, so its first member joins at 2.
    assert_eq!(joined.member_epoch, 2);
    assert_eq!(joined.heartbeat_interval_ms, 300);
    let live = member(&shale, "expiring", "four");
    poll_until(
        &[&live],
        "the live member owns every partition once the raw member's session expired",
        no_invariant,
        || assignment(&live).len() == 4,
    );
    // The expired member is gone: its heartbeat is refused as Kafka refuses it.
    let late = heartbeat(
        &shale,
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("expiring")))
            .with_member_id(StrBytes::from_static_str("raw-member-0000000000001"))
            .with_member_epoch(joined.member_epoch),
    );
    assert_eq!(late.error_code, 25, "UNKNOWN_MEMBER_ID: {late:?}");
}

#[test]
fn committed_offsets_of_a_consumer_group_are_where_the_next_member_resumes() {
    let shale = Shale::start_with(BROKER_OVERRIDES);
    create_topic(&shale, "one", 1);
    produce(&shale, "one", 0, 20);
    let first = member(&shale, "resume", "one");
    let mut consumed = 0;
    let deadline = Instant::now() + TIMEOUT;
    while consumed < 10 {
        assert!(Instant::now() < deadline, "timed out consuming");
        if let Some(Ok(message)) = first.poll(Duration::from_millis(50)) {
            assert_eq!(message.offset(), consumed);
            consumed += 1;
            if consumed == 10 {
                first
                    .commit_message(&message, CommitMode::Sync)
                    .expect("commit");
            }
        }
    }
    drop(first);
    let second = member(&shale, "resume", "one");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        assert!(Instant::now() < deadline, "timed out resuming");
        if let Some(Ok(message)) = second.poll(Duration::from_millis(50)) {
            assert_eq!(message.offset(), 10, "resumed after the committed offset");
            break;
        }
    }
}

#[test]
fn bad_heartbeats_get_kafkas_errors_and_groups_are_described_and_listed() {
    // A session long enough that the raw member, which heartbeats once, stays in the group.
    let shale = Shale::start_with(&[
        "group.consumer.min.session.timeout.ms=1000",
        "group.consumer.min.heartbeat.interval.ms=100",
        "group.consumer.heartbeat.interval.ms=300",
    ]);
    create_topic(&shale, "two", 2);
    let group = |name: &str| GroupId(StrBytes::from_string(name.to_string()));
    let joined = shale_testkit::wait_for("a member joins", TIMEOUT, || {
        let response = raw_join(&shale, "described", "two", "described-member-00000001");
        (response.error_code == 0).then_some(response)
    });
    // As Kafka 4.4: a new group starts at epoch 1, so its first member joins at 2.
    assert_eq!(joined.member_epoch, 2);

    // A member the group does not know, with an epoch past 0.
    let unknown = heartbeat(
        &shale,
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(group("described"))
            .with_member_id(StrBytes::from_static_str("nobody-000000000000000001"))
            .with_member_epoch(3),
    );
    assert_eq!(unknown.error_code, 25, "UNKNOWN_MEMBER_ID: {unknown:?}");
    // An epoch ahead of the member's.
    let fenced = heartbeat(
        &shale,
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(group("described"))
            .with_member_id(StrBytes::from_static_str("described-member-00000001"))
            .with_member_epoch(joined.member_epoch + 5),
    );
    assert_eq!(fenced.error_code, 110, "FENCED_MEMBER_EPOCH: {fenced:?}");
    // A first heartbeat without a subscription.
    let no_subscription = heartbeat(
        &shale,
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(group("described"))
            .with_member_id(StrBytes::from_static_str("another-member-000000001"))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(5_000)
            .with_topic_partitions(Some(vec![])),
    );
    assert_eq!(
        no_subscription.error_code, 42,
        "INVALID_REQUEST: {no_subscription:?}"
    );
    // An assignor the broker does not offer.
    let assignor = heartbeat(
        &shale,
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(group("described"))
            .with_member_id(StrBytes::from_static_str("another-member-000000002"))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(5_000)
            .with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_static_str("two"))]))
            .with_server_assignor(Some(StrBytes::from_static_str("sticky-of-my-own")))
            .with_topic_partitions(Some(vec![])),
    );
    assert_eq!(
        assignor.error_code, 112,
        "UNSUPPORTED_ASSIGNOR: {assignor:?}"
    );

    let described = match call(
        &shale.bootstrap(),
        ApiKey::ConsumerGroupDescribe,
        1,
        RequestKind::ConsumerGroupDescribe(
            ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![group("described"), group("no-such-group")]),
        ),
    ) {
        ResponseKind::ConsumerGroupDescribe(response) => response,
        other => panic!("{other:?}"),
    };
    let found = &described.groups[0];
    assert_eq!(found.error_code, 0, "{found:?}");
    assert_eq!(found.group_epoch, 2);
    assert_eq!(found.assignor_name.as_str(), "uniform");
    assert_eq!(found.members.len(), 1);
    let described_member = &found.members[0];
    assert_eq!(
        described_member.member_id.as_str(),
        "described-member-00000001"
    );
    assert_eq!(
        described_member.subscribed_topic_names,
        vec![TopicName(StrBytes::from_static_str("two"))]
    );
    let target: BTreeSet<i32> = described_member
        .target_assignment
        .topic_partitions
        .iter()
        .flat_map(|topic| topic.partitions.iter().copied())
        .collect();
    assert_eq!(target, BTreeSet::from([0, 1]));
    assert_eq!(described.groups[1].error_code, 69, "GROUP_ID_NOT_FOUND");
    // Kafka 4.4's answer, measured: its message, no state and zero epochs.
    let missing = &described.groups[1];
    assert_eq!(
        missing.error_message.as_ref().map(|m| m.as_str()),
        Some("Group no-such-group not found.")
    );
    assert_eq!(
        (
            missing.group_state.as_str(),
            missing.group_epoch,
            missing.assignment_epoch
        ),
        ("", 0, 0)
    );

    let listed = |types: Vec<&'static str>| -> Vec<(String, String)> {
        match call(
            &shale.bootstrap(),
            ApiKey::ListGroups,
            5,
            RequestKind::ListGroups(
                ListGroupsRequest::default()
                    .with_types_filter(types.into_iter().map(StrBytes::from_static_str).collect()),
            ),
        ) {
            ResponseKind::ListGroups(response) => response
                .groups
                .into_iter()
                .map(|g| (g.group_id.0.to_string(), g.group_type.to_string()))
                .collect(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        listed(vec!["consumer"]),
        vec![("described".to_string(), "consumer".to_string())]
    );
    assert!(listed(vec!["classic"]).is_empty());
}

/// A consumer-protocol member learns its assigned topics by id: the Java client asks Metadata
/// for them with the names left "" (not null), and Kafka answers by id alone.
#[test]
fn metadata_by_topic_id_ignores_the_empty_names_the_java_client_sends() {
    let shale = Shale::start();
    create_topic(&shale, "by-id", 2);
    let metadata = |topics: Vec<MetadataRequestTopic>| match call(
        &shale.bootstrap(),
        ApiKey::Metadata,
        12,
        RequestKind::Metadata(MetadataRequest::default().with_topics(Some(topics))),
    ) {
        ResponseKind::Metadata(response) => response,
        other => panic!("{other:?}"),
    };
    let by_name = metadata(vec![MetadataRequestTopic::default()
        .with_name(Some(TopicName(StrBytes::from_static_str("by-id"))))]);
    let topic_id = by_name.topics[0].topic_id;
    assert!(!topic_id.is_nil());
    let unknown_id = uuid::Uuid::from_u128(0x5ea1e);
    let by_id = metadata(vec![
        MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str(""))))
            .with_topic_id(topic_id),
        MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str(""))))
            .with_topic_id(unknown_id),
    ]);
    assert_eq!(by_id.topics.len(), 2, "{by_id:?}");
    let found = &by_id.topics[0];
    assert_eq!(found.error_code, 0, "{found:?}");
    assert_eq!(found.name.as_ref().map(|n| n.0.as_str()), Some("by-id"));
    assert_eq!(found.partitions.len(), 2);
    let unknown = &by_id.topics[1];
    assert_eq!(unknown.error_code, 100, "UNKNOWN_TOPIC_ID: {unknown:?}");
    assert_eq!(unknown.topic_id, unknown_id);
}
