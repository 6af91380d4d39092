//! ACLs and Kafka's StandardAuthorizer on a broker with a SASL_PLAINTEXT listener and two
//! PLAIN users: `admin`, a super user, and `alice`, who has only the ACLs the tests give her.
//! Raw frames, so that every answer's code is seen as a client sees it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/kafka_conn.rs"]
mod kafka_conn;

use std::time::Duration;

use bytes::Bytes;
use common::{free_port, Shale};
use kafka_conn::{topic_name, Conn};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateAclsRequest, CreateTopicsRequest, DeleteAclsRequest,
    DescribeAclsRequest, FetchRequest, InitProducerIdRequest, MetadataRequest, ProduceRequest,
    RequestKind, ResponseKind, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                    user_admin=\"admin-secret\" user_alice=\"alice-secret\";";
const AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

// Kafka's codes.
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const INVALID_REQUEST: i16 = 42;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const SECURITY_DISABLED: i16 = 54;
const UNKNOWN_SERVER_ERROR: i16 = -1;

// Kafka's ACL enums.
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const ANY: i8 = 1;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const READ: i8 = 3;
const WRITE: i8 = 4;
const DESCRIBE: i8 = 8;
const IDEMPOTENT_WRITE: i8 = 12;
const DENY: i8 = 2;
const ALLOW: i8 = 3;

/// A broker with a PLAINTEXT listener (its own, ANONYMOUS) and a SASL_PLAINTEXT one for the
/// users, with `authorizer` as `authorizer.class.name` when given; the SASL port.
fn broker(authorizer: Option<&str>) -> (Shale, u16) {
    let (plain, sasl) = (free_port(), free_port());
    let mut overrides = vec![
        format!("listeners=PLAINTEXT://127.0.0.1:{plain},CLIENTS://127.0.0.1:{sasl}"),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENTS:SASL_PLAINTEXT,\
         CONTROLLER:PLAINTEXT"
            .to_string(),
        "sasl.enabled.mechanisms=PLAIN".to_string(),
        format!("listener.name.clients.plain.sasl.jaas.config={JAAS}"),
        "offsets.topic.replication.factor=1".to_string(),
        "offsets.topic.num.partitions=1".to_string(),
        "transaction.state.log.replication.factor=1".to_string(),
        "transaction.state.log.min.isr=1".to_string(),
        "transaction.state.log.num.partitions=1".to_string(),
    ];
    if let Some(class) = authorizer {
        overrides.push(format!("authorizer.class.name={class}"));
        overrides.push("super.users=User:admin;User:ANONYMOUS".to_string());
        overrides.push("allow.everyone.if.no.acl.found=false".to_string());
    }
    let refs: Vec<&str> = overrides.iter().map(String::as_str).collect();
    (Shale::start_with(&refs), sasl)
}

fn login(port: u16, user: &str) -> Conn {
    let mut conn = Conn::plain(port);
    conn.plain_login(user, &format!("{user}-secret"));
    conn
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn create_topics(conn: &mut Conn, names: &[&str]) -> Vec<i16> {
    let request = CreateTopicsRequest::default()
        .with_topics(
            names
                .iter()
                .map(|n| {
                    CreatableTopic::default()
                        .with_name(topic_name(n))
                        .with_num_partitions(1)
                        .with_replication_factor(1)
                })
                .collect(),
        )
        .with_timeout_ms(10_000);
    match conn.call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(request)) {
        ResponseKind::CreateTopics(r) => r.topics.iter().map(|t| t.error_code).collect(),
        other => panic!("{other:?}"),
    }
}

struct Acl<'a> {
    resource_type: i8,
    name: &'a str,
    pattern: i8,
    principal: &'a str,
    operation: i8,
    permission: i8,
}

fn allow<'a>(resource_type: i8, name: &'a str, operation: i8) -> Acl<'a> {
    Acl {
        resource_type,
        name,
        pattern: LITERAL,
        principal: "User:alice",
        operation,
        permission: ALLOW,
    }
}

fn create_acls(conn: &mut Conn, acls: &[Acl<'_>]) -> Vec<i16> {
    let request = CreateAclsRequest::default().with_creations(
        acls.iter()
            .map(|a| {
                AclCreation::default()
                    .with_resource_type(a.resource_type)
                    .with_resource_name(s(a.name))
                    .with_resource_pattern_type(a.pattern)
                    .with_principal(s(a.principal))
                    .with_host(s("*"))
                    .with_operation(a.operation)
                    .with_permission_type(a.permission)
            })
            .collect(),
    );
    match conn.call(ApiKey::CreateAcls, 3, RequestKind::CreateAcls(request)) {
        ResponseKind::CreateAcls(r) => r.results.iter().map(|r| r.error_code).collect(),
        other => panic!("{other:?}"),
    }
}

fn produce(conn: &mut Conn, topic: &str) -> i16 {
    let batch = shale_testkit::record_batch(&[(None, Some(b"v".as_slice()))], 1_700_000_000_000);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(Bytes::from(batch)))])]);
    match conn.call(ApiKey::Produce, 9, RequestKind::Produce(request)) {
        ResponseKind::Produce(r) => r.responses[0].partition_responses[0].error_code,
        other => panic!("{other:?}"),
    }
}

/// A Fetch of partition 0 from offset 0, as a consumer or (`replica`) as a follower.
fn fetch(conn: &mut Conn, topic: &str, replica: Option<i32>) -> i16 {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(replica.unwrap_or(-1)))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    // v12: topics by name, the replica id in its own field.
    match conn.call(ApiKey::Fetch, 12, RequestKind::Fetch(request)) {
        ResponseKind::Fetch(r) => r.responses[0].partitions[0].error_code,
        other => panic!("{other:?}"),
    }
}

/// Metadata of `topics` (every topic when `None`): (name, error) per topic answered.
fn metadata(conn: &mut Conn, topics: Option<&[&str]>) -> Vec<(String, i16)> {
    let request = MetadataRequest::default()
        .with_topics(topics.map(|t| {
            t.iter()
                .map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n))))
                .collect()
        }))
        .with_allow_auto_topic_creation(false);
    match conn.call(ApiKey::Metadata, 12, RequestKind::Metadata(request)) {
        ResponseKind::Metadata(r) => r
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                    t.error_code,
                )
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn init_producer_id(conn: &mut Conn, transactional_id: Option<&str>) -> i16 {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(transactional_id.map(|t| TransactionalId(s(t))))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id((-1).into())
        .with_producer_epoch(-1);
    match conn.call(
        ApiKey::InitProducerId,
        4,
        RequestKind::InitProducerId(request),
    ) {
        ResponseKind::InitProducerId(r) => r.error_code,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_principal_without_acls_is_refused_and_allowed_once_acls_are_created() {
    let (_shale, port) = broker(Some(AUTHORIZER));
    let mut admin = login(port, "admin");
    let mut alice = login(port, "alice");
    assert_eq!(create_topics(&mut admin, &["orders"]), [0]);
    // Alice has no ACL: her writes, reads and topic creation are refused by name.
    assert_eq!(produce(&mut alice, "orders"), TOPIC_AUTHORIZATION_FAILED);
    assert_eq!(
        fetch(&mut alice, "orders", None),
        TOPIC_AUTHORIZATION_FAILED
    );
    assert_eq!(
        create_topics(&mut alice, &["mine"]),
        [TOPIC_AUTHORIZATION_FAILED]
    );
    // She cannot give herself ACLs either.
    assert_eq!(
        create_acls(&mut alice, &[allow(TOPIC, "orders", WRITE)]),
        [CLUSTER_AUTHORIZATION_FAILED]
    );

    assert_eq!(
        create_acls(
            &mut admin,
            &[allow(TOPIC, "orders", WRITE), allow(TOPIC, "orders", READ)]
        ),
        [0, 0]
    );
    assert_eq!(produce(&mut alice, "orders"), 0);
    assert_eq!(fetch(&mut alice, "orders", None), 0);
    // The admin, a super user, never needed an ACL.
    assert_eq!(produce(&mut admin, "orders"), 0);

    // A group needs READ on it (the coordinator lookup DESCRIBE).
    let find = FindCoordinatorRequest::default()
        .with_key_type(0)
        .with_coordinator_keys(vec![s("readers")]);
    match alice.call(
        ApiKey::FindCoordinator,
        4,
        RequestKind::FindCoordinator(find.clone()),
    ) {
        ResponseKind::FindCoordinator(r) => {
            assert_eq!(r.coordinators[0].error_code, GROUP_AUTHORIZATION_FAILED)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        create_acls(&mut admin, &[allow(GROUP, "readers", READ)]),
        [0]
    );
    match alice.call(
        ApiKey::FindCoordinator,
        4,
        RequestKind::FindCoordinator(find),
    ) {
        ResponseKind::FindCoordinator(r) => assert_eq!(r.coordinators[0].error_code, 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn prefixed_acls_cover_their_topics_and_a_deny_wins() {
    let (_shale, port) = broker(Some(AUTHORIZER));
    let mut admin = login(port, "admin");
    let mut alice = login(port, "alice");
    assert_eq!(
        create_topics(&mut admin, &["app-events", "app-secret", "other"]),
        [0, 0, 0]
    );
    let prefixed = Acl {
        pattern: PREFIXED,
        ..allow(TOPIC, "app-", WRITE)
    };
    let deny = Acl {
        permission: DENY,
        ..allow(TOPIC, "app-secret", WRITE)
    };
    assert_eq!(create_acls(&mut admin, &[prefixed, deny]), [0, 0]);
    assert_eq!(produce(&mut alice, "app-events"), 0);
    assert_eq!(
        produce(&mut alice, "app-secret"),
        TOPIC_AUTHORIZATION_FAILED
    );
    assert_eq!(produce(&mut alice, "other"), TOPIC_AUTHORIZATION_FAILED);

    // DescribeAcls lists both; DeleteAcls of the DENY lifts it.
    let describe = DescribeAclsRequest::default()
        .with_resource_type_filter(TOPIC)
        .with_resource_name_filter(None)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_pattern_type_filter(ANY)
        .with_operation(ANY)
        .with_permission_type(ANY);
    match admin.call(ApiKey::DescribeAcls, 3, RequestKind::DescribeAcls(describe)) {
        ResponseKind::DescribeAcls(r) => {
            assert_eq!(r.error_code, 0);
            let mut names: Vec<String> = r
                .resources
                .iter()
                .map(|r| r.resource_name.to_string())
                .collect();
            names.sort();
            assert_eq!(names, ["app-", "app-secret"]);
        }
        other => panic!("{other:?}"),
    }
    let delete = DeleteAclsRequest::default().with_filters(vec![DeleteAclsFilter::default()
        .with_resource_type_filter(TOPIC)
        .with_resource_name_filter(Some(s("app-secret")))
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_pattern_type_filter(LITERAL)
        .with_operation(ANY)
        .with_permission_type(DENY)]);
    match admin.call(ApiKey::DeleteAcls, 3, RequestKind::DeleteAcls(delete)) {
        ResponseKind::DeleteAcls(r) => {
            assert_eq!(r.filter_results[0].error_code, 0);
            assert_eq!(r.filter_results[0].matching_acls.len(), 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(produce(&mut alice, "app-secret"), 0);
}

#[test]
fn metadata_hides_topics_the_principal_may_not_describe() {
    let (_shale, port) = broker(Some(AUTHORIZER));
    let mut admin = login(port, "admin");
    let mut alice = login(port, "alice");
    assert_eq!(create_topics(&mut admin, &["visible", "hidden"]), [0, 0]);
    // WRITE implies DESCRIBE.
    assert_eq!(
        create_acls(&mut admin, &[allow(TOPIC, "visible", WRITE)]),
        [0]
    );
    let all: Vec<String> = metadata(&mut alice, None)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(all, ["visible"]);
    let mut named = metadata(&mut alice, Some(&["visible", "hidden", "missing"]));
    named.sort();
    assert_eq!(
        named,
        [
            ("hidden".to_string(), TOPIC_AUTHORIZATION_FAILED),
            ("missing".to_string(), TOPIC_AUTHORIZATION_FAILED),
            ("visible".to_string(), 0),
        ]
    );
    let mut everything: Vec<String> = metadata(&mut admin, None)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    everything.sort();
    assert!(everything.contains(&"hidden".to_string()), "{everything:?}");
}

/// CVE-2018-17196: a producer id must not be handed to a principal that may not write.
#[test]
fn cve_2018_17196_init_producer_id_needs_idempotent_write_or_the_transactional_id() {
    let (_shale, port) = broker(Some(AUTHORIZER));
    let mut admin = login(port, "admin");
    let mut alice = login(port, "alice");
    assert_eq!(
        init_producer_id(&mut alice, None),
        CLUSTER_AUTHORIZATION_FAILED
    );
    assert_eq!(
        init_producer_id(&mut alice, Some("alice-tx")),
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    assert_eq!(
        create_acls(
            &mut admin,
            &[allow(CLUSTER, "kafka-cluster", IDEMPOTENT_WRITE)]
        ),
        [0]
    );
    assert_eq!(init_producer_id(&mut alice, None), 0);
    // A transactional producer finds its coordinator first, which creates the coordinator's
    // topic; until it is loaded the answer is COORDINATOR_NOT_AVAILABLE (15), which clients
    // retry.
    let find = FindCoordinatorRequest::default()
        .with_key_type(1)
        .with_coordinator_keys(vec![s("admin-tx")]);
    match admin.call(
        ApiKey::FindCoordinator,
        4,
        RequestKind::FindCoordinator(find),
    ) {
        ResponseKind::FindCoordinator(r) => assert_eq!(r.coordinators[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    let code = shale_testkit::wait_for(
        "the transaction coordinator",
        Duration::from_secs(30),
        || {
            let code = init_producer_id(&mut admin, Some("admin-tx"));
            (code != 15).then_some(code)
        },
    );
    assert_eq!(code, 0);
}

/// CVE-2018-1288: a client posing as a follower must not read past the high watermark.
#[test]
fn cve_2018_1288_a_replica_fetch_needs_cluster_action() {
    let (_shale, port) = broker(Some(AUTHORIZER));
    let mut admin = login(port, "admin");
    let mut alice = login(port, "alice");
    assert_eq!(create_topics(&mut admin, &["data"]), [0]);
    assert_eq!(create_acls(&mut admin, &[allow(TOPIC, "data", READ)]), [0]);
    // As a consumer she reads; as replica 1 she is refused every partition.
    assert_eq!(fetch(&mut alice, "data", None), 0);
    assert_eq!(
        fetch(&mut alice, "data", Some(1)),
        TOPIC_AUTHORIZATION_FAILED
    );
    // The super user reaches the replica path (answered by it, not refused).
    assert_ne!(
        fetch(&mut admin, "data", Some(1)),
        TOPIC_AUTHORIZATION_FAILED
    );
}

#[test]
fn acl_requests_are_validated_as_kafka_validates_them() {
    let (_shale, port) = broker(Some(AUTHORIZER));
    let mut admin = login(port, "admin");
    // Refused one by one: a cluster not named kafka-cluster, an empty name, a type Kafka
    // does not know.
    let bad_cluster = allow(CLUSTER, "my-cluster", DESCRIBE);
    let empty_name = allow(TOPIC, "", READ);
    let unknown_type = allow(99, "t", READ);
    assert_eq!(
        create_acls(
            &mut admin,
            &[
                bad_cluster,
                empty_name,
                unknown_type,
                allow(TOPIC, "t", READ)
            ]
        ),
        [INVALID_REQUEST, INVALID_REQUEST, INVALID_REQUEST, 0]
    );
    // A MATCH pattern cannot be built into a binding in Kafka: the whole request fails.
    let match_pattern = Acl {
        pattern: 2,
        ..allow(TOPIC, "t", READ)
    };
    assert_eq!(
        create_acls(&mut admin, &[match_pattern, allow(TOPIC, "u", READ)]),
        [UNKNOWN_SERVER_ERROR, UNKNOWN_SERVER_ERROR]
    );
}

#[test]
fn without_an_authorizer_acl_requests_are_security_disabled_and_all_is_allowed() {
    let (_shale, port) = broker(None);
    let mut alice = login(port, "alice");
    assert_eq!(
        create_acls(&mut alice, &[allow(TOPIC, "t", READ)]),
        [SECURITY_DISABLED]
    );
    let describe = DescribeAclsRequest::default()
        .with_resource_type_filter(ANY)
        .with_resource_name_filter(None)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_pattern_type_filter(ANY)
        .with_operation(ANY)
        .with_permission_type(ANY);
    match alice.call(ApiKey::DescribeAcls, 3, RequestKind::DescribeAcls(describe)) {
        ResponseKind::DescribeAcls(r) => assert_eq!(r.error_code, SECURITY_DISABLED),
        other => panic!("{other:?}"),
    }
    assert_eq!(create_topics(&mut alice, &["open"]), [0]);
    assert_eq!(produce(&mut alice, "open"), 0);
}

#[test]
fn an_authorizer_class_shale_does_not_implement_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_shale"))
        .args([
            "serve",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "--override",
            &format!("log.dirs={}", tmp.path().display()),
            "--override",
            "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let text = String::from_utf8_lossy(&output.stderr).to_string()
        + &String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("authorizer.class.name"), "{text}");
}
