//! The SASL exchange that opens every connection to a SASL controller listener: SaslHandshake
//! v1 then SaslAuthenticate, as Kafka's SaslServerAuthenticator runs them, with PLAIN against
//! the controller listener's JAAS users. Only nodes dial the controller port (it speaks Shale's
//! own protocol after the exchange), so anything else (ApiVersions, a v0 handshake, any other
//! request) closes the connection. Frames are capped at Kafka's 524288 bytes until the peer
//! authenticated (CVE-2022-34917).

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use shale_auth::{PlainServer, PlainUsers, SaslServer, Step};
use shale_protocol::{Request, RequestHeader, Response};
use tokio::io::{AsyncRead, AsyncWrite};

use super::frames::{read_frame, refused, write_frame};
use crate::errors::{sasl_error_code, SaslRefusal};

/// Kafka's `sasl.server.max.receive.size` default, as on the client listeners: a peer that has
/// not authenticated cannot make this node hold more.
const MAX_UNAUTHENTICATED_FRAME_BYTES: usize = 524_288;

/// Runs the exchange; the authenticated user name, or why the peer is refused.
pub(super) async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    users: &Arc<PlainUsers>,
) -> io::Result<String> {
    let (header, request) = next_request(stream).await?;
    let RequestKind::SaslHandshake(handshake) = request else {
        return Err(refused(format!(
            "API {} before SASL authentication on the controller listener",
            header.api_key
        )));
    };
    if header.api_version < 1 {
        return Err(refused(
            "SaslHandshake v0 on the controller listener; nodes use v1",
        ));
    }
    let plain = handshake.mechanism.as_str() == "PLAIN";
    let refusal = (!plain).then_some(SaslRefusal::UnsupportedMechanism);
    let answer = SaslHandshakeResponse::default()
        .with_error_code(refusal.map_or(0, sasl_error_code))
        .with_mechanisms(vec![StrBytes::from_static_str("PLAIN")]);
    respond(stream, &header, ResponseKind::SaslHandshake(answer)).await?;
    if !plain {
        return Err(refused(format!(
            "SASL mechanism {} is not the controller listener's (PLAIN)",
            handshake.mechanism.as_str()
        )));
    }
    let (header, request) = next_request(stream).await?;
    let RequestKind::SaslAuthenticate(authenticate) = request else {
        return Err(refused(format!(
            "API {} instead of SaslAuthenticate on the controller listener",
            header.api_key
        )));
    };
    let mut server = PlainServer::new(Arc::clone(users));
    match server.step(&authenticate.auth_bytes) {
        Ok(Step::Done {
            principal,
            server_bytes,
        }) => {
            let answer = SaslAuthenticateResponse::default()
                .with_auth_bytes(Bytes::from(server_bytes))
                .with_session_lifetime_ms(0);
            respond(stream, &header, ResponseKind::SaslAuthenticate(answer)).await?;
            Ok(principal.name)
        }
        Ok(Step::Continue(_)) => Err(refused("PLAIN takes a single token")),
        Err(e) => {
            let message = e.client_message(server.mechanism(), false);
            let answer = SaslAuthenticateResponse::default()
                .with_error_code(sasl_error_code(SaslRefusal::AuthenticationFailed))
                .with_error_message(Some(StrBytes::from_string(message)));
            respond(stream, &header, ResponseKind::SaslAuthenticate(answer)).await?;
            Err(refused(format!("SASL authentication failed: {e}")))
        }
    }
}

async fn next_request<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> io::Result<(RequestHeader, RequestKind)> {
    let frame = read_frame(stream, MAX_UNAUTHENTICATED_FRAME_BYTES).await?;
    let (header, body) = shale_protocol::parse_request_header(&frame)
        .map_err(|e| refused(format!("malformed request during SASL authentication: {e}")))?;
    let key = ApiKey::try_from(header.api_key).ok();
    if !matches!(key, Some(ApiKey::SaslHandshake | ApiKey::SaslAuthenticate)) {
        return Err(refused(format!(
            "API {} before SASL authentication on the controller listener",
            header.api_key
        )));
    }
    match shale_protocol::decode_any_request(&header, body) {
        Ok(Request::Kafka(request)) => Ok((header, request)),
        Ok(Request::Newer(_)) => Err(refused(
            "unexpected request encoding during SASL authentication",
        )),
        Err(e) => Err(refused(format!(
            "malformed request during SASL authentication: {e}"
        ))),
    }
}

async fn respond<S: AsyncWrite + Unpin>(
    stream: &mut S,
    header: &RequestHeader,
    response: ResponseKind,
) -> io::Result<()> {
    let bytes = shale_protocol::encode_any_response(header, &Response::Kafka(response))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    write_frame(stream, &bytes).await
}
