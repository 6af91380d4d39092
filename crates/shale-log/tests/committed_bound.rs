//! Retention and compaction stay below what is committed, as in Kafka: retention deletes only
//! segments wholly below the high watermark (`UnifiedLog.deletableSegments`), and the cleaner
//! touches no segment reaching the high watermark or the partition's last stable offset
//! (`LogCleanerManager.cleanableOffsets`).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use shale_log::batch::check_batch;
use shale_log::records::{batch_body, decode_records, BatchBuilder};
use shale_log::{
    parse_batches, AppendOrigin, Compression, Log, LogConfig, LogManager, StableOffsets,
    TopicPartition,
};

fn fill(log: &Log, batches: usize, ts_step: i64) {
    for i in 0..batches {
        let ts = NOW + i as i64 * ts_step;
        log.append(&mut batch_at(2, "f", ts), 0, ts, AppendOrigin::Client)
            .unwrap();
    }
}

fn open(d: &tempfile::TempDir) -> LogManager {
    LogManager::open(vec![d.path().to_path_buf()], 1).unwrap()
}

#[test]
fn retention_by_time_keeps_segments_at_or_above_the_high_watermark() {
    let d = tempfile::tempdir().unwrap();
    let m = open(&d);
    let config = LogConfig {
        retention_ms: 1000,
        ..small_config()
    };
    let log = m
        .get_or_create(&TopicPartition::new("time", 0), config)
        .unwrap();
    fill(&log, 500, 10);
    let bases = log.segment_base_offsets();
    assert!(bases.len() > 8);
    // Inside segment 3: segments 0..=2 end at or below it, segment 3 reaches past it.
    assert_eq!(log.set_high_watermark(bases[3] + 1), bases[3] + 1);
    let expired = NOW + 1_000_000;
    let r = m.run_retention_once(expired).unwrap();
    assert_eq!(r.segments_deleted, 3, "every segment has expired");
    assert_eq!(log.segment_base_offsets()[0], bases[3]);
    assert_eq!(log.log_start_offset(), bases[3]);
    assert!(log.log_start_offset() <= log.high_watermark());

    // Exactly at a segment base: the segment before it is wholly below and goes.
    log.raise_high_watermark(bases[5]).unwrap();
    let r = m.run_retention_once(expired).unwrap();
    assert_eq!(r.segments_deleted, 2);
    assert_eq!(log.log_start_offset(), bases[5]);

    // Once the high watermark reaches the end, everything but the active segment goes.
    log.raise_high_watermark(log.log_end_offset()).unwrap();
    m.run_retention_once(expired).unwrap();
    assert_eq!(log.segment_count(), 1);
    assert_eq!(log.log_start_offset(), *bases.last().unwrap());
}

#[test]
fn retention_by_size_keeps_segments_at_or_above_the_high_watermark() {
    let d = tempfile::tempdir().unwrap();
    let m = open(&d);
    let config = LogConfig {
        retention_bytes: 2048,
        ..small_config()
    };
    let log = m
        .get_or_create(&TopicPartition::new("size", 0), config)
        .unwrap();
    fill(&log, 500, 0);
    let bases = log.segment_base_offsets();
    assert!(bases.len() > 8);
    log.set_high_watermark(bases[2]);
    let r = m.run_retention_once(NOW).unwrap();
    assert_eq!(r.segments_deleted, 2, "the size allows far more");
    assert_eq!(log.log_start_offset(), bases[2]);
    assert!(log.size_bytes() > 2048 + 4096);

    // The high watermark passes them: retention by size deletes them now.
    log.raise_high_watermark(log.log_end_offset()).unwrap();
    let r = m.run_retention_once(NOW).unwrap();
    assert!(r.segments_deleted > 0);
    assert!(log.size_bytes() <= 2048 + 4096);
    assert!(log.size_bytes() >= 2048);
}

#[test]
fn a_reopened_log_keeps_everything_above_its_start_until_its_high_watermark_is_set() {
    let d = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("reopen", 0);
    let config = LogConfig {
        retention_ms: 1000,
        ..small_config()
    };
    {
        let m = open(&d);
        let log = m.get_or_create(&tp, config.clone()).unwrap();
        fill(&log, 300, 0);
        log.set_high_watermark(log.log_end_offset());
        m.shutdown().unwrap();
    }
    for clean in [true, false] {
        let m = open(&d);
        let log = m.get(&tp).unwrap();
        log.update_config(config.clone());
        let segments = log.segment_count();
        assert!(segments > 4);
        // Nothing says what was committed before the restart until the partition does.
        assert_eq!(log.high_watermark(), log.log_start_offset());
        let r = m.run_retention_once(NOW + 1_000_000).unwrap();
        assert_eq!(r.segments_deleted, 0);
        assert_eq!(log.segment_count(), segments);
        if clean {
            m.shutdown().unwrap();
        }
    }
    let m = open(&d);
    let log = m.get(&tp).unwrap();
    log.update_config(config);
    log.set_high_watermark(log.log_end_offset());
    m.run_retention_once(NOW + 1_000_000).unwrap();
    assert_eq!(log.segment_count(), 1);
}

#[test]
fn the_high_watermark_stays_between_the_log_start_and_the_log_end() {
    let d = tempfile::tempdir().unwrap();
    let log = Log::open(
        &d.path().join("hw-0"),
        TopicPartition::new("hw", 0),
        small_config(),
    )
    .unwrap();
    assert_eq!(log.high_watermark(), 0);
    fill(&log, 50, 0);
    assert_eq!(log.high_watermark(), 0, "appends do not commit");
    let end = log.log_end_offset();
    assert_eq!(log.set_high_watermark(end + 100), end);
    assert_eq!(log.raise_high_watermark(end - 10), None, "never backwards");
    assert_eq!(log.high_watermark(), end);

    log.truncate_to(40).unwrap();
    assert_eq!(
        log.high_watermark(),
        40,
        "a truncation takes it down with the end"
    );
    assert_eq!(log.raise_high_watermark(1000), None, "capped at the end");
    assert_eq!(log.set_high_watermark(10), 10);
    assert_eq!(log.delete_records_before(30).unwrap(), 30);
    assert_eq!(log.high_watermark(), 30, "never below the log start");
    assert_eq!(log.set_high_watermark(0), 30);
    assert_eq!(log.raise_high_watermark(35), Some(35));

    log.truncate_fully_and_start_at(500).unwrap();
    assert_eq!(log.high_watermark(), 500);
}

/// Every data record: (offset, key, value).
fn records(log: &Log) -> Vec<(i64, String, String)> {
    let bytes = log
        .read(log.log_start_offset(), usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    let mut out = Vec::new();
    let mut pos = 0;
    for h in parse_batches(&bytes).unwrap() {
        let b = &bytes[pos..pos + h.total_len()];
        check_batch(b).unwrap();
        pos += h.total_len();
        if h.is_control() {
            continue;
        }
        let body = batch_body(b, 1 << 30).unwrap();
        for r in decode_records(&body, h.record_count).unwrap() {
            out.push((
                h.base_offset + i64::from(r.offset_delta),
                String::from_utf8(r.key.unwrap().to_vec()).unwrap(),
                String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
            ));
        }
    }
    out
}

/// Appends one record as its own segment.
fn segment_of(log: &Log, key: &str, value: &str) -> i64 {
    let mut b = keyed(&[(Some(key), Some(value))], Compression::None, NOW);
    let offset = log
        .append(&mut b, 0, NOW, AppendOrigin::Client)
        .unwrap()
        .first_offset;
    log.roll(NOW).unwrap();
    offset
}

fn txn_batch(producer_id: i64, control: bool, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut b = BatchBuilder::new(NOW);
    b.producer_id = producer_id;
    b.producer_epoch = 0;
    b.base_sequence = if control { -1 } else { 0 };
    b.transactional = true;
    b.control = control;
    b.push(NOW, Some(key), Some(value));
    b.build().unwrap()
}

fn owned(v: &[(i64, &str, &str)]) -> Vec<(i64, String, String)> {
    v.iter()
        .map(|(o, k, v)| (*o, k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_cleaner_leaves_records_at_or_above_the_high_watermark() {
    let d = tempfile::tempdir().unwrap();
    let m = open(&d);
    let log = m
        .get_or_create(&TopicPartition::new("chw", 0), compacted_config())
        .unwrap();
    for v in ["v1", "v2", "v3"] {
        segment_of(&log, "a", v);
    }
    // Offset 2 (v3) is not committed: its segment is not cleaned and supersedes nothing.
    log.set_high_watermark(2);
    let r = m.run_cleaner_once(NOW).unwrap();
    assert_eq!(r.logs_cleaned, 1);
    assert_eq!(records(&log), owned(&[(1, "a", "v2"), (2, "a", "v3")]));
    assert_eq!(log.first_dirty_offset(), Some(2));

    // Committed now: the next pass may use it.
    log.raise_high_watermark(log.log_end_offset()).unwrap();
    m.run_cleaner_once(NOW).unwrap();
    assert_eq!(records(&log), owned(&[(2, "a", "v3")]));
}

#[test]
fn the_cleaner_ignores_markers_at_or_above_the_high_watermark() {
    let d = tempfile::tempdir().unwrap();
    let m = open(&d);
    let log = m
        .get_or_create(&TopicPartition::new("cmk", 0), compacted_config())
        .unwrap();
    log.append(
        &mut txn_batch(9, false, b"t", b"maybe"),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap();
    log.roll(NOW).unwrap();
    // An ABORT marker a new leader may still truncate away decides nothing yet.
    log.append(
        &mut txn_batch(9, true, &[0, 0, 0, 0], &[0, 0, 0, 0, 0, 0]),
        0,
        NOW,
        AppendOrigin::Coordinator,
    )
    .unwrap();
    log.roll(NOW).unwrap();
    log.set_high_watermark(1);
    m.run_cleaner_once(NOW).unwrap();
    assert_eq!(records(&log), owned(&[(0, "t", "maybe")]));

    log.raise_high_watermark(log.log_end_offset()).unwrap();
    m.run_cleaner_once(NOW).unwrap();
    assert!(
        records(&log).is_empty(),
        "aborted once the marker is committed"
    );
}

/// The broker's answer for one partition.
struct Stable(Option<i64>);

impl StableOffsets for Stable {
    fn last_stable_offset(&self, _: &TopicPartition) -> Option<i64> {
        self.0
    }
}

#[test]
fn the_cleaner_leaves_records_at_or_above_an_open_transactions_first_offset() {
    let d = tempfile::tempdir().unwrap();
    let m = open(&d);
    let log = m
        .get_or_create(&TopicPartition::new("copen", 0), compacted_config())
        .unwrap();
    segment_of(&log, "k", "v1");
    let open_first = log
        .append(
            &mut txn_batch(7, false, b"t", b"open"),
            0,
            NOW,
            AppendOrigin::Client,
        )
        .unwrap()
        .first_offset;
    log.roll(NOW).unwrap();
    segment_of(&log, "k", "v2");
    segment_of(&log, "t", "plain");
    commit_all(&m);
    let written = owned(&[
        (0, "k", "v1"),
        (1, "t", "open"),
        (2, "k", "v2"),
        (3, "t", "plain"),
    ]);

    // Not hosted: nothing of the partition is known to be stable.
    let r = m.run_cleaner_once_bounded(NOW, &Stable(None)).unwrap();
    assert_eq!(r.logs_cleaned, 0);
    assert_eq!(records(&log), written);

    // The transaction from offset 1 is open: only the segment wholly below it is cleaned,
    // and nothing from 1 on supersedes it.
    let r = m
        .run_cleaner_once_bounded(NOW, &Stable(Some(open_first)))
        .unwrap();
    assert_eq!(r.records_removed, 0);
    assert_eq!(records(&log), written);
    assert_eq!(log.first_dirty_offset(), Some(open_first));

    // The transaction ended (committed): everything below the high watermark is stable.
    let end = log.log_end_offset();
    m.run_cleaner_once_bounded(NOW, &Stable(Some(end))).unwrap();
    let left = records(&log);
    assert!(!left.contains(&(0, "k".into(), "v1".into())));
    assert!(left.contains(&(2, "k".into(), "v2".into())));
    assert!(
        left.contains(&(1, "t".into(), "open".into())),
        "undecided, kept"
    );
}
