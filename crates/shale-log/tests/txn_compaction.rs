//! Transaction-aware compaction, as Kafka's cleaner: aborted records go, markers stay while
//! they still mark records and go after `delete.retention.ms`, with their index entries.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use shale_log::records::BatchBuilder;
use shale_log::{
    parse_batches, AbortedTxn, AppendOrigin, BatchHeader, CleanupPolicy, Compression, Log,
    LogConfig, LogManager, TopicPartition,
};

const DELETE_RETENTION_MS: i64 = 1000;

fn compact_config() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        min_cleanable_dirty_ratio: 0.0,
        segment_bytes: 1 << 20,
        file_delete_delay_ms: 0,
        delete_retention_ms: DELETE_RETENTION_MS,
        ..LogConfig::default()
    }
}

fn txn_data(pid: i64, key: &str, value: &str, codec: Compression) -> Vec<u8> {
    let mut b = BatchBuilder::new(NOW).compression(codec);
    b.producer_id = pid;
    b.producer_epoch = 0;
    b.base_sequence = 0;
    b.transactional = true;
    b.push(NOW, Some(key.as_bytes()), Some(value.as_bytes()));
    b.build().unwrap()
}

fn marker(pid: i64, commit: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(NOW);
    b.producer_id = pid;
    b.producer_epoch = 0;
    b.transactional = true;
    b.control = true;
    b.push(
        NOW,
        Some(&[0, 0, 0, u8::from(commit)]),
        Some(&[0, 0, 0, 0, 0, 0]),
    );
    b.build().unwrap()
}

fn headers(log: &Log) -> Vec<BatchHeader> {
    let bytes = log
        .read(log.log_start_offset(), usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    parse_batches(&bytes).unwrap()
}

fn offsets_of(log: &Log) -> Vec<i64> {
    headers(log).iter().map(|h| h.base_offset).collect()
}

fn header_at(log: &Log, offset: i64) -> BatchHeader {
    *headers(log)
        .iter()
        .find(|h| h.base_offset == offset)
        .unwrap()
}

/// A new dirty segment, so the next pass has work to do.
fn add_dirty_segment(log: &Log, key: &str) {
    log.append(
        &mut keyed(&[(Some(key), Some("x"))], Compression::None, NOW),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap();
    log.roll(NOW).unwrap();
}

#[test]
fn aborted_records_go_then_markers_after_the_delete_retention_with_every_codec() {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let d = tempfile::tempdir().unwrap();
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m
            .get_or_create(&TopicPartition::new("c", 0), compact_config())
            .unwrap();
        let append = |bytes: Vec<u8>, origin| {
            let mut bytes = bytes;
            log.append(&mut bytes, 0, NOW, origin).unwrap().first_offset
        };
        assert_eq!(
            append(txn_data(1, "a", "aborted", codec), AppendOrigin::Client),
            0
        );
        assert_eq!(
            append(txn_data(2, "b", "committed", codec), AppendOrigin::Client),
            1
        );
        assert_eq!(append(marker(1, false), AppendOrigin::Coordinator), 2);
        log.append_aborted_txn(AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 2,
            last_stable_offset: 0,
        })
        .unwrap();
        assert_eq!(append(marker(2, true), AppendOrigin::Coordinator), 3);
        assert_eq!(
            append(
                keyed(&[(Some("b"), Some("newer"))], codec, NOW),
                AppendOrigin::Client
            ),
            4
        );
        assert_eq!(
            append(txn_data(3, "c", "open", codec), AppendOrigin::Client),
            5
        );
        assert_eq!(
            append(
                keyed(&[(Some("a"), Some("plain"))], codec, NOW),
                AppendOrigin::Client
            ),
            6
        );
        log.roll(NOW).unwrap();

        // Pass 1: the aborted record goes; its marker stays (this pass removed its records).
        // The committed record is superseded, so its COMMIT marker marks nothing: horizon.
        commit_all(&m);
        let report = m.run_cleaner_once(NOW).unwrap();
        assert_eq!(report.records_removed, 2, "{codec:?}");
        assert_eq!(offsets_of(&log), vec![2, 3, 4, 5, 6], "{codec:?}");
        assert!(!header_at(&log, 2).has_delete_horizon());
        let commit = header_at(&log, 3);
        assert!(commit.has_delete_horizon() && commit.is_control());
        assert_eq!(commit.base_timestamp, NOW + DELETE_RETENTION_MS);
        assert_eq!(
            commit.max_timestamp, NOW,
            "the marker's own timestamp stays"
        );
        assert_eq!(log.collect_aborted_txns(0, 10).unwrap().len(), 1);

        // Pass 2: nothing of the aborted transaction is left, so its marker gets a horizon.
        add_dirty_segment(&log, "d");
        commit_all(&m);
        m.run_cleaner_once(NOW + 500).unwrap();
        assert_eq!(offsets_of(&log), vec![2, 3, 4, 5, 6, 7], "{codec:?}");
        let abort = header_at(&log, 2);
        assert!(abort.has_delete_horizon());
        assert_eq!(abort.base_timestamp, NOW + 500 + DELETE_RETENTION_MS);

        // Pass 3: the COMMIT marker's horizon has passed.
        add_dirty_segment(&log, "e");
        commit_all(&m);
        m.run_cleaner_once(NOW + DELETE_RETENTION_MS).unwrap();
        assert_eq!(offsets_of(&log), vec![2, 4, 5, 6, 7, 8], "{codec:?}");

        // Pass 4: the ABORT marker goes, and its index entry with it; the open transaction's
        // record is still there untouched.
        add_dirty_segment(&log, "f");
        commit_all(&m);
        m.run_cleaner_once(NOW + 500 + DELETE_RETENTION_MS).unwrap();
        assert_eq!(offsets_of(&log), vec![4, 5, 6, 7, 8, 9], "{codec:?}");
        assert!(log.collect_aborted_txns(0, 100).unwrap().is_empty());
        assert!(header_at(&log, 5).is_transactional());
        assert!(!log.dir().join(format!("{:020}.txnindex", 0)).exists());

        // The cleaned log reopens with the same contents.
        m.shutdown().unwrap();
        drop(log);
        drop(m);
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m
            .get_or_create(&TopicPartition::new("c", 0), compact_config())
            .unwrap();
        assert_eq!(offsets_of(&log), vec![4, 5, 6, 7, 8, 9], "{codec:?}");
    }
}

#[test]
fn committed_records_and_their_marker_stay_while_live() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m
        .get_or_create(&TopicPartition::new("c", 0), compact_config())
        .unwrap();
    for (bytes, origin) in [
        (
            txn_data(4, "k", "committed", Compression::Zstd),
            AppendOrigin::Client,
        ),
        (marker(4, true), AppendOrigin::Coordinator),
        (
            txn_data(5, "k", "aborted", Compression::Zstd),
            AppendOrigin::Client,
        ),
        (marker(5, false), AppendOrigin::Coordinator),
    ] {
        let mut bytes = bytes;
        log.append(&mut bytes, 0, NOW, origin).unwrap();
    }
    log.append_aborted_txn(AbortedTxn {
        producer_id: 5,
        first_offset: 2,
        last_offset: 3,
        last_stable_offset: 2,
    })
    .unwrap();
    log.roll(NOW).unwrap();
    for pass in 0..3 {
        commit_all(&m);
        m.run_cleaner_once(NOW + pass * 10 * DELETE_RETENTION_MS)
            .unwrap();
        add_dirty_segment(&log, &format!("other-{pass}"));
        // The aborted record never supersedes the committed one.
        assert_eq!(offsets_of(&log)[..2], [0, 1], "pass {pass}");
        assert!(!header_at(&log, 1).has_delete_horizon());
    }
    assert!(!offsets_of(&log).contains(&3), "the ABORT marker went");
    assert!(log.collect_aborted_txns(0, 100).unwrap().is_empty());
}

#[test]
fn an_interrupted_swap_installs_the_cleaned_transaction_index_only_if_committed() {
    let d = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("s", 0);
    let entry = |pid| AbortedTxn {
        producer_id: pid,
        first_offset: 0,
        last_offset: 1,
        last_stable_offset: 0,
    };
    let dir = d.path().join("s-0");
    {
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get_or_create(&tp, compact_config()).unwrap();
        for (bytes, origin) in [
            (
                txn_data(1, "k", "v", Compression::None),
                AppendOrigin::Client,
            ),
            (marker(1, false), AppendOrigin::Coordinator),
        ] {
            let mut bytes = bytes;
            log.append(&mut bytes, 0, NOW, origin).unwrap();
        }
        log.append_aborted_txn(entry(1)).unwrap();
        m.shutdown().unwrap();
    }
    let name = |suffix: &str| dir.join(format!("{:020}{suffix}", 0));
    let reopen = || {
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get_or_create(&tp, compact_config()).unwrap();
        let ids: Vec<i64> = log
            .collect_aborted_txns(0, 10)
            .unwrap()
            .iter()
            .map(|t| t.producer_id)
            .collect();
        m.shutdown().unwrap();
        ids
    };

    // Crash before the log swap (the commit point): the index swap is dropped.
    std::fs::write(name(".txnindex.swap"), entry(2).to_bytes()).unwrap();
    assert_eq!(reopen(), vec![1]);
    assert!(!name(".txnindex.swap").exists());

    // Crash after it: both swaps complete.
    std::fs::copy(name(".log"), name(".log.swap")).unwrap();
    std::fs::write(name(".txnindex.swap"), entry(2).to_bytes()).unwrap();
    assert_eq!(reopen(), vec![2]);
    assert!(!name(".txnindex.swap").exists() && !name(".log.swap").exists());

    // Crash after the index was installed but before the log: the installed index stays.
    std::fs::copy(name(".log"), name(".log.swap")).unwrap();
    assert_eq!(reopen(), vec![2]);
}
