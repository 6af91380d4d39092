//! Transactions in raw protocol frames (issue #7), for what no client library does on demand:
//! KIP-890's refusals of late and unadded transactional writes, transaction version 2's epoch
//! bump, WriteTxnMarkers from an admin, DescribeTransactions / ListTransactions filters, and the
//! `transaction.version` feature in ApiVersions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use common::Shale;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, ApiVersionsRequest, BrokerId, CreateTopicsRequest,
    DescribeProducersRequest, DescribeTransactionsRequest, EndTxnRequest, FindCoordinatorRequest,
    InitProducerIdRequest, ListOffsetsRequest, ListTransactionsRequest, ProduceRequest, ProducerId,
    RequestKind, ResponseKind, TopicName, TransactionalId, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::RequestHeader;

const TIMEOUT: Duration = Duration::from_secs(30);

struct Conn {
    stream: TcpStream,
    next_correlation: i32,
}

impl Conn {
    fn open(shale: &Shale) -> Conn {
        let stream = TcpStream::connect(shale.bootstrap()).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        Conn {
            stream,
            next_correlation: 1,
        }
    }

    fn call(&mut self, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
        let correlation_id = self.next_correlation;
        self.next_correlation += 1;
        let header = RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id,
            client_id: Some("txn-raw-test".into()),
            header_version: key.request_header_version(version),
        };
        let frame = shale_protocol::encode_request(&header, &request).unwrap();
        self.stream.write_all(&frame).unwrap();
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).unwrap();
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut buf).unwrap();
        let (correlation, response) =
            shale_protocol::decode_response(key as i16, version, Bytes::from(buf)).unwrap();
        assert_eq!(correlation, correlation_id);
        response
    }
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_owned()))
}

fn tid(s: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(s.to_owned()))
}

fn create_topic(conn: &mut Conn, topic: &str) {
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(1)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    match conn.call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(req)) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0),
        other => panic!("{other:?}"),
    }
}

/// FindCoordinator (which creates `__transaction_state`), then InitProducerId for a
/// transactional id, retried while the coordinator loads.
fn init_producer_id(conn: &mut Conn, transactional_id: &str) -> (i64, i16) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let req = FindCoordinatorRequest::default()
            .with_key(StrBytes::from_string(transactional_id.to_owned()))
            .with_key_type(1);
        let ResponseKind::FindCoordinator(found) = conn.call(
            ApiKey::FindCoordinator,
            3,
            RequestKind::FindCoordinator(req),
        ) else {
            panic!("not a FindCoordinator response")
        };
        if found.error_code != 0 {
            assert!(
                Instant::now() < deadline,
                "FindCoordinator: {}",
                found.error_code
            );
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let req = InitProducerIdRequest::default()
            .with_transactional_id(Some(tid(transactional_id)))
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let ResponseKind::InitProducerId(r) =
            conn.call(ApiKey::InitProducerId, 4, RequestKind::InitProducerId(req))
        else {
            panic!("not an InitProducerId response")
        };
        if r.error_code == 0 {
            return (r.producer_id.0, r.producer_epoch);
        }
        assert!(
            [14, 15, 16, 51].contains(&r.error_code) && Instant::now() < deadline,
            "InitProducerId failed with {}",
            r.error_code
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn add_partition(conn: &mut Conn, transactional_id: &str, id: (i64, i16), topic: &str) -> i16 {
    let req = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(tid(transactional_id))
        .with_v3_and_below_producer_id(ProducerId(id.0))
        .with_v3_and_below_producer_epoch(id.1)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![0])]);
    match conn.call(
        ApiKey::AddPartitionsToTxn,
        3,
        RequestKind::AddPartitionsToTxn(req),
    ) {
        ResponseKind::AddPartitionsToTxn(r) => {
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        }
        other => panic!("{other:?}"),
    }
}

/// EndTxn v5 (transaction version 2): the error code and the epoch the producer continues at.
fn end_txn(conn: &mut Conn, transactional_id: &str, id: (i64, i16), commit: bool) -> (i16, i16) {
    let req = EndTxnRequest::default()
        .with_transactional_id(tid(transactional_id))
        .with_producer_id(ProducerId(id.0))
        .with_producer_epoch(id.1)
        .with_committed(commit);
    match conn.call(ApiKey::EndTxn, 5, RequestKind::EndTxn(req)) {
        ResponseKind::EndTxn(r) => (r.error_code, r.producer_epoch),
        other => panic!("{other:?}"),
    }
}

/// A transactional RecordBatch v2 with one record.
fn txn_batch(id: (i64, i16), base_sequence: i32, value: &str) -> Bytes {
    let mut record = BytesMut::new();
    record.put_i8(0);
    put_varint(&mut record, 0);
    put_varint(&mut record, 0);
    put_varint(&mut record, -1);
    put_varint(&mut record, value.len() as i64);
    record.put_slice(value.as_bytes());
    put_varint(&mut record, 0);
    let mut body = BytesMut::new();
    body.put_i16(0x10); // transactional
    body.put_i32(0);
    body.put_i64(1_700_000_000_000);
    body.put_i64(1_700_000_000_000);
    body.put_i64(id.0);
    body.put_i16(id.1);
    body.put_i32(base_sequence);
    body.put_i32(1);
    put_varint(&mut body, record.len() as i64);
    body.put_slice(&record);
    let mut out = BytesMut::new();
    out.put_i64(0);
    out.put_i32((4 + 1 + 4 + body.len()) as i32);
    out.put_i32(-1);
    out.put_i8(2);
    out.put_u32(crc32c::crc32c(&body));
    out.put_slice(&body);
    out.freeze()
}

fn put_varint(buf: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.put_u8((z as u8) | 0x80);
        z >>= 7;
    }
    buf.put_u8(z as u8);
}

/// Produce (v11: transaction version 1, v12: version 2) of one batch: error code.
fn produce(
    conn: &mut Conn,
    version: i16,
    transactional_id: &str,
    topic: &str,
    batch: Bytes,
) -> i16 {
    let req = ProduceRequest::default()
        .with_transactional_id(Some(tid(transactional_id)))
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch))])]);
    match conn.call(ApiKey::Produce, version, RequestKind::Produce(req)) {
        ResponseKind::Produce(r) => r.responses[0].partition_responses[0].error_code,
        other => panic!("{other:?}"),
    }
}

/// (last stable offset, high watermark) of partition 0.
fn stable_and_end(conn: &mut Conn, topic: &str) -> (i64, i64) {
    let offset = |conn: &mut Conn, isolation_level: i8| {
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(isolation_level)
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(-1)])]);
        match conn.call(ApiKey::ListOffsets, 7, RequestKind::ListOffsets(req)) {
            ResponseKind::ListOffsets(r) => r.topics[0].partitions[0].offset,
            other => panic!("{other:?}"),
        }
    };
    (offset(conn, 1), offset(conn, 0))
}

fn describe_txn(
    conn: &mut Conn,
    transactional_id: &str,
) -> kafka_protocol::messages::describe_transactions_response::TransactionState {
    let req =
        DescribeTransactionsRequest::default().with_transactional_ids(vec![tid(transactional_id)]);
    match conn.call(
        ApiKey::DescribeTransactions,
        0,
        RequestKind::DescribeTransactions(req),
    ) {
        ResponseKind::DescribeTransactions(mut r) => r.transaction_states.remove(0),
        other => panic!("{other:?}"),
    }
}

const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;

#[test]
fn late_and_unadded_transactional_writes_are_refused() {
    let shale = Shale::start_with(&["transaction.state.log.num.partitions=2"]);
    let mut conn = Conn::open(&shale);
    let (topic, txn) = ("kip890", "raw-kip890");
    create_topic(&mut conn, topic);
    let id = init_producer_id(&mut conn, txn);

    // KIP-890 part 1: a transactional batch for a partition not added to the transaction
    // is refused by the leader, which asked the coordinator; nothing is left hanging.
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 0, "unadded")),
        INVALID_TXN_STATE
    );
    assert_eq!(stable_and_end(&mut conn, topic), (0, 0));

    assert_eq!(add_partition(&mut conn, txn, id, topic), 0);
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 0, "committed")),
        0
    );
    assert_eq!(stable_and_end(&mut conn, topic), (0, 1));

    // Transaction version 2: EndTxn bumps the epoch and the markers carry the new one.
    let (code, epoch) = end_txn(&mut conn, txn, id, true);
    assert_eq!((code, epoch), (0, id.1 + 1));
    assert_eq!(stable_and_end(&mut conn, topic), (2, 2));
    // A delayed batch of the committed transaction, at the old epoch, is fenced.
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 1, "late")),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(stable_and_end(&mut conn, topic), (2, 2));

    // Produce v12 adds the partition to the next transaction implicitly.
    let next = (id.0, epoch);
    assert_eq!(
        produce(&mut conn, 12, txn, topic, txn_batch(next, 0, "aborted")),
        0
    );
    let described = describe_txn(&mut conn, txn);
    assert_eq!(described.error_code, 0);
    assert_eq!(described.transaction_state.as_str(), "Ongoing");
    assert_eq!(described.producer_epoch, next.1);
    assert_eq!(described.topics[0].topic.0.as_str(), topic);
    assert_eq!(described.topics[0].partitions, vec![0]);
    assert_eq!(stable_and_end(&mut conn, topic), (2, 3));

    let (code, epoch) = end_txn(&mut conn, txn, next, false);
    assert_eq!((code, epoch), (0, next.1 + 1));
    // A retry of that EndTxn from before the bump is answered with the bumped epoch.
    assert_eq!(end_txn(&mut conn, txn, next, false), (0, next.1 + 1));
    assert_eq!(
        produce(&mut conn, 12, txn, topic, txn_batch(next, 1, "late")),
        INVALID_PRODUCER_EPOCH
    );
    // Two markers, no transaction left open: the last stable offset is the log end.
    assert_eq!(stable_and_end(&mut conn, topic), (4, 4));
}

#[test]
fn admin_apis_describe_list_and_abort_transactions() {
    let shale = Shale::start_with(&["transaction.state.log.num.partitions=2"]);
    let mut conn = Conn::open(&shale);
    let (topic, txn) = ("admin-txn", "raw-admin-1");
    create_topic(&mut conn, topic);
    let id = init_producer_id(&mut conn, txn);
    assert_eq!(add_partition(&mut conn, txn, id, topic), 0);
    assert_eq!(
        produce(&mut conn, 11, txn, topic, txn_batch(id, 0, "open")),
        0
    );
    assert_eq!(stable_and_end(&mut conn, topic), (0, 1));

    // DescribeProducers shows the open transaction's first offset.
    let req = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(name(topic))
        .with_partition_indexes(vec![0])]);
    let ResponseKind::DescribeProducers(producers) = conn.call(
        ApiKey::DescribeProducers,
        0,
        RequestKind::DescribeProducers(req),
    ) else {
        panic!("not a DescribeProducers response")
    };
    let active = &producers.topics[0].partitions[0].active_producers;
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].producer_id.0, id.0);
    assert_eq!(active[0].current_txn_start_offset, 0);

    let list = |conn: &mut Conn, version: i16, req: ListTransactionsRequest| match conn.call(
        ApiKey::ListTransactions,
        version,
        RequestKind::ListTransactions(req),
    ) {
        ResponseKind::ListTransactions(r) => r,
        other => panic!("{other:?}"),
    };
    let ongoing = || vec![StrBytes::from_static_str("Ongoing")];
    let r = list(
        &mut conn,
        2,
        ListTransactionsRequest::default()
            .with_state_filters(ongoing())
            .with_producer_id_filters(vec![ProducerId(id.0)])
            .with_duration_filter(-1)
            .with_transactional_id_pattern(Some(StrBytes::from_static_str("raw-admin-[0-9]+"))),
    );
    assert_eq!(r.error_code, 0);
    assert_eq!(r.transaction_states.len(), 1);
    assert_eq!(r.transaction_states[0].transactional_id.0.as_str(), txn);
    assert_eq!(
        r.transaction_states[0].transaction_state.as_str(),
        "Ongoing"
    );
    // Filters that exclude it: another producer id, a state, a pattern, a long duration.
    for req in [
        ListTransactionsRequest::default().with_producer_id_filters(vec![ProducerId(id.0 + 1)]),
        ListTransactionsRequest::default()
            .with_state_filters(vec![StrBytes::from_static_str("CompleteCommit")]),
        ListTransactionsRequest::default()
            .with_transactional_id_pattern(Some(StrBytes::from_static_str("raw-admin"))),
        ListTransactionsRequest::default().with_duration_filter(3_600_000),
    ] {
        let r = list(&mut conn, 2, req);
        assert_eq!((r.error_code, r.transaction_states.len()), (0, 0));
    }
    let r = list(
        &mut conn,
        1,
        ListTransactionsRequest::default()
            .with_state_filters(vec![StrBytes::from_static_str("Bogus")])
            .with_duration_filter(0),
    );
    assert_eq!(
        r.unknown_state_filters,
        vec![StrBytes::from_static_str("Bogus")]
    );
    assert_eq!(r.transaction_states.len(), 1);
    let r = list(
        &mut conn,
        2,
        ListTransactionsRequest::default()
            .with_transactional_id_pattern(Some(StrBytes::from_static_str("("))),
    );
    assert_eq!(r.error_code, 128);
    assert_eq!(describe_txn(&mut conn, "no-such-id").error_code, 105);

    // What `kafka-transactions.sh abort` does: WriteTxnMarkers to the partition leader with
    // the producer's epoch. The partition's transaction ends; the coordinator is not told.
    let marker = |topic: &str| {
        WritableTxnMarker::default()
            .with_producer_id(ProducerId(id.0))
            .with_producer_epoch(id.1)
            .with_transaction_result(false)
            .with_coordinator_epoch(0)
            .with_topics(vec![WritableTxnMarkerTopic::default()
                .with_name(name(topic))
                .with_partition_indexes(vec![0])])
    };
    let req = WriteTxnMarkersRequest::default().with_markers(vec![marker(topic), marker("gone")]);
    let ResponseKind::WriteTxnMarkers(written) = conn.call(
        ApiKey::WriteTxnMarkers,
        1,
        RequestKind::WriteTxnMarkers(req),
    ) else {
        panic!("not a WriteTxnMarkers response")
    };
    assert_eq!(written.markers[0].topics[0].partitions[0].error_code, 0);
    assert_eq!(written.markers[1].topics[0].partitions[0].error_code, 3);
    assert_eq!(stable_and_end(&mut conn, topic), (2, 2));
}

#[test]
fn api_versions_finalizes_transaction_version_2() {
    let shale = Shale::start();
    let mut conn = Conn::open(&shale);
    let request = || {
        ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("txn-test"))
            .with_client_software_version(StrBytes::from_static_str("1.0"))
    };
    let ResponseKind::ApiVersions(v4) =
        conn.call(ApiKey::ApiVersions, 4, RequestKind::ApiVersions(request()))
    else {
        panic!("not an ApiVersions response")
    };
    let supported = v4
        .supported_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .expect("transaction.version supported");
    assert_eq!((supported.min_version, supported.max_version), (0, 2));
    let finalized = v4
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .expect("transaction.version finalized");
    assert_eq!(
        (finalized.min_version_level, finalized.max_version_level),
        (2, 2)
    );
    assert!(v4.finalized_features_epoch >= 0);
    let end_txn = v4
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::EndTxn as i16)
        .unwrap();
    assert_eq!(end_txn.max_version, 5);

    // Before v4 a feature with minimum 0 is left out of the supported list (KAFKA-17492).
    let ResponseKind::ApiVersions(v3) =
        conn.call(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(request()))
    else {
        panic!("not an ApiVersions response")
    };
    assert!(v3.supported_features.is_empty());
    assert_eq!(v3.finalized_features.len(), 1);
}
