//! Codecs of Kafka batches: gzip, snappy (raw or xerial-framed as the Java client writes it),
//! LZ4 frame format and zstd, at the levels of KIP-390. Decompression is bounded.

use std::io::{Read, Write};

use crate::batch::Compression;
use crate::config::CompressionLevels;
use crate::error::LogError;

const XERIAL_MAGIC: &[u8] = &[0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;

fn err(e: impl std::fmt::Display) -> LogError {
    LogError::Compression(e.to_string())
}

fn read_bounded(r: impl Read, limit: u64) -> Result<Vec<u8>, LogError> {
    let mut out = Vec::new();
    r.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(err)?;
    if out.len() as u64 > limit {
        return Err(LogError::Compression(format!(
            "decompressed batch exceeds {limit} bytes"
        )));
    }
    Ok(out)
}

pub fn decompress(codec: Compression, data: &[u8], limit: u64) -> Result<Vec<u8>, LogError> {
    match codec {
        Compression::None => {
            if data.len() as u64 > limit {
                return Err(LogError::Compression(format!(
                    "batch exceeds {limit} bytes"
                )));
            }
            Ok(data.to_vec())
        }
        // Several gzip members may follow each other; all are part of the records.
        Compression::Gzip => read_bounded(flate2::read::MultiGzDecoder::new(data), limit),
        Compression::Snappy => snappy_decompress(data, limit),
        Compression::Lz4 => read_bounded(lz4_flex::frame::FrameDecoder::new(data), limit),
        Compression::Zstd => {
            read_bounded(zstd::stream::read::Decoder::new(data).map_err(err)?, limit)
        }
    }
}

fn snappy_decompress(data: &[u8], limit: u64) -> Result<Vec<u8>, LogError> {
    if !data.starts_with(XERIAL_MAGIC) {
        let mut out = Vec::new();
        snappy_raw(data, limit, &mut out)?;
        return Ok(out);
    }
    let mut out = Vec::new();
    let mut pos = XERIAL_HEADER_LEN.min(data.len());
    while pos < data.len() {
        let len_bytes = data
            .get(pos..pos + 4)
            .ok_or_else(|| err("truncated xerial block length"))?;
        let len = u32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
        pos += 4;
        let end = pos
            .checked_add(len as usize)
            .filter(|e| *e <= data.len())
            .ok_or_else(|| err("xerial block longer than the data"))?;
        let remaining = limit.saturating_sub(out.len() as u64);
        snappy_raw(&data[pos..end], remaining, &mut out)?;
        pos = end;
    }
    Ok(out)
}

fn snappy_raw(block: &[u8], limit: u64, out: &mut Vec<u8>) -> Result<(), LogError> {
    let len = snap::raw::decompress_len(block).map_err(err)?;
    if len as u64 > limit {
        return Err(LogError::Compression(format!(
            "decompressed batch exceeds {limit} bytes"
        )));
    }
    let start = out.len();
    out.resize(start + len, 0);
    snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(err)?;
    Ok(())
}

/// Compresses with Kafka's default levels.
pub fn compress(codec: Compression, data: &[u8]) -> Result<Vec<u8>, LogError> {
    compress_into(codec, data, &CompressionLevels::default(), Vec::new())
}

/// Compresses `data` onto the end of `out` with the levels of `compression.<codec>.level`
/// (KIP-390), so a batch header written before it needs no second copy. Levels outside a
/// codec's range are clamped to it (topic configs are validated before they get here).
pub fn compress_into(
    codec: Compression,
    data: &[u8],
    levels: &CompressionLevels,
    mut out: Vec<u8>,
) -> Result<Vec<u8>, LogError> {
    match codec {
        Compression::None => {
            out.extend_from_slice(data);
            Ok(out)
        }
        Compression::Gzip => {
            let level = if levels.gzip == CompressionLevels::GZIP_DEFAULT {
                flate2::Compression::default()
            } else {
                flate2::Compression::new(levels.gzip.clamp(1, 9) as u32)
            };
            let mut e = flate2::write::GzEncoder::new(out, level);
            e.write_all(data).map_err(err)?;
            e.finish().map_err(err)
        }
        Compression::Snappy => {
            // The xerial framing the Java client writes; every client reads it.
            out.reserve(data.len() / 2 + 32);
            out.extend_from_slice(XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            for chunk in data.chunks(32 * 1024) {
                let block = snap::raw::Encoder::new().compress_vec(chunk).map_err(err)?;
                out.extend_from_slice(&(block.len() as u32).to_be_bytes());
                out.extend_from_slice(&block);
            }
            Ok(out)
        }
        // Kafka uses LZ4's fast compressor at the default level and the high-compression one
        // at every other level; so does this.
        Compression::Lz4 if levels.lz4 == CompressionLevels::LZ4_DEFAULT => {
            // Kafka's reader requires independent blocks.
            let mut info = lz4_flex::frame::FrameInfo::new();
            info.block_mode = lz4_flex::frame::BlockMode::Independent;
            info.block_size = lz4_flex::frame::BlockSize::Max64KB;
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, out);
            e.write_all(data).map_err(err)?;
            e.finish().map_err(err)
        }
        Compression::Lz4 => lz4_high(data, levels.lz4.clamp(1, 17) as u32, out),
        Compression::Zstd => {
            let level = levels.zstd.clamp(ZSTD_LEVEL_MIN, ZSTD_LEVEL_MAX);
            let mut e = zstd::stream::write::Encoder::new(out, level).map_err(err)?;
            e.write_all(data).map_err(err)?;
            e.finish().map_err(err)
        }
    }
}

/// Kafka's bounds of `compression.zstd.level` (zstd's own minimum and maximum).
const ZSTD_LEVEL_MIN: i32 = -131072;
const ZSTD_LEVEL_MAX: i32 = 22;

/// An LZ4 frame of independent 64 KiB blocks from liblz4's high-compression mode.
fn lz4_high(data: &[u8], level: u32, out: Vec<u8>) -> Result<Vec<u8>, LogError> {
    let mut e = lz4::EncoderBuilder::new()
        .level(level)
        .block_size(lz4::BlockSize::Max64KB)
        .block_mode(lz4::BlockMode::Independent)
        .checksum(lz4::ContentChecksum::NoChecksum)
        .build(out)
        .map_err(err)?;
    e.write_all(data).map_err(err)?;
    let (out, finished) = e.finish();
    finished.map_err(err)?;
    Ok(out)
}
