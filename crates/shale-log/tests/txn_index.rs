//! Per-segment aborted-transaction indexes: Kafka's `<base>.txnindex` files beside each
//! segment, searched across segments, and dropped or truncated with their segment.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use shale_log::{AbortedTxn, AppendOrigin, Log, LogManager, TopicPartition};

fn aborted(producer_id: i64, first_offset: i64, last_offset: i64) -> AbortedTxn {
    AbortedTxn {
        producer_id,
        first_offset,
        last_offset,
        last_stable_offset: first_offset,
    }
}

/// Appends `n` one-record batches; returns the offset of the first.
fn append(log: &Log, n: usize) -> i64 {
    let first = log.log_end_offset();
    for _ in 0..n {
        log.append(&mut batch(1, "v"), 0, NOW, AppendOrigin::Client)
            .unwrap();
    }
    first
}

fn txn_index_path(log: &Log, base: i64) -> std::path::PathBuf {
    log.dir().join(format!("{base:020}.txnindex"))
}

#[test]
fn entries_live_in_the_segment_of_their_marker_in_kafkas_layout() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m
        .get_or_create(&TopicPartition::new("t", 0), small_config())
        .unwrap();
    append(&log, 10);
    log.append_aborted_txn(aborted(1, 2, 9)).unwrap();
    log.roll(NOW).unwrap();
    append(&log, 10);
    log.append_aborted_txn(aborted(2, 5, 12)).unwrap();
    log.append_aborted_txn(aborted(3, 15, 19)).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 10]);

    let bytes = std::fs::read(txn_index_path(&log, 0)).unwrap();
    assert_eq!(bytes, aborted(1, 2, 9).to_bytes().to_vec());
    assert_eq!(
        std::fs::metadata(txn_index_path(&log, 10)).unwrap().len(),
        2 * AbortedTxn::SIZE_BYTES as u64
    );

    let ids = |v: Vec<AbortedTxn>| v.iter().map(|t| t.producer_id).collect::<Vec<_>>();
    // A transaction starting in range but ending in a later segment is found there.
    assert_eq!(ids(log.collect_aborted_txns(0, 8).unwrap()), vec![1, 2]);
    assert_eq!(ids(log.collect_aborted_txns(10, 20).unwrap()), vec![2, 3]);
    assert_eq!(ids(log.collect_aborted_txns(13, 20).unwrap()), vec![3]);
    assert!(log.collect_aborted_txns(0, 2).unwrap().is_empty());

    // Markers must come in offset order within a segment.
    assert!(log.append_aborted_txn(aborted(4, 11, 12)).is_err());

    // Reopened, the indexes come back from their files.
    drop(log);
    drop(m);
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m
        .get_or_create(&TopicPartition::new("t", 0), small_config())
        .unwrap();
    assert!(!log.load_txn_indexes().unwrap());
    assert_eq!(ids(log.collect_aborted_txns(0, 20).unwrap()), vec![1, 2, 3]);
}

#[test]
fn retention_and_delete_records_drop_a_segments_entries_with_it() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m
        .get_or_create(&TopicPartition::new("t", 0), small_config())
        .unwrap();
    for segment in 0..3 {
        append(&log, 5);
        let end = log.log_end_offset();
        log.append_aborted_txn(aborted(segment, end - 5, end - 1))
            .unwrap();
        log.roll(NOW).unwrap();
    }
    assert!(txn_index_path(&log, 0).exists());
    assert!(txn_index_path(&log, 5).exists());

    log.delete_records_before(7).unwrap();
    log.apply_retention(NOW).unwrap();
    log.delete_due_files(NOW).unwrap();
    assert_eq!(log.segment_base_offsets()[0], 5);
    assert!(
        !txn_index_path(&log, 0).exists(),
        "deleted with its segment"
    );
    assert!(
        !log.dir()
            .join(format!("{:020}.txnindex.deleted", 0))
            .exists(),
        "the delayed delete removed it"
    );
    let ids: Vec<i64> = log
        .collect_aborted_txns(7, 100)
        .unwrap()
        .iter()
        .map(|t| t.producer_id)
        .collect();
    assert_eq!(ids, vec![1, 2]);
}

#[test]
fn truncation_drops_entries_of_removed_markers() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m
        .get_or_create(&TopicPartition::new("t", 0), small_config())
        .unwrap();
    append(&log, 10);
    log.append_aborted_txn(aborted(1, 0, 3)).unwrap();
    log.append_aborted_txn(aborted(2, 4, 8)).unwrap();
    log.roll(NOW).unwrap();
    append(&log, 10);
    log.append_aborted_txn(aborted(3, 10, 15)).unwrap();

    log.truncate_to(6).unwrap();
    assert_eq!(log.log_end_offset(), 6);
    assert!(!txn_index_path(&log, 10).exists());
    let ids: Vec<i64> = log
        .collect_aborted_txns(0, 100)
        .unwrap()
        .iter()
        .map(|t| t.producer_id)
        .collect();
    assert_eq!(ids, vec![1]);
    assert_eq!(
        std::fs::metadata(txn_index_path(&log, 0)).unwrap().len(),
        AbortedTxn::SIZE_BYTES as u64
    );

    // A replay from offset 2 drops what it is about to index again.
    log.truncate_aborted_txns_from(2).unwrap();
    assert!(log.collect_aborted_txns(0, 100).unwrap().is_empty());
}

#[test]
fn a_torn_index_is_reported_for_a_rebuild() {
    let d = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("t", 0);
    {
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get_or_create(&tp, small_config()).unwrap();
        append(&log, 10);
        log.append_aborted_txn(aborted(1, 0, 3)).unwrap();
        log.append_aborted_txn(aborted(2, 4, 8)).unwrap();
        m.shutdown().unwrap();
    }
    let path = d.path().join("t-0").join(format!("{:020}.txnindex", 0));
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 5)
        .unwrap();

    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m.get_or_create(&tp, small_config()).unwrap();
    assert!(log.load_txn_indexes().unwrap(), "torn: rebuild needed");
    assert!(log.collect_aborted_txns(0, 100).unwrap().is_empty());
    // The rebuild appends the entries again.
    log.append_aborted_txn(aborted(1, 0, 3)).unwrap();
    log.append_aborted_txn(aborted(2, 4, 8)).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
    assert!(!log.load_txn_indexes().unwrap());
}

#[test]
fn an_unclean_shutdown_reports_where_index_entries_may_be_missing() {
    let d = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("t", 0);
    {
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get_or_create(&tp, small_config()).unwrap();
        append(&log, 10);
        log.roll(NOW).unwrap();
        log.flush().unwrap();
        append(&log, 5);
        log.append_aborted_txn(aborted(1, 10, 14)).unwrap();
        // Dropped without a shutdown: no clean-shutdown marker.
    }
    {
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get(&tp).unwrap();
        let from = log.txn_index_unflushed_from().expect("unclean shutdown");
        assert!(
            from <= 10 && log.segment_base_offsets().contains(&from),
            "a segment base at or below the unflushed data: {from}"
        );
        m.shutdown().unwrap();
    }
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    assert_eq!(m.get(&tp).unwrap().txn_index_unflushed_from(), None);
}
