//! The broker's core as the replica layer's context: its metadata view, the controller, its
//! inter-broker connections and its replica settings.

use std::sync::Arc;
use std::time::Duration;

use shale_metadata::{ControllerRequest, ControllerResponse, MetadataError, MetadataImage};
use shale_replica::{
    BoxFuture, LeaderLink, LinkError, ReplicaContext, ReplicaManager, ReplicationSettings,
};
use tokio::sync::watch;

use super::client::connect_inter_broker;
use super::link::WireLeaderLink;
use crate::core::BrokerCore;

impl ReplicaContext for BrokerCore {
    fn replicas(&self) -> &ReplicaManager {
        &self.replicas
    }

    fn image(&self) -> Arc<MetadataImage> {
        self.metadata.image()
    }

    fn broker_epoch(&self) -> i64 {
        self.metadata.broker_epoch()
    }

    fn settings(&self) -> &ReplicationSettings {
        &self.replication_settings
    }

    fn shutdown_signal(&self) -> watch::Receiver<bool> {
        BrokerCore::shutdown_signal(self)
    }

    fn submit(
        &self,
        request: ControllerRequest,
    ) -> BoxFuture<'_, Result<ControllerResponse, MetadataError>> {
        Box::pin(self.metadata.submit(request))
    }

    fn connect_to_leader(
        &self,
        leader_id: i32,
    ) -> BoxFuture<'_, Result<Box<dyn LeaderLink>, LinkError>> {
        Box::pin(async move {
            let client = connect_inter_broker(
                self,
                leader_id,
                format!("broker-{}-fetcher-{leader_id}", self.node_id()),
                Duration::from_millis(self.replication_settings.socket_timeout_ms as u64),
            )
            .await
            .map_err(|e| LinkError::Io(std::io::Error::other(e.to_string())))?;
            let link: Box<dyn LeaderLink> = Box::new(WireLeaderLink::new(client, self.node_id()));
            Ok(link)
        })
    }
}
