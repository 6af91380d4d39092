use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

use super::*;
use crate::config::static_props::ValueOrigin;

/// A throw-away CA and a server certificate it signed, as PEM.
struct Pki {
    ca_pem: String,
    server_chain_pem: String,
    server_key_pem: String,
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, "test ca");
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let server_key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        let server_cert = server.signed_by(&server_key, &ca_cert, &ca_key).unwrap();
        Pki {
            ca_pem: ca_cert.pem(),
            server_chain_pem: server_cert.pem() + &ca_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Kafka's PEM keystore file: the private key and the certificate chain.
    fn keystore_file(&self) -> String {
        let path = self.dir.path().join("server.pem");
        std::fs::write(
            &path,
            format!("{}{}", self.server_key_pem, self.server_chain_pem),
        )
        .unwrap();
        path.display().to_string()
    }

    fn truststore_file(&self) -> String {
        let path = self.dir.path().join("ca.pem");
        std::fs::write(&path, &self.ca_pem).unwrap();
        path.display().to_string()
    }
}

fn props(pairs: &[(&str, &str)]) -> StaticProperties {
    let mut props = StaticProperties::default();
    for (k, v) in pairs {
        props.set(k, v, ValueOrigin::File);
    }
    props
}

fn listeners() -> Vec<Listener> {
    vec![
        Listener {
            name: "PLAINTEXT".to_string(),
            host: "127.0.0.1".to_string(),
            port: 9092,
            security_protocol: "PLAINTEXT".to_string(),
        },
        Listener {
            name: "SECURE".to_string(),
            host: "127.0.0.1".to_string(),
            port: 9093,
            security_protocol: "SSL".to_string(),
        },
    ]
}

fn error_of(pairs: &[(&str, &str)]) -> String {
    listener_tls(&props(pairs), &listeners())
        .unwrap_err()
        .to_string()
}

#[test]
fn a_pem_keystore_file_makes_an_ssl_listener() {
    let pki = Pki::new();
    let keystore = pki.keystore_file();
    let truststore = pki.truststore_file();
    let tls = listener_tls(
        &props(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", &keystore),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", &truststore),
            ("listener.name.secure.ssl.client.auth", "requested"),
        ]),
        &listeners(),
    )
    .unwrap();
    assert_eq!(
        tls.len(),
        1,
        "only the SSL listener gets a TLS configuration"
    );
    assert_eq!(tls[0].listener_name, "SECURE");
}

#[test]
fn an_inline_pem_keystore_and_truststore_with_client_auth() {
    let pki = Pki::new();
    let tls = listener_tls(
        &props(&[
            ("ssl.keystore.certificate.chain", &pki.server_chain_pem),
            ("ssl.keystore.key", &pki.server_key_pem),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.certificates", &pki.ca_pem),
            ("ssl.client.auth", "required"),
            ("ssl.enabled.protocols", "TLSv1.3"),
            ("ssl.protocol", "TLS"),
            ("ssl.cipher.suites", "TLS_AES_256_GCM_SHA384"),
            ("ssl.endpoint.identification.algorithm", ""),
        ]),
        &listeners(),
    )
    .unwrap();
    assert_eq!(tls.len(), 1);
}

#[test]
fn the_listener_override_wins_over_the_global_key() {
    let pki = Pki::new();
    let keystore = pki.keystore_file();
    listener_tls(
        &props(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/nonexistent/global.pem"),
            ("listener.name.secure.ssl.keystore.location", &keystore),
        ]),
        &listeners(),
    )
    .unwrap();
    let err = error_of(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &keystore),
        (
            "listener.name.secure.ssl.keystore.location",
            "/nonexistent/listener.pem",
        ),
    ]);
    assert!(
        err.contains("listener.name.secure.ssl.keystore.location"),
        "{err}"
    );
    assert!(err.contains("SSL listener SECURE"), "{err}");
}

#[test]
fn errors_name_the_key_and_the_listener() {
    let pki = Pki::new();
    let keystore = pki.keystore_file();
    let ks: &[(&str, &str)] = &[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &keystore),
    ];
    let with = |extra: &[(&str, &str)]| {
        let mut all = ks.to_vec();
        all.extend_from_slice(extra);
        error_of(&all)
    };
    let cases: Vec<(String, &str)> = vec![
        (error_of(&[]), "ssl.keystore.location"),
        (
            error_of(&[("ssl.keystore.location", &keystore)]),
            "ssl.keystore.type",
        ),
        (
            error_of(&[
                ("ssl.keystore.type", "JKS"),
                ("ssl.keystore.location", &keystore),
            ]),
            "ssl.keystore.type",
        ),
        (
            error_of(&[("ssl.keystore.certificate.chain", &pki.server_chain_pem)]),
            "ssl.keystore.certificate.chain",
        ),
        (with(&[("ssl.client.auth", "required")]), "ssl.client.auth"),
        (with(&[("ssl.client.auth", "maybe")]), "ssl.client.auth"),
        (
            with(&[("ssl.enabled.protocols", "TLSv1.2,TLSv1.1")]),
            "ssl.enabled.protocols",
        ),
        (with(&[("ssl.protocol", "SSLv3")]), "ssl.protocol"),
        (
            with(&[("ssl.cipher.suites", "TLS_RSA_WITH_AES_128_CBC_SHA")]),
            "ssl.cipher.suites",
        ),
        (
            with(&[
                ("ssl.enabled.protocols", "TLSv1.2"),
                ("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256"),
            ]),
            "ssl.cipher.suites",
        ),
        (
            with(&[("ssl.endpoint.identification.algorithm", "ldap")]),
            "ssl.endpoint.identification.algorithm",
        ),
        (
            with(&[
                ("ssl.truststore.type", "PKCS12"),
                ("ssl.truststore.location", &keystore),
            ]),
            "ssl.truststore.type",
        ),
    ];
    for (err, key) in cases {
        assert!(err.contains(key), "{key}: {err}");
        assert!(err.contains("SSL listener SECURE"), "{key}: {err}");
    }
}

#[test]
fn an_encrypted_key_is_refused() {
    let pki = Pki::new();
    let encrypted =
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n";
    let err = error_of(&[
        ("ssl.keystore.certificate.chain", &pki.server_chain_pem),
        ("ssl.keystore.key", encrypted),
    ]);
    assert!(err.contains("ssl.keystore.key"), "{err}");
    assert!(err.contains("encrypted"), "{err}");
}

#[test]
fn a_key_that_does_not_match_the_certificate_is_refused() {
    let pki = Pki::new();
    let other_key = KeyPair::generate().unwrap().serialize_pem();
    let err = error_of(&[
        ("ssl.keystore.certificate.chain", &pki.server_chain_pem),
        ("ssl.keystore.key", &other_key),
    ]);
    assert!(err.contains("ssl.keystore.key"), "{err}");
}

#[test]
fn without_an_ssl_listener_the_global_keys_are_still_checked() {
    let plain_only = &listeners()[..1];
    let err = listener_tls(
        &props(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", "/nonexistent/keystore.pem"),
        ]),
        plain_only,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("ssl.keystore.location"), "{err}");
    assert!(listener_tls(&props(&[]), plain_only).unwrap().is_empty());
}
