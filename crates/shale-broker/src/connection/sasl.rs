//! The SASL exchange that opens every connection of a SASL_PLAINTEXT or SASL_SSL listener, as
//! Kafka's SaslServerAuthenticator runs it, before the connection's other requests are served.
//!
//! One frame at a time, nothing parsed ahead: ApiVersions and SaslHandshake first, then the
//! mechanism's tokens in SaslAuthenticate requests (handshake v1), or as raw length-prefixed
//! frames (handshake v0, Kafka 0.10's framing). Any other request before authentication closes
//! the connection without an answer, as Kafka's IllegalSaslStateException does; a handshake
//! during authentication is answered ILLEGAL_SASL_STATE and then closes; a refused mechanism
//! or credential is answered (UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED with
//! Kafka's message) and then closes. Until authentication ends frames are capped at
//! `MAX_UNAUTHENTICATED_FRAME_BYTES` (Kafka's CVE-2022-34917 fix), and like every frame they
//! grow only as their bytes arrive.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use shale_auth::{Mechanism, OAuthBearerServer, PlainServer, SaslServer, ScramServer, Step};
use shale_protocol::{Request, RequestHeader, Response};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tracing::debug;

use super::admission::{admit, Admission};
use super::framing::next_frame;
use super::idle::IdleTimer;
use super::scram_lookup::ImageScramCredentials;
use crate::api_table;
use crate::broker::Broker;
use crate::config::ListenerSasl;
use crate::errors::SaslRefusal;
use crate::handlers::sasl::{authenticate_refusal, authenticate_step, handshake_response};
use crate::request::{RequestContext, ANONYMOUS_PRINCIPAL};

/// The largest frame read before authentication (Kafka's `sasl.server.max.receive.size`
/// default): a client that has not authenticated cannot make the broker hold more.
pub const MAX_UNAUTHENTICATED_FRAME_BYTES: usize = 524_288;

/// Where the exchange is.
enum State {
    HandshakeOrVersions,
    /// After a v1 handshake: tokens in SaslAuthenticate requests.
    Authenticate(Box<dyn SaslServer + Send>),
    /// After a v0 handshake: tokens as raw frames.
    RawToken(Box<dyn SaslServer + Send>),
}

/// Runs the exchange on `stream`; the principal (`User:<name>`) once the client authenticated,
/// `None` when the connection is to close. Bytes read past the exchange stay in `buffered`.
pub(super) async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    broker: &Arc<Broker>,
    stream: &mut S,
    buffered: &mut BytesMut,
    peer: SocketAddr,
    listener_name: &Arc<str>,
    sasl: &ListenerSasl,
    idle: &IdleTimer,
) -> Option<String> {
    let frame_bytes_max = broker
        .config
        .socket_request_max_bytes
        .min(MAX_UNAUTHENTICATED_FRAME_BYTES);
    let mut shutdown = broker.shutdown_signal();
    let mut state = State::HandshakeOrVersions;
    loop {
        let frame =
            next_frame(stream, buffered, frame_bytes_max, &mut shutdown, peer, idle).await?;
        if let State::RawToken(server) = &mut state {
            match server.step(&frame) {
                Ok(Step::Done {
                    principal,
                    server_bytes,
                }) => {
                    write_raw(stream, &server_bytes).await?;
                    return Some(format!("User:{}", principal.name));
                }
                Ok(Step::Continue(server_bytes)) => {
                    write_raw(stream, &server_bytes).await?;
                    continue;
                }
                Err(e) => {
                    debug!(%peer, "closing connection: SASL authentication failed: {e}");
                    delay_refusal(broker).await;
                    return None;
                }
            }
        }
        let (header, body) = match shale_protocol::parse_request_header(&frame) {
            Ok(parsed) => parsed,
            Err(shale_protocol::ProtocolError::UnsupportedApi {
                api_key,
                correlation_id,
                ..
            }) if api_key == ApiKey::ApiVersions as i16 => {
                // KIP-511, as on any connection: a v0 answer listing everything.
                let bytes = shale_protocol::encode_api_versions_fallback(
                    correlation_id,
                    &api_table::advertised(),
                );
                write(stream, &bytes).await?;
                continue;
            }
            Err(e) => {
                debug!(%peer, "closing connection during SASL authentication: {e}");
                return None;
            }
        };
        if !matches!(admit(&header), Admission::Handle) {
            debug!(%peer, api_key = header.api_key, api_version = header.api_version, "closing connection during SASL authentication: unsupported API or version");
            return None;
        }
        let key = ApiKey::try_from(header.api_key).ok()?;
        state = match (state, key) {
            (State::HandshakeOrVersions, ApiKey::ApiVersions) => {
                let ctx = RequestContext {
                    header,
                    peer,
                    listener_name: listener_name.clone(),
                    principal: Arc::from(ANONYMOUS_PRINCIPAL),
                    connection_id: 0,
                };
                let answered = match shale_protocol::decode_any_request(&ctx.header, body) {
                    Ok(Request::Kafka(request)) => api_table::dispatch(broker, &ctx, request).await,
                    Ok(Request::Newer(request)) => {
                        api_table::dispatch_newer(broker, &ctx, request).await
                    }
                    Err(e) => {
                        debug!(%peer, "closing connection on a malformed ApiVersions: {e}");
                        return None;
                    }
                };
                let Ok(Some(response)) = answered else {
                    return None;
                };
                let bytes = shale_protocol::encode_any_response(&ctx.header, &response).ok()?;
                write(stream, &bytes).await?;
                State::HandshakeOrVersions
            }
            (State::HandshakeOrVersions, ApiKey::SaslHandshake) => {
                let RequestKind::SaslHandshake(request) = decode(&header, body, peer)? else {
                    return None;
                };
                let names: Vec<&'static str> = sasl.mechanisms.iter().map(|m| m.name()).collect();
                let chosen = Mechanism::from_name(request.mechanism.as_str())
                    .filter(|m| sasl.mechanisms.contains(m));
                let server = chosen.and_then(|m| server_for(broker, m, sasl));
                let Some(server) = server else {
                    let response =
                        handshake_response(Some(SaslRefusal::UnsupportedMechanism), &names);
                    delay_refusal(broker).await;
                    respond(stream, &header, ResponseKind::SaslHandshake(response)).await?;
                    debug!(%peer, mechanism = %request.mechanism.as_str(), "closing connection: SASL mechanism not enabled");
                    return None;
                };
                let response = handshake_response(None, &names);
                respond(stream, &header, ResponseKind::SaslHandshake(response)).await?;
                if header.api_version == 0 {
                    State::RawToken(server)
                } else {
                    State::Authenticate(server)
                }
            }
            (State::Authenticate(mut server), ApiKey::SaslAuthenticate) => {
                let RequestKind::SaslAuthenticate(request) = decode(&header, body, peer)? else {
                    return None;
                };
                match server.step(&request.auth_bytes) {
                    Ok(Step::Done {
                        principal,
                        server_bytes,
                    }) => {
                        let response = authenticate_step(server_bytes);
                        respond(stream, &header, ResponseKind::SaslAuthenticate(response)).await?;
                        return Some(format!("User:{}", principal.name));
                    }
                    Ok(Step::Continue(server_bytes)) => {
                        let response = authenticate_step(server_bytes);
                        respond(stream, &header, ResponseKind::SaslAuthenticate(response)).await?;
                        State::Authenticate(server)
                    }
                    Err(e) => {
                        let message = e.client_message(server.mechanism(), false);
                        let response =
                            authenticate_refusal(SaslRefusal::AuthenticationFailed, message);
                        delay_refusal(broker).await;
                        respond(stream, &header, ResponseKind::SaslAuthenticate(response)).await?;
                        debug!(%peer, "closing connection: SASL authentication failed: {e}");
                        return None;
                    }
                }
            }
            (State::Authenticate(_), ApiKey::SaslHandshake) => {
                let response = handshake_response(Some(SaslRefusal::IllegalState), &[]);
                respond(stream, &header, ResponseKind::SaslHandshake(response)).await?;
                debug!(%peer, "closing connection: SaslHandshake during SASL authentication");
                return None;
            }
            (_, key) => {
                debug!(%peer, ?key, "closing connection: request before SASL authentication");
                return None;
            }
        };
    }
}

fn server_for(
    broker: &Arc<Broker>,
    mechanism: Mechanism,
    sasl: &ListenerSasl,
) -> Option<Box<dyn SaslServer + Send>> {
    match mechanism {
        Mechanism::Plain => {
            let users = sasl.plain_users.clone()?;
            Some(Box::new(PlainServer::new(users)))
        }
        Mechanism::Scram(scram) => Some(Box::new(ScramServer::new(
            scram,
            ImageScramCredentials::new(broker.clone()),
        ))),
        Mechanism::OAuthBearer => {
            let options = sasl.oauthbearer.clone()?;
            Some(Box::new(OAuthBearerServer::new(
                options,
                Arc::new(wall_clock_ms),
            )))
        }
    }
}

/// Token times are wall-clock times (JWT NumericDate), as Kafka's `Time.SYSTEM`.
fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn decode(header: &RequestHeader, body: Bytes, peer: SocketAddr) -> Option<RequestKind> {
    match shale_protocol::decode_any_request(header, body) {
        Ok(Request::Kafka(request)) => Some(request),
        Ok(Request::Newer(_)) => None,
        Err(e) => {
            debug!(%peer, "closing connection on a malformed SASL request: {e}");
            None
        }
    }
}

async fn respond<S: AsyncWrite + Unpin>(
    stream: &mut S,
    header: &RequestHeader,
    response: ResponseKind,
) -> Option<()> {
    let bytes = shale_protocol::encode_any_response(header, &Response::Kafka(response)).ok()?;
    write(stream, &bytes).await
}

async fn write<S: AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) -> Option<()> {
    stream.write_all(bytes).await.ok()?;
    stream.flush().await.ok()
}

/// A v0 exchange's server token: a length prefix and the bytes, without a Kafka header.
/// `connection.failed.authentication.delay.ms` (KIP-306): a refused login is answered, and its
/// connection closed, only after this long, so that a client retrying bad credentials in a
/// loop costs the broker little.
async fn delay_refusal(broker: &Broker) {
    let delay_ms = broker.config.connection_failed_authentication_delay_ms;
    if delay_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
    }
}

async fn write_raw<S: AsyncWrite + Unpin>(stream: &mut S, token: &[u8]) -> Option<()> {
    let len = u32::try_from(token.len()).ok()?;
    let mut frame = Vec::with_capacity(4 + token.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(token);
    write(stream, &frame).await
}
