use crate::config::static_props::{StaticProperties, ValueOrigin};
use crate::config::BrokerConfig;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                    username=\"broker\" password=\"broker-secret\" user_broker=\"broker-secret\";";

fn props(pairs: &[(&str, &str)]) -> StaticProperties {
    let mut props = StaticProperties::default();
    props.set("log.dirs", "/tmp/shale-peer-tests", ValueOrigin::File);
    for (k, v) in pairs {
        props.set(k, v, ValueOrigin::File);
    }
    props
}

fn config(pairs: &[(&str, &str)]) -> Result<BrokerConfig, String> {
    BrokerConfig::from_properties(props(pairs)).map_err(|e| e.to_string())
}

/// A single node with a PLAINTEXT and a SASL_PLAINTEXT listener named INTERNAL.
fn sasl_node<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut pairs = vec![
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:19092,INTERNAL://127.0.0.1:19093",
        ),
        (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        ),
        ("sasl.enabled.mechanisms", "PLAIN"),
        ("listener.name.internal.plain.sasl.jaas.config", JAAS),
    ];
    pairs.extend_from_slice(extra);
    pairs
}

#[test]
fn without_either_key_the_inter_broker_listener_is_plaintext() {
    let cfg = config(&sasl_node(&[])).unwrap();
    assert_eq!(cfg.inter_broker_listener_name, "PLAINTEXT");
    assert_eq!(cfg.inter_broker_client.security_protocol, "PLAINTEXT");
    assert!(cfg.inter_broker_client.sasl.is_none() && cfg.inter_broker_client.tls.is_none());
    // Kafka's rule: the default names a listener that must exist.
    let err = config(&[
        ("listeners", "CLIENTS://127.0.0.1:19092"),
        (
            "listener.security.protocol.map",
            "CLIENTS:PLAINTEXT,CONTROLLER:PLAINTEXT",
        ),
    ])
    .unwrap_err();
    assert!(
        err.contains(
            "inter.broker.listener.name must be a listener name defined in advertised.listeners"
        ),
        "{err}"
    );
    assert!(err.contains("CLIENTS"), "{err}");
}

#[test]
fn both_inter_broker_keys_are_refused_as_kafka_refuses_them() {
    let err = config(&sasl_node(&[
        ("inter.broker.listener.name", "INTERNAL"),
        ("security.inter.broker.protocol", "SASL_PLAINTEXT"),
    ]))
    .unwrap_err();
    assert!(
        err.contains(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."
        ),
        "{err}"
    );
}

#[test]
fn a_sasl_inter_broker_listener_takes_the_jaas_username_and_password() {
    let cfg = config(&sasl_node(&[
        ("inter.broker.listener.name", "internal"),
        ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
    ]))
    .unwrap();
    assert_eq!(cfg.inter_broker_listener_name, "INTERNAL");
    let sasl = cfg.inter_broker_client.sasl.as_ref().unwrap();
    assert_eq!(sasl.username, "broker");
    assert_eq!(sasl.password(), "broker-secret");
    assert!(!format!("{:?}", cfg.inter_broker_client).contains("broker-secret"));
}

#[test]
fn security_inter_broker_protocol_names_the_listener_of_that_name() {
    let err = config(&sasl_node(&[(
        "security.inter.broker.protocol",
        "SASL_PLAINTEXT",
    )]))
    .unwrap_err();
    // No listener is named SASL_PLAINTEXT here.
    assert!(err.contains("security.inter.broker.protocol"), "{err}");
    assert!(err.contains("advertised.listeners"), "{err}");
}

#[test]
fn inter_broker_mechanisms_other_than_plain_are_refused_by_name() {
    // The key, the value, a text the error holds.
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[], "Kafka's default is GSSAPI"),
        (
            &[("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-256")],
            "SCRAM between nodes is not served yet",
        ),
        (
            &[("sasl.mechanism.inter.broker.protocol", "GSSAPI")],
            "not served",
        ),
        (
            &[("sasl.mechanism.inter.broker.protocol", "plain")],
            "not a SASL mechanism Kafka knows",
        ),
    ];
    for (extra, text) in cases {
        let mut pairs = vec![("inter.broker.listener.name", "INTERNAL")];
        pairs.extend_from_slice(extra);
        let err = config(&sasl_node(&pairs)).unwrap_err();
        assert!(
            err.contains("sasl.mechanism.inter.broker.protocol"),
            "{err}"
        );
        assert!(err.contains(text), "{err}");
    }
}

#[test]
fn a_jaas_entry_without_credentials_is_refused() {
    let server_only = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                       user_broker=\"broker-secret\";";
    let err = config(&sasl_node(&[
        ("inter.broker.listener.name", "INTERNAL"),
        ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
        ("listener.name.internal.plain.sasl.jaas.config", server_only),
    ]))
    .unwrap_err();
    assert!(
        err.contains("listener.name.internal.plain.sasl.jaas.config"),
        "{err}"
    );
    assert!(err.contains("username and password"), "{err}");
}

#[test]
fn an_ssl_inter_broker_listener_needs_a_truststore() {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let ssl = [
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:19092,INTERNAL://127.0.0.1:19093",
        ),
        (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:PLAINTEXT",
        ),
        ("inter.broker.listener.name", "INTERNAL"),
    ];
    let (chain, private_key) = (cert.pem(), key.serialize_pem());
    let mut pairs = ssl.to_vec();
    pairs.extend([
        ("ssl.keystore.certificate.chain", chain.as_str()),
        ("ssl.keystore.key", private_key.as_str()),
    ]);
    let err = config(&pairs).unwrap_err();
    assert!(err.contains("ssl.truststore.location"), "{err}");
    assert!(err.contains("connections to other brokers"), "{err}");
    pairs.push(("ssl.truststore.certificates", chain.as_str()));
    let cfg = config(&pairs).unwrap();
    assert!(cfg.inter_broker_client.tls.is_some());
    assert!(cfg.inter_broker_client.sasl.is_none());
}

#[test]
fn a_sasl_controller_listener_needs_the_controller_mechanism() {
    let err = config(&[
        ("node.id", "1"),
        ("process.roles", "broker,controller"),
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093",
        ),
        (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        ),
        ("controller.quorum.voters", "1@127.0.0.1:19093"),
        ("sasl.enabled.mechanisms", "PLAIN"),
        ("listener.name.controller.plain.sasl.jaas.config", JAAS),
    ])
    .unwrap_err();
    assert!(err.contains("sasl.mechanism.controller.protocol"), "{err}");
    assert!(err.contains("GSSAPI"), "{err}");
}

#[test]
fn a_broker_only_node_reads_the_controller_listener_it_dials() {
    let cfg = config(&[
        ("node.id", "4"),
        ("process.roles", "broker"),
        ("listeners", "PLAINTEXT://127.0.0.1:19092"),
        (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        ),
        ("controller.quorum.voters", "1@127.0.0.1:19093"),
        ("sasl.mechanism.controller.protocol", "PLAIN"),
        ("listener.name.controller.plain.sasl.jaas.config", JAAS),
    ])
    .unwrap();
    let controller = cfg.controller_client.unwrap();
    assert_eq!(controller.listener_name, "CONTROLLER");
    assert_eq!(controller.sasl.unwrap().username, "broker");
}
