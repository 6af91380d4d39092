//! Formatting a node's log directories (`shale format`, Kafka's `kafka-storage.sh format`).

use std::path::PathBuf;

use super::typed::BrokerConfig;

/// Every directory that holds `meta.properties`: the log directories and the metadata log
/// directory.
pub fn storage_dirs(config: &BrokerConfig) -> Vec<PathBuf> {
    let mut dirs = vec![config.metadata_log_dir.clone()];
    for dir in &config.log_dirs {
        if !dirs.contains(dir) {
            dirs.push(dir.clone());
        }
    }
    dirs
}

/// Writes `meta.properties` for cluster `cluster_id` and this node's `node.id` in every
/// directory of [`storage_dirs`]. A formatted directory is an error unless `ignore_formatted`;
/// even then it must belong to the same cluster and node. Returns the directories written.
pub fn format_storage(
    config: &BrokerConfig,
    cluster_id: &str,
    ignore_formatted: bool,
) -> Result<Vec<PathBuf>, shale_metadata::MetadataError> {
    shale_metadata::meta_properties::format(
        &storage_dirs(config),
        config.node_id,
        cluster_id,
        ignore_formatted,
    )
}

/// A new cluster id in Kafka's form (`kafka-storage.sh random-uuid`).
pub fn random_cluster_id() -> String {
    shale_metadata::meta_properties::random_cluster_id()
}
