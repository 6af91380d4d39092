//! Batches produced by a real client (kcat 1.7.1 / librdkafka 2.0.2, one per codec, captured
//! from a broker's segment files) are accepted and read back byte for byte.
#![allow(clippy::unwrap_used)]

use shale_log::records::{batch_body, decode_records};
use shale_log::{parse_batches, AppendOrigin, Compression, Log, LogConfig, TopicPartition};

const CODECS: &[(&str, Option<Compression>)] = &[
    ("none", Some(Compression::None)),
    ("gzip", Some(Compression::Gzip)),
    ("snappy", Some(Compression::Snappy)),
    ("lz4", Some(Compression::Lz4)),
    ("zstd", Some(Compression::Zstd)),
];

fn captured(codec: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/kcat-{codec}.batch",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(path).unwrap()
}

#[test]
fn real_client_batches_round_trip_byte_for_byte() {
    for (codec, compression) in CODECS {
        let original = captured(codec);
        let headers = parse_batches(&original).unwrap();
        assert_eq!(headers.len(), 1, "{codec}");
        let h = &headers[0];
        assert_eq!(h.compression(), *compression, "{codec}");
        assert_eq!(h.record_count, 41, "{codec}");

        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(
            &dir.path().join("t-0"),
            TopicPartition::new("t", 0),
            LogConfig::default(),
        )
        .unwrap();
        let mut bytes = original.clone();
        let info = log
            .append(
                &mut bytes,
                h.partition_leader_epoch,
                h.max_timestamp + 1_000,
                AppendOrigin::Client,
            )
            .unwrap();
        assert_eq!((info.first_offset, info.last_offset), (0, 40), "{codec}");
        let read = log.read(0, 1 << 20, log.log_end_offset(), true).unwrap();
        assert_eq!(
            read.to_bytes().unwrap().as_ref(),
            original.as_slice(),
            "{codec}"
        );

        // The records inside are the ones kcat sent.
        let body = batch_body(&original, 1 << 20).unwrap();
        let records = decode_records(&body, h.record_count).unwrap();
        assert_eq!(records.len(), 41);
        assert_eq!(records[0].key, Some(&b"key-1"[..]), "{codec}");
        let first_value = format!(
            "value 1 of a real client batch compressed with {codec}, repeated text repeated text"
        );
        assert_eq!(records[0].value, Some(first_value.as_bytes()), "{codec}");
        assert_eq!(records[40].key, Some(&b""[..]), "{codec}");
        assert_eq!(records[40].value, Some(&b"tombstone-next"[..]), "{codec}");
        assert_eq!(records[0].headers.len(), 1, "{codec}");
    }
}
