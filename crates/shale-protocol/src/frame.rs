use crate::ProtocolError;

/// Every Kafka request and response starts with a big-endian `i32` byte count.
pub const FRAME_LEN_PREFIX_BYTES: usize = 4;

/// Reads the length prefix of a frame and checks it against the broker's limit
/// (`socket.request.max.bytes`) before any buffer is sized from it.
pub fn frame_len(prefix: [u8; 4], max_bytes: usize) -> Result<usize, ProtocolError> {
    let len = i32::from_be_bytes(prefix);
    let len_bytes = usize::try_from(len).map_err(|_| ProtocolError::NegativeFrameLength { len })?;
    if len_bytes > max_bytes {
        return Err(ProtocolError::FrameTooLarge {
            len_bytes,
            max_bytes,
        });
    }
    Ok(len_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_lengths_up_to_the_limit() {
        assert_eq!(frame_len([0, 0, 0, 0], 10), Ok(0));
        assert_eq!(frame_len([0, 0, 0, 10], 10), Ok(10));
        assert_eq!(frame_len([0, 1, 0, 0], 1 << 20), Ok(65_536));
    }

    #[test]
    fn rejects_lengths_over_the_limit() {
        assert_eq!(
            frame_len([0, 0, 0, 11], 10),
            Err(ProtocolError::FrameTooLarge {
                len_bytes: 11,
                max_bytes: 10
            })
        );
        assert_eq!(
            frame_len([0x7f, 0xff, 0xff, 0xff], 100 << 20),
            Err(ProtocolError::FrameTooLarge {
                len_bytes: i32::MAX as usize,
                max_bytes: 100 << 20
            })
        );
    }

    #[test]
    fn rejects_negative_lengths() {
        assert_eq!(
            frame_len([0xff; 4], 10),
            Err(ProtocolError::NegativeFrameLength { len: -1 })
        );
        assert_eq!(
            frame_len([0x80, 0, 0, 0], usize::MAX),
            Err(ProtocolError::NegativeFrameLength { len: i32::MIN })
        );
    }
}
