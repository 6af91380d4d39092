//! Requests and responses at versions kafka-protocol 0.18's types cannot carry, in Shale's
//! own types generated from Kafka 4.4's message specs (`schema/gen_codec.py`).
//!
//! `Request` and `Response` are what the broker decodes and encodes: kafka-protocol's types
//! wherever they hold every field of the version, these types elsewhere.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

pub use crate::codec::{Decoder, Encoder};
pub use crate::codec_generated::*;
use crate::ProtocolError;

/// A decoded request.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Kafka(RequestKind),
    Newer(NewerRequest),
}

/// A response to encode.
// kafka-protocol's responses are the common case and are encoded as soon as they are made;
// boxing them to shrink the rare variant would cost an allocation per response.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Kafka(ResponseKind),
    Newer(NewerResponse),
}

/// The requests decoded into Shale's types: their newest versions add fields kafka-protocol's
/// structs lack.
#[derive(Debug, Clone, PartialEq)]
pub enum NewerRequest {
    /// Version 6: topic ids instead of names.
    TxnOffsetCommit(txn_offset_commit_request::TxnOffsetCommitRequest),
    /// Version 2: each marker's transaction version (KIP-1228).
    WriteTxnMarkers(write_txn_markers_request::WriteTxnMarkersRequest),
    /// Version 5: the cluster id and node id the client expects (KIP-1242).
    ApiVersions(api_versions_request::ApiVersionsRequest),
}

/// The responses encoded from Shale's types.
#[derive(Debug, Clone, PartialEq)]
pub enum NewerResponse {
    /// Version 6: topic ids instead of names.
    TxnOffsetCommit(txn_offset_commit_response::TxnOffsetCommitResponse),
    /// Version 3: an error message per group.
    DeleteGroups(delete_groups_response::DeleteGroupsResponse),
    /// Version 5: whether each log directory is cordoned.
    DescribeLogDirs(describe_log_dirs_response::DescribeLogDirsResponse),
}

/// Decodes a whole body, refusing a version outside the message's.
fn decode_body<T>(
    versions: (i16, i16),
    api_key: i16,
    version: i16,
    body: Bytes,
    decode: impl FnOnce(&mut Decoder, i16) -> Result<T, ProtocolError>,
) -> Result<T, ProtocolError> {
    if version < versions.0 || version > versions.1 {
        return Err(ProtocolError::UnsupportedVersion {
            api_key,
            api_version: version,
        });
    }
    let mut decoder = Decoder::new(body);
    // Trailing bytes after the last field are tolerated, as Kafka tolerates them.
    decode(&mut decoder, version)
}

fn check_version(versions: (i16, i16), api_key: i16, version: i16) -> Result<(), ProtocolError> {
    if version < versions.0 || version > versions.1 {
        return Err(ProtocolError::Encode(format!(
            "api key {api_key} has no version {version}"
        )));
    }
    Ok(())
}

impl NewerRequest {
    pub fn api_key(&self) -> i16 {
        match self {
            NewerRequest::TxnOffsetCommit(_) => ApiKey::TxnOffsetCommit as i16,
            NewerRequest::WriteTxnMarkers(_) => ApiKey::WriteTxnMarkers as i16,
            NewerRequest::ApiVersions(_) => ApiKey::ApiVersions as i16,
        }
    }

    /// Decodes a body (already walked by the validator) of one of these requests.
    pub(crate) fn decode(api_key: i16, version: i16, body: Bytes) -> Result<Self, ProtocolError> {
        let unsupported = ProtocolError::UnsupportedVersion {
            api_key,
            api_version: version,
        };
        match ApiKey::try_from(api_key).map_err(|()| unsupported.clone())? {
            ApiKey::TxnOffsetCommit => {
                use txn_offset_commit_request as m;
                decode_body(
                    m::VERSIONS,
                    api_key,
                    version,
                    body,
                    m::TxnOffsetCommitRequest::decode,
                )
                .map(NewerRequest::TxnOffsetCommit)
            }
            ApiKey::WriteTxnMarkers => {
                use write_txn_markers_request as m;
                decode_body(
                    m::VERSIONS,
                    api_key,
                    version,
                    body,
                    m::WriteTxnMarkersRequest::decode,
                )
                .map(NewerRequest::WriteTxnMarkers)
            }
            ApiKey::ApiVersions => {
                use api_versions_request as m;
                decode_body(
                    m::VERSIONS,
                    api_key,
                    version,
                    body,
                    m::ApiVersionsRequest::decode,
                )
                .map(NewerRequest::ApiVersions)
            }
            _ => Err(unsupported),
        }
    }

    /// Encodes the body at `version`.
    pub fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), ProtocolError> {
        let mut e = Encoder::new(buf);
        match self {
            NewerRequest::TxnOffsetCommit(r) => {
                check_version(txn_offset_commit_request::VERSIONS, self.api_key(), version)?;
                r.encode(&mut e, version)
            }
            NewerRequest::WriteTxnMarkers(r) => {
                check_version(write_txn_markers_request::VERSIONS, self.api_key(), version)?;
                r.encode(&mut e, version)
            }
            NewerRequest::ApiVersions(r) => {
                check_version(api_versions_request::VERSIONS, self.api_key(), version)?;
                r.encode(&mut e, version)
            }
        }
    }
}

impl NewerResponse {
    pub fn api_key(&self) -> i16 {
        match self {
            NewerResponse::TxnOffsetCommit(_) => ApiKey::TxnOffsetCommit as i16,
            NewerResponse::DeleteGroups(_) => ApiKey::DeleteGroups as i16,
            NewerResponse::DescribeLogDirs(_) => ApiKey::DescribeLogDirs as i16,
        }
    }

    /// Decodes a body (already walked by the validator) of one of these responses.
    pub(crate) fn decode(api_key: i16, version: i16, body: Bytes) -> Result<Self, ProtocolError> {
        let unsupported = ProtocolError::UnsupportedVersion {
            api_key,
            api_version: version,
        };
        match ApiKey::try_from(api_key).map_err(|()| unsupported.clone())? {
            ApiKey::TxnOffsetCommit => {
                use txn_offset_commit_response as m;
                decode_body(
                    m::VERSIONS,
                    api_key,
                    version,
                    body,
                    m::TxnOffsetCommitResponse::decode,
                )
                .map(NewerResponse::TxnOffsetCommit)
            }
            ApiKey::DeleteGroups => {
                use delete_groups_response as m;
                decode_body(
                    m::VERSIONS,
                    api_key,
                    version,
                    body,
                    m::DeleteGroupsResponse::decode,
                )
                .map(NewerResponse::DeleteGroups)
            }
            ApiKey::DescribeLogDirs => {
                use describe_log_dirs_response as m;
                decode_body(
                    m::VERSIONS,
                    api_key,
                    version,
                    body,
                    m::DescribeLogDirsResponse::decode,
                )
                .map(NewerResponse::DescribeLogDirs)
            }
            _ => Err(unsupported),
        }
    }

    /// Encodes the body at `version`.
    pub fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), ProtocolError> {
        let mut e = Encoder::new(buf);
        match self {
            NewerResponse::TxnOffsetCommit(r) => {
                check_version(
                    txn_offset_commit_response::VERSIONS,
                    self.api_key(),
                    version,
                )?;
                r.encode(&mut e, version)
            }
            NewerResponse::DeleteGroups(r) => {
                check_version(delete_groups_response::VERSIONS, self.api_key(), version)?;
                r.encode(&mut e, version)
            }
            NewerResponse::DescribeLogDirs(r) => {
                check_version(
                    describe_log_dirs_response::VERSIONS,
                    self.api_key(),
                    version,
                )?;
                r.encode(&mut e, version)
            }
        }
    }
}
