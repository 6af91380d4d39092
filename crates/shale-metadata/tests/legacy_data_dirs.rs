//! Data directories written by the first releases (bincode 1.3 encodings, in
//! `tests/data/legacy-bincode/`) open with this build, keep their content, are written on in
//! the versioned encoding and open again.
//!
//! The fixtures were written by the releases' own code: a single combined node and a single
//! Raft voter, each given two topics with configs, a cluster-wide broker config, an ACL, a
//! SCRAM credential, a client quota and a producer id block, then (after a snapshot) more
//! partitions for `orders` and a third topic.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use shale_metadata::runtime::{QuorumIo, QuorumMode, QuorumVoter, RAFT_LOG_SUBDIR};
use shale_metadata::{
    ConfigResource, ControllerRequest, CreatableTopic, Endpoint, MetadataImage, MetadataNode,
    MetadataNodeConfig, SecurityProtocol,
};
use tokio::net::TcpListener;

const CLUSTER_ID: &str = "TGVnYWN5Rml4dHVyZTAwMQ";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/legacy-bincode")
        .join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for item in std::fs::read_dir(from).unwrap() {
        let item = item.unwrap();
        let target = to.join(item.file_name());
        if item.file_type().unwrap().is_dir() {
            copy_dir(&item.path(), &target);
        } else {
            std::fs::copy(item.path(), &target).unwrap();
        }
    }
}

fn config(dir: &Path, quorum: QuorumMode) -> MetadataNodeConfig {
    let mut config = MetadataNodeConfig::new(1, dir.join("meta"));
    config.log_dirs = vec![dir.join("meta"), dir.join("data")];
    config.broker_listeners = vec![Endpoint {
        name: "PLAINTEXT".into(),
        host: "127.0.0.1".into(),
        port: 9092,
        security_protocol: SecurityProtocol::Plaintext,
    }];
    config.quorum = quorum;
    config
}

async fn start(dir: &Path, voter: bool) -> MetadataNode {
    if !voter {
        return MetadataNode::start(config(dir, QuorumMode::Single))
            .await
            .unwrap();
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let quorum = QuorumMode::Voter {
        voters: vec![QuorumVoter { node_id: 1, addr }],
        listen_addr: addr,
    };
    let io = QuorumIo {
        listener: Some(listener),
        faults: None,
    };
    MetadataNode::start_with_quorum_io(config(dir, quorum), io)
        .await
        .unwrap()
}

/// The fixtures' content, as replayed from the old records.
fn assert_fixture_content(image: &MetadataImage) {
    assert_eq!(image.cluster_id, CLUSTER_ID);
    let partitions = |name: &str| image.topic(name).map(|t| t.partitions.len());
    assert_eq!(partitions("orders"), Some(4));
    assert_eq!(partitions("events"), Some(1));
    assert_eq!(partitions("late"), Some(2));
    let orders = image.topic("orders").unwrap();
    assert!(orders.partitions.values().all(|p| p.replicas == vec![1]));
    assert_eq!(image.topic_configs("orders")["retention.ms"], "86400000");
    assert_eq!(
        image.topic_configs("orders")["max.message.bytes"],
        "2097152"
    );
    assert_eq!(image.topic_configs("events")["cleanup.policy"], "compact");
    assert_eq!(
        image.configs(&ConfigResource::ClusterDefaultBroker)["log.retention.ms"],
        "604800000"
    );
    let acls: Vec<_> = image.acls().collect();
    assert_eq!(acls.len(), 1);
    assert_eq!(
        (acls[0].resource_name.as_str(), acls[0].principal.as_str()),
        ("orders", "User:alice")
    );
    let scram = image.scram_credential("alice", 1).unwrap();
    assert_eq!(
        (scram.iterations, scram.salt.clone()),
        (4096, vec![1, 2, 3])
    );
    let quotas: Vec<_> = image.client_quotas().collect();
    assert_eq!(quotas.len(), 1);
    assert_eq!(quotas[0].1["producer_byte_rate"], 1048576.0);
    assert_eq!(image.next_producer_id(), 1000);
    assert_eq!(image.feature_level("metadata.version"), Some(25));
}

async fn create(node: &MetadataNode, name: &str) {
    node.submit(ControllerRequest::CreateTopics {
        topics: vec![CreatableTopic::with_defaults(name)],
        validate_only: false,
    })
    .await
    .unwrap();
}

/// The format versions of the newest snapshot and of each entry in a single node's log.
fn local_log_formats(log_dir: &Path) -> (Option<u16>, Vec<u8>) {
    let mut snapshots: Vec<PathBuf> = std::fs::read_dir(log_dir)
        .unwrap()
        .map(|item| item.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "snapshot"))
        .collect();
    snapshots.sort();
    // `[file magic 8][crc 4][offset 8]`, then the image: `SHMS` and its format version.
    let snapshot_format = snapshots.last().map(|path| {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(&bytes[20..24], b"SHMS");
        u16::from_le_bytes([bytes[24], bytes[25]])
    });
    let log = std::fs::read(log_dir.join("metadata.log")).unwrap();
    let mut entry_formats = Vec::new();
    let mut position = 0;
    while let shale_raft::FrameRead::Frame { payload, next } =
        shale_raft::read_frame(&log, position)
    {
        // `[offset i64][entry]`; an entry starts with its format version.
        entry_formats.push(payload[8]);
        position = next;
    }
    (snapshot_format, entry_formats)
}

#[tokio::test]
async fn a_single_node_directory_of_the_first_format_opens_and_is_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("single-node"), dir.path());
    let node = start(dir.path(), false).await;
    assert_eq!(node.cluster_id(), CLUSTER_ID);
    assert_fixture_content(&node.image());
    create(&node, "after-upgrade").await;
    node.shutdown().await;

    // The upgrade wrote a snapshot in the new format once the first new entry applied, and the
    // log dropped the old entries the previous snapshot covered: no entry of the first format
    // is left (the older snapshot stays as the fallback).
    let log_dir = dir.path().join("meta/__cluster_metadata-0");
    let (snapshot_format, entry_formats) = local_log_formats(&log_dir);
    assert_eq!(snapshot_format, Some(2));
    assert!(
        !entry_formats.is_empty() && entry_formats.iter().all(|format| *format == 2),
        "{entry_formats:?}"
    );

    let node = start(dir.path(), false).await;
    assert_fixture_content(&node.image());
    assert_eq!(
        node.image()
            .topic("after-upgrade")
            .unwrap()
            .partitions
            .len(),
        1
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raft_voter_directory_of_the_first_format_opens_and_is_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("raft-voter"), dir.path());
    let node = start(dir.path(), true).await;
    assert_eq!(node.cluster_id(), CLUSTER_ID);
    assert_fixture_content(&node.image());
    // The fixture's voter led term 1.
    assert!(
        node.quorum_leader().epoch >= 1,
        "{:?}",
        node.quorum_leader()
    );
    create(&node, "after-upgrade").await;
    node.shutdown().await;

    let raft_dir = dir.path().join("meta").join(RAFT_LOG_SUBDIR);
    // `[crc 4][SHRS][format 1][vote version][leader id version][term u64 BE][node u64 BE]..`
    let vote = std::fs::read(raft_dir.join("log/vote")).unwrap();
    assert_eq!(&vote[4..8], b"SHRS", "the vote file is in the new format");
    let term = u64::from_be_bytes(vote[11..19].try_into().unwrap());
    let voted_for = u64::from_be_bytes(vote[19..27].try_into().unwrap());
    assert!(
        term >= 1 && voted_for == 1,
        "term {term}, voted for {voted_for}"
    );
    let snapshot = std::fs::read(raft_dir.join("snapshot")).unwrap();
    assert_eq!(
        &snapshot[4..8],
        b"SHRS",
        "the snapshot file is in the new format"
    );

    let node = start(dir.path(), true).await;
    assert_fixture_content(&node.image());
    assert_eq!(
        node.image()
            .topic("after-upgrade")
            .unwrap()
            .partitions
            .len(),
        1
    );
    assert!(
        node.quorum_leader().epoch >= term as i64,
        "{:?}",
        node.quorum_leader()
    );
    node.shutdown().await;
}
