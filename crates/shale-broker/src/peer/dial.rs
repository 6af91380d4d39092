//! Dialling another node's listener with the listener's security protocol: a TLS handshake
//! (verifying the peer against the truststore, the host name too unless
//! `ssl.endpoint.identification.algorithm` is empty, presenting the keystore when asked),
//! then the SASL exchange on SASL listeners.

use std::io;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use shale_metadata::BoxedPeerStream;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::frames::refused;
use super::sasl_client::authenticate_plain;
use crate::config::PeerClient;

/// Secures `stream`, just connected to `host`, as `client` says; an error says why the peer
/// or this node refused the connection.
pub async fn dial_secured(
    stream: TcpStream,
    host: &str,
    client: &PeerClient,
    client_id: &str,
) -> io::Result<BoxedPeerStream> {
    let _ = stream.set_nodelay(true);
    let mut stream: BoxedPeerStream = match &client.tls {
        None => Box::new(stream),
        Some(config) => {
            let name = ServerName::try_from(host.to_string()).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{host:?} is not a host name TLS can verify: {e}"),
                )
            })?;
            let connector = TlsConnector::from(Arc::clone(config));
            let tls = connector.connect(name, stream).await.map_err(|e| {
                refused(format!(
                    "TLS handshake with {host} on listener {} failed: {e}",
                    client.listener_name
                ))
            })?;
            Box::new(tls)
        }
    };
    if let Some(credentials) = &client.sasl {
        authenticate_plain(&mut stream, credentials, client_id).await?;
    }
    Ok(stream)
}
