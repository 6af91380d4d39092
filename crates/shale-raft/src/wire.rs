//! Messages exchanged on the controller listener and their TCP framing.
//!
//! A frame is a big-endian u32 length followed by that many bytes: the wire version
//! ([`WIRE_VERSION`], one byte) and then the message in the versioned encoding (`encoding`).
//! Lengths above [`MAX_FRAME_BYTES`] are refused before anything is allocated, and the payload
//! is read incrementally, so a peer cannot make us allocate more than it actually sends. Every
//! node of a cluster runs the same build, so there is one wire version today; a frame of
//! another version is refused (a `Decode` error naming both versions, which the server also
//! answers with before closing), which leaves a later change room to negotiate.

use std::time::Duration;

use bytes::Bytes;
use openraft::error::{InstallSnapshotError, RaftError as OpenRaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::encoding::{
    self, decode_struct, encode_variant, get, put_bytes, Decode, DecodeError, Encode, Reader,
};
use crate::types::{NodeId, TypeConfig};

/// The version of the frames this build sends and accepts.
pub const WIRE_VERSION: u8 = 1;

/// Largest frame accepted or sent.
pub const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// Sent first on every connection so that stray clients (or a Kafka client pointed at the wrong
/// port) are rejected early.
pub const MAGIC: u32 = 0x5348_5246; // "SHRF"

/// The service a connection on the controller listener asks for, sent right after [`MAGIC`]:
/// Raft between voters and observers' fetches.
pub const SERVICE_RAFT: u8 = 0;
/// Controller requests forwarded to the active controller (served by the metadata layer).
pub const SERVICE_CONTROLLER: u8 = 1;
/// Longest cluster id accepted in a preamble.
const CLUSTER_ID_BYTES_MAX: usize = 255;

/// The connection preamble: `[MAGIC u32 BE][service u8][cluster id length u8][cluster id]`.
/// One controller port serves every service; the cluster id keeps nodes of different clusters
/// from replicating into each other.
pub fn encode_preamble(service: u8, cluster_id: &str) -> Result<Vec<u8>, FrameError> {
    let id = cluster_id.as_bytes();
    if id.len() > CLUSTER_ID_BYTES_MAX {
        return Err(FrameError::Decode(format!(
            "cluster id of {} bytes is too long",
            id.len()
        )));
    }
    let mut out = Vec::with_capacity(6 + id.len());
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.push(service);
    out.push(id.len() as u8);
    out.extend_from_slice(id);
    Ok(out)
}

/// Reads a preamble; returns the service and the cluster id.
pub async fn read_preamble<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<(u8, String), FrameError> {
    let magic = reader.read_u32().await?;
    if magic != MAGIC {
        return Err(FrameError::Decode(format!(
            "bad connection magic {magic:#x}"
        )));
    }
    let service = reader.read_u8().await?;
    let len = reader.read_u8().await? as usize;
    let mut id = vec![0u8; len];
    reader.read_exact(&mut id).await?;
    let id =
        String::from_utf8(id).map_err(|_| FrameError::Decode("cluster id is not UTF-8".into()))?;
    Ok((service, id))
}

#[derive(Debug)]
pub enum Request {
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<NodeId>),
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
    /// An observer asks for committed entries from `from_index` on.
    Fetch(FetchRequest),
}

#[derive(Debug)]
pub enum Response {
    AppendEntries(Result<AppendEntriesResponse<NodeId>, OpenRaftError<NodeId>>),
    Vote(Result<VoteResponse<NodeId>, OpenRaftError<NodeId>>),
    InstallSnapshot(
        Result<InstallSnapshotResponse<NodeId>, OpenRaftError<NodeId, InstallSnapshotError>>,
    ),
    Fetch(FetchResponse),
    /// The request could not be decoded or served.
    Error(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// The observer's node id, so the leader can report it (DescribeQuorum).
    pub observer_id: u64,
    pub from_index: u64,
    pub max_wait_ms: u64,
    pub max_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// The responding voter's view of the leader, so the observer can move to it.
    pub leader_id: Option<NodeId>,
    pub body: FetchBody,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchBody {
    /// Committed batches in order; `next_index` is where the next fetch starts (it can move past
    /// entries that carry no application data).
    Entries {
        batches: Vec<(u64, Vec<Bytes>)>,
        next_index: u64,
    },
    /// `from_index` was purged: restore this snapshot and continue after `last_index`.
    Snapshot { last_index: u64, data: Vec<u8> },
}

crate::versioned_enum!(Request {
    0 => AppendEntries(request),
    1 => Vote(request),
    2 => InstallSnapshot(request),
    3 => Fetch(request),
});

crate::versioned_enum!(Response {
    0 => AppendEntries(result),
    1 => Vote(result),
    2 => InstallSnapshot(result),
    3 => Fetch(response),
    4 => Error(message),
});

crate::versioned_struct!(FetchRequest {
    observer_id,
    from_index,
    max_wait_ms,
    max_bytes
});

crate::versioned_struct!(FetchResponse { leader_id, body });

impl Encode for FetchBody {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            FetchBody::Entries {
                batches,
                next_index,
            } => encode_variant(out, 0, |out| {
                batches.encode(out);
                next_index.encode(out);
            }),
            FetchBody::Snapshot { last_index, data } => encode_variant(out, 1, |out| {
                last_index.encode(out);
                put_bytes(out, data);
            }),
        }
    }
}

impl Decode for FetchBody {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match reader.varint()? {
            0 => decode_struct(reader, "FetchBody::Entries", |r| {
                Ok(FetchBody::Entries {
                    batches: get(r)?,
                    next_index: get(r)?,
                })
            }),
            1 => decode_struct(reader, "FetchBody::Snapshot", |r| {
                Ok(FetchBody::Snapshot {
                    last_index: get(r)?,
                    data: r.byte_vec()?,
                })
            }),
            kind => Err(DecodeError::UnknownKind {
                type_name: "FetchBody",
                kind,
            }),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("frame of {0} bytes exceeds the limit")]
    TooLarge(usize),
    #[error("undecodable frame: {0}")]
    Decode(String),
    #[error("timed out")]
    Timeout,
}

pub async fn write_frame<W, T>(writer: &mut W, value: &T) -> Result<(), FrameError>
where
    W: AsyncWrite + Unpin,
    T: Encode,
{
    let mut payload = vec![WIRE_VERSION];
    value.encode(&mut payload);
    if payload.len() > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(payload.len()));
    }
    let mut buf = Vec::with_capacity(4 + payload.len());
    buf.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    buf.extend_from_slice(&payload);
    writer.write_all(&buf).await?;
    writer.flush().await?;
    Ok(())
}

pub async fn read_frame<R, T>(reader: &mut R) -> Result<T, FrameError>
where
    R: AsyncRead + Unpin,
    T: Decode,
{
    let len = reader.read_u32().await? as usize;
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(len));
    }
    let mut payload = Vec::new();
    let read = reader.take(len as u64).read_to_end(&mut payload).await?;
    if read != len {
        return Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    decode_payload(&payload)
}

/// Decodes a frame's payload: its version byte, then one message filling the rest.
pub fn decode_payload<T: Decode>(payload: &[u8]) -> Result<T, FrameError> {
    let (&version, message) = payload
        .split_first()
        .ok_or_else(|| FrameError::Decode("empty frame".into()))?;
    if version != WIRE_VERSION {
        return Err(FrameError::Decode(format!(
            "frame of wire version {version}, this node speaks version {WIRE_VERSION}"
        )));
    }
    encoding::from_slice(message).map_err(|e| FrameError::Decode(e.to_string()))
}

pub async fn with_timeout<T>(
    timeout: Duration,
    fut: impl std::future::Future<Output = Result<T, FrameError>>,
) -> Result<T, FrameError> {
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(FrameError::Timeout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::error::Fatal;

    #[tokio::test]
    async fn frames_round_trip_including_openraft_errors() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let response = Response::Vote(Err(OpenRaftError::Fatal(Fatal::Stopped)));
        write_frame(&mut a, &response).await.unwrap();
        let decoded: Response = read_frame(&mut b).await.unwrap();
        assert!(matches!(
            decoded,
            Response::Vote(Err(OpenRaftError::Fatal(Fatal::Stopped)))
        ));
    }

    #[tokio::test]
    async fn preambles_round_trip_and_garbage_is_refused() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        a.write_all(&encode_preamble(SERVICE_CONTROLLER, "MkU3OEVBNTcwNTJENDM2Qk").unwrap())
            .await
            .unwrap();
        let (service, id) = read_preamble(&mut b).await.unwrap();
        assert_eq!(service, SERVICE_CONTROLLER);
        assert_eq!(id, "MkU3OEVBNTcwNTJENDM2Qk");

        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        a.write_all(b"\x00\x00\x00\x10GET / HTTP/1.1\r\n")
            .await
            .unwrap();
        assert!(matches!(
            read_preamble(&mut b).await,
            Err(FrameError::Decode(_))
        ));
        assert!(encode_preamble(SERVICE_RAFT, &"x".repeat(300)).is_err());
    }

    #[tokio::test]
    async fn frames_carry_their_version_and_other_versions_are_refused() {
        let fetch = FetchResponse {
            leader_id: Some(3),
            body: FetchBody::Entries {
                batches: vec![(4, vec![Bytes::from_static(b"r")])],
                next_index: 5,
            },
        };
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        write_frame(&mut a, &Response::Fetch(fetch.clone()))
            .await
            .unwrap();
        let mut raw = vec![0u8; 5];
        b.read_exact(&mut raw).await.unwrap();
        assert_eq!(raw[4], WIRE_VERSION);

        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        write_frame(&mut a, &Response::Fetch(fetch.clone()))
            .await
            .unwrap();
        let Response::Fetch(decoded) = read_frame::<_, Response>(&mut b).await.unwrap() else {
            panic!("not a fetch response")
        };
        assert_eq!(decoded, fetch);

        let mut payload = vec![WIRE_VERSION + 1];
        Response::Error("x".into()).encode(&mut payload);
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        a.write_all(&(payload.len() as u32).to_be_bytes())
            .await
            .unwrap();
        a.write_all(&payload).await.unwrap();
        let Err(FrameError::Decode(reason)) = read_frame::<_, Response>(&mut b).await else {
            panic!("a frame of another version was accepted")
        };
        assert!(reason.contains("wire version 2"), "{reason}");
    }

    #[tokio::test]
    async fn oversized_and_garbage_frames_are_errors() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        a.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
        assert!(matches!(
            read_frame::<_, Request>(&mut b).await,
            Err(FrameError::TooLarge(_))
        ));

        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        a.write_all(&8u32.to_be_bytes()).await.unwrap();
        a.write_all(&[0xee; 8]).await.unwrap();
        assert!(matches!(
            read_frame::<_, Request>(&mut b).await,
            Err(FrameError::Decode(_))
        ));

        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        a.write_all(&100u32.to_be_bytes()).await.unwrap();
        a.write_all(&[0; 10]).await.unwrap();
        drop(a);
        assert!(matches!(
            read_frame::<_, Request>(&mut b).await,
            Err(FrameError::Io(_))
        ));
    }
}
