//! The answers of a SASL exchange that are refusals (Kafka's SaslServerAuthenticator and
//! KafkaApis): the codes SaslHandshake and SaslAuthenticate carry.

use kafka_protocol::ResponseError as E;

/// Why a SaslHandshake or SaslAuthenticate is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaslRefusal {
    /// The handshake names a mechanism the listener does not enable.
    UnsupportedMechanism,
    /// The request comes out of order (a second handshake, or either after authentication).
    IllegalState,
    /// The mechanism refused the client's credentials.
    AuthenticationFailed,
}

pub fn sasl_error_code(refusal: SaslRefusal) -> i16 {
    match refusal {
        SaslRefusal::UnsupportedMechanism => E::UnsupportedSaslMechanism.code(),
        SaslRefusal::IllegalState => E::IllegalSaslState.code(),
        SaslRefusal::AuthenticationFailed => E::SaslAuthenticationFailed.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas() {
        assert_eq!(sasl_error_code(SaslRefusal::UnsupportedMechanism), 33);
        assert_eq!(sasl_error_code(SaslRefusal::IllegalState), 34);
        assert_eq!(sasl_error_code(SaslRefusal::AuthenticationFailed), 58);
    }
}
