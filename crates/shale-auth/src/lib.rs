//! shale-auth: the server side of the SASL mechanisms Shale offers (PLAIN, SCRAM-SHA-256,
//! SCRAM-SHA-512, OAUTHBEARER), as pure state machines with Kafka's semantics.
//!
//! Nothing here does I/O or knows the wire protocol: a connection feeds each client token of
//! SaslAuthenticate (or of the v0 handshake's raw frames) to [`SaslServer::step`] and sends
//! back what the [`Step`] holds. Every token above [`MAX_CLIENT_TOKEN_BYTES`] is refused before
//! it is looked at.
//!
//! - PLAIN ([`PlainServer`], RFC 4616) checks `authzid NUL authcid NUL passwd` against a
//!   [`PlainAuthenticator`]; [`PlainUsers`] is Kafka's table of `user_<name>` options of a
//!   `PlainLoginModule` JAAS entry ([`jaas`]).
//! - SCRAM ([`ScramServer`], RFC 5802 / RFC 7677, Kafka's ScramSaslServer) looks credentials up
//!   through [`ScramCredentialLookup`], so the broker can back it by its metadata image. A
//!   [`ScramCredential`] holds salt, stored key, server key and iterations, never the password.
//!
//! - OAUTHBEARER ([`OAuthBearerServer`], RFC 7628, Kafka's OAuthBearerSaslServer) checks an
//!   unsecured JWS as Kafka's default broker validator does ([`UnsecuredValidatorOptions`]):
//!   it trusts any well-formed token, so it is for test environments only.
//!
//! Errors ([`AuthError`]) carry Kafka's texts; [`AuthError::client_message`] says what Kafka
//! would let the client read. Kafka error codes are chosen by the broker, not here.

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod error;
pub mod jaas;
mod mechanism;
pub mod oauthbearer;
mod plain;
mod random;
pub mod scram;
mod server;

#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;

#[cfg(test)]
mod fuzz_regression_tests;

pub use error::{AuthError, CredentialError, JaasError, LookupError, RandomError};
pub use mechanism::{Mechanism, ScramMechanism};
pub use oauthbearer::{OAuthBearerServer, UnsecuredValidatorOptions};
pub use plain::{PlainAuthenticator, PlainMessage, PlainServer, PlainUsers, JAAS_USER_PREFIX};
pub use scram::{
    DelegationTokenCredential, ScramCredential, ScramCredentialLookup, ScramCredentialTable,
    ScramServer, ScramServerError,
};
pub use server::{Principal, SaslServer, Step, MAX_CLIENT_TOKEN_BYTES};
