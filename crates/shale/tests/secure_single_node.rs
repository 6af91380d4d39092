//! The README's secured single node: `config/secure-single-node/server.properties` as it is,
//! with this test's certificates and port. Clients reach it over SASL_SSL only (a plain-text
//! request is not answered), and the StandardAuthorizer lets the super user do everything and
//! others only what ACLs grant.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/kafka_conn.rs"]
mod kafka_conn;

use std::io::Read;
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::{free_port, Shale};
use kafka_conn::{ca, create_topic, fetch, leaf, metadata, produce, Conn, Pki};
use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;

/// A CA and the node's certificate for `localhost` and `127.0.0.1` (it dials its own
/// controller at 127.0.0.1), as `scripts/make-test-ca.sh` makes them.
fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let trusted = ca("shale single node ca");
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let (node_chain, node_key) = leaf(names, "node-1", &trusted);
    std::fs::write(dir.path().join("node-1.pem"), node_key + &node_chain).unwrap();
    std::fs::write(dir.path().join("ca.pem"), trusted.0.pem()).unwrap();
    let (client_chain_pem, client_key_pem) = leaf(Vec::new(), "client", &trusted);
    let stranger = ca("stranger ca");
    let (stranger_chain_pem, stranger_key_pem) = leaf(Vec::new(), "client", &stranger);
    Pki {
        ca_pem: trusted.0.pem(),
        dir,
        client_chain_pem,
        client_key_pem,
        stranger_chain_pem,
        stranger_key_pem,
    }
}

/// A TLS connection to `port` logged in with SASL/PLAIN as `user`.
fn login(port: u16, pki: &Pki, user: &str, password: &str) -> Conn {
    let mut conn = Conn::tls(port, pki.client_config(None));
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    match conn.call(
        ApiKey::SaslHandshake,
        1,
        RequestKind::SaslHandshake(handshake),
    ) {
        ResponseKind::SaslHandshake(r) => assert_eq!(r.error_code, 0),
        other => panic!("{other:?}"),
    }
    let token = Bytes::from(format!("\0{user}\0{password}"));
    let request = SaslAuthenticateRequest::default().with_auth_bytes(token);
    match conn.call(
        ApiKey::SaslAuthenticate,
        2,
        RequestKind::SaslAuthenticate(request),
    ) {
        ResponseKind::SaslAuthenticate(r) => assert_eq!(r.error_code, 0, "{r:?}"),
        other => panic!("{other:?}"),
    }
    conn
}

#[test]
fn the_secured_single_node_config_serves_sasl_ssl_with_acls_only() {
    let pki = pki();
    let client_port = free_port();
    let config = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/secure-single-node/server.properties");
    let overrides = [
        format!("listeners=SECURE://127.0.0.1:{client_port}"),
        format!("advertised.listeners=SECURE://127.0.0.1:{client_port}"),
        format!("ssl.keystore.location={}", pki.path("node-1.pem")),
        format!("ssl.truststore.location={}", pki.path("ca.pem")),
    ];
    let refs: Vec<&str> = overrides.iter().map(String::as_str).collect();
    let _shale = Shale::start_from(Some(&config), &refs);

    // The super user creates, writes and reads.
    let mut admin = login(client_port, &pki, "admin", "admin-secret");
    create_topic(&mut admin, "orders");
    assert_eq!(produce(&mut admin, "orders", &[b"one".to_vec()]), 0);
    let (error, high_watermark, _) = fetch(&mut admin, "orders");
    assert_eq!((error, high_watermark), (0, 1));

    // Another user without ACLs may not even see the topic.
    let mut alice = login(client_port, &pki, "alice", "alice-secret");
    match metadata(&mut alice, "orders") {
        ResponseKind::Metadata(r) => assert_eq!(r.topics[0].error_code, 29),
        other => panic!("{other:?}"),
    }

    // A plain-text ApiVersions is not answered with a Kafka frame: at most a TLS alert
    // (record type 21), then the close.
    let mut stream = TcpStream::connect(("127.0.0.1", client_port)).unwrap();
    let api_versions_v0 = [0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 255, 255];
    std::io::Write::write_all(&mut stream, &api_versions_v0).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    assert!(
        answer.is_empty() || answer[0] == 21,
        "the SASL_SSL port answered plain text: {answer:?}"
    );
}
