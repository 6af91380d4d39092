//! What every handler is given besides the request body, and the one failure that closes the
//! connection instead of answering. A bottom-floor module: it names no handler, no dispatch
//! and no connection, so that all of them can name it.

use std::net::SocketAddr;
use std::sync::Arc;

use shale_protocol::RequestHeader;

/// What a handler knows about the request besides its body.
#[derive(Debug)]
pub struct RequestContext {
    pub header: RequestHeader,
    pub peer: SocketAddr,
    pub listener_name: Arc<str>,
    /// Who the client is, as Kafka's default principal builder names it: `User:ANONYMOUS`,
    /// on an SSL listener with a verified client certificate `User:` and the certificate's
    /// RFC 2253 subject (`User:CN=app,O=Example`), on a SASL listener `User:` and the name the
    /// client authenticated with (`User:alice`). The authorizer checks it (`authorizer/`).
    pub principal: Arc<str>,
    /// This broker's number for the connection the request came on (unique while it runs):
    /// share sessions belong to a connection and go when it closes.
    pub connection_id: u64,
}

/// Kafka's principal of an unauthenticated client (`KafkaPrincipal.ANONYMOUS`).
pub const ANONYMOUS_PRINCIPAL: &str = "User:ANONYMOUS";

impl RequestContext {
    pub fn version(&self) -> i16 {
        self.header.api_version
    }
}

/// A request that cannot be answered and must close the connection.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error("request type not served: {0}")]
    NotServed(&'static str),
    /// A request Kafka's request parsing refuses (which closes the connection there too).
    #[error("malformed request: {0}")]
    Malformed(&'static str),
}
