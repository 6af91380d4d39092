//! MetadataNode in single-node combined mode on local files: start, submit, restart,
//! snapshots, meta.properties checks.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use shale_metadata::controller::ProducerIdBlock;
use shale_metadata::runtime::METADATA_LOG_SUBDIR;
use shale_metadata::{
    AlterConfigOp, AlterConfigOpType, ConfigResource, ControllerRequest, ControllerResponse,
    CreatableTopic, Endpoint, MetadataError, MetadataNode, MetadataNodeConfig, SecurityProtocol,
};

fn config(dir: &Path, node_id: i32) -> MetadataNodeConfig {
    let mut config = MetadataNodeConfig::new(node_id, dir.join("meta"));
    config.log_dirs = vec![dir.join("data1"), dir.join("data2")];
    config.broker_listeners = vec![Endpoint {
        name: "PLAINTEXT".into(),
        host: "127.0.0.1".into(),
        port: 9092,
        security_protocol: SecurityProtocol::Plaintext,
    }];
    config
}

async fn create(node: &MetadataNode, name: &str, partitions: i32) -> Result<(), MetadataError> {
    let response = node
        .submit(ControllerRequest::CreateTopics {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: partitions,
                replication_factor: -1,
                assignments: vec![],
                configs: vec![("retention.ms".into(), Some("1234".into()))],
            }],
            validate_only: false,
        })
        .await?;
    let ControllerResponse::CreateTopics(mut results) = response else {
        panic!("unexpected {response:?}")
    };
    results.remove(0).1.map(|_| ())
}

#[tokio::test]
async fn fresh_node_registers_and_creates_topics_with_leaders() {
    let dir = tempfile::tempdir().unwrap();
    let node = MetadataNode::start(config(dir.path(), 1)).await.unwrap();
    assert_eq!(node.cluster_id().len(), 22);
    assert_eq!(node.active_controller_id(), Some(1));
    let image = node.image();
    let broker = image.broker(1).unwrap();
    assert!(!broker.fenced);
    assert_eq!(broker.listeners[0].port, 9092);
    assert_eq!(broker.broker_epoch, node.broker_epoch());
    assert_eq!(image.feature_level("metadata.version"), Some(25));

    create(&node, "orders", 3).await.unwrap();
    // Visible, with leaders, as soon as submit returns.
    let image = node.image();
    let topic = image.topic("orders").unwrap();
    assert_eq!(topic.partitions.len(), 3);
    assert!(topic.partitions.values().all(|p| p.leader == 1));
    assert_eq!(image.topic_configs("orders")["retention.ms"], "1234");
    assert!(matches!(
        create(&node, "orders", 3).await,
        Err(MetadataError::TopicAlreadyExists(_))
    ));

    let mut rx = node.subscribe();
    assert_eq!(rx.borrow_and_update().offset, image.offset);
    node.wait_for_offset(image.offset).await.unwrap();

    let ControllerResponse::AllocateProducerIds(block) = node
        .submit(ControllerRequest::AllocateProducerIds {
            broker_id: 1,
            broker_epoch: node.broker_epoch(),
        })
        .await
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(
        block.unwrap(),
        ProducerIdBlock {
            first_producer_id: 0,
            len: 1000
        }
    );

    // meta.properties is in every directory.
    for d in ["meta", "data1", "data2"] {
        let props = shale_metadata::meta_properties::read(&dir.path().join(d))
            .unwrap()
            .unwrap();
        assert_eq!(props.cluster_id, node.cluster_id());
        assert_eq!(props.node_id, 1);
    }
    node.shutdown().await;
    assert!(matches!(
        node.submit(ControllerRequest::Tick).await,
        Err(MetadataError::ShutDown)
    ));
}

#[tokio::test]
async fn restart_keeps_state_and_reelects_leaders() {
    let dir = tempfile::tempdir().unwrap();
    let node = MetadataNode::start(config(dir.path(), 1)).await.unwrap();
    let cluster_id = node.cluster_id().to_string();
    create(&node, "a", 2).await.unwrap();
    create(&node, "b", 1).await.unwrap();
    node.submit(ControllerRequest::IncrementalAlterConfigs {
        resources: vec![(
            ConfigResource::Topic("a".into()),
            vec![AlterConfigOp {
                name: "cleanup.policy".into(),
                op: AlterConfigOpType::Set,
                value: Some("compact".into()),
            }],
        )],
        validate_only: false,
    })
    .await
    .unwrap();
    node.submit(ControllerRequest::DeleteTopics {
        names: vec!["b".into()],
        ids: vec![],
    })
    .await
    .unwrap();
    node.submit(ControllerRequest::AllocateProducerIds {
        broker_id: 1,
        broker_epoch: node.broker_epoch(),
    })
    .await
    .unwrap();
    let before = node.image();
    let topic_id = before.topic("a").unwrap().topic_id;
    let epoch_before = node.broker_epoch();
    node.shutdown().await;
    drop(node);

    let node = MetadataNode::start(config(dir.path(), 1)).await.unwrap();
    assert_eq!(node.cluster_id(), cluster_id);
    let image = node.image();
    assert!(image.offset > before.offset);
    let a = image.topic("a").unwrap();
    assert_eq!(a.topic_id, topic_id);
    assert!(a
        .partitions
        .values()
        .all(|p| p.leader == 1 && p.isr == vec![1]));
    // Shutdown and restart each moved leadership: the epoch grew.
    assert!(a.partitions.values().all(|p| p.leader_epoch >= 2));
    assert!(image.topic("b").is_none());
    assert_eq!(image.topic_configs("a")["cleanup.policy"], "compact");
    assert!(node.broker_epoch() > epoch_before);
    assert_eq!(image.next_producer_id(), 1000);
    node.shutdown().await;
}

#[tokio::test]
async fn snapshots_truncate_the_log_and_restore() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), 1);
    cfg.snapshot_every_records = 8;
    let node = MetadataNode::start(cfg.clone()).await.unwrap();
    for i in 0..20 {
        create(&node, &format!("t{i}"), 2).await.unwrap();
    }
    let before = node.image();
    node.shutdown().await;
    drop(node);

    let log_dir = dir.path().join("meta").join(METADATA_LOG_SUBDIR);
    let snapshots: Vec<_> = std::fs::read_dir(&log_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".snapshot"))
        .collect();
    assert!(!snapshots.is_empty());
    assert!(snapshots.len() <= 2);

    let node = MetadataNode::start(cfg).await.unwrap();
    let image = node.image();
    for i in 0..20 {
        let name = format!("t{i}");
        assert_eq!(
            image.topic(&name).unwrap().topic_id,
            before.topic(&name).unwrap().topic_id
        );
        assert_eq!(image.topic_configs(&name)["retention.ms"], "1234");
    }
    assert!(image
        .topic("t0")
        .unwrap()
        .partitions
        .values()
        .all(|p| p.leader == 1));
    node.shutdown().await;
}

#[tokio::test]
async fn torn_metadata_log_tail_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let node = MetadataNode::start(config(dir.path(), 1)).await.unwrap();
    create(&node, "kept", 1).await.unwrap();
    node.shutdown().await;
    drop(node);
    let log_file = dir
        .path()
        .join("meta")
        .join(METADATA_LOG_SUBDIR)
        .join("metadata.log");
    let mut bytes = std::fs::read(&log_file).unwrap();
    bytes.extend_from_slice(&[0x40, 0, 0, 0, 1, 2, 3]);
    std::fs::write(&log_file, bytes).unwrap();
    let node = MetadataNode::start(config(dir.path(), 1)).await.unwrap();
    assert!(node.image().topic("kept").is_some());
    create(&node, "after", 1).await.unwrap();
    node.shutdown().await;
}

#[tokio::test]
async fn refuses_directories_of_another_node_or_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let node = MetadataNode::start(config(dir.path(), 1)).await.unwrap();
    node.shutdown().await;
    drop(node);

    let err = MetadataNode::start(config(dir.path(), 2))
        .await
        .unwrap_err();
    assert!(
        matches!(err, MetadataError::InconsistentStorage(ref m) if m.contains("node id")),
        "{err}"
    );
    let mut other = config(dir.path(), 1);
    other.cluster_id = Some("AAAAAAAAAAAAAAAAAAAAAA".into());
    let err = MetadataNode::start(other).await.unwrap_err();
    assert!(
        matches!(err, MetadataError::InconsistentStorage(ref m) if m.contains("another cluster")),
        "{err}"
    );
    // A data directory taken from another cluster.
    let foreign = tempfile::tempdir().unwrap();
    let node = MetadataNode::start(config(foreign.path(), 1))
        .await
        .unwrap();
    node.shutdown().await;
    drop(node);
    let mut mixed = config(dir.path(), 1);
    mixed.log_dirs.push(foreign.path().join("data1"));
    assert!(matches!(
        MetadataNode::start(mixed).await,
        Err(MetadataError::InconsistentStorage(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn heartbeats_keep_the_local_broker_unfenced() {
    let dir = tempfile::tempdir().unwrap();
    let node = MetadataNode::start(config(dir.path(), 1)).await.unwrap();
    create(&node, "t", 1).await.unwrap();
    // Well past the session timeout: the heartbeat loop keeps the session alive.
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    let image = node.image();
    assert!(!image.broker(1).unwrap().fenced);
    assert_eq!(image.topic("t").unwrap().partitions[&0].leader, 1);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_submits_are_serialized() {
    let dir = tempfile::tempdir().unwrap();
    let node = MetadataNode::start(config(dir.path(), 1)).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let node = node.clone();
        // Every name is requested twice: exactly one of each pair may win.
        tasks.push(tokio::spawn(async move {
            create(&node, &format!("topic-{}", i % 20), 2).await
        }));
    }
    let mut created = 0;
    let mut already = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => created += 1,
            Err(MetadataError::TopicAlreadyExists(_)) => already += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!((created, already), (20, 20));
    let image = node.image();
    assert_eq!(image.topic_count(), 20);
    assert!(image
        .topics()
        .all(|t| t.partitions.values().all(|p| p.leader == 1)));
    node.shutdown().await;

    // Everything acknowledged is durable.
    let node = MetadataNode::start(config(dir.path(), 1)).await.unwrap();
    assert_eq!(node.image().topic_count(), 20);
    node.shutdown().await;
}
