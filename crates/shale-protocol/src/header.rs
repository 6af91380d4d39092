use bytes::Bytes;
use kafka_protocol::messages::ApiKey;

use crate::reader::Reader;
use crate::routes::request_route;
use crate::ProtocolError;

/// The request header of one frame. `header_version` is derived from the API key and
/// version (0: no client id, 1: client id, 2: client id and tagged fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
    pub header_version: i16,
}

/// The api key, api version and correlation id come first in every header version.
const FIXED_HEADER_BYTES: usize = 8;

/// Splits a frame (without its length prefix) into its request header and the body.
/// The body is a zero-copy slice of `frame`.
///
/// An unknown API key, or a version no codec of this crate decodes, yields
/// [`ProtocolError::UnsupportedApi`] carrying the correlation id, so the broker can
/// still answer (KIP-511: ApiVersions falls back to a v0 response).
pub fn parse_request_header(frame: &Bytes) -> Result<(RequestHeader, Bytes), ProtocolError> {
    let mut reader = Reader::new(frame);
    if frame.len() < FIXED_HEADER_BYTES {
        return Err(ProtocolError::Malformed(format!(
            "request header needs {FIXED_HEADER_BYTES} bytes, frame has {}",
            frame.len()
        )));
    }
    let api_key = reader.i16("api key")?;
    let api_version = reader.i16("api version")?;
    let correlation_id = reader.i32("correlation id")?;
    let unsupported = ProtocolError::UnsupportedApi {
        api_key,
        api_version,
        correlation_id,
    };
    let Ok(key) = ApiKey::try_from(api_key) else {
        return Err(unsupported);
    };
    if request_route(api_key, api_version).is_none() {
        return Err(unsupported);
    }
    let header_version = key.request_header_version(api_version);
    let client_id = if header_version >= 1 {
        // The client id stays a classic (int16-length) string even in header v2.
        let len = reader.i16("client id length")?;
        match len {
            -1 => None,
            len if len >= 0 => {
                let raw = reader.take(len as usize, "client id")?;
                // Kafka decodes client ids leniently, replacing invalid UTF-8.
                Some(String::from_utf8_lossy(raw).into_owned())
            }
            len => {
                return Err(ProtocolError::Malformed(format!("client id length {len}")));
            }
        }
    } else {
        None
    };
    if header_version >= 2 {
        skip_tagged_fields(&mut reader, "request header")?;
    }
    let header = RequestHeader {
        api_key,
        api_version,
        correlation_id,
        client_id,
        header_version,
    };
    Ok((header, frame.slice(reader.position()..)))
}

/// The request header defines no tagged fields, so every one is skipped.
pub(crate) fn skip_tagged_fields(reader: &mut Reader<'_>, what: &str) -> Result<(), ProtocolError> {
    let count = reader.unsigned_varint(what)?;
    for _ in 0..count {
        reader.unsigned_varint(what)?;
        let size = reader.unsigned_varint(what)?;
        reader.skip(size as usize, what)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(parts: &[&[u8]]) -> Bytes {
        Bytes::from(parts.concat())
    }

    #[test]
    fn header_v1_with_null_client_id() {
        // Header v0 (no client id) belonged to ControlledShutdown v0 only, which Kafka 4
        // removed: every request API kafka-protocol 0.18 knows uses header v1 or v2.
        let bytes = frame(&[&[0, 18], &[0, 0], &[0, 0, 0, 7], &[0xff, 0xff], b"rest"]);
        let (header, body) = parse_request_header(&bytes).unwrap();
        assert_eq!(header.api_key, 18);
        assert_eq!(header.correlation_id, 7);
        assert_eq!(header.header_version, 1);
        assert_eq!(header.client_id, None);
        assert_eq!(&body[..], b"rest");
    }

    #[test]
    fn header_v1_reads_client_id() {
        let bytes = frame(&[&[0, 3], &[0, 1], &[0, 0, 1, 0], &[0, 3], b"kcat", &[9]]);
        let (header, body) = parse_request_header(&bytes).unwrap();
        assert_eq!(header.header_version, 1);
        assert_eq!(header.client_id.as_deref(), Some("kca"));
        assert_eq!(&body[..], b"t\x09");
    }

    #[test]
    fn header_v2_skips_unknown_tagged_fields() {
        // Metadata v12 is flexible: header v2.
        let bytes = frame(&[
            &[0, 3],
            &[0, 12],
            &[0, 0, 0, 42],
            &[0, 2],
            b"id",
            &[2, 5, 1, 0xaa, 0x80, 0x01, 2, 0xbb, 0xcc],
            b"body",
        ]);
        let (header, body) = parse_request_header(&bytes).unwrap();
        assert_eq!(header.header_version, 2);
        assert_eq!(header.client_id.as_deref(), Some("id"));
        assert_eq!(header.correlation_id, 42);
        assert_eq!(&body[..], b"body");
    }

    #[test]
    fn header_body_is_zero_copy() {
        let bytes = frame(&[&[0, 3], &[0, 1], &[0, 0, 1, 0], &[0, 0], b"body"]);
        let (_, body) = parse_request_header(&bytes).unwrap();
        assert_eq!(body.as_ptr(), bytes[bytes.len() - 4..].as_ptr());
    }

    #[test]
    fn short_frames_are_malformed() {
        for len in 0..FIXED_HEADER_BYTES {
            let bytes = Bytes::from(vec![0u8; len]);
            assert!(matches!(
                parse_request_header(&bytes),
                Err(ProtocolError::Malformed(_))
            ));
        }
    }

    #[test]
    fn truncated_client_id_is_malformed() {
        let bytes = frame(&[&[0, 3], &[0, 1], &[0, 0, 1, 0], &[0x7f, 0xff], b"ab"]);
        assert!(matches!(
            parse_request_header(&bytes),
            Err(ProtocolError::Malformed(_))
        ));
        let bytes = frame(&[&[0, 3], &[0, 1], &[0, 0, 1, 0], &[0xff, 0xfe]]);
        assert!(matches!(
            parse_request_header(&bytes),
            Err(ProtocolError::Malformed(_))
        ));
    }

    #[test]
    fn huge_tagged_field_counts_are_bounded() {
        let bytes = frame(&[
            &[0, 3],
            &[0, 12],
            &[0, 0, 0, 1],
            &[0xff, 0xff],
            &[0xff, 0xff, 0xff, 0xff, 0x0f],
        ]);
        assert!(matches!(
            parse_request_header(&bytes),
            Err(ProtocolError::Malformed(_))
        ));
        let bytes = frame(&[
            &[0, 3],
            &[0, 12],
            &[0, 0, 0, 1],
            &[0xff, 0xff],
            &[1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f],
        ]);
        assert!(matches!(
            parse_request_header(&bytes),
            Err(ProtocolError::Malformed(_))
        ));
    }

    #[test]
    fn unknown_api_keys_and_versions_keep_the_correlation_id() {
        let bytes = frame(&[&[0x7f, 0], &[0, 0], &[0, 0, 0, 9]]);
        assert_eq!(
            parse_request_header(&bytes),
            Err(ProtocolError::UnsupportedApi {
                api_key: 0x7f00,
                api_version: 0,
                correlation_id: 9
            })
        );
        // ApiVersions v99: the broker answers with the v0 fallback.
        let bytes = frame(&[&[0, 18], &[0, 99], &[0, 0, 0, 5], &[0, 0], &[0]]);
        assert_eq!(
            parse_request_header(&bytes),
            Err(ProtocolError::UnsupportedApi {
                api_key: 18,
                api_version: 99,
                correlation_id: 5
            })
        );
        let bytes = frame(&[&[0, 0], &[0xff, 0xff], &[0, 0, 0, 5]]);
        assert!(matches!(
            parse_request_header(&bytes),
            Err(ProtocolError::UnsupportedApi { .. })
        ));
        // OffsetCommit v11 does not exist in Kafka 4.4.
        let bytes = frame(&[&[0, 8], &[0, 11], &[0, 0, 0, 5], &[0, 0], &[0]]);
        assert_eq!(
            parse_request_header(&bytes),
            Err(ProtocolError::UnsupportedApi {
                api_key: 8,
                api_version: 11,
                correlation_id: 5
            })
        );
    }
}
