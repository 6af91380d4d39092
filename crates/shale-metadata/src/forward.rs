//! Forwarding controller requests to the active controller.
//!
//! A node that is not the active controller sends a request over TCP to the controller listener
//! of the voter that leads the quorum, the port Raft uses: the connection preamble
//! (`shale_raft::connect_service`) selects this service and names the cluster. Frames are
//! `[body length u32 BE][body]`, bounded to [`FRAME_BYTES_MAX`], where the body is the wire
//! version ([`FORWARD_WIRE_VERSION`], one byte) and a [`Call`] or [`Answer`] in the versioned
//! encoding (`codec.rs`); a body of another version is refused and closes the connection. A
//! connection carries any number of request/response pairs in turn. The
//! answer carries the offset of the leader's image when it answered, which includes the
//! request's records: the caller waits for its own image to reach it, so a forwarded submit
//! has the same read-your-writes guarantee as a local one.
//!
//! **Session links.** Each broker keeps one long-lived connection to the active controller for
//! its heartbeats ([`SessionLink`]). The controller's side learns from the heartbeats and the
//! registration answered on it which broker registration (id and epoch) the link belongs to.
//! When the link ends without a [`Call::Goodbye`] (end of stream or reset: the broker's process
//! died and its kernel closed the socket), the controller fences that registration at once
//! (`ControllerRequest::FenceDeparted`) instead of waiting for `broker.session.timeout.ms`. A
//! broker closing its link on purpose (another controller, shutdown) says goodbye first. A
//! stopped or cut-off broker keeps its socket open, so only the session timeout fences it.
//!
//! **Security.** Every connection is secured by the node's `PeerSecurity` before its preamble
//! (TLS, SASL: the broker supplies it from the controller listener's configuration), and the
//! controller port hands this service only connections that authenticated as a node.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shale_raft::encoding::{Decode, DecodeError, Encode};
use shale_raft::{BoxedPeerStream, PeerSecurity};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::controller::{ControllerRequest, ControllerResponse};
use crate::error::MetadataError;
use crate::image::MetadataImage;
use crate::quorum::{QuorumDescription, QuorumLog};
use crate::runtime::Command;

/// Largest forwarded request or response.
pub const FRAME_BYTES_MAX: usize = 16 * 1024 * 1024;

/// The version of the forwarding frames this build sends and accepts. All nodes of a cluster
/// run the same build; the byte leaves a later change room to negotiate.
pub const FORWARD_WIRE_VERSION: u8 = 1;

/// A frame body: the wire version, then the message.
fn encode_body<T: Encode>(message: &T) -> Vec<u8> {
    let mut body = vec![FORWARD_WIRE_VERSION];
    message.encode(&mut body);
    body
}

/// Why a frame body was refused.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error(
        "forwarding frame of wire version {0}, this node speaks version {FORWARD_WIRE_VERSION}"
    )]
    Version(u8),
    #[error("empty forwarding frame")]
    Empty,
    #[error("undecodable forwarding frame: {0}")]
    Decode(#[from] DecodeError),
}

fn decode_body<T: Decode>(body: &[u8]) -> Result<T, BodyError> {
    let (&version, message) = body.split_first().ok_or(BodyError::Empty)?;
    if version != FORWARD_WIRE_VERSION {
        return Err(BodyError::Version(version));
    }
    Ok(shale_raft::encoding::from_slice(message)?)
}

#[derive(Debug)]
pub(crate) struct ForwardRequest {
    pub cluster_id: String,
    pub request: ControllerRequest,
}

#[derive(Debug)]
pub(crate) struct ForwardResponse {
    pub result: Result<ControllerResponse, MetadataError>,
    /// The offset of the answering controller's image when it answered.
    pub offset: i64,
}

/// One frame from the caller: a controller request, or a question about the quorum.
#[derive(Debug)]
pub(crate) enum Call {
    Controller(ForwardRequest),
    DescribeQuorum {
        cluster_id: String,
    },
    /// The caller closes the connection on purpose: whatever broker heartbeats on it is not
    /// gone.
    Goodbye,
}

#[derive(Debug)]
pub(crate) enum Answer {
    Controller(ForwardResponse),
    /// `NotController` when the answering node does not lead the quorum.
    DescribeQuorum(Result<QuorumDescription, MetadataError>),
}

/// The local controller queue the RPC server feeds.
pub(crate) type LocalSubmit = mpsc::Sender<Command>;

async fn read_frame<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match stream.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > FRAME_BYTES_MAX {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {len} bytes exceeds {FRAME_BYTES_MAX}"),
        ));
    }
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).await?;
    Ok(Some(body))
}

async fn write_frame<S: AsyncWrite + Unpin>(stream: &mut S, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|len| *len as usize <= FRAME_BYTES_MAX)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "frame too large"))?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(body);
    stream.write_all(&frame).await?;
    stream.flush().await
}

/// Connections the Raft listener handed over (preamble read) for this service.
pub(crate) type Connections = mpsc::Receiver<BoxedPeerStream>;

/// The brokers whose session link to this node is open, with how many links each has.
#[derive(Debug, Default)]
pub(crate) struct LinkedBrokers {
    links: Mutex<HashMap<i32, usize>>,
}

impl LinkedBrokers {
    /// Whether `broker_id` has a session link open to this node.
    pub(crate) fn is_linked(&self, broker_id: i32) -> bool {
        self.links
            .lock()
            .map(|links| links.get(&broker_id).is_some_and(|n| *n > 0))
            .unwrap_or(false)
    }

    fn change(&self, broker_id: i32, opened: bool) {
        let Ok(mut links) = self.links.lock() else {
            return;
        };
        let count = links.entry(broker_id).or_insert(0);
        if opened {
            *count += 1;
        } else {
            *count = count.saturating_sub(1);
            if *count == 0 {
                links.remove(&broker_id);
            }
        }
    }
}

/// The broker registration a connection carries heartbeats for; counted in [`LinkedBrokers`]
/// while it lives.
struct LinkSession {
    broker_id: i32,
    broker_epoch: i64,
    linked: Arc<LinkedBrokers>,
}

impl LinkSession {
    fn new(broker_id: i32, broker_epoch: i64, linked: Arc<LinkedBrokers>) -> Self {
        linked.change(broker_id, true);
        LinkSession {
            broker_id,
            broker_epoch,
            linked,
        }
    }
}

impl Drop for LinkSession {
    fn drop(&mut self) {
        self.linked.change(self.broker_id, false);
    }
}

/// Everything a controller RPC connection needs from its node.
#[derive(Clone)]
pub(crate) struct ServerContext {
    pub cluster_id: String,
    pub submit: LocalSubmit,
    pub images: watch::Receiver<Arc<MetadataImage>>,
    pub log: Arc<dyn QuorumLog>,
    pub linked: Arc<LinkedBrokers>,
}

/// Serves forwarded requests on the connections handed over until the task is aborted;
/// aborting it closes them all (and fences nobody).
pub(crate) fn spawn_server(mut accepted: Connections, context: ServerContext) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                stream = accepted.recv() => match stream {
                    Some(stream) => {
                        connections.spawn(serve_connection(stream, context.clone()));
                    }
                    None => return,
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    })
}

/// How a controller RPC connection ended.
enum Ending {
    /// The caller said goodbye.
    Goodbye,
    /// End of stream, reset or a failed write: the caller's process may be gone.
    Abrupt,
    /// The caller sent something undecodable; this side closed the connection.
    Refused,
}

/// The broker registration a heartbeat speaks for.
fn heartbeat_of(request: &ControllerRequest) -> Option<(i32, i64)> {
    match request {
        ControllerRequest::BrokerHeartbeat {
            broker_id,
            broker_epoch,
            ..
        } => Some((*broker_id, *broker_epoch)),
        _ => None,
    }
}

async fn serve_connection(mut stream: BoxedPeerStream, context: ServerContext) {
    let mut session: Option<LinkSession> = None;
    let ending = serve_calls(&mut stream, &context, &mut session).await;
    drop(stream);
    let Some(session) = session else { return };
    if !matches!(ending, Ending::Abrupt) {
        return;
    }
    tracing::info!(
        broker_id = session.broker_id,
        broker_epoch = session.broker_epoch,
        "a broker's session link closed without a goodbye; fencing it"
    );
    let (reply, answer) = oneshot::channel();
    let command = Command {
        request: ControllerRequest::FenceDeparted {
            broker_id: session.broker_id,
            broker_epoch: session.broker_epoch,
        },
        reply,
    };
    if context.submit.send(command).await.is_err() {
        return;
    }
    match answer.await {
        Ok(Ok(_)) => {}
        // Not the active controller any more: the new one probes or times the broker out.
        Ok(Err(err)) => tracing::debug!(%err, "fencing a departed broker failed"),
        Err(_) => {}
    }
    // Counted as linked until handled, so a probe cannot fence it a second time meanwhile.
    drop(session);
}

async fn serve_calls(
    stream: &mut BoxedPeerStream,
    context: &ServerContext,
    session: &mut Option<LinkSession>,
) -> Ending {
    let cluster_id = &context.cluster_id;
    let wrong_cluster = |theirs: &str| {
        MetadataError::InconsistentClusterId(format!(
            "the request is for cluster {theirs}, this controller serves {cluster_id}"
        ))
    };
    loop {
        let body = match read_frame(stream).await {
            Ok(Some(body)) => body,
            Ok(None) => return Ending::Abrupt,
            Err(err) => {
                tracing::debug!(%err, "closing a controller RPC connection");
                return if err.kind() == std::io::ErrorKind::InvalidData {
                    Ending::Refused
                } else {
                    Ending::Abrupt
                };
            }
        };
        let call: Call = match decode_body(&body) {
            Ok(call) => call,
            Err(err) => {
                tracing::debug!(%err, "undecodable controller RPC request");
                return Ending::Refused;
            }
        };
        let request = match call {
            Call::Controller(request) => request,
            Call::Goodbye => return Ending::Goodbye,
            Call::DescribeQuorum { cluster_id: theirs } => {
                let result = if &theirs != cluster_id {
                    Err(wrong_cluster(&theirs))
                } else {
                    context.log.describe().ok_or(MetadataError::NotController)
                };
                let body = encode_body(&Answer::DescribeQuorum(result));
                if write_frame(stream, &body).await.is_err() {
                    return Ending::Abrupt;
                }
                continue;
            }
        };
        let result = if &request.cluster_id != cluster_id {
            Err(wrong_cluster(&request.cluster_id))
        } else {
            let (reply, answer) = oneshot::channel();
            let request = request.request;
            let heartbeat = heartbeat_of(&request);
            let result = match context.submit.send(Command { request, reply }).await {
                Ok(()) => answer.await.unwrap_or(Err(MetadataError::ShutDown)),
                Err(_) => Err(MetadataError::ShutDown),
            };
            // An accepted heartbeat proves its registration alive and makes this connection
            // that registration's session link.
            let accepted = heartbeat
                .filter(|_| matches!(result, Ok(ControllerResponse::BrokerHeartbeat(Ok(_)))));
            if let Some((broker_id, broker_epoch)) = accepted {
                let same = session
                    .as_ref()
                    .is_some_and(|s| (s.broker_id, s.broker_epoch) == (broker_id, broker_epoch));
                if !same {
                    *session = Some(LinkSession::new(
                        broker_id,
                        broker_epoch,
                        Arc::clone(&context.linked),
                    ));
                }
            }
            result
        };
        let response = ForwardResponse {
            result,
            offset: context.images.borrow().offset,
        };
        let body = encode_body(&Answer::Controller(response));
        if write_frame(stream, &body).await.is_err() {
            return Ending::Abrupt;
        }
    }
}

/// Why a forwarded call failed.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The request never reached the controller: safe to retry.
    NotSent,
    /// The request may have been handled; only the answer is missing.
    Lost,
}

/// Sends one request to the controller at `addr` and waits for the answer.
pub(crate) async fn call(
    addr: SocketAddr,
    security: &dyn PeerSecurity,
    request: ForwardRequest,
    timeout: Duration,
) -> Result<ForwardResponse, CallError> {
    let cluster_id = request.cluster_id.clone();
    let call = Call::Controller(request);
    match exchange(addr, security, &cluster_id, &call, timeout).await? {
        Answer::Controller(response) => Ok(response),
        Answer::DescribeQuorum(_) => Err(CallError::Lost),
    }
}

/// Asks the voter at `addr` to describe the quorum (it answers only if it leads it).
pub(crate) async fn describe_quorum(
    addr: SocketAddr,
    security: &dyn PeerSecurity,
    cluster_id: &str,
    timeout: Duration,
) -> Result<QuorumDescription, MetadataError> {
    let call = Call::DescribeQuorum {
        cluster_id: cluster_id.to_string(),
    };
    match exchange(addr, security, cluster_id, &call, timeout).await {
        Ok(Answer::DescribeQuorum(result)) => result,
        Ok(Answer::Controller(_)) | Err(_) => Err(MetadataError::NotController),
    }
}

async fn exchange(
    addr: SocketAddr,
    security: &dyn PeerSecurity,
    cluster_id: &str,
    call: &Call,
    timeout: Duration,
) -> Result<Answer, CallError> {
    let body = encode_body(call);
    if body.len() > FRAME_BYTES_MAX {
        return Err(CallError::NotSent);
    }
    let connect = shale_raft::connect_service(
        addr,
        shale_raft::SERVICE_CONTROLLER,
        cluster_id,
        security,
        timeout,
    );
    let Ok(mut stream) = connect.await else {
        return Err(CallError::NotSent);
    };
    if write_frame(&mut stream, &body).await.is_err() {
        // Nothing can have been handled unless the whole frame arrived; a broken write means
        // it most likely did not, but it cannot be proved, so it counts as lost.
        return Err(CallError::Lost);
    }
    let answer = match tokio::time::timeout(timeout, read_frame(&mut stream)).await {
        Ok(Ok(Some(answer))) => answer,
        _ => return Err(CallError::Lost),
    };
    say_goodbye(&mut stream).await;
    decode_body(&answer).map_err(|_| CallError::Lost)
}

/// Tells the other side that this connection closes on purpose (best effort).
async fn say_goodbye(stream: &mut BoxedPeerStream) {
    let _ = write_frame(stream, &encode_body(&Call::Goodbye)).await;
}

/// One open session link: the connection and the controller at its other end.
struct OpenLink {
    controller_id: i32,
    stream: BoxedPeerStream,
}

/// The broker's side of its session link: one long-lived connection to the active
/// controller, carrying its heartbeats one at a time. Reconnects when the controller changes;
/// any failure drops the connection (the next call opens another).
///
/// A call abandoned midway (its future dropped, which only happens when the node stops)
/// closes the connection without a goodbye, so the controller fences the broker; by then it
/// is shutting down anyway.
pub(crate) struct SessionLink {
    open: tokio::sync::Mutex<Option<OpenLink>>,
    security: Arc<dyn PeerSecurity>,
}

impl SessionLink {
    /// A link whose connections `security` secures; opened by the first call.
    pub(crate) fn new(security: Arc<dyn PeerSecurity>) -> SessionLink {
        SessionLink {
            open: tokio::sync::Mutex::new(None),
            security,
        }
    }

    /// Sends one request on the link to `controller_id` at `addr` (opening it if needed) and
    /// waits up to `timeout` for the answer.
    pub(crate) async fn call(
        &self,
        controller_id: i32,
        addr: SocketAddr,
        request: ForwardRequest,
        timeout: Duration,
    ) -> Result<ForwardResponse, CallError> {
        let cluster_id = request.cluster_id.clone();
        let body = encode_body(&Call::Controller(request));
        if body.len() > FRAME_BYTES_MAX {
            return Err(CallError::NotSent);
        }
        let mut open = self.open.lock().await;
        if let Some(mut stale) = open.take_if(|link| link.controller_id != controller_id) {
            say_goodbye(&mut stale.stream).await;
        }
        let mut link = match open.take() {
            Some(link) => link,
            None => {
                let connect = shale_raft::connect_service(
                    addr,
                    shale_raft::SERVICE_CONTROLLER,
                    &cluster_id,
                    self.security.as_ref(),
                    timeout,
                );
                let Ok(stream) = connect.await else {
                    return Err(CallError::NotSent);
                };
                OpenLink {
                    controller_id,
                    stream,
                }
            }
        };
        if write_frame(&mut link.stream, &body).await.is_err() {
            return Err(CallError::Lost);
        }
        let answer = match tokio::time::timeout(timeout, read_frame(&mut link.stream)).await {
            Ok(Ok(Some(answer))) => answer,
            Ok(_) => return Err(CallError::Lost),
            Err(_) => {
                // The answer may still come; the goodbye queued behind it ends the link
                // cleanly once the controller has sent it.
                say_goodbye(&mut link.stream).await;
                return Err(CallError::Lost);
            }
        };
        match decode_body(&answer) {
            Ok(Answer::Controller(response)) => {
                *open = Some(link);
                Ok(response)
            }
            _ => {
                say_goodbye(&mut link.stream).await;
                Err(CallError::Lost)
            }
        }
    }

    /// Closes the link, if open, with a goodbye: the broker is not gone.
    pub(crate) async fn close(&self) {
        if let Some(mut link) = self.open.lock().await.take() {
            say_goodbye(&mut link.stream).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    use super::*;
    use crate::controller::HeartbeatReply;
    use crate::local_log::LocalQuorumLog;

    const CLUSTER: &str = "link-test";
    const WAIT_MAX: Duration = Duration::from_secs(30);

    struct Server {
        addr: SocketAddr,
        linked: Arc<LinkedBrokers>,
        /// FenceDeparted requests the controller received, as (broker id, epoch).
        fences: mpsc::UnboundedReceiver<(i32, i64)>,
        _dir: tempfile::TempDir,
        _tasks: Vec<JoinHandle<()>>,
    }

    /// A controller RPC server whose controller accepts every heartbeat.
    async fn server() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let log: Arc<dyn QuorumLog> = Arc::new(
            LocalQuorumLog::open(1, dir.path().to_path_buf())
                .await
                .unwrap(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (to_server, connections) = mpsc::channel(8);
        let acceptor = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut preamble = vec![0u8; 6 + CLUSTER.len()];
                stream.read_exact(&mut preamble).await.unwrap();
                to_server
                    .send(Box::new(stream) as BoxedPeerStream)
                    .await
                    .unwrap();
            }
        });
        let (submit, mut commands) = mpsc::channel::<Command>(8);
        let (fenced, fences) = mpsc::unbounded_channel();
        let controller = tokio::spawn(async move {
            while let Some(Command { request, reply }) = commands.recv().await {
                let response = match request {
                    ControllerRequest::BrokerHeartbeat { .. } => {
                        ControllerResponse::BrokerHeartbeat(Ok(HeartbeatReply {
                            is_caught_up: true,
                            is_fenced: false,
                            should_shut_down: false,
                        }))
                    }
                    ControllerRequest::FenceDeparted {
                        broker_id,
                        broker_epoch,
                    } => {
                        fenced.send((broker_id, broker_epoch)).unwrap();
                        ControllerResponse::FenceDeparted(true)
                    }
                    other => panic!("unexpected {other:?}"),
                };
                let _ = reply.send(Ok(response));
            }
        });
        let linked = Arc::new(LinkedBrokers::default());
        let (_, images) = watch::channel(Arc::new(MetadataImage::empty(CLUSTER)));
        let rpc = spawn_server(
            connections,
            ServerContext {
                cluster_id: CLUSTER.into(),
                submit,
                images,
                log,
                linked: Arc::clone(&linked),
            },
        );
        Server {
            addr,
            linked,
            fences,
            _dir: dir,
            _tasks: vec![acceptor, controller, rpc],
        }
    }

    fn heartbeat(broker_id: i32, broker_epoch: i64) -> ForwardRequest {
        ForwardRequest {
            cluster_id: CLUSTER.into(),
            request: ControllerRequest::BrokerHeartbeat {
                broker_id,
                broker_epoch,
                want_fence: false,
                want_shutdown: false,
                current_metadata_offset: 0,
            },
        }
    }

    /// Waits until the server no longer counts a link of `broker_id`: any fence its closing
    /// caused has been handled by then.
    async fn until_unlinked(server: &Server, broker_id: i32) {
        tokio::time::timeout(WAIT_MAX, async {
            while server.linked.is_linked(broker_id) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap();
    }

    #[test]
    fn frames_carry_the_wire_version_and_other_versions_are_refused() {
        let body = encode_body(&Call::Goodbye);
        assert_eq!(body[0], FORWARD_WIRE_VERSION);
        assert!(matches!(decode_body::<Call>(&body), Ok(Call::Goodbye)));
        let mut newer = body.clone();
        newer[0] = FORWARD_WIRE_VERSION + 1;
        let err = decode_body::<Call>(&newer).unwrap_err();
        assert!(matches!(err, BodyError::Version(2)), "{err}");
        assert!(decode_body::<Call>(&[]).is_err());
        assert!(decode_body::<Call>(&[FORWARD_WIRE_VERSION, 0xee]).is_err());
    }

    #[tokio::test]
    async fn a_link_closed_without_a_goodbye_fences_its_broker() {
        let mut server = server().await;
        let link = SessionLink::new(shale_raft::plaintext());
        for _ in 0..3 {
            let answer = link.call(1, server.addr, heartbeat(7, 42), WAIT_MAX).await;
            assert!(matches!(answer, Ok(ForwardResponse { result: Ok(_), .. })));
        }
        assert!(server.linked.is_linked(7));
        // The broker's process dies: its socket closes, nothing is said.
        drop(link);
        let fence = tokio::time::timeout(WAIT_MAX, server.fences.recv()).await;
        assert_eq!(fence.unwrap(), Some((7, 42)));
        until_unlinked(&server, 7).await;
    }

    #[tokio::test]
    async fn a_link_closed_with_a_goodbye_fences_nobody() {
        let mut server = server().await;
        let link = SessionLink::new(shale_raft::plaintext());
        link.call(1, server.addr, heartbeat(7, 42), WAIT_MAX)
            .await
            .unwrap();
        assert!(server.linked.is_linked(7));
        link.close().await;
        until_unlinked(&server, 7).await;
        // A heartbeat on a connection of its own says goodbye too.
        call(
            server.addr,
            &shale_raft::Plaintext,
            heartbeat(8, 43),
            WAIT_MAX,
        )
        .await
        .unwrap();
        until_unlinked(&server, 8).await;
        // The link reopens on the next call, and a new controller gets a link of its own.
        link.call(1, server.addr, heartbeat(7, 44), WAIT_MAX)
            .await
            .unwrap();
        link.call(2, server.addr, heartbeat(7, 44), WAIT_MAX)
            .await
            .unwrap();
        link.close().await;
        until_unlinked(&server, 7).await;
        assert!(server.fences.try_recv().is_err(), "nobody was fenced");
    }
}
