#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use shale_log::{AppendOrigin, Log, LogConfig, LogError, LogManager, TopicPartition};

fn fill(log: &Log, batches: usize, ts_step: i64) -> Vec<(i64, Vec<u8>)> {
    (0..batches)
        .map(|i| {
            let mut b = batch_at(2, "f", NOW + i as i64 * ts_step);
            let info = log
                .append(&mut b, 0, NOW + i as i64 * ts_step, AppendOrigin::Client)
                .unwrap();
            (info.first_offset, b)
        })
        .collect()
}

#[test]
fn retention_by_time_and_size_never_deletes_active() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let config = LogConfig {
        retention_ms: 1000,
        ..small_config()
    };
    let log = m
        .get_or_create(&TopicPartition::new("ret", 0), config)
        .unwrap();
    fill(&log, 200, 10);
    let segs = log.segment_count();
    assert!(segs > 4);
    // Nothing is older than 1 s relative to the newest data yet.
    commit_all(&m);
    let r = m.run_retention_once(NOW + 1999 - 1000).unwrap();
    assert_eq!(r.segments_deleted, 0);
    commit_all(&m);
    let r = m.run_retention_once(NOW + 1_000_000).unwrap();
    assert_eq!(r.segments_deleted, segs - 1);
    assert_eq!(log.segment_count(), 1);
    assert_eq!(log.log_start_offset(), log.segment_base_offsets()[0]);
    assert!(matches!(
        log.read(0, 100, i64::MAX, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    let leftover = std::fs::read_dir(log.dir())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".deleted")
        })
        .count();
    assert_eq!(leftover, 0, "file.delete.delay.ms = 0 removes at once");

    let log2 = m
        .get_or_create(
            &TopicPartition::new("ret", 1),
            LogConfig {
                retention_bytes: 2048,
                ..small_config()
            },
        )
        .unwrap();
    fill(&log2, 200, 0);
    commit_all(&m);
    m.run_retention_once(NOW).unwrap();
    assert!(log2.size_bytes() <= 2048 + 4096);
    assert!(log2.size_bytes() >= 2048);
}

#[test]
fn deleted_segments_stay_readable_through_held_slices() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let config = LogConfig {
        retention_ms: 0,
        file_delete_delay_ms: 60_000,
        ..small_config()
    };
    let log = m
        .get_or_create(&TopicPartition::new("held", 0), config)
        .unwrap();
    let written = fill(&log, 100, 0);
    let slice = log.read(0, usize::MAX, i64::MAX, false).unwrap();
    commit_all(&m);
    m.run_retention_once(NOW + 10).unwrap();
    assert!(log.log_start_offset() > 0);
    let renamed = std::fs::read_dir(log.dir())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".log.deleted")
        })
        .count();
    assert!(renamed > 0);
    let all: Vec<u8> = written.iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(slice.to_bytes().unwrap().as_ref(), &all[..]);
    commit_all(&m);
    let r = m.run_retention_once(NOW + 70_000).unwrap();
    assert!(r.files_removed >= renamed);
}

#[test]
fn delete_records_moves_start_and_retention_drops_segments() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let tp = TopicPartition::new("dr", 0);
    let log = m.get_or_create(&tp, small_config()).unwrap();
    fill(&log, 100, 0);
    assert_eq!(log.delete_records_before(151).unwrap(), 151);
    assert_eq!(log.delete_records_before(10).unwrap(), 151);
    assert!(matches!(
        log.delete_records_before(1000),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert!(matches!(
        log.read(150, 10, i64::MAX, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    let r = log
        .read(151, 10, i64::MAX, true)
        .unwrap()
        .to_bytes()
        .unwrap();
    assert_eq!(offsets(&r), vec![150]);
    let before = log.segment_count();
    m.run_retention_once(NOW).unwrap();
    assert!(log.segment_count() < before);
    assert_eq!(log.log_start_offset(), 151);
    m.shutdown().unwrap();
    drop(log);
    drop(m);
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    assert_eq!(m.get(&tp).unwrap().log_start_offset(), 151);
}

#[test]
fn truncate_to_removes_tail_across_segments() {
    let d = tempfile::tempdir().unwrap();
    let log = Log::open(
        &d.path().join("tr-0"),
        TopicPartition::new("tr", 0),
        small_config(),
    )
    .unwrap();
    let written = fill(&log, 100, 1);
    let segs = log.segment_base_offsets();
    let cut = segs[1] + 4; // a batch boundary inside segment 1
    log.truncate_to(cut).unwrap();
    assert_eq!(log.log_end_offset(), cut);
    assert_eq!(log.segment_count(), 2);
    let bytes = log
        .read(0, usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    let expected: Vec<u8> = written
        .iter()
        .filter(|(o, _)| *o < cut)
        .flat_map(|(_, b)| b.clone())
        .collect();
    assert_eq!(bytes.as_ref(), &expected[..]);
    let mut b = batch(2, "n");
    assert_eq!(
        log.append(&mut b, 1, NOW, AppendOrigin::Client)
            .unwrap()
            .first_offset,
        cut
    );
    assert_eq!(
        log.max_timestamp_offset().unwrap().map(|x| x.0),
        Some(cut - 1)
    );
    // Below the first segment: the log restarts empty at the offset.
    log.truncate_to(0).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 0));
    assert_eq!(log.read(0, 100, i64::MAX, true).unwrap().total_len(), 0);
}

#[test]
fn leader_epochs_follow_kafka_semantics_and_persist() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("ep-0");
    let tp = TopicPartition::new("ep", 0);
    {
        let log = Log::open(&dir, tp.clone(), LogConfig::default()).unwrap();
        assert_eq!(log.end_offset_for_epoch(0), None);
        for (epoch, n) in [(1, 3), (1, 2), (3, 4), (5, 1)] {
            let mut b = batch(n, "e");
            log.append(&mut b, epoch, NOW, AppendOrigin::Client)
                .unwrap();
        }
        // epoch 1 -> 0, epoch 3 -> 5, epoch 5 -> 9; LEO 10
        assert_eq!(log.epoch_entries(), vec![(1, 0), (3, 5), (5, 9)]);
        assert_eq!(log.end_offset_for_epoch(5), Some((5, 10)));
        assert_eq!(log.end_offset_for_epoch(3), Some((3, 9)));
        assert_eq!(log.end_offset_for_epoch(2), Some((1, 5)));
        assert_eq!(log.end_offset_for_epoch(0), Some((0, 0)));
        assert_eq!(log.end_offset_for_epoch(6), None);
        assert_eq!(log.end_offset_for_epoch(-1), None);
        log.assign_epoch_start_offset(7, 10).unwrap();
        assert_eq!(log.latest_epoch(), Some(7));
        assert_eq!(log.end_offset_for_epoch(5), Some((5, 10)));
        log.truncate_to(9).unwrap();
        assert_eq!(log.log_end_offset(), 9);
        assert_eq!(log.epoch_entries(), vec![(1, 0), (3, 5)]);
        log.close().unwrap();
    }
    let text = std::fs::read_to_string(dir.join("leader-epoch-checkpoint")).unwrap();
    assert_eq!(text, "0\n2\n1 0\n3 5\n");
    let log = Log::open(&dir, tp, LogConfig::default()).unwrap();
    assert_eq!(log.epoch_entries(), vec![(1, 0), (3, 5)]);
    assert_eq!(log.delete_records_before(6).unwrap(), 6);
    assert_eq!(log.epoch_entries(), vec![(3, 6)]);
}

#[test]
fn segment_ms_rolls_by_first_batch_timestamp() {
    let d = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_ms: 1000,
        ..LogConfig::default()
    };
    let log = Log::open(&d.path().join("ms-0"), TopicPartition::new("ms", 0), config).unwrap();
    log.append(&mut batch_at(1, "a", NOW), 0, NOW, AppendOrigin::Client)
        .unwrap();
    log.append(
        &mut batch_at(1, "b", NOW + 500),
        0,
        NOW + 500,
        AppendOrigin::Client,
    )
    .unwrap();
    assert_eq!(log.segment_count(), 1);
    log.append(
        &mut batch_at(1, "c", NOW + 1500),
        0,
        NOW + 1500,
        AppendOrigin::Client,
    )
    .unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
}

#[test]
fn delete_records_survives_unclean_restart() {
    let d = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("drc", 0);
    {
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get_or_create(&tp, LogConfig::default()).unwrap();
        fill(&log, 3, 0);
        log.delete_records_before(3).unwrap();
    }
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    assert_eq!(m.get(&tp).unwrap().log_start_offset(), 3);
}
