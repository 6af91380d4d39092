//! Random keyed appends, rolls and cleaner passes: the latest record of every key survives
//! at its offset, every surviving record is an original one, offsets stay increasing.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, HashMap};

use common::*;
use proptest::prelude::*;
use shale_log::records::{batch_body, decode_records, BatchBuilder};
use shale_log::{
    parse_batches, AppendOrigin, CleanupPolicy, Compression, LogConfig, LogManager, TopicPartition,
};

#[derive(Debug, Clone)]
enum Op {
    Append { codec: u8, keys: Vec<(u8, bool)> },
    Roll,
    Clean { advance_ms: i64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..5, proptest::collection::vec((0u8..12, any::<bool>()), 1..6))
            .prop_map(|(codec, keys)| Op::Append { codec, keys }),
        2 => Just(Op::Roll),
        2 => (0i64..2000).prop_map(|advance_ms| Op::Clean { advance_ms }),
    ]
}

type Found = BTreeMap<i64, (Option<Vec<u8>>, Option<Vec<u8>>)>;

fn all_records(log: &shale_log::Log) -> Found {
    let bytes = log
        .read(log.log_start_offset(), usize::MAX, i64::MAX, false)
        .unwrap()
        .to_bytes()
        .unwrap();
    let mut out = BTreeMap::new();
    if bytes.is_empty() {
        return out;
    }
    let mut pos = 0;
    let mut last = -1;
    for h in parse_batches(&bytes).unwrap() {
        assert!(h.base_offset > last);
        last = h.last_offset();
        let b = &bytes[pos..pos + h.total_len()];
        pos += h.total_len();
        for r in decode_records(&batch_body(b, 1 << 30).unwrap(), h.record_count).unwrap() {
            out.insert(
                h.base_offset + i64::from(r.offset_delta),
                (r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec)),
            );
        }
    }
    out
}

fn run(ops: Vec<Op>) {
    let d = tempfile::tempdir().unwrap();
    let m = LogManager::open(vec![d.path().to_path_buf()], 1).unwrap();
    let config = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        min_cleanable_dirty_ratio: 0.0,
        delete_retention_ms: 1000,
        file_delete_delay_ms: 0,
        segment_bytes: 600,
        ..LogConfig::default()
    };
    let log = m
        .get_or_create(&TopicPartition::new("cp", 0), config)
        .unwrap();
    let mut written: Found = BTreeMap::new();
    let mut latest: HashMap<Vec<u8>, i64> = HashMap::new();
    let mut now = NOW;
    let codecs = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
    for op in ops {
        match op {
            Op::Append { codec, keys } => {
                let mut b = BatchBuilder::new(now).compression(codecs[usize::from(codec)]);
                let mut recs = Vec::new();
                for (k, tomb) in &keys {
                    let key = format!("k{k}").into_bytes();
                    let value = (!tomb).then(|| format!("v{now}-{k}").into_bytes());
                    b.push(now, Some(&key), value.as_deref());
                    recs.push((key, value));
                }
                let mut bytes = b.build().unwrap();
                let info = log
                    .append(&mut bytes, 0, now, AppendOrigin::Client)
                    .unwrap();
                for (i, (k, v)) in recs.into_iter().enumerate() {
                    let off = info.first_offset + i as i64;
                    latest.insert(k.clone(), off);
                    written.insert(off, (Some(k), v));
                }
            }
            Op::Roll => log.roll(now).unwrap(),
            Op::Clean { advance_ms } => {
                now += advance_ms;
                commit_all(&m);
                m.run_cleaner_once(now).unwrap();
            }
        }
        let found = all_records(&log);
        for (off, rec) in &found {
            assert_eq!(
                written.get(off),
                Some(rec),
                "record at {off} is not an original"
            );
        }
        for (k, off) in &latest {
            let is_tombstone = written[off].1.is_none();
            if !is_tombstone {
                assert!(found.contains_key(off), "latest of {k:?} at {off} lost");
            }
        }
        assert_eq!(
            log.log_end_offset(),
            written.keys().next_back().map_or(0, |o| o + 1)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("SHALE_LOG_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(32),
        ..ProptestConfig::default()
    })]
    #[test]
    fn compaction_keeps_latest_and_originals(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops);
    }
}
