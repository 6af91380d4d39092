//! Entry points shared by the cargo-fuzz targets (fuzz/) and the replay of their
//! crash regressions (tests/fuzz_regressions/). Each must return without panicking,
//! whatever the input.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;

use crate::routes::{request_versions, response_versions};
use crate::schema_testgen::{random_body, random_response_body, Rng};
use crate::{
    decode_any_request, decode_any_response, parse_request_header, validate_request_body,
    validate_response_body, Request, RequestHeader, Response,
};

/// The fuzz targets by name, as the regression replay finds them.
pub const TARGETS: &[&str] = &[
    "frame",
    "any_request",
    "structured",
    "structured_response",
    "share_structured",
    "share_structured_response",
    "produce",
    "fetch",
    "metadata",
    "api_versions",
];

/// Runs the fuzz target called `target`; unknown names do nothing.
pub fn run(target: &str, data: &[u8]) {
    match target {
        "frame" => frame(data),
        "any_request" => any_request(data),
        "structured" => structured(data),
        "structured_response" => structured_response(data),
        "share_structured" => share_structured(data),
        "share_structured_response" => share_structured_response(data),
        "produce" => request(ApiKey::Produce as i16, data),
        "fetch" => request(ApiKey::Fetch as i16, data),
        "metadata" => request(ApiKey::Metadata as i16, data),
        "api_versions" => request(ApiKey::ApiVersions as i16, data),
        _ => {}
    }
}

/// A whole frame after its length prefix: header, then body.
pub fn frame(data: &[u8]) {
    let frame = Bytes::copy_from_slice(data);
    if let Ok((header, body)) = parse_request_header(&frame) {
        decode_and_check(&header, body);
    }
}

/// The first byte picks the version; the rest is the body.
pub fn request(api_key: i16, data: &[u8]) {
    let Some((&version, body)) = data.split_first() else {
        return;
    };
    decode_and_check(
        &header(api_key, i16::from(version as i8)),
        Bytes::copy_from_slice(body),
    );
}

/// The first two bytes pick the API key and version; the rest is the body.
pub fn any_request(data: &[u8]) {
    let [api_key, version, body @ ..] = data else {
        return;
    };
    request_with(i16::from(*api_key), i16::from(*version as i8), body);
}

fn request_with(api_key: i16, api_version: i16, body: &[u8]) {
    decode_and_check(&header(api_key, api_version), Bytes::copy_from_slice(body));
}

/// Kafka 4.4's share-group APIs (KIP-932), which the share targets draw from.
pub const SHARE_APIS: [ApiKey; 12] = [
    ApiKey::ShareGroupHeartbeat,
    ApiKey::ShareGroupDescribe,
    ApiKey::ShareFetch,
    ApiKey::ShareAcknowledge,
    ApiKey::InitializeShareGroupState,
    ApiKey::ReadShareGroupState,
    ApiKey::WriteShareGroupState,
    ApiKey::DeleteShareGroupState,
    ApiKey::ReadShareGroupStateSummary,
    ApiKey::DescribeShareGroupOffsets,
    ApiKey::AlterShareGroupOffsets,
    ApiKey::DeleteShareGroupOffsets,
];

/// A valid body generated from the schema (API, version and seed from the first
/// bytes), then damaged by the remaining bytes taken three at a time: overwrite a
/// byte, cut the body, plant a huge length, or insert a byte.
pub fn structured(data: &[u8]) {
    let keys: Vec<ApiKey> = ApiKey::iter().collect();
    if let Some((api_key, api_version, body)) = structured_body(&keys, data, Direction::Request) {
        request_with(api_key, api_version, &body);
    }
}

/// `structured` over the share-group APIs only, most of them decoded by Shale's codec.
pub fn share_structured(data: &[u8]) {
    if let Some((api_key, api_version, body)) =
        structured_body(&SHARE_APIS, data, Direction::Request)
    {
        request_with(api_key, api_version, &body);
    }
}

/// `structured` for responses, as Shale receives them from peers: the damaged body
/// goes through `decode_any_response` behind a response header.
pub fn structured_response(data: &[u8]) {
    let keys: Vec<ApiKey> = ApiKey::iter().collect();
    damaged_response(&keys, data);
}

/// `structured_response` over the share-group APIs only.
pub fn share_structured_response(data: &[u8]) {
    damaged_response(&SHARE_APIS, data);
}

fn damaged_response(keys: &[ApiKey], data: &[u8]) {
    let Some((api_key, api_version, body)) = structured_body(keys, data, Direction::Response)
    else {
        return;
    };
    let Ok(key) = ApiKey::try_from(api_key) else {
        return;
    };
    let mut frame = 42i32.to_be_bytes().to_vec();
    if key != ApiKey::ApiVersions && key.response_header_version(api_version) >= 1 {
        frame.push(0);
    }
    frame.extend_from_slice(&body);
    let Ok((_, response)) = decode_any_response(api_key, api_version, Bytes::from(frame)) else {
        return;
    };
    let mut encoded = BytesMut::new();
    let reencoded = match &response {
        Response::Kafka(response) => response.encode(&mut encoded, api_version).is_ok(),
        Response::Newer(response) => response.encode(&mut encoded, api_version).is_ok(),
    };
    if reencoded {
        if let Err(error) = validate_response_body(api_key, api_version, &encoded) {
            panic!("re-encoded response fails validation: {error}");
        }
    }
}

/// Which half of the schema table `structured_body` draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Request,
    Response,
}

/// The API key (one of `keys`), version and damaged body that `structured` decodes.
pub fn structured_body(
    keys: &[ApiKey],
    data: &[u8],
    direction: Direction,
) -> Option<(i16, i16, Vec<u8>)> {
    let [api_pick, version_pick, seed_high, seed_low, flags, edits @ ..] = data else {
        return None;
    };
    let &key = keys.get(usize::from(*api_pick) % keys.len().max(1))?;
    let range = match direction {
        Direction::Request => request_versions(key as i16)?,
        Direction::Response => response_versions(key as i16)?,
    };
    let span = (range.1 - range.0 + 1) as usize;
    let version = range.0 + (usize::from(*version_pick) % span) as i16;
    let mut rng = Rng::new(u64::from(u16::from_be_bytes([*seed_high, *seed_low])));
    let tagged = flags & 1 == 1;
    let mut body = match direction {
        Direction::Request => random_body(key as i16, version, tagged, &mut rng),
        Direction::Response => random_response_body(key as i16, version, tagged, &mut rng),
    };
    for edit in edits.chunks_exact(3) {
        let at = usize::from(edit[1]) * body.len() / 256;
        match edit[0] % 4 {
            0 => {
                if let Some(byte) = body.get_mut(at) {
                    *byte = edit[2];
                }
            }
            1 => body.truncate(at),
            2 => {
                let huge: &[u8] = if edit[2] & 1 == 0 {
                    &[0x7f, 0xff, 0xff, 0xff]
                } else {
                    &[0xff, 0xff, 0xff, 0xff, 0x07]
                };
                for (offset, byte) in huge.iter().enumerate() {
                    if let Some(slot) = body.get_mut(at + offset) {
                        *slot = *byte;
                    }
                }
            }
            _ => body.insert(at.min(body.len()), edit[2]),
        }
    }
    Some((key as i16, version, body))
}

fn header(api_key: i16, api_version: i16) -> RequestHeader {
    RequestHeader {
        api_key,
        api_version,
        correlation_id: 0,
        client_id: None,
        header_version: 1,
    }
}

/// Decoding must not panic; whatever decodes and re-encodes must validate again, or
/// the validator and the decoder (kafka-protocol's or Shale's) disagree about the format.
fn decode_and_check(header: &RequestHeader, body: Bytes) {
    let Ok(request) = decode_any_request(header, body) else {
        return;
    };
    let mut encoded = BytesMut::new();
    let reencoded = match &request {
        Request::Kafka(request) => request.encode(&mut encoded, header.api_version).is_ok(),
        Request::Newer(request) => request.encode(&mut encoded, header.api_version).is_ok(),
    };
    if reencoded {
        if let Err(error) = validate_request_body(header.api_key, header.api_version, &encoded) {
            panic!("re-encoded request fails validation: {error}");
        }
    }
}
