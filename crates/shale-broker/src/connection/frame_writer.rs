//! Writes a Fetch frame chain to the connection. On plain TCP: framing chunks with `send`
//! (`MSG_MORE` while record data follows, so the kernel coalesces them with it), record sets
//! with `sendfile` straight from the page cache, never through a user-space buffer. Through
//! TLS, where the kernel cannot encrypt: the file ranges are read in bounded chunks and
//! written through the stream.

use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use shale_log::FileSlice;
use shale_protocol::{FetchFrame, FrameChunk};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, Interest, WriteHalf};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;

use crate::handlers::fetch::encode::FileRecords;

/// Largest count one `sendfile` call accepts on Linux.
const SENDFILE_CHUNK_BYTES_MAX: usize = 0x7fff_f000;

/// Most of a file range held in memory at once when it cannot go by `sendfile`.
pub(crate) const FILE_CHUNK_BYTES: usize = 64 * 1024;

/// The write half of a connection: responses go out through it, each flushed whole.
pub trait ResponseSink: AsyncWrite + Unpin + Send + 'static {
    /// Writes the whole frame, or fails; after a failure the frame is cut short and the
    /// connection must be closed.
    fn write_fetch_frame(
        &mut self,
        frame: FetchFrame<FileRecords>,
    ) -> impl Future<Output = io::Result<()>> + Send;
}

impl ResponseSink for OwnedWriteHalf {
    async fn write_fetch_frame(&mut self, frame: FetchFrame<FileRecords>) -> io::Result<()> {
        write_fetch_frame(self.as_ref(), frame).await
    }
}

/// A stream split by `tokio::io::split`, as a TLS stream is.
impl<S: AsyncRead + AsyncWrite + Send + 'static> ResponseSink for WriteHalf<S> {
    async fn write_fetch_frame(&mut self, frame: FetchFrame<FileRecords>) -> io::Result<()> {
        write_fetch_frame_buffered(self, frame).await
    }
}

/// The frame through an ordinary stream: framing as is, file ranges in chunks of at most
/// `FILE_CHUNK_BYTES`. The reads are positional reads on this task, as `sendfile`'s are in
/// the kernel: a fetched range is mostly in the page cache, just written or just read ahead.
pub(crate) async fn write_fetch_frame_buffered<W: AsyncWrite + Unpin>(
    writer: &mut W,
    frame: FetchFrame<FileRecords>,
) -> io::Result<()> {
    let mut chunk = Vec::new();
    for part in frame.chunks {
        match part {
            FrameChunk::Framing(bytes) => writer.write_all(&bytes).await?,
            FrameChunk::Records(records) => {
                for slice in records.slices() {
                    let mut position = slice.position;
                    let mut left = slice.len as usize;
                    while left > 0 {
                        let n = left.min(FILE_CHUNK_BYTES);
                        chunk.resize(n, 0);
                        // A file shorter than the range fails with UnexpectedEof: it was
                        // truncated after the read, and the frame already promised the bytes.
                        slice.file.read_exact_at(&mut chunk[..n], position)?;
                        writer.write_all(&chunk[..n]).await?;
                        position += n as u64;
                        left -= n;
                    }
                }
            }
        }
    }
    writer.flush().await
}

/// Writes the whole frame with `send` and `sendfile`, or fails; after a failure the frame is
/// cut short and the connection must be closed.
pub async fn write_fetch_frame(
    stream: &TcpStream,
    frame: FetchFrame<FileRecords>,
) -> io::Result<()> {
    let last = frame.chunks.len().saturating_sub(1);
    for (i, chunk) in frame.chunks.into_iter().enumerate() {
        match chunk {
            FrameChunk::Framing(bytes) => send_all(stream, &bytes, i < last).await?,
            FrameChunk::Records(records) => {
                for slice in records.slices() {
                    send_file(stream, slice).await?;
                }
            }
        }
    }
    Ok(())
}

async fn send_all(stream: &TcpStream, mut data: &[u8], more: bool) -> io::Result<()> {
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    let fd = stream.as_raw_fd();
    while !data.is_empty() {
        stream.writable().await?;
        let sent = stream.try_io(Interest::WRITABLE, || {
            // SAFETY: `data` is a live, initialised byte slice of `data.len()` bytes, and `fd`
            // is the socket that `stream` owns and keeps open for this call.
            let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), flags) };
            usize::try_from(n).map_err(|_| io::Error::last_os_error())
        });
        match sent {
            Ok(n) => data = &data[n..],
            Err(e) if retry(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn send_file(stream: &TcpStream, slice: &FileSlice) -> io::Result<()> {
    let socket = stream.as_raw_fd();
    let file = slice.file.as_raw_fd();
    let mut offset = libc::off_t::try_from(slice.position)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file position too large"))?;
    let mut left = slice.len as usize;
    while left > 0 {
        stream.writable().await?;
        let count = left.min(SENDFILE_CHUNK_BYTES_MAX);
        let sent = stream.try_io(Interest::WRITABLE, || {
            // SAFETY: `socket` and `file` are descriptors kept open by `stream` and by the
            // slice's `Arc<File>` for this call, and `offset` is a live `off_t` the kernel
            // advances by the bytes it sent.
            let n = unsafe { libc::sendfile(socket, file, &mut offset, count) };
            usize::try_from(n).map_err(|_| io::Error::last_os_error())
        });
        match sent {
            // The file ends before the slice does: it was truncated after the read, and
            // the frame already promised these bytes.
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "segment file shorter than the fetched range",
                ))
            }
            Ok(n) => left -= n,
            Err(e) if retry(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;

    use bytes::Bytes;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    use super::*;

    fn slice_of(file: &Arc<std::fs::File>, position: u64, len: u32) -> FileSlice {
        FileSlice {
            file: file.clone(),
            position,
            len,
        }
    }

    /// A frame of several framing chunks and file ranges (larger than a socket buffer)
    /// arrives byte for byte in order.
    #[tokio::test]
    async fn writes_framing_and_file_ranges_in_order() {
        let mut tmp = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        tmp.write_all(&data).unwrap();
        let file = Arc::new(tmp);
        let frame = FetchFrame {
            chunks: vec![
                FrameChunk::Framing(Bytes::from_static(b"head")),
                FrameChunk::Records(FileRecords::new(vec![
                    slice_of(&file, 10, 1_000_000),
                    slice_of(&file, 2_000_000, 900_000),
                ])),
                FrameChunk::Framing(Bytes::from_static(b"mid")),
                FrameChunk::Records(FileRecords::new(vec![slice_of(&file, 0, 5)])),
                FrameChunk::Framing(Bytes::from_static(b"tail")),
            ],
            len_bytes: 4 + 1_900_000 + 3 + 5 + 4,
        };
        let mut expected = b"head".to_vec();
        expected.extend_from_slice(&data[10..1_000_010]);
        expected.extend_from_slice(&data[2_000_000..2_900_000]);
        expected.extend_from_slice(b"mid");
        expected.extend_from_slice(&data[..5]);
        expected.extend_from_slice(b"tail");

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            got
        });
        let stream = TcpStream::connect(addr).await.unwrap();
        write_fetch_frame(&stream, frame).await.unwrap();
        drop(stream);
        let got = reader.await.unwrap();
        assert_eq!(got.len(), expected.len());
        assert!(got == expected);
    }

    /// Through an ordinary stream (as TLS is) the same frame arrives byte for byte, its file
    /// ranges longer than one chunk.
    #[tokio::test]
    async fn buffered_writes_carry_the_same_bytes() {
        let mut tmp = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
        tmp.write_all(&data).unwrap();
        let file = Arc::new(tmp);
        let frame = FetchFrame {
            chunks: vec![
                FrameChunk::Framing(Bytes::from_static(b"head")),
                FrameChunk::Records(FileRecords::new(vec![
                    slice_of(&file, 3, 3 * FILE_CHUNK_BYTES as u32 + 17),
                    slice_of(&file, 500_000, 1),
                ])),
                FrameChunk::Framing(Bytes::from_static(b"tail")),
            ],
            len_bytes: 4 + 3 * FILE_CHUNK_BYTES + 17 + 1 + 4,
        };
        let mut expected = b"head".to_vec();
        expected.extend_from_slice(&data[3..3 + 3 * FILE_CHUNK_BYTES + 17]);
        expected.push(data[500_000]);
        expected.extend_from_slice(b"tail");
        // A pipe smaller than one chunk: the writer waits for the reader as on a socket.
        let (near, mut far) = tokio::io::duplex(4096);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            far.read_to_end(&mut got).await.unwrap();
            got
        });
        let (_, mut writer) = tokio::io::split(near);
        writer.write_fetch_frame(frame).await.unwrap();
        drop(writer);
        let got = reader.await.unwrap();
        assert_eq!(got.len(), expected.len());
        assert!(got == expected);
    }

    #[tokio::test]
    async fn a_truncated_file_fails_the_buffered_frame() {
        let mut tmp = tempfile::tempfile().unwrap();
        tmp.write_all(&[7u8; 100]).unwrap();
        let file = Arc::new(tmp);
        let frame = FetchFrame {
            chunks: vec![
                FrameChunk::Framing(Bytes::from_static(b"head")),
                FrameChunk::Records(FileRecords::new(vec![slice_of(&file, 50, 200)])),
            ],
            len_bytes: 204,
        };
        let mut sink = Vec::new();
        let err = write_fetch_frame_buffered(&mut sink, frame)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(sink, b"head");
    }

    /// A range beyond the end of its (truncated) file fails instead of sending short.
    #[tokio::test]
    async fn a_truncated_file_fails_the_frame() {
        let mut tmp = tempfile::tempfile().unwrap();
        tmp.write_all(&[7u8; 100]).unwrap();
        let file = Arc::new(tmp);
        let frame = FetchFrame {
            chunks: vec![
                FrameChunk::Framing(Bytes::from_static(b"head")),
                FrameChunk::Records(FileRecords::new(vec![slice_of(&file, 50, 200)])),
            ],
            len_bytes: 204,
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got).await;
            got
        });
        let stream = TcpStream::connect(addr).await.unwrap();
        let err = write_fetch_frame(&stream, frame).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        drop(stream);
        assert_eq!(reader.await.unwrap().len(), 4 + 50);
    }
}
