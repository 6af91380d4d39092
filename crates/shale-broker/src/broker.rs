//! The running broker: its foundation ([`BrokerCore`]: config, metadata, hosted partitions)
//! and what is built on it: the producer-id source, the group and transaction coordinators
//! and the followers' fetchers. Handlers receive the broker; everything below them receives
//! the core or a context of its own, so no lower module names the broker.

use std::ops::Deref;
use std::sync::Arc;

use shale_log::TopicPartition;
use shale_metadata::MetadataImage;
use shale_replica::{Assignment, Followers, PartitionAssignment, RoleUpdate};
use tracing::warn;

use crate::core::BrokerCore;
use crate::groups::GroupService;
use crate::log_config::log_config_from;
use crate::producer_id_source::ProducerIdSource;
use crate::quotas::ClientQuotas;
use crate::share::ShareService;
use crate::txn::TxnService;

/// The running broker's shared state.
pub struct Broker {
    pub core: Arc<BrokerCore>,
    pub producer_ids: ProducerIdSource,
    /// The group coordinator over `__consumer_offsets`.
    pub(crate) groups: GroupService,
    /// The transaction coordinator over `__transaction_state`.
    pub(crate) txn: Arc<TxnService>,
    /// Followers' fetchers.
    pub replication: Followers,
    /// Client quotas: usage measured on this broker against the image's quotas.
    pub(crate) quotas: ClientQuotas,
    /// Share groups: the share coordinator, the share-partitions led here, share sessions.
    pub(crate) share: Arc<ShareService>,
}

/// The broker reads as its core (`broker.config`, `broker.replicas`, `broker.image()`): the
/// handlers use the core's parts through it, and a function that needs only the core takes
/// `&BrokerCore`, to which a broker reference coerces.
impl Deref for Broker {
    type Target = BrokerCore;

    fn deref(&self) -> &BrokerCore {
        &self.core
    }
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("node_id", &self.config.node_id)
            .finish()
    }
}

impl Broker {
    /// Brings hosted partitions in line with `image`. Returns whether all of it was applied.
    /// Waiters on [`BrokerCore::wait_reconciled`] go on either way: a partition that failed (its
    /// directory cannot be created, say) is not hosted and answers as such until a later pass
    /// hosts it, as a Kafka broker keeps serving its other partitions when one log fails; one
    /// bad partition must not hold every admin call until its timeout.
    pub fn reconcile(&self, image: &MetadataImage) -> bool {
        let node_id = self.config.node_id;
        let static_props = self.core.static_props();
        let mut wanted = Vec::new();
        for topic in image.topics() {
            let resolved: std::collections::HashMap<String, String> =
                // This broker's own dynamic configs count, as on a Kafka broker.
                shale_metadata::config_defs::resolve_topic_config_for_broker(
                    image,
                    &topic.name,
                    Some(node_id),
                    &static_props,
                )
                .into_iter()
                .filter_map(|c| c.value.map(|v| (c.name, v)))
                .collect();
            let config = log_config_from(|name| resolved.get(name).cloned());
            let min_insync_replicas = if image.elr_enabled() {
                resolved
                    .get("min.insync.replicas")
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(self.config.min_insync_replicas)
            } else {
                1
            };
            for (&partition, p) in &topic.partitions {
                if p.replicas.contains(&node_id) {
                    wanted.push(PartitionAssignment {
                        tp: TopicPartition {
                            topic: topic.name.clone(),
                            partition,
                        },
                        topic_id: topic.topic_id,
                        leader_id: p.leader,
                        leader_epoch: p.leader_epoch,
                        config: config.clone(),
                        role: RoleUpdate {
                            local_id: node_id,
                            leader_id: p.leader,
                            assignment: Assignment {
                                leader_epoch: p.leader_epoch,
                                partition_epoch: p.partition_epoch,
                                replicas: p.replicas.clone(),
                                isr: p.isr.clone(),
                            },
                            lag_time_max_ms: self.config.replica_lag_time_max_ms,
                            min_insync_replicas,
                        },
                    });
                }
            }
        }
        let hosted = self.replicas.reconcile(wanted);
        // Coordinators and fetchers follow what is hosted, also when some partitions failed.
        self.groups.reconcile(&self.core, image);
        self.txn.reconcile(&self.core, image);
        self.share.reconcile(&self.core, image);
        self.replication.reconcile(image);
        self.core.mark_reconciled(image.offset);
        match hosted {
            Ok(()) => true,
            Err(failed) => {
                for (tp, e) in &failed {
                    warn!(tp = %tp, "cannot apply metadata to this partition (will try again): {e}");
                }
                false
            }
        }
    }
}
