//! Per-record errors (KIP-467): a batch with some bad records is refused naming each of them by
//! its index in the batch, with Kafka's messages, and nothing of it is written.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use shale_log::records::BatchBuilder;
use shale_log::{
    AppendOrigin, CleanupPolicy, Compression, Log, LogConfig, LogError, RecordFault, TopicPartition,
};

fn open(name: &str, config: LogConfig) -> (tempfile::TempDir, Log) {
    let d = tempfile::tempdir().unwrap();
    let log = Log::open(
        &d.path().join(format!("{name}-0")),
        TopicPartition::new(name, 0),
        config,
    )
    .unwrap();
    (d, log)
}

fn rejected(log: &Log, batch: &mut [u8]) -> shale_log::RecordErrors {
    match log.append(batch, 0, NOW, AppendOrigin::Client) {
        Err(LogError::RecordsRejected(e)) => e,
        other => panic!("expected record errors, got {other:?}"),
    }
}

#[test]
fn keyless_records_on_a_compacted_topic_are_each_named() {
    let config = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        ..LogConfig::default()
    };
    let (_d, log) = open("compacted", config);
    for c in [Compression::None, Compression::Gzip, Compression::Zstd] {
        let mut b = keyed(
            &[(None, Some("a")), (Some("k"), Some("b")), (None, Some("c"))],
            c,
            NOW,
        );
        let errors = rejected(&log, &mut b);
        assert!(!errors.has_invalid_timestamp());
        let got: Vec<_> = errors
            .0
            .iter()
            .map(|e| (e.batch_index, e.fault, e.message.as_str()))
            .collect();
        let msg =
            "Compacted topic cannot accept message without key in topic partition compacted-0";
        assert_eq!(
            got,
            vec![
                (0, RecordFault::MissingKey, msg),
                (2, RecordFault::MissingKey, msg)
            ],
            "{c:?}"
        );
    }
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(log.size_bytes(), 0);
}

#[test]
fn a_future_timestamp_names_its_record_with_kafkas_bounds() {
    let (_d, log) = open("ts", LogConfig::default());
    let future = NOW + 2 * 3_600_000;
    let mut b = BatchBuilder::new(NOW);
    b.push(NOW, Some(b"k"), Some(b"v"));
    b.push(future, Some(b"k"), Some(b"v"));
    b.push(NOW, Some(b"k"), Some(b"v"));
    let mut b = b.build().unwrap();
    let errors = rejected(&log, &mut b);
    assert!(errors.has_invalid_timestamp());
    assert_eq!(errors.0.len(), 1);
    assert_eq!(errors.0[0].batch_index, 1);
    // The lower bound is now - Long.MAX_VALUE, as Kafka prints it.
    assert_eq!(
        errors.0[0].message,
        format!(
            "Timestamp {future} of message with offset 1 is out of range. The timestamp should \
             be within [{}, {}]",
            NOW - i64::MAX,
            NOW + 3_600_000
        )
    );
    assert_eq!(log.log_end_offset(), 0);
}

#[test]
fn old_timestamps_are_refused_against_before_max() {
    let config = LogConfig {
        message_timestamp_before_max_ms: 3_600_000,
        ..LogConfig::default()
    };
    let (_d, log) = open("old", config);
    let old = NOW - 10 * 3_600_000;
    let mut b = BatchBuilder::new(old);
    b.push(old, Some(b"k"), Some(b"v"));
    b.push(old + 1, Some(b"k"), Some(b"v"));
    let mut b = b.build().unwrap();
    let errors = rejected(&log, &mut b);
    let indexes: Vec<_> = errors.0.iter().map(|e| e.batch_index).collect();
    assert_eq!(indexes, vec![0, 1]);
    assert!(errors.0[0]
        .message
        .ends_with(&format!("[{}, {}]", NOW - 3_600_000, NOW + 3_600_000)));
}

#[test]
fn a_keyless_record_with_a_bad_timestamp_reports_the_key_as_kafka_does() {
    let config = LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        ..LogConfig::default()
    };
    let (_d, log) = open("both", config);
    let future = NOW + 2 * 3_600_000;
    let mut b = BatchBuilder::new(NOW);
    b.push(future, None, Some(b"v"));
    b.push(future, Some(b"k"), Some(b"v"));
    let mut b = b.build().unwrap();
    let errors = rejected(&log, &mut b);
    let faults: Vec<_> = errors.0.iter().map(|e| e.fault).collect();
    assert_eq!(
        faults,
        vec![RecordFault::MissingKey, RecordFault::Timestamp]
    );
    // Any timestamp fault makes the whole answer INVALID_TIMESTAMP.
    assert!(errors.has_invalid_timestamp());
}
