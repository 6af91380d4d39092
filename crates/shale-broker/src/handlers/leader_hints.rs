//! KIP-951: a Produce or Fetch answer that sends the client elsewhere (NOT_LEADER_OR_FOLLOWER,
//! FENCED_LEADER_EPOCH) says where: the partition's current leader and epoch, and that
//! leader's endpoint on the listener the request came in on, so the client moves to the new
//! leader without a metadata round trip.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;
use shale_metadata::{BrokerRegistration, Endpoint, MetadataImage};

/// The endpoint of `broker` that a client on `listener` reaches it by (its first listener when
/// it has none of that name, as Metadata answers).
pub(crate) fn listener_endpoint<'a>(
    broker: &'a BrokerRegistration,
    listener: &str,
) -> Option<&'a Endpoint> {
    broker
        .listeners
        .iter()
        .find(|e| e.name == listener)
        .or_else(|| broker.listeners.first())
}

/// A leader's endpoint as the answer lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeaderEndpoint {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

/// Collects the hints of one answer: each hinted partition's leader, and the endpoints of those
/// leaders, listed once each.
pub(crate) struct LeaderHints<'a> {
    image: &'a MetadataImage,
    listener: &'a str,
    endpoints: BTreeMap<i32, LeaderEndpoint>,
}

impl<'a> LeaderHints<'a> {
    pub fn new(image: &'a MetadataImage, listener: &'a str) -> LeaderHints<'a> {
        LeaderHints {
            image,
            listener,
            endpoints: BTreeMap::new(),
        }
    }

    /// `(leader id, leader epoch)` for a partition answered with `error_code`, or `None` when
    /// that code sends nobody elsewhere. An unknown partition is `(-1, -1)`, as from Kafka.
    pub fn current_leader(
        &mut self,
        topic: &str,
        partition: i32,
        error_code: i16,
    ) -> Option<(i32, i32)> {
        if error_code != ResponseError::NotLeaderOrFollower.code()
            && error_code != ResponseError::FencedLeaderEpoch.code()
        {
            return None;
        }
        let Some(p) = self
            .image
            .topic(topic)
            .and_then(|t| t.partitions.get(&partition))
        else {
            return Some((-1, -1));
        };
        // The leader is named whatever its state; its endpoint only while it is registered
        // and unfenced, since only then can the client reach it.
        let alive = self.image.broker(p.leader).filter(|b| !b.fenced);
        if let Some(b) = alive {
            if let Some(endpoint) = listener_endpoint(b, self.listener) {
                self.endpoints
                    .entry(p.leader)
                    .or_insert_with(|| LeaderEndpoint {
                        node_id: p.leader,
                        host: endpoint.host.clone(),
                        port: i32::from(endpoint.port),
                        rack: b.rack.clone(),
                    });
            }
        }
        Some((p.leader, p.leader_epoch))
    }

    /// The endpoints of every leader hinted so far, by node id.
    pub fn into_endpoints(self) -> Vec<LeaderEndpoint> {
        self.endpoints.into_values().collect()
    }
}
