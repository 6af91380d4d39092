//! Controller and metadata-log throughput.
//!
//! - `controller/create_topic`: the pure state machine plus replay, creating one 3-partition
//!   topic in a cluster that already has 1000 topics.
//! - `image/snapshot_round_trip`: encoding and decoding an image of 1000 topics x 10 partitions.
//! - `node/create_topic_durable`: a CreateTopics through `MetadataNode`, fsync included.
//! - `quorum3/create_topics_64_concurrent`: 64 concurrent CreateTopics (one partition: a topic
//!   and a partition record each) spread over three voters on loopback, two thirds forwarded to
//!   the active controller; throughput in CreateTopics/s (records/s is twice that).
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use shale_metadata::{
    Controller, ControllerConfig, ControllerRequest, ControllerResponse, CreatableTopic,
    MetadataImage, MetadataNode, MetadataNodeConfig,
};
use uuid::Uuid;

fn cluster(topics: usize, partitions: i32) -> (Controller, MetadataImage) {
    let mut controller = Controller::new(ControllerConfig::default(), 1);
    let mut image = MetadataImage::empty("bench");
    let run = |controller: &mut Controller, image: &mut MetadataImage, req| {
        let (response, records) = controller.handle(image, req, 0);
        *image = image.apply_entry(&records, image.offset + 1);
        response
    };
    for broker_id in 1..=3 {
        let ControllerResponse::RegisterBroker(Ok(epoch)) = run(
            &mut controller,
            &mut image,
            ControllerRequest::RegisterBroker {
                broker_id,
                incarnation_id: Uuid::from_u128(broker_id as u128),
                cluster_id: "bench".into(),
                listeners: vec![],
                rack: None,
                features: vec![],
                unclean_shutdown: false,
            },
        ) else {
            panic!("registration failed")
        };
        let offset = image.offset;
        run(
            &mut controller,
            &mut image,
            ControllerRequest::BrokerHeartbeat {
                broker_id,
                broker_epoch: epoch,
                want_fence: false,
                want_shutdown: false,
                current_metadata_offset: offset,
            },
        );
    }
    for i in 0..topics {
        run(
            &mut controller,
            &mut image,
            create_request(&format!("existing-{i}"), partitions, 3),
        );
    }
    (controller, image)
}

fn create_request(name: &str, partitions: i32, replication_factor: i16) -> ControllerRequest {
    ControllerRequest::CreateTopics {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor,
            assignments: vec![],
            configs: vec![],
        }],
        validate_only: false,
    }
}

fn bench_controller(c: &mut Criterion) {
    let (mut controller, image) = cluster(1000, 3);
    let mut n = 0u64;
    c.bench_function("controller/create_topic", |b| {
        b.iter(|| {
            n += 1;
            let (response, records) =
                controller.handle(&image, create_request(&format!("new-{n}"), 3, 3), 0);
            let next = image.apply_entry(&records, image.offset + 1);
            black_box((response, next));
        })
    });
}

fn bench_snapshot(c: &mut Criterion) {
    let (_, image) = cluster(1000, 10);
    c.bench_function("image/snapshot_round_trip", |b| {
        b.iter(|| {
            let bytes = image.encode_snapshot();
            black_box(MetadataImage::decode_snapshot(&bytes).unwrap());
        })
    });
}

fn bench_node(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let node = runtime
        .block_on(MetadataNode::start(MetadataNodeConfig::new(
            1,
            dir.path().to_path_buf(),
        )))
        .unwrap();
    let mut n = 0u64;
    c.bench_function("node/create_topic_durable", |b| {
        b.iter_batched(
            || {
                n += 1;
                create_request(&format!("durable-{n}"), 1, 1)
            },
            |request| runtime.block_on(node.submit(request)).unwrap(),
            BatchSize::SmallInput,
        )
    });
    runtime.block_on(node.shutdown());
}

/// Three in-process voters on loopback, each with its own directory, fsync on.
async fn three_voters(root: &std::path::Path) -> Vec<MetadataNode> {
    use shale_metadata::{QuorumIo, QuorumMode, QuorumVoter};
    let mut listeners = Vec::new();
    let mut voters = Vec::new();
    for node_id in 1..=3 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        voters.push(QuorumVoter {
            node_id,
            addr: listener.local_addr().unwrap(),
        });
        listeners.push((node_id, listener));
    }
    let starts: Vec<_> = listeners
        .into_iter()
        .map(|(node_id, listener)| {
            let mut config = MetadataNodeConfig::new(node_id, root.join(format!("node-{node_id}")));
            config.cluster_id = Some("MkU3OEVBNTcwNTJENDM2Qk".into());
            config.quorum = QuorumMode::Voter {
                voters: voters.clone(),
                listen_addr: voters[node_id as usize - 1].addr,
            };
            tokio::spawn(MetadataNode::start_with_quorum_io(
                config,
                QuorumIo {
                    listener: Some(listener),
                    faults: None,
                },
            ))
        })
        .collect();
    let mut nodes = Vec::new();
    for start in starts {
        nodes.push(start.await.unwrap().unwrap());
    }
    nodes
}

fn bench_quorum(c: &mut Criterion) {
    const CONCURRENT: u64 = 64;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let nodes = runtime.block_on(three_voters(dir.path()));
    let mut n = 0u64;
    let mut group = c.benchmark_group("quorum3");
    group.throughput(criterion::Throughput::Elements(CONCURRENT));
    group.sample_size(20);
    group.bench_function("create_topics_64_concurrent", |b| {
        b.iter(|| {
            let batch: Vec<_> = (0..CONCURRENT)
                .map(|i| {
                    n += 1;
                    let node = nodes[(i % 3) as usize].clone();
                    let request = create_request(&format!("quorum-{n}"), 1, 1);
                    async move { node.submit(request).await }
                })
                .collect();
            runtime.block_on(async {
                let tasks: Vec<_> = batch.into_iter().map(tokio::spawn).collect();
                for task in tasks {
                    task.await.unwrap().unwrap();
                }
            });
        })
    });
    group.finish();
    for node in nodes {
        runtime.block_on(node.shutdown());
    }
}

criterion_group!(
    benches,
    bench_controller,
    bench_snapshot,
    bench_node,
    bench_quorum
);
criterion_main!(benches);
