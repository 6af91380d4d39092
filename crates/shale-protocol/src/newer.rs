//! Requests and responses in Shale's own types generated from Kafka 4.4's message specs
//! (`schema/gen_codec.py`): the versions kafka-protocol 0.18's types cannot carry, and
//! every version of the APIs the codec owns (`CODEC_OWNED_APIS`, the share-group APIs
//! whose 4.4 versions add fields kafka-protocol lacks).
//!
//! `Request` and `Response` are what the broker decodes and encodes: kafka-protocol's types
//! wherever they hold every field of the version, these types elsewhere.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::messages::{RequestKind, ResponseKind};

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

/// Declares one of the enums with its API keys, decoder and encoder: each variant is named
/// after its `ApiKey` and holds the generated message of `$module`.
macro_rules! newer_messages {
    (
        $(#[$enum_doc:meta])*
        $name:ident {
            $( $(#[$doc:meta])* $key:ident => $module:ident :: $ty:ident, )*
        }
    ) => {
        $(#[$enum_doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $( $(#[$doc])* $key($module::$ty), )*
        }

        impl $name {
            pub fn api_key(&self) -> i16 {
                match self {
                    $( $name::$key(_) => ApiKey::$key as i16, )*
                }
            }

            /// Decodes a body (already walked by the validator) of one of these messages.
            pub(crate) fn decode(
                api_key: i16,
                version: i16,
                body: Bytes,
            ) -> Result<Self, ProtocolError> {
                let unsupported = ProtocolError::UnsupportedVersion {
                    api_key,
                    api_version: version,
                };
                match ApiKey::try_from(api_key).map_err(|()| unsupported.clone())? {
                    $( ApiKey::$key => decode_body(
                        $module::VERSIONS,
                        api_key,
                        version,
                        body,
                        $module::$ty::decode,
                    )
                    .map($name::$key), )*
                    _ => Err(unsupported),
                }
            }

            /// Encodes the body at `version`.
            pub fn encode(&self, buf: &mut BytesMut, version: i16) -> Result<(), ProtocolError> {
                let mut e = Encoder::new(buf);
                match self {
                    $( $name::$key(message) => {
                        check_version($module::VERSIONS, self.api_key(), version)?;
                        message.encode(&mut e, version)
                    } )*
                }
            }

            /// The versions this crate's codec carries for `api_key`, if it has these types.
            #[cfg(test)]
            pub(crate) fn versions(api_key: i16) -> Option<(i16, i16)> {
                match ApiKey::try_from(api_key).ok()? {
                    $( ApiKey::$key => Some($module::VERSIONS), )*
                    _ => None,
                }
            }
        }
    };
}

newer_messages! {
    /// The requests decoded into Shale's types.
    NewerRequest {
        /// Version 6: topic ids instead of names.
        TxnOffsetCommit => txn_offset_commit_request::TxnOffsetCommitRequest,
        /// Version 2: each marker's transaction version (KIP-1228).
        WriteTxnMarkers => write_txn_markers_request::WriteTxnMarkersRequest,
        /// Version 5: the cluster id and node id the client expects (KIP-1242).
        ApiVersions => api_versions_request::ApiVersionsRequest,
        /// Every version (1-2); version 2 adds ShareAcquireMode and IsRenewAck
        /// (KIP-1206, KIP-1222).
        ShareFetch => share_fetch_request::ShareFetchRequest,
        /// Every version (1-2); version 2 adds IsRenewAck (KIP-1222).
        ShareAcknowledge => share_acknowledge_request::ShareAcknowledgeRequest,
        /// Every version (0-1); version 1 adds DeliveryCompleteCount (KIP-1226).
        WriteShareGroupState => write_share_group_state_request::WriteShareGroupStateRequest,
        /// Every version (0-1); version 1's response adds DeliveryCompleteCount (KIP-1226).
        ReadShareGroupStateSummary =>
            read_share_group_state_summary_request::ReadShareGroupStateSummaryRequest,
        /// Every version (0-1); version 1's response adds Lag (KIP-1226).
        DescribeShareGroupOffsets =>
            describe_share_group_offsets_request::DescribeShareGroupOffsetsRequest,
    }
}

newer_messages! {
    /// The responses encoded from Shale's types.
    NewerResponse {
        /// Version 6: topic ids instead of names.
        TxnOffsetCommit => txn_offset_commit_response::TxnOffsetCommitResponse,
        /// Version 3: an error message per group.
        DeleteGroups => delete_groups_response::DeleteGroupsResponse,
        /// Version 5: whether each log directory is cordoned.
        DescribeLogDirs => describe_log_dirs_response::DescribeLogDirsResponse,
        /// Every version (1-2).
        ShareFetch => share_fetch_response::ShareFetchResponse,
        /// Every version (1-2); version 2 adds AcquisitionLockTimeoutMs (KIP-1222).
        ShareAcknowledge => share_acknowledge_response::ShareAcknowledgeResponse,
        /// Every version (0-1).
        WriteShareGroupState => write_share_group_state_response::WriteShareGroupStateResponse,
        /// Every version (0-1); version 1 adds DeliveryCompleteCount (KIP-1226).
        ReadShareGroupStateSummary =>
            read_share_group_state_summary_response::ReadShareGroupStateSummaryResponse,
        /// Every version (0-1); version 1 adds Lag (KIP-1226).
        DescribeShareGroupOffsets =>
            describe_share_group_offsets_response::DescribeShareGroupOffsetsResponse,
    }
}
