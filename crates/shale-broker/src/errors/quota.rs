//! DescribeClientQuotas filter refusals (Kafka's ClientQuotasImage throws
//! InvalidRequestException or UnsupportedVersionException).

use kafka_protocol::ResponseError as E;
use shale_metadata::quota_filter::QuotaFilterError;

pub fn quota_filter_error_code(e: &QuotaFilterError) -> i16 {
    match e {
        QuotaFilterError::InvalidRequest(_) => E::InvalidRequest.code(),
        QuotaFilterError::UnsupportedEntityType(_) => E::UnsupportedVersion.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas() {
        let invalid = QuotaFilterError::InvalidRequest("x".into());
        assert_eq!(quota_filter_error_code(&invalid), 42);
        let unsupported = QuotaFilterError::UnsupportedEntityType("group".into());
        assert_eq!(quota_filter_error_code(&unsupported), 35);
    }
}
