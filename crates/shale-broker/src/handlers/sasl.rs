//! SaslHandshake and SaslAuthenticate once a connection is past authentication (or on a
//! listener without SASL): Kafka's KafkaApis answers both ILLEGAL_SASL_STATE. The exchange
//! itself runs before any request reaches a handler (`connection/sasl.rs`), with the
//! answers built here.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::broker::Broker;
use crate::errors::{sasl_error_code, SaslRefusal};
use crate::request::RequestContext;

/// Kafka's text for a SaslAuthenticate after the connection authenticated.
const AUTHENTICATE_AFTER_AUTHENTICATION: &str =
    "SaslAuthenticate request received after successful authentication";

pub fn handshake(
    _broker: &Arc<Broker>,
    _ctx: &RequestContext,
    _request: SaslHandshakeRequest,
) -> SaslHandshakeResponse {
    handshake_response(Some(SaslRefusal::IllegalState), &[])
}

pub fn authenticate(
    _broker: &Arc<Broker>,
    _ctx: &RequestContext,
    _request: SaslAuthenticateRequest,
) -> SaslAuthenticateResponse {
    authenticate_refusal(
        SaslRefusal::IllegalState,
        AUTHENTICATE_AFTER_AUTHENTICATION.to_string(),
    )
}

/// A SaslHandshake answer: `refusal` or success, with the listener's mechanisms.
pub(crate) fn handshake_response(
    refusal: Option<SaslRefusal>,
    mechanisms: &[&'static str],
) -> SaslHandshakeResponse {
    SaslHandshakeResponse::default()
        .with_error_code(refusal.map_or(0, sasl_error_code))
        .with_mechanisms(
            mechanisms
                .iter()
                .map(|m| StrBytes::from_static_str(m))
                .collect(),
        )
}

/// A successful SaslAuthenticate step: the server's bytes. Sessions do not expire (Kafka's
/// `connections.max.reauth.ms` default of 0: no re-authentication).
pub(crate) fn authenticate_step(server_bytes: Vec<u8>) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse::default()
        .with_auth_bytes(Bytes::from(server_bytes))
        .with_session_lifetime_ms(0)
}

pub(crate) fn authenticate_refusal(
    refusal: SaslRefusal,
    message: String,
) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse::default()
        .with_error_code(sasl_error_code(refusal))
        .with_error_message(Some(StrBytes::from_string(message)))
}
