//! Readers run while a writer appends, rolls and retention deletes old segments; every
//! read returns whole valid batches in offset order.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;
use shale_log::{
    batch::check_batch, AppendOrigin, LogConfig, LogError, LogManager, TopicPartition,
};

#[test]
fn readers_see_whole_batches_while_writer_rolls_and_retention_runs() {
    let d = tempfile::tempdir().unwrap();
    let m = Arc::new(LogManager::open(vec![d.path().to_path_buf()], 1).unwrap());
    let config = LogConfig {
        retention_bytes: 16 * 1024,
        file_delete_delay_ms: 0,
        ..small_config()
    };
    let log = m
        .get_or_create(&TopicPartition::new("cc", 0), config)
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for r in 0..2 {
        let log = log.clone();
        let stop = stop.clone();
        readers.push(std::thread::spawn(move || {
            let mut reads = 0u64;
            while !stop.load(Ordering::Acquire) {
                let start = log.log_start_offset() + r;
                let info = match log.read(start, 8192, i64::MAX, true) {
                    Ok(i) => i,
                    // Retention may move the start between the two calls.
                    Err(LogError::OffsetOutOfRange { .. }) => continue,
                    Err(e) => panic!("{e}"),
                };
                let bytes = info.to_bytes().unwrap();
                let mut pos = 0;
                let mut next: Option<i64> = None;
                while pos < bytes.len() {
                    let h = shale_log::BatchHeader::decode(&bytes[pos..]).unwrap();
                    check_batch(&bytes[pos..pos + h.total_len()]).unwrap();
                    if let Some(n) = next {
                        assert_eq!(h.base_offset, n, "read from {start}");
                    }
                    next = Some(h.last_offset() + 1);
                    pos += h.total_len();
                }
                reads += 1;
            }
            reads
        }));
    }
    for i in 0..3000 {
        let mut b = batch(1 + i % 5, "c");
        log.append(&mut b, 0, NOW, AppendOrigin::Client).unwrap();
        if i % 100 == 0 {
            commit_all(&m);
            m.run_retention_once(NOW).unwrap();
        }
    }
    stop.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert!(log.log_start_offset() > 0);
}
