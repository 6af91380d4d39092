//! The one declarative table of the Kafka APIs Shale serves: key, versions accepted, versions
//! advertised. ApiVersions is derived from it and dispatch refuses anything outside it, so what
//! is advertised is exactly what is implemented.

use kafka_protocol::messages::ApiKey;

/// One served API.
#[derive(Clone, Copy, Debug)]
pub struct ApiEntry {
    pub key: ApiKey,
    /// Lowest version advertised in ApiVersions.
    pub advertised_min: i16,
    /// Lowest version actually accepted; below it the request is answered UNSUPPORTED_VERSION.
    pub accepted_min: i16,
    pub max: i16,
}

const fn api(key: ApiKey, min: i16, max: i16) -> ApiEntry {
    ApiEntry {
        key,
        advertised_min: min,
        accepted_min: min,
        max,
    }
}

/// Version ranges follow the reference Apache Kafka 4.4 broker. Where kafka-protocol 0.18
/// (Kafka 4.1's specs) cannot carry a version, shale-protocol's codec generated from Kafka
/// 4.4's specs does; the README says which ranges still differ from Kafka 4.4 and why.
pub const API_TABLE: &[ApiEntry] = &[
    // Produce advertises min 0 like Kafka (KAFKA-18659): older librdkafka stops compressing when
    // the advertised minimum is 3. Versions 0-2 are still refused.
    ApiEntry {
        key: ApiKey::Produce,
        advertised_min: 0,
        accepted_min: 3,
        max: 13,
    },
    api(ApiKey::Fetch, 4, 18),
    // 11: EARLIEST_PENDING_UPLOAD (-6, KIP-1023), the same wire layout as 10.
    api(ApiKey::ListOffsets, 1, 11),
    api(ApiKey::Metadata, 0, 13),
    // 5: the client names the cluster and node it expects (KIP-1242).
    api(ApiKey::ApiVersions, 0, 5),
    api(ApiKey::CreateTopics, 2, 7),
    api(ApiKey::DeleteTopics, 1, 6),
    api(ApiKey::DeleteRecords, 0, 2),
    api(ApiKey::InitProducerId, 0, 5),
    api(ApiKey::OffsetForLeaderEpoch, 2, 4),
    api(ApiKey::DescribeConfigs, 1, 4),
    api(ApiKey::AlterConfigs, 0, 2),
    api(ApiKey::CreatePartitions, 0, 3),
    api(ApiKey::IncrementalAlterConfigs, 0, 1),
    api(ApiKey::DescribeCluster, 0, 2),
    // KIP-966: partitions with their eligible leader replicas, paginated.
    api(ApiKey::DescribeTopicPartitions, 0, 0),
    api(ApiKey::DescribeLogDirs, 1, 5),
    // The metadata quorum (kafka-metadata-quorum.sh).
    api(ApiKey::DescribeQuorum, 0, 2),
    api(ApiKey::DescribeProducers, 0, 0),
    // Replication admin, answered through the controller.
    api(ApiKey::ElectLeaders, 0, 2),
    api(ApiKey::AlterPartitionReassignments, 0, 1),
    api(ApiKey::ListPartitionReassignments, 0, 0),
    // The classic group coordinator.
    api(ApiKey::FindCoordinator, 0, 6),
    api(ApiKey::JoinGroup, 0, 9),
    api(ApiKey::SyncGroup, 0, 5),
    api(ApiKey::Heartbeat, 0, 4),
    api(ApiKey::LeaveGroup, 0, 5),
    // 10: topic ids instead of names (KIP-848).
    api(ApiKey::OffsetCommit, 2, 10),
    api(ApiKey::OffsetFetch, 1, 10),
    api(ApiKey::DescribeGroups, 0, 6),
    api(ApiKey::ListGroups, 0, 5),
    // 3: an error message per group.
    api(ApiKey::DeleteGroups, 0, 3),
    api(ApiKey::OffsetDelete, 0, 0),
    // The transaction coordinator: versions 5 of AddPartitionsToTxn, EndTxn and
    // TxnOffsetCommit are transaction version 2 (KIP-890), which ApiVersions finalises;
    // TxnOffsetCommit 6 names topics by id, WriteTxnMarkers 2 says each marker's
    // transaction version (KIP-1228).
    api(ApiKey::AddPartitionsToTxn, 0, 5),
    api(ApiKey::AddOffsetsToTxn, 0, 4),
    api(ApiKey::EndTxn, 0, 5),
    api(ApiKey::TxnOffsetCommit, 0, 6),
    api(ApiKey::WriteTxnMarkers, 1, 2),
    api(ApiKey::DescribeTransactions, 0, 0),
    api(ApiKey::ListTransactions, 0, 2),
];

/// Finds the entry for a raw API key.
pub fn lookup(api_key: i16) -> Option<&'static ApiEntry> {
    API_TABLE.iter().find(|e| e.key as i16 == api_key)
}

/// `(key, min, max)` triples as ApiVersions advertises them.
pub fn advertised() -> Vec<(i16, i16, i16)> {
    API_TABLE
        .iter()
        .map(|e| (e.key as i16, e.advertised_min, e.max))
        .collect()
}

/// The table as Markdown, for the README (kept in sync by a test).
pub fn markdown_table() -> String {
    let mut out = String::from("| key | API | versions served | advertised |\n|---|---|---|---|\n");
    let mut entries: Vec<&ApiEntry> = API_TABLE.iter().collect();
    entries.sort_by_key(|e| e.key as i16);
    for e in entries {
        out.push_str(&format!(
            "| {} | {:?} | {}-{} | {}-{} |\n",
            e.key as i16, e.key, e.accepted_min, e.max, e.advertised_min, e.max
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_decodable_by_the_codec() {
        for e in API_TABLE {
            let key = e.key as i16;
            let min = shale_protocol::min_supported_request_version(key);
            let max = shale_protocol::max_supported_request_version(key);
            assert!(min.is_some_and(|min| e.accepted_min >= min), "{:?}", e.key);
            assert!(max.is_some_and(|max| e.max <= max), "{:?}", e.key);
            assert!(e.advertised_min <= e.accepted_min);
        }
    }

    #[test]
    fn keys_are_unique() {
        let mut keys: Vec<i16> = API_TABLE.iter().map(|e| e.key as i16).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), API_TABLE.len());
    }
}
