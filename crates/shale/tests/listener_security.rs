//! A SASL listener whose mechanisms Shale does not serve (GSSAPI, Kafka's default, and
//! OAUTHBEARER), or a served mechanism without its JAAS entry, refuses to start: it must never
//! come up weaker than configured. So do the TLS, SASL and per-listener keys Shale does not
//! honour, and a TLS or SASL listener where brokers would need to speak it to each other.
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use shale_testkit::{free_port, wait_for};

/// A broker that wrongly kept serving is killed when the test fails.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `shale serve` with `overrides`; returns whether it exited successfully and what it printed.
/// Panics if it is still running after the wait (it would then be serving).
fn serve_expecting_exit(overrides: &[String]) -> (bool, String) {
    let data = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shale"));
    cmd.arg("serve")
        .arg("--override")
        .arg(format!("log.dirs={}", data.path().display()));
    for o in overrides {
        cmd.arg("--override").arg(o);
    }
    let mut child = KillOnDrop(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let status = wait_for("shale to exit", Duration::from_secs(30), || {
        child.0.try_wait().unwrap()
    });
    let mut text = String::new();
    child
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert!(
        !text.contains("Shale server started"),
        "a refused listener must never be served:\n{text}"
    );
    (status.success(), text)
}

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                          user_alice=\"alice-secret\";";

/// A SASL listener serves PLAIN and SCRAM: without `sasl.enabled.mechanisms` (Kafka's default
/// is GSSAPI), with another mechanism, with PLAIN but no users, or with SCRAM but no
/// `ScramLoginModule` entry (or one asking for delegation tokens), it refuses to start, naming
/// the key and the listener; so do SASL between brokers.
#[test]
fn sasl_listeners_without_a_served_mechanism_refuse_to_start() {
    let jaas = format!("listener.name.clients.plain.sasl.jaas.config={PLAIN_JAAS}");
    let cases: Vec<(Vec<String>, &str, &str)> = vec![
        (vec![], "sasl.enabled.mechanisms", "GSSAPI"),
        (
            vec!["sasl.enabled.mechanisms=SCRAM-SHA-256".to_string()],
            "listener.name.clients.scram-sha-256.sasl.jaas.config",
            "ScramLoginModule",
        ),
        (
            vec![
                "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512".to_string(),
                jaas.clone(),
            ],
            "listener.name.clients.scram-sha-512.sasl.jaas.config",
            "ScramLoginModule",
        ),
        (
            vec![
                "sasl.enabled.mechanisms=SCRAM-SHA-512".to_string(),
                "listener.name.clients.scram-sha-512.sasl.jaas.config=\
                 org.apache.kafka.common.security.scram.ScramLoginModule required tokenauth=true;"
                    .to_string(),
            ],
            "listener.name.clients.scram-sha-512.sasl.jaas.config",
            "delegation-token",
        ),
        (
            vec!["listener.name.clients.sasl.enabled.mechanisms=GSSAPI".to_string()],
            "listener.name.clients.sasl.enabled.mechanisms",
            "GSSAPI",
        ),
        (
            vec!["sasl.enabled.mechanisms=OAUTHBEARER".to_string()],
            "listener.name.clients.oauthbearer.sasl.jaas.config",
            "OAuthBearerLoginModule",
        ),
        (
            vec![
                "sasl.enabled.mechanisms=OAUTHBEARER".to_string(),
                "listener.name.clients.oauthbearer.sasl.jaas.config=\
                 org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
                    .to_string(),
                "sasl.oauthbearer.jwks.endpoint.url=https://127.0.0.1:1/jwks".to_string(),
            ],
            "sasl.oauthbearer.jwks.endpoint.url",
            "JWKS",
        ),
        (
            vec!["sasl.enabled.mechanisms=PLAIN".to_string()],
            "listener.name.clients.plain.sasl.jaas.config",
            "PlainLoginModule",
        ),
        (
            vec![
                "sasl.enabled.mechanisms=PLAIN".to_string(),
                jaas.clone(),
                "listener.name.clients.scram-sha-256.sasl.jaas.config=x".to_string(),
            ],
            "listener.name.clients.scram-sha-256.sasl.jaas.config",
            "not in the listener's sasl.enabled.mechanisms",
        ),
        (
            vec![
                "sasl.enabled.mechanisms=PLAIN".to_string(),
                jaas.clone(),
                "inter.broker.listener.name=CLIENTS".to_string(),
                "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256".to_string(),
            ],
            "sasl.mechanism.inter.broker.protocol",
            "SCRAM between nodes is not served yet",
        ),
        (
            vec![
                "sasl.enabled.mechanisms=PLAIN".to_string(),
                jaas.clone(),
                "sasl.jaas.config=x".to_string(),
            ],
            "sasl.jaas.config",
            "listener.name.<listener>.plain.sasl.jaas.config",
        ),
        (
            vec![
                "sasl.enabled.mechanisms=PLAIN".to_string(),
                jaas.clone(),
                "inter.broker.listener.name=CLIENTS".to_string(),
            ],
            "sasl.mechanism.inter.broker.protocol",
            "Kafka's default is GSSAPI",
        ),
    ];
    for (extra, key, text_named) in cases {
        let (plain, sasl) = (free_port(), free_port());
        let mut overrides = vec![
            format!("listeners=PLAINTEXT://127.0.0.1:{plain},CLIENTS://127.0.0.1:{sasl}"),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENTS:SASL_PLAINTEXT,\
             CONTROLLER:PLAINTEXT"
                .to_string(),
        ];
        overrides.extend(extra);
        let (ok, text) = serve_expecting_exit(&overrides);
        assert!(!ok, "{key}: shale exited successfully:\n{text}");
        assert!(
            text.contains(key),
            "{key}: the error names the key:\n{text}"
        );
        assert!(text.contains(text_named), "{key}: {text_named}:\n{text}");
        assert!(TcpStream::connect(("127.0.0.1", sasl)).is_err(), "{key}");
        assert!(TcpStream::connect(("127.0.0.1", plain)).is_err(), "{key}");
    }
}

#[test]
fn a_plaintext_listener_beside_a_sasl_one_without_mechanisms_does_not_start_either() {
    let (plain, sasl) = (free_port(), free_port());
    let (ok, text) = serve_expecting_exit(&[
        format!("listeners=PLAINTEXT://127.0.0.1:{plain},SECURE://127.0.0.1:{sasl}"),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL,CONTROLLER:PLAINTEXT"
            .to_string(),
    ]);
    assert!(!ok, "{text}");
    assert!(text.contains("SASL listener SECURE"), "{text}");
    assert!(text.contains("sasl.enabled.mechanisms"), "{text}");
    assert!(TcpStream::connect(("127.0.0.1", plain)).is_err());
}

#[test]
fn tls_keys_are_refused_by_name_not_ignored() {
    let port = free_port();
    let (ok, text) = serve_expecting_exit(&[
        format!("listeners=PLAINTEXT://127.0.0.1:{port}"),
        "ssl.keystore.location=/nonexistent/keystore.pem".to_string(),
    ]);
    assert!(!ok, "{text}");
    assert!(text.contains("ssl.keystore.location"), "{text}");
}

/// Keys that are not honoured stop start-up with an error naming them, beside an SSL listener
/// that is otherwise well configured.
#[test]
fn unserved_ssl_keys_refuse_to_start_beside_an_ssl_listener() {
    let dir = tempfile::tempdir().unwrap();
    let keystore = dir.path().join("server.pem");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    std::fs::write(&keystore, key.serialize_pem() + &cert.pem()).unwrap();
    let cases: &[(&str, &str)] = &[
        ("ssl.principal.mapping.rules", "ssl.principal.mapping.rules"),
        ("ssl.engine.factory.class", "ssl.engine.factory.class"),
        ("ssl.key.password", "ssl.key.password"),
        ("ssl.keystore.type", "ssl.keystore.type"),
        (
            "listener.name.secure.sasl.enabled.mechanisms",
            "listener.name.secure.sasl.enabled.mechanisms",
        ),
        // No listener is named SSL, and the SSL listener has no truststore to verify peers.
        (
            "security.inter.broker.protocol",
            "security.inter.broker.protocol",
        ),
        ("inter.broker.listener.name", "ssl.truststore.location"),
    ];
    for (key, named) in cases {
        let value = match *key {
            "ssl.keystore.type" => "JKS",
            "security.inter.broker.protocol" => "SSL",
            "inter.broker.listener.name" => "SECURE",
            _ => "x",
        };
        let (plain, ssl) = (free_port(), free_port());
        let (ok, text) = serve_expecting_exit(&[
            format!("listeners=PLAINTEXT://127.0.0.1:{plain},SECURE://127.0.0.1:{ssl}"),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:SSL,CONTROLLER:PLAINTEXT"
                .to_string(),
            "ssl.keystore.type=PEM".to_string(),
            format!("ssl.keystore.location={}", keystore.display()),
            format!("{key}={value}"),
        ]);
        assert!(!ok, "{key}: shale exited successfully:\n{text}");
        assert!(text.contains(named), "{key}: the error names it:\n{text}");
        assert!(TcpStream::connect(("127.0.0.1", ssl)).is_err(), "{key}");
        assert!(TcpStream::connect(("127.0.0.1", plain)).is_err(), "{key}");
    }
}
