//! The controller port's security (`shale_metadata::PeerSecurity`), from the controller
//! listener's protocol: TLS with client certificates required (SSL), the SASL exchange
//! (SASL_PLAINTEXT), or both (SASL_SSL), on every connection both ways.
//!
//! Who counts as a node: a peer that authenticated on the controller listener, that is, one
//! whose client certificate chains to the truststore (SSL; `config::peer` insists on
//! `ssl.client.auth=required`) or one of the controller listener's JAAS users (SASL). Shale
//! has no authorizer yet, so Kafka's `super.users` / CLUSTER_ACTION check has nothing to read;
//! the controller listener's truststore and JAAS users must therefore hold nodes only. A
//! connection that does not authenticate is closed before its first frame is read, so it
//! can submit nothing.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use shale_auth::PlainUsers;
use shale_metadata::{BoxedPeerStream, PeerSecurity, SecureFuture};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tracing::debug;

use super::dial::dial_secured;
use super::frames::refused;
use super::sasl_server;
use crate::config::{BrokerConfig, PeerClient};

/// The client id this node's SASL requests carry on the controller port.
const CLIENT_ID: &str = "shale-controller-link";

pub struct ControllerPortSecurity {
    client: PeerClient,
    /// The host names of `controller.quorum.voters` by resolved address: TLS verifies the host
    /// the voter was configured with.
    voter_hosts: HashMap<SocketAddr, String>,
    /// This voter's side: TLS on its controller listener.
    acceptor: Option<TlsAcceptor>,
    /// This voter's side: the controller listener's PLAIN users (SASL only).
    users: Option<Arc<PlainUsers>>,
}

impl std::fmt::Debug for ControllerPortSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerPortSecurity")
            .field("client", &self.client)
            .field("tls_server", &self.acceptor.is_some())
            .field("sasl_users", &self.users)
            .finish_non_exhaustive()
    }
}

impl ControllerPortSecurity {
    /// The controller port's security for this node, or `None` when the controller listener is
    /// PLAINTEXT (for trusted networks only) or there is no quorum. `voter_addrs` are the
    /// resolved addresses of `controller.quorum.voters`, in its order.
    pub fn from_config(
        config: &BrokerConfig,
        voter_addrs: &[(i32, SocketAddr)],
    ) -> Option<ControllerPortSecurity> {
        let client = config.controller_client.clone()?;
        if client.security_protocol == "PLAINTEXT" {
            return None;
        }
        let voter_hosts = voter_addrs
            .iter()
            .filter_map(|(id, addr)| {
                let voter = config
                    .controller_quorum_voters
                    .iter()
                    .find(|v| v.node_id == *id)?;
                Some((*addr, voter.host.clone()))
            })
            .collect();
        let acceptor = config
            .tls_of(&client.listener_name)
            .map(|t| TlsAcceptor::from(Arc::clone(&t.server_config)));
        let users = config
            .sasl_of(&client.listener_name)
            .and_then(|s| s.plain_users.clone());
        Some(ControllerPortSecurity {
            client,
            voter_hosts,
            acceptor,
            users,
        })
    }

    async fn accept_peer(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> io::Result<BoxedPeerStream> {
        let _ = stream.set_nodelay(true);
        let mut stream: BoxedPeerStream = match (&self.acceptor, &self.client.tls) {
            (Some(acceptor), _) => {
                let tls = acceptor
                    .accept(stream)
                    .await
                    .map_err(|e| refused(format!("TLS handshake failed: {e}")))?;
                // The listener requires client certificates on SSL; check anyway, so that a
                // change there can never open the port.
                if self.client.sasl.is_none() && tls.get_ref().1.peer_certificates().is_none() {
                    return Err(refused("no client certificate"));
                }
                Box::new(tls)
            }
            (None, Some(_)) => return Err(refused("this node serves no TLS controller listener")),
            (None, None) => Box::new(stream),
        };
        if self.client.sasl.is_some() {
            let Some(users) = &self.users else {
                return Err(refused("this node serves no SASL controller listener"));
            };
            let user = sasl_server::authenticate(&mut stream, users).await?;
            debug!(%peer, user = %user, "a node authenticated on the controller listener");
        }
        Ok(stream)
    }
}

impl PeerSecurity for ControllerPortSecurity {
    fn connect(&self, stream: TcpStream, addr: SocketAddr) -> SecureFuture<'_> {
        Box::pin(async move {
            let host = self
                .voter_hosts
                .get(&addr)
                .cloned()
                .unwrap_or_else(|| addr.ip().to_string());
            dial_secured(stream, &host, &self.client, CLIENT_ID).await
        })
    }

    fn accept(&self, stream: TcpStream, peer: SocketAddr) -> SecureFuture<'_> {
        Box::pin(self.accept_peer(stream, peer))
    }
}
