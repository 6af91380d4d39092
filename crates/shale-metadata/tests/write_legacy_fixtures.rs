//! One-off generator of the legacy (bincode) fixture directories under
//! `tests/data/legacy-bincode/`. Runs only when `SHALE_FIXTURE_OUT` names an output directory.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use shale_metadata::controller::{QuotaAlteration, ScramUpsertion};
use shale_metadata::image::AclEntry;
use shale_metadata::runtime::{QuorumIo, QuorumMode, QuorumVoter};
use shale_metadata::{
    AlterConfigOp, AlterConfigOpType, ConfigResource, ControllerRequest, CreatableTopic,
    CreatePartitionsTopic, Endpoint, MetadataNode, MetadataNodeConfig, SecurityProtocol,
};
use tokio::net::TcpListener;
use uuid::Uuid;

const CLUSTER_ID: &str = "TGVnYWN5Rml4dHVyZTAwMQ";

fn config(dir: &Path, quorum: QuorumMode) -> MetadataNodeConfig {
    let mut config = MetadataNodeConfig::new(1, dir.join("meta"));
    config.log_dirs = vec![dir.join("meta"), dir.join("data")];
    config.broker_listeners = vec![Endpoint {
        name: "PLAINTEXT".into(),
        host: "127.0.0.1".into(),
        port: 9092,
        security_protocol: SecurityProtocol::Plaintext,
    }];
    config.cluster_id = Some(CLUSTER_ID.into());
    config.snapshot_every_records = 12;
    config.quorum = quorum;
    config
}

async fn fill(node: &MetadataNode) {
    let topic =
        |name: &str, partitions: i32, configs: Vec<(String, Option<String>)>| CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: 1,
            assignments: vec![],
            configs,
        };
    node.submit(ControllerRequest::CreateTopics {
        topics: vec![
            topic(
                "orders",
                3,
                vec![("retention.ms".into(), Some("86400000".into()))],
            ),
            topic(
                "events",
                1,
                vec![("cleanup.policy".into(), Some("compact".into()))],
            ),
        ],
        validate_only: false,
    })
    .await
    .unwrap();
    node.submit(ControllerRequest::IncrementalAlterConfigs {
        resources: vec![
            (
                ConfigResource::Topic("orders".into()),
                vec![AlterConfigOp {
                    name: "max.message.bytes".into(),
                    op: AlterConfigOpType::Set,
                    value: Some("2097152".into()),
                }],
            ),
            (
                ConfigResource::ClusterDefaultBroker,
                vec![AlterConfigOp {
                    name: "log.retention.ms".into(),
                    op: AlterConfigOpType::Set,
                    value: Some("604800000".into()),
                }],
            ),
        ],
        validate_only: false,
    })
    .await
    .unwrap();
    node.submit(ControllerRequest::CreateAcls {
        creations: vec![AclEntry {
            id: Uuid::nil(),
            resource_type: 2,
            resource_name: "orders".into(),
            pattern_type: 3,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
        }],
    })
    .await
    .unwrap();
    node.submit(ControllerRequest::AlterUserScramCredentials {
        deletions: vec![],
        upsertions: vec![ScramUpsertion {
            name: "alice".into(),
            mechanism: 1,
            iterations: 4096,
            salt: vec![1, 2, 3],
            stored_key: vec![4; 32],
            server_key: vec![5; 32],
        }],
    })
    .await
    .unwrap();
    node.submit(ControllerRequest::AlterClientQuotas {
        entries: vec![QuotaAlteration {
            entity: vec![("user".into(), Some("alice".into()))],
            ops: vec![("producer_byte_rate".into(), Some(1048576.0))],
        }],
        validate_only: false,
    })
    .await
    .unwrap();
    node.submit(ControllerRequest::AllocateProducerIds {
        broker_id: 1,
        broker_epoch: node.broker_epoch(),
    })
    .await
    .unwrap();
    // After the snapshot: entries that stay in the log.
    node.submit(ControllerRequest::CreatePartitions {
        topics: vec![CreatePartitionsTopic {
            name: "orders".into(),
            count: 4,
            assignments: None,
        }],
        validate_only: false,
    })
    .await
    .unwrap();
    node.submit(ControllerRequest::CreateTopics {
        topics: vec![topic("late", 2, vec![])],
        validate_only: false,
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_legacy_fixtures() {
    let Some(out) = std::env::var_os("SHALE_FIXTURE_OUT") else {
        return;
    };
    let out = Path::new(&out);
    let single = out.join("single-node");
    let node = MetadataNode::start(config(&single, QuorumMode::Single))
        .await
        .unwrap();
    fill(&node).await;
    node.shutdown().await;

    let voter = out.join("raft-voter");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let quorum = QuorumMode::Voter {
        voters: vec![QuorumVoter { node_id: 1, addr }],
        listen_addr: addr,
    };
    let node = MetadataNode::start_with_quorum_io(
        config(&voter, quorum),
        QuorumIo {
            listener: Some(listener),
            faults: None,
        },
    )
    .await
    .unwrap();
    fill(&node).await;
    println!("voter epoch {}", node.quorum_leader().epoch);
    node.shutdown().await;
}
