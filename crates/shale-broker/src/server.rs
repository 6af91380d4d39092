//! Start-up and shutdown: log recovery, the metadata node, the hosted partitions, the listeners
//! and the periodic jobs (retention, flush, cleaner, producer snapshots).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use shale_log::LogManager;
use shale_metadata::{
    Endpoint, MetadataNode, MetadataNodeConfig, QuorumMode, QuorumVoter, SecurityProtocol,
};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::broker::Broker;
use crate::config::{BrokerConfig, Listener, QuorumRole};
use crate::connection;
use crate::core::BrokerCore;
use crate::groups::GroupService;
use crate::ip_connections::IpConnections;
use crate::peer::ControllerPortSecurity;
use crate::producer_id_source::ProducerIdSource;
use crate::time::now_ms;
use crate::txn::TxnService;
use shale_replica::{Followers, ReplicaContext, ReplicaManager};

/// How long shutdown waits for the hosted partitions to take the roles the controlled shutdown
/// gave them before it closes the listeners anyway.
const RECONCILE_AT_SHUTDOWN_MAX: Duration = Duration::from_secs(5);

/// Why the broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot bind listener {name} on {addr}: {source}")]
    Bind {
        name: String,
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot create log directory {path}: {source}")]
    LogDir {
        path: String,
        source: std::io::Error,
    },
    #[error("log engine: {0}")]
    Log(#[from] shale_log::LogError),
    #[error("metadata: {0}")]
    Metadata(#[from] shale_metadata::MetadataError),
    #[error("invalid value for configuration controller.quorum.voters: {0}")]
    Voters(String),
}

/// What `start` returns: the bound addresses and a way to stop.
pub struct BrokerHandle {
    pub broker: Arc<Broker>,
    /// Bound address of each client listener, by listener name (port 0 resolved).
    pub bound: Vec<(String, SocketAddr)>,
    tasks: Vec<JoinHandle<()>>,
}

impl Broker {
    /// Starts everything and returns once clients can connect.
    pub async fn start(config: BrokerConfig) -> Result<BrokerHandle, StartError> {
        for dir in config
            .log_dirs
            .iter()
            .chain(std::iter::once(&config.metadata_log_dir))
        {
            std::fs::create_dir_all(dir).map_err(|source| StartError::LogDir {
                path: dir.display().to_string(),
                source,
            })?;
        }
        // Bind first so that port 0 is resolved before the broker registers its endpoints.
        let mut bound_listeners = Vec::new();
        for l in config.client_listeners() {
            if config
                .sasl_of(&l.name)
                .is_some_and(|s| s.oauthbearer.is_some())
            {
                warn!(listener = %l.name, "OAUTHBEARER is served with Kafka's unsecured validator: any client can present an unsigned token naming any principal; not for production");
            }
            let addr = format!("{}:{}", l.host, l.port);
            let listener = TcpListener::bind(&addr)
                .await
                .map_err(|source| StartError::Bind {
                    name: l.name.clone(),
                    addr: addr.clone(),
                    source,
                })?;
            // Accepted sockets inherit the listener's receive buffer, and it must be set before
            // their handshake for the TCP window scale to allow it (as Kafka sets it).
            if let Err(e) = set_socket_buffer(
                &listener,
                libc::SO_RCVBUF,
                config.socket_receive_buffer_bytes,
            ) {
                warn!(listener = %l.name, "socket.receive.buffer.bytes not applied: {e}");
            }
            let local = listener.local_addr().map_err(|source| StartError::Bind {
                name: l.name.clone(),
                addr,
                source,
            })?;
            bound_listeners.push((l.clone(), listener, local));
        }
        let mut config = config;
        for adv in config.advertised_listeners.iter_mut() {
            if adv.port == 0 {
                if let Some((_, _, local)) =
                    bound_listeners.iter().find(|(l, _, _)| l.name == adv.name)
                {
                    adv.port = local.port();
                }
            }
        }

        // Opening the logs removes the clean-shutdown markers: look first. Without one, the
        // last shutdown may have lost an unflushed tail, which the registration reports (KIP-966).
        let unclean_shutdown = config
            .log_dirs
            .iter()
            .any(|dir| !LogManager::had_clean_shutdown(dir));
        let recovery_threads = config.num_recovery_threads_per_data_dir * config.log_dirs.len();
        let logs = {
            let dirs = config.log_dirs.clone();
            tokio::task::spawn_blocking(move || LogManager::open(dirs, recovery_threads.max(1)))
                .await
                .map_err(|e| StartError::LogDir {
                    path: "log recovery".into(),
                    source: std::io::Error::other(e.to_string()),
                })??
        };
        let logs = Arc::new(logs);

        let mut node_config = metadata_node_config(&config).await?;
        node_config.unclean_shutdown = unclean_shutdown;
        let metadata = MetadataNode::start(node_config).await?;
        let image = metadata.image();
        let replicas = ReplicaManager::new(config.node_id, logs, config.producer_id_expiration_ms);
        let core = Arc::new(BrokerCore::new(config, metadata, replicas));
        let groups = GroupService::new(&core, &image);
        let txn = Arc::new(TxnService::new(
            core.clone(),
            &image,
            groups.coordinator.clone(),
        ));
        let quotas = crate::quotas::ClientQuotas::from_config(&core.config);
        let share = Arc::new(crate::share::ShareService::new(&core, &image));
        let broker = Arc::new(Broker {
            producer_ids: ProducerIdSource::default(),
            quotas,
            groups,
            txn,
            share,
            replication: Followers::new(
                Arc::downgrade(&core) as std::sync::Weak<dyn ReplicaContext>
            ),
            core,
        });

        // Host what the image says before accepting clients.
        let applied_at_start = broker.reconcile(&broker.metadata.image());
        let mut tasks = Vec::new();
        tasks.push(tokio::spawn(reconcile_loop(
            broker.clone(),
            applied_at_start,
        )));
        tasks.push(tokio::spawn(housekeeping_loop(broker.clone())));
        tasks.push(tokio::spawn(crate::txn::timeout_loop(broker.txn.clone())));

        let connections = Arc::new(Semaphore::new(broker.config.max_connections.min(1 << 20)));
        let per_ip = IpConnections::new(broker.config.max_connections_per_ip.clone());
        let mut bound = Vec::new();
        for (l, listener, local) in bound_listeners {
            info!(listener = %l.name, addr = %local, "listening");
            bound.push((l.name.clone(), local));
            tasks.push(tokio::spawn(accept_loop(
                broker.clone(),
                listener,
                l,
                connections.clone(),
                per_ip.clone(),
            )));
        }
        tasks.push(tokio::spawn(shale_replica::isr::expiration_loop(
            broker.core.clone() as Arc<dyn ReplicaContext>,
        )));
        Ok(BrokerHandle {
            broker,
            bound,
            tasks,
        })
    }
}

/// The metadata node's configuration, its quorum mode from the validated role
/// (`BrokerConfig::quorum_role`): a single node, a voter on the controller listener, or a
/// broker-only observer of the voters.
async fn metadata_node_config(config: &BrokerConfig) -> Result<MetadataNodeConfig, StartError> {
    let mut controller = shale_metadata::ControllerConfig {
        node_id: config.node_id,
        ..Default::default()
    };
    controller.num_partitions = config.num_partitions;
    controller.default_replication_factor = config.default_replication_factor;
    controller.delete_topic_enable = config.delete_topic_enable;
    controller.broker_session_timeout_ms = config.broker_session_timeout_ms;
    controller.broker_heartbeat_interval_ms = config.broker_heartbeat_interval_ms;
    controller.unclean_leader_election_enable = config.unclean_leader_election_enable;
    controller.min_insync_replicas = config.min_insync_replicas;
    // Group configs are checked against this node's `group.consumer.*` bounds, as Kafka's
    // controller checks them against its own.
    let consumer = &config.consumer_groups;
    controller.group_config_bounds = shale_metadata::group_config_defs::GroupConfigBounds {
        session_timeout_ms: consumer.session_timeout_ms,
        session_timeout_ms_min: consumer.session_timeout_ms_min,
        session_timeout_ms_max: consumer.session_timeout_ms_max,
        heartbeat_interval_ms: consumer.heartbeat_interval_ms,
        heartbeat_interval_ms_min: consumer.heartbeat_interval_ms_min,
        heartbeat_interval_ms_max: consumer.heartbeat_interval_ms_max,
    };
    controller.share_group_config_bounds = config.share_groups.group_config_bounds();
    // Preferred-leader rebalancing (Kafka's keys, read as given; the controller has the
    // defaults).
    if let Some(v) = config.properties.get("auto.leader.rebalance.enable") {
        controller.auto_leader_rebalance_enable = v.trim().eq_ignore_ascii_case("true");
    }
    if let Some(seconds) = config
        .properties
        .get("leader.imbalance.check.interval.seconds")
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        controller.leader_imbalance_check_interval_ms = seconds.max(1) * 1000;
    }
    let mut node = MetadataNodeConfig::new(config.node_id, config.metadata_log_dir.clone());
    node.log_dirs = config.log_dirs.clone();
    node.controller = controller;
    node.broker_listeners = config
        .advertised_listeners
        .iter()
        .map(|l| Endpoint {
            name: l.name.clone(),
            host: l.host.clone(),
            port: l.port,
            security_protocol: SecurityProtocol::parse(&l.security_protocol)
                .unwrap_or(SecurityProtocol::Plaintext),
        })
        .collect();
    node.rack = config.rack.clone();
    node.register_broker = config.is_broker();
    node.quorum = match &config.quorum_role {
        QuorumRole::Single => QuorumMode::Single,
        QuorumRole::Voter {
            controller_listener,
        } => {
            let listen = format!("{}:{}", controller_listener.host, controller_listener.port);
            let listen_addr = tokio::net::lookup_host(&listen)
                .await
                .ok()
                .and_then(|mut addrs| addrs.next())
                .ok_or_else(|| StartError::Bind {
                    name: controller_listener.name.clone(),
                    addr: listen.clone(),
                    source: std::io::Error::other("the address does not resolve"),
                })?;
            QuorumMode::Voter {
                voters: resolve_voters(config).await?,
                listen_addr,
            }
        }
        QuorumRole::Observer => QuorumMode::Observer {
            voters: resolve_voters(config).await?,
        },
    };
    // The controller port's connections, both ways, as the controller listener's protocol says.
    let voter_addrs: Vec<(i32, SocketAddr)> = match &node.quorum {
        QuorumMode::Single => Vec::new(),
        QuorumMode::Voter { voters, .. } | QuorumMode::Observer { voters } => {
            voters.iter().map(|v| (v.node_id, v.addr)).collect()
        }
    };
    if let Some(security) = ControllerPortSecurity::from_config(config, &voter_addrs) {
        info!(
            listener = %security_listener(config),
            "the controller port authenticates every connection"
        );
        node.peer_security = Arc::new(security);
    }
    // Nodes of a quorum must share a cluster id: they are formatted (or given CLUSTER_ID)
    // first, as in Kafka. A single node makes its own.
    node.require_formatted = node.quorum != QuorumMode::Single;
    Ok(node)
}

fn security_listener(config: &BrokerConfig) -> String {
    config
        .controller_client
        .as_ref()
        .map_or_else(String::new, |c| {
            format!("{} ({})", c.listener_name, c.security_protocol)
        })
}

/// `controller.quorum.voters` with host names resolved (once, at start-up).
async fn resolve_voters(config: &BrokerConfig) -> Result<Vec<QuorumVoter>, StartError> {
    let mut voters = Vec::new();
    for voter in &config.controller_quorum_voters {
        let endpoint = format!("{}:{}", voter.host, voter.port);
        let addr = tokio::net::lookup_host(&endpoint)
            .await
            .map_err(|e| StartError::Voters(format!("{}@{endpoint}: {e}", voter.node_id)))?
            .next()
            .ok_or_else(|| {
                StartError::Voters(format!("{}@{endpoint} resolves to nothing", voter.node_id))
            })?;
        voters.push(QuorumVoter {
            node_id: voter.node_id,
            addr,
        });
    }
    Ok(voters)
}

/// Kafka's `socket.send.buffer.bytes` / `socket.receive.buffer.bytes`: `SO_SNDBUF` or
/// `SO_RCVBUF` set to `bytes`, or left to the OS (and its autotuning) when `bytes` is -1.
fn set_socket_buffer(
    socket: &impl std::os::fd::AsRawFd,
    option: libc::c_int,
    bytes: i32,
) -> std::io::Result<()> {
    if bytes < 0 {
        return Ok(());
    }
    let value: libc::c_int = bytes;
    // SAFETY: the descriptor belongs to `socket`, open for this call; the option value is a
    // live `c_int` whose size is passed alongside.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            std::ptr::addr_of!(value).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

async fn accept_loop(
    broker: Arc<Broker>,
    listener: TcpListener,
    l: Listener,
    connections: Arc<Semaphore>,
    per_ip: Arc<IpConnections>,
) {
    let name: Arc<str> = Arc::from(l.name.as_str());
    let tls = broker
        .config
        .tls_of(&l.name)
        .map(|t| tokio_rustls::TlsAcceptor::from(t.server_config.clone()));
    let sasl = broker.config.sasl_of(&l.name).cloned();
    let mut shutdown = broker.shutdown_signal();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            warn!(%peer, "max.connections reached; closing new connection");
            drop(stream);
            continue;
        };
        let Some(counted) = per_ip.try_open(peer.ip()) else {
            warn!(%peer, "max.connections.per.ip reached for this address; closing new connection");
            drop(stream);
            continue;
        };
        if let Err(e) = set_socket_buffer(
            &stream,
            libc::SO_SNDBUF,
            broker.config.socket_send_buffer_bytes,
        ) {
            debug!(%peer, "socket.send.buffer.bytes not applied: {e}");
        }
        let _ = stream.set_nodelay(true);
        let broker = broker.clone();
        let name = name.clone();
        let tls = tls.clone();
        let sasl = sasl.clone();
        tokio::spawn(async move {
            match (tls, sasl) {
                (None, None) => {
                    let principal = Arc::from(crate::request::ANONYMOUS_PRINCIPAL);
                    connection::serve(broker, stream, peer, name, principal).await;
                }
                (None, Some(sasl)) => {
                    connection::serve_sasl(broker, stream, peer, name, sasl).await;
                }
                (Some(acceptor), sasl) => {
                    connection::serve_tls(broker, acceptor, stream, peer, name, sasl).await;
                }
            }
            drop(counted);
            drop(permit);
        });
    }
}

/// Applies every new metadata image. An image that could not be applied in full (a partition
/// directory that cannot be created, a failed write) is tried again, with a growing pause,
/// until it is or a newer image arrives: without the retry, a partition that failed once
/// would stay unhosted until some unrelated metadata change, even after the cause went away.
async fn reconcile_loop(broker: Arc<Broker>, applied_at_start: bool) {
    let mut images = broker.metadata.subscribe();
    let mut shutdown = broker.shutdown_signal();
    // An image that came between the start-up pass and this subscription is applied too.
    images.mark_changed();
    let mut retry_after = next_reconcile_retry(applied_at_start, None);
    loop {
        let retry = async {
            match retry_after {
                Some(pause) => tokio::time::sleep(pause).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = images.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = retry => {}
            _ = shutdown.changed() => return,
        }
        let image = images.borrow_and_update().clone();
        let b = broker.clone();
        let applied = tokio::task::spawn_blocking(move || b.reconcile(&image))
            .await
            .unwrap_or(false);
        retry_after = next_reconcile_retry(applied, retry_after);
    }
}

const RECONCILE_RETRY_MIN: Duration = Duration::from_millis(100);
const RECONCILE_RETRY_MAX: Duration = Duration::from_secs(5);

/// The pause before trying an image again: none once it applied, else doubling up to a bound.
fn next_reconcile_retry(applied: bool, previous: Option<Duration>) -> Option<Duration> {
    if applied {
        return None;
    }
    Some(previous.map_or(RECONCILE_RETRY_MIN, |p| (p * 2).min(RECONCILE_RETRY_MAX)))
}

async fn housekeeping_loop(broker: Arc<Broker>) {
    let mut shutdown = broker.shutdown_signal();
    let retention_every =
        Duration::from_millis(broker.config.log_retention_check_interval_ms.max(10) as u64);
    let cleaner_every = Duration::from_millis(broker.config.log_cleaner_backoff_ms.max(10) as u64);
    let mut retention = tokio::time::interval(retention_every);
    let mut cleaner = tokio::time::interval(cleaner_every);
    let mut flush = tokio::time::interval(Duration::from_millis(1000));
    let mut snapshots = tokio::time::interval(Duration::from_secs(60));
    // Kafka's share coordinator jobs, each at its own interval.
    let share_settings = broker.share.coordinator.settings();
    let every = |ms: u64| Duration::from_millis(ms.max(10));
    let mut share_snapshots =
        tokio::time::interval(every(share_settings.cold_partition_snapshot_interval_ms));
    let mut share_prunes =
        tokio::time::interval(every(share_settings.state_topic_prune_interval_ms));
    loop {
        tokio::select! {
            _ = retention.tick() => {
                let b = broker.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    if let Err(e) = b.replicas.logs().run_retention_once(now_ms()) {
                        warn!("retention pass failed: {e}");
                    }
                }).await;
            }
            _ = cleaner.tick(), if broker.config.log_cleaner_enable => {
                let b = broker.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    if let Err(e) = b.replicas.run_cleaner_once(now_ms()) {
                        warn!("cleaner pass failed: {e}");
                    }
                }).await;
            }
            _ = flush.tick() => {
                let b = broker.clone();
                let _ = tokio::task::spawn_blocking(move || b.replicas.logs().flush_due(now_ms())).await;
            }
            _ = snapshots.tick() => {
                let b = broker.clone();
                let _ = tokio::task::spawn_blocking(move || b.replicas.checkpoint_producers(now_ms())).await;
            }
            _ = share_snapshots.tick() => {
                broker.share.coordinator.snapshot_cold_partitions(&broker.core).await;
            }
            _ = share_prunes.tick() => {
                broker.share.coordinator.prune(&broker.core).await;
            }
            _ = shutdown.changed() => return,
        }
    }
}

impl BrokerHandle {
    /// Stops accepting, lets connections end, snapshots producer state, flushes and writes the
    /// clean-shutdown markers.
    pub async fn shutdown(self) {
        let broker = self.broker;
        // Leadership moves first, while clients are still connected (Kafka's order): they get
        // NOT_LEADER_OR_FOLLOWER and find the new leaders instead of a closed connection.
        broker.metadata.controlled_shutdown().await;
        let moved_at = broker.image().offset;
        let reconciled = broker.wait_reconciled(moved_at);
        if tokio::time::timeout(RECONCILE_AT_SHUTDOWN_MAX, reconciled)
            .await
            .is_err()
        {
            warn!("partitions did not take the controlled shutdown's roles in time");
        }
        broker.signal_shutdown();
        for t in self.tasks {
            let _ = t.await;
        }
        broker.metadata.shutdown().await;
        let b = broker.clone();
        let _ = tokio::task::spawn_blocking(move || {
            b.replicas.checkpoint_producers(now_ms());
            if let Err(e) = b.replicas.logs().shutdown() {
                warn!("log shutdown: {e}");
            }
        })
        .await;
        info!("shutdown complete");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_reconcile_is_retried_with_a_doubling_pause_up_to_a_bound() {
        assert_eq!(next_reconcile_retry(true, None), None);
        assert_eq!(next_reconcile_retry(true, Some(RECONCILE_RETRY_MAX)), None);
        let mut pause = None;
        let mut seen = Vec::new();
        for _ in 0..10 {
            pause = next_reconcile_retry(false, pause);
            seen.push(pause.map(|p| p.as_millis()));
        }
        assert_eq!(
            seen,
            [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000].map(Some)
        );
    }

    fn buffer_size(socket: &impl std::os::fd::AsRawFd, option: libc::c_int) -> libc::c_int {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: a live descriptor and a live `c_int` with its size.
        let rc = unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                std::ptr::addr_of_mut!(value).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        value
    }

    /// Kafka's default of 102400 bytes is applied (Linux reports it doubled); -1 leaves the
    /// OS default alone.
    #[test]
    fn socket_buffers_follow_the_config() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let os_default = buffer_size(&listener, libc::SO_SNDBUF);
        set_socket_buffer(&listener, libc::SO_SNDBUF, -1).unwrap();
        assert_eq!(buffer_size(&listener, libc::SO_SNDBUF), os_default);
        set_socket_buffer(&listener, libc::SO_RCVBUF, 102_400).unwrap();
        assert_eq!(buffer_size(&listener, libc::SO_RCVBUF), 204_800);
        set_socket_buffer(&listener, libc::SO_SNDBUF, 102_400).unwrap();
        assert_eq!(buffer_size(&listener, libc::SO_SNDBUF), 204_800);
    }
}
