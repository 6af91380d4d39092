//! Requests from this broker's transaction code to other brokers: WriteTxnMarkers to a
//! partition leader, AddPartitionsToTxn (v5, batched) to a transaction coordinator. One cached
//! connection per broker, dropped on the first error.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use kafka_protocol::ResponseError;
use shale_txn::coordinator::TxnCoordinatorError;

use crate::replication::client::{BrokerClient, ClientError};
use crate::Broker;

/// Kafka's inter-broker `request.timeout.ms` default.
const PEER_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

type Slot = Arc<tokio::sync::Mutex<Option<BrokerClient>>>;

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
        broker: &Arc<Broker>,
        node_id: i32,
        key: ApiKey,
        version: i16,
        request: RequestKind,
    ) -> Result<ResponseKind, ClientError> {
        let slot = self.clients.lock().entry(node_id).or_default().clone();
        let mut held = slot.lock().await;
        if held.is_none() {
            *held = Some(connect(broker, node_id).await?);
        }
        let Some(client) = held.as_mut() else {
            return Err(ClientError::Io(std::io::Error::other("no connection")));
        };
        let result = client
            .call(key, version, request, PEER_REQUEST_TIMEOUT)
            .await;
        if result.is_err() {
            *held = None;
        }
        result
    }
}

async fn connect(broker: &Arc<Broker>, node_id: i32) -> Result<BrokerClient, ClientError> {
    let image = broker.image();
    let registration = image
        .broker(node_id)
        .ok_or_else(|| ClientError::Io(std::io::Error::other("broker not registered")))?;
    let endpoint = registration
        .listener(&broker.config.inter_broker_listener_name)
        .or_else(|| registration.listeners.first())
        .ok_or_else(|| ClientError::Io(std::io::Error::other("broker has no listener")))?;
    BrokerClient::connect(
        &format!("{}:{}", endpoint.host, endpoint.port),
        format!("broker-{}-txn", broker.node_id()),
        PEER_REQUEST_TIMEOUT,
    )
    .await
}

/// A coordinator's answer to AddPartitionsToTxn, as the coordinator's own error.
pub fn coordinator_error(code: i16) -> TxnCoordinatorError {
    use ResponseError as E;
    match code {
        c if c == E::InvalidTxnState.code() => TxnCoordinatorError::InvalidTxnState {
            state: shale_txn::coordinator::TxnState::Empty,
            action: "write to a partition not added to",
        },
        c if c == E::ProducerFenced.code() || c == E::InvalidProducerEpoch.code() => {
            TxnCoordinatorError::ProducerFenced {
                producer_epoch: -1,
                current_epoch: -1,
            }
        }
        c if c == E::InvalidProducerIdMapping.code() => {
            TxnCoordinatorError::InvalidProducerIdMapping { producer_id: -1 }
        }
        c if c == E::ConcurrentTransactions.code() => TxnCoordinatorError::ConcurrentTransactions,
        c if c == E::NotCoordinator.code() => TxnCoordinatorError::NotCoordinator,
        c if c == E::CoordinatorLoadInProgress.code() => {
            TxnCoordinatorError::CoordinatorLoadInProgress
        }
        c if c == E::CoordinatorNotAvailable.code() => TxnCoordinatorError::CoordinatorNotAvailable,
        c if c == E::InvalidTransactionTimeout.code() => {
            TxnCoordinatorError::InvalidTransactionTimeout {
                timeout_ms: -1,
                max_ms: -1,
            }
        }
        other => TxnCoordinatorError::LogAppendFailed { code: other },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_codes_round_trip_to_the_same_code() {
        for code in [48, 90, 49, 51, 16, 14, 15, 50, 7] {
            let back = coordinator_error(code).kafka_error_code();
            assert_eq!(back, code, "code {code}");
        }
        assert_eq!(coordinator_error(47).kafka_error_code(), 90);
    }
}
