//! Length-prefixed Kafka frames read and written during a connection's SASL exchange.

use std::io;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Reads one frame of at most `max_bytes`; its buffer grows only as bytes arrive.
pub(super) async fn read_frame<S: AsyncRead + Unpin>(
    stream: &mut S,
    max_bytes: usize,
) -> io::Result<Bytes> {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).await?;
    let len = shale_protocol::frame_len(prefix, max_bytes)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let mut body = Vec::new();
    (&mut *stream)
        .take(len as u64)
        .read_to_end(&mut body)
        .await?;
    if body.len() != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Bytes::from(body))
}

/// Writes bytes that already carry their length prefix, and flushes (through TLS too).
pub(super) async fn write_frame<S: AsyncWrite + Unpin>(
    stream: &mut S,
    frame: &[u8],
) -> io::Result<()> {
    stream.write_all(frame).await?;
    stream.flush().await
}

/// An error that refuses a connection, with why.
pub(super) fn refused(reason: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, reason.into())
}
