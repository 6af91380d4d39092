//! The typed view of the static configuration, validated once at start-up.

use std::path::PathBuf;
use std::sync::Arc;

use super::authorizer::authorizer_settings;
use super::connection_limits::ConnectionsPerIp;
use super::consumer_groups::{consumer_group_settings, ConsumerGroupSettings};
use super::defs::{self, ConfigKind};
use super::error::ConfigError;
pub use super::listener::Listener;
use super::peer::{self, PeerClient};
use super::reader::{invalid, parse_bool, Reader};
use super::sasl::{self, ListenerSasl};
use super::security::{self, NamedListener};
use super::share_coordinator::{share_coordinator_settings, ShareCoordinatorSettings};
use super::share_groups::{share_group_settings, ShareGroupSettings};
use super::static_props::StaticProperties;
use super::tls::{self, ListenerTls};
use super::unserved;
use crate::authorizer::AuthorizerSettings;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessRole {
    Broker,
    Controller,
}

/// One entry of `controller.quorum.voters` (`id@host:port`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuorumVoter {
    pub node_id: i32,
    pub host: String,
    pub port: u16,
}

/// How this node takes part in the metadata quorum, from `process.roles`,
/// `controller.quorum.voters` and `controller.listener.names`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuorumRole {
    /// Combined roles and no voters: one node on local files, no format step (the default).
    Single,
    /// The controller role: a voter, on its controller listener (the first listener named in
    /// `controller.listener.names`). Without the broker role it serves no Kafka clients.
    Voter { controller_listener: Listener },
    /// The broker role only: follows the voters' committed log without voting.
    Observer,
}

/// Every static setting the broker acts on, typed.
#[derive(Clone, Debug)]
pub struct BrokerConfig {
    pub node_id: i32,
    pub process_roles: Vec<ProcessRole>,
    pub listeners: Vec<Listener>,
    pub advertised_listeners: Vec<Listener>,
    pub controller_listener_names: Vec<String>,
    pub inter_broker_listener_name: String,
    /// How this broker dials the other brokers' inter-broker listener.
    pub inter_broker_client: PeerClient,
    /// How this node dials the controllers' listener; `None` without a quorum.
    pub controller_client: Option<PeerClient>,
    /// The TLS configuration of each SSL and SASL_SSL listener.
    pub listener_tls: Vec<ListenerTls>,
    /// The mechanisms and users of each SASL_PLAINTEXT and SASL_SSL listener.
    pub listener_sasl: Vec<Arc<ListenerSasl>>,
    pub controller_quorum_voters: Vec<QuorumVoter>,
    /// The node's part in the metadata quorum, validated against the keys above.
    pub quorum_role: QuorumRole,
    pub rack: Option<String>,
    pub log_dirs: Vec<PathBuf>,
    pub metadata_log_dir: PathBuf,
    pub num_partitions: i32,
    pub default_replication_factor: i16,
    pub auto_create_topics_enable: bool,
    pub delete_topic_enable: bool,
    pub message_max_bytes: i32,
    pub socket_request_max_bytes: usize,
    pub max_connections: usize,
    /// `max.connections.per.ip` and its overrides.
    pub max_connections_per_ip: ConnectionsPerIp,
    pub queued_max_requests: usize,
    /// Quiet connections are closed after this long; negative: never.
    pub connections_max_idle_ms: i64,
    /// How long a refused login waits before its answer and the close (KIP-306).
    pub connection_failed_authentication_delay_ms: u64,
    pub log_retention_check_interval_ms: i64,
    pub log_flush_scheduler_interval_ms: i64,
    pub log_cleaner_enable: bool,
    pub log_cleaner_backoff_ms: i64,
    pub num_recovery_threads_per_data_dir: usize,
    pub min_insync_replicas: i32,
    pub unclean_leader_election_enable: bool,
    /// `quota.window.num` and `quota.window.size.seconds`: the byte-rate and request quotas'
    /// sampling.
    pub quota_window_num: i32,
    pub quota_window_size_seconds: i32,
    /// `controller.quota.window.num` and `controller.quota.window.size.seconds`.
    pub controller_quota_window_num: i32,
    pub controller_quota_window_size_seconds: i32,
    pub broker_session_timeout_ms: i64,
    pub broker_heartbeat_interval_ms: i64,
    pub offsets_topic_num_partitions: i32,
    pub offsets_topic_replication_factor: i16,
    pub offsets_topic_segment_bytes: i64,
    pub offsets_retention_minutes: i64,
    pub offsets_retention_check_interval_ms: i64,
    pub offset_metadata_max_bytes: usize,
    pub transaction_state_log_num_partitions: i32,
    pub transaction_state_log_replication_factor: i16,
    pub transaction_state_log_min_isr: i32,
    pub transaction_state_log_segment_bytes: i64,
    pub transaction_max_timeout_ms: i64,
    pub transactional_id_expiration_ms: i64,
    pub transaction_abort_timed_out_transaction_cleanup_interval_ms: i64,
    pub transaction_remove_expired_transaction_cleanup_interval_ms: i64,
    pub transaction_partition_verification_enable: bool,
    pub producer_id_expiration_ms: i64,
    pub group_initial_rebalance_delay_ms: i64,
    pub group_min_session_timeout_ms: i64,
    pub group_max_session_timeout_ms: i64,
    pub group_max_size: i32,
    /// `group.consumer.*` (KIP-848).
    pub consumer_groups: ConsumerGroupSettings,
    /// `group.coordinator.rebalance.protocols` names `consumer`: ConsumerGroupHeartbeat is served.
    pub consumer_protocol_enabled: bool,
    /// `group.share.*` (KIP-932).
    pub share_groups: ShareGroupSettings,
    /// `share.coordinator.*`: the share coordinator and `__share_group_state`.
    pub share_coordinator: ShareCoordinatorSettings,
    pub replica_lag_time_max_ms: i64,
    /// `socket.send.buffer.bytes` of accepted client sockets; -1 keeps the OS default.
    pub socket_send_buffer_bytes: i32,
    /// `socket.receive.buffer.bytes` of client listeners; -1 keeps the OS default.
    pub socket_receive_buffer_bytes: i32,
    /// The StandardAuthorizer's settings when `authorizer.class.name` names it; `None`: no
    /// authorizer, every request allowed (Kafka's default).
    pub authorizer: Option<AuthorizerSettings>,
    /// The whole validated property set, for DescribeConfigs and the log defaults.
    pub properties: StaticProperties,
}

impl BrokerConfig {
    /// Validates every known key and builds the typed configuration.
    pub fn from_properties(props: StaticProperties) -> Result<BrokerConfig, ConfigError> {
        for (key, value) in props.iter() {
            if let Some(def) = defs::find(key) {
                validate_value(def, key, value)?;
            }
        }
        let r = Reader { props: &props };
        let node_id = match props.get("node.id") {
            Some(_) => r.int("node.id")?,
            None => match props.get("broker.id") {
                Some(_) => r.int("broker.id")?,
                None => r.int("node.id")?,
            },
        };
        let process_roles = r
            .list("process.roles")
            .iter()
            .map(|role| match role.as_str() {
                "broker" => Ok(ProcessRole::Broker),
                "controller" => Ok(ProcessRole::Controller),
                other => Err(invalid(
                    "process.roles",
                    other,
                    "expected broker and/or controller",
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if process_roles.is_empty() {
            return Err(invalid(
                "process.roles",
                "",
                "at least one role is required",
            ));
        }
        check_group_protocols(&r.list("group.coordinator.rebalance.protocols"))?;
        let protocol_map = parse_protocol_map(&r.list("listener.security.protocol.map"))?;
        let listeners = parse_listeners("listeners", &r.list("listeners"), &protocol_map)?;
        if listeners.is_empty() {
            return Err(invalid(
                "listeners",
                "",
                "at least one listener is required",
            ));
        }
        let controller_listener_names = r.list("controller.listener.names");
        let advertised_listeners = match props.get("advertised.listeners") {
            Some(_) => parse_listeners(
                "advertised.listeners",
                &r.list("advertised.listeners"),
                &protocol_map,
            )?,
            None => listeners
                .iter()
                .filter(|l| !controller_listener_names.contains(&l.name))
                .cloned()
                .collect(),
        };
        for listener in &listeners {
            security::check_listener("listeners", listener)?;
        }
        for listener in &advertised_listeners {
            security::check_listener("advertised.listeners", listener)?;
        }
        // Per-listener keys may name the listeners this node binds and, on a broker-only node,
        // the controller listener it dials.
        let mut named: Vec<NamedListener<'_>> = listeners
            .iter()
            .map(|l| NamedListener {
                name: &l.name,
                security_protocol: &l.security_protocol,
            })
            .collect();
        for name in &controller_listener_names {
            if let Some(protocol) = peer::protocol_of(&protocol_map, name) {
                if !named.iter().any(|l| l.name == name) {
                    named.push(NamedListener {
                        name,
                        security_protocol: protocol,
                    });
                }
            }
        }
        security::check_keys(&props, &named)?;
        unserved::check_unserved_keys(&props)?;
        let is_broker = process_roles.contains(&ProcessRole::Broker);
        let broker_advertised: Vec<Listener> = advertised_listeners
            .iter()
            .filter(|l| !controller_listener_names.contains(&l.name))
            .cloned()
            .collect();
        let (inter_broker_listener_name, inter_broker_protocol) =
            peer::inter_broker_listener(&props, &broker_advertised, &protocol_map, is_broker)?;
        let listener_sasl = sasl::listener_sasl(&props, &listeners)?
            .into_iter()
            .map(Arc::new)
            .collect();
        let listener_tls = tls::listener_tls(&props, &listeners)?;
        let controller_quorum_voters = r
            .list("controller.quorum.voters")
            .iter()
            .map(|v| parse_voter(v))
            .collect::<Result<Vec<_>, _>>()?;
        let quorum_role = quorum_role(
            node_id,
            &process_roles,
            &listeners,
            &controller_listener_names,
            &controller_quorum_voters,
            &r.list("controller.quorum.bootstrap.servers"),
        )?;
        let inter_broker_client =
            peer::inter_broker_client(&props, &inter_broker_listener_name, &inter_broker_protocol)?;
        let controller_client = match &quorum_role {
            QuorumRole::Single => None,
            QuorumRole::Voter {
                controller_listener,
            } => Some(peer::controller_client(
                &props,
                &controller_listener_names,
                &protocol_map,
                Some(controller_listener),
            )?),
            QuorumRole::Observer => Some(peer::controller_client(
                &props,
                &controller_listener_names,
                &protocol_map,
                None,
            )?),
        };
        let log_dirs: Vec<PathBuf> = match props.get("log.dirs") {
            Some(_) => r.list("log.dirs"),
            None => r.list("log.dir"),
        }
        .into_iter()
        .map(PathBuf::from)
        .collect();
        if log_dirs.is_empty() {
            return Err(invalid(
                "log.dirs",
                "",
                "at least one log directory is required",
            ));
        }
        let metadata_log_dir = props
            .get("metadata.log.dir")
            .map(PathBuf::from)
            .unwrap_or_else(|| log_dirs[0].clone());
        Ok(BrokerConfig {
            node_id,
            process_roles,
            listeners,
            advertised_listeners,
            controller_listener_names,
            inter_broker_listener_name,
            inter_broker_client,
            controller_client,
            listener_tls,
            listener_sasl,
            controller_quorum_voters,
            quorum_role,
            rack: props.get("broker.rack").map(str::to_string),
            log_dirs,
            metadata_log_dir,
            num_partitions: r.int("num.partitions")?,
            default_replication_factor: r.short("default.replication.factor")?,
            auto_create_topics_enable: r.boolean("auto.create.topics.enable")?,
            delete_topic_enable: r.boolean("delete.topic.enable")?,
            message_max_bytes: r.int("message.max.bytes")?,
            socket_request_max_bytes: r.int("socket.request.max.bytes")? as usize,
            max_connections: r.int("max.connections")? as usize,
            max_connections_per_ip: ConnectionsPerIp::parse(
                r.int("max.connections.per.ip")?,
                &r.raw("max.connections.per.ip.overrides")
                    .unwrap_or_default(),
            )?,
            queued_max_requests: r.int("queued.max.requests")? as usize,
            connections_max_idle_ms: r.long("connections.max.idle.ms")?,
            connection_failed_authentication_delay_ms: failed_authentication_delay_ms(
                r.int("connection.failed.authentication.delay.ms")?,
                r.long("connections.max.idle.ms")?,
            )?,
            log_retention_check_interval_ms: r.long("log.retention.check.interval.ms")?,
            log_flush_scheduler_interval_ms: r.long("log.flush.scheduler.interval.ms")?,
            log_cleaner_enable: r.boolean("log.cleaner.enable")?,
            log_cleaner_backoff_ms: r.long("log.cleaner.backoff.ms")?,
            num_recovery_threads_per_data_dir: r.int("num.recovery.threads.per.data.dir")? as usize,
            min_insync_replicas: r.int("min.insync.replicas")?,
            unclean_leader_election_enable: r.boolean("unclean.leader.election.enable")?,
            quota_window_num: r.int("quota.window.num")?,
            quota_window_size_seconds: r.int("quota.window.size.seconds")?,
            controller_quota_window_num: r.int("controller.quota.window.num")?,
            controller_quota_window_size_seconds: r.int("controller.quota.window.size.seconds")?,
            broker_session_timeout_ms: r.int("broker.session.timeout.ms")? as i64,
            broker_heartbeat_interval_ms: r.int("broker.heartbeat.interval.ms")? as i64,
            offsets_topic_num_partitions: r.int("offsets.topic.num.partitions")?,
            offsets_topic_replication_factor: r.short("offsets.topic.replication.factor")?,
            offsets_topic_segment_bytes: r.int("offsets.topic.segment.bytes")? as i64,
            offsets_retention_minutes: r.int("offsets.retention.minutes")? as i64,
            offsets_retention_check_interval_ms: r.long("offsets.retention.check.interval.ms")?,
            offset_metadata_max_bytes: r.int("offset.metadata.max.bytes")? as usize,
            transaction_state_log_num_partitions: r.int("transaction.state.log.num.partitions")?,
            transaction_state_log_replication_factor: r
                .short("transaction.state.log.replication.factor")?,
            transaction_state_log_min_isr: r.int("transaction.state.log.min.isr")?,
            transaction_state_log_segment_bytes: r.int("transaction.state.log.segment.bytes")?
                as i64,
            transaction_max_timeout_ms: r.int("transaction.max.timeout.ms")? as i64,
            transactional_id_expiration_ms: r.int("transactional.id.expiration.ms")? as i64,
            transaction_abort_timed_out_transaction_cleanup_interval_ms: r
                .int("transaction.abort.timed.out.transaction.cleanup.interval.ms")?
                as i64,
            transaction_remove_expired_transaction_cleanup_interval_ms: r
                .int("transaction.remove.expired.transaction.cleanup.interval.ms")?
                as i64,
            transaction_partition_verification_enable: r
                .boolean("transaction.partition.verification.enable")?,
            producer_id_expiration_ms: r.int("producer.id.expiration.ms")? as i64,
            group_initial_rebalance_delay_ms: r.int("group.initial.rebalance.delay.ms")? as i64,
            group_min_session_timeout_ms: r.int("group.min.session.timeout.ms")? as i64,
            group_max_session_timeout_ms: r.int("group.max.session.timeout.ms")? as i64,
            group_max_size: r.int("group.max.size")?,
            consumer_groups: consumer_group_settings(&r)?,
            consumer_protocol_enabled: r
                .list("group.coordinator.rebalance.protocols")
                .iter()
                .any(|protocol| protocol == "consumer"),
            share_groups: share_group_settings(&r)?,
            share_coordinator: share_coordinator_settings(&r)?,
            replica_lag_time_max_ms: r.long("replica.lag.time.max.ms")?,
            socket_send_buffer_bytes: r.int("socket.send.buffer.bytes")?,
            socket_receive_buffer_bytes: r.int("socket.receive.buffer.bytes")?,
            authorizer: authorizer_settings(&props)?,
            properties: props,
        })
    }

    pub fn is_controller(&self) -> bool {
        self.process_roles.contains(&ProcessRole::Controller)
    }

    pub fn is_broker(&self) -> bool {
        self.process_roles.contains(&ProcessRole::Broker)
    }

    /// Listeners that serve Kafka clients (not the controller listeners).
    pub fn client_listeners(&self) -> impl Iterator<Item = &Listener> {
        self.listeners
            .iter()
            .filter(|l| !self.controller_listener_names.contains(&l.name))
    }

    /// The SASL configuration of listener `name`, when it is a SASL listener.
    pub fn sasl_of(&self, name: &str) -> Option<&Arc<ListenerSasl>> {
        self.listener_sasl.iter().find(|s| s.listener_name == name)
    }

    /// The TLS configuration of listener `name`, when it is an SSL or SASL_SSL listener.
    pub fn tls_of(&self, name: &str) -> Option<&ListenerTls> {
        self.listener_tls.iter().find(|t| t.listener_name == name)
    }

    /// The effective value of a key: set explicitly, or the table default.
    pub fn value_of(&self, key: &str) -> Option<String> {
        self.properties
            .get(key)
            .map(str::to_string)
            .or_else(|| defs::find(key).and_then(|d| d.default.map(str::to_string)))
    }
}

/// Kafka's rule: a delayed refusal must be answered before the idle connection would be closed.
fn failed_authentication_delay_ms(delay_ms: i32, idle_max_ms: i64) -> Result<u64, ConfigError> {
    if idle_max_ms >= 0 && i64::from(delay_ms) >= idle_max_ms {
        return Err(invalid(
            "connection.failed.authentication.delay.ms",
            &delay_ms.to_string(),
            &format!(
                "connection.failed.authentication.delay.ms={delay_ms} should always be less than \
                 connections.max.idle.ms={idle_max_ms} to prevent failed authentication \
                 responses from timing out"
            ),
        ));
    }
    Ok(u64::try_from(delay_ms).unwrap_or(0))
}

/// Checks a value against its key's type and bounds.
pub(crate) fn validate_value(
    def: &defs::BrokerConfigDef,
    key: &str,
    value: &str,
) -> Result<(), ConfigError> {
    let trimmed = value.trim();
    match def.kind {
        ConfigKind::Boolean => {
            parse_bool(trimmed).ok_or_else(|| invalid(key, value, "expected true or false"))?;
        }
        ConfigKind::Int | ConfigKind::Long | ConfigKind::Short => {
            let n: i64 = trimmed
                .parse()
                .map_err(|_| invalid(key, value, "expected a whole number"))?;
            let (lo, hi) = match def.kind {
                ConfigKind::Int => (i32::MIN as i64, i32::MAX as i64),
                ConfigKind::Short => (i16::MIN as i64, i16::MAX as i64),
                _ => (i64::MIN, i64::MAX),
            };
            if n < lo || n > hi {
                return Err(invalid(key, value, "out of range"));
            }
            if let Some(min) = def.min {
                if n < min {
                    return Err(invalid(key, value, &format!("must be at least {min}")));
                }
            }
            if let Some(max) = def.max {
                if n > max {
                    return Err(invalid(key, value, &format!("must be no more than {max}")));
                }
            }
        }
        ConfigKind::Double => {
            trimmed
                .parse::<f64>()
                .map_err(|_| invalid(key, value, "expected a number"))?;
        }
        ConfigKind::String | ConfigKind::List | ConfigKind::Password | ConfigKind::Class => {}
    }
    Ok(())
}

/// `group.coordinator.rebalance.protocols` may name only what this broker serves: the classic
/// and the consumer (KIP-848) protocols, and `share`, which Kafka 4.4 accepts and ignores (the
/// `share.version` feature turns share groups on); `streams` groups are not served.
fn check_group_protocols(protocols: &[String]) -> Result<(), ConfigError> {
    let key = "group.coordinator.rebalance.protocols";
    let value = protocols.join(",");
    if !protocols.iter().any(|p| p == "classic") {
        return Err(invalid(key, &value, "the classic protocol is required"));
    }
    if let Some(other) = protocols
        .iter()
        .find(|p| !matches!(p.as_str(), "classic" | "consumer" | "share"))
    {
        return Err(invalid(
            key,
            &value,
            &format!("Shale serves the classic, consumer and share group protocols, not {other}"),
        ));
    }
    Ok(())
}

fn parse_protocol_map(entries: &[String]) -> Result<Vec<(String, String)>, ConfigError> {
    entries
        .iter()
        .map(|e| {
            e.split_once(':')
                .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
                .ok_or_else(|| {
                    invalid(
                        "listener.security.protocol.map",
                        e,
                        "expected LISTENER_NAME:PROTOCOL",
                    )
                })
        })
        .collect()
}

fn parse_listeners(
    key: &str,
    entries: &[String],
    protocol_map: &[(String, String)],
) -> Result<Vec<Listener>, ConfigError> {
    entries
        .iter()
        .map(|entry| {
            let (name, rest) = entry
                .split_once("://")
                .ok_or_else(|| invalid(key, entry, "expected NAME://host:port"))?;
            let (host, port) = rest
                .rsplit_once(':')
                .ok_or_else(|| invalid(key, entry, "expected NAME://host:port"))?;
            let port: u16 = port
                .parse()
                .map_err(|_| invalid(key, entry, "port must be 0-65535"))?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let host = if host.is_empty() { "0.0.0.0" } else { host };
            let security_protocol = protocol_map
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, p)| p.clone())
                .ok_or_else(|| {
                    invalid(
                        key,
                        entry,
                        &format!("listener {name} has no entry in listener.security.protocol.map"),
                    )
                })?;
            Ok(Listener {
                name: name.to_string(),
                host: host.to_string(),
                port,
                security_protocol,
            })
        })
        .collect()
}

/// Checks the role keys against each other the way Kafka does and picks the quorum role.
fn quorum_role(
    node_id: i32,
    roles: &[ProcessRole],
    listeners: &[Listener],
    controller_listener_names: &[String],
    voters: &[QuorumVoter],
    bootstrap_servers: &[String],
) -> Result<QuorumRole, ConfigError> {
    let is_controller = roles.contains(&ProcessRole::Controller);
    let is_broker = roles.contains(&ProcessRole::Broker);
    let roles_text = roles
        .iter()
        .map(|r| match r {
            ProcessRole::Broker => "broker",
            ProcessRole::Controller => "controller",
        })
        .collect::<Vec<_>>()
        .join(",");
    if voters.is_empty() {
        if !bootstrap_servers.is_empty() {
            return Err(invalid(
                "controller.quorum.bootstrap.servers",
                &bootstrap_servers.join(","),
                "dynamic quorums are not supported; list the voters in controller.quorum.voters",
            ));
        }
        if is_controller && is_broker {
            return Ok(QuorumRole::Single);
        }
        return Err(invalid(
            "controller.quorum.voters",
            "",
            &format!(
                "required with process.roles={roles_text} (only a combined broker,controller \
                 node may run without a quorum)"
            ),
        ));
    }
    let voters_text = voters
        .iter()
        .map(|v| format!("{}@{}:{}", v.node_id, v.host, v.port))
        .collect::<Vec<_>>()
        .join(",");
    let mut ids: Vec<i32> = voters.iter().map(|v| v.node_id).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != voters.len() {
        return Err(invalid(
            "controller.quorum.voters",
            &voters_text,
            "a voter id is listed twice",
        ));
    }
    let me = voters.iter().find(|v| v.node_id == node_id);
    let controller_listeners: Vec<&Listener> = listeners
        .iter()
        .filter(|l| controller_listener_names.contains(&l.name))
        .collect();
    if !is_controller {
        if me.is_some() {
            return Err(invalid(
                "controller.quorum.voters",
                &voters_text,
                &format!(
                    "node.id {node_id} has only the broker role and must not be a voter; \
                     add controller to process.roles or remove it from the voters"
                ),
            ));
        }
        if controller_listener_names.is_empty() {
            return Err(invalid(
                "controller.listener.names",
                "",
                "a broker needs the name of the controllers' listener",
            ));
        }
        if let Some(l) = controller_listeners.first() {
            return Err(invalid(
                "listeners",
                &l.name,
                "a broker-only node must not have a controller listener (one named in \
                 controller.listener.names)",
            ));
        }
        return Ok(QuorumRole::Observer);
    }
    let Some(me) = me else {
        return Err(invalid(
            "controller.quorum.voters",
            &voters_text,
            &format!("node.id {node_id} has the controller role but is not among the voters"),
        ));
    };
    // Kafka takes the first name of controller.listener.names as the one voters use.
    let Some(controller_listener) = controller_listener_names
        .first()
        .and_then(|name| controller_listeners.iter().find(|l| l.name == *name))
    else {
        return Err(invalid(
            "controller.listener.names",
            &controller_listener_names.join(","),
            "a controller needs a listener in listeners with this name (e.g. \
             CONTROLLER://host:port, the address its entry in controller.quorum.voters names)",
        ));
    };
    if controller_listener.port != 0 && controller_listener.port != me.port {
        return Err(invalid(
            "controller.quorum.voters",
            &voters_text,
            &format!(
                "node.id {node_id} is listed on port {}, but its controller listener {} binds \
                 port {}",
                me.port, controller_listener.name, controller_listener.port
            ),
        ));
    }
    if !is_broker {
        if let Some(l) = listeners
            .iter()
            .find(|l| !controller_listener_names.contains(&l.name))
        {
            return Err(invalid(
                "listeners",
                &l.name,
                "a controller-only node may only have controller listeners (named in \
                 controller.listener.names)",
            ));
        }
    }
    Ok(QuorumRole::Voter {
        controller_listener: (*controller_listener).clone(),
    })
}

fn parse_voter(entry: &str) -> Result<QuorumVoter, ConfigError> {
    let key = "controller.quorum.voters";
    let (id, addr) = entry
        .split_once('@')
        .ok_or_else(|| invalid(key, entry, "expected id@host:port"))?;
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or_else(|| invalid(key, entry, "expected id@host:port"))?;
    Ok(QuorumVoter {
        node_id: id
            .trim()
            .parse()
            .map_err(|_| invalid(key, entry, "node id must be a number"))?,
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port: port
            .parse()
            .map_err(|_| invalid(key, entry, "port must be 0-65535"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::static_props::ValueOrigin;
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> StaticProperties {
        let mut p = StaticProperties::default();
        for (k, v) in pairs {
            p.set(k, v, ValueOrigin::Override);
        }
        p
    }

    #[test]
    fn defaults_are_a_single_node_on_loopback() {
        let cfg = BrokerConfig::from_properties(StaticProperties::default()).unwrap();
        assert_eq!(cfg.node_id, 1);
        assert!(cfg.is_broker() && cfg.is_controller());
        assert_eq!(cfg.listeners[0].host, "127.0.0.1");
        assert_eq!(cfg.listeners[0].port, 9092);
        assert_eq!(cfg.advertised_listeners, cfg.listeners);
        assert_eq!(cfg.log_dirs, vec![PathBuf::from("./data")]);
        assert_eq!(cfg.message_max_bytes, 1_048_588);
    }

    #[test]
    fn the_failed_authentication_delay_must_be_shorter_than_the_idle_time() {
        let config = BrokerConfig::from_properties(props(&[])).unwrap();
        assert_eq!(config.connection_failed_authentication_delay_ms, 100);
        assert_eq!(config.connections_max_idle_ms, 600_000);
        let err = BrokerConfig::from_properties(props(&[
            ("connections.max.idle.ms", "1000"),
            ("connection.failed.authentication.delay.ms", "1000"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(
                "connection.failed.authentication.delay.ms=1000 should always be less than \
                 connections.max.idle.ms=1000 to prevent failed authentication responses from \
                 timing out"
            ),
            "{err}"
        );
        // Idle expiry off: any delay, as in Kafka.
        let config = BrokerConfig::from_properties(props(&[
            ("connections.max.idle.ms", "-1"),
            ("connection.failed.authentication.delay.ms", "5000"),
        ]))
        .unwrap();
        assert_eq!(config.connection_failed_authentication_delay_ms, 5000);
        assert!(BrokerConfig::from_properties(props(&[(
            "connection.failed.authentication.delay.ms",
            "-1"
        )]))
        .is_err());
    }

    #[test]
    fn only_the_classic_and_consumer_group_protocols_may_be_named() {
        let config = BrokerConfig::from_properties(props(&[])).unwrap();
        assert_eq!(
            config
                .properties
                .get("group.coordinator.rebalance.protocols"),
            None
        );
        BrokerConfig::from_properties(props(&[(
            "group.coordinator.rebalance.protocols",
            "classic",
        )]))
        .unwrap();
        BrokerConfig::from_properties(props(&[(
            "group.coordinator.rebalance.protocols",
            "classic,consumer",
        )]))
        .unwrap();
        BrokerConfig::from_properties(props(&[(
            "group.coordinator.rebalance.protocols",
            "classic,consumer,share",
        )]))
        .unwrap();
        for value in ["consumer", "classic,streams", "classic,consumer,streams"] {
            let err = BrokerConfig::from_properties(props(&[(
                "group.coordinator.rebalance.protocols",
                value,
            )]))
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("group.coordinator.rebalance.protocols"),
                "{err}"
            );
        }
    }

    #[test]
    fn invalid_values_name_the_key() {
        let err = BrokerConfig::from_properties(props(&[("num.partitions", "zero")])).unwrap_err();
        assert!(err.to_string().contains("num.partitions"), "{err}");
        let err =
            BrokerConfig::from_properties(props(&[("log.segment.bytes", "1000")])).unwrap_err();
        assert!(err.to_string().contains("log.segment.bytes"), "{err}");
        let err = BrokerConfig::from_properties(props(&[("auto.create.topics.enable", "yes")]))
            .unwrap_err();
        assert!(err.to_string().contains("auto.create.topics.enable"));
        let err =
            BrokerConfig::from_properties(props(&[("listeners", "PLAIN://x:1")])).unwrap_err();
        assert!(
            err.to_string().contains("listener.security.protocol.map"),
            "{err}"
        );
    }

    #[test]
    fn controller_listener_is_not_advertised() {
        let cfg = BrokerConfig::from_properties(props(&[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            ),
            ("controller.quorum.voters", "1@127.0.0.1:9093"),
        ]))
        .unwrap();
        assert_eq!(cfg.advertised_listeners.len(), 1);
        assert_eq!(cfg.advertised_listeners[0].name, "PLAINTEXT");
        assert_eq!(cfg.client_listeners().count(), 1);
        assert_eq!(
            cfg.controller_quorum_voters,
            vec![QuorumVoter {
                node_id: 1,
                host: "127.0.0.1".into(),
                port: 9093
            }]
        );
    }

    fn role_error(pairs: &[(&str, &str)]) -> String {
        BrokerConfig::from_properties(props(pairs))
            .unwrap_err()
            .to_string()
    }

    const VOTERS: &str = "1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097";

    #[test]
    fn roles_and_voters_pick_the_quorum_role() {
        let single = BrokerConfig::from_properties(StaticProperties::default()).unwrap();
        assert_eq!(single.quorum_role, QuorumRole::Single);

        let combined = BrokerConfig::from_properties(props(&[
            ("node.id", "2"),
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9095",
            ),
            ("controller.quorum.voters", VOTERS),
        ]))
        .unwrap();
        let QuorumRole::Voter {
            controller_listener,
        } = &combined.quorum_role
        else {
            panic!("{:?}", combined.quorum_role)
        };
        assert_eq!(controller_listener.port, 9095);
        assert_eq!(combined.client_listeners().count(), 1);

        let controller_only = BrokerConfig::from_properties(props(&[
            ("node.id", "3"),
            ("process.roles", "controller"),
            ("listeners", "CONTROLLER://127.0.0.1:9097"),
            ("controller.quorum.voters", VOTERS),
        ]))
        .unwrap();
        assert!(matches!(
            controller_only.quorum_role,
            QuorumRole::Voter { .. }
        ));
        assert_eq!(controller_only.client_listeners().count(), 0);
        assert!(controller_only.advertised_listeners.is_empty());

        let broker_only = BrokerConfig::from_properties(props(&[
            ("node.id", "4"),
            ("process.roles", "broker"),
            ("listeners", "PLAINTEXT://127.0.0.1:9098"),
            ("controller.quorum.voters", VOTERS),
        ]))
        .unwrap();
        assert_eq!(broker_only.quorum_role, QuorumRole::Observer);
    }

    #[test]
    fn inconsistent_roles_are_refused_naming_the_key() {
        let err = role_error(&[
            ("node.id", "4"),
            ("listeners", "PLAINTEXT://:9092,CONTROLLER://:9099"),
            ("controller.quorum.voters", VOTERS),
        ]);
        assert!(
            err.contains("controller.quorum.voters") && err.contains("not among the voters"),
            "{err}"
        );
        let err = role_error(&[
            ("node.id", "1"),
            ("process.roles", "broker"),
            ("listeners", "PLAINTEXT://:9092"),
            ("controller.quorum.voters", VOTERS),
        ]);
        assert!(err.contains("must not be a voter"), "{err}");
        let err = role_error(&[
            ("node.id", "1"),
            ("listeners", "PLAINTEXT://:9092"),
            ("controller.quorum.voters", VOTERS),
        ]);
        assert!(err.contains("controller.listener.names"), "{err}");
        let err = role_error(&[
            ("node.id", "1"),
            ("listeners", "PLAINTEXT://:9092,CONTROLLER://:9100"),
            ("controller.quorum.voters", VOTERS),
        ]);
        assert!(err.contains("port 9093"), "{err}");
        let err = role_error(&[
            ("node.id", "1"),
            ("process.roles", "controller"),
            ("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"),
            ("controller.quorum.voters", VOTERS),
        ]);
        assert!(
            err.contains("listeners") && err.contains("controller-only"),
            "{err}"
        );
        let err = role_error(&[
            ("node.id", "5"),
            ("process.roles", "broker"),
            ("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"),
            ("controller.quorum.voters", VOTERS),
        ]);
        assert!(err.contains("broker-only"), "{err}");
        let err = role_error(&[("process.roles", "broker")]);
        assert!(err.contains("controller.quorum.voters"), "{err}");
        let err = role_error(&[("controller.quorum.bootstrap.servers", "127.0.0.1:9093")]);
        assert!(err.contains("controller.quorum.bootstrap.servers"), "{err}");
        let err = role_error(&[
            ("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"),
            (
                "controller.quorum.voters",
                "1@127.0.0.1:9093,1@127.0.0.1:9095",
            ),
        ]);
        assert!(err.contains("twice"), "{err}");
    }
}
