//! The refusals of client quotas: DescribeClientQuotas' filter (Kafka's ClientQuotasImage
//! throws InvalidRequestException or UnsupportedVersionException), Shale's IP quotas, and the
//! controller-mutation quota (KIP-599).

use kafka_protocol::ResponseError as E;
use shale_metadata::quota_filter::QuotaFilterError;

pub fn quota_filter_error_code(e: &QuotaFilterError) -> i16 {
    match e {
        QuotaFilterError::InvalidRequest(_) => E::InvalidRequest.code(),
        QuotaFilterError::UnsupportedEntityType(_) => E::UnsupportedVersion.code(),
    }
}

/// Why a client-quota request, or a topic under the controller-mutation quota, is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaRefusal {
    /// An AlterClientQuotas entry Shale refuses.
    InvalidRequest(String),
    /// A strict controller-mutation quota is exhausted.
    ThrottlingQuotaExceeded,
    /// The controller answered another kind of request.
    UnexpectedControllerAnswer,
}

/// Kafka's `Errors.THROTTLING_QUOTA_EXCEEDED.message()`.
const THROTTLING_QUOTA_EXCEEDED_MESSAGE: &str = "The throttling quota has been exceeded.";

/// The code and message of a refusal.
pub fn quota_error(refusal: &QuotaRefusal) -> (i16, String) {
    match refusal {
        QuotaRefusal::InvalidRequest(m) => (E::InvalidRequest.code(), m.clone()),
        QuotaRefusal::ThrottlingQuotaExceeded => (
            E::ThrottlingQuotaExceeded.code(),
            THROTTLING_QUOTA_EXCEEDED_MESSAGE.to_string(),
        ),
        QuotaRefusal::UnexpectedControllerAnswer => (
            E::UnknownServerError.code(),
            "unexpected controller answer".to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas() {
        assert_eq!(quota_error(&QuotaRefusal::InvalidRequest("x".into())).0, 42);
        let invalid = QuotaFilterError::InvalidRequest("x".into());
        assert_eq!(quota_filter_error_code(&invalid), 42);
        let unsupported = QuotaFilterError::UnsupportedEntityType("group".into());
        assert_eq!(quota_filter_error_code(&unsupported), 35);
        assert_eq!(quota_error(&QuotaRefusal::ThrottlingQuotaExceeded).0, 89);
        assert_eq!(quota_error(&QuotaRefusal::UnexpectedControllerAnswer).0, -1);
    }
}
