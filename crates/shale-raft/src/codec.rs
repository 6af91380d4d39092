//! The length + CRC-32C frame used in log segment files (the values inside are in the
//! versioned encoding, `encoding`).

/// Bytes in a frame header: payload length (u32 LE) then CRC-32C of the payload (u32 LE).
pub const FRAME_HEADER_BYTES: usize = 8;

/// Largest payload a stored frame may claim; anything larger is treated as corruption.
pub const STORED_FRAME_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Appends one framed payload to `out`.
pub fn put_frame(out: &mut Vec<u8>, payload: &[u8]) {
    // Payloads are bounded well below 4 GiB by the proposal and frame limits.
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Result of reading the frame at some offset of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameRead<'a> {
    /// A complete frame whose checksum matches; `next` is the offset after it.
    Frame { payload: &'a [u8], next: usize },
    /// The buffer ends exactly here.
    End,
    /// Incomplete or corrupt bytes begin here.
    Damaged(&'static str),
}

pub fn read_frame(buf: &[u8], offset: usize) -> FrameRead<'_> {
    let rest = match buf.get(offset..) {
        Some(rest) => rest,
        None => return FrameRead::Damaged("offset beyond buffer"),
    };
    if rest.is_empty() {
        return FrameRead::End;
    }
    if rest.len() < FRAME_HEADER_BYTES {
        return FrameRead::Damaged("truncated frame header");
    }
    let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
    let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
    if len > STORED_FRAME_BYTES_MAX {
        return FrameRead::Damaged("frame length out of range");
    }
    let Some(payload) = rest.get(FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + len) else {
        return FrameRead::Damaged("truncated frame payload");
    };
    if crc32c::crc32c(payload) != crc {
        return FrameRead::Damaged("frame checksum mismatch");
    }
    FrameRead::Frame {
        payload,
        next: offset + FRAME_HEADER_BYTES + len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_flag_damage() {
        let mut buf = Vec::new();
        put_frame(&mut buf, b"abc");
        put_frame(&mut buf, b"");
        let FrameRead::Frame { payload, next } = read_frame(&buf, 0) else {
            panic!("first frame")
        };
        assert_eq!(payload, b"abc");
        let FrameRead::Frame { payload, next } = read_frame(&buf, next) else {
            panic!("second frame")
        };
        assert_eq!(payload, b"");
        assert_eq!(read_frame(&buf, next), FrameRead::End);
        assert!(matches!(read_frame(&buf[..5], 0), FrameRead::Damaged(_)));
        assert!(matches!(read_frame(&buf[..9], 0), FrameRead::Damaged(_)));
        let mut flipped = buf.clone();
        flipped[9] ^= 1;
        assert!(matches!(read_frame(&flipped, 0), FrameRead::Damaged(_)));
    }
}
