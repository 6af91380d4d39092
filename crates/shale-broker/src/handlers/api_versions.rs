//! ApiVersions: the API table (handed in by dispatch), plus the features clients negotiate
//! behaviour on.

use std::sync::Arc;

use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_protocol::newer::api_versions_request::ApiVersionsRequest as ApiVersionsRequestV5;

use crate::broker::Broker;
use crate::errors::{cluster_check_error_code, ClusterCheck};
use crate::request::RequestContext;

/// Kafka's rule for `client_software_name` / `client_software_version` (v3+).
fn valid_software_field(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
}

/// KIP-890's feature: level 2 makes Kafka 4 clients use transaction version 2 (epoch bump on
/// every EndTxn, EndTxn/TxnOffsetCommit v5, Produce v12 adding partitions implicitly).
const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";
const TRANSACTION_VERSION_MAX: i16 = 2;

/// KIP-932's feature: level 1 enables share groups, level 2 (Kafka 4.4's default) adds
/// KIP-1222's RENEW acknowledgements of ShareFetch and ShareAcknowledge v2.
const SHARE_VERSION_FEATURE: &str = "share.version";
const SHARE_VERSION_MAX: i16 = 2;

/// A feature this broker supports: its range, and the level finalised unless the metadata
/// image holds another (Kafka 4.x formats a new cluster at the latest production levels).
struct Feature {
    name: &'static str,
    min_version: i16,
    max_version: i16,
    default_level: i16,
}

const FEATURES: &[Feature] = &[
    Feature {
        name: shale_metadata::ELIGIBLE_LEADER_REPLICAS_FEATURE,
        min_version: 0,
        max_version: shale_metadata::ELIGIBLE_LEADER_REPLICAS_VERSION,
        default_level: shale_metadata::ELIGIBLE_LEADER_REPLICAS_VERSION,
    },
    Feature {
        name: TRANSACTION_VERSION_FEATURE,
        min_version: 0,
        max_version: TRANSACTION_VERSION_MAX,
        default_level: TRANSACTION_VERSION_MAX,
    },
    Feature {
        name: SHARE_VERSION_FEATURE,
        min_version: 0,
        max_version: SHARE_VERSION_MAX,
        default_level: SHARE_VERSION_MAX,
    },
];

/// Supported and finalised features as Kafka 4.x answers them (v3+ only, tagged fields).
/// Before v4 a feature whose minimum is 0 is left out of the supported list (KAFKA-17492):
/// older clients cannot parse a zero minimum. A level of 0 is not finalised.
fn with_features(
    response: ApiVersionsResponse,
    broker: &Broker,
    version: i16,
) -> ApiVersionsResponse {
    if version < 3 {
        return response;
    }
    let image = broker.image();
    let supported = FEATURES
        .iter()
        .filter(|f| version >= 4 || f.min_version > 0)
        .map(|f| {
            SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str(f.name))
                .with_min_version(f.min_version)
                .with_max_version(f.max_version)
        })
        .collect();
    let finalized = FEATURES
        .iter()
        .map(|f| (f, image.feature_level(f.name).unwrap_or(f.default_level)))
        .filter(|(_, level)| *level > 0)
        .map(|(f, level)| {
            FinalizedFeatureKey::default()
                .with_name(StrBytes::from_static_str(f.name))
                .with_min_version_level(level)
                .with_max_version_level(level)
        })
        .collect();
    // Clients keep the finalised features of the highest epoch they saw: never below 0.
    response
        .with_supported_features(supported)
        .with_finalized_features(finalized)
        .with_finalized_features_epoch(image.offset.max(0))
}

/// Answers with `advertised`, the API table's `(key, min, max)` triples: the table names this
/// handler, so it is handed the table rather than naming it.
pub fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ApiVersionsRequest,
    advertised: &[(i16, i16, i16)],
) -> ApiVersionsResponse {
    let api_keys: Vec<ApiVersion> = advertised
        .iter()
        .map(|&(key, min, max)| {
            ApiVersion::default()
                .with_api_key(key)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect();
    let mut response = ApiVersionsResponse::default()
        .with_api_keys(api_keys)
        .with_finalized_features_epoch(-1);
    response = with_features(response, broker, ctx.version());
    if ctx.version() >= 3
        && !(valid_software_field(request.client_software_name.as_str())
            && valid_software_field(request.client_software_version.as_str()))
    {
        response.error_code = ResponseError::InvalidRequest.code();
    }
    response
}

/// ApiVersions v5 (KIP-1242): a client that knows the cluster names the cluster id and node
/// id it believes it is talking to. Both or neither must be given (INVALID_REQUEST
/// otherwise); a cluster id or node id that is not this broker's means the client's
/// metadata is stale (a broker replaced behind the same address), and it is answered
/// REBOOTSTRAP_REQUIRED without the API list, as Kafka 4.4 answers.
pub fn handle_v5(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ApiVersionsRequestV5,
    advertised: &[(i16, i16, i16)],
) -> ApiVersionsResponse {
    let check = cluster_check(
        request.cluster_id.as_ref().map(|c| c.as_str()),
        request.node_id,
        &broker.image().cluster_id,
        broker.node_id(),
    );
    let older = ApiVersionsRequest::default()
        .with_client_software_name(request.client_software_name)
        .with_client_software_version(request.client_software_version);
    let mut response = handle(broker, ctx, older, advertised);
    match check {
        None => response,
        // Kafka checks the request (software names, this pairing) before the cluster.
        Some(ClusterCheck::Unpaired) => {
            response.error_code = cluster_check_error_code(ClusterCheck::Unpaired);
            response
        }
        Some(_) if response.error_code != 0 => response,
        Some(check) => {
            ApiVersionsResponse::default().with_error_code(cluster_check_error_code(check))
        }
    }
}

/// What is wrong with the cluster id and node id of an ApiVersions v5 request, if anything.
fn cluster_check(
    cluster_id: Option<&str>,
    node_id: i32,
    own_cluster_id: &str,
    own_node_id: i32,
) -> Option<ClusterCheck> {
    match cluster_id {
        None if node_id == -1 => None,
        None => Some(ClusterCheck::Unpaired),
        Some(_) if node_id == -1 => Some(ClusterCheck::Unpaired),
        Some(id) if id != own_cluster_id || node_id != own_node_id => Some(ClusterCheck::Stale),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{cluster_check, valid_software_field, ClusterCheck};

    #[test]
    fn cluster_and_node_are_checked_as_kafka_checks_them() {
        let check = |cluster, node| cluster_check(cluster, node, "abc", 1);
        assert_eq!(check(None, -1), None, "a client that knows nothing yet");
        assert_eq!(check(Some("abc"), 1), None);
        assert_eq!(check(Some("abc"), 2), Some(ClusterCheck::Stale));
        assert_eq!(check(Some("xyz"), 1), Some(ClusterCheck::Stale));
        assert_eq!(check(Some("abc"), -1), Some(ClusterCheck::Unpaired));
        assert_eq!(check(None, 1), Some(ClusterCheck::Unpaired));
    }

    #[test]
    fn software_fields_follow_kafka_rules() {
        assert!(valid_software_field("librdkafka"));
        assert!(valid_software_field("apache-kafka-java"));
        assert!(valid_software_field("2.0.2"));
        assert!(!valid_software_field(""));
        assert!(!valid_software_field("-bad"));
        assert!(!valid_software_field("has space"));
    }
}
