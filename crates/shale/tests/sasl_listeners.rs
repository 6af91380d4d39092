//! SASL listeners with the PLAIN mechanism, over raw frames: the handshake and authentication
//! open the connection, after which the client is served as any other; a wrong password is
//! answered SASL_AUTHENTICATION_FAILED and closes; nothing but ApiVersions, SaslHandshake and
//! SaslAuthenticate is served before authentication, and its frames are small
//! (CVE-2022-34917). The same over TLS on a SASL_SSL listener.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/kafka_conn.rs"]
mod kafka_conn;

use std::io::{ErrorKind, Read, Write};

use bytes::Bytes;
use common::{free_port, Shale};
use kafka_conn::{create_topic, fetch, produce, Conn, Pki};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, RequestKind, ResponseKind, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                    user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

/// Kafka's frame cap before authentication (`sasl.server.max.receive.size`).
const MAX_UNAUTHENTICATED_FRAME_BYTES: usize = 524_288;

/// A broker with a PLAINTEXT listener (for the brokers) and a SASL listener of `protocol`;
/// returns it and the SASL port.
fn broker_with_sasl(protocol: &str, pki: Option<&Pki>) -> (Shale, u16) {
    broker_with_sasl_and(protocol, pki, &[])
}

/// `broker_with_sasl` with more `key=value` overrides.
fn broker_with_sasl_and(protocol: &str, pki: Option<&Pki>, extra: &[&str]) -> (Shale, u16) {
    let (plain, sasl) = (free_port(), free_port());
    let mut overrides = vec![
        format!("listeners=PLAINTEXT://127.0.0.1:{plain},CLIENTS://127.0.0.1:{sasl}"),
        format!(
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENTS:{protocol},\
             CONTROLLER:PLAINTEXT"
        ),
        "sasl.enabled.mechanisms=PLAIN".to_string(),
        format!("listener.name.clients.plain.sasl.jaas.config={JAAS}"),
    ];
    if let Some(pki) = pki {
        overrides.push("ssl.keystore.type=PEM".to_string());
        overrides.push(format!("ssl.keystore.location={}", pki.path("server.pem")));
    }
    overrides.extend(extra.iter().map(|e| e.to_string()));
    let refs: Vec<&str> = overrides.iter().map(String::as_str).collect();
    (Shale::start_with(&refs), sasl)
}

fn handshake(conn: &mut Conn, version: i16, mechanism: &str) -> Option<SaslHandshakeResponse> {
    let request = SaslHandshakeRequest::default()
        .with_mechanism(StrBytes::from_string(mechanism.to_string()));
    match conn.try_call(
        ApiKey::SaslHandshake,
        version,
        RequestKind::SaslHandshake(request),
    )? {
        ResponseKind::SaslHandshake(r) => Some(r),
        other => panic!("{other:?}"),
    }
}

fn authenticate(conn: &mut Conn, user: &str, password: &str) -> Option<SaslAuthenticateResponse> {
    let token = format!("\0{user}\0{password}");
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
    match conn.try_call(
        ApiKey::SaslAuthenticate,
        2,
        RequestKind::SaslAuthenticate(request),
    )? {
        ResponseKind::SaslAuthenticate(r) => Some(r),
        other => panic!("{other:?}"),
    }
}

fn metadata_request() -> RequestKind {
    RequestKind::Metadata(
        MetadataRequest::default()
            .with_topics(Some(vec![MetadataRequestTopic::default()]))
            .with_allow_auto_topic_creation(false),
    )
}

/// Whether the broker has closed the connection: the next read ends the stream (or resets it)
/// rather than timing out.
fn closed_by_broker(conn: &mut Conn) -> bool {
    let mut byte = [0u8; 1];
    match conn.stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => panic!("bytes after the last answer"),
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
    }
}

fn plain_login(conn: &mut Conn) {
    let response = handshake(conn, 1, "PLAIN").expect("a handshake answer");
    assert_eq!(response.error_code, 0);
    assert_eq!(
        response.mechanisms,
        vec![StrBytes::from_static_str("PLAIN")]
    );
    let response = authenticate(conn, "alice", "alice-secret").expect("an answer");
    assert_eq!(response.error_code, 0, "{:?}", response.error_message);
    assert_eq!(response.session_lifetime_ms, 0);
}

/// Authenticates, then produces and fetches; a second handshake is refused but keeps the
/// connection.
fn authenticated_client_is_served(conn: &mut Conn) {
    match conn
        .api_versions()
        .expect("ApiVersions before authentication")
    {
        ResponseKind::ApiVersions(r) => {
            let keys: Vec<i16> = r.api_keys.iter().map(|k| k.api_key).collect();
            assert!(keys.contains(&17) && keys.contains(&36), "{keys:?}");
        }
        other => panic!("{other:?}"),
    }
    plain_login(conn);
    create_topic(conn, "after-sasl");
    let values: Vec<Vec<u8>> = (0..3).map(|i| format!("sasl-{i}").into_bytes()).collect();
    assert_eq!(produce(conn, "after-sasl", &values), 0);
    let (error, high_watermark, records) = fetch(conn, "after-sasl");
    assert_eq!((error, high_watermark), (0, 3));
    for value in &values {
        assert!(records.windows(value.len()).any(|w| w == value.as_slice()));
    }
    // After authentication Kafka's KafkaApis answers a handshake ILLEGAL_SASL_STATE.
    let again = handshake(conn, 1, "PLAIN").expect("an answer after authentication");
    assert_eq!(again.error_code, 34);
    assert!(conn.api_versions().is_some(), "the connection stays open");
}

fn wrong_password_fails_and_closes(conn: &mut Conn) {
    assert_eq!(handshake(conn, 1, "PLAIN").unwrap().error_code, 0);
    let response = authenticate(conn, "alice", "bob-secret").expect("a refusal is answered");
    assert_eq!(response.error_code, 58);
    assert_eq!(
        response.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert!(closed_by_broker(conn), "the connection must close");
}

#[test]
fn sasl_plaintext_authenticates_with_plain_then_serves_produce_and_fetch() {
    let (_shale, port) = broker_with_sasl("SASL_PLAINTEXT", None);
    authenticated_client_is_served(&mut Conn::plain(port));
    // Handshake v0: the token goes as a raw frame and the answer is a raw, empty one.
    let mut v0 = Conn::plain(port);
    assert_eq!(handshake(&mut v0, 0, "PLAIN").unwrap().error_code, 0);
    let token = b"\0bob\0bob-secret";
    let mut frame = (token.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(token);
    v0.stream.write_all(&frame).unwrap();
    assert_eq!(v0.read_frame().as_deref(), Some(&[][..]));
    match v0.call(ApiKey::Metadata, 12, metadata_request()) {
        ResponseKind::Metadata(r) => assert!(!r.brokers.is_empty()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_refused_login_is_answered_after_connection_failed_authentication_delay_ms() {
    let (_shale, port) = broker_with_sasl_and(
        "SASL_PLAINTEXT",
        None,
        &["connection.failed.authentication.delay.ms=800"],
    );
    let mut conn = Conn::plain(port);
    assert_eq!(handshake(&mut conn, 1, "PLAIN").unwrap().error_code, 0);
    let asked = std::time::Instant::now();
    let response = authenticate(&mut conn, "alice", "wrong").expect("a refusal is answered");
    let waited = asked.elapsed();
    assert_eq!(response.error_code, 58);
    assert!(
        waited >= std::time::Duration::from_millis(750),
        "the refusal came after {waited:?}, before the configured delay"
    );
    assert!(closed_by_broker(&mut conn), "the connection must close");
    // An unenabled mechanism is a refused login too.
    let mut other = Conn::plain(port);
    let asked = std::time::Instant::now();
    let refused = handshake(&mut other, 1, "SCRAM-SHA-256").expect("a refusal is answered");
    assert_eq!(refused.error_code, 33);
    assert!(asked.elapsed() >= std::time::Duration::from_millis(750));
}

#[test]
fn a_wrong_password_is_answered_58_and_closes_the_connection() {
    let (mut shale, port) = broker_with_sasl("SASL_PLAINTEXT", None);
    wrong_password_fails_and_closes(&mut Conn::plain(port));
    // An unknown user is refused with the same text.
    let mut stranger = Conn::plain(port);
    assert_eq!(handshake(&mut stranger, 1, "PLAIN").unwrap().error_code, 0);
    let response = authenticate(&mut stranger, "mallory", "alice-secret").unwrap();
    assert_eq!(response.error_code, 58);
    assert!(closed_by_broker(&mut stranger));
    assert!(shale.is_running());
}

#[test]
fn requests_before_authentication_close_the_connection() {
    let (_shale, port) = broker_with_sasl("SASL_PLAINTEXT", None);
    let mut first = Conn::plain(port);
    assert!(first
        .try_call(ApiKey::Metadata, 12, metadata_request())
        .is_none());
    // After the handshake, before SaslAuthenticate.
    let mut midway = Conn::plain(port);
    assert_eq!(handshake(&mut midway, 1, "PLAIN").unwrap().error_code, 0);
    assert!(midway
        .try_call(ApiKey::Metadata, 12, metadata_request())
        .is_none());
    // SaslAuthenticate without a handshake.
    let mut unannounced = Conn::plain(port);
    assert!(authenticate(&mut unannounced, "alice", "alice-secret").is_none());
    // A second handshake during authentication: ILLEGAL_SASL_STATE, then the end.
    let mut twice = Conn::plain(port);
    assert_eq!(handshake(&mut twice, 1, "PLAIN").unwrap().error_code, 0);
    assert_eq!(handshake(&mut twice, 1, "PLAIN").unwrap().error_code, 34);
    assert!(closed_by_broker(&mut twice));
    // A mechanism the listener does not enable: UNSUPPORTED_SASL_MECHANISM with the enabled
    // ones, then the end.
    let mut scram = Conn::plain(port);
    let response = handshake(&mut scram, 1, "SCRAM-SHA-256").unwrap();
    assert_eq!(response.error_code, 33);
    assert_eq!(
        response.mechanisms,
        vec![StrBytes::from_static_str("PLAIN")]
    );
    assert!(closed_by_broker(&mut scram));
}

#[test]
fn cve_2022_34917_frames_before_authentication_are_capped() {
    let (mut shale, port) = broker_with_sasl("SASL_PLAINTEXT", None);
    // A length prefix of 2 GiB and one just above the cap: the connection closes before any
    // body is read.
    for len in [i32::MAX as u32, MAX_UNAUTHENTICATED_FRAME_BYTES as u32 + 1] {
        let mut conn = Conn::plain(port);
        conn.stream.write_all(&len.to_be_bytes()).unwrap();
        conn.stream.flush().unwrap();
        assert!(closed_by_broker(&mut conn), "length {len}");
    }
    assert!(shale.is_running());
    // After authentication the cap is socket.request.max.bytes again: a larger Produce works.
    let mut conn = Conn::plain(port);
    plain_login(&mut conn);
    create_topic(&mut conn, "large");
    let large = vec![vec![7u8; MAX_UNAUTHENTICATED_FRAME_BYTES + 1000]];
    assert_eq!(produce(&mut conn, "large", &large), 0);
}

#[test]
fn sasl_ssl_authenticates_over_tls() {
    let pki = Pki::new();
    let (_shale, port) = broker_with_sasl("SASL_SSL", Some(&pki));
    authenticated_client_is_served(&mut Conn::tls(port, pki.client_config(None)));
    wrong_password_fails_and_closes(&mut Conn::tls(port, pki.client_config(None)));
    let mut early = Conn::tls(port, pki.client_config(None));
    assert!(early
        .try_call(ApiKey::Metadata, 12, metadata_request())
        .is_none());
}

/// librdkafka's SASL/PLAIN (built in, no OpenSSL or Cyrus SASL needed).
fn rdkafka_config(port: u16, password: &str) -> rdkafka::config::ClientConfig {
    let mut config = rdkafka::config::ClientConfig::new();
    config
        .set("bootstrap.servers", format!("127.0.0.1:{port}"))
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanism", "PLAIN")
        .set("sasl.username", "alice")
        .set("sasl.password", password);
    config
}

#[test]
fn librdkafka_produces_and_consumes_over_sasl_plaintext() {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Message;
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    use std::time::{Duration, Instant};

    let (_shale, port) = broker_with_sasl("SASL_PLAINTEXT", None);
    let mut conn = Conn::plain(port);
    plain_login(&mut conn);
    create_topic(&mut conn, "rdkafka-sasl");

    let producer: BaseProducer = rdkafka_config(port, "alice-secret")
        .set("message.timeout.ms", "20000")
        .create()
        .expect("a SASL_PLAINTEXT producer");
    for i in 0..10 {
        let value = format!("rd-{i}");
        producer
            .send(BaseRecord::<(), _>::to("rdkafka-sasl").payload(&value))
            .unwrap();
    }
    producer.flush(Duration::from_secs(30)).expect("delivered");

    let consumer: BaseConsumer = rdkafka_config(port, "alice-secret")
        .set("group.id", "unused-assign-only")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut assignment = rdkafka::TopicPartitionList::new();
    assignment
        .add_partition_offset("rdkafka-sasl", 0, rdkafka::Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut values = Vec::new();
    while values.len() < 10 && Instant::now() < deadline {
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            let m = m.expect("consume");
            values.push(String::from_utf8(m.payload().unwrap().to_vec()).unwrap());
        }
    }
    let expected: Vec<String> = (0..10).map(|i| format!("rd-{i}")).collect();
    assert_eq!(values, expected);

    // A wrong password never gets metadata.
    let refused: BaseProducer = rdkafka_config(port, "wrong").create().unwrap();
    assert!(refused
        .client()
        .fetch_metadata(None, Duration::from_secs(5))
        .is_err());
}
