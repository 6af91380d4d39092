//! Controller and metadata-log throughput.
//!
//! - `controller/create_topic`: the pure state machine plus replay, creating one 3-partition
//!   topic in a cluster that already has 1000 topics.
//! - `image/snapshot_round_trip`: encoding and decoding an image of 1000 topics x 10 partitions.
//! - `node/create_topic_durable`: a CreateTopics through `MetadataNode`, fsync included.
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

criterion_group!(benches, bench_controller, bench_snapshot, bench_node);
criterion_main!(benches);
