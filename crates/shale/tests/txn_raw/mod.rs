//! Raw protocol frames for the transaction tests: a blocking connection and the requests a
//! transactional producer sends.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, BrokerId, CreateTopicsRequest, DescribeTransactionsRequest,
    EndTxnRequest, FindCoordinatorRequest, InitProducerIdRequest, ListOffsetsRequest,
    ProduceRequest, ProducerId, RequestKind, ResponseKind, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::RequestHeader;

use crate::common::Shale;

pub const TIMEOUT: Duration = Duration::from_secs(30);

pub struct Conn {
    stream: TcpStream,
    next_correlation: i32,
    /// The broker's output, shown when it does not answer.
    broker_log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Conn {
    pub fn open(shale: &Shale) -> Conn {
        let stream = TcpStream::connect(shale.bootstrap()).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        Conn {
            stream,
            next_correlation: 1,
            broker_log: shale.log.clone(),
        }
    }

    pub fn call(&mut self, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
        let correlation_id = self.send(key, version, request);
        let mut len = [0u8; 4];
        self.read_answer(key, &mut len);
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.read_answer(key, &mut buf);
        let (correlation, response) =
            shale_protocol::decode_response(key as i16, version, Bytes::from(buf)).unwrap();
        assert_eq!(correlation, correlation_id);
        response
    }

    fn read_answer(&mut self, key: ApiKey, buf: &mut [u8]) {
        if let Err(err) = self.stream.read_exact(buf) {
            let log = self.broker_log.lock().unwrap().join("\n");
            panic!("no answer to {key:?}: {err}; the broker's output:\n{log}");
        }
    }

    /// Like [`Self::call`], for a response that may be in Shale's own types (a version whose
    /// fields kafka-protocol's types lack).
    pub fn call_any(
        &mut self,
        key: ApiKey,
        version: i16,
        request: RequestKind,
    ) -> shale_protocol::Response {
        let correlation_id = self.send(key, version, request);
        self.answer(key, version, correlation_id)
    }

    /// Sends a request whose body is already encoded (for versions kafka-protocol cannot
    /// encode) and decodes the answer as either kind of response.
    pub fn call_body(
        &mut self,
        key: ApiKey,
        version: i16,
        body: &[u8],
    ) -> shale_protocol::Response {
        let correlation_id = self.send_body(key, version, body);
        self.answer(key, version, correlation_id)
    }

    /// Writes one frame: the request header for `key` at `version`, then `body`.
    pub fn send_body(&mut self, key: ApiKey, version: i16, body: &[u8]) -> i32 {
        let correlation_id = self.next_correlation;
        self.next_correlation += 1;
        let client_id = b"txn-raw-test";
        let mut frame = BytesMut::new();
        frame.put_i32(0);
        frame.put_i16(key as i16);
        frame.put_i16(version);
        frame.put_i32(correlation_id);
        frame.put_i16(client_id.len() as i16);
        frame.put_slice(client_id);
        if key.request_header_version(version) >= 2 {
            frame.put_u8(0);
        }
        frame.put_slice(body);
        let len = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&len.to_be_bytes());
        self.stream.write_all(&frame).unwrap();
        correlation_id
    }

    fn answer(
        &mut self,
        key: ApiKey,
        version: i16,
        correlation_id: i32,
    ) -> shale_protocol::Response {
        let mut len = [0u8; 4];
        self.read_answer(key, &mut len);
        let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
        self.read_answer(key, &mut buf);
        let (correlation, response) =
            shale_protocol::decode_any_response(key as i16, version, Bytes::from(buf)).unwrap();
        assert_eq!(correlation, correlation_id);
        response
    }

    /// Sends a request without reading its response; returns its correlation id.
    pub fn send(&mut self, key: ApiKey, version: i16, request: RequestKind) -> i32 {
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
        correlation_id
    }

    /// Whether the broker closed the connection (reading ends without a response).
    pub fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte), Ok(0) | Err(_))
    }
}

pub fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_owned()))
}

pub fn tid(s: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(s.to_owned()))
}

pub fn create_topic(conn: &mut Conn, topic: &str) {
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
pub fn init_producer_id(conn: &mut Conn, transactional_id: &str) -> (i64, i16) {
    init_producer_id_with_timeout(conn, transactional_id, 60_000)
}

/// [`init_producer_id`] with the transaction timeout the producer asks for.
pub fn init_producer_id_with_timeout(
    conn: &mut Conn,
    transactional_id: &str,
    transaction_timeout_ms: i32,
) -> (i64, i16) {
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
            .with_transaction_timeout_ms(transaction_timeout_ms)
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

pub fn add_partition(conn: &mut Conn, transactional_id: &str, id: (i64, i16), topic: &str) -> i16 {
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

pub fn end_txn_request(transactional_id: &str, id: (i64, i16), commit: bool) -> RequestKind {
    RequestKind::EndTxn(
        EndTxnRequest::default()
            .with_transactional_id(tid(transactional_id))
            .with_producer_id(ProducerId(id.0))
            .with_producer_epoch(id.1)
            .with_committed(commit),
    )
}

/// EndTxn v5 (transaction version 2): the error code and the epoch the producer continues at.
pub fn end_txn(
    conn: &mut Conn,
    transactional_id: &str,
    id: (i64, i16),
    commit: bool,
) -> (i16, i16) {
    let req = end_txn_request(transactional_id, id, commit);
    match conn.call(ApiKey::EndTxn, 5, req) {
        ResponseKind::EndTxn(r) => (r.error_code, r.producer_epoch),
        other => panic!("{other:?}"),
    }
}

/// A transactional RecordBatch v2 with one record.
pub fn txn_batch(id: (i64, i16), base_sequence: i32, value: &str) -> Bytes {
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

pub fn put_varint(buf: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.put_u8((z as u8) | 0x80);
        z >>= 7;
    }
    buf.put_u8(z as u8);
}

/// Produce (v11: transaction version 1, v12: version 2) of one batch: error code.
pub fn produce(
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
pub fn stable_and_end(conn: &mut Conn, topic: &str) -> (i64, i64) {
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

pub fn describe_txn(
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
