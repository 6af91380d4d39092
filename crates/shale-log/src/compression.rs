//! Codecs of Kafka batches: gzip, snappy (raw or xerial-framed as the Java client writes it),
//! LZ4 frame format and zstd. Decompression is bounded.

use std::io::{Read, Write};

use crate::batch::Compression;
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

pub fn compress(codec: Compression, data: &[u8]) -> Result<Vec<u8>, LogError> {
    match codec {
        Compression::None => Ok(data.to_vec()),
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).map_err(err)?;
            e.finish().map_err(err)
        }
        Compression::Snappy => {
            // The xerial framing the Java client writes; every client reads it.
            let mut out = Vec::with_capacity(data.len() / 2 + 32);
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
        Compression::Lz4 => {
            // Kafka's reader requires independent blocks.
            let mut info = lz4_flex::frame::FrameInfo::new();
            info.block_mode = lz4_flex::frame::BlockMode::Independent;
            info.block_size = lz4_flex::frame::BlockSize::Max64KB;
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(data).map_err(err)?;
            e.finish().map_err(err)
        }
        Compression::Zstd => zstd::stream::encode_all(data, 3).map_err(err),
    }
}
