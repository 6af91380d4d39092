#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;

use common::*;
use shale_log::batch::check_batch;
use shale_log::records::{batch_body, decode_records, BatchBuilder};
use shale_log::{
    parse_batches, AppendOrigin, Compression, Log, LogConfig, LogManager, TopicPartition,
    TxnOutcome, TxnResolver,
};

/// Compacted, with tombstones kept only a second.
fn compact_config() -> LogConfig {
    LogConfig {
        delete_retention_ms: 1000,
        ..compacted_config()
    }
}

/// Every record in the log: (offset, key, value).
type Rec = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

fn records(log: &Log) -> Vec<Rec> {
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
                r.key.map(<[u8]>::to_vec),
                r.value.map(<[u8]>::to_vec),
            ));
        }
    }
    out
}

struct Resolver(HashMap<i64, TxnOutcome>);
impl TxnResolver for Resolver {
    fn outcome(&self, _: &TopicPartition, pid: i64, _: i64) -> TxnOutcome {
        self.0.get(&pid).copied().unwrap_or(TxnOutcome::Unknown)
    }
}

#[test]
fn keeps_latest_per_key_with_every_codec_and_preserves_offsets() {
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
        let mut expected: HashMap<String, (i64, String)> = HashMap::new();
        for round in 0..5 {
            let recs: Vec<(String, String)> = (0..8)
                .map(|k| {
                    (
                        format!("key{}", (k * 3 + round) % 10),
                        format!("v{round}-{k}"),
                    )
                })
                .collect();
            let refs: Vec<(Option<&str>, Option<&str>)> = recs
                .iter()
                .map(|(k, v)| (Some(k.as_str()), Some(v.as_str())))
                .collect();
            let mut b = keyed(&refs, codec, NOW);
            let info = log.append(&mut b, 0, NOW, AppendOrigin::Client).unwrap();
            for (i, (k, v)) in recs.iter().enumerate() {
                expected.insert(k.clone(), (info.first_offset + i as i64, v.clone()));
            }
        }
        let before = records(&log);
        log.roll(NOW).unwrap();
        commit_all(&m);
        let r = m.run_cleaner_once(NOW + 1).unwrap();
        assert_eq!(r.logs_cleaned, 1, "{codec:?}");
        assert!(r.records_removed > 0);
        let after = records(&log);
        let mut want: Vec<Rec> = expected
            .iter()
            .map(|(k, (o, v))| (*o, Some(k.as_bytes().to_vec()), Some(v.as_bytes().to_vec())))
            .collect();
        want.sort();
        assert_eq!(after, want, "{codec:?}");
        // Offsets are the originals: every survivor appears identically before cleaning.
        for rec in &after {
            assert!(before.contains(rec));
        }
        // Compressed batches stay compressed with the same codec.
        let bytes = log
            .read(0, usize::MAX, i64::MAX, false)
            .unwrap()
            .to_bytes()
            .unwrap();
        for h in parse_batches(&bytes).unwrap() {
            assert_eq!(h.compression(), Some(codec));
        }
        let end = log.log_end_offset();
        let mut b = batch(1, "more");
        assert_eq!(
            log.append(&mut b, 0, NOW, AppendOrigin::Client)
                .unwrap()
                .first_offset,
            end
        );
    }
}

#[test]
fn tombstones_get_a_horizon_then_go() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m
        .get_or_create(&TopicPartition::new("t", 0), compact_config())
        .unwrap();
    log.append(
        &mut keyed(
            &[(Some("a"), Some("1")), (Some("b"), Some("2"))],
            Compression::None,
            NOW,
        ),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap();
    log.append(
        &mut keyed(&[(Some("a"), None)], Compression::None, NOW),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap();
    log.roll(NOW).unwrap();
    commit_all(&m);
    m.run_cleaner_once(NOW).unwrap();
    let recs = records(&log);
    assert_eq!(
        recs,
        vec![
            (1, Some(b"b".to_vec()), Some(b"2".to_vec())),
            (2, Some(b"a".to_vec()), None)
        ]
    );
    let bytes = log.read(2, 1, i64::MAX, true).unwrap().to_bytes().unwrap();
    let h = parse_batches(&bytes).unwrap()[0];
    assert!(h.has_delete_horizon());
    assert_eq!(h.base_timestamp, NOW + 1000);
    // Record timestamps survive the new base.
    let body = batch_body(&bytes, 1 << 20).unwrap();
    let r = &decode_records(&body, h.record_count).unwrap()[0];
    assert_eq!(h.base_timestamp + r.timestamp_delta, NOW);

    log.append(
        &mut keyed(&[(Some("c"), Some("3"))], Compression::None, NOW),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap();
    log.roll(NOW).unwrap();
    commit_all(&m);
    m.run_cleaner_once(NOW + 500).unwrap();
    assert!(
        records(&log).iter().any(|r| r.0 == 2),
        "horizon not reached"
    );
    log.append(
        &mut keyed(&[(Some("d"), Some("4"))], Compression::None, NOW),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap();
    log.roll(NOW).unwrap();
    commit_all(&m);
    m.run_cleaner_once(NOW + 1000).unwrap();
    let keys: Vec<Option<Vec<u8>>> = records(&log).into_iter().map(|r| r.1).collect();
    assert_eq!(
        keys,
        vec![
            Some(b"b".to_vec()),
            Some(b"c".to_vec()),
            Some(b"d".to_vec())
        ]
    );
}

fn txn_batch(pid: i64, control: bool, kvs: &[(&str, &str)]) -> Vec<u8> {
    let mut b = BatchBuilder::new(NOW);
    b.producer_id = pid;
    b.producer_epoch = 0;
    b.base_sequence = 0;
    b.transactional = true;
    b.control = control;
    for (k, v) in kvs {
        b.push(NOW, Some(k.as_bytes()), Some(v.as_bytes()));
    }
    b.build().unwrap()
}

#[test]
fn control_batches_and_unknown_transactions_are_kept_aborted_removed() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let log = m
        .get_or_create(&TopicPartition::new("x", 0), compact_config())
        .unwrap();
    log.append(
        &mut keyed(&[(Some("k"), Some("old"))], Compression::None, NOW),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap(); // 0
    log.append(
        &mut txn_batch(7, false, &[("k", "aborted")]),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap(); // 1
    log.append(
        &mut txn_batch(7, true, &[("\0\0", "\0\0\0\0\0\0")]),
        0,
        NOW,
        AppendOrigin::Coordinator,
    )
    .unwrap(); // 2 marker
    log.append(
        &mut txn_batch(8, false, &[("k", "open")]),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap(); // 3
    log.append(
        &mut keyed(&[(Some("j"), Some("1"))], Compression::None, NOW),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap(); // 4
    log.append(
        &mut keyed(&[(Some("j"), Some("2"))], Compression::None, NOW),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap(); // 5
    log.roll(NOW).unwrap();
    m.set_txn_resolver(std::sync::Arc::new(Resolver(HashMap::from([(
        7,
        TxnOutcome::Aborted,
    )]))));
    commit_all(&m);
    m.run_cleaner_once(NOW).unwrap();
    let bytes = log
        .read(0, usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    let hs = parse_batches(&bytes).unwrap();
    let offs: Vec<i64> = hs.iter().map(|h| h.base_offset).collect();
    // 0 stays (the open txn's record does not supersede it), 1 goes (aborted), 2 is a
    // control batch, 3 is undecided, 4 is superseded by 5.
    assert_eq!(offs, vec![0, 2, 3, 5]);
    assert!(hs[1].is_control());
}

#[test]
fn oversized_decompression_keeps_batch_unchanged() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let config = LogConfig {
        decompressed_batch_bytes_max: 1000,
        ..compact_config()
    };
    // Appended under the default bound (which also limits validation), cleaned under 1000.
    let log = m
        .get_or_create(&TopicPartition::new("z", 0), compact_config())
        .unwrap();
    let big = "x".repeat(5000);
    log.append(
        &mut keyed(&[(Some("k"), Some(&big))], Compression::Zstd, NOW),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap();
    log.append(
        &mut keyed(&[(Some("k"), Some("small"))], Compression::None, NOW),
        0,
        NOW,
        AppendOrigin::Client,
    )
    .unwrap();
    log.roll(NOW).unwrap();
    log.update_config(config);
    commit_all(&m);
    m.run_cleaner_once(NOW).unwrap();
    let bytes = log
        .read(0, usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    assert_eq!(offsets(&bytes), vec![0, 1]);
}

#[test]
fn interrupted_swap_is_completed_on_open() {
    let d = tempfile::tempdir().unwrap();
    let before_copy = tempfile::tempdir().unwrap();
    let tp = TopicPartition::new("s", 0);
    let config = LogConfig {
        segment_bytes: 1 << 20,
        ..compact_config()
    };
    let cleaned;
    {
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get_or_create(&tp, config.clone()).unwrap();
        for i in 0..30 {
            let v = format!("v{i}");
            log.append(
                &mut keyed(
                    &[(Some(&format!("k{}", i % 3)), Some(&v))],
                    Compression::Lz4,
                    NOW,
                ),
                0,
                NOW,
                AppendOrigin::Client,
            )
            .unwrap();
            if i % 10 == 9 {
                log.roll(NOW).unwrap();
            }
        }
        m.shutdown().unwrap();
        // Snapshot before compaction.
        let pdir = d.path().join("s-0");
        std::fs::create_dir_all(before_copy.path().join("s-0")).unwrap();
        for e in std::fs::read_dir(&pdir).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), before_copy.path().join("s-0").join(e.file_name())).unwrap();
        }
        let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
        let log = m.get(&tp).unwrap();
        log.update_config(config.clone());
        commit_all(&m);
        m.run_cleaner_once(NOW).unwrap();
        cleaned = records(&log);
        assert_eq!(cleaned.len(), 3);
        assert_eq!(log.segment_count(), 2);
        // Crash state: the swap file exists beside all the old segments.
        std::fs::copy(
            pdir.join(format!("{:020}.log", 0)),
            before_copy
                .path()
                .join("s-0")
                .join(format!("{:020}.log.swap", 0)),
        )
        .unwrap();
    }
    let m = LogManager::open(vec![before_copy.path().to_path_buf()], 1).unwrap();
    let log = m.get(&tp).unwrap();
    assert_eq!(records(&log), cleaned);
    assert_eq!(log.log_end_offset(), 30);
}

#[test]
fn keyless_records_are_refused_on_compacted_topics() {
    let d = tempfile::tempdir().unwrap();
    let log = Log::open(
        &d.path().join("k-0"),
        TopicPartition::new("k", 0),
        compact_config(),
    )
    .unwrap();
    let mut b = keyed(&[(None, Some("v"))], Compression::None, NOW);
    assert!(matches!(
        log.append(&mut b, 0, NOW, AppendOrigin::Client),
        Err(shale_log::LogError::RecordsRejected(e)) if !e.has_invalid_timestamp()
    ));
    assert_eq!(log.log_end_offset(), 0);
}

#[test]
fn small_key_map_budget_cleans_over_several_passes() {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let config = LogConfig {
        cleaner_dedupe_bytes_max: 200,
        segment_bytes: 2048,
        ..compact_config()
    };
    let log = m
        .get_or_create(&TopicPartition::new("p", 0), config)
        .unwrap();
    let mut latest: HashMap<String, i64> = HashMap::new();
    for i in 0..200 {
        let k = format!("key{}", i % 17);
        let info = log
            .append(
                &mut keyed(
                    &[(Some(&k), Some(&format!("v{i}")))],
                    Compression::None,
                    NOW,
                ),
                0,
                NOW,
                AppendOrigin::Client,
            )
            .unwrap();
        latest.insert(k, info.first_offset);
    }
    log.roll(NOW).unwrap();
    let mut passes = 0;
    loop {
        commit_all(&m);
        let r = m.run_cleaner_once(NOW).unwrap();
        passes += 1;
        if r.logs_cleaned == 0 || passes > 50 {
            break;
        }
    }
    assert!(passes > 2, "one pass was enough: {passes}");
    let mut got: Vec<i64> = records(&log).iter().map(|r| r.0).collect();
    got.sort();
    let mut want: Vec<i64> = latest.values().copied().collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn codecs_round_trip_and_bound_decompression() {
    use shale_log::compression::{compress, decompress};
    let data: Vec<u8> = (0..100_000u32)
        .flat_map(|i| (i % 251).to_be_bytes())
        .collect();
    for c in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let packed = compress(c, &data).unwrap();
        assert_eq!(
            decompress(c, &packed, data.len() as u64).unwrap(),
            data,
            "{c:?}"
        );
        assert!(
            decompress(c, &packed, data.len() as u64 - 1).is_err(),
            "{c:?} not bounded"
        );
    }
    // Raw (unframed) snappy as some clients send it.
    let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
    assert_eq!(
        decompress(Compression::Snappy, &raw, 1 << 30).unwrap(),
        data
    );
    // Two concatenated gzip members.
    let mut two = compress(Compression::Gzip, b"hello ").unwrap();
    two.extend(compress(Compression::Gzip, b"world").unwrap());
    assert_eq!(
        decompress(Compression::Gzip, &two, 100).unwrap(),
        b"hello world"
    );
}
