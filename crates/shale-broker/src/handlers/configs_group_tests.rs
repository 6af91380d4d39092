//! DescribeConfigs, IncrementalAlterConfigs and AlterConfigs of GROUP resources on a running
//! broker, with the answers Apache Kafka 4.4 gives (compat-tests/harness/group_configs.py),
//! and the ALTER_CONFIGS / DESCRIBE_CONFIGS checks Kafka makes on the group.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource as IncrementalResource, AlterableConfig as IncrementalConfig,
};
use kafka_protocol::messages::ApiKey;
use shale_protocol::RequestHeader;

use super::*;
use crate::config::{BrokerConfig, StaticProperties};
use crate::request::ANONYMOUS_PRINCIPAL;

const SESSION: &str = "consumer.session.timeout.ms";
const HEARTBEAT: &str = "consumer.heartbeat.interval.ms";

struct Node {
    handle: crate::server::BrokerHandle,
    _dir: tempfile::TempDir,
}

/// A single node with the differential script's lowered bounds.
async fn node(extra: &[&str]) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let mut overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0".to_string(),
        format!("log.dirs={}", dir.path().join("data").display()),
        "offsets.topic.replication.factor=1".to_string(),
        "group.consumer.min.session.timeout.ms=2000".to_string(),
        "group.consumer.min.heartbeat.interval.ms=1000".to_string(),
        "group.consumer.heartbeat.interval.ms=3000".to_string(),
    ];
    overrides.extend(extra.iter().map(|s| s.to_string()));
    let props = StaticProperties::load(None, std::iter::empty(), &overrides).unwrap();
    let config = BrokerConfig::from_properties(props).unwrap();
    Node {
        handle: Broker::start(config).await.unwrap(),
        _dir: dir,
    }
}

fn ctx(key: ApiKey, version: i16, principal: &str) -> RequestContext {
    RequestContext {
        header: RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id: 1,
            client_id: Some("group-configs-test".into()),
            header_version: key.request_header_version(version),
        },
        peer: SocketAddr::from((Ipv4Addr::LOCALHOST, 1)),
        listener_name: Arc::from("PLAINTEXT"),
        principal: Arc::from(principal),
        connection_id: 0,
    }
}

/// (code, message, [(name, value, source, synonyms)]) of one group's describe.
type Described = (
    i16,
    Option<String>,
    Vec<(String, Option<String>, i8, Vec<(String, i8)>)>,
);

fn describe_group(
    broker: &Arc<Broker>,
    principal: &str,
    group: &str,
    keys: Option<&[&str]>,
) -> Described {
    let request = DescribeConfigsRequest::default()
        .with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(RESOURCE_GROUP)
            .with_resource_name(s(group))
            .with_configuration_keys(
                keys.map(|k| k.iter().map(|k| s(*k)).collect()),
            )])
        .with_include_synonyms(true);
    let response = describe(broker, &ctx(ApiKey::DescribeConfigs, 4, principal), request);
    let r = &response.results[0];
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
        r.configs
            .iter()
            .map(|c| {
                (
                    c.name.to_string(),
                    c.value.as_ref().map(|v| v.to_string()),
                    c.config_source,
                    c.synonyms
                        .iter()
                        .map(|s| (s.name.to_string(), s.source))
                        .collect(),
                )
            })
            .collect(),
    )
}

async fn incremental_group(
    broker: &Arc<Broker>,
    principal: &str,
    group: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let request = IncrementalAlterConfigsRequest::default()
        .with_resources(vec![IncrementalResource::default()
            .with_resource_type(RESOURCE_GROUP)
            .with_resource_name(s(group))
            .with_configs(
                ops.iter()
                    .map(|(name, op, value)| {
                        IncrementalConfig::default()
                            .with_name(s(*name))
                            .with_config_operation(*op)
                            .with_value(value.map(s))
                    })
                    .collect(),
            )])
        .with_validate_only(validate_only);
    let response = incremental_alter(
        broker,
        &ctx(ApiKey::IncrementalAlterConfigs, 1, principal),
        request,
    )
    .await;
    let r = &response.responses[0];
    assert_eq!(
        (r.resource_type, r.resource_name.as_str()),
        (RESOURCE_GROUP, group)
    );
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// The broker's own image has a change the controller committed once it is applied; wait
/// for it as the broker's DescribeConfigs would see it.
async fn wait_for_value(broker: &Arc<Broker>, group: &str, key: &str, value: Option<&str>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut images = broker.metadata.subscribe();
    loop {
        let current = images
            .borrow_and_update()
            .group_configs(group)
            .get(key)
            .cloned();
        if current.as_deref() == value {
            return;
        }
        tokio::time::timeout_at(deadline, images.changed())
            .await
            .expect("the change reaches the image")
            .unwrap();
    }
}

fn entry<'a>(d: &'a Described, name: &str) -> &'a (String, Option<String>, i8, Vec<(String, i8)>) {
    d.2.iter().find(|c| c.0 == name).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_configs_are_described_and_altered_as_kafka() {
    let node = node(&[]).await;
    let broker = node.handle.broker.clone();
    let p = ANONYMOUS_PRINCIPAL;

    // A group nobody has seen: Kafka's 21 keys, the broker's values.
    let unknown = describe_group(&broker, p, "no-such-group", None);
    assert_eq!((unknown.0, unknown.1.as_deref()), (0, Some("")));
    assert_eq!(unknown.2.len(), 21);
    assert_eq!(
        entry(&unknown, HEARTBEAT),
        &(
            HEARTBEAT.to_string(),
            Some("3000".to_string()),
            4,
            vec![
                ("group.consumer.heartbeat.interval.ms".to_string(), 4),
                ("group.consumer.heartbeat.interval.ms".to_string(), 5),
            ]
        )
    );
    assert_eq!(entry(&unknown, SESSION).1.as_deref(), Some("45000"));
    assert_eq!(
        describe_group(&broker, p, "no-such-group", Some(&[SESSION, "bogus"]))
            .2
            .len(),
        1
    );
    assert_eq!(
        describe_group(&broker, p, "", None),
        (42, Some("Group name must not be empty".into()), vec![])
    );

    // SET, then described with the group's own source first.
    assert_eq!(
        incremental_group(&broker, p, "g1", &[(SESSION, 0, Some("50000"))], false).await,
        (0, None)
    );
    wait_for_value(&broker, "g1", SESSION, Some("50000")).await;
    let described = describe_group(&broker, p, "g1", Some(&[SESSION]));
    assert_eq!(
        described.2,
        vec![(
            SESSION.to_string(),
            Some("50000".to_string()),
            8,
            vec![
                (SESSION.to_string(), 8),
                ("group.consumer.session.timeout.ms".to_string(), 5)
            ]
        )]
    );

    // Kafka's refusals, and Shale's of a key it does not act on.
    for (ops, expected) in [
        (
            vec![("bogus", 0, Some("1"))],
            (40, "Unknown group config name: bogus"),
        ),
        (
            vec![(SESSION, 0, Some("1000"))],
            (
                40,
                "consumer.session.timeout.ms must be in the range 2000 to 60000 inclusive.",
            ),
        ),
        (
            vec![(SESSION, 0, Some("2500"))],
            (
                40,
                "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
            ),
        ),
        (
            vec![(SESSION, 2, Some("1"))],
            (
                40,
                "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.",
            ),
        ),
        (
            vec![(SESSION, 0, None)],
            (
                42,
                "Null value not supported for : consumer.session.timeout.ms",
            ),
        ),
        (
            vec![("errors.deadletterqueue.topic.name", 0, Some("dlq.g3"))],
            (
                40,
                "Shale does not serve the group config errors.deadletterqueue.topic.name; only \
                 consumer.session.timeout.ms, consumer.heartbeat.interval.ms, \
                 share.session.timeout.ms, share.heartbeat.interval.ms, \
                 share.record.lock.duration.ms, share.delivery.count.limit, \
                 share.partition.max.record.locks, share.auto.offset.reset, \
                 share.isolation.level, share.renew.acknowledge.enable can be set on a group",
            ),
        ),
    ] {
        let answer = incremental_group(&broker, p, "g3", &ops, false).await;
        assert_eq!(
            (answer.0, answer.1.as_deref()),
            (expected.0, Some(expected.1)),
            "{ops:?}"
        );
    }
    assert_eq!(
        incremental_group(&broker, p, "", &[(SESSION, 0, Some("50000"))], false).await,
        (42, Some("Default group resources are not allowed.".into()))
    );
    assert_eq!(
        incremental_group(&broker, p, "g3", &[(HEARTBEAT, 0, Some("6000"))], true).await,
        (0, None)
    );

    // The legacy AlterConfigs replaces the group's set, as Kafka allows.
    let legacy =
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(RESOURCE_GROUP)
            .with_resource_name(s("g1"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s(HEARTBEAT))
                .with_value(Some(s("4000")))])]);
    let answer = alter(&broker, &ctx(ApiKey::AlterConfigs, 0, p), legacy).await;
    assert_eq!(answer.responses[0].error_code, 0);
    wait_for_value(&broker, "g1", SESSION, None).await;
    wait_for_value(&broker, "g1", HEARTBEAT, Some("4000")).await;

    // DELETE goes back to the broker's value; nothing of the refusals or validate_only stayed.
    assert_eq!(
        incremental_group(&broker, p, "g1", &[(HEARTBEAT, 1, None)], false).await,
        (0, None)
    );
    wait_for_value(&broker, "g1", HEARTBEAT, None).await;
    assert_eq!(
        entry(&describe_group(&broker, p, "g1", None), HEARTBEAT).2,
        4
    );
    assert!(broker.image().group_configs("g3").is_empty());
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_configs_need_describe_and_alter_configs_on_the_group() {
    let node = node(&[
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:admin",
    ])
    .await;
    let broker = node.handle.broker.clone();
    assert_eq!(
        describe_group(&broker, "User:alice", "g", None),
        (30, Some("Group authorization failed.".into()), vec![])
    );
    assert_eq!(
        incremental_group(
            &broker,
            "User:alice",
            "g",
            &[(SESSION, 0, Some("50000"))],
            false
        )
        .await
        .0,
        30
    );
    assert_eq!(describe_group(&broker, "User:admin", "g", None).0, 0);
    assert_eq!(
        incremental_group(
            &broker,
            "User:admin",
            "g",
            &[(SESSION, 0, Some("50000"))],
            false
        )
        .await,
        (0, None)
    );
    node.handle.shutdown().await;
}
