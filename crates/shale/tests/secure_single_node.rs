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

use common::{free_port, Shale};
use kafka_conn::{create_topic, fetch, metadata, produce, Conn, Pki};
use kafka_protocol::messages::ResponseKind;

/// A TLS connection to `port` logged in with SASL/PLAIN as `user`.
fn login(port: u16, pki: &Pki, user: &str, password: &str) -> Conn {
    let mut conn = Conn::tls(port, pki.client_config(None));
    conn.plain_login(user, password);
    conn
}

#[test]
fn the_secured_single_node_config_serves_sasl_ssl_with_acls_only() {
    // The node's certificate names localhost and 127.0.0.1, as scripts/make-test-ca.sh makes it.
    let pki = Pki::for_server(&["localhost", "127.0.0.1"], "node-1");
    let client_port = free_port();
    let config = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/secure-single-node/server.properties");
    let overrides = [
        format!("listeners=SECURE://127.0.0.1:{client_port}"),
        format!("advertised.listeners=SECURE://127.0.0.1:{client_port}"),
        format!("ssl.keystore.location={}", pki.path("server.pem")),
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
