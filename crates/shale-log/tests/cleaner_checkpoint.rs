//! The cleaner's progress in `cleaner-offset-checkpoint` (Kafka's file and format): written as
//! each log's pass ends, read at open so that a restart does not clean everything again.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use common::*;
use shale_log::{
    AppendOrigin, Compression, Log, LogConfig, LogManager, TopicPartition, CLEANER_OFFSET_FILE,
};

fn open(d: &tempfile::TempDir) -> LogManager {
    LogManager::open(vec![d.path().to_path_buf()], 1).unwrap()
}

fn checkpoint_path(d: &tempfile::TempDir) -> PathBuf {
    d.path().join(CLEANER_OFFSET_FILE)
}

fn checkpoint_text(d: &tempfile::TempDir) -> String {
    std::fs::read_to_string(checkpoint_path(d)).unwrap()
}

/// Appends `records` records over `keys` keys named after `tag` as one segment.
fn segment_of(log: &Log, tag: &str, records: usize, keys: usize) {
    for i in 0..records {
        let key = format!("{tag}-{}", i % keys);
        let mut b = keyed(&[(Some(&key), Some("value"))], Compression::None, NOW);
        log.append(&mut b, 0, NOW, AppendOrigin::Client).unwrap();
    }
    log.roll(NOW).unwrap();
}

#[test]
fn the_checkpoint_is_written_in_kafkas_format_as_a_pass_ends() {
    let d = tempfile::tempdir().unwrap();
    let m = open(&d);
    let a = m
        .get_or_create(&TopicPartition::new("alpha", 0), compacted_config())
        .unwrap();
    let b = m
        .get_or_create(&TopicPartition::new("beta", 3), compacted_config())
        .unwrap();
    segment_of(&a, "k", 20, 5);
    segment_of(&a, "k", 20, 5);
    segment_of(&b, "k", 10, 10);
    // Not cleaned yet: no entries.
    assert_eq!(checkpoint_text(&d), "0\n0\n");
    commit_all(&m);
    let r = m.run_cleaner_once(NOW).unwrap();
    assert_eq!(r.logs_cleaned, 2);
    // Up to the active segment of each: version, count, then `topic partition offset`.
    assert_eq!(a.first_dirty_offset(), Some(40));
    assert_eq!(b.first_dirty_offset(), Some(10));
    assert_eq!(checkpoint_text(&d), "0\n2\nalpha 0 40\nbeta 3 10\n");
}

#[test]
fn a_restart_reads_the_checkpoint_and_does_not_clean_again() {
    for clean_shutdown in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("again", 0);
        let config = LogConfig {
            min_cleanable_dirty_ratio: 0.5,
            ..compacted_config()
        };
        {
            let m = open(&d);
            let log = m.get_or_create(&tp, config.clone()).unwrap();
            segment_of(&log, "k", 200, 100);
            commit_all(&m);
            let r = m.run_cleaner_once(NOW).unwrap();
            assert_eq!(r.logs_cleaned, 1);
            assert_eq!(r.records_removed, 100);
            if clean_shutdown {
                m.shutdown().unwrap();
            }
        }
        let m = open(&d);
        let log = m.get(&tp).unwrap();
        log.update_config(config);
        assert_eq!(
            log.first_dirty_offset(),
            Some(200),
            "clean: {clean_shutdown}"
        );
        commit_all(&m);
        let r = m.run_cleaner_once(NOW).unwrap();
        assert_eq!(r.logs_cleaned, 0, "nothing is dirty");
        // A little new data against a large clean part stays below the dirty ratio.
        segment_of(&log, "k", 10, 10);
        commit_all(&m);
        let r = m.run_cleaner_once(NOW).unwrap();
        assert_eq!(r.logs_cleaned, 0, "the baseline came from the checkpoint");
        // Enough of it cleans again, from the checkpointed baseline on.
        segment_of(&log, "k", 200, 100);
        commit_all(&m);
        let r = m.run_cleaner_once(NOW).unwrap();
        assert_eq!(r.logs_cleaned, 1);
        assert_eq!(log.first_dirty_offset(), Some(410));
    }
}

#[test]
fn a_corrupt_checkpoint_is_ignored_like_the_other_checkpoints_and_rewritten() {
    for garbage in [
        "0\n5\nalpha 0\n",
        "1\n0\n",
        "0\n1\nalpha zero 7\n",
        "\u{0}\u{1}",
    ] {
        let d = tempfile::tempdir().unwrap();
        let tp = TopicPartition::new("alpha", 0);
        {
            let m = open(&d);
            let log = m.get_or_create(&tp, compacted_config()).unwrap();
            segment_of(&log, "k", 20, 5);
            commit_all(&m);
            m.run_cleaner_once(NOW).unwrap();
            m.shutdown().unwrap();
        }
        std::fs::write(checkpoint_path(&d), garbage).unwrap();
        // The logs open; their progress is unknown, so they clean from their start again.
        let m = open(&d);
        let log = m.get(&tp).unwrap();
        log.update_config(compacted_config());
        assert_eq!(log.first_dirty_offset(), None, "{garbage:?}");
        assert_eq!(checkpoint_text(&d), "0\n0\n", "replaced at open");
        commit_all(&m);
        assert_eq!(m.run_cleaner_once(NOW).unwrap().logs_cleaned, 1);
        assert_eq!(checkpoint_text(&d), "0\n1\nalpha 0 20\n");
    }
}

#[test]
fn a_checkpoint_outside_the_log_is_brought_inside_it() {
    let d = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("outside", 0);
    {
        let m = open(&d);
        let log = m.get_or_create(&tp, compacted_config()).unwrap();
        segment_of(&log, "k", 30, 30);
        log.delete_records_before(10).unwrap();
        m.shutdown().unwrap();
    }
    let reopen = |text: &str| {
        std::fs::write(checkpoint_path(&d), text).unwrap();
        let m = open(&d);
        let offset = m.get(&tp).unwrap().first_dirty_offset();
        m.shutdown().unwrap();
        offset
    };
    // Below the log start: the log start (retention or DeleteRecords moved past it).
    assert_eq!(reopen("0\n1\noutside 0 3\n"), Some(10));
    assert_eq!(checkpoint_text(&d), "0\n1\noutside 0 10\n");
    // Beyond the log end: the log end.
    assert_eq!(reopen("0\n1\noutside 0 1000\n"), Some(30));
    assert_eq!(reopen("0\n1\noutside 0 25\n"), Some(25));
}

#[test]
fn entries_of_deleted_partitions_are_dropped() {
    let d = tempfile::tempdir().unwrap();
    let gone = TopicPartition::new("gone", 0);
    let kept = TopicPartition::new("kept", 0);
    {
        let m = open(&d);
        for tp in [&gone, &kept] {
            let log = m.get_or_create(tp, compacted_config()).unwrap();
            segment_of(&log, "k", 5, 5);
        }
        commit_all(&m);
        m.run_cleaner_once(NOW).unwrap();
        assert_eq!(checkpoint_text(&d), "0\n2\ngone 0 5\nkept 0 5\n");
        m.delete(&gone).unwrap();
        assert_eq!(checkpoint_text(&d), "0\n1\nkept 0 5\n");
        // Created again under the same name, it starts with no progress.
        let again = m.get_or_create(&gone, compacted_config()).unwrap();
        assert_eq!(again.first_dirty_offset(), None);
        m.shutdown().unwrap();
    }
    // An entry whose partition is not on disk goes when the directory is opened.
    std::fs::write(checkpoint_path(&d), "0\n2\nkept 0 5\nvanished 4 17\n").unwrap();
    let m = open(&d);
    assert_eq!(checkpoint_text(&d), "0\n1\nkept 0 5\n");
    assert_eq!(m.get(&kept).unwrap().first_dirty_offset(), Some(5));
}

#[test]
fn a_truncation_takes_the_checkpoint_back_at_once() {
    let d = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("trunc", 0);
    let m = open(&d);
    let log = m.get_or_create(&tp, compacted_config()).unwrap();
    for tag in ["a", "b", "c"] {
        segment_of(&log, tag, 10, 10);
    }
    commit_all(&m);
    m.run_cleaner_once(NOW).unwrap();
    assert_eq!(log.first_dirty_offset(), Some(30));
    // A follower truncating into the second segment: that segment takes appends again.
    log.truncate_to(15).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0]);
    assert_eq!(log.first_dirty_offset(), Some(0));
    assert_eq!(checkpoint_text(&d), "0\n1\ntrunc 0 0\n");
    log.truncate_fully_and_start_at(100).unwrap();
    assert_eq!(
        log.first_dirty_offset(),
        Some(0),
        "below the new start, read as it"
    );
}
