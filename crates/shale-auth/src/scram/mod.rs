//! SCRAM (RFC 5802, RFC 7677) as Kafka's ScramSaslServer serves it: messages, credentials and
//! the server's state machine.

mod credential;
mod crypto;
pub mod messages;
mod server;

pub use credential::{
    DelegationTokenCredential, ScramCredential, ScramCredentialLookup, ScramCredentialTable,
};
pub use messages::ScramServerError;
pub use server::ScramServer;

/// Kafka's SCRAM extension that asks for delegation-token authentication.
pub const TOKEN_AUTH_EXTENSION: &str = "tokenauth";
