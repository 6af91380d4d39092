//! Forwarding controller requests to the active controller.
//!
//! A node that is not the active controller sends a request over TCP to the controller listener
//! of the voter that leads the quorum, the port Raft uses: the connection preamble
//! (`shale_raft::connect_service`) selects this service and names the cluster. Frames are `[body length u32 BE][bincode body]`, bounded to
//! [`FRAME_BYTES_MAX`]; a connection carries any number of request/response pairs in turn. The
//! answer carries the offset of the leader's image when it answered, which includes the
//! request's records: the caller waits for its own image to reach it, so a forwarded submit
//! has the same read-your-writes guarantee as a local one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::controller::{ControllerRequest, ControllerResponse};
use crate::error::MetadataError;
use crate::image::MetadataImage;
use crate::quorum::{QuorumDescription, QuorumLog};
use crate::runtime::Command;

/// Largest forwarded request or response.
pub const FRAME_BYTES_MAX: usize = 16 * 1024 * 1024;

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ForwardRequest {
    pub cluster_id: String,
    pub request: ControllerRequest,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ForwardResponse {
    pub result: Result<ControllerResponse, MetadataError>,
    /// The offset of the answering controller's image when it answered.
    pub offset: i64,
}

/// One frame from the caller: a controller request, or a question about the quorum.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Call {
    Controller(ForwardRequest),
    DescribeQuorum { cluster_id: String },
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Answer {
    Controller(ForwardResponse),
    /// `NotController` when the answering node does not lead the quorum.
    DescribeQuorum(Result<QuorumDescription, MetadataError>),
}

/// The local controller queue the RPC server feeds.
pub(crate) type LocalSubmit = mpsc::Sender<Command>;

async fn read_frame(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
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

async fn write_frame(stream: &mut TcpStream, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|len| *len as usize <= FRAME_BYTES_MAX)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "frame too large"))?;
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await
}

/// Connections the Raft listener handed over (preamble read) for this service.
pub(crate) type Connections = mpsc::Receiver<TcpStream>;

/// Serves forwarded requests on the connections handed over until the task is aborted;
/// aborting it closes them all.
pub(crate) fn spawn_server(
    mut accepted: Connections,
    cluster_id: String,
    submit: LocalSubmit,
    images: watch::Receiver<Arc<MetadataImage>>,
    log: Arc<dyn QuorumLog>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                stream = accepted.recv() => match stream {
                    Some(stream) => {
                        connections.spawn(serve_connection(
                            stream,
                            cluster_id.clone(),
                            submit.clone(),
                            images.clone(),
                            Arc::clone(&log),
                        ));
                    }
                    None => return,
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    })
}

async fn serve_connection(
    mut stream: TcpStream,
    cluster_id: String,
    submit: LocalSubmit,
    images: watch::Receiver<Arc<MetadataImage>>,
    log: Arc<dyn QuorumLog>,
) {
    let wrong_cluster = |theirs: &str| {
        MetadataError::InconsistentClusterId(format!(
            "the request is for cluster {theirs}, this controller serves {cluster_id}"
        ))
    };
    loop {
        let body = match read_frame(&mut stream).await {
            Ok(Some(body)) => body,
            Ok(None) => return,
            Err(err) => {
                tracing::debug!(%err, "closing a controller RPC connection");
                return;
            }
        };
        let call: Call = match bincode::deserialize(&body) {
            Ok(call) => call,
            Err(err) => {
                tracing::debug!(%err, "undecodable controller RPC request");
                return;
            }
        };
        let request = match call {
            Call::Controller(request) => request,
            Call::DescribeQuorum { cluster_id: theirs } => {
                let result = if theirs != cluster_id {
                    Err(wrong_cluster(&theirs))
                } else {
                    log.describe().ok_or(MetadataError::NotController)
                };
                let Ok(body) = bincode::serialize(&Answer::DescribeQuorum(result)) else {
                    return;
                };
                if write_frame(&mut stream, &body).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let result = if request.cluster_id != cluster_id {
            Err(wrong_cluster(&request.cluster_id))
        } else {
            let (reply, answer) = oneshot::channel();
            match submit
                .send(Command {
                    request: request.request,
                    reply,
                })
                .await
            {
                Ok(()) => answer.await.unwrap_or(Err(MetadataError::ShutDown)),
                Err(_) => Err(MetadataError::ShutDown),
            }
        };
        let response = ForwardResponse {
            result,
            offset: images.borrow().offset,
        };
        let Ok(body) = bincode::serialize(&Answer::Controller(response)) else {
            return;
        };
        if write_frame(&mut stream, &body).await.is_err() {
            return;
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
    request: ForwardRequest,
    timeout: Duration,
) -> Result<ForwardResponse, CallError> {
    let cluster_id = request.cluster_id.clone();
    match exchange(addr, &cluster_id, &Call::Controller(request), timeout).await? {
        Answer::Controller(response) => Ok(response),
        Answer::DescribeQuorum(_) => Err(CallError::Lost),
    }
}

/// Asks the voter at `addr` to describe the quorum (it answers only if it leads it).
pub(crate) async fn describe_quorum(
    addr: SocketAddr,
    cluster_id: &str,
    timeout: Duration,
) -> Result<QuorumDescription, MetadataError> {
    let call = Call::DescribeQuorum {
        cluster_id: cluster_id.to_string(),
    };
    match exchange(addr, cluster_id, &call, timeout).await {
        Ok(Answer::DescribeQuorum(result)) => result,
        Ok(Answer::Controller(_)) | Err(_) => Err(MetadataError::NotController),
    }
}

async fn exchange(
    addr: SocketAddr,
    cluster_id: &str,
    call: &Call,
    timeout: Duration,
) -> Result<Answer, CallError> {
    let body = bincode::serialize(call).map_err(|_| CallError::NotSent)?;
    if body.len() > FRAME_BYTES_MAX {
        return Err(CallError::NotSent);
    }
    let connect =
        shale_raft::connect_service(addr, shale_raft::SERVICE_CONTROLLER, cluster_id, timeout);
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
    bincode::deserialize(&answer).map_err(|_| CallError::Lost)
}
