#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use shale_log::{parse_batches, AppendOrigin, LogConfig, LogManager, TopicPartition};

fn tp() -> TopicPartition {
    TopicPartition::new("crash", 0)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn segment_logs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v
}

/// Writes batches, flushes part of them, and "crashes" (no shutdown).
/// Returns the pristine dir and each batch's (base offset, bytes as stored).
fn crashed_log(root: &Path, config: LogConfig) -> Vec<(i64, Vec<u8>)> {
    let m = LogManager::open(vec![root.to_path_buf()], 1).unwrap();
    let log = m.get_or_create(&tp(), config).unwrap();
    let mut written = Vec::new();
    for i in 0..40 {
        let mut b = batch(1 + i % 4, &format!("v{i}"));
        let info = log.append(&mut b, 3, NOW, AppendOrigin::Client).unwrap();
        written.push((info.first_offset, b));
        if i == 20 {
            log.flush().unwrap();
            m.write_checkpoints().unwrap();
        }
    }
    drop(log);
    drop(m);
    written
}

fn check_recovered(root: &Path, written: &[(i64, Vec<u8>)], whole: usize, config: &LogConfig) {
    let m = LogManager::open(vec![root.to_path_buf()], 1).unwrap();
    let log = m.get(&tp()).unwrap();
    let expect_end = if whole == 0 {
        0
    } else {
        written[whole - 1].0
            + i64::from(parse_batches(&written[whole - 1].1).unwrap()[0].last_offset_delta)
            + 1
    };
    assert_eq!(log.log_end_offset(), expect_end, "whole batches {whole}");
    let bytes = log
        .read(0, usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    let expected: Vec<u8> = written[..whole]
        .iter()
        .flat_map(|(_, b)| b.clone())
        .collect();
    assert_eq!(bytes.as_ref(), &expected[..]);
    let mut b = batch(2, "after");
    let info = log.append(&mut b, 4, NOW, AppendOrigin::Client).unwrap();
    assert_eq!(info.first_offset, expect_end);
    let back = log
        .read(expect_end, usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    assert_eq!(back.as_ref(), &b[..]);
    // Partitions found on disk get the manager's default config until the broker sets theirs.
    assert_eq!(log.config(), LogConfig::default());
    log.update_config(config.clone());
    m.shutdown().unwrap();
}

#[test]
fn cut_last_batch_at_every_byte() {
    let pristine = tempfile::tempdir().unwrap();
    let config = LogConfig::default();
    let written = crashed_log(pristine.path(), config.clone());
    let last_len = written.last().unwrap().1.len() as u64;
    for cut in 0..last_len {
        let work = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), work.path());
        let seg = segment_logs(&work.path().join("crash-0")).pop().unwrap();
        let size = std::fs::metadata(&seg).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
        f.set_len(size - last_len + cut).unwrap();
        drop(f);
        let m_config = LogConfig::default();
        check_recovered(work.path(), &written, written.len() - 1, &m_config);
    }
}

#[test]
fn flipped_byte_in_last_batch_is_cut() {
    let pristine = tempfile::tempdir().unwrap();
    let written = crashed_log(pristine.path(), LogConfig::default());
    let last_len = written.last().unwrap().1.len() as u64;
    // Bytes 0..8 (baseOffset) and 12..16 (partitionLeaderEpoch) are outside the CRC in
    // Kafka's format; every other byte is covered by length, magic or CRC checks.
    for at in (8..12).chain(16..last_len) {
        let work = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), work.path());
        let seg = segment_logs(&work.path().join("crash-0")).pop().unwrap();
        let mut data = std::fs::read(&seg).unwrap();
        let pos = data.len() - last_len as usize + at as usize;
        data[pos] ^= 0x5a;
        std::fs::write(&seg, &data).unwrap();
        check_recovered(
            work.path(),
            &written,
            written.len() - 1,
            &LogConfig::default(),
        );
    }
}

#[test]
fn damage_in_middle_segment_drops_everything_after() {
    let pristine = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1024,
        ..LogConfig::default()
    };
    let written = crashed_log(pristine.path(), config.clone());
    let segs = segment_logs(&pristine.path().join("crash-0"));
    assert!(segs.len() >= 3);
    // Remove the recovery checkpoint so everything is validated, then corrupt segment 1.
    std::fs::remove_file(pristine.path().join("recovery-point-offset-checkpoint")).unwrap();
    let mut data = std::fs::read(&segs[1]).unwrap();
    let first = parse_batches(&data[..]).map(|_| ()).ok();
    assert!(first.is_some());
    let h = shale_log::BatchHeader::decode(&data).unwrap();
    let second_pos = h.total_len();
    data[second_pos + 30] ^= 1;
    std::fs::write(&segs[1], &data).unwrap();
    let base1: i64 = segs[1]
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let whole = written.iter().position(|(o, _)| *o == base1).unwrap() + 1;
    check_recovered(pristine.path(), &written, whole, &config);
}

#[test]
fn missing_and_corrupt_indexes_are_rebuilt_and_open_is_lazy() {
    let d = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 64,
        ..LogConfig::default()
    };
    let mut all = Vec::new();
    {
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get_or_create(&tp(), config.clone()).unwrap();
        for i in 0..150 {
            let mut b = batch(2, &format!("i{i}"));
            log.append(&mut b, 1, NOW, AppendOrigin::Client).unwrap();
            all.extend_from_slice(&b);
        }
        m.shutdown().unwrap();
    }
    let pdir = d.path().join("crash-0");
    let segs = segment_logs(&pdir);
    assert!(segs.len() >= 4);
    std::fs::remove_file(segs[0].with_extension("index")).unwrap();
    std::fs::write(segs[1].with_extension("index"), [0xffu8; 16]).unwrap();
    std::fs::write(segs[2].with_extension("timeindex"), [1u8; 7]).unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m.get(&tp()).unwrap();
    assert_eq!(
        log.loaded_index_count(),
        1,
        "only the active segment is opened"
    );
    let bytes = log
        .read(0, usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    assert_eq!(bytes.as_ref(), &all[..]);
    for off in (0..300).step_by(7) {
        let r = log
            .read(off, 1, i64::MAX, true)
            .unwrap()
            .to_bytes()
            .unwrap();
        let h = parse_batches(&r).unwrap()[0];
        assert!(h.base_offset <= off && off <= h.last_offset());
    }
    assert!(
        std::fs::metadata(segs[0].with_extension("index"))
            .unwrap()
            .len()
            > 0
    );
}

#[test]
fn clean_shutdown_marker_lifecycle() {
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join(".kafka_cleanshutdown");
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m.get_or_create(&tp(), LogConfig::default()).unwrap();
    log.append(&mut batch(1, "x"), 0, NOW, AppendOrigin::Client)
        .unwrap();
    m.shutdown().unwrap();
    assert!(marker.exists());
    drop(log);
    drop(m);
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    assert!(!marker.exists(), "marker is consumed on open");
    assert_eq!(m.get(&tp()).unwrap().log_end_offset(), 1);
}

#[test]
fn unclean_restart_recovers_only_from_the_recovery_point() {
    let d = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1024,
        ..LogConfig::default()
    };
    let expected_end;
    {
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get_or_create(&tp(), config.clone()).unwrap();
        for i in 0..100 {
            log.append(
                &mut batch(2, &format!("r{i}")),
                0,
                NOW,
                AppendOrigin::Client,
            )
            .unwrap();
        }
        log.flush().unwrap();
        assert_eq!(log.recovery_point(), log.log_end_offset());
        m.write_checkpoints().unwrap();
        log.append(&mut batch(2, "tail"), 0, NOW, AppendOrigin::Client)
            .unwrap();
        expected_end = log.log_end_offset();
        assert!(log.segment_count() > 5);
    }
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m.get(&tp()).unwrap();
    assert_eq!(log.log_end_offset(), expected_end);
    assert!(
        log.loaded_index_count() <= 2,
        "validated {} segments",
        log.loaded_index_count()
    );
    assert_eq!(log.recovery_point(), expected_end);
}

#[test]
fn flush_messages_and_flush_ms_advance_the_recovery_point() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let by_count = m
        .get_or_create(
            &TopicPartition::new("fm", 0),
            LogConfig {
                flush_messages: 3,
                ..LogConfig::default()
            },
        )
        .unwrap();
    by_count
        .append(&mut batch(2, "a"), 0, NOW, AppendOrigin::Client)
        .unwrap();
    assert_eq!(by_count.recovery_point(), 0);
    by_count
        .append(&mut batch(2, "b"), 0, NOW, AppendOrigin::Client)
        .unwrap();
    assert_eq!(by_count.recovery_point(), 4);

    let by_time = m
        .get_or_create(
            &TopicPartition::new("fm", 1),
            LogConfig {
                flush_ms: 1000,
                ..LogConfig::default()
            },
        )
        .unwrap();
    by_time
        .append(&mut batch(1, "c"), 0, NOW, AppendOrigin::Client)
        .unwrap();
    assert_eq!(by_time.recovery_point(), 0);
    // The log was opened at wall-clock time; a `now` far ahead makes the flush due.
    m.flush_due(i64::MAX / 2);
    assert_eq!(by_time.recovery_point(), 1);
    let cp = std::fs::read_to_string(d.path().join("recovery-point-offset-checkpoint")).unwrap();
    assert!(cp.contains("fm 1 1"), "{cp}");
}
