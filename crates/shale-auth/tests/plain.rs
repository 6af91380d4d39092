//! SASL/PLAIN against Kafka's PlainSaslServer semantics, with users from a JAAS config value.
#![allow(clippy::unwrap_used)]

use shale_auth::{
    AuthError, JaasError, LookupError, Mechanism, PlainAuthenticator, PlainServer, PlainUsers,
    SaslServer, Step, MAX_CLIENT_TOKEN_BYTES,
};

const JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#;

fn users() -> PlainUsers {
    PlainUsers::from_jaas_config(JAAS).unwrap()
}

fn step(users: &PlainUsers, token: &[u8]) -> Result<Step, AuthError> {
    PlainServer::new(users).step(token)
}

#[test]
fn the_user_options_of_the_jaas_entry_are_the_users() {
    let users = users();
    assert_eq!(users.len(), 2);
    assert!(users.contains("admin") && users.contains("alice"));
    // `username`/`password` are the broker's own client login, not a user.
    assert!(!users.contains("username"));
    let shown = format!("{users:?}");
    assert!(shown.contains("alice") && !shown.contains("alice-secret"));
}

#[test]
fn a_right_password_authenticates_with_an_empty_answer() {
    let users = users();
    let mut server = PlainServer::new(&users);
    assert_eq!(server.mechanism(), Mechanism::Plain);
    match server.step(b"\0alice\0alice-secret").unwrap() {
        Step::Done {
            principal,
            server_bytes,
        } => {
            assert_eq!(principal.name, "alice");
            assert!(!principal.token_authenticated);
            assert!(server_bytes.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_authzid_equal_to_the_user_is_accepted() {
    assert!(matches!(
        step(&users(), b"admin\0admin\0admin-secret"),
        Ok(Step::Done { .. })
    ));
}

#[test]
fn a_wrong_password_and_an_unknown_user_fail_alike_with_kafkas_text() {
    let users = users();
    for token in [
        &b"\0alice\0admin-secret"[..],
        b"\0mallory\0alice-secret",
        b"\0alice\0alice-secre",
    ] {
        let err = step(&users, token).unwrap_err();
        assert!(
            matches!(err, AuthError::InvalidUsernameOrPassword),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "Authentication failed: Invalid username or password"
        );
        assert!(err.is_client_visible());
        assert_eq!(
            err.client_message(Mechanism::Plain, false),
            "Authentication failed: Invalid username or password"
        );
    }
}

#[test]
fn an_authzid_other_than_the_user_is_refused_after_the_password_check() {
    let users = users();
    let err = step(&users, b"admin\0alice\0alice-secret").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Authentication failed: Client requested an authorization id that is different from username"
    );
    // A wrong password says nothing about the authzid.
    let err = step(&users, b"admin\0alice\0wrong").unwrap_err();
    assert!(matches!(err, AuthError::InvalidUsernameOrPassword));
}

#[test]
fn malformed_messages_get_kafkas_texts() {
    let users = users();
    let cases: &[(&[u8], &str)] = &[
        (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (
            b"alice",
            "Invalid SASL/PLAIN response: expected 3 tokens, got 1",
        ),
        (
            b"\0alice",
            "Invalid SASL/PLAIN response: expected 3 tokens, got 2",
        ),
        (
            b"\0alice\0pw\0",
            "Invalid SASL/PLAIN response: expected 3 tokens, got 4",
        ),
        (
            b"\0alice\0pw\0x\0y",
            "Invalid SASL/PLAIN response: expected 3 tokens, got 4",
        ),
        (
            b"\0\0alice-secret",
            "Authentication failed: username not specified",
        ),
        (
            b"\0alice\0",
            "Authentication failed: password not specified",
        ),
    ];
    for (token, message) in cases {
        let err = step(&users, token).unwrap_err();
        assert_eq!(err.to_string(), *message, "for {token:?}");
        assert!(err.is_client_visible());
    }
}

#[test]
fn invalid_utf8_is_read_as_java_reads_it_and_fails_the_password() {
    let mut users = PlainUsers::new().unwrap();
    users.insert("bob", "pa\u{fffd}ss");
    // Java decodes the stray byte to U+FFFD, so Kafka accepts this token too.
    assert!(matches!(
        step(&users, b"\0bob\0pa\xffss"),
        Ok(Step::Done { .. })
    ));
    assert!(matches!(
        step(&users, b"\0bob\0pa\xfess\xff"),
        Err(AuthError::InvalidUsernameOrPassword)
    ));
}

#[test]
fn a_token_above_the_cap_is_refused_unread() {
    let mut token = b"\0alice\0".to_vec();
    token.resize(MAX_CLIENT_TOKEN_BYTES + 1, b'x');
    assert!(matches!(
        step(&users(), &token),
        Err(AuthError::TokenTooLarge { .. })
    ));
}

#[test]
fn no_token_is_taken_after_the_exchange_ends() {
    let users = users();
    let mut server = PlainServer::new(&users);
    server.step(b"\0alice\0alice-secret").unwrap();
    let err = server.step(b"\0alice\0alice-secret").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unexpected challenge in Sasl server state COMPLETE"
    );
    let mut server = PlainServer::new(&users);
    server.step(b"\0alice\0wrong").unwrap_err();
    let err = server.step(b"\0alice\0alice-secret").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unexpected challenge in Sasl server state FAILED"
    );
}

#[test]
fn a_jaas_entry_of_another_login_module_is_refused_for_plain() {
    let err = PlainUsers::from_jaas_config(
        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="b";"#,
    )
    .unwrap_err();
    assert!(matches!(err, JaasError::WrongLoginModule { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "JAAS config names login module 'org.apache.kafka.common.security.scram.ScramLoginModule', but SASL/PLAIN needs org.apache.kafka.common.security.plain.PlainLoginModule"
    );
    let err = PlainUsers::from_jaas_config(&format!("{JAAS}{JAAS}")).unwrap_err();
    assert_eq!(err, JaasError::ModuleCount { count: 2 });
}

struct Broken;

impl PlainAuthenticator for Broken {
    fn authenticate(&self, _: &str, _: &str) -> Result<bool, LookupError> {
        Err(LookupError::new("user store down"))
    }
}

#[test]
fn an_authenticator_that_cannot_check_fails_with_kafkas_text() {
    let err = PlainServer::new(Broken).step(b"\0a\0b").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Authentication failed: credentials for user could not be verified"
    );
}
