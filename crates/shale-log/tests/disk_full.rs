//! A full disk (ENOSPC): typed storage error, the partition refuses writes, the log stays
//! intact and readable, and a restart continues at the right offset.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use shale_log::{AppendOrigin, LogConfig, LogError, LogManager, TopicPartition};

fn tp() -> TopicPartition {
    TopicPartition::new("full", 0)
}

/// Appends until the disk fails; returns the bytes of every acknowledged batch and the error.
fn fill_until_error(m: &LogManager, config: LogConfig) -> (Vec<u8>, LogError) {
    let log = m.get_or_create(&tp(), config).unwrap();
    let mut acked = Vec::new();
    for i in 0..100_000 {
        let mut b = sized_batch(1000 + (i % 7) * 100);
        match log.append(&mut b, 0, NOW, AppendOrigin::Client) {
            Ok(_) => acked.extend_from_slice(&b),
            Err(e) => return (acked, e),
        }
    }
    panic!("the disk never filled");
}

fn check_after_failure(m: &LogManager, acked: &[u8]) {
    let log = m.get(&tp()).unwrap();
    assert!(log.is_offline());
    let mut b = batch(1, "refused");
    assert!(matches!(
        log.append(&mut b, 0, NOW, AppendOrigin::Client),
        Err(LogError::LogOffline(_))
    ));
    let bytes = log
        .read(0, usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    assert_eq!(bytes.as_ref(), acked);
}

fn check_reopened(dir: &Path, acked: &[u8]) {
    let m = LogManager::open(vec![dir.to_path_buf()], 1).unwrap();
    let log = m.get(&tp()).unwrap();
    let bytes = log
        .read(0, usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    assert_eq!(bytes.as_ref(), acked);
    let end = log.log_end_offset();
    assert_eq!(end, shale_log::parse_batches(acked).unwrap().len() as i64);
}

#[test]
fn injected_enospc_refuses_writes_and_keeps_log() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    m.fault_injector().fail_writes_after(50_000, libc::ENOSPC);
    let (acked, err) = fill_until_error(&m, small_config());
    match &err {
        LogError::Storage(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOSPC)),
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.is_storage());
    assert!(!acked.is_empty());
    check_after_failure(&m, &acked);
    m.fault_injector().clear();
    drop(m);
    check_reopened(d.path(), &acked);
}

/// Mounts a tiny tmpfs when permitted (root in a sandbox that allows it).
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let d = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(d.path())
            .output()
            .ok()?
            .status
            .success();
        ok.then_some(Tmpfs(d))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn real_full_tmpfs_when_mountable() {
    let Some(fs) = Tmpfs::mount("512k") else {
        eprintln!("tmpfs cannot be mounted here; the injected-fault test covers ENOSPC");
        return;
    };
    let dir = fs.0.path().join("logs");
    // Ballast the operator deletes to make room before the restart.
    let ballast = fs.0.path().join("ballast");
    std::fs::write(&ballast, vec![1u8; 128 * 1024]).unwrap();
    let acked = {
        let m = LogManager::open(vec![dir.clone()], 1).unwrap();
        let config = LogConfig {
            segment_bytes: 64 * 1024,
            segment_index_bytes: 16 * 1024,
            ..small_config()
        };
        let (acked, err) = fill_until_error(&m, config);
        assert!(err.is_storage(), "{err:?}");
        check_after_failure(&m, &acked);
        acked
    };
    std::fs::remove_file(&ballast).unwrap();
    check_reopened(&dir, &acked);
}

#[test]
fn failed_append_leaves_leader_epochs_unchanged() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m.get_or_create(&tp(), LogConfig::default()).unwrap();
    log.append(&mut batch(2, "a"), 1, NOW, AppendOrigin::Client)
        .unwrap();
    m.fault_injector().fail_writes_after(0, libc::ENOSPC);
    let err = log
        .append(&mut batch(2, "b"), 5, NOW, AppendOrigin::Client)
        .unwrap_err();
    assert!(err.is_storage());
    assert_eq!(log.epoch_entries(), vec![(1, 0)]);
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(log.end_offset_for_epoch(1), Some((1, 2)));
}
