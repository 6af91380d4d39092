//! Topic `compression.type` (Kafka's LogValidator): a client batch whose codec differs from the
//! topic's is stored recompressed with the topic's codec and level, and decodes to exactly the
//! records sent; `producer`, a matching codec, control batches and replication appends keep the
//! bytes as received.
#![allow(clippy::unwrap_used)]

mod common;

use common::NOW;
use shale_log::records::{batch_body, decode_records, BatchBuilder, OwnedRecord};
use shale_log::{
    parse_batches, AppendOrigin, BatchHeader, CleanupPolicy, Compression, CompressionLevels, Log,
    LogConfig, LogError, TimestampType, TopicCompression, TopicPartition,
};

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

/// One record as a consumer sees it: offset, timestamp, key, value, headers.
type Seen = (
    i64,
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(Vec<u8>, Option<Vec<u8>>)>,
);

fn open(config: LogConfig) -> (tempfile::TempDir, Log) {
    let d = tempfile::tempdir().unwrap();
    let log = Log::open(&d.path().join("t-0"), TopicPartition::new("t", 0), config).unwrap();
    (d, log)
}

fn topic(codec: Compression) -> LogConfig {
    LogConfig {
        compression_type: TopicCompression::Codec(codec),
        ..LogConfig::default()
    }
}

/// Records with keys, null keys and values, empty and binary values, headers and distinct
/// timestamps, compressible enough for levels to matter.
fn producer_batch(codec: Compression, n: i32) -> BatchBuilder {
    let mut b = BatchBuilder::new(NOW).compression(codec);
    for i in 0..n {
        let value = match i % 5 {
            3 => None,
            4 => Some(Vec::new()),
            _ => Some(
                format!("value {i} ")
                    .repeat(20 + i as usize % 7)
                    .into_bytes(),
            ),
        };
        b.push_record(&OwnedRecord {
            offset_delta: i,
            timestamp_delta: i64::from((i * 37) % 11),
            key: (i % 4 != 1).then(|| vec![0, 0xff, i as u8]),
            value,
            headers: vec![
                (b"h".to_vec(), Some(vec![i as u8; 3])),
                (b"h".to_vec(), Some(b"again".to_vec())),
                (b"null".to_vec(), None),
            ],
        });
    }
    b
}

/// Every stored batch with its bytes.
fn stored(log: &Log) -> Vec<(BatchHeader, Vec<u8>)> {
    let r = log.read(0, 64 << 20, i64::MAX, false).unwrap();
    let mut all = Vec::new();
    for s in &r.slices {
        all.extend_from_slice(&s.read_to_bytes().unwrap());
    }
    let mut out = Vec::new();
    let mut pos = 0;
    for h in parse_batches(&all).unwrap() {
        out.push((h, all[pos..pos + h.total_len()].to_vec()));
        pos += h.total_len();
    }
    out
}

/// The records of a batch as a consumer decodes them, with `base_offset` as stored.
fn seen(bytes: &[u8]) -> Vec<Seen> {
    let h = BatchHeader::decode(bytes).unwrap();
    let body = batch_body(bytes, 64 << 20).unwrap();
    decode_records(&body, h.record_count)
        .unwrap()
        .iter()
        .map(|r| {
            (
                h.base_offset + i64::from(r.offset_delta),
                h.base_timestamp + r.timestamp_delta,
                r.key.map(<[u8]>::to_vec),
                r.value.map(<[u8]>::to_vec),
                r.headers
                    .iter()
                    .map(|x| (x.key.to_vec(), x.value.map(<[u8]>::to_vec)))
                    .collect(),
            )
        })
        .collect()
}

/// `bytes` with the base offset and leader epoch set, as an append patches them.
fn placed(bytes: &[u8], base_offset: i64, leader_epoch: i32) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[0..8].copy_from_slice(&base_offset.to_be_bytes());
    b[12..16].copy_from_slice(&leader_epoch.to_be_bytes());
    b
}

#[test]
fn each_topic_codec_recompresses_a_differently_compressed_batch() {
    for target in CODECS {
        for source in CODECS.into_iter().filter(|c| *c != target) {
            let (_d, log) = open(topic(target));
            // A first batch, so that the recompressed one gets offsets that are not 0.
            let mut first = producer_batch(target, 3).build().unwrap();
            log.append(&mut first, 4, NOW, AppendOrigin::Client)
                .unwrap();
            let sent = producer_batch(source, 25).build().unwrap();
            let mut bytes = sent.clone();
            let info = log
                .append(&mut bytes, 4, NOW, AppendOrigin::Client)
                .unwrap();
            assert_eq!((info.first_offset, info.last_offset), (3, 27));
            assert_eq!(info.batches[0].compression(), Some(target));

            let batches = stored(&log);
            assert_eq!(batches.len(), 2, "{source:?} -> {target:?}");
            let (h, b) = &batches[1];
            assert_eq!(h.compression(), Some(target), "{source:?} -> {target:?}");
            assert_eq!(*h, info.batches[0]);
            assert_eq!((h.base_offset, h.partition_leader_epoch), (3, 4));
            assert_eq!(
                (h.base_timestamp, h.max_timestamp),
                (NOW, NOW + 10),
                "{source:?} -> {target:?}"
            );
            assert_eq!(h.timestamp_type(), TimestampType::CreateTime);
            assert_eq!(
                seen(b),
                seen(&placed(&sent, 3, 4)),
                "{source:?} -> {target:?}"
            );
            assert_eq!(log.log_end_offset(), 28);
        }
    }
}

#[test]
fn real_client_batches_are_recompressed_to_each_codec() {
    for source in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let path = format!(
            "{}/tests/data/kcat-{source}.batch",
            env!("CARGO_MANIFEST_DIR")
        );
        let sent = std::fs::read(path).unwrap();
        let sent_header = parse_batches(&sent).unwrap()[0];
        for target in CODECS
            .into_iter()
            .filter(|c| Some(*c) != sent_header.compression())
        {
            let (_d, log) = open(topic(target));
            let mut bytes = sent.clone();
            log.append(
                &mut bytes,
                0,
                sent_header.max_timestamp + 1_000,
                AppendOrigin::Client,
            )
            .unwrap();
            let batches = stored(&log);
            let (h, b) = &batches[0];
            assert_eq!(h.compression(), Some(target), "{source} -> {target:?}");
            assert_eq!(h.max_timestamp, sent_header.max_timestamp);
            assert_eq!(
                seen(b),
                seen(&placed(&sent, 0, 0)),
                "{source} -> {target:?}"
            );
        }
    }
}

#[test]
fn producer_keeps_every_batch_as_sent() {
    let (_d, log) = open(LogConfig::default());
    let mut sent = Vec::new();
    for (i, codec) in CODECS.into_iter().enumerate() {
        let b = producer_batch(codec, 4).build().unwrap();
        let mut bytes = b.clone();
        log.append(&mut bytes, 2, NOW, AppendOrigin::Client)
            .unwrap();
        sent.push(placed(&b, 4 * i as i64, 2));
    }
    let got: Vec<Vec<u8>> = stored(&log).into_iter().map(|(_, b)| b).collect();
    assert_eq!(got, sent);
}

#[test]
fn a_matching_codec_keeps_the_bytes_as_sent() {
    for codec in CODECS {
        let (_d, log) = open(topic(codec));
        // A level other than the producer's would change the bytes if it were recompressed.
        log.update_config(LogConfig {
            compression_levels: CompressionLevels {
                gzip: 1,
                lz4: 3,
                zstd: 19,
            },
            ..topic(codec)
        });
        let sent = producer_batch(codec, 10).build().unwrap();
        let mut bytes = sent.clone();
        log.append(&mut bytes, 6, NOW, AppendOrigin::Client)
            .unwrap();
        let batches = stored(&log);
        assert_eq!(batches[0].1, placed(&sent, 0, 6), "{codec:?}");
    }
}

#[test]
fn the_topic_level_is_applied() {
    let store = |codec: Compression, levels: CompressionLevels| {
        let (_d, log) = open(LogConfig {
            compression_levels: levels,
            ..topic(codec)
        });
        let sent = producer_batch(Compression::None, 200).build().unwrap();
        let mut bytes = sent.clone();
        log.append(&mut bytes, 0, NOW, AppendOrigin::Client)
            .unwrap();
        let (h, b) = stored(&log).remove(0);
        assert_eq!(h.compression(), Some(codec));
        assert_eq!(seen(&b), seen(&placed(&sent, 0, 0)));
        b
    };
    let levels = |gzip, lz4, zstd| CompressionLevels { gzip, lz4, zstd };
    let d = CompressionLevels::default();
    let gzip_1 = store(Compression::Gzip, levels(1, d.lz4, d.zstd));
    let gzip_9 = store(Compression::Gzip, levels(9, d.lz4, d.zstd));
    assert_ne!(gzip_1, gzip_9);
    assert!(
        gzip_9.len() < gzip_1.len(),
        "{} {}",
        gzip_9.len(),
        gzip_1.len()
    );
    let zstd_1 = store(Compression::Zstd, levels(d.gzip, d.lz4, 1));
    let zstd_19 = store(Compression::Zstd, levels(d.gzip, d.lz4, 19));
    assert_ne!(zstd_1, zstd_19);
    let zstd_fast = store(Compression::Zstd, levels(d.gzip, d.lz4, -100));
    assert!(zstd_fast.len() > zstd_19.len());
    // Level 9 is LZ4's fast compressor (Kafka's choice); others its high-compression mode.
    let lz4_9 = store(Compression::Lz4, levels(d.gzip, 9, d.zstd));
    let lz4_17 = store(Compression::Lz4, levels(d.gzip, 17, d.zstd));
    assert_ne!(lz4_9, lz4_17);
    assert!(
        lz4_17.len() < lz4_9.len(),
        "{} {}",
        lz4_17.len(),
        lz4_9.len()
    );
}

#[test]
fn a_recompressed_batch_keeps_producer_fields_and_the_transactional_flag() {
    let (_d, log) = open(topic(Compression::Zstd));
    let mut b = producer_batch(Compression::Gzip, 5);
    b.producer_id = 4_000;
    b.producer_epoch = 3;
    b.base_sequence = 17;
    b.transactional = true;
    let mut bytes = b.build().unwrap();
    let info = log
        .append(&mut bytes, 0, NOW, AppendOrigin::Client)
        .unwrap();
    let (h, _) = stored(&log).remove(0);
    assert_eq!(h, info.batches[0]);
    assert_eq!(h.compression(), Some(Compression::Zstd));
    assert!(h.is_transactional() && !h.is_control());
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (4_000, 3, 17)
    );
    assert_eq!(h.last_sequence(), 21);
}

#[test]
fn control_and_replicated_batches_keep_their_bytes() {
    let (_d, log) = open(topic(Compression::Gzip));
    // A COMMIT marker as the coordinator writes it.
    let mut marker = BatchBuilder::new(NOW);
    marker.control = true;
    marker.transactional = true;
    marker.producer_id = 9;
    marker.producer_epoch = 0;
    marker.push_record(&OwnedRecord {
        key: Some(vec![0, 0, 0, 1]),
        value: Some(vec![0, 0, 0, 0, 0, 0]),
        ..OwnedRecord::default()
    });
    let marker = marker.build().unwrap();
    let mut bytes = marker.clone();
    log.append(&mut bytes, 1, NOW, AppendOrigin::Coordinator)
        .unwrap();
    // A follower stores the leader's bytes whatever its own config says.
    let mut leader = producer_batch(Compression::Lz4, 3);
    leader.base_offset = 1;
    leader.partition_leader_epoch = 1;
    let leader = leader.build().unwrap();
    let mut bytes = leader.clone();
    log.append(&mut bytes, -1, NOW, AppendOrigin::Replication)
        .unwrap();
    let got: Vec<Vec<u8>> = stored(&log).into_iter().map(|(_, b)| b).collect();
    assert_eq!(got, vec![placed(&marker, 0, 1), leader]);
}

#[test]
fn a_refused_recompression_writes_nothing() {
    // Records refused by the validator: nothing is built or written.
    let (_d, log) = open(LogConfig {
        cleanup_policy: CleanupPolicy {
            delete: false,
            compact: true,
        },
        ..topic(Compression::Zstd)
    });
    let mut b = producer_batch(Compression::None, 6).build().unwrap();
    let e = log
        .append(&mut b, 0, NOW, AppendOrigin::Client)
        .unwrap_err();
    assert!(matches!(e, LogError::RecordsRejected(_)), "{e:?}");
    assert_eq!((log.log_end_offset(), log.size_bytes()), (0, 0));

    // A compressed batch that fits max.message.bytes but not once stored uncompressed.
    let (_d, log) = open(LogConfig {
        max_message_bytes: 2_000,
        ..topic(Compression::None)
    });
    let mut b = producer_batch(Compression::Zstd, 40).build().unwrap();
    assert!(b.len() < 2_000, "{}", b.len());
    let e = log
        .append(&mut b, 0, NOW, AppendOrigin::Client)
        .unwrap_err();
    assert!(matches!(e, LogError::MessageTooLarge { .. }), "{e:?}");
    assert_eq!((log.log_end_offset(), log.size_bytes()), (0, 0));

    // A batch of several where only a later one is too large once recompressed.
    let small = producer_batch(Compression::None, 1).build().unwrap();
    let mut both = [
        small,
        producer_batch(Compression::Zstd, 40).build().unwrap(),
    ]
    .concat();
    assert!(log.append(&mut both, 0, NOW, AppendOrigin::Client).is_err());
    assert_eq!((log.log_end_offset(), log.size_bytes()), (0, 0));

    // Batches that each fit but together expand beyond the decompression bound.
    let (_d, log) = open(LogConfig {
        decompressed_batch_bytes_max: 15_000,
        ..topic(Compression::None)
    });
    let one = producer_batch(Compression::Zstd, 12).build().unwrap();
    let mut many = one.repeat(10);
    assert!(many.len() < 15_000, "{}", many.len());
    let e = log
        .append(&mut many, 0, NOW, AppendOrigin::Client)
        .unwrap_err();
    assert!(matches!(e, LogError::MessageTooLarge { .. }), "{e:?}");
    assert_eq!((log.log_end_offset(), log.size_bytes()), (0, 0));
    let mut few = one.repeat(2);
    log.append(&mut few, 0, NOW, AppendOrigin::Client).unwrap();
    assert_eq!(log.log_end_offset(), 24);

    // A batch that decompresses beyond the bound is refused as corrupt.
    let (_d, log) = open(LogConfig {
        decompressed_batch_bytes_max: 1_000,
        ..topic(Compression::Gzip)
    });
    let mut b = producer_batch(Compression::Zstd, 40).build().unwrap();
    let e = log
        .append(&mut b, 0, NOW, AppendOrigin::Client)
        .unwrap_err();
    assert!(matches!(e, LogError::CorruptMessage(_)), "{e:?}");
    assert_eq!((log.log_end_offset(), log.size_bytes()), (0, 0));
}

#[test]
fn indexes_follow_the_recompressed_sizes() {
    let config = LogConfig {
        index_interval_bytes: 64,
        ..topic(Compression::Gzip)
    };
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let tp = TopicPartition::new("t", 0);
    let mut sent = Vec::new();
    {
        let log = Log::open(&dir, tp.clone(), config.clone()).unwrap();
        // Mixed requests: one batch already gzip, one to recompress, in one append.
        for i in 0..20i64 {
            let mut b = BatchBuilder::new(NOW + 100 * i);
            for j in 0..3 {
                b.push(NOW + 100 * i + j, Some(b"k"), Some(&[b'x'; 300]));
            }
            let plain = b.build().unwrap();
            let gz = b.clone().compression(Compression::Gzip).build().unwrap();
            let mut req = [gz.clone(), plain.clone()].concat();
            log.append(&mut req, 0, NOW, AppendOrigin::Client).unwrap();
            sent.push(placed(&gz, 6 * i, 0));
            sent.push(placed(&plain, 6 * i + 3, 0));
        }
        let batches = stored(&log);
        assert_eq!(batches.len(), 40);
        for (n, (h, b)) in batches.iter().enumerate() {
            assert_eq!(h.compression(), Some(Compression::Gzip));
            assert_eq!(seen(b), seen(&sent[n]));
            if n % 2 == 0 {
                // The batch that came as gzip is stored as sent.
                assert_eq!(*b, sent[n]);
            }
        }
        check_lookups(&log, &batches);
        log.close().unwrap();
    }
    // Reopened: the indexes written with the new sizes still find every batch.
    let log = Log::open(&dir, tp, config).unwrap();
    assert_eq!(log.log_end_offset(), 120);
    let batches = stored(&log);
    check_lookups(&log, &batches);
}

/// Reads from every offset start at the batch holding it, and time lookups find the first
/// record at or after each timestamp.
fn check_lookups(log: &Log, batches: &[(BatchHeader, Vec<u8>)]) {
    let records: Vec<Seen> = batches.iter().flat_map(|(_, b)| seen(b)).collect();
    for (h, b) in batches {
        for offset in h.base_offset..=h.last_offset() {
            let r = log.read(offset, 1, i64::MAX, true).unwrap();
            let first = r.slices[0].read_to_bytes().unwrap();
            assert_eq!(&first[..b.len()], &b[..], "offset {offset}");
        }
        for ts in [h.base_timestamp, h.max_timestamp] {
            let want = records.iter().find(|r| r.1 >= ts).map(|r| (r.0, r.1));
            assert_eq!(log.offset_for_timestamp(ts).unwrap(), want, "time {ts}");
        }
    }
}

#[test]
fn a_log_append_time_topic_stamps_the_recompressed_batch() {
    let (_d, log) = open(LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..topic(Compression::Snappy)
    });
    let sent = producer_batch(Compression::None, 5).build().unwrap();
    let mut bytes = sent.clone();
    let info = log
        .append(&mut bytes, 0, NOW + 5_000, AppendOrigin::Client)
        .unwrap();
    assert_eq!(info.log_append_time_ms, NOW + 5_000);
    let (h, b) = stored(&log).remove(0);
    assert_eq!(h.compression(), Some(Compression::Snappy));
    assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(h.max_timestamp, NOW + 5_000);
    // The records keep their own create times; a consumer shows the batch's.
    let create_times: Vec<i64> = seen(&b).iter().map(|r| r.1).collect();
    let sent_times: Vec<i64> = seen(&sent).iter().map(|r| r.1).collect();
    assert_eq!(create_times, sent_times);
}
