//! One client connection: frames in, responses out in request order.
//!
//! The reader parses frames ahead (up to `queued.max.requests`), but requests of one connection
//! are handled one after another, as Kafka does: a producer pipelining several Produce requests
//! on a connection relies on them being appended in the order sent (idempotent sequences, and
//! record order for everyone). Concurrency comes from connections, not from within one.
//!
//! Consumer Fetch answers skip the generic encoder: their record sets go from the segment
//! files to the socket with `sendfile` (see `frame_writer`), or through the TLS stream in
//! bounded chunks on an SSL listener.
//!
//! A connection is served the same over any stream (`ClientStream`): plain TCP, or TLS after
//! the handshake `serve_tls` runs. On a SASL listener the SASL exchange (`sasl`) comes first,
//! and its principal is the connection's.

mod admission;
mod frame_writer;
mod framing;
mod idle;
mod principal;
mod sasl;
mod scram_lookup;
mod throttle;

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use futures::FutureExt;
use kafka_protocol::messages::{ApiKey, RequestKind};
use shale_protocol::{FetchFrame, Request, Response};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadHalf};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, warn};

use crate::api_table;
use crate::broker::Broker;
use crate::config::ListenerSasl;
use crate::handlers::fetch;
use crate::handlers::fetch::encode::FileRecords;
use crate::quotas::poll_time::PollTimed;
use crate::request::{HandlerError, RequestContext, ANONYMOUS_PRINCIPAL};
use admission::{admit, Admission};
use frame_writer::ResponseSink;
use framing::next_frame;
use idle::IdleTimer;
use throttle::Mute;

/// How long a client on an SSL listener has to complete the TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A stream a connection is served over, split into the reader's and the writer's halves.
pub trait ClientStream: Send + 'static {
    type Reader: AsyncRead + Unpin + Send + 'static;
    type Writer: ResponseSink;
    fn into_halves(self) -> (Self::Reader, Self::Writer);
}

/// Plain TCP: owned halves, and the writer keeps the socket for `sendfile`.
impl ClientStream for TcpStream {
    type Reader = OwnedReadHalf;
    type Writer = tokio::net::tcp::OwnedWriteHalf;
    fn into_halves(self) -> (Self::Reader, Self::Writer) {
        self.into_split()
    }
}

impl ClientStream for TlsStream<TcpStream> {
    type Reader = ReadHalf<TlsStream<TcpStream>>;
    type Writer = tokio::io::WriteHalf<TlsStream<TcpStream>>;
    fn into_halves(self) -> (Self::Reader, Self::Writer) {
        tokio::io::split(self)
    }
}

/// Runs the TLS handshake of a socket accepted on an SSL or SASL_SSL listener, then serves it
/// (after the SASL exchange when `sasl` is given). A failed or slow handshake closes this
/// connection only.
pub async fn serve_tls(
    broker: Arc<Broker>,
    acceptor: TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
    listener_name: Arc<str>,
    sasl: Option<Arc<ListenerSasl>>,
) {
    let stream = match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            debug!(%peer, listener = %listener_name, "closing connection: TLS handshake failed: {e}");
            // As Kafka delays the close of a failed SSL handshake (KIP-306).
            let delay_ms = broker.config.connection_failed_authentication_delay_ms;
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            return;
        }
        Err(_) => {
            debug!(%peer, listener = %listener_name, "closing connection: TLS handshake timed out");
            return;
        }
    };
    if let Some(sasl) = sasl {
        // The SASL principal is the connection's, as in Kafka, certificate or not.
        serve_sasl(broker, stream, peer, listener_name, sasl).await;
        return;
    }
    let principal = match stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
    {
        None => Arc::from(ANONYMOUS_PRINCIPAL),
        Some(certificate) => match principal::principal_of_certificate(certificate) {
            Some(principal) => Arc::from(principal.as_str()),
            None => {
                warn!(%peer, "closing connection: the client certificate's subject is not readable");
                return;
            }
        },
    };
    serve(broker, stream, peer, listener_name, principal).await;
}

/// Serves a stream of a SASL listener: the SASL exchange, then the authenticated connection.
pub async fn serve_sasl<S: ClientStream + AsyncRead + AsyncWrite + Unpin>(
    broker: Arc<Broker>,
    mut stream: S,
    peer: SocketAddr,
    listener_name: Arc<str>,
    sasl: Arc<ListenerSasl>,
) {
    let mut buffered = BytesMut::new();
    let idle = IdleTimer::new(broker.config.connections_max_idle_ms);
    let Some(principal) = sasl::authenticate(
        &broker,
        &mut stream,
        &mut buffered,
        peer,
        &listener_name,
        &sasl,
        &idle,
    )
    .await
    else {
        return;
    };
    let principal = Arc::from(principal.as_str());
    serve_buffered(
        broker,
        stream,
        peer,
        listener_name,
        principal,
        buffered,
        idle,
    )
    .await;
}

/// What the reader hands to the processing task, in arrival order.
enum Job {
    /// Answered without running a handler (fallbacks, refusals).
    Ready(Outcome),
    /// A request to handle, and its frame's size (what a produce quota counts).
    Run(RequestContext, bytes::Bytes, usize),
}

/// What the writer does with one request's outcome.
enum Outcome {
    /// Bytes to write (length prefix included).
    Respond(BytesMut),
    /// A Fetch frame whose record sets are still in their segment files.
    RespondFetch(FetchFrame<FileRecords>),
    /// acks=0 produce: nothing is sent back.
    Silent,
    /// The request was invalid in a way that ends the connection.
    Close,
}

/// Serves one accepted stream until the peer closes, a frame is malformed, or shutdown.
/// `principal` is who the client authenticated as (Kafka's `KafkaPrincipal` text).
pub async fn serve<S: ClientStream>(
    broker: Arc<Broker>,
    stream: S,
    peer: SocketAddr,
    listener_name: Arc<str>,
    principal: Arc<str>,
) {
    let idle = IdleTimer::new(broker.config.connections_max_idle_ms);
    serve_buffered(
        broker,
        stream,
        peer,
        listener_name,
        principal,
        BytesMut::new(),
        idle,
    )
    .await;
}

/// `serve`, with bytes already read from the stream (past a SASL exchange) in `buffered`.
async fn serve_buffered<S: ClientStream>(
    broker: Arc<Broker>,
    stream: S,
    peer: SocketAddr,
    listener_name: Arc<str>,
    principal: Arc<str>,
    mut buffered: BytesMut,
    idle: IdleTimer,
) {
    let connection_id = NEXT_CONNECTION_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (mut reader, mut writer) = stream.into_halves();
    let in_flight_max = broker.config.queued_max_requests.clamp(1, 1024);
    let (tx, mut rx) = mpsc::channel::<Job>(in_flight_max);
    let frame_bytes_max = broker.config.socket_request_max_bytes;

    let processor = broker.clone();
    let writer_idle = idle.clone();
    // Set after a throttled answer (client quotas): the reader reads nothing and the writer
    // handles nothing until it passes.
    let mute = Mute::default();
    let writer_mute = mute.clone();
    let writer_task = tokio::spawn(async move {
        while let Some(job) = rx.recv().await {
            let (outcome, throttle_ms) = match job {
                Job::Ready(o) => (o, 0),
                // A panicking handler closes this connection only. Caught here rather than
                // by a task of its own: a task per request costs two extra wake-ups.
                Job::Run(ctx, body, frame_bytes) => {
                    match AssertUnwindSafe(run(processor.clone(), ctx, body, frame_bytes))
                        .catch_unwind()
                        .await
                    {
                        Ok(o) => o,
                        Err(_) => {
                            warn!(%peer, "request handler panicked");
                            (Outcome::Close, 0)
                        }
                    }
                }
            };
            match outcome {
                Outcome::Respond(bytes) => {
                    // The flush is free on TCP; through TLS it sends what the stream holds.
                    if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                        return;
                    }
                }
                Outcome::RespondFetch(frame) => {
                    if let Err(e) = writer.write_fetch_frame(frame).await {
                        debug!(%peer, "closing connection: fetch response not sent: {e}");
                        return;
                    }
                }
                Outcome::Silent => {}
                Outcome::Close => return,
            }
            // KIP-219: the answer is out; now the connection waits out its throttle (still a
            // request in flight, so it is not idle meanwhile).
            writer_mute.start(throttle_ms);
            writer_mute.wait().await;
            writer_idle.request_finished();
        }
    });

    let mut shutdown = broker.shutdown_signal();
    // Bytes read but not yet framed (`buffered`): one read takes a whole request (and the
    // start of the next, when the client pipelines) instead of a read for the length prefix
    // and more for the body.
    loop {
        mute.wait().await;
        let Some(frame) = next_frame(
            &mut reader,
            &mut buffered,
            frame_bytes_max,
            &mut shutdown,
            peer,
            &idle,
        )
        .await
        else {
            break;
        };
        let (header, body) = match shale_protocol::parse_request_header(&frame) {
            Ok(parsed) => parsed,
            Err(shale_protocol::ProtocolError::UnsupportedApi {
                api_key,
                api_version,
                correlation_id,
            }) if api_key == ApiKey::ApiVersions as i16 => {
                // KIP-511: a newer ApiVersions than we know gets a v0 answer listing everything.
                debug!(%peer, api_version, "ApiVersions fallback to v0");
                let bytes = shale_protocol::encode_api_versions_fallback(
                    correlation_id,
                    &api_table::advertised(),
                );
                idle.request_started();
                if tx.send(Job::Ready(Outcome::Respond(bytes))).await.is_err() {
                    break;
                }
                continue;
            }
            Err(e) => {
                warn!(%peer, "closing connection: {e}");
                break;
            }
        };
        let job = match admit(&header) {
            Admission::Handle => {
                let ctx = RequestContext {
                    header,
                    peer,
                    listener_name: listener_name.clone(),
                    principal: principal.clone(),
                    connection_id,
                };
                Job::Run(ctx, body, frame.len())
            }
            Admission::ApiVersionsFallback => {
                let bytes = shale_protocol::encode_api_versions_fallback(
                    header.correlation_id,
                    &api_table::advertised(),
                );
                Job::Ready(Outcome::Respond(bytes))
            }
            Admission::Close(reason) => {
                warn!(%peer, api_key = header.api_key, api_version = header.api_version, "closing connection: {reason}");
                Job::Ready(Outcome::Close)
            }
        };
        idle.request_started();
        if tx.send(job).await.is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer_task.await;
    broker.share.connection_closed(&broker.core, connection_id);
}

/// Numbers connections for [`RequestContext::connection_id`]; 0 is never given out (requests
/// answered before a connection is served, during SASL, carry it).
static NEXT_CONNECTION_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Handles one request: its outcome and the time the connection is then throttled for.
async fn run(
    broker: Arc<Broker>,
    ctx: RequestContext,
    body: bytes::Bytes,
    frame_bytes: usize,
) -> (Outcome, i64) {
    // Which versions clients pick (`SHALE_LOG=shale_broker::connection=debug`).
    debug!(peer = %ctx.peer, principal = %ctx.principal, api_key = ctx.header.api_key, api_version = ctx.header.api_version, "request");
    // Decoding counts as handling time for the request quota.
    let decode_started = std::time::Instant::now();
    let decoded = shale_protocol::decode_any_request(&ctx.header, body);
    let decode_nanos = u64::try_from(decode_started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let request = match decoded {
        Ok(Request::Kafka(r)) => r,
        Ok(Request::Newer(r)) => {
            let handled = std::pin::pin!(api_table::dispatch_newer(&broker, &ctx, r));
            let (mut answered, busy_nanos) = PollTimed::new(handled).await;
            let throttle_ms = throttle::other(
                &broker,
                &ctx,
                false,
                busy_nanos.saturating_add(decode_nanos),
                answered.as_mut().ok().and_then(Option::as_mut),
            );
            return (respond(&ctx, answered), throttle_ms);
        }
        Err(e) => {
            warn!(peer = %ctx.peer, api_key = ctx.header.api_key, "closing connection on a malformed request: {e}");
            return (Outcome::Close, 0);
        }
    };
    let (request, produce_acks, follower_fetch) = match request {
        RequestKind::Fetch(mut r) if fetch::served_as_frame(&r) => {
            throttle::cap_fetch(&broker, &ctx, &mut r);
            let handled = std::pin::pin!(fetch::handle_frame(&broker, &ctx, r));
            let (framed, busy_nanos) = PollTimed::new(handled).await;
            let throttled = framed.and_then(|frame| {
                throttle::fetch_frame(
                    &broker,
                    &ctx,
                    frame,
                    busy_nanos.saturating_add(decode_nanos),
                )
            });
            return match throttled {
                Ok((frame, throttle_ms)) => (Outcome::RespondFetch(frame), throttle_ms),
                Err(e) => {
                    warn!(peer = %ctx.peer, "cannot encode response: {e}");
                    (Outcome::Close, 0)
                }
            };
        }
        RequestKind::Produce(r) => {
            let acks = r.acks;
            (RequestKind::Produce(r), Some(acks), false)
        }
        RequestKind::Fetch(r) => (RequestKind::Fetch(r), None, true),
        other => (other, None, false),
    };
    let handled = std::pin::pin!(api_table::dispatch(&broker, &ctx, request));
    let (mut answered, busy_nanos) = PollTimed::new(handled).await;
    let busy_nanos = busy_nanos.saturating_add(decode_nanos);
    let response = answered.as_mut().ok().and_then(Option::as_mut);
    let throttle_ms = match produce_acks {
        Some(acks) => throttle::produce(&broker, &ctx, acks, frame_bytes, busy_nanos, response),
        None => throttle::other(&broker, &ctx, follower_fetch, busy_nanos, response),
    };
    (respond(&ctx, answered), throttle_ms)
}

fn respond(ctx: &RequestContext, answered: Result<Option<Response>, HandlerError>) -> Outcome {
    match answered {
        Ok(Some(response)) => match shale_protocol::encode_any_response(&ctx.header, &response) {
            Ok(bytes) => Outcome::Respond(bytes),
            Err(e) => {
                warn!(peer = %ctx.peer, "cannot encode response: {e}");
                Outcome::Close
            }
        },
        Ok(None) => Outcome::Silent,
        Err(e) => {
            warn!(peer = %ctx.peer, api_key = ctx.header.api_key, "closing connection: {e}");
            Outcome::Close
        }
    }
}
