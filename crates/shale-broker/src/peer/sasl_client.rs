//! The client side of Kafka's SASL exchange (SaslClientAuthenticator), as this node runs it
//! on a connection to another node: SaslHandshake v1 naming the mechanism, then the
//! mechanism's token in SaslAuthenticate v2. PLAIN is the one mechanism nodes use with each
//! other; its token is `authzid NUL username NUL password` with an empty authzid.

use std::io;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::{RequestHeader, Response};
use tokio::io::{AsyncRead, AsyncWrite};

use super::frames::{read_frame, refused, write_frame};
use crate::config::SaslCredentials;

/// Largest answer read during the exchange.
const RESPONSE_FRAME_MAX_BYTES: usize = 1 << 20;
const HANDSHAKE_VERSION: i16 = 1;
const AUTHENTICATE_VERSION: i16 = 2;

/// Authenticates this node on `stream` with SASL/PLAIN; an error says why the peer refused.
pub(super) async fn authenticate_plain<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    credentials: &SaslCredentials,
    client_id: &str,
) -> io::Result<()> {
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    let answer = exchange(
        stream,
        ApiKey::SaslHandshake,
        HANDSHAKE_VERSION,
        0,
        client_id,
        RequestKind::SaslHandshake(handshake),
    )
    .await?;
    let ResponseKind::SaslHandshake(answer) = answer else {
        return Err(refused(
            "the peer answered SaslHandshake with another response",
        ));
    };
    if answer.error_code != 0 {
        let enabled: Vec<&str> = answer.mechanisms.iter().map(|m| m.as_str()).collect();
        return Err(refused(format!(
            "the peer refused SASL mechanism PLAIN (error code {}); it enables {enabled:?}",
            answer.error_code
        )));
    }
    let mut token =
        Vec::with_capacity(2 + credentials.username.len() + credentials.password().len());
    token.push(0);
    token.extend_from_slice(credentials.username.as_bytes());
    token.push(0);
    token.extend_from_slice(credentials.password().as_bytes());
    let authenticate = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
    let answer = exchange(
        stream,
        ApiKey::SaslAuthenticate,
        AUTHENTICATE_VERSION,
        1,
        client_id,
        RequestKind::SaslAuthenticate(authenticate),
    )
    .await?;
    let ResponseKind::SaslAuthenticate(answer) = answer else {
        return Err(refused(
            "the peer answered SaslAuthenticate with another response",
        ));
    };
    if answer.error_code != 0 {
        let message = answer
            .error_message
            .as_ref()
            .map_or("", |m| m.as_str())
            .to_string();
        return Err(refused(format!(
            "SASL authentication as {} failed (error code {}): {message}",
            credentials.username, answer.error_code
        )));
    }
    Ok(())
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &str,
    request: RequestKind,
) -> io::Result<ResponseKind> {
    let header = RequestHeader {
        api_key: key as i16,
        api_version: version,
        correlation_id,
        client_id: Some(client_id.to_string()),
        header_version: key.request_header_version(version),
    };
    let frame = shale_protocol::encode_request(&header, &request)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    write_frame(stream, &frame).await?;
    let body = read_frame(stream, RESPONSE_FRAME_MAX_BYTES).await?;
    let (got, response) = shale_protocol::decode_any_response(key as i16, version, body)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    if got != correlation_id {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("response carries correlation id {got}, expected {correlation_id}"),
        ));
    }
    match response {
        Response::Kafka(response) => Ok(response),
        Response::Newer(_) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "unexpected response encoding",
        )),
    }
}
