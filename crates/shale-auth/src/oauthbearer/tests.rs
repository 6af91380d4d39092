use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::*;

const NOW_MS: i64 = 1_700_000_000_000;

fn token(claims: &str) -> String {
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

fn message(authzid: &str, token: &str) -> Vec<u8> {
    format!("n,{authzid},\x01auth=Bearer {token}\x01\x01").into_bytes()
}

fn server(options: UnsecuredValidatorOptions) -> OAuthBearerServer {
    OAuthBearerServer::new(Arc::new(options), Arc::new(|| NOW_MS))
}

#[test]
fn a_good_token_authenticates_its_subject() {
    let claims = r#"{"sub":"alice","exp":1700000060,"iat":1699999990}"#;
    let mut s = server(UnsecuredValidatorOptions::default());
    assert_eq!(s.mechanism(), Mechanism::OAuthBearer);
    let Step::Done {
        principal,
        server_bytes,
    } = s.step(&message("a=alice", &token(claims))).unwrap()
    else {
        panic!("not done");
    };
    assert_eq!(principal.name, "alice");
    assert_eq!(principal.token_expiry_timestamp_ms, Some(1_700_000_060_000));
    assert!(server_bytes.is_empty());
    assert!(matches!(
        s.step(b"\x01"),
        Err(AuthError::UnexpectedToken { .. })
    ));
}

fn refused(s: &mut OAuthBearerServer, bytes: &[u8]) -> String {
    let Step::Continue(challenge) = s.step(bytes).unwrap() else {
        panic!("no challenge");
    };
    let challenge = String::from_utf8(challenge).unwrap();
    let err = s.step(b"\x01").unwrap_err();
    assert!(err.is_client_visible());
    assert_eq!(err.client_message(Mechanism::OAuthBearer, false), challenge);
    challenge
}

#[test]
fn refused_tokens_are_answered_with_kafkas_json_then_fail() {
    let cases = [
        r#"{"sub":"alice","exp":1699999999}"#,
        r#"{"sub":"alice","exp":1700000000}"#,
        r#"{"exp":1700000060}"#,
        r#"{"sub":"alice"}"#,
        r#"{"sub":"alice","exp":1700000060,"iat":1700000001}"#,
    ];
    for claims in cases {
        let mut s = server(UnsecuredValidatorOptions::default());
        let json = refused(&mut s, &message("", &token(claims)));
        assert_eq!(json, r#"{"status":"invalid_token"}"#, "{claims}");
        assert!(s.last_failure().is_some());
    }
    let signed = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256"}"#),
        URL_SAFE_NO_PAD.encode(r#"{"sub":"alice","exp":1700000060}"#)
    );
    let mut s = server(UnsecuredValidatorOptions::default());
    assert_eq!(
        refused(&mut s, &message("", &signed)),
        r#"{"status":"invalid_token"}"#
    );
    assert!(s.last_failure().unwrap().reason.contains("'none'"));
}

#[test]
fn clock_skew_extends_both_ends() {
    let options = UnsecuredValidatorOptions {
        allowable_clock_skew_ms: 2000,
        ..UnsecuredValidatorOptions::default()
    };
    for claims in [
        r#"{"sub":"alice","exp":1699999999,"iat":1699999990}"#,
        r#"{"sub":"alice","exp":1700000060,"iat":1700000001.5}"#,
    ] {
        let mut s = server(options.clone());
        assert!(
            matches!(
                s.step(&message("", &token(claims))).unwrap(),
                Step::Done { .. }
            ),
            "{claims}"
        );
    }
    let mut s = server(options);
    let beyond = r#"{"sub":"alice","exp":1700000060,"iat":1700000002.5}"#;
    assert_eq!(
        refused(&mut s, &message("", &token(beyond))),
        r#"{"status":"invalid_token"}"#
    );
}

#[test]
fn a_required_scope_must_be_held() {
    let options = UnsecuredValidatorOptions {
        required_scope: vec!["read".to_string(), "write".to_string()],
        ..UnsecuredValidatorOptions::default()
    };
    let mut s = server(options.clone());
    let partial = r#"{"sub":"alice","exp":1700000060,"scope":["read"]}"#;
    assert_eq!(
        refused(&mut s, &message("", &token(partial))),
        r#"{"status":"insufficient_scope", "scope":"[read, write]"}"#
    );
    let mut s = server(options);
    let full = r#"{"sub":"alice","exp":1700000060,"scope":["write","read","admin"]}"#;
    assert!(matches!(
        s.step(&message("", &token(full))).unwrap(),
        Step::Done { .. }
    ));
}

#[test]
fn other_claim_names_are_honoured() {
    let options = UnsecuredValidatorOptions {
        principal_claim_name: "user".to_string(),
        scope_claim_name: "scp".to_string(),
        required_scope: vec!["kafka".to_string()],
        ..UnsecuredValidatorOptions::default()
    };
    let mut s = server(options);
    let claims = r#"{"user":"bob","sub":"alice","exp":1700000060,"scp":"kafka"}"#;
    let Step::Done { principal, .. } = s.step(&message("", &token(claims))).unwrap() else {
        panic!("not done");
    };
    assert_eq!(principal.name, "bob");
}

#[test]
fn a_retry_after_the_error_is_a_new_initial_response() {
    let mut s = server(UnsecuredValidatorOptions::default());
    let expired = token(r#"{"sub":"alice","exp":1}"#);
    assert!(matches!(
        s.step(&message("", &expired)).unwrap(),
        Step::Continue(_)
    ));
    let good = token(r#"{"sub":"alice","exp":1700000060}"#);
    assert!(matches!(
        s.step(&message("", &good)).unwrap(),
        Step::Done { .. }
    ));
}

#[test]
fn an_authorization_id_other_than_the_principal_is_refused() {
    let mut s = server(UnsecuredValidatorOptions::default());
    let good = token(r#"{"sub":"alice","exp":1700000060}"#);
    let err = s.step(&message("a=bob", &good)).unwrap_err();
    assert_eq!(
        err.client_message(Mechanism::OAuthBearer, false),
        "Authentication failed: Client requested an authorization id (bob) that is different \
         from the token's principal name (alice)"
    );
}

#[test]
fn a_malformed_message_fails_with_kafkas_generic_text() {
    for bytes in [&b"\x01"[..], b"n,,\x01auth=Basic x\x01\x01", b"garbage"] {
        let mut s = server(UnsecuredValidatorOptions::default());
        let err = s.step(bytes).unwrap_err();
        assert!(!err.is_client_visible());
        assert_eq!(
            err.client_message(Mechanism::OAuthBearer, false),
            "Authentication failed during authentication due to invalid credentials with SASL \
             mechanism OAUTHBEARER"
        );
    }
    let mut s = server(UnsecuredValidatorOptions::default());
    let huge = vec![b'a'; crate::MAX_CLIENT_TOKEN_BYTES + 1];
    assert!(matches!(
        s.step(&huge),
        Err(AuthError::TokenTooLarge { .. })
    ));
}
