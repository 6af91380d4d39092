//! Which codec carries each request and response version: kafka-protocol where it can,
//! kafka-protocol at an older version whose wire layout is the same, or Shale's codec
//! generated from Kafka 4.4's specs (`codec_generated.rs`) for the versions whose fields
//! kafka-protocol 0.18 (Kafka 4.1's specs) has no place for or does not decode.

use kafka_protocol::messages::ApiKey;

use crate::schema::{
    decodable_response_versions, decodable_versions, request_spec, request_wire_alias,
    response_spec, response_wire_alias,
};

/// How one version of one message is decoded or encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// kafka-protocol, at this version (the version itself, or an older one with the same
    /// wire layout).
    KafkaAt(i16),
    /// Shale's codec, then kafka-protocol's type, which holds every field of the version.
    Converted,
    /// Shale's codec and Shale's types (`NewerRequest` / `NewerResponse`).
    Newer,
}

/// Requests past kafka-protocol that Shale's codec decodes, and how they are handed on.
fn codec_request(api_key: i16) -> Option<Route> {
    match ApiKey::try_from(api_key).ok()? {
        ApiKey::OffsetCommit | ApiKey::OffsetFetch => Some(Route::Converted),
        ApiKey::TxnOffsetCommit | ApiKey::WriteTxnMarkers | ApiKey::ApiVersions => {
            Some(Route::Newer)
        }
        _ => None,
    }
}

/// Responses past kafka-protocol that Shale's codec encodes.
fn codec_response(api_key: i16) -> bool {
    matches!(
        ApiKey::try_from(api_key),
        Ok(ApiKey::TxnOffsetCommit | ApiKey::DeleteGroups | ApiKey::DescribeLogDirs)
    )
}

/// How a request version is decoded; `None`: not at all.
pub(crate) fn request_route(api_key: i16, version: i16) -> Option<Route> {
    let handled = decodable_versions(api_key)?;
    if handled.contains(version) {
        return Some(Route::KafkaAt(version));
    }
    let spec = request_spec(api_key)?;
    if version < handled.0 || !spec.valid.contains(version) || spec.latest_unstable_at(version) {
        return None;
    }
    codec_request(api_key).or_else(|| request_wire_alias(api_key, version).map(Route::KafkaAt))
}

/// How a response version is encoded and decoded; `None`: not at all.
pub(crate) fn response_route(api_key: i16, version: i16) -> Option<Route> {
    let handled = decodable_response_versions(api_key)?;
    if handled.contains(version) {
        return Some(Route::KafkaAt(version));
    }
    let spec = response_spec(api_key)?;
    if version < handled.0 || !spec.valid.contains(version) {
        return None;
    }
    if codec_response(api_key) {
        return Some(Route::Newer);
    }
    response_wire_alias(api_key, version).map(Route::KafkaAt)
}

/// The request versions of `api_key` Shale decodes, lowest and highest.
pub(crate) fn request_versions(api_key: i16) -> Option<(i16, i16)> {
    let spec = request_spec(api_key)?;
    let low = decodable_versions(api_key)?.0;
    let high = (low..=spec.valid.1)
        .rev()
        .find(|&v| request_route(api_key, v).is_some())?;
    Some((low, high))
}

/// The response versions of `api_key` Shale encodes and decodes, lowest and highest.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn response_versions(api_key: i16) -> Option<(i16, i16)> {
    let spec = response_spec(api_key)?;
    let low = decodable_response_versions(api_key)?.0;
    let high = (low..=spec.valid.1)
        .rev()
        .find(|&v| response_route(api_key, v).is_some())?;
    Some((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every version Kafka 4.4 adds past kafka-protocol 0.18 for the APIs Shale serves,
    /// and how it travels.
    #[test]
    fn newer_versions_have_a_route_in_both_directions() {
        let cases = [
            // (api, version, request route, response route)
            (
                ApiKey::ListOffsets,
                11,
                Route::KafkaAt(10),
                Route::KafkaAt(10),
            ),
            (
                ApiKey::OffsetCommit,
                10,
                Route::Converted,
                Route::KafkaAt(10),
            ),
            (
                ApiKey::OffsetFetch,
                10,
                Route::Converted,
                Route::KafkaAt(10),
            ),
            (ApiKey::ApiVersions, 5, Route::Newer, Route::KafkaAt(4)),
            (ApiKey::WriteTxnMarkers, 2, Route::Newer, Route::KafkaAt(1)),
            (ApiKey::TxnOffsetCommit, 6, Route::Newer, Route::Newer),
            (ApiKey::DeleteGroups, 3, Route::KafkaAt(2), Route::Newer),
            (ApiKey::DescribeLogDirs, 5, Route::KafkaAt(4), Route::Newer),
        ];
        for (key, version, request, response) in cases {
            assert_eq!(request_route(key as i16, version), Some(request), "{key:?}");
            assert_eq!(
                response_route(key as i16, version),
                Some(response),
                "{key:?}"
            );
            assert_eq!(request_versions(key as i16).map(|v| v.1), Some(version));
        }
    }

    #[test]
    fn versions_beyond_kafka_or_unstable_have_none() {
        assert_eq!(request_route(ApiKey::ListOffsets as i16, 12), None);
        assert_eq!(request_route(ApiKey::Produce as i16, 2), None);
        // InitProducerId 6 is unstable in Kafka 4.4 (not advertised by its brokers).
        assert_eq!(request_route(ApiKey::InitProducerId as i16, 6), None);
        // ShareFetch 2 adds fields kafka-protocol's types lack, and Shale has no codec for it.
        assert_eq!(request_route(ApiKey::ShareFetch as i16, 2), None);
        // Produce 0-2 are gone from Kafka 4 (the API table still advertises 0: KAFKA-18659).
        assert_eq!(request_versions(ApiKey::Produce as i16), Some((3, 13)));
    }
}
