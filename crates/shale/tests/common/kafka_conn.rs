//! A Kafka client's connection over plain TCP or TLS, raw frames, and a throw-away PKI
//! (rcgen) for TLS listeners: shared by the SSL and SASL listener tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, BrokerId, CreateTopicsRequest, FetchRequest, MetadataRequest,
    ProduceRequest, RequestKind, ResponseKind, SaslAuthenticateRequest, SaslHandshakeRequest,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use shale_protocol::RequestHeader;

/// A CA, a server certificate for `localhost` and a client certificate it signed, and a
/// client certificate signed by a CA the broker does not trust. PEM files in `dir`.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca_pem: String,
    pub client_chain_pem: String,
    pub client_key_pem: String,
    pub stranger_chain_pem: String,
    pub stranger_key_pem: String,
}

pub fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    (params.self_signed(&key).unwrap(), key)
}

/// A leaf certificate signed by `issuer` and its chain (leaf, then the CA) as PEM.
pub fn leaf(
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
    /// Like `new`, with the server certificate (`server.pem`) naming `names` and signed as
    /// `common_name`.
    pub fn for_server(names: &[&str], common_name: &str) -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let trusted = ca("shale test ca");
        let names = names.iter().map(|n| n.to_string()).collect();
        let (server_chain, server_key) = leaf(names, common_name, &trusted);
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

    pub fn new() -> Pki {
        Pki::for_server(&["localhost"], "broker")
    }

    pub fn path(&self, file: &str) -> String {
        self.dir.path().join(file).display().to_string()
    }

    /// A TLS client trusting the CA, showing `identity` (chain and key PEM) if given.
    pub fn client_config(&self, identity: Option<(&str, &str)>) -> Arc<rustls::ClientConfig> {
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
pub trait Transport: Read + Write + Send {}
impl<T: Read + Write + Send> Transport for T {}

pub struct Conn {
    pub stream: Box<dyn Transport>,
    pub next_correlation: i32,
}

impl Conn {
    pub fn plain(port: u16) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Conn {
            stream: Box::new(stream),
            next_correlation: 1,
        }
    }

    pub fn tls(port: u16, config: Arc<rustls::ClientConfig>) -> Conn {
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
    pub fn send(&mut self, key: ApiKey, version: i16, request: RequestKind) -> bool {
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
    pub fn read_frame(&mut self) -> Option<Bytes> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).ok()?;
        let mut buf = vec![0u8; usize::try_from(i32::from_be_bytes(len)).ok()?];
        self.stream.read_exact(&mut buf).ok()?;
        Some(Bytes::from(buf))
    }

    /// A request and its answer; None when the broker closed the connection instead.
    pub fn try_call(
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

    pub fn call(&mut self, key: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
        self.try_call(key, version, request).expect("an answer")
    }

    pub fn api_versions(&mut self) -> Option<ResponseKind> {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("ssl-test"))
            .with_client_software_version(StrBytes::from_static_str("1"));
        self.try_call(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(request))
    }

    /// SaslHandshake v1 and SaslAuthenticate v2 with PLAIN as `user`; panics unless both
    /// succeed.
    pub fn plain_login(&mut self, user: &str, password: &str) {
        let handshake =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
        match self.call(
            ApiKey::SaslHandshake,
            1,
            RequestKind::SaslHandshake(handshake),
        ) {
            ResponseKind::SaslHandshake(r) => assert_eq!(r.error_code, 0),
            other => panic!("{other:?}"),
        }
        let token = Bytes::from(format!("\0{user}\0{password}"));
        let authenticate = SaslAuthenticateRequest::default().with_auth_bytes(token);
        match self.call(
            ApiKey::SaslAuthenticate,
            2,
            RequestKind::SaslAuthenticate(authenticate),
        ) {
            ResponseKind::SaslAuthenticate(r) => {
                assert_eq!(r.error_code, 0, "{:?}", r.error_message)
            }
            other => panic!("{other:?}"),
        }
    }
}

pub fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

pub fn create_topic(conn: &mut Conn, name: &str) {
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

pub fn metadata(conn: &mut Conn, name: &str) -> ResponseKind {
    let request = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic_name(name)))
        ]))
        .with_allow_auto_topic_creation(false);
    conn.call(ApiKey::Metadata, 12, RequestKind::Metadata(request))
}

/// Produces one batch of `records` values; returns its base offset.
pub fn produce(conn: &mut Conn, name: &str, values: &[Vec<u8>]) -> i64 {
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
pub fn fetch(conn: &mut Conn, name: &str) -> (i16, i64, Bytes) {
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
