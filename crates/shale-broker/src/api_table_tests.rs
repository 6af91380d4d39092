use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use shale_protocol::{Request, RequestHeader, Response};

use super::*;
use crate::config::{BrokerConfig, StaticProperties};

#[test]
fn every_entry_is_decodable_by_the_codec() {
    for e in API_TABLE {
        let key = e.key as i16;
        let min = shale_protocol::min_supported_request_version(key);
        let max = shale_protocol::max_supported_request_version(key);
        assert!(min.is_some_and(|min| e.accepted_min >= min), "{:?}", e.key);
        assert!(max.is_some_and(|max| e.max <= max), "{:?}", e.key);
        assert!(e.advertised_min <= e.accepted_min);
    }
}

#[test]
fn keys_are_unique() {
    let mut keys: Vec<i16> = API_TABLE.iter().map(|e| e.key as i16).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), API_TABLE.len());
}

#[test]
fn dispatch_routes_exactly_the_advertised_keys() {
    let advertised: Vec<ApiKey> = API_TABLE.iter().map(|e| e.key).collect();
    assert_eq!(DISPATCHED_KEYS, advertised.as_slice());
    for key in NEWER_DISPATCHED_KEYS {
        assert!(
            advertised.contains(key),
            "{key:?} routed but not advertised"
        );
    }
    // Every request Shale's own codec decodes has a route: the three newer versions, and the
    // five share APIs the codec decodes at every version.
    let mut newer: Vec<i16> = NEWER_DISPATCHED_KEYS.iter().map(|k| *k as i16).collect();
    newer.sort_unstable();
    assert_eq!(
        newer,
        vec![
            ApiKey::ApiVersions as i16,
            ApiKey::WriteTxnMarkers as i16,
            ApiKey::TxnOffsetCommit as i16,
            ApiKey::ShareFetch as i16,
            ApiKey::ShareAcknowledge as i16,
            ApiKey::WriteShareGroupState as i16,
            ApiKey::ReadShareGroupStateSummary as i16,
            ApiKey::DescribeShareGroupOffsets as i16,
        ]
    );
}

#[test]
fn the_readme_table_has_a_row_per_entry_with_its_authorization() {
    let table = markdown_table();
    assert_eq!(table.lines().count(), API_TABLE.len() + 2);
    let produce = "| 0 | Produce | 3-13 | 0-13 | \
                   Write Topic, Write TransactionalId, IdempotentWrite Cluster | \
                   per resource, in the handler |";
    assert!(table.contains(produce), "{table}");
    assert!(table.contains("| 18 | ApiVersions | 0-5 | 0-5 | none | none |"));
    assert!(table.contains(
        "| 30 | CreateAcls | 1-3 | 1-3 | Alter Cluster | Alter on Cluster, before the handler |"
    ));
}

/// Every API says how it is authorized, and a check before the handler can answer.
#[test]
fn every_entry_is_authorized_as_declared() {
    use crate::authorization::Enforcement;
    for e in API_TABLE {
        match e.enforcement {
            Enforcement::Nothing => {
                assert!(e.access.is_empty(), "{:?} checks nothing", e.key);
                assert!(!e.has_refusal, "{:?}", e.key);
            }
            Enforcement::InHandler => {
                assert!(!e.access.is_empty(), "{:?} has checks", e.key);
                assert!(!e.has_refusal, "{:?} refuses in its handler", e.key);
            }
            Enforcement::Cluster(op) => {
                assert!(e.has_refusal, "{:?} answers a refused request", e.key);
                assert!(
                    e.access.iter().any(|a| a.operation == op
                        && a.resource == crate::authorization::ResourceType::Cluster),
                    "{:?} checks what Kafka checks",
                    e.key
                );
                // The cluster check runs on the kafka-protocol route only.
                assert!(!NEWER_DISPATCHED_KEYS.contains(&e.key), "{:?}", e.key);
            }
        }
    }
    // Kafka authorizes nothing before authentication.
    let unchecked: Vec<ApiKey> = API_TABLE
        .iter()
        .filter(|e| e.enforcement == Enforcement::Nothing)
        .map(|e| e.key)
        .collect();
    assert_eq!(
        unchecked,
        [
            ApiKey::ApiVersions,
            ApiKey::SaslHandshake,
            ApiKey::SaslAuthenticate
        ]
    );
}

/// The body of a default request of `entry` at `version`, as a client would send it.
fn default_body(entry: &ApiEntry, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    if let Some(newer) = default_newer_request(entry.key) {
        if newer.encode(&mut buf, version).is_ok() {
            return buf.freeze();
        }
        buf.clear();
    }
    let request = default_request(entry.key).expect("a default request for every entry");
    // kafka-protocol carries some versions at an older one with the same wire layout: its
    // newest version at or below `version`.
    for at in (0..=version).rev() {
        if request.encode(&mut buf, at).is_ok() {
            return buf.freeze();
        }
        buf.clear();
    }
    panic!("{:?} v{version}: no encoder", entry.key);
}

fn header(entry: &ApiEntry, version: i16) -> RequestHeader {
    RequestHeader {
        api_key: entry.key as i16,
        api_version: version,
        correlation_id: 7,
        client_id: Some("api-table-test".to_string()),
        header_version: entry.key.request_header_version(version),
    }
}

/// Each accepted version decodes into a request that dispatch has a route for: a version
/// the codec hands over in Shale's own types needs a `newer` route.
#[test]
fn every_accepted_version_decodes_into_a_routed_request() {
    for entry in API_TABLE {
        for version in entry.accepted_min..=entry.max {
            let decoded = shale_protocol::decode_any_request(
                &header(entry, version),
                default_body(entry, version),
            );
            let routed = match decoded {
                Ok(Request::Kafka(_)) => DISPATCHED_KEYS.contains(&entry.key),
                Ok(Request::Newer(r)) => {
                    r.api_key() == entry.key as i16 && NEWER_DISPATCHED_KEYS.contains(&entry.key)
                }
                Err(e) => panic!("{:?} v{version}: {e}", entry.key),
            };
            assert!(routed, "{:?} v{version} has no route", entry.key);
        }
    }
}

fn answers_key(response: &Response, key: ApiKey) -> bool {
    match response {
        // kafka-protocol's variants are named after their keys.
        Response::Kafka(kind) => format!("{kind:?}").starts_with(&format!("{key:?}(")),
        Response::Newer(newer) => newer.api_key() == key as i16,
    }
}

/// A default request of every advertised key, at its newest version, reaches a handler of
/// that key on a running broker: the answer is of the key's type (or, for acks=0 Produce,
/// none at all) and encodes at the version asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_advertised_key_is_answered_by_its_handler() {
    every_key_is_answered(&[], crate::request::ANONYMOUS_PRINCIPAL).await;
}

/// The same with the StandardAuthorizer and a principal without any ACL: every refusal,
/// before the handler or in it, is an answer of the key's type, never a closed connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_advertised_key_is_answered_when_the_authorizer_refuses() {
    every_key_is_answered(
        &["authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"],
        "User:alice",
    )
    .await;
}

async fn every_key_is_answered(extra: &[&str], principal: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let mut overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0".to_string(),
        format!("log.dirs={}", tmp.path().join("data").display()),
        "offsets.topic.replication.factor=1".to_string(),
    ];
    overrides.extend(extra.iter().map(|s| s.to_string()));
    let props = StaticProperties::load(None, std::iter::empty(), &overrides).unwrap();
    let config = BrokerConfig::from_properties(props).unwrap();
    let handle = crate::broker::Broker::start(config).await.unwrap();
    let broker = handle.broker.clone();
    for entry in API_TABLE {
        let header = header(entry, entry.max);
        let body = default_body(entry, entry.max);
        let request = shale_protocol::decode_any_request(&header, body).unwrap();
        let ctx = RequestContext {
            header,
            peer: SocketAddr::from((Ipv4Addr::LOCALHOST, 1)),
            listener_name: Arc::from("PLAINTEXT"),
            principal: Arc::from(principal),
            connection_id: 0,
        };
        let answer = async {
            match request {
                Request::Kafka(r) => dispatch(&broker, &ctx, r).await,
                Request::Newer(r) => dispatch_newer(&broker, &ctx, r).await,
            }
        };
        let answer = tokio::time::timeout(Duration::from_secs(60), answer)
            .await
            .unwrap_or_else(|_| panic!("{:?}: no answer", entry.key));
        // A default DescribeAcls names the UNKNOWN (0) resource type, operation and so on,
        // which Kafka's request parsing refuses by closing the connection.
        if entry.key == ApiKey::DescribeAcls {
            assert!(
                matches!(answer, Err(crate::request::HandlerError::Malformed(_))),
                "{answer:?}"
            );
            continue;
        }
        let answer = answer.unwrap_or_else(|e| panic!("{:?}: {e}", entry.key));
        match answer {
            None => assert_eq!(entry.key, ApiKey::Produce, "only acks=0 goes unanswered"),
            Some(response) => {
                assert!(
                    answers_key(&response, entry.key),
                    "{:?}: {response:?}",
                    entry.key
                );
                shale_protocol::encode_any_response(&ctx.header, &response)
                    .unwrap_or_else(|e| panic!("{:?}: {e}", entry.key));
            }
        }
    }
    handle.shutdown().await;
}
