//! `MetadataNode`: drives the controller on a quorum log and publishes images.
//!
//! Two tasks per node:
//! - the controller task takes requests one at a time: it runs the state machine against the
//!   latest image, appends the records as one entry (durable before it returns), waits until
//!   the applier has made the entry visible, then answers. Serial handling is what makes the
//!   pure state machine correct: each request sees every earlier one.
//! - the applier follows the committed log, replays entries into a new image, publishes it
//!   through a `watch` channel, and writes a snapshot every `snapshot_every_records` records.
//!
//! Every node also registers its own broker, unfences it and heartbeats every
//! `broker.heartbeat.interval.ms`; on the active controller the same loop ticks the controller
//! so silent brokers are fenced after `broker.session.timeout.ms`. A dead broker is usually
//! fenced much sooner: its heartbeats run on a long-lived session link to the active
//! controller, which fences it when that link closes without a goodbye (see `forward`), and a
//! voter that becomes the active controller probes the ports of the brokers not linked to it
//! (`probe_departed_on_activation`), so a broker that died with the previous controller is
//! fenced too. Its restarted process then registers at once.
//!
//! [`QuorumMode`] picks the log: a single node on local files (the default), or a voter or an
//! observer of a Raft quorum ([`crate::RaftQuorumLog`]). With a quorum only the leader's
//! controller task acts; `submit` elsewhere forwards the request to the leader's controller
//! listener (the one port a voter has; see `forward`) and then waits until the local image includes the answer. A new
//! leader first commits a barrier entry, so its controller starts from an image holding every
//! earlier commit, and starts every broker's session afresh.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use shale_raft::{LinkFaults, ObserverConfig, PeerSecurity, RaftConfig};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::{Duration, Instant};
use uuid::Uuid;

use crate::controller::{Controller, ControllerConfig, ControllerRequest, ControllerResponse};
use crate::error::MetadataError;
use crate::forward::{self, CallError, ForwardRequest, ForwardResponse, LinkedBrokers};
use crate::image::MetadataImage;
use crate::liveness;
use crate::local_log::LocalQuorumLog;
use crate::meta_properties;
use crate::quorum::{CommittedRead, QuorumDescription, QuorumLeader, QuorumLog};
use crate::raft_log::RaftQuorumLog;
use crate::records::{self, Endpoint, FeatureRange};

/// Kafka's metadata.version feature level for 4.0-IV3.
pub const METADATA_VERSION_LEVEL: i16 = 25;
/// The subdirectory of the metadata log dir holding the log, as Kafka names it.
pub const METADATA_LOG_SUBDIR: &str = "__cluster_metadata-0";
/// The subdirectory of the metadata log dir holding a Raft voter's log, vote and snapshots.
pub const RAFT_LOG_SUBDIR: &str = "__cluster_metadata-raft";
/// Kafka's `controller.quorum.request.timeout.ms` is 2000 per RPC; a submit retries across
/// elections for up to this long in total.
pub const DEFAULT_QUORUM_REQUEST_TIMEOUT_MS: u64 = 30_000;
/// Pause before asking again when no controller is known or the last one refused.
const FORWARD_RETRY_BACKOFF: Duration = Duration::from_millis(50);
const READ_BATCH_MAX: usize = 1024;
const REQUEST_QUEUE_MAX: usize = 1024;
/// Forwarding connections accepted before the controller service starts wait here.
const CONTROLLER_CONNECTIONS_QUEUED: usize = 64;

/// One voter of the metadata quorum, as every node is configured with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuorumVoter {
    pub node_id: i32,
    /// Its controller listener (the address in `controller.quorum.voters`): Raft, observer
    /// fetches and forwarded controller requests share it.
    pub addr: SocketAddr,
}

/// Which metadata log a node runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum QuorumMode {
    /// A single combined node on a [`LocalQuorumLog`].
    #[default]
    Single,
    /// A combined node voting in a Raft quorum of `voters` (which must include it).
    Voter {
        voters: Vec<QuorumVoter>,
        /// Where this node's controller listener binds.
        listen_addr: SocketAddr,
    },
    /// A broker-only node following the quorum of `voters` without voting.
    Observer { voters: Vec<QuorumVoter> },
}

/// A pre-bound controller listener and fault switches for
/// [`MetadataNode::start_with_quorum_io`]; the default binds the configured address and injects
/// no faults.
#[derive(Debug, Default)]
pub struct QuorumIo {
    pub listener: Option<TcpListener>,
    /// Shared by the nodes of a test cluster to cut Raft links.
    pub faults: Option<Arc<LinkFaults>>,
}

#[derive(Debug, Clone)]
pub struct MetadataNodeConfig {
    pub node_id: i32,
    /// `metadata.log.dir` (Kafka falls back to the first of `log.dirs`).
    pub metadata_log_dir: PathBuf,
    pub log_dirs: Vec<PathBuf>,
    pub controller: ControllerConfig,
    pub broker_listeners: Vec<Endpoint>,
    pub rack: Option<String>,
    /// The cluster id to use or expect; `None` takes the stored one, or a new one.
    pub cluster_id: Option<String>,
    /// Write a snapshot (and drop the log it covers) every this many records; 0: never.
    pub snapshot_every_records: u64,
    /// Features finalized when a new cluster is created.
    pub bootstrap_features: Vec<(String, i16)>,
    /// The metadata log: single node (default), Raft voter or observer.
    pub quorum: QuorumMode,
    /// How long a submit keeps looking for the active controller (with a quorum).
    pub quorum_request_timeout_ms: u64,
    /// Whether this node is a broker that registers and heartbeats; `false` on a
    /// controller-only node, which then never hosts partitions.
    pub register_broker: bool,
    /// Refuse to start when no log directory is formatted and no cluster id is given (Kafka's
    /// rule for quorum nodes; a single combined node creates its cluster id itself).
    pub require_formatted: bool,
    /// The broker's logs were not shut down cleanly last time (no clean-shutdown marker):
    /// reported in its registration so the controller does not elect it from ISRs where it
    /// is the last member (KIP-966).
    pub unclean_shutdown: bool,
    /// Secures every connection of the controller port, both ways: Raft, observer fetches
    /// and forwarded requests (default: plain text, for trusted networks only).
    pub peer_security: Arc<dyn PeerSecurity>,
}

impl MetadataNodeConfig {
    pub fn new(node_id: i32, metadata_log_dir: PathBuf) -> Self {
        MetadataNodeConfig {
            node_id,
            log_dirs: vec![metadata_log_dir.clone()],
            metadata_log_dir,
            controller: ControllerConfig {
                node_id,
                ..ControllerConfig::default()
            },
            broker_listeners: Vec::new(),
            rack: None,
            cluster_id: None,
            snapshot_every_records: 10_000,
            bootstrap_features: vec![("metadata.version".to_string(), METADATA_VERSION_LEVEL)],
            quorum: QuorumMode::Single,
            quorum_request_timeout_ms: DEFAULT_QUORUM_REQUEST_TIMEOUT_MS,
            register_broker: true,
            require_formatted: false,
            unclean_shutdown: false,
            peer_security: shale_raft::plaintext(),
        }
    }
}

/// How a forwarded request reaches the active controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// A connection of its own (requests of any kind, concurrently).
    OwnConnection,
    /// The local broker's session link (its heartbeats, one at a time).
    SessionLink,
}

pub(crate) struct Command {
    pub(crate) request: ControllerRequest,
    pub(crate) reply: oneshot::Sender<Result<ControllerResponse, MetadataError>>,
}

/// Where requests go when this node is not the active controller.
struct Forwarding {
    controller_addrs: HashMap<i32, SocketAddr>,
    timeout: Duration,
    /// The local broker's session link to the active controller: its heartbeats.
    link: forward::SessionLink,
    /// Secures the connections to the controllers.
    security: Arc<dyn PeerSecurity>,
}

struct Inner {
    node_id: i32,
    log: Arc<dyn QuorumLog>,
    /// `None` on a single node: it always is the controller.
    forwarding: Option<Forwarding>,
    /// The controller RPC server of a voter.
    rpc_server: Mutex<Option<JoinHandle<()>>>,
    /// Brokers with a session link open to this node's RPC server.
    linked: Arc<LinkedBrokers>,
    cluster_id: String,
    image_tx: watch::Sender<Arc<MetadataImage>>,
    /// Set when the applier stops on an error: waiting for offsets is then pointless.
    failed: watch::Sender<Option<MetadataError>>,
    requests: mpsc::Sender<Command>,
    /// Stops the heartbeat loop and the controller task (after its current group).
    shutdown_tx: watch::Sender<bool>,
    /// Stops the applier, once nothing can be waiting for it any more.
    stop_applier_tx: watch::Sender<bool>,
    /// Heartbeat and controller tasks.
    tasks: Mutex<Vec<JoinHandle<()>>>,
    applier: Mutex<Option<JoinHandle<()>>>,
    broker_epoch: AtomicI64,
    /// False on a controller-only node: no registration, heartbeats or controlled shutdown.
    registers_broker: bool,
    heartbeat_interval: Duration,
    /// How long a controlled shutdown waits for the controller: by then the broker's session
    /// has expired anyway (and the last voter of a quorum has nobody to ask).
    controlled_shutdown_timeout: Duration,
    /// Held by the heartbeat loop while it heartbeats, and by the controlled shutdown: a
    /// plain heartbeat answered after the controlled shutdown would unfence the leaving
    /// broker again (Kafka's broker sends none after it asked to shut down).
    heartbeat_turn: tokio::sync::Mutex<()>,
    /// Set once the controlled shutdown began: the heartbeat loop no longer heartbeats.
    leaving: std::sync::atomic::AtomicBool,
}

impl Drop for Inner {
    /// Dropping every handle without `shutdown` stops the node abruptly, like a crash: the
    /// tasks end, so the quorum log (and its listeners) are released.
    fn drop(&mut self) {
        self.shutdown_tx.send_replace(true);
        self.stop_applier_tx.send_replace(true);
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.drain(..).for_each(|task| task.abort());
        }
        if let Some(applier) = self.applier.lock().ok().and_then(|mut a| a.take()) {
            applier.abort();
        }
        if let Some(server) = self.rpc_server.lock().ok().and_then(|mut s| s.take()) {
            server.abort();
        }
    }
}

/// A handle to the metadata layer of one node; cheap to clone.
#[derive(Clone)]
pub struct MetadataNode {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MetadataNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataNode")
            .field("node_id", &self.inner.node_id)
            .field("cluster_id", &self.inner.cluster_id)
            .finish_non_exhaustive()
    }
}

/// What [`load_image`] found.
struct Loaded {
    image: MetadataImage,
    /// Records replayed after the snapshot.
    replayed: u64,
    /// Whether the snapshot or an entry was in the first format (bincode).
    legacy: bool,
}

/// Loads the newest snapshot and replays the committed entries after it.
async fn load_image(log: &dyn QuorumLog, cluster_id: &str) -> Result<Loaded, MetadataError> {
    let mut legacy = false;
    let mut image = match log.latest_snapshot().await? {
        Some((offset, bytes)) => {
            legacy |= MetadataImage::is_legacy_snapshot(&bytes);
            let mut image = MetadataImage::decode_snapshot(&bytes)?;
            if !image.cluster_id.is_empty() && image.cluster_id != cluster_id {
                return Err(MetadataError::InconsistentStorage(format!(
                    "the metadata log belongs to cluster {}, but this node is in cluster \
                     {cluster_id}; refusing to start",
                    image.cluster_id
                )));
            }
            image.cluster_id = cluster_id.to_string();
            image.offset = offset;
            image
        }
        None => MetadataImage::empty(cluster_id),
    };
    let mut replayed: u64 = 0;
    loop {
        match log.read_committed(image.offset, READ_BATCH_MAX).await? {
            CommittedRead::Entries(entries) if entries.is_empty() => {
                return Ok(Loaded {
                    image,
                    replayed,
                    legacy,
                })
            }
            CommittedRead::Entries(entries) => {
                for (offset, bytes) in entries {
                    legacy |= records::is_legacy_entry(&bytes);
                    let batch = records::decode_entry(&bytes)?;
                    replayed += batch.len() as u64;
                    image = image.apply_entry(&batch, offset);
                }
            }
            CommittedRead::SnapshotRequired => {
                return Err(MetadataError::Corrupt(format!(
                    "the metadata log has no entries after offset {} and no snapshot covers \
                     them",
                    image.offset
                )))
            }
        }
    }
}

fn now_ms(start: Instant) -> i64 {
    start.elapsed().as_millis() as i64
}

async fn wait_for(
    mut images: watch::Receiver<Arc<MetadataImage>>,
    mut failed: watch::Receiver<Option<MetadataError>>,
    offset: i64,
) -> Result<(), MetadataError> {
    loop {
        if images.borrow_and_update().offset >= offset {
            return Ok(());
        }
        if let Some(err) = failed.borrow_and_update().clone() {
            return Err(err);
        }
        tokio::select! {
            changed = images.changed() => {
                if changed.is_err() {
                    return Err(MetadataError::ShutDown);
                }
            }
            changed = failed.changed() => {
                if changed.is_err() {
                    return Err(MetadataError::ShutDown);
                }
            }
        }
    }
}

/// Requests handled together and made durable with one append (group commit).
const GROUP_COMMIT_MAX: usize = 64;

fn reply_all(group: Vec<Command>, err: &MetadataError) {
    for Command { reply, .. } in group {
        // The requester may have given up.
        let _ = reply.send(Err(err.clone()));
    }
}

/// The controller task. Requests are handled one after another, each against the image that
/// includes every earlier one; those queued together share one durable append, and nobody gets
/// an answer before the records it depends on are committed and applied.
async fn run_controller(
    mut controller: Controller,
    log: Arc<dyn QuorumLog>,
    mut commands: mpsc::Receiver<Command>,
    images: watch::Receiver<Arc<MetadataImage>>,
    failed: watch::Receiver<Option<MetadataError>>,
    start: Instant,
    mut stop: watch::Receiver<bool>,
) {
    let mut last_written = images.borrow().offset;
    let mut active_epoch: Option<i64> = None;
    loop {
        let first = tokio::select! {
            biased;
            _ = stop.changed() => return,
            command = commands.recv() => match command {
                Some(command) => command,
                None => return,
            },
        };
        let mut group = vec![first];
        while group.len() < GROUP_COMMIT_MAX {
            match commands.try_recv() {
                Ok(command) => group.push(command),
                Err(_) => break,
            }
        }
        let leader = *log.leader().borrow();
        if leader.leader_id != Some(log.node_id()) {
            active_epoch = None;
            reply_all(group, &MetadataError::NotController);
            continue;
        }
        if active_epoch != Some(leader.epoch) {
            // Newly active: everything committed so far must be applied first, and heartbeat
            // sessions start afresh.
            controller.reset_sessions();
            match log.barrier().await {
                Ok(offset) => last_written = last_written.max(offset),
                Err(err) => {
                    reply_all(group, &err);
                    continue;
                }
            }
            active_epoch = Some(leader.epoch);
        }
        if let Err(err) = wait_for(images.clone(), failed.clone(), last_written).await {
            reply_all(group, &err);
            continue;
        }
        let mut working = (**images.borrow()).clone();
        let mut entries = Vec::new();
        let mut answers = Vec::with_capacity(group.len());
        for Command { request, reply } in group {
            let (response, records) = controller.handle(&working, request, now_ms(start));
            if !records.is_empty() {
                // The next entry's offset as the working image predicts it; only broker
                // epochs derive from it, and they stay unique and increasing either way.
                working = working.apply_entry(&records, working.offset + 1);
                entries.push(Bytes::from(records::encode_entry(&records)));
            }
            answers.push((reply, response));
        }
        let outcome = if entries.is_empty() {
            Ok(())
        } else {
            let append = async {
                match log.append(entries).await {
                    Ok(offset) => {
                        last_written = offset;
                        wait_for(images.clone(), failed.clone(), offset).await
                    }
                    Err(err) => Err(err),
                }
            };
            // A leader that lost its majority cannot commit: shutdown must not wait for the
            // append timeout. The entry may still commit; the requester learns ShutDown.
            tokio::select! {
                outcome = append => outcome,
                _ = stop.changed() => {
                    for (reply, _) in answers {
                        let _ = reply.send(Err(MetadataError::ShutDown));
                    }
                    return;
                }
            }
        };
        for (reply, response) in answers {
            let _ = reply.send(outcome.clone().map(|()| response));
        }
    }
}

/// The applier task: follows the committed log and publishes images.
async fn run_applier(
    log: Arc<dyn QuorumLog>,
    image_tx: watch::Sender<Arc<MetadataImage>>,
    failed: watch::Sender<Option<MetadataError>>,
    snapshot_every_records: u64,
    mut records_since_snapshot: u64,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut committed = log.committed_offset();
    let mut leader = log.leader();
    loop {
        let current = image_tx.borrow().clone();
        let result: Result<Option<MetadataImage>, MetadataError> = async {
            match log.read_committed(current.offset, READ_BATCH_MAX).await? {
                CommittedRead::Entries(entries) => {
                    if entries.is_empty() {
                        return Ok(None);
                    }
                    let mut next = (*current).clone();
                    for (offset, bytes) in entries {
                        let batch = records::decode_entry(&bytes)?;
                        records_since_snapshot += batch.len() as u64;
                        next = next.apply_entry(&batch, offset);
                    }
                    Ok(Some(next))
                }
                CommittedRead::SnapshotRequired => {
                    let (offset, bytes) = log.latest_snapshot().await?.ok_or_else(|| {
                        MetadataError::Corrupt("log truncated without a snapshot".into())
                    })?;
                    let mut image = MetadataImage::decode_snapshot(&bytes)?;
                    image.offset = offset;
                    image.cluster_id = current.cluster_id.clone();
                    records_since_snapshot = 0;
                    Ok(Some(image))
                }
            }
        }
        .await;
        match result {
            Ok(Some(next)) => {
                let controller_id = leader.borrow_and_update().leader_id;
                let next = next.with_active_controller(controller_id);
                let snapshot = (snapshot_every_records > 0
                    && records_since_snapshot >= snapshot_every_records)
                    .then(|| (next.offset, Bytes::from(next.encode_snapshot())));
                image_tx.send_replace(Arc::new(next));
                if let Some((offset, bytes)) = snapshot {
                    records_since_snapshot = 0;
                    if let Err(err) = log.save_snapshot(offset, bytes).await {
                        tracing::error!(%err, "writing a metadata snapshot failed");
                    }
                }
                continue;
            }
            Ok(None) => {}
            Err(err) => {
                tracing::error!(%err, "the metadata applier stopped");
                failed.send_replace(Some(err));
                return;
            }
        }
        tokio::select! {
            changed = committed.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            changed = leader.changed() => {
                if changed.is_err() {
                    return;
                }
                let controller_id = leader.borrow_and_update().leader_id;
                let image = image_tx.borrow().with_active_controller(controller_id);
                image_tx.send_replace(Arc::new(image));
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// Heartbeats the local broker and ticks the controller. Holds only a weak reference, so
/// dropping every handle ends it.
async fn heartbeat_loop(inner: Weak<Inner>) {
    let (mut shutdown, period) = match inner.upgrade() {
        Some(inner) => (inner.shutdown_tx.subscribe(), inner.heartbeat_interval),
        None => return,
    };
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shutdown.changed() => return,
        }
        let Some(inner) = inner.upgrade() else { return };
        let node = MetadataNode { inner };
        let beat = async {
            if node.inner.registers_broker {
                let _turn = node.inner.heartbeat_turn.lock().await;
                if !node.inner.leaving.load(Ordering::SeqCst) {
                    if let Err(err) = node.heartbeat(false).await {
                        tracing::warn!(%err, "local broker heartbeat failed");
                    }
                }
            }
            // Only the active controller fences brokers; its own image tells it who they are.
            if node.is_active_controller() {
                if let Err(err) = node.submit_local(ControllerRequest::Tick).await {
                    tracing::warn!(%err, "controller tick failed");
                }
            }
        };
        // A forwarded heartbeat may wait long for a controller; shutdown must not.
        tokio::select! {
            _ = beat => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// How long a probe of a broker's port waits to connect.
const PROBE_CONNECT_TIMEOUT: Duration = Duration::from_millis(300);

/// Which brokers a probe round covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProbeScope {
    /// Voters only: their controller port is open for as long as they run.
    Voters,
    /// Every broker without a session link; broker listeners may open later than the link, so
    /// these are probed only after live brokers had a heartbeat interval to link up.
    All,
}

/// On a voter: each time this node becomes the active controller, fences the brokers whose
/// process is gone (probably killed together with the previous controller) instead of giving
/// them a full session. Right after activation it probes the other voters' controller ports;
/// one heartbeat interval later, every unfenced broker that still has no session link here.
async fn probe_departed_on_activation(inner: Weak<Inner>) {
    let (mut leader, mut shutdown, node_id, period) = match inner.upgrade() {
        Some(inner) => (
            inner.log.leader(),
            inner.shutdown_tx.subscribe(),
            inner.node_id,
            inner.heartbeat_interval,
        ),
        None => return,
    };
    let mut probed_epoch = None;
    loop {
        let current = *leader.borrow_and_update();
        if current.leader_id == Some(node_id) && probed_epoch != Some(current.epoch) {
            probed_epoch = Some(current.epoch);
            let rounds = async {
                for (scope, delay) in [(ProbeScope::Voters, None), (ProbeScope::All, Some(period))]
                {
                    if let Some(delay) = delay {
                        tokio::time::sleep(delay).await;
                    }
                    let Some(inner) = inner.upgrade() else { return };
                    MetadataNode { inner }.fence_unreachable(scope).await;
                }
            };
            tokio::select! {
                _ = rounds => {}
                _ = shutdown.changed() => return,
                // Deposed meanwhile: the next controller probes.
                changed = leader.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    continue;
                }
            }
        }
        tokio::select! {
            changed = leader.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

impl MetadataNode {
    /// One probe round of the active controller (see [`probe_departed_on_activation`]).
    async fn fence_unreachable(&self, scope: ProbeScope) {
        let Some(forwarding) = &self.inner.forwarding else {
            return;
        };
        // A tick activates the controller first (barrier), so the image holds every
        // registration committed under the previous one.
        match self.submit_local(ControllerRequest::Tick).await {
            Ok(_) => {}
            Err(err) => {
                tracing::debug!(%err, "not probing brokers: this node is not the controller");
                return;
            }
        }
        let image = self.image();
        let mut probes = tokio::task::JoinSet::new();
        for broker in image.brokers() {
            if broker.fenced
                || broker.broker_id == self.inner.node_id
                || self.inner.linked.is_linked(broker.broker_id)
            {
                continue;
            }
            let target = match forwarding.controller_addrs.get(&broker.broker_id) {
                Some(addr) => liveness::ProbeTarget::Controller(*addr),
                None if scope == ProbeScope::Voters => continue,
                None => liveness::ProbeTarget::Listeners(
                    broker
                        .listeners
                        .iter()
                        .map(|l| (l.host.clone(), l.port))
                        .collect(),
                ),
            };
            let (broker_id, broker_epoch) = (broker.broker_id, broker.broker_epoch);
            probes.spawn(async move {
                let probe = liveness::probe(&target, PROBE_CONNECT_TIMEOUT).await;
                (broker_id, broker_epoch, probe)
            });
        }
        while let Some(done) = probes.join_next().await {
            let Ok((broker_id, broker_epoch, liveness::Probe::Refused)) = done else {
                continue;
            };
            tracing::info!(
                broker_id,
                broker_epoch,
                "nothing listens on the broker's port any more; fencing it"
            );
            let request = ControllerRequest::FenceDeparted {
                broker_id,
                broker_epoch,
            };
            if let Err(err) = self.submit_local(request).await {
                tracing::debug!(%err, "fencing a departed broker failed");
            }
        }
    }
}

impl MetadataNode {
    /// Starts a node on the log `config.quorum` names: a [`LocalQuorumLog`] in
    /// `metadata_log_dir` (single node), or a Raft voter or observer.
    pub async fn start(config: MetadataNodeConfig) -> Result<MetadataNode, MetadataError> {
        Self::start_with_quorum_io(config, QuorumIo::default()).await
    }

    /// [`MetadataNode::start`] with pre-bound listeners and fault switches (tests bind port 0).
    pub async fn start_with_quorum_io(
        config: MetadataNodeConfig,
        io: QuorumIo,
    ) -> Result<MetadataNode, MetadataError> {
        let mut dirs = vec![config.metadata_log_dir.clone()];
        for dir in &config.log_dirs {
            if !dirs.contains(dir) {
                dirs.push(dir.clone());
            }
        }
        let (node_id, cluster) = (config.node_id, config.cluster_id.clone());
        let require_formatted = config.require_formatted;
        let cluster_id = tokio::task::spawn_blocking(move || {
            meta_properties::ensure(&dirs, node_id, cluster.as_deref(), require_formatted)
        })
        .await
        .map_err(|e| MetadataError::Io(format!("meta.properties task failed: {e}")))??;
        let faults = io.faults.unwrap_or_default();
        let raft_id = u64::try_from(config.node_id)
            .map_err(|_| MetadataError::InvalidRequest("node.id must not be negative".into()));
        let raft_voters =
            |voters: &[QuorumVoter]| -> Result<Vec<(u64, SocketAddr)>, MetadataError> {
                voters
                    .iter()
                    .map(|v| {
                        u64::try_from(v.node_id)
                            .map(|id| (id, v.addr))
                            .map_err(|_| {
                                MetadataError::InvalidRequest(format!(
                                    "voter id {} is negative",
                                    v.node_id
                                ))
                            })
                    })
                    .collect()
            };
        let mut controller_connections = None;
        let log: Arc<dyn QuorumLog> = match &config.quorum {
            QuorumMode::Single => Arc::new(
                LocalQuorumLog::open(
                    config.node_id,
                    config.metadata_log_dir.join(METADATA_LOG_SUBDIR),
                )
                .await?,
            ),
            QuorumMode::Voter {
                voters,
                listen_addr,
            } => {
                let mut raft_config = RaftConfig::new(
                    raft_id?,
                    raft_voters(voters)?,
                    *listen_addr,
                    config.metadata_log_dir.join(RAFT_LOG_SUBDIR),
                );
                raft_config.cluster_id = cluster_id.clone();
                if config.snapshot_every_records > 0 {
                    // Raft snapshots (which let the log be purged) follow the metadata setting.
                    raft_config.snapshot_every_entries = config.snapshot_every_records;
                    raft_config.log_entries_kept_after_snapshot = raft_config
                        .log_entries_kept_after_snapshot
                        .min(config.snapshot_every_records);
                }
                let (to_service, from_listener) = mpsc::channel(CONTROLLER_CONNECTIONS_QUEUED);
                raft_config.controller_service = Some(to_service);
                raft_config.security = Arc::clone(&config.peer_security);
                controller_connections = Some(from_listener);
                Arc::new(RaftQuorumLog::start_voter(raft_config, io.listener, faults).await?)
            }
            QuorumMode::Observer { voters } => {
                let mut observer_config = ObserverConfig::new(raft_id?, raft_voters(voters)?);
                observer_config.cluster_id = cluster_id.clone();
                observer_config.security = Arc::clone(&config.peer_security);
                Arc::new(RaftQuorumLog::start_observer(observer_config, faults)?)
            }
        };
        let forwarding = match &config.quorum {
            QuorumMode::Single => None,
            QuorumMode::Voter { voters, .. } | QuorumMode::Observer { voters } => {
                Some(Forwarding {
                    controller_addrs: voters.iter().map(|v| (v.node_id, v.addr)).collect(),
                    timeout: Duration::from_millis(config.quorum_request_timeout_ms.max(1)),
                    link: forward::SessionLink::new(Arc::clone(&config.peer_security)),
                    security: Arc::clone(&config.peer_security),
                })
            }
        };
        let started = Self::start_inner(
            config,
            cluster_id,
            Arc::clone(&log),
            forwarding,
            controller_connections,
        )
        .await;
        if started.is_err() {
            log.shutdown().await;
        }
        started
    }

    /// Starts a node on any quorum log (the Raft quorum plugs in here). `cluster_id` must
    /// already be checked against the node's directories.
    pub async fn start_with_log(
        config: MetadataNodeConfig,
        cluster_id: String,
        log: Arc<dyn QuorumLog>,
    ) -> Result<MetadataNode, MetadataError> {
        Self::start_inner(config, cluster_id, log, None, None).await
    }

    async fn start_inner(
        config: MetadataNodeConfig,
        cluster_id: String,
        log: Arc<dyn QuorumLog>,
        forwarding: Option<Forwarding>,
        controller_connections: Option<forward::Connections>,
    ) -> Result<MetadataNode, MetadataError> {
        let Loaded {
            image,
            mut replayed,
            legacy,
        } = load_image(log.as_ref(), &cluster_id).await?;
        if legacy {
            // Metadata of the first format (bincode) is carried over by the applier's next
            // snapshot, taken as soon as the next entry (this node's registration at the
            // latest) is applied; the log then drops the entries the older snapshot covers.
            tracing::info!("metadata of the first (bincode) format found; it is snapshotted anew");
            replayed = replayed.max(config.snapshot_every_records);
        }
        let leader_id = log.leader().borrow().leader_id;
        let fresh = image.offset < 0;
        let image = image.with_active_controller(leader_id);
        let (image_tx, image_rx) = watch::channel(Arc::new(image));
        let (failed_tx, failed_rx) = watch::channel(None);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (stop_applier_tx, stop_applier_rx) = watch::channel(false);
        let (requests, commands) = mpsc::channel(REQUEST_QUEUE_MAX);
        let linked = Arc::new(LinkedBrokers::default());
        let rpc_server = controller_connections.map(|connections| {
            forward::spawn_server(
                connections,
                forward::ServerContext {
                    cluster_id: cluster_id.clone(),
                    submit: requests.clone(),
                    images: image_rx.clone(),
                    log: Arc::clone(&log),
                    linked: Arc::clone(&linked),
                },
            )
        });
        let start = Instant::now();
        let seed = Uuid::new_v4().as_u64_pair().0;
        let controller = Controller::new(config.controller.clone(), seed);
        let applier = tokio::spawn(run_applier(
            Arc::clone(&log),
            image_tx.clone(),
            failed_tx.clone(),
            config.snapshot_every_records,
            replayed,
            stop_applier_rx,
        ));
        let controller_task = tokio::spawn(run_controller(
            controller,
            Arc::clone(&log),
            commands,
            image_rx,
            failed_rx,
            start,
            shutdown_rx,
        ));
        let heartbeat_interval =
            Duration::from_millis(config.controller.broker_heartbeat_interval_ms.max(1) as u64);
        let node = MetadataNode {
            inner: Arc::new(Inner {
                node_id: config.node_id,
                log: Arc::clone(&log),
                rpc_server: Mutex::new(rpc_server),
                linked,
                cluster_id: cluster_id.clone(),
                image_tx,
                failed: failed_tx,
                requests,
                shutdown_tx,
                stop_applier_tx,
                tasks: Mutex::new(vec![controller_task]),
                applier: Mutex::new(Some(applier)),
                broker_epoch: AtomicI64::new(-1),
                registers_broker: config.register_broker,
                heartbeat_interval,
                heartbeat_turn: tokio::sync::Mutex::new(()),
                leaving: std::sync::atomic::AtomicBool::new(false),
                controlled_shutdown_timeout: Duration::from_millis(
                    config.controller.broker_session_timeout_ms.max(1) as u64,
                ),
                forwarding,
            }),
        };
        if matches!(config.quorum, QuorumMode::Voter { .. }) {
            let probe = tokio::spawn(probe_departed_on_activation(Arc::downgrade(&node.inner)));
            node.push_task(probe);
        }
        if !config.register_broker {
            // A controller-only node: brokers finalize the features when they register.
            let heartbeat = tokio::spawn(heartbeat_loop(Arc::downgrade(&node.inner)));
            node.push_task(heartbeat);
            return Ok(node);
        }
        if fresh && leader_id == Some(config.node_id) && !config.bootstrap_features.is_empty() {
            node.submit(ControllerRequest::UpdateFeatures {
                updates: config.bootstrap_features.clone(),
            })
            .await?;
        }
        loop {
            match node.register_local_broker(&config, &cluster_id).await {
                // With a quorum, the voters may still be starting: a broker waits for them,
                // as Kafka's does.
                Err(MetadataError::NotController) if node.inner.forwarding.is_some() => {
                    tracing::warn!(
                        node_id = config.node_id,
                        "no active controller answered yet; retrying the broker registration"
                    );
                }
                // The registration of this broker before a crash is alive until its session
                // expires (broker.session.timeout.ms) unless the controller saw the old process
                // go (its link closed, or a probe found its port closed); Kafka's brokers retry
                // until then.
                Err(MetadataError::DuplicateBrokerRegistration(reason)) => {
                    tracing::info!(
                        node_id = config.node_id,
                        %reason,
                        "the previous registration has not expired yet; retrying"
                    );
                    tokio::time::sleep(node.inner.heartbeat_interval).await;
                }
                other => break other?,
            }
        }
        if node.inner.forwarding.is_some()
            && !config.bootstrap_features.is_empty()
            && config
                .bootstrap_features
                .iter()
                .any(|(name, _)| node.image().feature_level(name).is_none())
        {
            // With a quorum nobody knows at start whether the cluster is new; the image is
            // caught up to this node's registration, so missing features mean it is. Several
            // nodes may do this at once; finalizing the same levels twice changes nothing.
            node.submit(ControllerRequest::UpdateFeatures {
                updates: config.bootstrap_features.clone(),
            })
            .await?;
        }
        let heartbeat = tokio::spawn(heartbeat_loop(Arc::downgrade(&node.inner)));
        node.push_task(heartbeat);
        Ok(node)
    }

    fn push_task(&self, task: JoinHandle<()>) {
        match self.inner.tasks.lock() {
            Ok(mut tasks) => tasks.push(task),
            Err(_) => task.abort(),
        }
    }

    async fn register_local_broker(
        &self,
        config: &MetadataNodeConfig,
        cluster_id: &str,
    ) -> Result<(), MetadataError> {
        let response = self
            .submit(ControllerRequest::RegisterBroker {
                broker_id: config.node_id,
                incarnation_id: Uuid::new_v4(),
                cluster_id: cluster_id.to_string(),
                listeners: config.broker_listeners.clone(),
                rack: config.rack.clone(),
                features: vec![FeatureRange {
                    name: "metadata.version".into(),
                    min_version: 7,
                    max_version: METADATA_VERSION_LEVEL,
                }],
                unclean_shutdown: config.unclean_shutdown,
            })
            .await?;
        let ControllerResponse::RegisterBroker(result) = response else {
            return Err(MetadataError::InvalidRequest(
                "unexpected response to RegisterBroker".into(),
            ));
        };
        let epoch = result?;
        self.inner.broker_epoch.store(epoch, Ordering::SeqCst);
        // The registration is applied, so the first heartbeat finds the broker caught up.
        let reply = self.heartbeat(false).await?;
        if reply.is_fenced {
            return Err(MetadataError::InvalidRequest(
                "the local broker stayed fenced after registering".into(),
            ));
        }
        Ok(())
    }

    async fn heartbeat(
        &self,
        want_shutdown: bool,
    ) -> Result<crate::controller::HeartbeatReply, MetadataError> {
        let request = ControllerRequest::BrokerHeartbeat {
            broker_id: self.inner.node_id,
            broker_epoch: self.broker_epoch(),
            want_fence: false,
            want_shutdown,
            current_metadata_offset: self.image().offset,
        };
        let response = self.submit_via(request, Route::SessionLink).await?;
        match response {
            ControllerResponse::BrokerHeartbeat(result) => result,
            _ => Err(MetadataError::InvalidRequest(
                "unexpected response to BrokerHeartbeat".into(),
            )),
        }
    }

    /// Runs one request through the active controller: here when this node is it, otherwise
    /// forwarded to it (retrying across elections for `quorum_request_timeout_ms`). Returns
    /// after its records are durable and the resulting image is visible through
    /// [`MetadataNode::image`] on this node. A forwarded request whose answer was lost fails
    /// with `NotController`: it may or may not have been applied, as with Kafka.
    pub async fn submit(
        &self,
        request: ControllerRequest,
    ) -> Result<ControllerResponse, MetadataError> {
        self.submit_via(request, Route::OwnConnection).await
    }

    async fn submit_via(
        &self,
        request: ControllerRequest,
        route: Route,
    ) -> Result<ControllerResponse, MetadataError> {
        let Some(forwarding) = &self.inner.forwarding else {
            return self.submit_local(request).await;
        };
        let deadline = Instant::now() + forwarding.timeout;
        let mut leader = self.inner.log.leader();
        loop {
            let leader_id = leader.borrow_and_update().leader_id;
            match leader_id {
                Some(id) if id == self.inner.node_id => {
                    if route == Route::SessionLink {
                        // The local controller needs no link: were this node to die, the
                        // next controller would probe for it.
                        forwarding.link.close().await;
                    }
                    match self.submit_local(request.clone()).await {
                        Err(MetadataError::NotController) => {}
                        other => return other,
                    }
                }
                Some(id) => {
                    if let Some(addr) = forwarding.controller_addrs.get(&id) {
                        let remaining = deadline.saturating_duration_since(Instant::now());
                        let forwarded = ForwardRequest {
                            cluster_id: self.inner.cluster_id.clone(),
                            request: request.clone(),
                        };
                        let answer = match route {
                            Route::OwnConnection => {
                                let security = forwarding.security.as_ref();
                                forward::call(*addr, security, forwarded, remaining).await
                            }
                            Route::SessionLink => {
                                forwarding.link.call(id, *addr, forwarded, remaining).await
                            }
                        };
                        match answer {
                            Ok(ForwardResponse {
                                result: Err(MetadataError::NotController | MetadataError::ShutDown),
                                ..
                            })
                            | Err(CallError::NotSent) => {}
                            Ok(ForwardResponse { result, offset }) => {
                                let remaining = deadline.saturating_duration_since(Instant::now());
                                tokio::time::timeout(remaining, self.wait_for_offset(offset))
                                    .await
                                    .map_err(|_| MetadataError::NotController)??;
                                return result;
                            }
                            // Heartbeats may be repeated: a lost one is sent again.
                            Err(CallError::Lost) if route == Route::SessionLink => {}
                            Err(CallError::Lost) => return Err(MetadataError::NotController),
                        }
                    }
                }
                None => {}
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(MetadataError::NotController);
            }
            tokio::select! {
                _ = leader.changed() => {}
                _ = tokio::time::sleep(remaining.min(FORWARD_RETRY_BACKOFF)) => {}
            }
        }
    }

    /// Describes the quorum as its leader sees it (Kafka's DescribeQuorum): answered here when
    /// this node leads, otherwise asked of the leader, retrying across elections for
    /// `quorum_request_timeout_ms`.
    pub async fn describe_quorum(&self) -> Result<QuorumDescription, MetadataError> {
        let Some(forwarding) = &self.inner.forwarding else {
            return self
                .inner
                .log
                .describe()
                .ok_or(MetadataError::NotController);
        };
        let deadline = Instant::now() + forwarding.timeout;
        let mut leader = self.inner.log.leader();
        loop {
            let leader_id = leader.borrow_and_update().leader_id;
            match leader_id {
                Some(id) if id == self.inner.node_id => {
                    if let Some(description) = self.inner.log.describe() {
                        return Ok(description);
                    }
                }
                Some(id) => {
                    if let Some(addr) = forwarding.controller_addrs.get(&id) {
                        let remaining = deadline.saturating_duration_since(Instant::now());
                        let security = forwarding.security.as_ref();
                        let cluster_id = &self.inner.cluster_id;
                        match forward::describe_quorum(*addr, security, cluster_id, remaining).await
                        {
                            Err(MetadataError::NotController) => {}
                            other => return other,
                        }
                    }
                }
                None => {}
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(MetadataError::NotController);
            }
            tokio::select! {
                _ = leader.changed() => {}
                _ = tokio::time::sleep(remaining.min(FORWARD_RETRY_BACKOFF)) => {}
            }
        }
    }

    /// Who leads the metadata quorum as this node knows it.
    pub fn quorum_leader(&self) -> QuorumLeader {
        *self.inner.log.leader().borrow()
    }

    /// Whether this node is the active controller (the quorum leader).
    pub fn is_active_controller(&self) -> bool {
        self.quorum_leader().leader_id == Some(self.inner.node_id)
    }

    /// The quorum log under this node.
    pub fn quorum_log(&self) -> Arc<dyn QuorumLog> {
        Arc::clone(&self.inner.log)
    }

    /// Hands a request to this node's own controller task.
    async fn submit_local(
        &self,
        request: ControllerRequest,
    ) -> Result<ControllerResponse, MetadataError> {
        let (reply, response) = oneshot::channel();
        self.inner
            .requests
            .send(Command { request, reply })
            .await
            .map_err(|_| MetadataError::ShutDown)?;
        response.await.map_err(|_| MetadataError::ShutDown)?
    }

    /// The latest published image.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.inner.image_tx.borrow().clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<Arc<MetadataImage>> {
        self.inner.image_tx.subscribe()
    }

    /// Waits until the published image includes `offset`.
    pub async fn wait_for_offset(&self, offset: i64) -> Result<(), MetadataError> {
        wait_for(self.subscribe(), self.inner.failed.subscribe(), offset).await
    }

    pub fn node_id(&self) -> i32 {
        self.inner.node_id
    }

    pub fn cluster_id(&self) -> &str {
        &self.inner.cluster_id
    }

    /// The controller id Kafka clients are given (Metadata, DescribeCluster). KRaft names a
    /// live broker, since clients cannot reach controller-only nodes and forward through any
    /// broker. This node, when it is an unfenced broker, is the surest live one: it is
    /// answering the request. Naming the quorum leader instead would hand out a node that has
    /// just died until the survivors elect a new one, and an admin client would wait for it.
    /// Otherwise the active controller if it is an unfenced broker, else any unfenced broker,
    /// else none (-1 on the wire), never a fenced or unknown node.
    /// [`MetadataNode::quorum_leader`] names the real quorum leader.
    pub fn active_controller_id(&self) -> Option<i32> {
        let image = self.image();
        let live = |id: i32| image.broker(id).is_some_and(|b| b.is_active());
        if self.inner.registers_broker && live(self.inner.node_id) {
            return Some(self.inner.node_id);
        }
        match image.active_controller_id() {
            Some(id) if live(id) => Some(id),
            _ => image.brokers().find(|b| b.is_active()).map(|b| b.broker_id),
        }
    }

    /// The epoch of the local broker's registration (-1 before it registered).
    pub fn broker_epoch(&self) -> i64 {
        self.inner.broker_epoch.load(Ordering::SeqCst)
    }

    /// Controlled shutdown of the local broker (leadership moves away where possible), then
    /// stops the node's tasks. Requests after this fail with `ShutDown`.
    /// Kafka's controlled shutdown of the local broker: the controller takes it out of every
    /// ISR and moves its leaderships to other in-sync replicas. Returns once this node's image
    /// holds the result (a forwarded request waits for its answer's offset), so the broker,
    /// still serving, answers NOT_LEADER_OR_FOLLOWER from then on and clients move to the new
    /// leaders before its connections close. Only the first call does anything; `shutdown`
    /// makes it when nobody did.
    pub async fn controlled_shutdown(&self) {
        if !self.inner.registers_broker || *self.inner.shutdown_tx.borrow() {
            return;
        }
        if self.inner.leaving.swap(true, Ordering::SeqCst) {
            return;
        }
        let timeout = self.inner.controlled_shutdown_timeout;
        let controlled_shutdown = async {
            // Waits for a heartbeat in flight; none follows.
            let _turn = self.inner.heartbeat_turn.lock().await;
            self.heartbeat(true).await
        };
        match tokio::time::timeout(timeout, controlled_shutdown).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => {
                tracing::warn!(%err, "controlled shutdown of the local broker failed")
            }
            Err(_) => tracing::warn!("controlled shutdown of the local broker timed out"),
        }
    }

    pub async fn shutdown(&self) {
        if *self.inner.shutdown_tx.borrow() {
            return;
        }
        self.controlled_shutdown().await;
        // The controller finishes the group it is handling (the applier still runs, so it
        // can), then stops; queued and later requests fail with ShutDown.
        self.inner.shutdown_tx.send_replace(true);
        let tasks: Vec<JoinHandle<()>> = match self.inner.tasks.lock() {
            Ok(mut tasks) => tasks.drain(..).collect(),
            Err(_) => Vec::new(),
        };
        for task in tasks {
            if let Err(err) = task.await {
                tracing::warn!(%err, "a metadata task ended abnormally");
            }
        }
        if let Some(forwarding) = &self.inner.forwarding {
            forwarding.link.close().await;
        }
        // The applier finishes a snapshot it is writing before it stops.
        self.inner.stop_applier_tx.send_replace(true);
        let applier = self.inner.applier.lock().ok().and_then(|mut a| a.take());
        if let Some(applier) = applier {
            if let Err(err) = applier.await {
                tracing::warn!(%err, "the metadata applier ended abnormally");
            }
        }
        let server = self.inner.rpc_server.lock().ok().and_then(|mut s| s.take());
        if let Some(server) = server {
            server.abort();
            // Awaiting the aborted task makes sure its listener is closed.
            let _ = server.await;
        }
        self.inner.log.shutdown().await;
    }
}
