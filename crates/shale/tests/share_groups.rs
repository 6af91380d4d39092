//! Share groups (KIP-932) end to end against the real `shale` binary, in raw frames:
//! ShareGroupHeartbeat until the member is assigned, ShareFetch acquiring records under a
//! lock, ShareAcknowledge accepting and releasing them, redelivery with the delivery count,
//! the lock's expiry, the records of a closed connection released at once, and a broker
//! restart in between that keeps every acknowledgement.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;
#[path = "common/kafka_conn.rs"]
mod kafka_conn;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cluster_support::call;
use common::{create_topic, produce, Shale};
use kafka_conn::Conn;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, IncrementalAlterConfigsRequest, RequestKind, ResponseKind, ShareGroupHeartbeatRequest,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::newer::{
    share_acknowledge_request as ack_wire, share_fetch_request as fetch_wire,
};
use shale_protocol::{NewerRequest, NewerResponse, RequestHeader, Response};
use uuid::Uuid;

const TIMEOUT: Duration = Duration::from_secs(60);
const GROUP_RESOURCE: i8 = 32;

/// Short share-group timeouts so that a lock expiry is seen within the test.
const BROKER_OVERRIDES: &[&str] = &[
    "share.coordinator.state.topic.replication.factor=1",
    "share.coordinator.state.topic.min.isr=1",
    "group.share.min.session.timeout.ms=1000",
    "group.share.session.timeout.ms=8000",
    "group.share.min.heartbeat.interval.ms=500",
    "group.share.heartbeat.interval.ms=500",
    "group.share.min.record.lock.duration.ms=1000",
    "group.share.record.lock.duration.ms=2000",
    "group.share.delivery.count.limit=3",
];

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn set_group_config(shale: &Shale, group: &str, name: &str, value: &str) {
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(GROUP_RESOURCE)
            .with_resource_name(s(group))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s(name))
                .with_config_operation(0)
                .with_value(Some(s(value)))]),
    ]);
    match call(
        &shale.bootstrap(),
        ApiKey::IncrementalAlterConfigs,
        1,
        RequestKind::IncrementalAlterConfigs(request),
    ) {
        ResponseKind::IncrementalAlterConfigs(r) => {
            assert_eq!(r.responses[0].error_code, 0, "{:?}", r.responses[0]);
        }
        other => panic!("{other:?}"),
    }
}

/// One member of a share group on its own connection.
struct Member {
    conn: Conn,
    group: String,
    member_id: String,
    member_epoch: i32,
    session_epoch: i32,
    topic_id: Uuid,
}

/// A record as a ShareFetch handed it out: offset and delivery count.
type Delivery = (i64, i16);

impl Member {
    fn join(shale: &Shale, group: &str, topic: &str) -> Member {
        let mut member = Member {
            conn: Conn::plain(shale.port),
            group: group.to_string(),
            member_id: Uuid::new_v4().to_string(),
            member_epoch: 0,
            session_epoch: 0,
            topic_id: Uuid::nil(),
        };
        let started = Instant::now();
        // Heartbeat until the partition is assigned (its share state initialized first).
        loop {
            assert!(started.elapsed() < TIMEOUT, "never assigned");
            let request = ShareGroupHeartbeatRequest::default()
                .with_group_id(s(group).into())
                .with_member_id(s(&member.member_id))
                .with_member_epoch(member.member_epoch)
                .with_subscribed_topic_names(Some(vec![TopicName(s(topic))]));
            let answer = match member.conn.call(
                ApiKey::ShareGroupHeartbeat,
                1,
                RequestKind::ShareGroupHeartbeat(request),
            ) {
                ResponseKind::ShareGroupHeartbeat(r) => r,
                other => panic!("{other:?}"),
            };
            // The group coordinator may still be loading after a restart: ask again, as a
            // client does (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
            // NOT_COORDINATOR).
            if [14, 15, 16].contains(&answer.error_code) {
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
            assert_eq!(answer.error_code, 0, "{answer:?}");
            member.member_epoch = answer.member_epoch;
            if let Some(assignment) = answer.assignment {
                if let Some(t) = assignment.topic_partitions.first() {
                    if t.partitions.contains(&0) {
                        member.topic_id = t.topic_id;
                        return member;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn newer_call(&mut self, key: ApiKey, version: i16, request: NewerRequest) -> NewerResponse {
        let header = RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id: self.conn.next_correlation,
            client_id: Some("share-test".into()),
            header_version: key.request_header_version(version),
        };
        self.conn.next_correlation += 1;
        let frame = shale_protocol::encode_newer_request(&header, &request).unwrap();
        use std::io::Write;
        self.conn.stream.write_all(&frame).unwrap();
        let frame: Bytes = self.conn.read_frame().expect("an answer");
        match shale_protocol::decode_any_response(key as i16, version, frame).unwrap() {
            (_, Response::Newer(newer)) => newer,
            (_, other) => panic!("{other:?}"),
        }
    }

    /// One ShareFetch with the acknowledgements `acks` (offset ranges with one type each);
    /// returns what it acquired.
    fn fetch(&mut self, acks: &[(i64, i64, i8)], max_wait_ms: i32) -> Vec<Delivery> {
        let epoch = self.session_epoch;
        let answer = self.fetch_raw(acks, max_wait_ms, epoch);
        assert_eq!(answer.error_code, 0, "{answer:?}");
        self.session_epoch += 1;
        let mut acquired = Vec::new();
        for topic in answer.responses {
            for p in topic.partitions {
                assert_eq!(p.error_code, 0, "{p:?}");
                assert_eq!(p.acknowledge_error_code, 0, "{p:?}");
                for range in p.acquired_records {
                    for offset in range.first_offset..=range.last_offset {
                        acquired.push((offset, range.delivery_count));
                    }
                }
            }
        }
        acquired
    }

    /// One ShareFetch at session epoch `epoch`, answered as it is.
    fn fetch_raw(
        &mut self,
        acks: &[(i64, i64, i8)],
        max_wait_ms: i32,
        epoch: i32,
    ) -> shale_protocol::newer::share_fetch_response::ShareFetchResponse {
        let request = fetch_wire::ShareFetchRequest {
            group_id: Some(s(&self.group)),
            member_id: Some(s(&self.member_id)),
            share_session_epoch: epoch,
            max_wait_ms,
            min_bytes: 1,
            max_bytes: 1 << 20,
            max_records: 500,
            batch_size: 500,
            topics: vec![fetch_wire::FetchTopic {
                topic_id: self.topic_id,
                partitions: vec![fetch_wire::FetchPartition {
                    partition_index: 0,
                    acknowledgement_batches: acks
                        .iter()
                        .map(|&(first, last, kind)| fetch_wire::AcknowledgementBatch {
                            first_offset: first,
                            last_offset: last,
                            acknowledge_types: vec![kind],
                        })
                        .collect(),
                    ..Default::default()
                }],
            }],
            ..Default::default()
        };
        match self.newer_call(ApiKey::ShareFetch, 1, NewerRequest::ShareFetch(request)) {
            NewerResponse::ShareFetch(r) => r,
            other => panic!("{other:?}"),
        }
    }

    /// Fetches until `count` records are acquired (each fetch waits up to a second).
    fn fetch_at_least(&mut self, count: usize) -> Vec<Delivery> {
        let started = Instant::now();
        let mut all = Vec::new();
        while all.len() < count {
            assert!(started.elapsed() < TIMEOUT, "only {all:?} acquired");
            all.extend(self.fetch(&[], 1000));
        }
        all
    }

    fn acknowledge(&mut self, acks: &[(i64, i64, i8)]) {
        let request = ack_wire::ShareAcknowledgeRequest {
            group_id: Some(s(&self.group)),
            member_id: Some(s(&self.member_id)),
            share_session_epoch: self.session_epoch,
            topics: vec![ack_wire::AcknowledgeTopic {
                topic_id: self.topic_id,
                partitions: vec![ack_wire::AcknowledgePartition {
                    partition_index: 0,
                    acknowledgement_batches: acks
                        .iter()
                        .map(|&(first, last, kind)| ack_wire::AcknowledgementBatch {
                            first_offset: first,
                            last_offset: last,
                            acknowledge_types: vec![kind],
                        })
                        .collect(),
                }],
            }],
            ..Default::default()
        };
        let answer = match self.newer_call(
            ApiKey::ShareAcknowledge,
            1,
            NewerRequest::ShareAcknowledge(request),
        ) {
            NewerResponse::ShareAcknowledge(r) => r,
            other => panic!("{other:?}"),
        };
        assert_eq!(answer.error_code, 0, "{answer:?}");
        for topic in answer.responses {
            for p in topic.partitions {
                assert_eq!(p.error_code, 0, "{p:?}");
            }
        }
        self.session_epoch += 1;
    }
}

const ACCEPT: i8 = 1;
const RELEASE: i8 = 2;
const REJECT: i8 = 3;

fn offsets(deliveries: &[Delivery]) -> Vec<i64> {
    deliveries.iter().map(|d| d.0).collect()
}

#[test]
fn records_are_acquired_acknowledged_and_redelivered_as_kafka_does() {
    let shale = Shale::start_with(BROKER_OVERRIDES);
    create_topic(&shale, "queue", 1);
    set_group_config(&shale, "g", "share.auto.offset.reset", "earliest");
    produce(&shale, "queue", 0, 10);

    let mut a = Member::join(&shale, "g", "queue");
    let first = a.fetch_at_least(10);
    assert_eq!(offsets(&first), (0..10).collect::<Vec<_>>());
    assert!(first.iter().all(|d| d.1 == 1), "{first:?}");

    // Accept 0..=3, release 4..=5, reject 6; 7..=9 stay acquired.
    a.acknowledge(&[(0, 3, ACCEPT), (4, 5, RELEASE), (6, 6, REJECT)]);
    let again = a.fetch_at_least(2);
    assert_eq!(again, vec![(4, 2), (5, 2)]);
    a.acknowledge(&[(4, 5, ACCEPT)]);

    // 7..=9 are held by a; a second member gets them once a's locks (2 s) run out.
    let mut b = Member::join(&shale, "g", "queue");
    let locked_at = Instant::now();
    let expired = b.fetch_at_least(3);
    assert!(
        locked_at.elapsed() >= Duration::from_millis(500),
        "{expired:?}"
    );
    assert_eq!(expired, vec![(7, 2), (8, 2), (9, 2)]);

    // b's connection closes while it holds them: they are released at once, with their count.
    drop(b);
    let released = a.fetch_at_least(3);
    assert_eq!(released, vec![(7, 3), (8, 3), (9, 3)]);
    a.acknowledge(&[(7, 9, ACCEPT)]);
    let nothing = a.fetch(&[], 500);
    assert!(nothing.is_empty(), "{nothing:?}");
}

#[test]
fn acknowledgements_survive_a_kill_and_acquired_records_come_back() {
    let mut shale = Shale::start_with(BROKER_OVERRIDES);
    create_topic(&shale, "durable", 1);
    set_group_config(&shale, "g2", "share.auto.offset.reset", "earliest");
    produce(&shale, "durable", 0, 20);

    let mut a = Member::join(&shale, "g2", "durable");
    let first = a.fetch_at_least(20);
    assert_eq!(offsets(&first), (0..20).collect::<Vec<_>>());
    // 0..=9 accepted, 10..=14 released (count 1 persisted as delivered once), 15..=19 held.
    a.acknowledge(&[(0, 9, ACCEPT), (10, 14, RELEASE)]);

    // Killed while a holds 15..=19: their delivery was never written, so they come back as
    // never delivered; the released ones with the count they were released at.
    shale.kill();
    drop(a);
    shale.restart_after_kill();
    let mut b = Member::join(&shale, "g2", "durable");
    let after: BTreeMap<i64, i16> = b.fetch_at_least(10).into_iter().collect();
    let expected: BTreeMap<i64, i16> = (10..15)
        .map(|o| (o, 2))
        .chain((15..20).map(|o| (o, 1)))
        .collect();
    assert_eq!(after, expected);
    b.acknowledge(&[(10, 19, ACCEPT)]);
    let nothing = b.fetch(&[], 500);
    assert!(nothing.is_empty(), "{nothing:?}");
}

/// The acknowledgement error of the one partition of a ShareFetch answer.
fn ack_error(answer: &shale_protocol::newer::share_fetch_response::ShareFetchResponse) -> i16 {
    answer
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| p.acknowledge_error_code)
        .next()
        .expect("the partition is answered")
}

#[test]
fn share_fetches_out_of_turn_or_with_bad_acknowledgements_are_refused_as_kafka_does() {
    let shale = Shale::start_with(BROKER_OVERRIDES);
    create_topic(&shale, "refusals", 1);
    set_group_config(&shale, "g3", "share.auto.offset.reset", "earliest");
    // The group's own lock duration is what the answers report.
    set_group_config(&shale, "g3", "share.record.lock.duration.ms", "5000");
    produce(&shale, "refusals", 0, 5);
    let mut a = Member::join(&shale, "g3", "refusals");

    // No session yet: an epoch other than 0 finds none (SHARE_SESSION_NOT_FOUND).
    let answer = a.fetch_raw(&[], 0, 3);
    assert_eq!(answer.error_code, 122, "{answer:?}");

    let acquired = a.fetch_at_least(5);
    assert_eq!(offsets(&acquired), (0..5).collect::<Vec<_>>());
    let answer = a.fetch_raw(&[], 0, a.session_epoch);
    assert_eq!(answer.acquisition_lock_timeout_ms, 5000, "{answer:?}");
    a.session_epoch += 1;

    // A stale or future epoch: INVALID_SHARE_SESSION_EPOCH, and the session goes on.
    let answer = a.fetch_raw(&[], 0, a.session_epoch + 5);
    assert_eq!(answer.error_code, 123, "{answer:?}");

    // An unknown acknowledgement type: INVALID_REQUEST for the partition.
    let answer = a.fetch_raw(&[(0, 0, 9)], 0, a.session_epoch);
    a.session_epoch += 1;
    assert_eq!(ack_error(&answer), 42, "{answer:?}");

    // Records another member holds: INVALID_RECORD_STATE, and they stay a's.
    let mut b = Member::join(&shale, "g3", "refusals");
    b.fetch(&[], 0);
    let answer = b.fetch_raw(&[(1, 2, ACCEPT)], 0, b.session_epoch);
    b.session_epoch += 1;
    assert_eq!(ack_error(&answer), 121, "{answer:?}");
    a.acknowledge(&[(0, 4, ACCEPT)]);
    let nothing = b.fetch(&[], 500);
    assert!(nothing.is_empty(), "{nothing:?}");
}
