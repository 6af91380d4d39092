//! Why the replica layer refused a request: domain errors, turned into Kafka error codes by
//! the broker's error mapping alone.

use shale_log::LogError;
use shale_txn::ProducerStateError;

/// Why a partition cannot serve a leader-only request here.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplicaError {
    #[error("the topic or partition does not exist")]
    UnknownTopicOrPartition,
    #[error("the topic id names no topic")]
    UnknownTopicId,
    #[error("this broker is not the partition's leader")]
    NotLeaderOrFollower,
    #[error("leader epoch {request_epoch} is older than the partition's {leader_epoch}")]
    FencedLeaderEpoch {
        request_epoch: i32,
        leader_epoch: i32,
    },
    #[error("leader epoch {request_epoch} is newer than the partition's {leader_epoch}")]
    UnknownLeaderEpoch {
        request_epoch: i32,
        leader_epoch: i32,
    },
    #[error("the ISR has {isr} members, fewer than min.insync.replicas={min_insync_replicas}")]
    NotEnoughReplicas {
        isr: usize,
        min_insync_replicas: i32,
    },
}

/// Why an append was refused.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Producer(#[from] ProducerStateError),
}

/// How an acks=all wait for replication ended without the ISR acknowledging the append.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AckError {
    #[error("leadership moved before the append was replicated")]
    NotLeaderOrFollower,
    #[error("replicated, but the ISR shrank below min.insync.replicas meanwhile")]
    NotEnoughReplicasAfterAppend,
    #[error("the append was not replicated within the request's timeout")]
    TimedOut,
}
