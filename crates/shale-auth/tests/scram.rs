//! SCRAM exchanges against the server: round trips for both hashes, and every refusal.
#![allow(clippy::unwrap_used)]

mod common;

use common::{b64, ScramClient};
use shale_auth::scram::messages::encode_saslname;
use shale_auth::{
    AuthError, CredentialError, DelegationTokenCredential, LookupError, Mechanism, SaslServer,
    ScramCredential, ScramCredentialLookup, ScramCredentialTable, ScramMechanism, ScramServer,
    ScramServerError, Step, MAX_CLIENT_TOKEN_BYTES,
};

const ITERATIONS: u32 = 4096;

fn table_with(mechanism: ScramMechanism, user: &str, password: &str) -> ScramCredentialTable {
    let mut table = ScramCredentialTable::new();
    table.insert(
        mechanism,
        user,
        ScramCredential::derive(mechanism, password, ITERATIONS).unwrap(),
    );
    table
}

fn continue_bytes(step: Step) -> Vec<u8> {
    match step {
        Step::Continue(bytes) => bytes,
        other => panic!("expected Continue, got {other:?}"),
    }
}

/// Runs a whole honest exchange and checks the server's signature.
fn authenticate(
    server: &mut impl SaslServer,
    client: &ScramClient,
) -> Result<shale_auth::Principal, AuthError> {
    let server_first = continue_bytes(server.step(&client.client_first())?);
    let last = client.client_final(&server_first);
    match server.step(&last.message)? {
        Step::Done {
            principal,
            server_bytes,
        } => {
            assert_eq!(server_bytes, last.expected_server_final, "server signature");
            Ok(principal)
        }
        other => panic!("expected Done, got {other:?}"),
    }
}

#[test]
fn sha512_and_sha256_round_trip_with_random_nonces_and_salts() {
    for mechanism in ScramMechanism::ALL {
        let table = table_with(mechanism, "alice", "alice-secret");
        let mut server = ScramServer::new(mechanism, &table);
        assert_eq!(server.mechanism(), Mechanism::Scram(mechanism));
        let client = ScramClient::new(
            mechanism,
            "alice",
            "alice-secret",
            "fyko+d2lbbFgONRv9qkxdawL",
        );
        let principal = authenticate(&mut server, &client).unwrap();
        assert_eq!(principal.name, "alice");
        assert!(!principal.token_authenticated);
        assert_eq!(principal.token_expiry_timestamp_ms, None);
    }
}

#[test]
fn the_server_nonce_is_random_printable_and_extends_the_clients() {
    let table = table_with(ScramMechanism::Sha512, "u", "p");
    let client = ScramClient::new(ScramMechanism::Sha512, "u", "p", "cnonce");
    let mut nonces = Vec::new();
    for _ in 0..2 {
        let mut server = ScramServer::new(ScramMechanism::Sha512, &table);
        let first = common::parse_server_first(&continue_bytes(
            server.step(&client.client_first()).unwrap(),
        ));
        let server_part = first.nonce.strip_prefix("cnonce").unwrap().to_string();
        assert!(server_part.len() >= 24, "{server_part}");
        assert!(server_part
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b','));
        assert_eq!(first.iterations, ITERATIONS);
        nonces.push(server_part);
    }
    assert_ne!(nonces[0], nonces[1]);
}

/// CVE-2024-56128: Kafka before 3.7.2 / 3.8.1 / 3.9.0 did not compare the client-final nonce
/// with the one of its server-first message. The proof covers whatever nonce the final
/// message carries, so a proof valid for another nonce must still be refused.
#[test]
fn cve_2024_56128_client_final_nonce_must_match_server_first() {
    let mechanism = ScramMechanism::Sha256;
    let table = table_with(mechanism, "user", "pencil");
    let client = ScramClient::new(mechanism, "user", "pencil", "clientnonce");
    for wrong_nonce in ["clientnonce", "clientnonceOTHERSERVERNONCE"] {
        let mut server = ScramServer::new(mechanism, &table);
        let server_first = continue_bytes(server.step(&client.client_first()).unwrap());
        let without_proof = format!("c=biws,r={wrong_nonce}");
        let forged = client.sign(&server_first, &without_proof);
        let err = server.step(&forged.message).unwrap_err();
        assert!(matches!(err, AuthError::NonceMismatch), "{err:?}");
        assert_eq!(
            err.to_string(),
            "Invalid client nonce in the final client message."
        );
        assert_eq!(err.scram_server_error(), Some(ScramServerError::OtherError));
    }
    // The same signing with the server's nonce passes: the refusal above is the nonce's.
    let mut server = ScramServer::new(mechanism, &table);
    assert!(authenticate(&mut server, &client).is_ok());
}

#[test]
fn a_wrong_password_is_an_invalid_proof() {
    for mechanism in ScramMechanism::ALL {
        let table = table_with(mechanism, "alice", "right");
        let mut server = ScramServer::new(mechanism, &table);
        let client = ScramClient::new(mechanism, "alice", "wrong", "n0nce");
        let server_first = continue_bytes(server.step(&client.client_first()).unwrap());
        let err = server
            .step(&client.client_final(&server_first).message)
            .unwrap_err();
        assert!(matches!(err, AuthError::InvalidProof), "{err:?}");
        assert_eq!(err.to_string(), "Invalid client credentials");
        assert_eq!(
            err.scram_server_error().unwrap().server_final_message(),
            "e=invalid-proof"
        );
        assert!(!err.is_client_visible());
        assert_eq!(
            err.client_message(Mechanism::Scram(mechanism), false),
            format!(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                mechanism.name()
            )
        );
    }
}

#[test]
fn a_proof_of_the_wrong_length_is_an_invalid_proof() {
    let table = table_with(ScramMechanism::Sha512, "alice", "pw");
    let mut server = ScramServer::new(ScramMechanism::Sha512, &table);
    let client = ScramClient::new(ScramMechanism::Sha512, "alice", "pw", "n0nce");
    let server_first = continue_bytes(server.step(&client.client_first()).unwrap());
    let nonce = common::parse_server_first(&server_first).nonce;
    let short = format!("c=biws,r={nonce},p={}", b64(&[7u8; 32]));
    assert!(matches!(
        server.step(short.as_bytes()),
        Err(AuthError::InvalidProof)
    ));
}

#[test]
fn an_unknown_user_or_mechanism_is_refused_on_the_first_message() {
    let table = table_with(ScramMechanism::Sha256, "alice", "pw");
    let cases = [
        (ScramMechanism::Sha256, "bob"),
        // A credential exists for SHA-256 only.
        (ScramMechanism::Sha512, "alice"),
    ];
    for (mechanism, user) in cases {
        let mut server = ScramServer::new(mechanism, &table);
        let client = ScramClient::new(mechanism, user, "pw", "n0nce");
        let err = server.step(&client.client_first()).unwrap_err();
        assert!(matches!(err, AuthError::UnknownUser), "{err:?}");
        assert_eq!(
            err.to_string(),
            "Authentication failed: Invalid user credentials"
        );
        assert!(!err.is_client_visible());
    }
}

#[test]
fn user_names_with_commas_and_equals_are_escaped_on_the_wire() {
    let user = "a,b=c";
    let table = table_with(ScramMechanism::Sha256, user, "pw");
    let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
    let client = ScramClient::new(
        ScramMechanism::Sha256,
        &encode_saslname(user),
        "pw",
        "n0nce",
    );
    assert_eq!(client.client_first(), b"n,,n=a=2Cb=3Dc,r=n0nce");
    assert_eq!(authenticate(&mut server, &client).unwrap().name, user);
}

#[test]
fn an_authzid_equal_to_the_user_is_accepted_and_bound_into_c() {
    let table = table_with(ScramMechanism::Sha256, "alice", "pw");
    let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
    let client =
        ScramClient::new(ScramMechanism::Sha256, "alice", "pw", "n0nce").with_authzid("alice");
    let server_first = continue_bytes(server.step(&client.client_first()).unwrap());
    let last = client.client_final(&server_first);
    assert!(
        String::from_utf8_lossy(&last.message).starts_with(&format!("c={},", b64(b"n,a=alice,")))
    );
    assert!(matches!(server.step(&last.message), Ok(Step::Done { .. })));
}

#[test]
fn an_authzid_other_than_the_user_is_refused_with_kafkas_visible_text() {
    let table = table_with(ScramMechanism::Sha256, "alice", "pw");
    let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
    let client =
        ScramClient::new(ScramMechanism::Sha256, "alice", "pw", "n0nce").with_authzid("admin");
    let err = server.step(&client.client_first()).unwrap_err();
    assert!(matches!(err, AuthError::AuthorizationIdMismatch), "{err:?}");
    assert!(err.is_client_visible());
    assert_eq!(
        err.client_message(Mechanism::Scram(ScramMechanism::Sha256), false),
        "Authentication failed: Client requested an authorization id that is different from username"
    );
}

#[test]
fn channel_binding_in_the_final_message_must_repeat_the_gs2_header() {
    let table = table_with(ScramMechanism::Sha256, "alice", "pw");
    let client = ScramClient::new(ScramMechanism::Sha256, "alice", "pw", "n0nce");
    for c in [b64(b"y,,"), b64(b"n,a=alice,"), String::new()] {
        let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
        let server_first = continue_bytes(server.step(&client.client_first()).unwrap());
        let nonce = common::parse_server_first(&server_first).nonce;
        // Signed honestly over the altered message: only the binding is wrong.
        let forged = client.sign(&server_first, &format!("c={c},r={nonce}"));
        let err = server.step(&forged.message).unwrap_err();
        assert!(
            matches!(err, AuthError::ChannelBindingMismatch),
            "{c}: {err:?}"
        );
        assert_eq!(
            err.scram_server_error().unwrap().server_final_message(),
            "e=channel-bindings-dont-match"
        );
    }
}

#[test]
fn a_client_asking_for_channel_binding_is_refused() {
    let table = table_with(ScramMechanism::Sha256, "alice", "pw");
    for first in [
        &b"y,,n=alice,r=n0nce"[..],
        b"p=tls-server-end-point,,n=alice,r=n0nce",
    ] {
        let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
        let err = server.step(first).unwrap_err();
        assert!(
            matches!(err, AuthError::ChannelBindingUnsupported { .. }),
            "{err:?}"
        );
    }
}

#[test]
fn unknown_extensions_are_ignored_and_kept_in_the_auth_message() {
    let table = table_with(ScramMechanism::Sha512, "alice", "pw");
    let mut server = ScramServer::new(ScramMechanism::Sha512, &table);
    let client = ScramClient::new(ScramMechanism::Sha512, "alice", "pw", "n0nce")
        .with_extension("foo", "bar=baz")
        .with_extension("tokenauth", "false");
    assert_eq!(authenticate(&mut server, &client).unwrap().name, "alice");
}

fn token_table(mechanism: ScramMechanism) -> ScramCredentialTable {
    let mut table = table_with(mechanism, "alice", "alice-pw");
    table.insert_token(
        mechanism,
        "token-id-1",
        DelegationTokenCredential {
            owner: "alice".to_string(),
            credential: ScramCredential::derive(mechanism, "token-hmac", ITERATIONS).unwrap(),
            expiry_timestamp_ms: 1_700_000_000_000,
        },
    );
    table
}

#[test]
fn tokenauth_authenticates_a_delegation_token_as_its_owner() {
    let mechanism = ScramMechanism::Sha512;
    let table = token_table(mechanism);
    let mut server = ScramServer::new(mechanism, &table);
    let client = ScramClient::new(mechanism, "token-id-1", "token-hmac", "n0nce")
        .with_extension("tokenauth", "true");
    let principal = authenticate(&mut server, &client).unwrap();
    assert_eq!(principal.name, "alice");
    assert!(principal.token_authenticated);
    assert_eq!(principal.token_expiry_timestamp_ms, Some(1_700_000_000_000));
}

#[test]
fn tokenauth_with_an_unknown_token_is_refused_even_for_a_known_user() {
    let mechanism = ScramMechanism::Sha256;
    let table = token_table(mechanism);
    for id in ["token-id-2", "alice"] {
        let mut server = ScramServer::new(mechanism, &table);
        let client = ScramClient::new(mechanism, id, "alice-pw", "n0nce")
            .with_extension("tokenauth", "true");
        let err = server.step(&client.client_first()).unwrap_err();
        assert!(
            matches!(&err, AuthError::UnknownToken { token_id } if token_id == id),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!("Token Authentication failed: Invalid tokenId : {id}")
        );
    }
}

#[test]
fn a_stored_credential_below_the_minimum_iterations_is_refused() {
    let m = ScramMechanism::Sha256;
    let good = ScramCredential::derive(m, "pw", ITERATIONS).unwrap();
    let weak =
        ScramCredential::from_parts(m, good.salt, good.stored_key, good.server_key, 4095).unwrap();
    let mut table = ScramCredentialTable::new();
    table.insert(m, "alice", weak);
    let mut server = ScramServer::new(m, &table);
    let err = server
        .step(&ScramClient::new(m, "alice", "pw", "n").client_first())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Iterations 4095 is less than the minimum 4096 for SCRAM_SHA_256"
    );
}

#[test]
fn credentials_are_derived_only_within_kafkas_iteration_range() {
    for m in ScramMechanism::ALL {
        for iterations in [4096, 16384] {
            let c = ScramCredential::derive(m, "pw", iterations).unwrap();
            assert_eq!(c.iterations, iterations);
            assert_eq!(c.stored_key.len(), m.hash_len_bytes());
            assert_eq!(c.server_key.len(), m.hash_len_bytes());
        }
        let err = ScramCredential::derive(m, "pw", 4095).unwrap_err();
        assert_eq!(
            err,
            CredentialError::TooFewIterations {
                mechanism: m,
                iterations: 4095
            }
        );
        assert_eq!(err.to_string(), "Too few iterations");
        let err = ScramCredential::derive(m, "pw", 16385).unwrap_err();
        assert_eq!(
            err,
            CredentialError::TooManyIterations {
                mechanism: m,
                iterations: 16385
            }
        );
        assert_eq!(err.to_string(), "Too many iterations");
    }
}

#[test]
fn a_credential_keeps_no_password_and_shows_no_keys() {
    let a = ScramCredential::derive(ScramMechanism::Sha256, "hunter2", ITERATIONS).unwrap();
    let b = ScramCredential::derive(ScramMechanism::Sha256, "hunter2", ITERATIONS).unwrap();
    assert_ne!(a.salt, b.salt, "each credential draws its own salt");
    assert_ne!(a.stored_key, b.stored_key);
    let shown = format!("{a:?}");
    assert!(!shown.contains("hunter2"));
    assert!(!shown.contains(&format!("{:?}", a.stored_key)));
    assert!(matches!(
        ScramCredential::derive_with_salt(ScramMechanism::Sha256, "pw", b"", ITERATIONS),
        Err(CredentialError::EmptySalt)
    ));
    assert!(matches!(
        ScramCredential::from_parts(
            ScramMechanism::Sha512,
            a.salt,
            a.stored_key,
            a.server_key,
            4096
        ),
        Err(CredentialError::KeyLength {
            field: "stored key",
            len_bytes: 32,
            expected_bytes: 64,
            ..
        })
    ));
}

struct Broken;

impl ScramCredentialLookup for Broken {
    fn scram_credential(
        &self,
        _: ScramMechanism,
        _: &str,
    ) -> Result<Option<ScramCredential>, LookupError> {
        Err(LookupError::new("metadata image not loaded"))
    }
}

#[test]
fn a_store_that_cannot_answer_fails_the_exchange() {
    let mut server = ScramServer::new(ScramMechanism::Sha256, Broken);
    let err = server
        .step(&ScramClient::new(ScramMechanism::Sha256, "alice", "pw", "n").client_first())
        .unwrap_err();
    assert!(
        matches!(err, AuthError::CredentialsUnavailable(_)),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "Authentication failed: Credentials could not be obtained"
    );
}

#[test]
fn tokens_above_the_cap_are_refused_in_either_round() {
    let table = table_with(ScramMechanism::Sha256, "alice", "pw");
    let mut big = b"n,,n=alice,r=".to_vec();
    big.resize(MAX_CLIENT_TOKEN_BYTES + 1, b'x');
    let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
    assert!(matches!(
        server.step(&big),
        Err(AuthError::TokenTooLarge { len_bytes, max_bytes }) if len_bytes == MAX_CLIENT_TOKEN_BYTES + 1 && max_bytes == MAX_CLIENT_TOKEN_BYTES
    ));

    let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
    let client = ScramClient::new(ScramMechanism::Sha256, "alice", "pw", "n0nce");
    server.step(&client.client_first()).unwrap();
    let mut big = b"c=biws,r=".to_vec();
    big.resize(MAX_CLIENT_TOKEN_BYTES + 1, b'x');
    assert!(matches!(
        server.step(&big),
        Err(AuthError::TokenTooLarge { .. })
    ));
    // A nonce just under the cap is read (and refused only for what it is).
    let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
    let mut first = b"n,,n=alice,r=".to_vec();
    first.resize(MAX_CLIENT_TOKEN_BYTES, b'x');
    assert!(matches!(server.step(&first), Ok(Step::Continue(_))));
}

#[test]
fn no_token_is_taken_after_the_exchange_ends() {
    let table = table_with(ScramMechanism::Sha256, "alice", "pw");
    let client = ScramClient::new(ScramMechanism::Sha256, "alice", "pw", "n0nce");

    let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
    authenticate(&mut server, &client).unwrap();
    let err = server.step(&client.client_first()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unexpected challenge in Sasl server state COMPLETE"
    );
    let err = server.step(&client.client_first()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unexpected challenge in Sasl server state FAILED"
    );

    let mut server = ScramServer::new(ScramMechanism::Sha256, &table);
    server.step(b"garbage").unwrap_err();
    let err = server.step(&client.client_first()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unexpected challenge in Sasl server state FAILED"
    );
}

#[test]
fn a_fixed_server_nonce_must_be_printable() {
    let table = ScramCredentialTable::new();
    for bad in ["", "a,b", "a b", "caf\u{e9}"] {
        assert!(
            ScramServer::with_server_nonce(ScramMechanism::Sha256, &table, bad).is_none(),
            "{bad:?}"
        );
    }
}
