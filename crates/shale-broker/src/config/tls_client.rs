//! The TLS client side of a listener: how this node dials other nodes' SSL and SASL_SSL
//! listeners (the inter-broker listener, the controller listener), from the same `ssl.*` keys
//! and `listener.name.<listener>.ssl.*` overrides its own server side reads, as Kafka's
//! broker does. The peer's certificate must chain to the truststore (`ssl.truststore.*`:
//! there are no built-in roots), and name the host dialled unless
//! `ssl.endpoint.identification.algorithm` is empty; the keystore is presented as the client
//! certificate when the peer asks for one.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::ring::default_provider;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};

use super::error::ConfigError;
use super::static_props::StaticProperties;
use super::tls::{listener_prefix, read_settings, Lookup};

/// Builds the TLS client configuration for dialling listener `listener_name` of other nodes.
/// `purpose` says what the connections are for, in errors.
pub(super) fn client_config(
    props: &StaticProperties,
    listener_name: &str,
    security_protocol: &str,
    purpose: &str,
) -> Result<Arc<ClientConfig>, ConfigError> {
    let lookup = Lookup {
        props,
        prefix: Some(listener_prefix(listener_name)),
        scope: format!("{purpose} ({security_protocol} listener {listener_name})"),
    };
    let settings = read_settings(&lookup)?;
    let Some((roots, trust_key)) = settings.trusted else {
        return Err(lookup.error(
            "ssl.truststore.location",
            "this node verifies the certificates of the nodes it connects to against its \
             truststore, and Shale has no built-in roots: set ssl.truststore.type=PEM with \
             ssl.truststore.location or ssl.truststore.certificates",
        ));
    };
    let mut provider = default_provider();
    let suites_key = match settings.cipher_suites {
        Some((suites, key)) => {
            provider.cipher_suites = suites;
            key
        }
        None => "ssl.cipher.suites".to_string(),
    };
    let provider: Arc<CryptoProvider> = Arc::new(provider);
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| lookup.error(&trust_key, format!("unusable truststore: {e}")))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&settings.versions)
        .map_err(|e| {
            lookup.error(
                &suites_key,
                format!("no cipher suite fits ssl.enabled.protocols: {e}"),
            )
        })?;
    let builder = if settings.verify_hostname {
        builder.with_webpki_verifier(webpki)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki)))
    };
    let config = match settings.identity {
        Some((certs, key)) => {
            let key_source = lookup
                .get("ssl.keystore.location")
                .or_else(|| lookup.get("ssl.keystore.key"))
                .map_or_else(|| "ssl.keystore.location".to_string(), |(k, _)| k);
            builder.with_client_auth_cert(certs, key).map_err(|e| {
                lookup.error(&key_source, format!("unusable certificate or key: {e}"))
            })?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// Whether listener `listener_name` has a keystore, which it presents as client certificate.
pub(super) fn has_keystore(props: &StaticProperties, listener_name: &str) -> bool {
    let prefix = listener_prefix(listener_name);
    ["ssl.keystore.location", "ssl.keystore.certificate.chain"]
        .iter()
        .any(|k| props.get(&format!("{prefix}{k}")).is_some() || props.get(k).is_some())
}

/// Whether listener `listener_name` refuses clients without a certificate.
pub(super) fn requires_client_certificates(
    props: &StaticProperties,
    listener_name: &str,
) -> Result<bool, ConfigError> {
    let lookup = Lookup {
        props,
        prefix: Some(listener_prefix(listener_name)),
        scope: format!("listener {listener_name}"),
    };
    Ok(read_settings(&lookup)?.requires_client_certificates())
}

/// `ssl.endpoint.identification.algorithm` empty: the chain is verified against the
/// truststore, the host name is not (Kafka's behaviour with the empty value).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
