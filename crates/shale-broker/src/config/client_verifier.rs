//! The client-certificate check of a TLS listener, answering a certificate from an unknown CA
//! with the alert a Kafka broker's JDK sends (`certificate_unknown`), not rustls' `unknown_ca`:
//! a client then reports an untrusted certificate the same way against Shale as against Kafka.
//! Every other outcome, and every other part of the check, is webpki's.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::SignatureScheme;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, OtherError};

/// Why a client certificate was refused when its issuer is not in the truststore.
#[derive(Debug, thiserror::Error)]
#[error("the client certificate does not chain to a certificate of the truststore")]
struct UntrustedIssuer;

/// `inner` with an unknown issuer reported as Kafka's JDK reports it.
#[derive(Debug)]
pub(super) struct KafkaAlertsVerifier {
    pub(super) inner: Arc<dyn ClientCertVerifier>,
}

/// The error to answer for `error`: an unknown issuer becomes an unspecified certificate
/// problem (alert `certificate_unknown`), the rest stays.
fn as_kafka_reports(error: Error) -> Error {
    match error {
        Error::InvalidCertificate(CertificateError::UnknownIssuer) => Error::InvalidCertificate(
            CertificateError::Other(OtherError(Arc::new(UntrustedIssuer))),
        ),
        other => other,
    }
}

impl ClientCertVerifier for KafkaAlertsVerifier {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        self.inner
            .verify_client_cert(end_entity, intermediates, now)
            .map_err(as_kafka_reports)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::AlertDescription;

    #[test]
    fn an_unknown_issuer_is_answered_certificate_unknown_and_the_rest_as_before() {
        let untrusted =
            as_kafka_reports(Error::InvalidCertificate(CertificateError::UnknownIssuer));
        let Error::InvalidCertificate(e) = untrusted else {
            panic!("still a certificate error");
        };
        assert_eq!(
            AlertDescription::from(e),
            AlertDescription::CertificateUnknown
        );
        let expired = as_kafka_reports(Error::InvalidCertificate(CertificateError::Expired));
        assert_eq!(
            expired,
            Error::InvalidCertificate(CertificateError::Expired)
        );
    }
}
