//! Kafka's StandardAuthorizer rules (StandardAuthorizerData and Authorizer's
//! authorizeByResourceType), one case each.

use std::sync::Arc;

use shale_metadata::acl::{pattern_type, permission_type};
use shale_metadata::image::AclEntry;
use uuid::Uuid;

use super::*;
use crate::authorization::AclOperation as Op;
use crate::authorization::ResourceType as Rt;

const ALL: i8 = 2;

fn acl(
    rt: Rt,
    name: &str,
    pattern: i8,
    principal: &str,
    host: &str,
    op: i8,
    allow: bool,
) -> AclEntry {
    AclEntry {
        id: Uuid::new_v4(),
        resource_type: rt.code(),
        resource_name: name.into(),
        pattern_type: pattern,
        principal: principal.into(),
        host: host.into(),
        operation: op,
        permission_type: if allow {
            permission_type::ALLOW
        } else {
            permission_type::DENY
        },
    }
}

fn allow_topic(name: &str, principal: &str, op: Op) -> AclEntry {
    acl(
        Rt::Topic,
        name,
        pattern_type::LITERAL,
        principal,
        "*",
        op.code(),
        true,
    )
}

fn allows(acls: &[AclEntry], principal: &str, host: &str, op: Op, rt: Rt, name: &str) -> bool {
    AclIndex::new(acls).allows(&Requester::new(principal, host), op, rt, name, false)
}

const ALICE: &str = "User:alice";
const HOST: &str = "10.0.0.1";

#[test]
fn no_acl_at_all_is_the_default() {
    let index = AclIndex::new(&[]);
    let alice = Requester::new(ALICE, HOST);
    assert!(!index.allows(&alice, Op::Read, Rt::Topic, "t", false));
    assert!(index.allows(&alice, Op::Read, Rt::Topic, "t", true));
}

#[test]
fn acls_for_someone_else_deny_even_with_allow_everyone() {
    let acls = [allow_topic("t", "User:bob", Op::Read)];
    let index = AclIndex::new(&acls);
    let alice = Requester::new(ALICE, HOST);
    // The resource has ACLs: the default no longer applies.
    assert!(!index.allows(&alice, Op::Read, Rt::Topic, "t", true));
    // Another topic has none.
    assert!(index.allows(&alice, Op::Read, Rt::Topic, "other", true));
}

#[test]
fn literal_acl_names_its_topic_only() {
    let acls = [allow_topic("orders", ALICE, Op::Read)];
    assert!(allows(&acls, ALICE, HOST, Op::Read, Rt::Topic, "orders"));
    assert!(!allows(&acls, ALICE, HOST, Op::Read, Rt::Topic, "orders2"));
    assert!(!allows(&acls, ALICE, HOST, Op::Read, Rt::Topic, "order"));
    // Same name, other resource type.
    assert!(!allows(&acls, ALICE, HOST, Op::Read, Rt::Group, "orders"));
}

#[test]
fn prefixed_acl_names_every_topic_it_starts() {
    let acls = [acl(
        Rt::Topic,
        "app-",
        pattern_type::PREFIXED,
        ALICE,
        "*",
        Op::Write.code(),
        true,
    )];
    assert!(allows(&acls, ALICE, HOST, Op::Write, Rt::Topic, "app-"));
    assert!(allows(
        &acls,
        ALICE,
        HOST,
        Op::Write,
        Rt::Topic,
        "app-events"
    ));
    assert!(!allows(&acls, ALICE, HOST, Op::Write, Rt::Topic, "app"));
    assert!(!allows(
        &acls,
        ALICE,
        HOST,
        Op::Write,
        Rt::Topic,
        "other-app-x"
    ));
}

#[test]
fn wildcard_name_and_wildcard_principal() {
    let acls = [
        acl(
            Rt::Topic,
            "*",
            pattern_type::LITERAL,
            ALICE,
            "*",
            Op::Read.code(),
            true,
        ),
        acl(
            Rt::Group,
            "g",
            pattern_type::LITERAL,
            "User:*",
            "*",
            Op::Read.code(),
            true,
        ),
    ];
    assert!(allows(&acls, ALICE, HOST, Op::Read, Rt::Topic, "anything"));
    assert!(!allows(
        &acls,
        "User:bob",
        HOST,
        Op::Read,
        Rt::Topic,
        "anything"
    ));
    assert!(allows(&acls, "User:bob", HOST, Op::Read, Rt::Group, "g"));
    assert!(allows(
        &acls,
        "User:CN=app,O=Example",
        HOST,
        Op::Read,
        Rt::Group,
        "g"
    ));
}

#[test]
fn deny_wins_over_allow_wherever_it_comes_from() {
    let allow = allow_topic("t", ALICE, Op::Read);
    for deny in [
        acl(
            Rt::Topic,
            "t",
            pattern_type::LITERAL,
            ALICE,
            "*",
            Op::Read.code(),
            false,
        ),
        acl(
            Rt::Topic,
            "*",
            pattern_type::LITERAL,
            ALICE,
            "*",
            Op::Read.code(),
            false,
        ),
        acl(
            Rt::Topic,
            "t",
            pattern_type::PREFIXED,
            "User:*",
            "*",
            ALL,
            false,
        ),
        // A DENY of another topic denies nothing here.
        acl(
            Rt::Topic,
            "u",
            pattern_type::LITERAL,
            ALICE,
            HOST,
            ALL,
            false,
        ),
    ] {
        let denies = deny.resource_name != "u";
        let acls = [allow.clone(), deny.clone()];
        assert_eq!(
            allows(&acls, ALICE, HOST, Op::Read, Rt::Topic, "t"),
            !denies,
            "{deny:?}"
        );
    }
}

#[test]
fn hosts_are_star_or_the_exact_address() {
    let acls = [acl(
        Rt::Topic,
        "t",
        pattern_type::LITERAL,
        ALICE,
        "10.0.0.1",
        Op::Read.code(),
        true,
    )];
    assert!(allows(&acls, ALICE, "10.0.0.1", Op::Read, Rt::Topic, "t"));
    assert!(!allows(&acls, ALICE, "10.0.0.2", Op::Read, Rt::Topic, "t"));
    let deny_other_host = [
        allow_topic("t", ALICE, Op::Read),
        acl(
            Rt::Topic,
            "t",
            pattern_type::LITERAL,
            ALICE,
            "10.0.0.9",
            Op::Read.code(),
            false,
        ),
    ];
    assert!(allows(
        &deny_other_host,
        ALICE,
        "10.0.0.1",
        Op::Read,
        Rt::Topic,
        "t"
    ));
    assert!(!allows(
        &deny_other_host,
        ALICE,
        "10.0.0.9",
        Op::Read,
        Rt::Topic,
        "t"
    ));
}

#[test]
fn read_write_delete_alter_imply_describe() {
    for op in [Op::Read, Op::Write, Op::Delete, Op::Alter, Op::Describe] {
        let acls = [allow_topic("t", ALICE, op)];
        assert!(
            allows(&acls, ALICE, HOST, Op::Describe, Rt::Topic, "t"),
            "{op:?}"
        );
    }
    for op in [Op::Create, Op::DescribeConfigs, Op::AlterConfigs] {
        let acls = [allow_topic("t", ALICE, op)];
        assert!(
            !allows(&acls, ALICE, HOST, Op::Describe, Rt::Topic, "t"),
            "{op:?}"
        );
    }
    // Implication runs one way only.
    let acls = [allow_topic("t", ALICE, Op::Describe)];
    assert!(!allows(&acls, ALICE, HOST, Op::Read, Rt::Topic, "t"));
}

#[test]
fn alter_configs_implies_describe_configs() {
    let acls = [allow_topic("t", ALICE, Op::AlterConfigs)];
    assert!(allows(
        &acls,
        ALICE,
        HOST,
        Op::DescribeConfigs,
        Rt::Topic,
        "t"
    ));
    let acls = [allow_topic("t", ALICE, Op::DescribeConfigs)];
    assert!(!allows(
        &acls,
        ALICE,
        HOST,
        Op::AlterConfigs,
        Rt::Topic,
        "t"
    ));
}

#[test]
fn a_deny_implies_nothing() {
    // DENY READ does not deny DESCRIBE (Kafka applies implication to ALLOW ACLs only).
    let acls = [
        allow_topic("t", ALICE, Op::Describe),
        acl(
            Rt::Topic,
            "t",
            pattern_type::LITERAL,
            ALICE,
            "*",
            Op::Read.code(),
            false,
        ),
    ];
    assert!(allows(&acls, ALICE, HOST, Op::Describe, Rt::Topic, "t"));
    assert!(!allows(&acls, ALICE, HOST, Op::Read, Rt::Topic, "t"));
}

#[test]
fn all_grants_and_denies_every_operation() {
    let acls = [allow_topic("t", ALICE, Op::Read)];
    let mut with_all = acls.to_vec();
    with_all.push(acl(
        Rt::Topic,
        "t",
        pattern_type::LITERAL,
        ALICE,
        "*",
        ALL,
        true,
    ));
    for op in Rt::Topic.supported_operations() {
        assert!(
            allows(&with_all, ALICE, HOST, *op, Rt::Topic, "t"),
            "{op:?}"
        );
    }
    let deny_all = [
        acl(Rt::Topic, "t", pattern_type::LITERAL, ALICE, "*", ALL, true),
        acl(
            Rt::Topic,
            "t",
            pattern_type::LITERAL,
            ALICE,
            "*",
            ALL,
            false,
        ),
    ];
    assert!(!allows(
        &deny_all,
        ALICE,
        HOST,
        Op::Describe,
        Rt::Topic,
        "t"
    ));
}

#[test]
fn principal_type_must_match() {
    let acls = [allow_topic("t", "Group:alice", Op::Read)];
    assert!(!allows(&acls, ALICE, HOST, Op::Read, Rt::Topic, "t"));
}

fn by_type(acls: &[AclEntry], op: Op) -> bool {
    AclIndex::new(acls).allows_some(&Requester::new(ALICE, HOST), op, Rt::Topic)
}

#[test]
fn by_resource_type_needs_one_undominated_allow() {
    assert!(!by_type(&[], Op::Write));
    assert!(by_type(&[allow_topic("t", ALICE, Op::Write)], Op::Write));
    // Implication does not count here, as in Kafka.
    assert!(!by_type(&[allow_topic("t", ALICE, Op::Read)], Op::Describe));
    // A literal DENY of the same name, or a PREFIXED DENY of a prefix, dominates.
    let deny_literal = acl(
        Rt::Topic,
        "t",
        pattern_type::LITERAL,
        ALICE,
        "*",
        Op::Write.code(),
        false,
    );
    assert!(!by_type(
        &[allow_topic("t", ALICE, Op::Write), deny_literal.clone()],
        Op::Write
    ));
    let deny_prefix = acl(
        Rt::Topic,
        "a",
        pattern_type::PREFIXED,
        ALICE,
        "*",
        Op::Write.code(),
        false,
    );
    assert!(!by_type(
        &[allow_topic("ab", ALICE, Op::Write), deny_prefix.clone()],
        Op::Write
    ));
    assert!(by_type(
        &[
            allow_topic("ab", ALICE, Op::Write),
            allow_topic("b", ALICE, Op::Write),
            deny_prefix
        ],
        Op::Write
    ));
    // A wildcard DENY refuses, a wildcard ALLOW allows.
    let deny_any = acl(
        Rt::Topic,
        "*",
        pattern_type::LITERAL,
        ALICE,
        "*",
        Op::Write.code(),
        false,
    );
    assert!(!by_type(
        &[allow_topic("t", ALICE, Op::Write), deny_any],
        Op::Write
    ));
    assert!(by_type(
        &[allow_topic("*", ALICE, Op::Write), deny_literal],
        Op::Write
    ));
}

fn context(principal: &str, peer: &str) -> RequestContext {
    RequestContext {
        header: shale_protocol::RequestHeader {
            api_key: 0,
            api_version: 9,
            correlation_id: 1,
            client_id: None,
            header_version: 1,
        },
        peer: peer.parse().unwrap(),
        listener_name: Arc::from("SASL_PLAINTEXT"),
        principal: Arc::from(principal),
        connection_id: 0,
    }
}

fn image_with(acls: &[AclEntry]) -> MetadataImage {
    let mut image = MetadataImage::default();
    for a in acls {
        image.replay(&shale_metadata::MetadataRecord::AccessControlEntry {
            id: a.id,
            resource_type: a.resource_type,
            resource_name: a.resource_name.clone(),
            pattern_type: a.pattern_type,
            principal: a.principal.clone(),
            host: a.host.clone(),
            operation: a.operation,
            permission_type: a.permission_type,
        });
    }
    image
}

fn authorizer(super_users: &[&str], allow_everyone: bool) -> Authorizer {
    Authorizer::new(AuthorizerSettings {
        super_users: super_users.iter().map(|s| s.to_string()).collect(),
        allow_everyone_if_no_acl_found: allow_everyone,
    })
}

#[test]
fn super_users_are_allowed_everything_even_when_denied() {
    let deny = acl(
        Rt::Cluster,
        "kafka-cluster",
        pattern_type::LITERAL,
        "User:*",
        "*",
        ALL,
        false,
    );
    let image = image_with(&[deny]);
    let authorizer = authorizer(&["User:admin", "User:ANONYMOUS"], false);
    let admin = context("User:admin", "127.0.0.1:5000");
    let authz = Authz::new(Some(&authorizer), &image, &admin);
    assert!(authz.allows_cluster(Op::ClusterAction));
    assert_eq!(
        authz.authorized_operations(Rt::Cluster, CLUSTER_NAME),
        Rt::Cluster.all_operations_bits()
    );
    let alice = context(ALICE, "127.0.0.1:5000");
    let authz = Authz::new(Some(&authorizer), &image, &alice);
    assert!(!authz.allows_cluster(Op::Describe));
    assert_eq!(authz.authorized_operations(Rt::Cluster, CLUSTER_NAME), 0);
}

#[test]
fn no_authorizer_allows_everything() {
    let image = image_with(&[]);
    let alice = context(ALICE, "127.0.0.1:5000");
    let authz = Authz::new(None, &image, &alice);
    assert!(!authz.is_enabled());
    assert!(authz.allows(Op::Write, Rt::TransactionalId, "tx"));
    assert!(authz.allows_some(Op::Write, Rt::Topic));
    assert_eq!(
        authz.authorized_operations(Rt::Topic, "t"),
        Rt::Topic.all_operations_bits()
    );
}

#[test]
fn by_resource_type_tries_the_probe_name_first() {
    // No topic ACLs and allow.everyone.if.no.acl.found: the probe resource is allowed.
    let image = image_with(&[]);
    let alice = context(ALICE, "127.0.0.1:5000");
    let open = authorizer(&[], true);
    assert!(Authz::new(Some(&open), &image, &alice).allows_some(Op::Write, Rt::Topic));
    let closed = authorizer(&[], false);
    assert!(!Authz::new(Some(&closed), &image, &alice).allows_some(Op::Write, Rt::Topic));
}

#[test]
fn authorized_operations_is_kafkas_bitfield() {
    let image = image_with(&[allow_topic("t", ALICE, Op::Read)]);
    let authorizer = authorizer(&[], false);
    let alice = context(ALICE, "127.0.0.1:5000");
    let authz = Authz::new(Some(&authorizer), &image, &alice);
    // READ and the DESCRIBE it implies.
    assert_eq!(
        authz.authorized_operations(Rt::Topic, "t"),
        (1 << 3) | (1 << 8)
    );
}

#[test]
fn the_index_follows_the_image() {
    let authorizer = authorizer(&[], false);
    let alice = context(ALICE, "127.0.0.1:5000");
    let before = image_with(&[]);
    assert!(!Authz::new(Some(&authorizer), &before, &alice).allows(Op::Read, Rt::Topic, "t"));
    let after = image_with(&[allow_topic("t", ALICE, Op::Read)]);
    assert!(Authz::new(Some(&authorizer), &after, &alice).allows(Op::Read, Rt::Topic, "t"));
    assert!(!Authz::new(Some(&authorizer), &before, &alice).allows(Op::Read, Rt::Topic, "t"));
}

#[test]
fn the_client_host_is_compared_as_java_writes_it() {
    let image = image_with(&[acl(
        Rt::Topic,
        "t",
        pattern_type::LITERAL,
        ALICE,
        "0:0:0:0:0:0:0:1",
        Op::Read.code(),
        true,
    )]);
    let authorizer = authorizer(&[], false);
    let v6 = context(ALICE, "[::1]:5000");
    assert!(Authz::new(Some(&authorizer), &image, &v6).allows(Op::Read, Rt::Topic, "t"));
    let v4 = context(ALICE, "127.0.0.1:5000");
    assert!(!Authz::new(Some(&authorizer), &image, &v4).allows(Op::Read, Rt::Topic, "t"));
}
