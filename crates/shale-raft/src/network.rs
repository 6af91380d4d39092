//! TCP transport between voters (openraft's `RaftNetwork`), the server side of the controller
//! listener, and a fault-injection switch for tests. Every connection, both ways, is secured by
//! the node's [`PeerSecurity`] before its preamble (`security.rs`).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError as OpenRaftError,
    RemoteError, Unreachable,
};
use openraft::network::{Backoff, RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::log_store::LogStore;
use crate::progress::ProgressTracker;
use crate::security::{BoxedPeerStream, PeerSecurity};
use crate::state_machine::SnapshotSlot;
use crate::types::{NodeId, Raft, TypeConfig};
use crate::wire::{
    self, FetchBody, FetchRequest, FetchResponse, FrameError, Request, Response, SERVICE_RAFT,
};

/// Entries per AppendEntries request. Requests that would exceed [`wire::MAX_FRAME_BYTES`] are
/// refused locally with `PayloadTooLarge`, which makes openraft retry with fewer entries.
pub const MAX_ENTRIES_PER_APPEND: u64 = 256;
/// Allowance for an entry's framing and log id on top of its application bytes.
const ENTRY_OVERHEAD_BYTES: usize = 128;
/// Snapshot bytes per InstallSnapshot chunk.
pub const SNAPSHOT_CHUNK_BYTES: u64 = 4 * 1024 * 1024;
/// Upper bound of entries returned to an observer per fetch.
const FETCH_MAX_ENTRIES: usize = 1024;
/// How long a new connection may take to send its preamble.
const PREAMBLE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may sit idle on the server before it is closed.
const IDLE_CONNECTION_TIMEOUT: Duration = Duration::from_secs(120);
/// Delay before retrying a peer that refused connections.
const UNREACHABLE_BACKOFF: Duration = Duration::from_millis(200);

/// Per-link switches that drop traffic between two nodes, for partition tests. Share one instance
/// between all nodes of a test cluster; a cut link fails in both directions.
#[derive(Debug, Default)]
pub struct LinkFaults {
    cut: Mutex<HashSet<(NodeId, NodeId)>>,
}

impl LinkFaults {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn links(&self) -> std::sync::MutexGuard<'_, HashSet<(NodeId, NodeId)>> {
        self.cut.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops all traffic between `a` and `b`.
    pub fn cut(&self, a: NodeId, b: NodeId) {
        let mut links = self.links();
        links.insert((a, b));
        links.insert((b, a));
    }

    /// Restores traffic between `a` and `b`.
    pub fn heal(&self, a: NodeId, b: NodeId) {
        let mut links = self.links();
        links.remove(&(a, b));
        links.remove(&(b, a));
    }

    /// Cuts `node` off from every node in `others`.
    pub fn isolate(&self, node: NodeId, others: &[NodeId]) {
        for other in others {
            self.cut(node, *other);
        }
    }

    pub fn heal_all(&self) {
        self.links().clear();
    }

    pub fn is_cut(&self, from: NodeId, to: NodeId) -> bool {
        self.links().contains(&(from, to))
    }
}

/// A lazily connected, request/response connection to one peer.
pub struct PeerConnection {
    self_id: NodeId,
    target: NodeId,
    addr: Option<SocketAddr>,
    stream: Option<BufReader<BufWriter<BoxedPeerStream>>>,
    faults: Arc<LinkFaults>,
    /// Sent in the preamble; the peer refuses connections from another cluster.
    cluster_id: Arc<str>,
    /// Secures each new connection before its preamble.
    security: Arc<dyn PeerSecurity>,
    /// Told about every answer, for DescribeQuorum (voters only).
    progress: Option<Arc<ProgressTracker>>,
    /// Whether the last connection attempt was refused authentication (logged once a run).
    refused_last: bool,
}

impl std::fmt::Debug for PeerConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerConnection")
            .field("self_id", &self.self_id)
            .field("target", &self.target)
            .field("addr", &self.addr)
            .field("connected", &self.stream.is_some())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("peer {0} unreachable: {1}")]
    Unreachable(NodeId, String),
    #[error("rpc to {0} failed: {1}")]
    Failed(NodeId, FrameError),
    #[error("peer {0} answered: {1}")]
    Remote(NodeId, String),
}

impl PeerConnection {
    pub fn new(
        self_id: NodeId,
        target: NodeId,
        addr: Option<SocketAddr>,
        faults: Arc<LinkFaults>,
        cluster_id: Arc<str>,
        security: Arc<dyn PeerSecurity>,
    ) -> Self {
        Self {
            self_id,
            target,
            addr,
            stream: None,
            faults,
            cluster_id,
            security,
            progress: None,
            refused_last: false,
        }
    }

    /// Reports every answer from the target to `progress`.
    pub(crate) fn with_progress(mut self, progress: Arc<ProgressTracker>) -> Self {
        self.progress = Some(progress);
        self
    }

    pub fn target(&self) -> NodeId {
        self.target
    }

    /// Sends one request and waits for its response within `timeout`; on any failure the
    /// connection is dropped and re-established by the next call.
    pub async fn call(
        &mut self,
        request: &Request,
        timeout: Duration,
    ) -> Result<Response, CallError> {
        if self.faults.is_cut(self.self_id, self.target) {
            self.stream = None;
            return Err(CallError::Unreachable(self.target, "link cut".into()));
        }
        let Some(addr) = self.addr else {
            return Err(CallError::Unreachable(self.target, "no address".into()));
        };
        let deadline = tokio::time::Instant::now() + timeout;
        if self.stream.is_none() {
            let connect = async {
                let stream = TcpStream::connect(addr).await?;
                let _ = stream.set_nodelay(true);
                self.security.connect(stream, addr).await
            };
            let connect = tokio::time::timeout_at(deadline, connect).await;
            let mut stream = match connect {
                Ok(Ok(stream)) => {
                    self.refused_last = false;
                    stream
                }
                Ok(Err(e)) => {
                    // A refused authentication is a configuration problem the operator must
                    // see; retries repeat it, so it is logged once until a connection works.
                    if e.kind() == std::io::ErrorKind::PermissionDenied && !self.refused_last {
                        tracing::warn!(node = self.target, error = %e, "cannot authenticate to a controller listener");
                    }
                    self.refused_last = e.kind() == std::io::ErrorKind::PermissionDenied;
                    return Err(CallError::Unreachable(self.target, e.to_string()));
                }
                Err(_) => {
                    return Err(CallError::Unreachable(
                        self.target,
                        "connect timed out".into(),
                    ))
                }
            };
            let preamble = wire::encode_preamble(SERVICE_RAFT, &self.cluster_id)
                .map_err(|e| CallError::Unreachable(self.target, e.to_string()))?;
            let hello = async {
                stream.write_all(&preamble).await?;
                stream.flush().await
            };
            match tokio::time::timeout_at(deadline, hello).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(CallError::Unreachable(self.target, e.to_string())),
                Err(_) => {
                    return Err(CallError::Unreachable(
                        self.target,
                        "handshake timed out".into(),
                    ))
                }
            }
            self.stream = Some(BufReader::new(BufWriter::new(stream)));
        }
        let Some(stream) = self.stream.as_mut() else {
            return Err(CallError::Unreachable(self.target, "not connected".into()));
        };
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        let exchange = async {
            wire::write_frame(stream, request).await?;
            wire::read_frame::<_, Response>(stream).await
        };
        match wire::with_timeout(remaining, exchange).await {
            Ok(Response::Error(message)) => {
                self.stream = None;
                Err(CallError::Remote(self.target, message))
            }
            Ok(response) => {
                if let Some(progress) = &self.progress {
                    progress.voter_answered(self.target);
                }
                Ok(response)
            }
            Err(e) => {
                self.stream = None;
                Err(CallError::Failed(self.target, e))
            }
        }
    }
}

/// Opens a connection to `service` on a controller listener: connects, secures the stream
/// with `security` and sends the preamble. The metadata layer uses it to reach the active
/// controller on the port Raft uses.
pub async fn connect_service(
    addr: SocketAddr,
    service: u8,
    cluster_id: &str,
    security: &dyn PeerSecurity,
    timeout: Duration,
) -> std::io::Result<BoxedPeerStream> {
    let preamble = wire::encode_preamble(service, cluster_id)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    let connect = async {
        let stream = TcpStream::connect(addr).await?;
        let _ = stream.set_nodelay(true);
        let mut stream = security.connect(stream, addr).await?;
        stream.write_all(&preamble).await?;
        stream.flush().await?;
        Ok(stream)
    };
    tokio::time::timeout(timeout, connect)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

fn to_rpc_error<E: std::error::Error>(e: CallError) -> RPCError<NodeId, BasicNode, E> {
    match e {
        CallError::Unreachable(..) => RPCError::Unreachable(Unreachable::new(&e)),
        CallError::Failed(..) | CallError::Remote(..) => RPCError::Network(NetworkError::new(&e)),
    }
}

fn unexpected<E: std::error::Error>(target: NodeId) -> RPCError<NodeId, BasicNode, E> {
    let e = CallError::Remote(target, "mismatched response type".into());
    RPCError::Network(NetworkError::new(&e))
}

/// openraft's network factory: one [`PeerConnection`] per replication stream or vote round.
#[derive(Debug, Clone)]
pub struct NetworkFactory {
    pub self_id: NodeId,
    pub faults: Arc<LinkFaults>,
    pub cluster_id: Arc<str>,
    pub security: Arc<dyn PeerSecurity>,
    pub(crate) progress: Arc<ProgressTracker>,
}

impl RaftNetworkFactory<TypeConfig> for NetworkFactory {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Self::Network {
        PeerConnection::new(
            self.self_id,
            target,
            node.addr.parse().ok(),
            self.faults.clone(),
            self.cluster_id.clone(),
            self.security.clone(),
        )
        .with_progress(self.progress.clone())
    }
}

impl RaftNetwork<TypeConfig> for PeerConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, OpenRaftError<NodeId>>>
    {
        let estimated_bytes: usize = rpc
            .entries
            .iter()
            .map(|entry| match &entry.payload {
                openraft::EntryPayload::Normal(batch) => {
                    batch.size_bytes() + batch.0.len() * 8 + ENTRY_OVERHEAD_BYTES
                }
                _ => ENTRY_OVERHEAD_BYTES * 4,
            })
            .sum();
        if estimated_bytes > wire::MAX_FRAME_BYTES && rpc.entries.len() > 1 {
            let hint = (rpc.entries.len() / 2) as u64;
            return Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(hint),
            ));
        }
        let response = self
            .call(&Request::AppendEntries(rpc), option.hard_ttl())
            .await
            .map_err(to_rpc_error)?;
        match response {
            Response::AppendEntries(Ok(r)) => Ok(r),
            Response::AppendEntries(Err(e)) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            _ => Err(unexpected(self.target)),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, OpenRaftError<NodeId, InstallSnapshotError>>,
    > {
        let response = self
            .call(&Request::InstallSnapshot(rpc), option.hard_ttl())
            .await
            .map_err(to_rpc_error)?;
        match response {
            Response::InstallSnapshot(Ok(r)) => Ok(r),
            Response::InstallSnapshot(Err(e)) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            _ => Err(unexpected(self.target)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, OpenRaftError<NodeId>>> {
        let response = self
            .call(&Request::Vote(rpc), option.hard_ttl())
            .await
            .map_err(to_rpc_error)?;
        match response {
            Response::Vote(Ok(r)) => Ok(r),
            Response::Vote(Err(e)) => Err(RPCError::RemoteError(RemoteError::new(self.target, e))),
            _ => Err(unexpected(self.target)),
        }
    }

    fn backoff(&self) -> Backoff {
        Backoff::new(std::iter::repeat(UNREACHABLE_BACKOFF))
    }
}

/// What the listener needs to answer voters and observers.
#[derive(Clone)]
pub struct ServerContext {
    pub raft: Raft,
    pub log: LogStore,
    pub snapshots: Arc<SnapshotSlot>,
    /// Connections from another cluster are refused.
    pub cluster_id: Arc<str>,
    /// Where connections asking for [`wire::SERVICE_CONTROLLER`] go (preamble consumed).
    pub controller_service: Option<mpsc::Sender<BoxedPeerStream>>,
    /// Authenticates every accepted connection before its preamble is read.
    pub security: Arc<dyn PeerSecurity>,
    pub(crate) progress: Arc<ProgressTracker>,
}

/// Accepts connections until the returned task is aborted; aborting it also closes every
/// connection it accepted.
pub fn spawn_server(listener: TcpListener, ctx: ServerContext) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let ctx = ctx.clone();
                        connections.spawn(async move {
                            if let Err(e) = serve_connection(stream, peer, ctx).await {
                                tracing::debug!(%peer, error = %e, "raft connection closed");
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed on the controller listener");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    })
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    ctx: ServerContext,
) -> Result<(), FrameError> {
    let _ = stream.set_nodelay(true);
    // Nothing of a connection is read as a request before it authenticated as a node.
    let secured = tokio::time::timeout(PREAMBLE_TIMEOUT, ctx.security.accept(stream, peer)).await;
    let mut stream = match secured {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::info!(%peer, error = %e, "refused a connection on the controller listener: not authenticated as a node");
            return Ok(());
        }
        Err(_) => {
            tracing::info!(%peer, "refused a connection on the controller listener: authentication timed out");
            return Ok(());
        }
    };
    // Read unbuffered: a connection handed to another service must not lose buffered bytes.
    let (service, cluster_id) =
        wire::with_timeout(PREAMBLE_TIMEOUT, wire::read_preamble(&mut stream)).await?;
    if cluster_id != *ctx.cluster_id {
        let reason = format!(
            "this controller belongs to cluster {:?}, the peer to cluster {cluster_id:?}",
            &*ctx.cluster_id
        );
        tracing::warn!(%reason, "refused a connection from another cluster");
        let _ = wire::write_frame(&mut stream, &Response::Error(reason.clone())).await;
        return Err(FrameError::Decode(reason));
    }
    match service {
        SERVICE_RAFT => {}
        wire::SERVICE_CONTROLLER => {
            let Some(to) = &ctx.controller_service else {
                return Err(FrameError::Decode("no controller service here".into()));
            };
            // The service owns the connection from here on.
            return match to.send(stream).await {
                Ok(()) => Ok(()),
                Err(_) => Err(FrameError::Decode("the controller service stopped".into())),
            };
        }
        other => return Err(FrameError::Decode(format!("unknown service {other}"))),
    }
    let mut stream = BufReader::new(BufWriter::new(stream));
    loop {
        let request = wire::with_timeout(
            IDLE_CONNECTION_TIMEOUT,
            wire::read_frame::<_, Request>(&mut stream),
        )
        .await;
        let request = match request {
            Ok(request) => request,
            Err(FrameError::Decode(reason)) => {
                // Answer so the peer sees why, then drop the connection: framing may be lost.
                let _ = wire::write_frame(&mut stream, &Response::Error(reason.clone())).await;
                return Err(FrameError::Decode(reason));
            }
            Err(e) => return Err(e),
        };
        let response = handle_request(&ctx, request).await;
        wire::write_frame(&mut stream, &response).await?;
    }
}

async fn handle_request(ctx: &ServerContext, request: Request) -> Response {
    match request {
        Request::AppendEntries(rpc) => Response::AppendEntries(ctx.raft.append_entries(rpc).await),
        Request::Vote(rpc) => Response::Vote(ctx.raft.vote(rpc).await),
        Request::InstallSnapshot(rpc) => {
            Response::InstallSnapshot(ctx.raft.install_snapshot(rpc).await)
        }
        Request::Fetch(fetch) => Response::Fetch(handle_fetch(ctx, fetch).await),
    }
}

/// Serves committed entries to an observer, waiting up to `max_wait_ms` for new ones.
async fn handle_fetch(ctx: &ServerContext, fetch: FetchRequest) -> FetchResponse {
    let max_wait = Duration::from_millis(fetch.max_wait_ms.min(10_000));
    let mut metrics = ctx.raft.metrics();
    let applied_index =
        |m: &openraft::RaftMetrics<NodeId, BasicNode>| m.last_applied.map(|id| id.index);
    let deadline = tokio::time::Instant::now() + max_wait;
    {
        let m = metrics.borrow();
        if m.state == openraft::ServerState::Leader {
            let leader_end = m.last_log_index.map_or(0, |i| i + 1);
            ctx.progress
                .observer_fetched(fetch.observer_id, fetch.from_index, leader_end);
        }
    }
    loop {
        let (leader_id, applied) = {
            let m = metrics.borrow_and_update();
            (m.current_leader, applied_index(&m))
        };
        let has_new = applied.is_some_and(|applied| applied >= fetch.from_index);
        if has_new || tokio::time::Instant::now() >= deadline {
            let body = fetch_body(ctx, fetch.from_index, applied, fetch.max_bytes);
            return FetchResponse { leader_id, body };
        }
        if tokio::time::timeout_at(deadline, metrics.changed())
            .await
            .is_ok_and(|r| r.is_err())
        {
            // The node stopped; answer with what it has.
            let body = fetch_body(ctx, fetch.from_index, applied, fetch.max_bytes);
            return FetchResponse { leader_id, body };
        }
    }
}

fn fetch_body(
    ctx: &ServerContext,
    from_index: u64,
    applied: Option<u64>,
    max_bytes: u64,
) -> FetchBody {
    let Some(applied) = applied else {
        return FetchBody::Entries {
            batches: Vec::new(),
            next_index: from_index,
        };
    };
    match ctx.log.read_range(from_index, applied, FETCH_MAX_ENTRIES) {
        Ok(entries) => {
            let mut batches = Vec::new();
            let mut next_index = from_index;
            let mut bytes = 0u64;
            for entry in entries {
                let index = entry.log_id.index;
                if let openraft::EntryPayload::Normal(batch) = entry.payload {
                    let size = batch.size_bytes() as u64;
                    if !batches.is_empty() && bytes + size > max_bytes {
                        break;
                    }
                    bytes += size;
                    batches.push((index, batch.0));
                }
                next_index = index + 1;
            }
            FetchBody::Entries {
                batches,
                next_index,
            }
        }
        Err(_first_available) => match ctx.snapshots.current() {
            Some(snapshot) => FetchBody::Snapshot {
                last_index: snapshot.last_index().unwrap_or(0),
                data: snapshot.data.clone(),
            },
            None => FetchBody::Entries {
                batches: Vec::new(),
                next_index: from_index,
            },
        },
    }
}
