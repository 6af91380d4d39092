//! SASL/OAUTHBEARER with Kafka's unsecured validator, end to end on the real binary over raw
//! frames: a good unsecured JWS names the principal and the client is then served; an expired
//! token, one without `sub`, one without the required scope and one whose `alg` is not `none`
//! are answered with Kafka's JSON error as a challenge, and the client's `\x01` ends the
//! exchange with SASL_AUTHENTICATION_FAILED carrying that JSON.
//!
//! No librdkafka test: the workspace builds rdkafka without its `ssl` feature, and librdkafka
//! compiles OAUTHBEARER (and `enable.sasl.oauthbearer.unsecure.jwt`) only with OpenSSL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/kafka_conn.rs"]
mod kafka_conn;

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use common::{free_port, Shale};
use kafka_conn::{create_topic, fetch, produce, Conn};
use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;

const JAAS: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                    required unsecuredLoginStringClaim_sub=\"admin\";";

/// A broker whose CLIENTS listener serves OAUTHBEARER with these extra JAAS options.
fn broker_with_oauthbearer(validator_options: &str) -> (Shale, u16) {
    let (plain, sasl) = (free_port(), free_port());
    let jaas = JAAS.replace(";", &format!(" {validator_options};"));
    let overrides = [
        format!("listeners=PLAINTEXT://127.0.0.1:{plain},CLIENTS://127.0.0.1:{sasl}"),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENTS:SASL_PLAINTEXT,\
         CONTROLLER:PLAINTEXT"
            .to_string(),
        "listener.name.clients.sasl.enabled.mechanisms=OAUTHBEARER".to_string(),
        format!("listener.name.clients.oauthbearer.sasl.jaas.config={jaas}"),
    ];
    let refs: Vec<&str> = overrides.iter().map(String::as_str).collect();
    (Shale::start_with(&refs), sasl)
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn jws(header: &str, claims: &str) -> String {
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

fn unsecured(claims: &str) -> String {
    jws(r#"{"alg":"none"}"#, claims)
}

fn initial_response(token: &str) -> Vec<u8> {
    format!("n,,\x01auth=Bearer {token}\x01\x01").into_bytes()
}

fn handshake(conn: &mut Conn) {
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("OAUTHBEARER"));
    match conn.call(
        ApiKey::SaslHandshake,
        1,
        RequestKind::SaslHandshake(request),
    ) {
        ResponseKind::SaslHandshake(r) => {
            assert_eq!(r.error_code, 0, "{r:?}");
            assert_eq!(r.mechanisms, vec![StrBytes::from_static_str("OAUTHBEARER")]);
        }
        other => panic!("{other:?}"),
    }
}

fn authenticate(conn: &mut Conn, bytes: Vec<u8>) -> SaslAuthenticateResponse {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes));
    match conn.call(
        ApiKey::SaslAuthenticate,
        2,
        RequestKind::SaslAuthenticate(request),
    ) {
        ResponseKind::SaslAuthenticate(r) => r,
        other => panic!("{other:?}"),
    }
}

/// A refused token: the JSON challenge, then the failure after the client's `\x01`; the
/// connection is closed afterwards.
fn refused_with(port: u16, token: &str) -> String {
    let mut conn = Conn::plain(port);
    handshake(&mut conn);
    let challenge = authenticate(&mut conn, initial_response(token));
    assert_eq!(challenge.error_code, 0, "{challenge:?}");
    let json = String::from_utf8(challenge.auth_bytes.to_vec()).unwrap();
    let failed = authenticate(&mut conn, vec![0x01]);
    assert_eq!(failed.error_code, 58, "{failed:?}");
    assert_eq!(failed.error_message.as_deref(), Some(json.as_str()));
    assert!(conn.read_frame().is_none(), "the connection stays open");
    json
}

#[test]
fn an_unsecured_token_names_the_principal_and_bad_tokens_get_kafkas_json_error() {
    let (shale, port) = broker_with_oauthbearer("");
    let exp = now_seconds() + 600;

    let mut conn = Conn::plain(port);
    handshake(&mut conn);
    let token = unsecured(&format!(
        r#"{{"sub":"alice","exp":{exp}.25,"iat":{}}}"#,
        exp - 700
    ));
    let done = authenticate(&mut conn, initial_response(&token));
    assert_eq!(done.error_code, 0, "{done:?}");
    assert!(done.auth_bytes.is_empty());
    create_topic(&mut conn, "after-oauth");
    assert_eq!(produce(&mut conn, "after-oauth", &[b"bearer".to_vec()]), 0);
    assert_eq!(fetch(&mut conn, "after-oauth").1, 1);

    let invalid = r#"{"status":"invalid_token"}"#;
    let expired = unsecured(&format!(r#"{{"sub":"alice","exp":{}}}"#, now_seconds() - 5));
    assert_eq!(refused_with(port, &expired), invalid);
    let no_sub = unsecured(&format!(r#"{{"exp":{exp}}}"#));
    assert_eq!(refused_with(port, &no_sub), invalid);
    let signed = jws(
        r#"{"alg":"HS256","typ":"JWT"}"#,
        &format!(r#"{{"sub":"alice","exp":{exp}}}"#),
    );
    assert_eq!(refused_with(port, &signed), invalid);
    let with_signature = format!("{}sig", unsecured(&format!(r#"{{"sub":"a","exp":{exp}}}"#)));
    assert_eq!(refused_with(port, &with_signature), invalid);

    // A malformed initial response fails at once with Kafka's generic text.
    let mut conn = Conn::plain(port);
    handshake(&mut conn);
    let failed = authenticate(&mut conn, b"n,,\x01auth=Basic x\x01\x01".to_vec());
    assert_eq!(failed.error_code, 58);
    assert_eq!(
        failed.error_message.as_deref(),
        Some(
            "Authentication failed during authentication due to invalid credentials with SASL \
             mechanism OAUTHBEARER"
        )
    );

    assert!(
        shale.log_text().contains("unsecured validator"),
        "the start-up warning"
    );
}

#[test]
fn a_required_scope_is_enforced_with_insufficient_scope() {
    let (_shale, port) = broker_with_oauthbearer(
        "unsecuredValidatorRequiredScope=\"kafka\" unsecuredValidatorAllowableClockSkewMs=\"30000\"",
    );
    let exp = now_seconds() + 600;
    let wrong = unsecured(&format!(
        r#"{{"sub":"alice","exp":{exp},"scope":["other"]}}"#
    ));
    assert_eq!(
        refused_with(port, &wrong),
        r#"{"status":"insufficient_scope", "scope":"[kafka]"}"#
    );
    // Within the allowed skew an expired token still passes.
    let skewed = unsecured(&format!(
        r#"{{"sub":"alice","exp":{},"scope":"kafka"}}"#,
        now_seconds() - 10
    ));
    let mut conn = Conn::plain(port);
    handshake(&mut conn);
    assert_eq!(
        authenticate(&mut conn, initial_response(&skewed)).error_code,
        0
    );
    create_topic(&mut conn, "scoped");
}
