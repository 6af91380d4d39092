//! Snapshot files: round trip, offset selection, corruption, deletion helpers.

use std::fs;

use super::tests::{batch, txn_batch, TestLog, EXPIRATION_MS};
use super::*;
use crate::error::ProducerStateError;

fn populated_log() -> TestLog {
    let mut log = TestLog::new();
    for seq in 0..7 {
        log.append_ok(batch(1, 0, seq, 1));
    }
    log.append_ok(batch(2, 3, 40, 2));
    log.append_ok(txn_batch(3, 0, 0, 2));
    log.append_ok(txn_batch(4, 1, 0, 1));
    log.marker(4, 1, false).unwrap();
    log.append_ok(txn_batch(5, 0, 0, 1));
    log
}

#[test]
fn snapshot_round_trip_preserves_everything() {
    let dir = tempfile::tempdir().unwrap();
    let log = populated_log();
    let offset = log.state.map_end_offset();
    let path = log.state.write_snapshot(dir.path(), offset).unwrap();
    assert_eq!(path.file_name().unwrap(), "00000000000000000014.snapshot");
    assert_eq!(list_snapshot_offsets(dir.path()).unwrap(), vec![14]);

    let (loaded, loaded_offset) =
        ProducerStateManager::load_latest_snapshot(dir.path(), i64::MAX, EXPIRATION_MS, log.now_ms)
            .unwrap();
    assert_eq!(loaded_offset, offset);
    assert_eq!(loaded, log.state);
    assert_eq!(loaded.first_unstable_offset(), Some(9));
    // The retry window survives a restart.
    let retry = batch(1, 0, 3, 1);
    assert_eq!(
        loaded.check(&retry, log.now_ms).unwrap(),
        SequenceCheck::Duplicate {
            first_offset: 3,
            last_offset: 3,
            log_append_time_ms: log.now_ms
        }
    );
}

#[test]
fn load_picks_the_newest_snapshot_not_above_max_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 1));
    log.state.write_snapshot(dir.path(), 1).unwrap();
    log.append_ok(batch(1, 0, 1, 1));
    log.state.write_snapshot(dir.path(), 2).unwrap();
    log.append_ok(batch(1, 0, 2, 1));
    log.state.write_snapshot(dir.path(), 3).unwrap();

    let (state, offset) =
        ProducerStateManager::load_latest_snapshot(dir.path(), 2, EXPIRATION_MS, log.now_ms)
            .unwrap();
    assert_eq!(offset, 2);
    assert_eq!(state.producer(1).unwrap().last_sequence, 1);
    assert_eq!(state.map_end_offset(), 2);

    let (state, offset) =
        ProducerStateManager::load_latest_snapshot(dir.path(), 0, EXPIRATION_MS, log.now_ms)
            .unwrap();
    assert_eq!(offset, 0);
    assert!(state.is_empty());
}

#[test]
fn missing_directory_loads_empty_state() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let (state, offset) =
        ProducerStateManager::load_latest_snapshot(&missing, i64::MAX, EXPIRATION_MS, 0).unwrap();
    assert!(state.is_empty());
    assert_eq!(offset, 0);
}

#[test]
fn corrupt_snapshots_are_skipped_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 1));
    log.state.write_snapshot(dir.path(), 1).unwrap();
    log.append_ok(batch(1, 0, 1, 1));
    let newest = log.state.write_snapshot(dir.path(), 2).unwrap();

    // Flip one byte in the body of the newest snapshot.
    let mut bytes = fs::read(&newest).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    fs::write(&newest, &bytes).unwrap();

    let (state, offset) =
        ProducerStateManager::load_latest_snapshot(dir.path(), i64::MAX, EXPIRATION_MS, log.now_ms)
            .unwrap();
    assert_eq!(offset, 1);
    assert_eq!(state.producer(1).unwrap().last_sequence, 0);
    assert_eq!(list_snapshot_offsets(dir.path()).unwrap(), vec![1]);
}

#[test]
fn every_truncation_and_bit_flip_is_detected_without_panic() {
    let dir = tempfile::tempdir().unwrap();
    let log = populated_log();
    let path = log.state.write_snapshot(dir.path(), 14).unwrap();
    let bytes = fs::read(&path).unwrap();
    for len in 0..bytes.len() {
        fs::write(&path, &bytes[..len]).unwrap();
        let error = ProducerStateManager::read_snapshot(&path, EXPIRATION_MS).unwrap_err();
        assert!(
            matches!(error, ProducerStateError::CorruptSnapshot { .. }),
            "len {len}"
        );
    }
    for at in 0..bytes.len() {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x01;
        fs::write(&path, &flipped).unwrap();
        let error = ProducerStateManager::read_snapshot(&path, EXPIRATION_MS).unwrap_err();
        assert!(
            matches!(error, ProducerStateError::CorruptSnapshot { .. }),
            "byte {at}"
        );
    }
}

#[test]
fn huge_counts_with_a_valid_checksum_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(snapshot_file_name(0));
    let mut body = Vec::new();
    body.extend_from_slice(&0i64.to_be_bytes());
    body.extend_from_slice(&u32::MAX.to_be_bytes());
    let mut bytes = b"SHPS".to_vec();
    bytes.extend_from_slice(&1u16.to_be_bytes());
    bytes.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    bytes.extend_from_slice(&body);
    fs::write(&path, &bytes).unwrap();
    let error = ProducerStateManager::read_snapshot(&path, EXPIRATION_MS).unwrap_err();
    assert!(matches!(error, ProducerStateError::CorruptSnapshot { .. }));
}

#[test]
fn all_snapshots_corrupt_gives_empty_state() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(snapshot_path(dir.path(), 5), b"garbage").unwrap();
    fs::write(snapshot_path(dir.path(), 9), b"").unwrap();
    let (state, offset) =
        ProducerStateManager::load_latest_snapshot(dir.path(), i64::MAX, EXPIRATION_MS, 0).unwrap();
    assert!(state.is_empty());
    assert_eq!(offset, 0);
    assert!(list_snapshot_offsets(dir.path()).unwrap().is_empty());
}

#[test]
fn a_snapshot_whose_content_names_another_offset_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 1));
    let written = log.state.write_snapshot(dir.path(), 1).unwrap();
    fs::rename(&written, snapshot_path(dir.path(), 7)).unwrap();
    let (state, offset) =
        ProducerStateManager::load_latest_snapshot(dir.path(), i64::MAX, EXPIRATION_MS, 0).unwrap();
    assert!(state.is_empty());
    assert_eq!(offset, 0);
}

#[test]
fn expired_producers_are_dropped_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = TestLog::new();
    log.append_ok(batch(1, 0, 0, 1));
    log.append_ok(txn_batch(2, 0, 0, 1));
    log.state.write_snapshot(dir.path(), 2).unwrap();
    let later = log.now_ms + EXPIRATION_MS;
    let (state, _) =
        ProducerStateManager::load_latest_snapshot(dir.path(), i64::MAX, EXPIRATION_MS, later)
            .unwrap();
    assert!(state.producer(1).is_none());
    assert!(
        state.producer(2).is_some(),
        "open transactions never expire"
    );
}

#[test]
fn file_helpers_delete_the_right_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let state = ProducerStateManager::new(EXPIRATION_MS);
    for offset in [10, 20, 30, 40, 50] {
        state.write_snapshot(dir.path(), offset).unwrap();
    }
    fs::write(dir.path().join("00000000000000000060.snapshot.tmp"), b"x").unwrap();
    fs::write(dir.path().join("00000000000000000000.log"), b"x").unwrap();
    fs::write(dir.path().join("12.snapshot"), b"x").unwrap();
    assert_eq!(
        list_snapshot_offsets(dir.path()).unwrap(),
        vec![10, 20, 30, 40, 50]
    );
    assert_eq!(delete_snapshots_after(dir.path(), 40).unwrap(), 1);
    assert_eq!(delete_snapshots_before(dir.path(), 20).unwrap(), 1);
    assert_eq!(list_snapshot_offsets(dir.path()).unwrap(), vec![20, 30, 40]);
    assert_eq!(retain_newest_snapshots(dir.path(), 2).unwrap(), 1);
    assert_eq!(list_snapshot_offsets(dir.path()).unwrap(), vec![30, 40]);
    assert_eq!(retain_newest_snapshots(dir.path(), 0).unwrap(), 2);
    assert!(list_snapshot_offsets(dir.path()).unwrap().is_empty());
    assert_eq!(remove_temp_snapshot_files(dir.path()).unwrap(), 1);
    assert!(dir.path().join("00000000000000000000.log").exists());
    assert!(dir.path().join("12.snapshot").exists());
}

#[test]
fn truncate_and_reload_rebuilds_from_snapshot_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = TestLog::new();
    for seq in 0..4 {
        log.append_ok(batch(1, 0, seq, 1));
    }
    log.state.write_snapshot(dir.path(), 4).unwrap();
    let at_six = {
        log.append_ok(batch(1, 0, 4, 1));
        log.append_ok(batch(1, 0, 5, 1));
        log.state.clone()
    };
    log.append_ok(batch(1, 0, 6, 1));
    log.state.write_snapshot(dir.path(), 7).unwrap();
    log.append_ok(batch(1, 0, 7, 1));

    // A follower truncates its log to offset 6.
    let mut state = log.state.clone();
    let replay_from = state
        .truncate_and_reload(dir.path(), 0, 6, log.now_ms)
        .unwrap();
    assert_eq!(replay_from, 4);
    assert_eq!(list_snapshot_offsets(dir.path()).unwrap(), vec![4]);
    for appended in log
        .appended
        .iter()
        .filter(|b| (replay_from..6).contains(&b.first_offset))
    {
        state.replay(appended);
    }
    assert_eq!(state.producer(1), at_six.producer(1));
    assert_eq!(state.map_end_offset(), 6);
    // The broker can now accept sequence 6 again.
    assert_eq!(
        state.check(&batch(1, 0, 6, 1), log.now_ms).unwrap(),
        SequenceCheck::Append
    );
}
