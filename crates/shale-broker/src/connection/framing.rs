//! Frames off a stream: a length prefix checked against a cap, and a body that grows only as
//! its bytes arrive.

use std::net::SocketAddr;

use bytes::{Buf, BytesMut};
use shale_protocol::FRAME_LEN_PREFIX_BYTES;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tracing::{debug, warn};

use super::idle::IdleTimer;

/// Least room offered to one socket read; larger frames grow as their bytes arrive.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Reads until `buffered` holds a whole frame and returns its body (without the length
/// prefix); `None` on end of stream, a read error, a malformed length, shutdown, or the
/// connection staying idle past `connections.max.idle.ms`.
pub(super) async fn next_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    buffered: &mut BytesMut,
    frame_bytes_max: usize,
    shutdown: &mut watch::Receiver<bool>,
    peer: SocketAddr,
    idle: &IdleTimer,
) -> Option<bytes::Bytes> {
    while buffered.len() < FRAME_LEN_PREFIX_BYTES {
        fill_unless_idle(
            reader,
            buffered,
            FRAME_LEN_PREFIX_BYTES,
            shutdown,
            peer,
            idle,
        )
        .await?;
    }
    let mut prefix = [0u8; FRAME_LEN_PREFIX_BYTES];
    prefix.copy_from_slice(&buffered[..FRAME_LEN_PREFIX_BYTES]);
    let len = match shale_protocol::frame_len(prefix, frame_bytes_max) {
        Ok(len) => len,
        Err(e) => {
            warn!(%peer, "closing connection: {e}");
            return None;
        }
    };
    let wanted = FRAME_LEN_PREFIX_BYTES + len;
    while buffered.len() < wanted {
        fill_unless_idle(reader, buffered, wanted, shutdown, peer, idle).await?;
    }
    let mut frame = buffered.split_to(wanted);
    frame.advance(FRAME_LEN_PREFIX_BYTES);
    Some(frame.freeze())
}

/// `fill`, given up when the connection has been idle too long. A read cut short by the
/// deadline loses nothing: `read_buf` either put its bytes in `buffered` or took none.
async fn fill_unless_idle<R: AsyncRead + Unpin>(
    reader: &mut R,
    buffered: &mut BytesMut,
    wanted: usize,
    shutdown: &mut watch::Receiver<bool>,
    peer: SocketAddr,
    idle: &IdleTimer,
) -> Option<()> {
    loop {
        let Some(deadline) = idle.deadline() else {
            return fill(reader, buffered, wanted, shutdown).await;
        };
        if let Ok(read) =
            tokio::time::timeout_at(deadline, fill(reader, buffered, wanted, shutdown)).await
        {
            idle.touch();
            return read;
        }
        if idle.expired() {
            debug!(%peer, "closing connection: idle longer than connections.max.idle.ms");
            return None;
        }
    }
}

/// One read into `buffered`, which is short of `wanted` bytes. Room grows with the bytes
/// already there (a length prefix alone must not reserve memory), and is at least
/// `READ_CHUNK_BYTES` (or what is missing) so that requests do not arrive in slivers.
async fn fill<R: AsyncRead + Unpin>(
    reader: &mut R,
    buffered: &mut BytesMut,
    wanted: usize,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<()> {
    let missing = wanted - buffered.len();
    if buffered.capacity() - buffered.len() < missing.min(READ_CHUNK_BYTES) {
        buffered.reserve(missing.min(buffered.len()).max(READ_CHUNK_BYTES));
    }
    let read = tokio::select! {
        r = reader.read_buf(buffered) => r,
        _ = shutdown.changed() => return None,
    };
    match read {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(()),
    }
}
