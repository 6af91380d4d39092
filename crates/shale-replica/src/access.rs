//! The one leader check of every leader-only request (produce, consumer and follower fetch,
//! ListOffsets, DeleteRecords, OffsetForLeaderEpoch), and the consumer's read of a led
//! partition: written once here, so every API refuses the same way.

use std::sync::Arc;

use shale_log::{AbortedTxn, FileSlice, LogError, TopicPartition};
use shale_metadata::MetadataImage;

use crate::error::ReplicaError;
use crate::manager::ReplicaManager;
use crate::partition::Partition;

/// A consumer's read of one partition.
#[derive(Clone, Debug)]
pub struct ReadRequest<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub fetch_offset: i64,
    /// The client's view of the leader epoch; -1 when it does not say.
    pub current_leader_epoch: i32,
    /// read_committed: up to the last stable offset, with the aborted transactions.
    pub read_committed: bool,
    pub max_bytes: usize,
    /// Whether the first batch is returned even when larger than `max_bytes`.
    pub min_one: bool,
}

/// What a consumer's read found.
#[derive(Debug)]
pub struct PartitionRead {
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// read_committed only: the aborted transactions overlapping the read.
    pub aborted: Option<Vec<AbortedTxn>>,
    /// Whole batches up to the bound (file ranges, not copies), or why the log could not be
    /// read; the offsets above are valid either way.
    pub records: Result<Vec<FileSlice>, LogError>,
}

impl ReplicaManager {
    /// The partition when this broker leads it at the client's epoch (`current_leader_epoch`
    /// -1 accepts any): Kafka's order of checks, the same for every leader-only API.
    pub fn leader_for(
        &self,
        image: &MetadataImage,
        topic: &str,
        partition: i32,
        current_leader_epoch: i32,
    ) -> Result<Arc<Partition>, ReplicaError> {
        let known = image
            .topic(topic)
            .is_some_and(|t| t.partitions.contains_key(&partition));
        if !known {
            return Err(ReplicaError::UnknownTopicOrPartition);
        }
        let tp = TopicPartition {
            topic: topic.to_string(),
            partition,
        };
        let Some(p) = self.get(&tp) else {
            return Err(ReplicaError::NotLeaderOrFollower);
        };
        if p.leader_id() != self.node_id() {
            return Err(ReplicaError::NotLeaderOrFollower);
        }
        let leader_epoch = p.leader_epoch();
        if current_leader_epoch >= 0 && current_leader_epoch < leader_epoch {
            return Err(ReplicaError::FencedLeaderEpoch {
                request_epoch: current_leader_epoch,
                leader_epoch,
            });
        }
        if current_leader_epoch > leader_epoch {
            return Err(ReplicaError::UnknownLeaderEpoch {
                request_epoch: current_leader_epoch,
                leader_epoch,
            });
        }
        Ok(p)
    }

    /// The led partition a produce appends to; with `acks_all_min_insync_replicas` (acks=all)
    /// the ISR must have at least that many members before anything is written.
    pub fn leader_for_append(
        &self,
        image: &MetadataImage,
        topic: &str,
        partition: i32,
        acks_all_min_insync_replicas: Option<i32>,
    ) -> Result<Arc<Partition>, ReplicaError> {
        let p = self.leader_for(image, topic, partition, -1)?;
        if let Some(min_insync_replicas) = acks_all_min_insync_replicas {
            let isr = p.replication.isr_len().unwrap_or(0);
            if (isr as i64) < i64::from(min_insync_replicas) {
                return Err(ReplicaError::NotEnoughReplicas {
                    isr,
                    min_insync_replicas,
                });
            }
        }
        Ok(p)
    }

    /// A consumer's read: up to the high watermark, or the last stable offset for
    /// read_committed; an offset at the bound (and within the log) reads nothing, not an
    /// error.
    pub fn read(
        &self,
        image: &MetadataImage,
        request: &ReadRequest<'_>,
    ) -> Result<PartitionRead, ReplicaError> {
        let p = self.leader_for(
            image,
            request.topic,
            request.partition,
            request.current_leader_epoch,
        )?;
        let high_watermark = p.high_watermark();
        let last_stable_offset = p.last_stable_offset();
        let upper = if request.read_committed {
            last_stable_offset
        } else {
            high_watermark
        };
        let aborted = request
            .read_committed
            .then(|| p.aborted_txns(request.fetch_offset, upper));
        // No budget left, or nothing visible yet at this offset: an empty answer.
        let nothing_to_read = (request.max_bytes == 0 && !request.min_one)
            || (request.fetch_offset >= upper && request.fetch_offset <= p.log.log_end_offset());
        let records = if nothing_to_read {
            Ok(Vec::new())
        } else {
            p.log
                .read(
                    request.fetch_offset,
                    request.max_bytes,
                    upper,
                    request.min_one,
                )
                .map(|r| r.slices)
        };
        Ok(PartitionRead {
            high_watermark,
            last_stable_offset,
            log_start_offset: p.log.log_start_offset(),
            aborted,
            records,
        })
    }
}
