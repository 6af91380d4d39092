//! shale-raft: a replicated log of opaque byte batches for Shale's KRaft-style metadata quorum.
//!
//! Voters ([`RaftNode`]) run Raft through openraft; brokers follow the committed log without
//! voting ([`RaftObserver`]). The application supplies a [`ReplicatedStateMachine`]; this crate
//! knows nothing about what the bytes mean.
//!
//! # Why openraft 0.9 (pinned `=0.9.25`, feature `storage-v2`) and not 0.10
//!
//! - 0.9 is the stable line: 0.10 is still published as a long series of alphas (0.10.0-alpha.37
//!   at the time of writing) whose storage, network and type-config traits change between alphas,
//!   so every upgrade would be a port. 0.9's `RaftLogStorage` / `RaftStateMachine` (storage-v2) and
//!   `RaftNetwork` traits are frozen for the series and documented with working examples.
//! - Everything the quorum needs exists in 0.9: separate log and state-machine storage, an
//!   asynchronous flush callback so the log can fsync before acknowledging, snapshot policy and log
//!   purge, chunked snapshot transfer over a byte-oriented `InstallSnapshot` RPC (which fits a
//!   hand-written TCP framing), leader lease, and metrics to watch leader changes.
//! - What 0.10 adds (streaming full snapshots, pluggable runtimes, finer leader ids) is not needed
//!   for a small metadata log. The cost of 0.9 is that `RaftError` types differ from later
//!   releases; they are wrapped in this crate's [`RaftError`] so callers never see them.
//! - The version is pinned with `=` so a patch release cannot change election or storage
//!   behaviour under us without a deliberate upgrade.
//!
//! # Design
//!
//! - Encoding ([`encoding`]): everything stored or sent (entries, vote, snapshots, the Raft
//!   wire) uses a versioned binary encoding modelled on Kafka's metadata records: every struct
//!   carries a version and a tagged-field section that older readers skip, enums carry a kind
//!   number, and decoding checks every length against the bytes that remain. Its
//!   `Encode`/`Decode` traits and macros are shared with shale-metadata; the openraft types'
//!   codecs are in `openraft_codec`. Data directories of the first releases (bincode 1.3) still
//!   open: [`legacy`] reads that layout, the vote, purge marker and snapshot files are
//!   rewritten at open, and old segments are read but never appended to.
//! - Storage (`log_store`): segment files with length + CRC-32C frames, fsynced before openraft
//!   is told an append is durable. A flusher thread syncs once for every append queued while the
//!   previous sync ran (group commit), using openraft's asynchronous flush callback. A torn tail
//!   is truncated at start-up. The vote is a small file
//!   written to a temporary, fsynced, renamed and the directory fsynced. Snapshots are files
//!   (`state_machine`), taken every `snapshot_every_entries` and used to purge the log.
//! - Network (`network`, `wire`): one TCP connection per peer stream on the controller listener,
//!   opened by a preamble naming the service and the cluster id (one port carries Raft, observer
//!   fetches and, handed to the metadata layer, forwarded controller requests; a peer of another
//!   cluster is refused), then length-prefixed frames (a wire version byte, then the message;
//!   another version is refused) bounded to 64 MiB, connect and request timeouts, reconnect on
//!   the next RPC; malformed input closes the connection and never panics. [`LinkFaults`] cuts
//!   links for partition tests.
//! - Observers fetch committed entries from the leader (or any voter) rather than joining as
//!   openraft learners: learners must be added to the membership by the leader, which is a
//!   replicated change per broker start, and adding one to a single-voter cluster is reported
//!   to misbehave (openraft issue 1545). A fetch needs no membership change and matches how KRaft
//!   observers work.
//! - [`CommittedLog`] is a ready-made state machine for pull-style consumers (read committed
//!   batches after an index, save an application snapshot to compact), which is the shape of a
//!   metadata `QuorumLog`.
//! - Membership is fixed to `controller.quorum.voters`; the first start initialises it, later
//!   starts find the log and the vote and skip that step. Every voter writes the same
//!   membership entry at index 0, so voters may start in any order.
//! - Timeouts: heartbeat 100 ms, election 400..800 ms. openraft refuses votes during a leader
//!   lease equal to the upper bound, so failover is about lease + one timeout (measured
//!   1.3 to 1.6 s from killing the leader of three to the next commit); Kafka's 1000 ms election
//!   timeout would put it above 2 s.
//!
//! # Known limits
//!
//! - Observers keep no files: a restarted observer starts from a voter's snapshot and log.
//! - `ReplicatedStateMachine` calls run on openraft's state-machine task; a slow `apply` delays
//!   commits being reported.
//! - With a single voter openraft 0.9 submits one append per flush, so concurrent proposals do
//!   not share fsyncs there (about 500 entries/s on a 2 ms-fsync disk); with three voters they do.
//! - A voter whose data directory is lost comes back with no vote; if it lost the vote of the
//!   current term it could vote twice in that term (as in any Raft without stable storage).

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod codec;
mod committed_log;
mod config;
pub mod encoding;
mod error;
mod fsutil;
pub mod legacy;
mod log_store;
mod network;
mod node;
mod observer;
mod openraft_codec;
mod progress;
mod security;
mod state_machine;
mod types;
mod wire;

/// The one `[length][crc32c][payload]` frame of Shale's own files (Raft segments and the
/// single node's metadata log).
pub use codec::{put_frame, read_frame, FrameRead, FRAME_HEADER_BYTES};
pub use committed_log::{CommittedLog, CommittedRead};
pub use config::{
    parse_voters, RaftConfig, DEFAULT_ELECTION_TIMEOUT_MAX_MS, DEFAULT_ELECTION_TIMEOUT_MIN_MS,
    DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_LOG_ENTRIES_KEPT_AFTER_SNAPSHOT, DEFAULT_RPC_TIMEOUT_MS,
    DEFAULT_SNAPSHOT_EVERY_ENTRIES,
};
pub use error::RaftError;
pub use log_store::SEGMENT_BYTES_MAX;
pub use network::{connect_service, LinkFaults};
pub use node::{LeaderInfo, NodeStatus, RaftNode, MAX_PROPOSAL_BYTES};
pub use observer::{ObserverConfig, RaftObserver};
pub use progress::{QuorumProgress, ReplicaProgress};
pub use security::{plaintext, BoxedPeerStream, PeerSecurity, PeerStream, Plaintext, SecureFuture};
pub use state_machine::{ReplicatedStateMachine, StateMachineError};
pub use wire::{MAX_FRAME_BYTES, SERVICE_CONTROLLER, SERVICE_RAFT, WIRE_VERSION};
