//! ISR changes proposed by this broker as leader, committed through the controller
//! (AlterPartition with the leader and partition epochs they were based on), and the
//! periodic check that drops followers lagging longer than `replica.lag.time.max.ms`.

use std::sync::Arc;
use std::time::Duration;

use shale_metadata::{ControllerRequest, ControllerResponse};
use tracing::{debug, info};

use crate::context::ReplicaContext;
use crate::leader_state::{Assignment, IsrProposal};
use crate::manager::ReplicaManager;
use crate::partition::Partition;
use shale_log::now_ms;

/// Sends `proposal` to the controller in the background; the outcome lands in the
/// partition's leader state (and the image reaches every broker through the quorum).
pub fn submit(ctx: &Arc<dyn ReplicaContext>, partition: &Arc<Partition>, proposal: IsrProposal) {
    let ctx = ctx.clone();
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
            broker_id: ctx.replicas().node_id(),
            broker_epoch: ctx.broker_epoch(),
            topic_id: partition.topic_id,
            partition: partition.tp.partition,
            leader_epoch: proposal.leader_epoch,
            new_isr: proposal.new_isr,
            partition_epoch: proposal.partition_epoch,
        };
        match ctx.submit(request).await {
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
                    ctx.replicas().notify_appended();
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
/// drops the followers that have not caught up within it. The same task writes the
/// high-watermark checkpoints (every `replica.high.watermark.checkpoint.interval.ms` and a
/// last time at shutdown).
pub async fn expiration_loop(ctx: Arc<dyn ReplicaContext>) {
    let lag_ms = ctx.settings().lag_time_max_ms.max(2);
    let mut every = tokio::time::interval(Duration::from_millis((lag_ms / 2) as u64));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let checkpoint_ms = ctx.settings().high_watermark_checkpoint_interval_ms;
    let mut checkpoints = tokio::time::interval(Duration::from_millis(checkpoint_ms.max(1)));
    checkpoints.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown = ctx.shutdown_signal();
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = checkpoints.tick() => {
                checkpoint_high_watermarks(ctx.replicas()).await;
                continue;
            }
            _ = shutdown.changed() => {
                checkpoint_high_watermarks(ctx.replicas()).await;
                return;
            }
        }
        let now = now_ms();
        for partition in ctx.replicas().all() {
            let leo = partition.log.log_end_offset();
            if let Some(Some(proposal)) = partition
                .replication
                .with_leader(|s| s.maybe_shrink(leo, now))
            {
                submit(&ctx, &partition, proposal);
            }
        }
    }
}

/// Writes every hosted partition's high watermark to its log directory's checkpoint.
async fn checkpoint_high_watermarks(replicas: &ReplicaManager) {
    let mut by_dir: std::collections::HashMap<std::path::PathBuf, Vec<_>> = Default::default();
    for p in replicas.all() {
        if let Some(log_dir) = p.log.dir().parent() {
            by_dir
                .entry(log_dir.to_path_buf())
                .or_default()
                .push((p.tp.clone(), p.high_watermark()));
        }
    }
    let _ = tokio::task::spawn_blocking(move || {
        for (dir, entries) in by_dir {
            if let Err(e) = crate::checkpoint::write(&dir, &entries) {
                tracing::warn!(dir = %dir.display(), "cannot write the high-watermark checkpoint: {e}");
            }
        }
    })
    .await;
}
