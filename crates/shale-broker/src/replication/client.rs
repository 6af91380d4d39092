//! One connection from this broker to another broker's inter-broker listener, carrying
//! requests one at a time (a follower's OffsetForLeaderEpoch and Fetch, WriteTxnMarkers),
//! secured with the listener's protocol (TLS, SASL: `crate::peer`).

use std::time::Duration;

use bytes::Bytes;
use bytes::BytesMut;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use shale_metadata::BoxedPeerStream;
use shale_protocol::{
    decode_any_response, encode_newer_request, encode_request, frame_len, ProtocolError, Request,
    RequestHeader, Response,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::PeerClient;
use crate::core::BrokerCore;
use crate::peer::dial_secured;

/// Largest response frame accepted from a leader; Fetch answers are bounded by the
/// follower's own `replica.fetch.response.max.bytes` well below it.
const RESPONSE_FRAME_MAX_BYTES: usize = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("i/o with broker: {0}")]
    Io(#[from] std::io::Error),
    #[error("protocol: {0}")]
    Protocol(#[from] ProtocolError),
    #[error("request timed out")]
    Timeout,
    #[error("response carries correlation id {got}, expected {expected}")]
    Correlation { got: i32, expected: i32 },
}

/// Connects to broker `node_id` on its `inter.broker.listener.name` endpoint (its first
/// listener when it has none of that name and that one has the same security protocol), as
/// the followers and the transaction coordinator's peers do.
pub async fn connect_inter_broker(
    core: &BrokerCore,
    node_id: i32,
    client_id: String,
    timeout: Duration,
) -> Result<BrokerClient, ClientError> {
    let image = core.image();
    let registration = image
        .broker(node_id)
        .ok_or_else(|| ClientError::Io(std::io::Error::other("broker not registered")))?;
    let client = &core.config.inter_broker_client;
    let endpoint = registration
        .listener(&client.listener_name)
        .or_else(|| {
            registration
                .listeners
                .first()
                .filter(|l| l.security_protocol.name() == client.security_protocol)
        })
        .ok_or_else(|| {
            ClientError::Io(std::io::Error::other(format!(
                "broker {node_id} advertises no {} listener {}",
                client.security_protocol, client.listener_name
            )))
        })?;
    let addr = format!("{}:{}", endpoint.host, endpoint.port);
    BrokerClient::connect_secured(&addr, &endpoint.host, client, client_id, timeout).await
}

/// A connection to one broker.
pub struct BrokerClient {
    stream: BoxedPeerStream,
    client_id: String,
    next_correlation_id: i32,
}

impl BrokerClient {
    /// A plain-text connection to `addr`.
    pub async fn connect(
        addr: &str,
        client_id: String,
        timeout: Duration,
    ) -> Result<BrokerClient, ClientError> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| ClientError::Timeout)??;
        stream.set_nodelay(true)?;
        Ok(BrokerClient {
            stream: Box::new(stream),
            client_id,
            next_correlation_id: 0,
        })
    }

    /// A connection to `addr` (the listener at `host`) secured as `client` says: TLS, SASL.
    /// `timeout` bounds the connect, the handshake and the authentication together.
    pub async fn connect_secured(
        addr: &str,
        host: &str,
        client: &PeerClient,
        client_id: String,
        timeout: Duration,
    ) -> Result<BrokerClient, ClientError> {
        let connect = async {
            let stream = TcpStream::connect(addr).await?;
            dial_secured(stream, host, client, &client_id).await
        };
        let stream = tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| ClientError::Timeout)??;
        Ok(BrokerClient {
            stream,
            // SASL took correlation ids 0 and 1.
            next_correlation_id: if client.sasl.is_some() { 2 } else { 0 },
            client_id,
        })
    }

    /// Sends one request and waits for its response (at most `timeout`).
    pub async fn call(
        &mut self,
        key: ApiKey,
        version: i16,
        request: RequestKind,
        timeout: Duration,
    ) -> Result<ResponseKind, ClientError> {
        match self
            .call_any(key, version, Request::Kafka(request), timeout)
            .await?
        {
            Response::Kafka(response) => Ok(response),
            Response::Newer(_) => Err(ClientError::Protocol(ProtocolError::UnsupportedVersion {
                api_key: key as i16,
                api_version: version,
            })),
        }
    }

    /// [`Self::call`] for a request in either kafka-protocol's or Shale's own types (a
    /// version whose fields kafka-protocol's lack), answered by either kind of response.
    pub async fn call_any(
        &mut self,
        key: ApiKey,
        version: i16,
        request: Request,
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let header = RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id,
            client_id: Some(self.client_id.clone()),
            header_version: key.request_header_version(version),
        };
        let frame: BytesMut = match &request {
            Request::Kafka(request) => encode_request(&header, request)?,
            Request::Newer(request) => encode_newer_request(&header, request)?,
        };
        let exchange = async {
            self.stream.write_all(&frame).await?;
            let mut prefix = [0u8; 4];
            self.stream.read_exact(&mut prefix).await?;
            let len = frame_len(prefix, RESPONSE_FRAME_MAX_BYTES)?;
            // The buffer grows as bytes arrive: a length prefix alone reserves nothing.
            let mut body = Vec::new();
            (&mut self.stream)
                .take(len as u64)
                .read_to_end(&mut body)
                .await?;
            if body.len() != len {
                return Err(ClientError::Io(std::io::ErrorKind::UnexpectedEof.into()));
            }
            Ok::<Bytes, ClientError>(Bytes::from(body))
        };
        let body = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| ClientError::Timeout)??;
        let (got, response) = decode_any_response(key as i16, version, body)?;
        if got != correlation_id {
            return Err(ClientError::Correlation {
                got,
                expected: correlation_id,
            });
        }
        Ok(response)
    }
}
