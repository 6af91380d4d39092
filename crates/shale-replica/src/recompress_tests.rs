//! Producer state over batches that the topic's `compression.type` recompresses: a retry is
//! answered with the original offsets, and a transactional batch stays transactional.

use std::sync::Arc;

use shale_log::batch::parse_batches;
use shale_log::records::BatchBuilder;
use shale_log::{Compression, LogConfig, LogManager, TopicCompression, TopicPartition};

use crate::leader_state::Assignment;
use crate::state::RoleUpdate;
use crate::{Partition, PartitionAssignment, ReplicaManager};
use shale_log::ValidatedBatches;

const NOW_MS: i64 = 1_700_000_000_000;

fn hosted(dir: &std::path::Path, codec: Compression) -> (ReplicaManager, Arc<Partition>) {
    let logs = Arc::new(LogManager::open(vec![dir.to_path_buf()], 1).unwrap());
    let replicas = ReplicaManager::new(1, logs, 86_400_000);
    let tp = TopicPartition::new("t", 0);
    let config = LogConfig {
        compression_type: TopicCompression::Codec(codec),
        ..LogConfig::default()
    };
    replicas
        .reconcile(vec![PartitionAssignment {
            tp: tp.clone(),
            topic_id: uuid::Uuid::new_v4(),
            leader_id: 1,
            leader_epoch: 0,
            config,
            role: RoleUpdate {
                local_id: 1,
                leader_id: 1,
                assignment: Assignment {
                    leader_epoch: 0,
                    partition_epoch: 0,
                    replicas: vec![1],
                    isr: vec![1],
                },
                lag_time_max_ms: 30_000,
                min_insync_replicas: 1,
            },
        }])
        .unwrap();
    let p = replicas.get(&tp).unwrap();
    (replicas, p)
}

fn producer_batch(base_sequence: i32, transactional: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(NOW_MS).compression(Compression::None);
    b.producer_id = 1_000;
    b.producer_epoch = 0;
    b.base_sequence = base_sequence;
    b.transactional = transactional;
    for i in 0..4 {
        b.push(NOW_MS + i, Some(b"k"), Some(format!("v{i}").as_bytes()));
    }
    b.build().unwrap()
}

/// The stored batches' compression, transactional flag and base offset.
fn stored(p: &Partition) -> Vec<(Option<Compression>, bool, i64)> {
    let r = p.log.read(0, 1 << 20, i64::MAX, false).unwrap();
    let mut all = Vec::new();
    for s in &r.slices {
        all.extend_from_slice(&s.read_to_bytes().unwrap());
    }
    parse_batches(&all)
        .unwrap()
        .iter()
        .map(|h| (h.compression(), h.is_transactional(), h.base_offset))
        .collect()
}

#[test]
fn an_idempotent_retry_of_a_recompressed_batch_gets_its_original_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let (_replicas, p) = hosted(dir.path(), Compression::Zstd);
    let first = p
        .append_client(
            ValidatedBatches::parse(&mut producer_batch(0, false)).unwrap(),
            NOW_MS,
        )
        .unwrap();
    let second = p
        .append_client(
            ValidatedBatches::parse(&mut producer_batch(4, false)).unwrap(),
            NOW_MS,
        )
        .unwrap();
    assert_eq!((first.base_offset, first.last_offset), (0, 3));
    assert_eq!((second.base_offset, second.last_offset), (4, 7));
    // The producer did not hear back and sends both again.
    let retry = p
        .append_client(
            ValidatedBatches::parse(&mut producer_batch(0, false)).unwrap(),
            NOW_MS,
        )
        .unwrap();
    assert_eq!((retry.base_offset, retry.last_offset), (0, 3));
    let retry = p
        .append_client(
            ValidatedBatches::parse(&mut producer_batch(4, false)).unwrap(),
            NOW_MS,
        )
        .unwrap();
    assert_eq!((retry.base_offset, retry.last_offset), (4, 7));
    assert_eq!(p.log.log_end_offset(), 8);
    assert_eq!(
        stored(&p),
        vec![
            (Some(Compression::Zstd), false, 0),
            (Some(Compression::Zstd), false, 4)
        ]
    );
    // The next sequence goes on from the recompressed batches.
    let next = p
        .append_client(
            ValidatedBatches::parse(&mut producer_batch(8, false)).unwrap(),
            NOW_MS,
        )
        .unwrap();
    assert_eq!(next.base_offset, 8);
}

#[test]
fn a_recompressed_transactional_batch_stays_transactional() {
    let dir = tempfile::tempdir().unwrap();
    let (_replicas, p) = hosted(dir.path(), Compression::Gzip);
    p.append_client(
        ValidatedBatches::parse(&mut producer_batch(0, true)).unwrap(),
        NOW_MS,
    )
    .unwrap();
    assert_eq!(stored(&p), vec![(Some(Compression::Gzip), true, 0)]);
    // The open transaction holds the last stable offset back at its first offset.
    let entries = p.producer_entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].current_txn_start_offset, Some(0));
    assert_eq!(p.high_watermark(), 4);
    assert_eq!(p.last_stable_offset(), 0);
}
