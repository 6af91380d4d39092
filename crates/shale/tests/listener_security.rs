//! A listener whose security protocol Shale does not implement (SASL) refuses to start: it must
//! never come up as plain, unauthenticated TCP under a configuration that asks for SASL. So do
//! the TLS and per-listener keys Shale does not honour, and an SSL listener where brokers
//! would need to speak TLS to each other.
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

#[test]
fn sasl_listeners_refuse_to_start() {
    for protocol in ["SASL_PLAINTEXT", "SASL_SSL"] {
        let port = free_port();
        let (ok, text) = serve_expecting_exit(&[
            format!("listeners={protocol}://127.0.0.1:{port}"),
            format!("listener.security.protocol.map={protocol}:{protocol},CONTROLLER:PLAINTEXT"),
        ]);
        assert!(!ok, "{protocol}: shale exited successfully:\n{text}");
        assert!(
            text.contains(&format!("{protocol}://127.0.0.1:{port}")),
            "{protocol}: the error names the listener:\n{text}"
        );
        assert!(
            text.contains("listener.security.protocol.map"),
            "{protocol}: the error names the key:\n{text}"
        );
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "{protocol}: nothing listens on the refused port"
        );
    }
}

#[test]
fn a_plaintext_listener_beside_a_sasl_one_does_not_start_either() {
    let (plain, sasl) = (free_port(), free_port());
    let (ok, text) = serve_expecting_exit(&[
        format!("listeners=PLAINTEXT://127.0.0.1:{plain},SECURE://127.0.0.1:{sasl}"),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL,CONTROLLER:PLAINTEXT"
            .to_string(),
    ]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!("SECURE://127.0.0.1:{sasl}")),
        "{text}"
    );
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
        (
            "security.inter.broker.protocol",
            "security.inter.broker.protocol",
        ),
        ("inter.broker.listener.name", "inter.broker.listener.name"),
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
