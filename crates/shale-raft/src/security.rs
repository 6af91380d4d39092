//! How connections on the controller port are secured: a hook the node's owner supplies.
//!
//! Every connection to or from a controller listener (Raft RPCs between voters, observer
//! fetches, forwarded controller requests) passes through a [`PeerSecurity`] before its
//! preamble: the dialling side secures the fresh TCP stream (a TLS handshake, a SASL exchange),
//! the accepting side authenticates the peer and refuses the connection when it is not a node
//! of the cluster. This crate only frames what runs over the secured stream; the TLS and SASL
//! implementations and the decision of who counts as a node belong to the broker, which reads
//! them from Kafka's configuration. [`Plaintext`] (the default) secures nothing: the port is
//! then for trusted networks only, as a PLAINTEXT controller listener is in Kafka.

use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A byte stream to or from a peer node, plain or wrapped (TLS).
pub trait PeerStream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> PeerStream for T {}

/// A secured stream, ready for the preamble.
pub type BoxedPeerStream = Box<dyn PeerStream>;

/// What securing a stream returns: the stream to use, or why the connection is refused.
pub type SecureFuture<'a> = Pin<Box<dyn Future<Output = io::Result<BoxedPeerStream>> + Send + 'a>>;

/// Secures the connections of the controller port, both ways.
pub trait PeerSecurity: Send + Sync + Debug {
    /// The dialling side: `stream` was just connected to the controller listener at `addr`.
    fn connect(&self, stream: TcpStream, addr: SocketAddr) -> SecureFuture<'_>;
    /// The accepting side: `stream` was just accepted from `peer`. An error refuses the
    /// connection before anything of it is read as a request.
    fn accept(&self, stream: TcpStream, peer: SocketAddr) -> SecureFuture<'_>;
}

/// No security: streams are used as connected. For trusted networks only.
#[derive(Debug, Default, Clone, Copy)]
pub struct Plaintext;

impl PeerSecurity for Plaintext {
    fn connect(&self, stream: TcpStream, _addr: SocketAddr) -> SecureFuture<'_> {
        Box::pin(async move { Ok(Box::new(stream) as BoxedPeerStream) })
    }

    fn accept(&self, stream: TcpStream, _peer: SocketAddr) -> SecureFuture<'_> {
        Box::pin(async move { Ok(Box::new(stream) as BoxedPeerStream) })
    }
}

/// The default hook: [`Plaintext`].
pub fn plaintext() -> Arc<dyn PeerSecurity> {
    Arc::new(Plaintext)
}
