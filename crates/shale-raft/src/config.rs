//! Quorum configuration and the `controller.quorum.voters` parser.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::error::RaftError;
use crate::security::{BoxedPeerStream, PeerSecurity};

/// Heartbeat period of the leader; well under the election timeout so one lost heartbeat does not
/// trigger an election.
pub const DEFAULT_HEARTBEAT_INTERVAL_MS: u64 = 100;
/// Lower bound of the randomised election timeout.
pub const DEFAULT_ELECTION_TIMEOUT_MIN_MS: u64 = 400;
/// Upper bound of the randomised election timeout.
///
/// Kafka's `controller.quorum.election.timeout.ms` is 1000, but openraft also uses this upper
/// bound as the leader lease during which followers refuse to vote for anyone else, so the first
/// candidate after a leader crash is usually refused and the second round wins: failover takes
/// roughly one lease plus one timeout. 400..800 ms keeps that under 2 s (measured median about
/// 1.2 s) while staying at four or more heartbeats.
pub const DEFAULT_ELECTION_TIMEOUT_MAX_MS: u64 = 800;
/// How many log entries may accumulate after the last snapshot before a new one is taken.
pub const DEFAULT_SNAPSHOT_EVERY_ENTRIES: u64 = 10_000;
/// How many entries to keep in the log behind a snapshot so slightly lagging followers catch up
/// from the log instead of needing a whole snapshot.
pub const DEFAULT_LOG_ENTRIES_KEPT_AFTER_SNAPSHOT: u64 = 1_000;
/// Timeout for one RPC between voters (a connect plus one request and its response).
pub const DEFAULT_RPC_TIMEOUT_MS: u64 = 2_000;

/// Configuration of one voter of the quorum.
#[derive(Debug, Clone)]
pub struct RaftConfig {
    /// This node's id; must appear in `voters`.
    pub node_id: u64,
    /// All voters of the quorum with their controller listener addresses.
    pub voters: Vec<(u64, SocketAddr)>,
    /// Address the controller listener binds (ignored when a pre-bound listener is supplied).
    pub listen_addr: SocketAddr,
    /// Directory holding the log segments, the vote file and snapshots.
    pub data_dir: PathBuf,
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
    pub heartbeat_interval_ms: u64,
    /// Take a snapshot once this many entries were applied since the last one.
    pub snapshot_every_entries: u64,
    /// Entries kept in the log behind the newest snapshot.
    pub log_entries_kept_after_snapshot: u64,
    /// Deadline of a single RPC to another voter.
    pub rpc_timeout_ms: u64,
    /// The cluster this quorum belongs to; connections naming another one are refused.
    pub cluster_id: String,
    /// Where connections to the controller listener that ask for
    /// [`crate::SERVICE_CONTROLLER`] are handed (their preamble read); `None` refuses them.
    pub controller_service: Option<mpsc::Sender<BoxedPeerStream>>,
    /// Secures every connection of the controller port, both ways (default: plain text).
    pub security: Arc<dyn PeerSecurity>,
}

impl RaftConfig {
    /// A configuration with Kafka-like defaults for everything but identity, peers and storage.
    pub fn new(
        node_id: u64,
        voters: Vec<(u64, SocketAddr)>,
        listen_addr: SocketAddr,
        data_dir: impl Into<PathBuf>,
    ) -> Self {
        Self {
            node_id,
            voters,
            listen_addr,
            data_dir: data_dir.into(),
            election_timeout_min_ms: DEFAULT_ELECTION_TIMEOUT_MIN_MS,
            election_timeout_max_ms: DEFAULT_ELECTION_TIMEOUT_MAX_MS,
            heartbeat_interval_ms: DEFAULT_HEARTBEAT_INTERVAL_MS,
            snapshot_every_entries: DEFAULT_SNAPSHOT_EVERY_ENTRIES,
            log_entries_kept_after_snapshot: DEFAULT_LOG_ENTRIES_KEPT_AFTER_SNAPSHOT,
            rpc_timeout_ms: DEFAULT_RPC_TIMEOUT_MS,
            cluster_id: String::new(),
            controller_service: None,
            security: crate::security::plaintext(),
        }
    }

    /// Rejects configurations that cannot form a working quorum.
    pub fn validate(&self) -> Result<(), RaftError> {
        if self.voters.is_empty() {
            return Err(RaftError::Config("no voters configured".into()));
        }
        if !self.voters.iter().any(|(id, _)| *id == self.node_id) {
            return Err(RaftError::Config(format!(
                "node id {} is not among the voters",
                self.node_id
            )));
        }
        let mut ids: Vec<u64> = self.voters.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != self.voters.len() {
            return Err(RaftError::Config("duplicate voter id".into()));
        }
        if self.heartbeat_interval_ms == 0
            || self.election_timeout_min_ms <= self.heartbeat_interval_ms
            || self.election_timeout_max_ms <= self.election_timeout_min_ms
        {
            return Err(RaftError::Config(
                "need 0 < heartbeat_interval_ms < election_timeout_min_ms < election_timeout_max_ms"
                    .into(),
            ));
        }
        if self.snapshot_every_entries == 0 {
            return Err(RaftError::Config(
                "snapshot_every_entries must be > 0".into(),
            ));
        }
        Ok(())
    }

    pub(crate) fn openraft_config(&self) -> Result<openraft::Config, RaftError> {
        let config = openraft::Config {
            cluster_name: "shale-metadata".into(),
            election_timeout_min: self.election_timeout_min_ms,
            election_timeout_max: self.election_timeout_max_ms,
            heartbeat_interval: self.heartbeat_interval_ms,
            install_snapshot_timeout: self.rpc_timeout_ms.max(1),
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(self.snapshot_every_entries),
            max_in_snapshot_log_to_keep: self.log_entries_kept_after_snapshot,
            max_payload_entries: crate::network::MAX_ENTRIES_PER_APPEND,
            snapshot_max_chunk_size: crate::network::SNAPSHOT_CHUNK_BYTES,
            purge_batch_size: 1,
            ..Default::default()
        };
        config
            .validate()
            .map_err(|e| RaftError::Config(e.to_string()))
    }
}

/// Parses Kafka's `controller.quorum.voters` value: `id@host:port,id@host:port,...`.
///
/// Host names are resolved once, here; the first resolved address is used.
pub fn parse_voters(value: &str) -> Result<Vec<(u64, SocketAddr)>, RaftError> {
    let mut voters = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, endpoint) = part
            .split_once('@')
            .ok_or_else(|| RaftError::Config(format!("voter {part:?} is not id@host:port")))?;
        let id: u64 = id
            .trim()
            .parse()
            .map_err(|_| RaftError::Config(format!("voter id {id:?} is not a number")))?;
        let addr = endpoint
            .trim()
            .to_socket_addrs()
            .map_err(|e| RaftError::Config(format!("voter address {endpoint:?}: {e}")))?
            .next()
            .ok_or_else(|| {
                RaftError::Config(format!("voter address {endpoint:?} resolves to nothing"))
            })?;
        if voters.iter().any(|(existing, _)| *existing == id) {
            return Err(RaftError::Config(format!("voter id {id} listed twice")));
        }
        voters.push((id, addr));
    }
    if voters.is_empty() {
        return Err(RaftError::Config(
            "controller.quorum.voters is empty".into(),
        ));
    }
    Ok(voters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_voter_list() {
        let voters = parse_voters("1@127.0.0.1:9093, 2@127.0.0.2:9094,3@[::1]:9095").unwrap();
        assert_eq!(
            voters,
            vec![
                (1, "127.0.0.1:9093".parse().unwrap()),
                (2, "127.0.0.2:9094".parse().unwrap()),
                (3, "[::1]:9095".parse().unwrap()),
            ]
        );
    }

    #[test]
    fn rejects_malformed_voter_lists() {
        assert!(parse_voters("").is_err());
        assert!(parse_voters("1-127.0.0.1:9093").is_err());
        assert!(parse_voters("x@127.0.0.1:9093").is_err());
        assert!(parse_voters("1@127.0.0.1").is_err());
        assert!(parse_voters("1@127.0.0.1:1,1@127.0.0.1:2").is_err());
    }

    #[test]
    fn validates_membership_and_timeouts() {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let ok = RaftConfig::new(1, vec![(1, addr)], addr, "/nonexistent");
        ok.validate().unwrap();
        ok.openraft_config().unwrap();
        let stranger = RaftConfig::new(2, vec![(1, addr)], addr, "/nonexistent");
        assert!(stranger.validate().is_err());
        let mut bad_timeouts = ok.clone();
        bad_timeouts.election_timeout_max_ms = bad_timeouts.election_timeout_min_ms;
        assert!(bad_timeouts.validate().is_err());
    }
}
