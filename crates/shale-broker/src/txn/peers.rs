//! Requests from this broker's transaction code to other brokers: WriteTxnMarkers to a
//! partition leader, AddPartitionsToTxn (v5, batched) to a transaction coordinator. One cached
//! connection per broker, dropped on the first error. Each new connection first asks the
//! broker's ApiVersions, so that a request the peer serves in a newer version (WriteTxnMarkers
//! 2) is sent in it, and an older peer (a rolling upgrade) still gets the version it knows.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use shale_protocol::{Request, Response};

use crate::core::BrokerCore;
use crate::replication::client::{connect_inter_broker, BrokerClient, ClientError};

/// Kafka's inter-broker `request.timeout.ms` default.
const PEER_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// ApiVersions as brokers ask each other (v3: the first flexible version, which every Kafka
/// 2.4+ broker and every Shale answers).
const PEER_API_VERSIONS_VERSION: i16 = 3;

/// A connection to a peer and the highest version it serves of each API.
struct Peer {
    client: BrokerClient,
    max_versions: HashMap<i16, i16>,
}

type Slot = Arc<tokio::sync::Mutex<Option<Peer>>>;

#[derive(Default)]
pub struct PeerClients {
    clients: parking_lot::Mutex<HashMap<i32, Slot>>,
}

impl std::fmt::Debug for PeerClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerClients")
            .field("brokers", &self.clients.lock().len())
            .finish()
    }
}

impl PeerClients {
    /// Sends one request to broker `node_id` over its inter-broker listener.
    pub async fn call(
        &self,
        broker: &BrokerCore,
        node_id: i32,
        key: ApiKey,
        version: i16,
        request: RequestKind,
    ) -> Result<ResponseKind, ClientError> {
        let answered = self
            .call_negotiated(broker, node_id, key, |_| (version, Request::Kafka(request)))
            .await?;
        match answered {
            Response::Kafka(response) => Ok(response),
            Response::Newer(_) => Err(ClientError::Io(std::io::Error::other(
                "answered in an unexpected version",
            ))),
        }
    }

    /// Sends the request `build` makes from the highest version of `key` the peer serves
    /// (`None`: it does not list the API).
    pub async fn call_negotiated(
        &self,
        broker: &BrokerCore,
        node_id: i32,
        key: ApiKey,
        build: impl FnOnce(Option<i16>) -> (i16, Request),
    ) -> Result<Response, ClientError> {
        let slot = self.clients.lock().entry(node_id).or_default().clone();
        let mut held = slot.lock().await;
        if held.is_none() {
            *held = Some(connect(broker, node_id).await?);
        }
        let Some(peer) = held.as_mut() else {
            return Err(ClientError::Io(std::io::Error::other("no connection")));
        };
        let (version, request) = build(peer.max_versions.get(&(key as i16)).copied());
        let result = peer
            .client
            .call_any(key, version, request, PEER_REQUEST_TIMEOUT)
            .await;
        if result.is_err() {
            *held = None;
        }
        result
    }
}

async fn connect(broker: &BrokerCore, node_id: i32) -> Result<Peer, ClientError> {
    let mut client = connect_inter_broker(
        broker,
        node_id,
        format!("broker-{}-txn", broker.node_id()),
        PEER_REQUEST_TIMEOUT,
    )
    .await?;
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("shale"))
        .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
    let answered = client
        .call(
            ApiKey::ApiVersions,
            PEER_API_VERSIONS_VERSION,
            RequestKind::ApiVersions(request),
            PEER_REQUEST_TIMEOUT,
        )
        .await?;
    let max_versions = match answered {
        ResponseKind::ApiVersions(r) if r.error_code == 0 => r
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.max_version))
            .collect(),
        _ => HashMap::new(),
    };
    Ok(Peer {
        client,
        max_versions,
    })
}
