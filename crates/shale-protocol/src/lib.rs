//! shale-protocol: Kafka wire framing, request headers, bounded request decoding and
//! response encoding on top of `kafka-protocol`.
//!
//! `kafka-protocol` 0.18 is generated from Kafka 4.1's specs; Shale serves Kafka 4.4's
//! versions. Where kafka-protocol's types cannot carry a version, a codec generated from
//! Kafka 4.4's specs (`schema/gen_codec.py`) decodes and encodes it (see `routes.rs`); the
//! APIs that codec owns (`CODEC_OWNED_APIS`: ShareFetch, ShareAcknowledge,
//! WriteShareGroupState, ReadShareGroupStateSummary, DescribeShareGroupOffsets) travel
//! through it at every version, as `NewerRequest` / `NewerResponse`.
//!
//! `kafka-protocol` trusts declared lengths (it reserves an array's declared element
//! count before reading a single element), so every request body is first walked by a
//! schema-driven validator generated from Kafka's own message specs; only bodies whose
//! every length fits in the bytes received reach `kafka-protocol`'s decoder.

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod codec;
#[rustfmt::skip]
mod codec_generated;
mod convert;
mod error;
mod fetch_frame;
mod frame;
mod header;
mod reader;
mod request;
mod response;
mod routes;
mod schema;
#[rustfmt::skip]
mod schema_generated;
mod validate;

pub mod newer;

#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;

#[cfg(test)]
mod codec_tests;
#[cfg(test)]
mod fetch_frame_tests;
#[cfg(test)]
mod fuzz_regression_tests;
#[cfg(test)]
mod proptest_tests;
#[cfg(test)]
mod response_roundtrip_tests;
#[cfg(test)]
mod roundtrip_tests;
#[cfg(any(test, feature = "fuzzing"))]
mod schema_testgen;
#[cfg(test)]
mod share_codec_tests;
#[cfg(test)]
mod validate_tests;

pub use error::ProtocolError;
pub use fetch_frame::{
    encode_fetch_frame, FetchFrame, FrameChunk, RecordSet, FETCH_FRAME_VERSION_MAX,
    FETCH_FRAME_VERSION_MIN,
};
pub use frame::{frame_len, FRAME_LEN_PREFIX_BYTES};
pub use header::{parse_request_header, RequestHeader};
pub use newer::{NewerRequest, NewerResponse, Request, Response};
pub use request::{
    decode_any_request, decode_request, encode_newer_request, encode_request,
    max_supported_request_version, min_supported_request_version,
};
pub use response::{
    decode_any_response, decode_response, encode_any_response, encode_api_versions_fallback,
    encode_response, UNSUPPORTED_VERSION_ERROR_CODE,
};
pub use validate::{validate_request_body, validate_response_body};

pub use kafka_protocol;
