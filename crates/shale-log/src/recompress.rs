//! The topic's `compression.type` applied to leader appends, as Kafka's LogValidator does: a
//! batch whose codec differs from the topic's is written anew with the topic's codec and level
//! (KIP-390); every other batch is stored as received.
//!
//! The rebuilt batch keeps the producer id, epoch and base sequence, the transactional flag,
//! the base timestamp and every record byte for byte (offset deltas, timestamp deltas, keys,
//! values, headers): only the records section is compressed differently, so the records
//! decode exactly as sent. Its max timestamp is recomputed from the records as Kafka's builder
//! does, and so is its CRC. Offsets and the leader epoch are assigned afterwards like those
//! of any other batch.

use crate::batch::{self, BatchHeader, Compression, HEADER_LEN, LOG_OVERHEAD, MAGIC_V2};
use crate::compression;
use crate::config::{LogConfig, TimestampType, TopicCompression};
use crate::error::LogError;

/// The codec a leader stores the batch with when it is not the batch's own; `None` keeps the
/// batch as received (topic `producer`, or the codecs match).
pub(crate) fn target_codec(config: &LogConfig, h: &BatchHeader) -> Option<Compression> {
    // Markers stay as written: Kafka never compresses a control batch written uncompressed,
    // and only the broker itself writes them.
    if h.is_control() {
        return None;
    }
    match config.compression_type {
        TopicCompression::Producer => None,
        TopicCompression::Codec(c) if Some(c) == h.compression() => None,
        TopicCompression::Codec(c) => Some(c),
    }
}

/// Appends to `out` the batch `h` rewritten with `codec` around `records`, the batch's whole
/// records section uncompressed (already decoded and checked by the caller), and returns the
/// new batch's header. `max_timestamp_ms` is the largest record timestamp.
///
/// The new batch is refused before it is built when, uncompressed, it would exceed
/// `max.message.bytes`; a compressed one is checked by the caller once its size is known.
pub(crate) fn append_rebuilt(
    out: &mut Vec<u8>,
    h: &BatchHeader,
    records: &[u8],
    max_timestamp_ms: i64,
    codec: Compression,
    config: &LogConfig,
) -> Result<BatchHeader, LogError> {
    if codec == Compression::None {
        let size = (HEADER_LEN + records.len()) as u64;
        if size > config.max_message_bytes {
            return Err(LogError::MessageTooLarge {
                size_bytes: size,
                limit_bytes: config.max_message_bytes,
            });
        }
    }
    let start = out.len();
    out.resize(start + HEADER_LEN, 0);
    let taken = std::mem::take(out);
    *out = compression::compress_into(codec, records, &config.compression_levels, taken)?;
    let batch_length =
        i32::try_from(out.len() - start - LOG_OVERHEAD).map_err(|_| LogError::MessageTooLarge {
            size_bytes: (out.len() - start) as u64,
            limit_bytes: config.max_message_bytes,
        })?;
    let header = BatchHeader {
        base_offset: h.base_offset,
        batch_length,
        partition_leader_epoch: h.partition_leader_epoch,
        magic: MAGIC_V2,
        crc: 0,
        // Kafka's builder writes the topic's timestamp type; a LogAppendTime topic then
        // patches it like any batch.
        attributes: batch::attributes_with(
            codec,
            TimestampType::CreateTime,
            h.is_transactional(),
            false,
            false,
        ),
        last_offset_delta: h.last_offset_delta,
        base_timestamp: h.base_timestamp,
        max_timestamp: max_timestamp_ms,
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
        base_sequence: h.base_sequence,
        record_count: h.record_count,
    };
    let rebuilt = &mut out[start..];
    header.encode_into(rebuilt);
    batch::rewrite_crc(rebuilt);
    Ok(BatchHeader {
        crc: batch::get_u32(rebuilt, batch::CRC_POS),
        ..header
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{self, BatchBuilder, OwnedRecord};

    fn sample(codec: Compression) -> Vec<u8> {
        let mut b = BatchBuilder::new(1_000).compression(codec);
        b.producer_id = 7;
        b.producer_epoch = 2;
        b.base_sequence = 40;
        b.transactional = true;
        for i in 0..5i32 {
            b.push_record(&OwnedRecord {
                offset_delta: i,
                timestamp_delta: i64::from(5 - i),
                key: (i != 2).then(|| format!("k{i}").into_bytes()),
                value: (i != 3).then(|| vec![b'v'; 100 * i as usize]),
                headers: vec![(b"h".to_vec(), Some(vec![i as u8])), (b"n".to_vec(), None)],
            });
        }
        b.build().unwrap()
    }

    fn config(codec: Compression) -> LogConfig {
        LogConfig {
            compression_type: TopicCompression::Codec(codec),
            ..LogConfig::default()
        }
    }

    #[test]
    fn a_rebuilt_batch_keeps_header_fields_and_records() {
        let codecs = [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ];
        for from in codecs {
            let original = sample(from);
            let h = batch::check_batch(&original).unwrap();
            let body = records::batch_body(&original, 1 << 20).unwrap();
            for to in codecs.into_iter().filter(|c| *c != from) {
                let mut out = Vec::new();
                let nh = append_rebuilt(&mut out, &h, &body, 1_005, to, &config(to)).unwrap();
                assert_eq!(batch::check_batch(&out).unwrap(), nh, "{from:?} -> {to:?}");
                assert_eq!(nh.compression(), Some(to));
                assert!(nh.is_transactional());
                assert_eq!(
                    (nh.producer_id, nh.producer_epoch, nh.base_sequence),
                    (7, 2, 40)
                );
                assert_eq!((nh.base_timestamp, nh.max_timestamp), (1_000, 1_005));
                assert_eq!(nh.last_offset_delta, 4);
                assert_eq!(records::batch_body(&out, 1 << 20).unwrap(), body);
            }
        }
    }

    #[test]
    fn only_a_differing_codec_is_rebuilt() {
        let gzip = batch::check_batch(&sample(Compression::Gzip)).unwrap();
        assert_eq!(target_codec(&LogConfig::default(), &gzip), None);
        assert_eq!(target_codec(&config(Compression::Gzip), &gzip), None);
        assert_eq!(
            target_codec(&config(Compression::Zstd), &gzip),
            Some(Compression::Zstd)
        );
    }

    #[test]
    fn an_uncompressed_target_beyond_the_message_limit_is_refused_unbuilt() {
        let original = sample(Compression::Zstd);
        let h = batch::check_batch(&original).unwrap();
        let body = records::batch_body(&original, 1 << 20).unwrap();
        let small = LogConfig {
            max_message_bytes: 200,
            ..config(Compression::None)
        };
        let mut out = Vec::new();
        let e = append_rebuilt(&mut out, &h, &body, 0, Compression::None, &small).unwrap_err();
        assert!(matches!(e, LogError::MessageTooLarge { .. }), "{e:?}");
        assert!(out.is_empty());
    }
}
