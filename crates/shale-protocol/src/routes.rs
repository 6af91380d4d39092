//! Which codec carries each request and response version: kafka-protocol where it can,
//! kafka-protocol at an older version whose wire layout is the same, or Shale's codec
//! generated from Kafka 4.4's specs (`codec_generated.rs`) for the versions whose fields
//! kafka-protocol 0.18 (Kafka 4.1's specs) has no place for or does not decode. The APIs
//! the codec owns (`CODEC_OWNED_APIS`, generated from gen_codec.py's list) travel through
//! it at every version, requests and responses alike.

use kafka_protocol::messages::ApiKey;

use crate::codec_generated::CODEC_OWNED_APIS;
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

/// Whether Shale's codec carries every version of `api_key`'s requests and responses.
pub(crate) fn codec_owned(api_key: i16) -> bool {
    CODEC_OWNED_APIS.contains(&api_key)
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
    if codec_owned(api_key) {
        let spec = request_spec(api_key)?;
        let served = spec.valid.contains(version) && !spec.latest_unstable_at(version);
        return served.then_some(Route::Newer);
    }
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
    if codec_owned(api_key) {
        let spec = response_spec(api_key)?;
        return spec.valid.contains(version).then_some(Route::Newer);
    }
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
    let low = if codec_owned(api_key) {
        spec.valid.0
    } else {
        decodable_versions(api_key)?.0
    };
    let high = (low..=spec.valid.1)
        .rev()
        .find(|&v| request_route(api_key, v).is_some())?;
    Some((low, high))
}

/// The response versions of `api_key` Shale encodes and decodes, lowest and highest.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn response_versions(api_key: i16) -> Option<(i16, i16)> {
    let spec = response_spec(api_key)?;
    let low = if codec_owned(api_key) {
        spec.valid.0
    } else {
        decodable_response_versions(api_key)?.0
    };
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
        // ShareFetch 0 was Kafka 4.0's early access, gone from 4.1.
        assert_eq!(request_route(ApiKey::ShareFetch as i16, 0), None);
        assert_eq!(response_route(ApiKey::ShareFetch as i16, 3), None);
        // Produce 0-2 are gone from Kafka 4 (the API table still advertises 0: KAFKA-18659).
        assert_eq!(request_versions(ApiKey::Produce as i16), Some((3, 13)));
    }

    /// Kafka 4.4's share-group APIs: the versions each is served at, and which codec
    /// carries it (Shale's at every version where 4.4 adds a field kafka-protocol lacks).
    #[test]
    fn share_group_apis_are_served_at_kafka_44_versions() {
        let cases = [
            // (api, versions, carried by Shale's codec)
            (ApiKey::ShareGroupHeartbeat, (1, 1), false),
            (ApiKey::ShareGroupDescribe, (1, 1), false),
            (ApiKey::ShareFetch, (1, 2), true),
            (ApiKey::ShareAcknowledge, (1, 2), true),
            (ApiKey::InitializeShareGroupState, (0, 0), false),
            (ApiKey::ReadShareGroupState, (0, 0), false),
            (ApiKey::WriteShareGroupState, (0, 1), true),
            (ApiKey::DeleteShareGroupState, (0, 0), false),
            (ApiKey::ReadShareGroupStateSummary, (0, 1), true),
            (ApiKey::DescribeShareGroupOffsets, (0, 1), true),
            (ApiKey::AlterShareGroupOffsets, (0, 0), false),
            (ApiKey::DeleteShareGroupOffsets, (0, 0), false),
        ];
        for (key, versions, owned) in cases {
            let api = key as i16;
            assert_eq!(codec_owned(api), owned, "{key:?}");
            assert_eq!(request_versions(api), Some(versions), "{key:?}");
            assert_eq!(response_versions(api), Some(versions), "{key:?}");
            for version in versions.0..=versions.1 {
                let expected = if owned {
                    Route::Newer
                } else {
                    Route::KafkaAt(version)
                };
                assert_eq!(request_route(api, version), Some(expected), "{key:?}");
                assert_eq!(response_route(api, version), Some(expected), "{key:?}");
            }
        }
    }

    /// Every API the codec owns has Shale's types in both directions, at exactly Kafka
    /// 4.4's versions.
    #[test]
    fn codec_owned_apis_have_newer_types_at_every_version() {
        use crate::newer::{NewerRequest, NewerResponse};
        assert!(!CODEC_OWNED_APIS.is_empty());
        for &api in CODEC_OWNED_APIS {
            let request = request_spec(api).unwrap().valid;
            let response = response_spec(api).unwrap().valid;
            assert_eq!(NewerRequest::versions(api), Some((request.0, request.1)));
            assert_eq!(NewerResponse::versions(api), Some((response.0, response.1)));
        }
    }
}
