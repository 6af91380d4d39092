//! Random operation sequences against an in-memory model of the log.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use proptest::prelude::*;
use shale_log::{
    parse_batches, AppendOrigin, Log, LogConfig, LogError, LogManager, TopicPartition,
};
use std::sync::Arc;

#[derive(Debug, Clone)]
enum Op {
    Append {
        batches: Vec<usize>,
        value_len: usize,
    },
    Replicate {
        gap: i64,
        records: usize,
    },
    Read {
        at: u8,
        max_bytes: usize,
        bound_back: u8,
        min_one: bool,
    },
    Roll,
    TruncateToBatch {
        from_end: u8,
    },
    DeleteRecords {
        at: u8,
    },
    Retention {
        bytes: Option<i64>,
    },
    Reopen {
        clean: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::collection::vec(1usize..5, 1..4), 0usize..200)
            .prop_map(|(batches, value_len)| Op::Append { batches, value_len }),
        1 => (0i64..4, 1usize..4).prop_map(|(gap, records)| Op::Replicate { gap, records }),
        3 => (any::<u8>(), 1usize..3000, 0u8..4, any::<bool>())
            .prop_map(|(at, max_bytes, bound_back, min_one)| Op::Read { at, max_bytes, bound_back, min_one }),
        1 => Just(Op::Roll),
        1 => (0u8..6).prop_map(|from_end| Op::TruncateToBatch { from_end }),
        1 => any::<u8>().prop_map(|at| Op::DeleteRecords { at }),
        1 => proptest::option::of(0i64..4000).prop_map(|bytes| Op::Retention { bytes }),
        1 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
    ]
}

#[derive(Default)]
struct Model {
    batches: Vec<(i64, i64, Vec<u8>)>, // base, last, bytes as stored
    start: i64,
    end: i64,
}

impl Model {
    fn pick(&self, at: u8) -> i64 {
        let span = (self.end - self.start + 1).max(1);
        self.start + i64::from(at) % span
    }

    fn read(&self, off: i64, max: usize, bound: i64, min_one: bool) -> Result<Vec<u8>, ()> {
        if off < self.start || off > self.end {
            return Err(());
        }
        let bound = bound.min(self.end);
        let mut out = Vec::new();
        for (_, last, b) in self.batches.iter().filter(|(_, l, _)| *l >= off) {
            if *last >= bound {
                break;
            }
            if out.len() + b.len() > max {
                if out.is_empty() && min_one {
                    out.extend_from_slice(b);
                }
                break;
            }
            out.extend_from_slice(b);
        }
        Ok(out)
    }
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 100,
        segment_index_bytes: 128,
        file_delete_delay_ms: 0,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

fn tp() -> TopicPartition {
    TopicPartition::new("model", 0)
}

fn run(ops: Vec<Op>) {
    let d = tempfile::tempdir().unwrap();
    let dirs = vec![d.path().to_path_buf()];
    let mut mgr = LogManager::open(dirs.clone(), 1).unwrap();
    let mut log: Arc<Log> = mgr.get_or_create(&tp(), config()).unwrap();
    let mut m = Model::default();
    for op in ops {
        match op {
            Op::Append { batches, value_len } => {
                let mut bytes = Vec::new();
                for n in &batches {
                    let mut b = shale_log::records::BatchBuilder::new(NOW);
                    for _ in 0..*n {
                        b.push(NOW, Some(b"k"), Some(&vec![7u8; value_len]));
                    }
                    bytes.extend(b.build().unwrap());
                }
                let info = log
                    .append(&mut bytes, 2, NOW, AppendOrigin::Client)
                    .unwrap();
                assert_eq!(info.first_offset, m.end);
                let mut pos = 0;
                for h in parse_batches(&bytes).unwrap() {
                    m.batches.push((
                        h.base_offset,
                        h.last_offset(),
                        bytes[pos..pos + h.total_len()].to_vec(),
                    ));
                    pos += h.total_len();
                }
                m.end = info.last_offset + 1;
            }
            Op::Replicate { gap, records } => {
                let mut b = batch(records, "r");
                let base = m.end + gap;
                b[..8].copy_from_slice(&base.to_be_bytes());
                b[12..16].copy_from_slice(&3i32.to_be_bytes());
                let info = log
                    .append(&mut b, 3, NOW, AppendOrigin::Replication)
                    .unwrap();
                assert_eq!(info.first_offset, base);
                m.end = info.last_offset + 1;
                m.batches.push((base, m.end - 1, b));
            }
            Op::Read {
                at,
                max_bytes,
                bound_back,
                min_one,
            } => {
                let off = m.pick(at);
                let bound = m.end - i64::from(bound_back);
                let got = log.read(off, max_bytes, bound, min_one);
                match m.read(off, max_bytes, bound, min_one) {
                    Ok(want) => assert_eq!(
                        got.unwrap().to_bytes().unwrap().to_vec(),
                        want,
                        "read at {off}"
                    ),
                    Err(()) => assert!(matches!(got, Err(LogError::OffsetOutOfRange { .. }))),
                }
            }
            Op::Roll => log.roll(NOW).unwrap(),
            Op::TruncateToBatch { from_end } => {
                // Targets are batch ends (where a follower truncates), or the log start.
                let keep = m.batches.len().saturating_sub(usize::from(from_end));
                let target = if keep == 0 {
                    m.start
                } else {
                    m.batches[keep - 1].1 + 1
                };
                log.truncate_to(target).unwrap();
                if target < m.end {
                    m.batches.truncate(keep);
                    m.end = target;
                    if keep == 0 {
                        m.start = target;
                    }
                }
                assert_eq!(log.log_end_offset(), m.end);
                assert_eq!(log.log_start_offset(), m.start);
            }
            Op::DeleteRecords { at } => {
                let off = m.pick(at);
                assert_eq!(log.delete_records_before(off).unwrap(), off.max(m.start));
                m.start = m.start.max(off);
                let start = m.start;
                m.batches.retain(|(_, last, _)| *last >= start);
            }
            Op::Retention { bytes } => {
                log.update_config(LogConfig {
                    retention_bytes: bytes.unwrap_or(-1),
                    ..config()
                });
                commit_all(&mgr);
                mgr.run_retention_once(NOW).unwrap();
                let start = log.log_start_offset();
                assert!(start >= m.start && start <= m.end);
                m.start = start;
                m.batches.retain(|(_, last, _)| *last >= start);
            }
            Op::Reopen { clean } => {
                if clean {
                    mgr.shutdown().unwrap();
                }
                drop(log);
                drop(mgr);
                mgr = LogManager::open(dirs.clone(), 1).unwrap();
                log = mgr.get(&tp()).unwrap();
                log.update_config(config());
            }
        }
        assert_eq!(log.log_end_offset(), m.end);
        assert_eq!(log.log_start_offset(), m.start);
        let all = log.read(m.start, usize::MAX, i64::MAX, false).unwrap();
        assert_eq!(
            all.to_bytes().unwrap().to_vec(),
            m.read(m.start, usize::MAX, i64::MAX, false).unwrap()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("SHALE_LOG_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]
    #[test]
    fn log_matches_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops);
    }
}
