//! RFC 7677's SCRAM-SHA-256 example, message for message.
#![allow(clippy::unwrap_used)]

mod common;

use shale_auth::{
    SaslServer, ScramCredential, ScramCredentialTable, ScramMechanism, ScramServer, Step,
};

const CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
const SERVER_FIRST: &str =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
const CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

fn table() -> ScramCredentialTable {
    let salt = common::unb64("W22ZaJ0SNY7soEsUEjb6gQ==");
    let credential =
        ScramCredential::derive_with_salt(ScramMechanism::Sha256, "pencil", &salt, 4096).unwrap();
    let mut table = ScramCredentialTable::new();
    table.insert(ScramMechanism::Sha256, "user", credential);
    table
}

#[test]
fn the_server_answers_rfc_7677s_client_with_rfc_7677s_messages() {
    let table = table();
    let mut server =
        ScramServer::with_server_nonce(ScramMechanism::Sha256, &table, SERVER_NONCE).unwrap();
    let Step::Continue(server_first) = server.step(CLIENT_FIRST.as_bytes()).unwrap() else {
        panic!("the first round must continue");
    };
    assert_eq!(String::from_utf8(server_first).unwrap(), SERVER_FIRST);
    let Step::Done {
        principal,
        server_bytes,
    } = server.step(CLIENT_FINAL.as_bytes()).unwrap()
    else {
        panic!("the second round must finish");
    };
    assert_eq!(String::from_utf8(server_bytes).unwrap(), SERVER_FINAL);
    assert_eq!(principal.name, "user");
    assert!(!principal.token_authenticated);
}

/// The test client is checked against the RFC too, so the round trips built on it mean
/// something.
#[test]
fn the_test_client_writes_rfc_7677s_client_messages() {
    let client = common::ScramClient::new(
        ScramMechanism::Sha256,
        "user",
        "pencil",
        "rOprNGfwEbeRWgbNEkqO",
    );
    assert_eq!(client.client_first(), CLIENT_FIRST.as_bytes());
    let last = client.client_final(SERVER_FIRST.as_bytes());
    assert_eq!(String::from_utf8(last.message).unwrap(), CLIENT_FINAL);
    assert_eq!(
        String::from_utf8(last.expected_server_final).unwrap(),
        SERVER_FINAL
    );
}

#[test]
fn the_rfc_credential_has_the_rfcs_keys() {
    // StoredKey and ServerKey of the example, computed independently by the test client.
    let salt = common::unb64("W22ZaJ0SNY7soEsUEjb6gQ==");
    let salted = common::hi(ScramMechanism::Sha256, b"pencil", &salt, 4096);
    let stored = common::hash(
        ScramMechanism::Sha256,
        &common::hmac(ScramMechanism::Sha256, &salted, b"Client Key"),
    );
    let server = common::hmac(ScramMechanism::Sha256, &salted, b"Server Key");
    let credential =
        ScramCredential::derive_with_salt(ScramMechanism::Sha256, "pencil", &salt, 4096).unwrap();
    assert_eq!(credential.stored_key, stored);
    assert_eq!(credential.server_key, server);
    assert_eq!(credential.salt, salt);
    assert_eq!(credential.iterations, 4096);
}

/// What Kafka's admin client sends for `pencil` (the salted password, computed by the
/// client) gives the same keys as the password itself, and an empty one is refused.
#[test]
fn a_salted_password_gives_the_keys_of_its_password() {
    let salt = common::unb64("W22ZaJ0SNY7soEsUEjb6gQ==");
    let from_password =
        ScramCredential::derive_with_salt(ScramMechanism::Sha256, "pencil", &salt, 4096).unwrap();
    let salted = common::hi(ScramMechanism::Sha256, b"pencil", &salt, 4096);
    let from_salted =
        ScramCredential::from_salted_password(ScramMechanism::Sha256, &salt, &salted, 4096)
            .unwrap();
    assert!(from_salted == from_password);
    let table = {
        let mut t = ScramCredentialTable::new();
        t.insert(ScramMechanism::Sha256, "user", from_salted);
        t
    };
    let mut server =
        ScramServer::with_server_nonce(ScramMechanism::Sha256, &table, SERVER_NONCE).unwrap();
    assert!(matches!(
        server.step(CLIENT_FIRST.as_bytes()).unwrap(),
        Step::Continue(_)
    ));
    assert!(matches!(
        server.step(CLIENT_FINAL.as_bytes()).unwrap(),
        Step::Done { .. }
    ));
    assert_eq!(
        ScramCredential::from_salted_password(ScramMechanism::Sha512, &salt, b"", 4096),
        Err(shale_auth::CredentialError::EmptySaltedPassword)
    );
}
