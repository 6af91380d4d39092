//! The hosted partition keeps its log's high watermark and last stable offset current, so
//! retention and the cleaner stay below what is committed.

use std::sync::Arc;

use shale_log::batch::parse_batches;
use shale_log::records::{batch_body, decode_records, BatchBuilder};
use shale_log::{CleanupPolicy, LogConfig, LogManager, TopicPartition};
use uuid::Uuid;

use crate::leader_state::Assignment;
use crate::state::RoleUpdate;
use crate::{PartitionAssignment, ReplicaManager};
use shale_log::control::ControlMarker;
use shale_log::ValidatedBatches;

const LOCAL_ID: i32 = 1;
const PRODUCER_ID_EXPIRATION_MS: i64 = 3_600_000;

fn manager(dir: &tempfile::TempDir) -> ReplicaManager {
    let logs = LogManager::open(vec![dir.path().to_path_buf()], 1).unwrap();
    ReplicaManager::new(LOCAL_ID, Arc::new(logs), PRODUCER_ID_EXPIRATION_MS)
}

fn assignment(
    tp: &TopicPartition,
    leader_id: i32,
    isr: Vec<i32>,
    partition_epoch: i32,
    config: LogConfig,
) -> PartitionAssignment {
    PartitionAssignment {
        tp: tp.clone(),
        topic_id: Uuid::from_u128(7),
        leader_id,
        leader_epoch: 0,
        config,
        role: RoleUpdate {
            local_id: LOCAL_ID,
            leader_id,
            assignment: Assignment {
                leader_epoch: 0,
                partition_epoch,
                replicas: vec![1, 2],
                isr,
            },
            lag_time_max_ms: 30_000,
            min_insync_replicas: 1,
        },
    }
}

fn single_replica(tp: &TopicPartition, config: LogConfig) -> PartitionAssignment {
    let mut a = assignment(tp, LOCAL_ID, vec![LOCAL_ID], 0, config);
    a.role.assignment.replicas = vec![LOCAL_ID];
    a
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        segment_index_bytes: 4096,
        retention_ms: 1000,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn record_batch(key: &str, value: &str, now_ms: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(now_ms);
    b.push(now_ms, Some(key.as_bytes()), Some(value.as_bytes()));
    b.build().unwrap()
}

/// Every data record of the log: (offset, value).
fn values(p: &super::Partition) -> Vec<(i64, String)> {
    let bytes = p
        .log
        .read(p.log.log_start_offset(), usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    let mut out = Vec::new();
    let mut pos = 0;
    for h in parse_batches(&bytes).unwrap() {
        let batch = &bytes[pos..pos + h.total_len()];
        pos += h.total_len();
        if h.is_control() {
            continue;
        }
        let body = batch_body(batch, 1 << 20).unwrap();
        for r in decode_records(&body, h.record_count).unwrap() {
            let value = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
            out.push((h.base_offset + i64::from(r.offset_delta), value));
        }
    }
    out
}

#[test]
fn retention_waits_for_the_isr_and_deletes_once_the_high_watermark_passes() {
    let dir = tempfile::tempdir().unwrap();
    let rm = manager(&dir);
    let tp = TopicPartition::new("replicated", 0);
    rm.reconcile(vec![assignment(
        &tp,
        LOCAL_ID,
        vec![1, 2],
        0,
        small_segments(),
    )])
    .unwrap();
    let p = rm.get(&tp).unwrap();
    let now = shale_log::now_ms();
    for i in 0..100 {
        p.append_client(
            ValidatedBatches::parse(&mut record_batch("k", &format!("value-{i:04}"), now)).unwrap(),
            now,
        )
        .unwrap();
    }
    assert!(p.log.segment_count() > 4);
    // Replica 2 has fetched nothing: nothing is committed.
    assert_eq!(p.high_watermark(), 0);
    assert_eq!(p.log.high_watermark(), 0);
    let expired = now + 1_000_000;
    let r = rm.logs().run_retention_once(expired).unwrap();
    assert_eq!(r.segments_deleted, 0);

    // The controller takes replica 2 out of the ISR: the leader alone commits everything.
    rm.reconcile(vec![assignment(
        &tp,
        LOCAL_ID,
        vec![1],
        1,
        small_segments(),
    )])
    .unwrap();
    let end = p.log.log_end_offset();
    assert_eq!(p.high_watermark(), end);
    assert_eq!(p.log.high_watermark(), end);
    rm.logs().run_retention_once(expired).unwrap();
    assert_eq!(p.log.segment_count(), 1);
}

#[test]
fn a_new_partition_sets_its_logs_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("hosted", 0);
    {
        let rm = manager(&dir);
        rm.reconcile(vec![single_replica(&tp, small_segments())])
            .unwrap();
        let p = rm.get(&tp).unwrap();
        let now = shale_log::now_ms();
        p.append_client(
            ValidatedBatches::parse(&mut record_batch("k", "v", now)).unwrap(),
            now,
        )
        .unwrap();
        assert_eq!(p.log.high_watermark(), 1, "a lone leader commits at once");
        rm.logs().shutdown().unwrap();
    }
    // Found on disk at start-up: nothing above its start counts as committed until hosted.
    let rm = manager(&dir);
    assert_eq!(rm.logs().get(&tp).unwrap().high_watermark(), 0);
    rm.reconcile(vec![single_replica(&tp, small_segments())])
        .unwrap();
    assert_eq!(rm.get(&tp).unwrap().log.high_watermark(), 1);
}

#[test]
fn a_followers_high_watermark_moves_in_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let rm = manager(&dir);
    let tp = TopicPartition::new("followed", 0);
    rm.reconcile(vec![assignment(&tp, 2, vec![1, 2], 0, small_segments())])
        .unwrap();
    let p = rm.get(&tp).unwrap();
    let signal = p.replication.subscribe();
    let now = shale_log::now_ms();
    for offset in 0..10 {
        let mut b = BatchBuilder::new(now);
        b.base_offset = offset;
        b.push(now, Some(b"k"), Some(b"v"));
        p.append_as_follower(&mut b.build().unwrap(), now).unwrap();
    }
    p.update_follower_high_watermark(8, 0);
    assert_eq!(p.log.high_watermark(), 8);
    p.update_follower_high_watermark(50, 0);
    assert_eq!(p.log.high_watermark(), 10, "capped at the local end");

    p.truncate_as_follower(6, PRODUCER_ID_EXPIRATION_MS)
        .unwrap();
    assert_eq!(p.log.high_watermark(), 6);
    assert_eq!(signal.borrow().high_watermark, 6);

    p.restart_as_follower_at(40, PRODUCER_ID_EXPIRATION_MS)
        .unwrap();
    assert_eq!(p.log.high_watermark(), 40);
    assert_eq!(signal.borrow().high_watermark, 40);
}

#[test]
fn the_cleaner_leaves_an_open_transaction_and_what_follows_it() {
    let dir = tempfile::tempdir().unwrap();
    let rm = manager(&dir);
    let tp = TopicPartition::new("compacted", 0);
    let config = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        min_cleanable_dirty_ratio: 0.0,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    };
    rm.reconcile(vec![single_replica(&tp, config)]).unwrap();
    let p = rm.get(&tp).unwrap();
    let now = shale_log::now_ms();
    p.append_client(
        ValidatedBatches::parse(&mut record_batch("k", "v1", now)).unwrap(),
        now,
    )
    .unwrap();
    p.log.roll(now).unwrap();
    let mut txn = BatchBuilder::new(now);
    txn.producer_id = 4000;
    txn.producer_epoch = 0;
    txn.base_sequence = 0;
    txn.transactional = true;
    txn.push(now, Some(b"t"), Some(b"open"));
    let open = p
        .append_client(
            ValidatedBatches::parse(&mut txn.build().unwrap()).unwrap(),
            now,
        )
        .unwrap()
        .base_offset;
    p.log.roll(now).unwrap();
    p.append_client(
        ValidatedBatches::parse(&mut record_batch("k", "v2", now)).unwrap(),
        now,
    )
    .unwrap();
    p.log.roll(now).unwrap();
    assert_eq!(p.high_watermark(), p.log.log_end_offset());
    assert_eq!(p.last_stable_offset(), open);

    rm.run_cleaner_once(now).unwrap();
    let written = vec![
        (0, "v1".to_owned()),
        (1, "open".to_owned()),
        (2, "v2".to_owned()),
    ];
    assert_eq!(
        values(&p),
        written,
        "v1 is below the open transaction, v2 above it"
    );

    // The transaction commits: everything up to the high watermark is stable.
    p.append_marker(
        &ControlMarker {
            producer_id: 4000,
            producer_epoch: 0,
            coordinator_epoch: 0,
            commit: true,
        },
        shale_txn::TransactionVersion::Legacy,
        now,
    )
    .unwrap();
    p.log.roll(now).unwrap();
    assert_eq!(p.last_stable_offset(), p.log.log_end_offset());
    rm.run_cleaner_once(now).unwrap();
    assert_eq!(
        values(&p),
        vec![(1, "open".to_owned()), (2, "v2".to_owned())]
    );
}
