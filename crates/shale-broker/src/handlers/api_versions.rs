//! ApiVersions: derived from the API table.

use std::sync::Arc;

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::ResponseError;

use crate::api_table;
use crate::dispatch::RequestContext;
use crate::Broker;

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

pub fn handle(
    _broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: ApiVersionsRequest,
) -> ApiVersionsResponse {
    let api_keys: Vec<ApiVersion> = api_table::advertised()
        .into_iter()
        .map(|(key, min, max)| {
            ApiVersion::default()
                .with_api_key(key)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect();
    let mut response = ApiVersionsResponse::default()
        .with_api_keys(api_keys)
        .with_finalized_features_epoch(-1);
    if ctx.version() >= 3
        && !(valid_software_field(request.client_software_name.as_str())
            && valid_software_field(request.client_software_version.as_str()))
    {
        response.error_code = ResponseError::InvalidRequest.code();
    }
    response
}

#[cfg(test)]
mod tests {
    use super::valid_software_field;

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
