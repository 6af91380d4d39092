//! SCRAM-SHA-256 and SCRAM-SHA-512 end to end on the real binary: credentials made with
//! AlterUserScramCredentials (the salted password a Kafka admin client sends) and read with
//! DescribeUserScramCredentials, then used at once to log in over raw frames; a wrong password
//! and an unknown user are refused with Kafka's answer, a deleted credential no longer logs in,
//! and in a three-node cluster a credential made through one node logs in on the others.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/cluster.rs"]
mod cluster_support;
mod common;
#[path = "common/kafka_conn.rs"]
mod kafka_conn;
#[path = "common/scram_client.rs"]
mod scram_client;

use std::io::{ErrorKind, Read};

use bytes::Bytes;
use cluster_support::{Cluster, WAIT_MAX};
use common::{free_port, Shale};
use kafka_conn::{create_topic, fetch, produce, Conn};
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, RequestKind,
    ResponseKind, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;
use scram_client::{Scram, ScramClient};
use shale_testkit::wait_until;

const SCRAM_JAAS: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required;";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// The SASL keys of a listener named SASL_PLAINTEXT serving both SCRAM mechanisms.
fn scram_listener_props() -> Vec<String> {
    vec![
        "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512".to_string(),
        format!("listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={SCRAM_JAAS}"),
        format!("listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config={SCRAM_JAAS}"),
    ]
}

/// A broker with a PLAINTEXT listener (for the admin calls) and a SCRAM listener; returns it
/// and the two ports.
fn broker_with_scram() -> (Shale, u16, u16) {
    broker_with_scram_and(&[])
}

fn broker_with_scram_and(extra: &[&str]) -> (Shale, u16, u16) {
    let (plain, sasl) = (free_port(), free_port());
    let mut overrides = vec![format!(
        "listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"
    )];
    overrides.extend(scram_listener_props());
    overrides.extend(extra.iter().map(|e| e.to_string()));
    let refs: Vec<&str> = overrides.iter().map(String::as_str).collect();
    (Shale::start_with(&refs), plain, sasl)
}

fn upsertion(
    user: &str,
    mechanism: Scram,
    password: &str,
    iterations: i32,
) -> ScramCredentialUpsertion {
    // A fixed salt per user keeps the test reproducible; Kafka's client draws a random one.
    let salt = format!("salt-of-{user}").into_bytes();
    let salted = mechanism.salted_password(password, &salt, iterations.max(1) as u32);
    ScramCredentialUpsertion::default()
        .with_name(s(user))
        .with_mechanism(mechanism.kafka_type())
        .with_iterations(iterations)
        .with_salt(Bytes::from(salt))
        .with_salted_password(Bytes::from(salted))
}

fn deletion(user: &str, mechanism: i8) -> ScramCredentialDeletion {
    ScramCredentialDeletion::default()
        .with_name(s(user))
        .with_mechanism(mechanism)
}

fn alter(
    conn: &mut Conn,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> AlterUserScramCredentialsResponse {
    let request = AlterUserScramCredentialsRequest::default()
        .with_deletions(deletions)
        .with_upsertions(upsertions);
    match conn.call(
        ApiKey::AlterUserScramCredentials,
        0,
        RequestKind::AlterUserScramCredentials(request),
    ) {
        ResponseKind::AlterUserScramCredentials(r) => r,
        other => panic!("{other:?}"),
    }
}

/// (user, error code, error message) of each result, sorted by user.
fn outcomes(response: &AlterUserScramCredentialsResponse) -> Vec<(String, i16, Option<String>)> {
    let mut rows: Vec<_> = response
        .results
        .iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect();
    rows.sort();
    rows
}

fn describe(conn: &mut Conn, users: Option<&[&str]>) -> DescribeUserScramCredentialsResponse {
    let request = DescribeUserScramCredentialsRequest::default().with_users(users.map(|names| {
        names
            .iter()
            .map(|n| UserName::default().with_name(s(n)))
            .collect()
    }));
    match conn.call(
        ApiKey::DescribeUserScramCredentials,
        0,
        RequestKind::DescribeUserScramCredentials(request),
    ) {
        ResponseKind::DescribeUserScramCredentials(r) => r,
        other => panic!("{other:?}"),
    }
}

/// A described user: name, error code, (mechanism, iterations) of each credential.
type Described = (String, i16, Vec<(i8, i32)>);

/// Each described user with its (mechanism, iterations) or its error code.
fn described(response: &DescribeUserScramCredentialsResponse) -> Vec<Described> {
    response
        .results
        .iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.error_code,
                r.credential_infos
                    .iter()
                    .map(|i| (i.mechanism, i.iterations))
                    .collect(),
            )
        })
        .collect()
}

/// How a SCRAM login ended.
#[derive(Debug, PartialEq, Eq)]
enum Login {
    /// Authenticated, and the server proved it knew the credential.
    Accepted,
    /// SaslAuthenticate answered this code and message.
    Refused(i16, Option<String>),
}

/// SaslHandshake v1 and the two SaslAuthenticate v2 rounds of a SCRAM login.
fn login(conn: &mut Conn, mechanism: Scram, user: &str, password: &str) -> Login {
    let handshake = SaslHandshakeRequest::default().with_mechanism(s(mechanism.name()));
    match conn.call(
        ApiKey::SaslHandshake,
        1,
        RequestKind::SaslHandshake(handshake),
    ) {
        ResponseKind::SaslHandshake(r) => assert_eq!(r.error_code, 0, "{r:?}"),
        other => panic!("{other:?}"),
    }
    let mut client = ScramClient::new(mechanism, user, password, "fyko+d2lbbFgONRv9qkxdawL");
    let mut step = |token: Vec<u8>| {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
        match conn.call(
            ApiKey::SaslAuthenticate,
            2,
            RequestKind::SaslAuthenticate(request),
        ) {
            ResponseKind::SaslAuthenticate(r) => r,
            other => panic!("{other:?}"),
        }
    };
    let first = step(client.first());
    if first.error_code != 0 {
        return Login::Refused(first.error_code, first.error_message.map(|m| m.to_string()));
    }
    let last = step(client.last(&first.auth_bytes));
    if last.error_code != 0 {
        return Login::Refused(last.error_code, last.error_message.map(|m| m.to_string()));
    }
    assert!(client.verify(&last.auth_bytes), "the server's signature");
    Login::Accepted
}

fn refused(mechanism: Scram) -> Login {
    Login::Refused(
        58,
        Some(format!(
            "Authentication failed during authentication due to invalid credentials with SASL \
             mechanism {}",
            mechanism.name()
        )),
    )
}

/// Whether the broker has closed the connection.
fn closed_by_broker(conn: &mut Conn) -> bool {
    let mut byte = [0u8; 1];
    match conn.stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => panic!("bytes after the last answer"),
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
    }
}

#[test]
fn a_credential_made_with_the_api_logs_in_at_once_and_no_longer_once_deleted() {
    let (_shale, plain, sasl) = broker_with_scram();
    let mut admin = Conn::plain(plain);
    let made = alter(
        &mut admin,
        vec![],
        vec![
            upsertion("alice", Scram::Sha256, "alice-secret", 8192),
            upsertion("bob", Scram::Sha512, "bob-secret", 4096),
        ],
    );
    assert_eq!(
        outcomes(&made),
        vec![("alice".into(), 0, None), ("bob".into(), 0, None)]
    );

    // The right password, then the client is served like any other.
    let mut conn = Conn::plain(sasl);
    assert_eq!(
        login(&mut conn, Scram::Sha256, "alice", "alice-secret"),
        Login::Accepted
    );
    create_topic(&mut conn, "after-scram");
    assert_eq!(produce(&mut conn, "after-scram", &[b"scram".to_vec()]), 0);
    assert_eq!(fetch(&mut conn, "after-scram").1, 1);
    assert_eq!(
        login(&mut Conn::plain(sasl), Scram::Sha512, "bob", "bob-secret"),
        Login::Accepted
    );

    // A wrong password, an unknown user and a user of the other mechanism: Kafka's one text,
    // and the connection closes.
    for (mechanism, user, password) in [
        (Scram::Sha256, "alice", "wrong"),
        (Scram::Sha256, "mallory", "alice-secret"),
        (Scram::Sha512, "alice", "alice-secret"),
    ] {
        let mut conn = Conn::plain(sasl);
        assert_eq!(
            login(&mut conn, mechanism, user, password),
            refused(mechanism),
            "{user} with {mechanism:?}"
        );
        assert!(closed_by_broker(&mut conn));
    }

    // A new password replaces the old one at once.
    let changed = alter(
        &mut admin,
        vec![],
        vec![upsertion("alice", Scram::Sha256, "new-secret", 4096)],
    );
    assert_eq!(outcomes(&changed), vec![("alice".into(), 0, None)]);
    assert_eq!(
        login(
            &mut Conn::plain(sasl),
            Scram::Sha256,
            "alice",
            "alice-secret"
        ),
        refused(Scram::Sha256)
    );
    assert_eq!(
        login(&mut Conn::plain(sasl), Scram::Sha256, "alice", "new-secret"),
        Login::Accepted
    );

    // Deleted: no longer logs in.
    let deleted = alter(&mut admin, vec![deletion("alice", 1)], vec![]);
    assert_eq!(outcomes(&deleted), vec![("alice".into(), 0, None)]);
    assert_eq!(
        login(&mut Conn::plain(sasl), Scram::Sha256, "alice", "new-secret"),
        refused(Scram::Sha256)
    );
    assert_eq!(
        described(&describe(&mut admin, None)),
        vec![("bob".into(), 0, vec![(2, 4096)])]
    );
}

#[test]
fn alterations_and_descriptions_are_refused_as_kafka_refuses_them() {
    let (_shale, plain, _sasl) = broker_with_scram();
    let mut admin = Conn::plain(plain);
    let made = alter(
        &mut admin,
        vec![],
        vec![
            upsertion("alice", Scram::Sha256, "a", 4096),
            upsertion("few", Scram::Sha256, "a", 4095),
            upsertion("many", Scram::Sha512, "a", 16385),
            upsertion("", Scram::Sha256, "a", 4096),
            upsertion("odd", Scram::Sha256, "a", 4096).with_mechanism(0),
            upsertion("twice", Scram::Sha256, "a", 4096),
            upsertion("twice", Scram::Sha512, "a", 4096),
            upsertion("nokey", Scram::Sha256, "a", 4096).with_salted_password(Bytes::new()),
        ],
    );
    let text = |t: &str| Some(t.to_string());
    assert_eq!(
        outcomes(&made),
        vec![
            ("".into(), 93, text("Username must not be empty")),
            ("alice".into(), 0, None),
            ("few".into(), 93, text("Too few iterations")),
            ("many".into(), 93, text("Too many iterations")),
            ("nokey".into(), -1, None),
            ("odd".into(), 33, text("Unknown SCRAM mechanism")),
            (
                "twice".into(),
                92,
                text("A user credential cannot be altered twice in the same request")
            ),
        ]
    );
    let gone = alter(
        &mut admin,
        vec![deletion("ghost", 1), deletion("alice", 2)],
        vec![],
    );
    let missing = text("Attempt to delete a user credential that does not exist");
    assert_eq!(
        outcomes(&gone),
        vec![
            ("alice".into(), 91, missing.clone()),
            ("ghost".into(), 91, missing)
        ]
    );

    let all = describe(&mut admin, Some(&[]));
    assert_eq!(all.error_code, 0);
    assert_eq!(described(&all), vec![("alice".into(), 0, vec![(1, 4096)])]);
    let named = describe(&mut admin, Some(&["ghost", "alice", "alice"]));
    assert_eq!(
        described(&named),
        vec![("ghost".into(), 91, vec![]), ("alice".into(), 92, vec![])]
    );
    assert_eq!(
        named.results[0].error_message.as_deref(),
        Some("Attempt to describe a user credential that does not exist: ghost")
    );
    // Answers never carry a salt or a key: only mechanisms and iteration counts exist on the
    // wire, which the types above already hold.
}

#[test]
fn a_credential_made_through_one_node_logs_in_on_every_node() {
    let props = scram_listener_props();
    let refs: Vec<&str> = props.iter().map(String::as_str).collect();
    let cluster = Cluster::combined_with_sasl(3, &refs);
    let node = |id: i32| &cluster.nodes[&id];
    let mut admin = Conn::plain(node(2).client_port.unwrap());
    let made = alter(
        &mut admin,
        vec![],
        vec![upsertion("carol", Scram::Sha512, "carol-secret", 8192)],
    );
    assert_eq!(outcomes(&made), vec![("carol".into(), 0, None)]);
    for id in [1, 2, 3] {
        let port = node(id).client_port.unwrap();
        // The other nodes apply the record as they follow the metadata log.
        wait_until(&format!("node {id} to hold carol"), WAIT_MAX, || {
            describe(&mut Conn::plain(port), Some(&["carol"])).results[0].error_code == 0
        });
        let sasl = node(id).sasl_port.unwrap();
        assert_eq!(
            login(
                &mut Conn::plain(sasl),
                Scram::Sha512,
                "carol",
                "carol-secret"
            ),
            Login::Accepted,
            "node {id}"
        );
        assert_eq!(
            login(&mut Conn::plain(sasl), Scram::Sha512, "carol", "wrong"),
            refused(Scram::Sha512),
            "node {id}"
        );
    }
    // Deleted through node 3: refused everywhere once each node has applied it.
    let mut admin = Conn::plain(node(3).client_port.unwrap());
    assert_eq!(
        outcomes(&alter(&mut admin, vec![deletion("carol", 2)], vec![])),
        vec![("carol".into(), 0, None)]
    );
    for id in [1, 2, 3] {
        let port = node(id).client_port.unwrap();
        wait_until(&format!("node {id} to forget carol"), WAIT_MAX, || {
            describe(&mut Conn::plain(port), Some(&["carol"])).results[0].error_code == 91
        });
        assert_eq!(
            login(
                &mut Conn::plain(node(id).sasl_port.unwrap()),
                Scram::Sha512,
                "carol",
                "carol-secret"
            ),
            refused(Scram::Sha512),
            "node {id}"
        );
    }
}

/// With Kafka's StandardAuthorizer, the SCRAM APIs are checked on the cluster before anything
/// else: a SCRAM user without ACLs is refused CLUSTER_AUTHORIZATION_FAILED (31) for every user
/// it names, and changes nothing; a super user (here the PLAINTEXT listener's ANONYMOUS) is
/// served.
#[test]
fn the_scram_apis_need_the_cluster_operations_kafka_checks() {
    let (_shale, plain, sasl) = broker_with_scram_and(&[
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:ANONYMOUS",
        "allow.everyone.if.no.acl.found=false",
    ]);
    let mut admin = Conn::plain(plain);
    let made = alter(
        &mut admin,
        vec![],
        vec![upsertion("alice", Scram::Sha256, "alice-secret", 4096)],
    );
    assert_eq!(outcomes(&made), vec![("alice".into(), 0, None)]);
    let mut alice = Conn::plain(sasl);
    assert_eq!(
        login(&mut alice, Scram::Sha256, "alice", "alice-secret"),
        Login::Accepted
    );
    let refused = alter(
        &mut alice,
        vec![deletion("alice", 1)],
        vec![upsertion("mallory", Scram::Sha256, "x", 4096)],
    );
    assert_eq!(
        outcomes(&refused)
            .into_iter()
            .map(|(user, code, _)| (user, code))
            .collect::<Vec<_>>(),
        vec![("alice".into(), 31), ("mallory".into(), 31)]
    );
    let denied = describe(&mut alice, Some(&["alice"]));
    assert_eq!(denied.error_code, 31);
    assert_eq!(denied.results.len(), 1);
    assert_eq!(denied.results[0].error_code, 31);
    // Nothing changed: the admin still sees alice alone.
    assert_eq!(
        described(&describe(&mut admin, None)),
        vec![("alice".into(), 0, vec![(1, 4096)])]
    );
}
