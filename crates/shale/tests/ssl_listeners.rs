//! SSL listeners: a TLS client gets the answers a plaintext client gets, from one broker
//! serving both listeners; client certificates are required and checked when configured; a
//! client that does not speak TLS is closed without harm to the broker. The certificates are
//! made here, with a throw-away CA.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{free_port, Shale};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, BrokerId, CreateTopicsRequest, FetchRequest, MetadataRequest,
    ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use shale_protocol::RequestHeader;

/// A CA, a server certificate for `localhost` and a client certificate it signed, and a
/// client certificate signed by a CA the broker does not trust. PEM files in `dir`.
struct Pki {
    dir: tempfile::TempDir,
    ca_pem: String,
    client_chain_pem: String,
    client_key_pem: String,
    stranger_chain_pem: String,
    stranger_key_pem: String,
}

fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    (params.self_signed(&key).unwrap(), key)
}

/// A leaf certificate signed by `issuer` and its chain (leaf, then the CA) as PEM.
fn leaf(
    names: Vec<String>,
    common_name: &str,
    issuer: &(rcgen::Certificate, KeyPair),
) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(names).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params
        .distinguished_name
        .push(DnType::OrganizationName, "Shale Test");
    let cert = params.signed_by(&key, &issuer.0, &issuer.1).unwrap();
    (cert.pem() + &issuer.0.pem(), key.serialize_pem())
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let trusted = ca("shale test ca");
        let (server_chain, server_key) = leaf(vec!["localhost".to_string()], "broker", &trusted);
        std::fs::write(
            dir.path().join("server.pem"),
            format!("{server_key}{server_chain}"),
        )
        .unwrap();
        std::fs::write(dir.path().join("ca.pem"), trusted.0.pem()).unwrap();
        let (client_chain_pem, client_key_pem) = leaf(Vec::new(), "client", &trusted);
        let stranger_ca = ca("stranger ca");
        let (stranger_chain_pem, stranger_key_pem) = leaf(Vec::new(), "client", &stranger_ca);
        Pki {
            ca_pem: trusted.0.pem(),
            dir,
            client_chain_pem,
            client_key_pem,
            stranger_chain_pem,
            stranger_key_pem,
        }
    }

    fn path(&self, file: &str) -> String {
        self.dir.path().join(file).display().to_string()
    }

    /// A TLS client trusting the CA, showing `identity` (chain and key PEM) if given.
    fn client_config(&self, identity: Option<(&str, &str)>) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match identity {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => builder
                .with_client_auth_cert(
                    CertificateDer::pem_slice_iter(chain.as_bytes())
                        .map(Result::unwrap)
                        .collect(),
                    PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
                )
                .unwrap(),
        };
        Arc::new(config)
    }
}

/// A byte stream a Kafka client speaks over: plain TCP or TLS.
trait Transport: Read + Write + Send {}
impl<T: Read + Write + Send> Transport for T {}

struct Conn {
    stream: Box<dyn Transport>,
    next_correlation: i32,
}

impl Conn {
    fn plain(port: u16) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Conn {
            stream: Box::new(stream),
            next_correlation: 1,
        }
    }

    fn tls(port: u16, config: Arc<rustls::ClientConfig>) -> Conn {
        let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let tls = rustls::ClientConnection::new(config, name).unwrap();
        Conn {
            stream: Box::new(rustls::StreamOwned::new(tls, tcp)),
            next_correlation: 1,
        }
    }

    /// Sends a request; false when the stream refused the bytes (a TLS handshake failed).
    fn send(&mut self, key: ApiKey, version: i16, request: RequestKind) -> bool {
        let header = RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id: self.next_correlation,
            client_id: Some("ssl-test".into()),
            header_version: key.request_header_version(version),
        };
        self.next_correlation += 1;
        let frame = shale_protocol::encode_request(&header, &request).unwrap();
        self.stream.write_all(&frame).is_ok() && self.stream.flush().is_ok()
    }

    /// One response frame without its length prefix; None when the connection ended.
    fn read_frame(&mut self) -> Option<Bytes> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).ok()?;
        let mut buf = vec![0u8; usize::try_from(i32::from_be_bytes(len)).ok()?];
        self.stream.read_exact(&mut buf).ok()?;
        Some(Bytes::from(buf))
    }

    /// A request and its answer; None when the broker closed the connection instead.
    fn try_call(
        &mut self,
        key: ApiKey,
        version: i16,
        request: RequestKind,
    ) -> Option<ResponseKind> {
        if !self.send(key, version, request) {
            return None;
        }
        let expected = self.next_correlation - 1;
        let frame = self.read_frame()?;
        let (correlation, response) =
            shale_protocol::decode_response(key as i16, version, frame).unwrap();
        assert_eq!(correlation, expected);
        Some(response)
    }

    fn call(&mut self, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
        self.try_call(key, version, request).expect("an answer")
    }

    fn api_versions(&mut self) -> Option<ResponseKind> {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("ssl-test"))
            .with_client_software_version(StrBytes::from_static_str("1"));
        self.try_call(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(request))
    }
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

fn create_topic(conn: &mut Conn, name: &str) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(topic_name(name))
            .with_num_partitions(1)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    match conn.call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(request)) {
        ResponseKind::CreateTopics(r) => assert_eq!(r.topics[0].error_code, 0),
        other => panic!("{other:?}"),
    }
}

fn metadata(conn: &mut Conn, name: &str) -> ResponseKind {
    let request = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic_name(name)))
        ]))
        .with_allow_auto_topic_creation(false);
    conn.call(ApiKey::Metadata, 12, RequestKind::Metadata(request))
}

/// Produces one batch of `records` values; returns its base offset.
fn produce(conn: &mut Conn, name: &str, values: &[Vec<u8>]) -> i64 {
    let records: Vec<_> = values.iter().map(|v| (None, Some(v.as_slice()))).collect();
    let batch = shale_testkit::record_batch(&records, 1_700_000_000_000);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(name))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(Bytes::from(batch)))])]);
    match conn.call(ApiKey::Produce, 9, RequestKind::Produce(request)) {
        ResponseKind::Produce(r) => {
            let p = &r.responses[0].partition_responses[0];
            assert_eq!(p.error_code, 0);
            p.base_offset
        }
        other => panic!("{other:?}"),
    }
}

/// A consumer Fetch from offset 0: the error, high watermark and record bytes.
fn fetch(conn: &mut Conn, name: &str) -> (i16, i64, Bytes) {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(8 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(name))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(8 << 20)])]);
    match conn.call(ApiKey::Fetch, 12, RequestKind::Fetch(request)) {
        ResponseKind::Fetch(r) => {
            let p = &r.responses[0].partitions[0];
            (
                p.error_code,
                p.high_watermark,
                p.records.clone().unwrap_or_default(),
            )
        }
        other => panic!("{other:?}"),
    }
}

/// A broker with a PLAINTEXT and an SSL listener; returns it and the two ports.
fn broker_with_ssl(pki: &Pki, extra: &[String]) -> (Shale, u16, u16) {
    let (plain, ssl) = (free_port(), free_port());
    let mut overrides = vec![
        format!("listeners=PLAINTEXT://127.0.0.1:{plain},SECURE://127.0.0.1:{ssl}"),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:SSL,CONTROLLER:PLAINTEXT"
            .to_string(),
        "ssl.keystore.type=PEM".to_string(),
        format!("ssl.keystore.location={}", pki.path("server.pem")),
    ];
    overrides.extend_from_slice(extra);
    let refs: Vec<&str> = overrides.iter().map(String::as_str).collect();
    (Shale::start_with(&refs), plain, ssl)
}

#[test]
fn a_tls_client_gets_the_answers_a_plaintext_client_gets() {
    let pki = Pki::new();
    let (_shale, plain_port, ssl_port) = broker_with_ssl(&pki, &[]);
    let mut tls = Conn::tls(ssl_port, pki.client_config(None));
    let mut plain = Conn::plain(plain_port);

    let versions = tls.api_versions().expect("ApiVersions over TLS");
    assert_eq!(Some(versions), plain.api_versions());

    create_topic(&mut tls, "over-tls");
    // The same topics; each listener advertises the brokers' endpoints of its own name, as
    // Kafka answers Metadata.
    match (
        metadata(&mut tls, "over-tls"),
        metadata(&mut plain, "over-tls"),
    ) {
        (ResponseKind::Metadata(over_tls), ResponseKind::Metadata(over_plain)) => {
            assert_eq!(over_tls.topics, over_plain.topics);
            assert_eq!(over_tls.topics[0].error_code, 0);
            assert_eq!(over_tls.brokers[0].port, i32::from(ssl_port));
            assert_eq!(over_plain.brokers[0].port, i32::from(plain_port));
        }
        other => panic!("{other:?}"),
    }

    let small: Vec<Vec<u8>> = (0..5).map(|i| format!("value-{i}").into_bytes()).collect();
    assert_eq!(produce(&mut tls, "over-tls", &small), 0);
    // Larger than several of the broker's 64 KiB file chunks, and not a multiple of one.
    let large: Vec<Vec<u8>> = (0..3u8)
        .map(|i| (0..100_003u32).map(|j| (j as u8) ^ i).collect())
        .collect();
    assert_eq!(produce(&mut plain, "over-tls", &large), 5);

    let over_tls = fetch(&mut tls, "over-tls");
    let over_plain = fetch(&mut plain, "over-tls");
    assert_eq!((over_tls.0, over_tls.1), (0, 8));
    assert!(over_tls.2.len() > 300_000, "{}", over_tls.2.len());
    assert!(over_tls.2 == over_plain.2, "the record sets differ");
    // The values themselves are in the fetched bytes, whole.
    for value in small.iter().chain(&large) {
        assert!(
            over_tls
                .2
                .windows(value.len())
                .any(|w| w == value.as_slice()),
            "a produced value is missing from the TLS fetch"
        );
    }
}

#[test]
fn required_client_auth_takes_only_certificates_of_the_truststore() {
    let pki = Pki::new();
    let (_shale, plain_port, ssl_port) = broker_with_ssl(
        &pki,
        &[
            "ssl.truststore.type=PEM".to_string(),
            format!("ssl.truststore.location={}", pki.path("ca.pem")),
            "listener.name.secure.ssl.client.auth=required".to_string(),
        ],
    );
    let mut anonymous = Conn::tls(ssl_port, pki.client_config(None));
    assert_eq!(
        anonymous.api_versions(),
        None,
        "a client without a certificate"
    );
    let stranger = Some((
        pki.stranger_chain_pem.as_str(),
        pki.stranger_key_pem.as_str(),
    ));
    let mut untrusted = Conn::tls(ssl_port, pki.client_config(stranger));
    assert_eq!(
        untrusted.api_versions(),
        None,
        "a certificate of another CA"
    );
    let client = Some((pki.client_chain_pem.as_str(), pki.client_key_pem.as_str()));
    let mut trusted = Conn::tls(ssl_port, pki.client_config(client));
    assert!(
        trusted.api_versions().is_some(),
        "a certificate the CA signed"
    );
    // The plaintext listener is not affected by the SSL listener's settings.
    assert!(Conn::plain(plain_port).api_versions().is_some());
}

#[test]
fn a_plaintext_client_on_the_ssl_port_is_closed_and_the_broker_keeps_serving() {
    let pki = Pki::new();
    let (mut shale, plain_port, ssl_port) = broker_with_ssl(&pki, &[]);
    let mut confused = Conn::plain(ssl_port);
    let request = ApiVersionsRequest::default();
    assert!(confused.send(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(request)));
    // At most a TLS alert comes back, never a Kafka answer, and then the end of the stream.
    let mut answer = Vec::new();
    let _ = confused.stream.read_to_end(&mut answer);
    let framed_answer = answer.len() >= 4
        && i32::from_be_bytes([answer[0], answer[1], answer[2], answer[3]]) as usize + 4
            == answer.len();
    assert!(!framed_answer, "a Kafka answer in plain text: {answer:?}");
    assert!(shale.is_running());
    assert!(Conn::tls(ssl_port, pki.client_config(None))
        .api_versions()
        .is_some());
    assert!(Conn::plain(plain_port).api_versions().is_some());
}
