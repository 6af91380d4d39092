//! The mechanism-neutral face of a SASL exchange.

use crate::error::AuthError;
use crate::mechanism::Mechanism;

/// The largest client token a server looks at. Kafka's own mechanisms never send more than a
/// few hundred bytes; the cap keeps a peer from making the server hold or scan more.
pub const MAX_CLIENT_TOKEN_BYTES: usize = 64 * 1024;

/// Who authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The user name (for a delegation token: the token's owner).
    pub name: String,
    /// Authenticated with a delegation token (SCRAM's `tokenauth=true` extension).
    pub token_authenticated: bool,
    /// When the delegation token or the OAuth bearer token expires; what bounds the session
    /// (KIP-368).
    pub token_expiry_timestamp_ms: Option<i64>,
}

impl Principal {
    pub(crate) fn user(name: String) -> Self {
        Principal {
            name,
            token_authenticated: false,
            token_expiry_timestamp_ms: None,
        }
    }
}

/// What the server answers a client token with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes and wait for the client's next token.
    Continue(Vec<u8>),
    /// Authenticated: send these (possibly empty) bytes; the exchange is over.
    Done {
        principal: Principal,
        server_bytes: Vec<u8>,
    },
}

/// The server side of one SASL exchange. It does no I/O: the connection passes each client
/// token in and sends back what comes out.
pub trait SaslServer {
    fn mechanism(&self) -> Mechanism;

    /// Handles the client's next token. An error ends the exchange: later tokens are refused.
    fn step(&mut self, client_bytes: &[u8]) -> Result<Step, AuthError>;
}

pub(crate) fn check_token_len(client_bytes: &[u8]) -> Result<(), AuthError> {
    if client_bytes.len() > MAX_CLIENT_TOKEN_BYTES {
        return Err(AuthError::TokenTooLarge {
            len_bytes: client_bytes.len(),
            max_bytes: MAX_CLIENT_TOKEN_BYTES,
        });
    }
    Ok(())
}
