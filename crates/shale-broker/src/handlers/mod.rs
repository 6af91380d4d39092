//! One module per API family.

pub mod acls;
pub mod api_versions;
pub(crate) mod broker_configs;
pub mod client_quotas;
pub mod cluster;
pub mod cluster_refusals;
pub mod configs;
pub mod delete_records;
pub mod describe_quorum;
pub mod describe_topic_partitions;
pub mod fetch;
pub(crate) mod group_configs;
pub(crate) mod leader_hints;
pub mod list_offsets;
pub mod metadata;
pub mod produce;
pub mod producer_ids;
pub mod sasl;
pub mod scram_credentials;
pub(crate) mod topic_quota;
pub mod topics;

use std::sync::Arc;

use shale_replica::Partition;

use crate::broker::Broker;
use crate::errors::replica_error_code;

/// The led partition at the client's epoch, or the Kafka code of why not (the check itself
/// is the replica layer's, the same for every leader-only API).
pub(crate) fn leader_partition(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
) -> Result<Arc<Partition>, i16> {
    broker
        .replicas
        .leader_for(&broker.image(), topic, partition, current_leader_epoch)
        .map_err(|e| replica_error_code(&e))
}
