//! ISR changes proposed by this broker as leader, committed through the controller
//! (AlterPartition with the leader and partition epochs they were based on), and the
//! periodic check that drops followers lagging longer than `replica.lag.time.max.ms`.

use std::sync::Arc;
use std::time::Duration;

use shale_metadata::{ControllerRequest, ControllerResponse};
use tracing::{debug, info};

use super::leader_state::{Assignment, IsrProposal};
use crate::partitions::Partition;
use crate::time::now_ms;
use crate::Broker;

/// Sends `proposal` to the controller in the background; the outcome lands in the
/// partition's leader state (and the image reaches every broker through the quorum).
pub fn submit(broker: &Arc<Broker>, partition: &Arc<Partition>, proposal: IsrProposal) {
    let broker = broker.clone();
    let partition = partition.clone();
    tokio::spawn(async move {
        info!(
            tp = %partition.tp,
            isr = ?proposal.new_isr,
            leader_epoch = proposal.leader_epoch,
            partition_epoch = proposal.partition_epoch,
            "proposing ISR change"
        );
        let request = ControllerRequest::AlterPartition {
            broker_id: broker.node_id(),
            broker_epoch: broker.metadata.broker_epoch(),
            topic_id: partition.topic_id,
            partition: partition.tp.partition,
            leader_epoch: proposal.leader_epoch,
            new_isr: proposal.new_isr,
            partition_epoch: proposal.partition_epoch,
        };
        match broker.metadata.submit(request).await {
            Ok(ControllerResponse::AlterPartition(Ok(image))) => {
                partition.replication.isr_proposal_committed(
                    Assignment {
                        leader_epoch: image.leader_epoch,
                        partition_epoch: image.partition_epoch,
                        replicas: image.replicas,
                        isr: image.isr,
                    },
                    now_ms(),
                );
                if partition.maybe_advance_high_watermark() {
                    broker.replicas.notify_appended();
                }
            }
            Ok(other) => {
                debug!(tp = %partition.tp, "ISR change refused: {other:?}");
                partition.replication.isr_proposal_failed();
            }
            Err(e) => {
                debug!(tp = %partition.tp, "ISR change failed: {e}");
                partition.replication.isr_proposal_failed();
            }
        }
    });
}

/// Kafka's isr-expiration task: every half `replica.lag.time.max.ms`, each led partition
/// drops the followers that have not caught up within it.
pub async fn expiration_loop(broker: Arc<Broker>) {
    let lag_ms = broker.config.replica_lag_time_max_ms.max(2);
    let mut every = tokio::time::interval(Duration::from_millis((lag_ms / 2) as u64));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown = broker.shutdown_signal();
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = shutdown.changed() => return,
        }
        let now = now_ms();
        for partition in broker.replicas.all() {
            let leo = partition.log.log_end_offset();
            if let Some(Some(proposal)) = partition
                .replication
                .with_leader(|s| s.maybe_shrink(leo, now))
            {
                submit(&broker, &partition, proposal);
            }
        }
    }
}
