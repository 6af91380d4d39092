//! SSL listeners: a TLS client gets the answers a plaintext client gets, from one broker
//! serving both listeners; client certificates are required and checked when configured; a
//! client that does not speak TLS is closed without harm to the broker. The certificates are
//! made here, with a throw-away CA.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/kafka_conn.rs"]
mod kafka_conn;

use std::io::Read;

use common::{free_port, Shale};
use kafka_conn::{create_topic, fetch, metadata, produce, Conn, Pki};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestKind, ResponseKind};

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
