#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use shale_log::records::BatchBuilder;
use shale_log::{
    batch, parse_batches, AppendOrigin, Compression, Log, LogConfig, LogError, LogManager,
    TimestampType, TopicPartition,
};

fn open(dir: &std::path::Path, config: LogConfig) -> Log {
    Log::open(&dir.join("t-0"), TopicPartition::new("t", 0), config).unwrap()
}

#[test]
fn append_assigns_offsets_and_reads_back_bytes() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), LogConfig::default());
    let mut a = batch(3, "a");
    let info = log.append(&mut a, 5, NOW, AppendOrigin::Client).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (0, 2));
    assert_eq!(info.log_append_time_ms, -1);
    let mut b = [batch(2, "b"), batch(4, "c")].concat();
    let info = log.append(&mut b, 5, NOW, AppendOrigin::Client).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (3, 8));
    assert_eq!(info.batches.len(), 2);
    assert_eq!(info.batches[1].base_offset, 5);
    assert_eq!(log.log_end_offset(), 9);

    let r = log.read(0, 1 << 20, i64::MAX, false).unwrap();
    let bytes = r.to_bytes().unwrap();
    assert_eq!(bytes.len(), a.len() + b.len());
    assert_eq!(&bytes[..a.len()], &a[..]);
    assert_eq!(&bytes[a.len()..], &b[..]);
    let hs = parse_batches(&bytes).unwrap();
    assert_eq!(
        hs.iter()
            .map(|h| h.partition_leader_epoch)
            .collect::<Vec<_>>(),
        vec![5, 5, 5]
    );

    // Reading from the middle of a batch returns that whole batch.
    let r = log.read(4, 1 << 20, i64::MAX, false).unwrap();
    assert_eq!(offsets(&r.to_bytes().unwrap()), vec![3, 5]);
    let r = log.read(9, 1 << 20, i64::MAX, false).unwrap();
    assert_eq!(r.total_len(), 0);
}

#[test]
fn read_respects_bound_budget_and_min_one_batch() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), LogConfig::default());
    for i in 0..5 {
        let mut b = batch(2, &format!("x{i}"));
        log.append(&mut b, 0, NOW, AppendOrigin::Client).unwrap();
    }
    let one = batch(2, "x0").len();
    let r = log.read(0, 1 << 20, 6, false).unwrap();
    assert_eq!(offsets(&r.to_bytes().unwrap()), vec![0, 2, 4]);
    let r = log.read(0, one * 2 + 1, i64::MAX, false).unwrap();
    assert_eq!(offsets(&r.to_bytes().unwrap()), vec![0, 2]);
    let r = log.read(0, 10, i64::MAX, false).unwrap();
    assert_eq!(r.total_len(), 0);
    let r = log.read(0, 10, i64::MAX, true).unwrap();
    assert_eq!(offsets(&r.to_bytes().unwrap()), vec![0]);
    let r = log.read(6, 1 << 20, 6, true).unwrap();
    assert_eq!(r.total_len(), 0);
    match log.read(11, 100, i64::MAX, true) {
        Err(LogError::OffsetOutOfRange {
            requested: 11,
            log_start: 0,
            log_end: 10,
        }) => {}
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn rolls_segments_and_reads_across_them() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), small_config());
    let mut expected = Vec::new();
    for i in 0..100 {
        let mut b = batch(3, &format!("r{i}"));
        let info = log.append(&mut b, 1, NOW, AppendOrigin::Client).unwrap();
        assert_eq!(info.first_offset, i * 3);
        expected.extend_from_slice(&b);
    }
    assert!(
        log.segment_count() >= 3,
        "segments: {}",
        log.segment_count()
    );
    let r = log.read(0, usize::MAX, i64::MAX, false).unwrap();
    assert_eq!(r.to_bytes().unwrap().as_ref(), &expected[..]);
    for off in [0i64, 1, 50, 150, 299] {
        let r = log.read(off, 1, i64::MAX, true).unwrap();
        let hs = parse_batches(&r.to_bytes().unwrap()).unwrap();
        assert_eq!(hs.len(), 1);
        assert!(hs[0].base_offset <= off && off <= hs[0].last_offset());
    }
    // Rolled segments have trimmed indexes.
    let idx: Vec<_> = std::fs::read_dir(log.dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "index"))
        .collect();
    assert!(idx
        .iter()
        .any(|p| std::fs::metadata(p).unwrap().len() < 4096));
}

#[test]
fn refuses_bad_batches_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let log = open(
        d.path(),
        LogConfig {
            max_message_bytes: 2000,
            ..LogConfig::default()
        },
    );
    let good = batch(2, "g");
    let mut bad_crc = good.clone();
    let n = bad_crc.len();
    bad_crc[n - 1] ^= 0xff;
    let mut both = [good.clone(), bad_crc].concat();
    assert!(matches!(
        log.append(&mut both, 0, NOW, AppendOrigin::Client),
        Err(LogError::CorruptMessage(_))
    ));
    let mut magic = good.clone();
    magic[16] = 1;
    assert!(matches!(
        log.append(&mut magic, 0, NOW, AppendOrigin::Client),
        Err(LogError::UnsupportedMagic(1))
    ));
    let mut short = good[..good.len() - 3].to_vec();
    assert!(matches!(
        log.append(&mut short, 0, NOW, AppendOrigin::Client),
        Err(LogError::CorruptMessage(_))
    ));
    let mut big = sized_batch(3000);
    assert!(matches!(
        log.append(&mut big, 0, NOW, AppendOrigin::Client),
        Err(LogError::MessageTooLarge { .. })
    ));
    let mut future = batch_at(1, "f", NOW + 2 * 3_600_000);
    assert!(matches!(
        log.append(&mut future, 0, NOW, AppendOrigin::Client),
        Err(LogError::RecordsRejected(e)) if e.has_invalid_timestamp()
    ));
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(log.size_bytes(), 0);
}

#[test]
fn log_append_time_rewrites_timestamp_and_crc() {
    let d = tempfile::tempdir().unwrap();
    let log = open(
        d.path(),
        LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..LogConfig::default()
        },
    );
    let mut b = batch_at(2, "l", 5);
    let info = log.append(&mut b, 0, NOW, AppendOrigin::Client).unwrap();
    assert_eq!(info.log_append_time_ms, NOW);
    assert_eq!(info.max_timestamp_ms, NOW);
    let bytes = log
        .read(0, 1 << 20, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    let h = batch::check_batch(&bytes).unwrap();
    assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(h.max_timestamp, NOW);
}

#[test]
fn offsets_by_timestamp() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), small_config());
    for i in 0..50i64 {
        let mut b = batch_at(2, "t", NOW + i * 10);
        log.append(&mut b, 0, NOW + 1000, AppendOrigin::Client)
            .unwrap();
    }
    // Batch i has records at NOW+10i and NOW+10i+1 with offsets 2i, 2i+1.
    assert_eq!(log.offset_for_timestamp(NOW).unwrap(), Some((0, NOW)));
    assert_eq!(
        log.offset_for_timestamp(NOW + 101).unwrap(),
        Some((21, NOW + 101))
    );
    assert_eq!(
        log.offset_for_timestamp(NOW + 102).unwrap(),
        Some((22, NOW + 110))
    );
    assert_eq!(log.offset_for_timestamp(NOW + 10_000).unwrap(), None);
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((99, NOW + 491)));
}

#[test]
fn replication_keeps_offsets_and_checks_continuity() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), LogConfig::default());
    let mut b = batch(3, "r");
    batch::BatchHeader::decode(&b).unwrap();
    b[..8].copy_from_slice(&10i64.to_be_bytes());
    b[12..16].copy_from_slice(&7i32.to_be_bytes());
    let info = log
        .append(&mut b, 99, NOW, AppendOrigin::Replication)
        .unwrap();
    assert_eq!((info.first_offset, info.last_offset), (10, 12));
    assert_eq!(log.log_end_offset(), 13);
    assert_eq!(log.latest_epoch(), Some(7));
    let mut again = b.clone();
    assert!(matches!(
        log.append(&mut again, 7, NOW, AppendOrigin::Replication),
        Err(LogError::UnexpectedAppendOffset { .. })
    ));
}

#[test]
fn manager_places_reopens_and_deletes() {
    let d = tempfile::tempdir().unwrap();
    let dirs = vec![d.path().join("a"), d.path().join("b")];
    {
        let m = LogManager::open(dirs.clone(), 2).unwrap();
        for p in 0..4 {
            let log = m
                .get_or_create(&TopicPartition::new("topic", p), LogConfig::default())
                .unwrap();
            let mut b = batch(p as usize + 1, "m");
            log.append(&mut b, 0, NOW, AppendOrigin::Client).unwrap();
        }
        assert_eq!(
            std::fs::read_dir(&dirs[0])
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().is_dir())
                .count(),
            2
        );
        assert_eq!(
            std::fs::read_dir(&dirs[1])
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().is_dir())
                .count(),
            2
        );
        m.shutdown().unwrap();
    }
    let m = LogManager::open(dirs.clone(), 2).unwrap();
    assert_eq!(m.all().len(), 4);
    for p in 0..4 {
        let log = m.get(&TopicPartition::new("topic", p)).unwrap();
        assert_eq!(log.log_end_offset(), i64::from(p) + 1);
    }
    let tp = TopicPartition::new("topic", 2);
    let dir = m.get(&tp).unwrap().dir().to_path_buf();
    m.delete(&tp).unwrap();
    assert!(!dir.exists());
    assert!(m.get(&tp).is_none());
}

#[test]
fn compressed_batches_are_validated_record_by_record() {
    let d = tempfile::tempdir().unwrap();
    let log = open(d.path(), LogConfig::default());
    for c in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut ok = keyed(&[(Some("a"), Some("1")), (Some("b"), Some("2"))], c, NOW);
        log.append(&mut ok, 0, NOW, AppendOrigin::Client).unwrap();
        let mut late = BatchBuilder::new(NOW).compression(c);
        late.push(NOW, Some(b"k"), Some(b"v"));
        late.push(NOW + 2 * 3_600_000, Some(b"k"), Some(b"v"));
        let mut late = late.build().unwrap();
        // The header's max timestamp claims NOW; a record inside says otherwise.
        late[35..43].copy_from_slice(&NOW.to_be_bytes());
        batch::recompute_crc(&mut late);
        assert!(
            matches!(
                log.append(&mut late, 0, NOW, AppendOrigin::Client),
                Err(LogError::RecordsRejected(e)) if e.has_invalid_timestamp()
            ),
            "{c:?}"
        );
        // Garbage compressed payload with a valid CRC.
        let mut junk = keyed(&[(Some("a"), Some("1"))], c, NOW);
        let n = junk.len();
        for b in &mut junk[61..n] {
            *b = 0x55;
        }
        batch::recompute_crc(&mut junk);
        assert!(
            matches!(
                log.append(&mut junk, 0, NOW, AppendOrigin::Client),
                Err(LogError::CorruptMessage(_))
            ),
            "{c:?}"
        );
    }
    assert_eq!(log.log_end_offset(), 8);
}

#[test]
fn log_and_manager_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Log>();
    assert_send_sync::<LogManager>();
    assert_send_sync::<shale_log::FileSlice>();
}
