//! What every part of the broker stands on: its configuration, the metadata node (the view
//! of the cluster and the way to the controller), the hosted partitions, and the broker-wide
//! signals (shutdown, metadata applied). The coordinators, the followers and the handlers are
//! built on top of it and receive it; it knows none of them, so nothing below the handlers
//! needs the whole broker.

use std::collections::HashMap;
use std::sync::Arc;

use shale_metadata::{MetadataImage, MetadataNode};
use shale_replica::{ReplicaManager, ReplicationSettings};
use tokio::sync::watch;

use crate::authorizer::{Authorizer, Authz};
use crate::config::{BrokerConfig, Listener};
use crate::request::RequestContext;

/// The broker's foundation: config, metadata, replicas and its signals.
pub struct BrokerCore {
    pub config: BrokerConfig,
    pub metadata: MetadataNode,
    pub replicas: ReplicaManager,
    /// Kafka's `replica.*` settings, read once at start-up.
    pub replication_settings: ReplicationSettings,
    shutdown: watch::Sender<bool>,
    /// The metadata offset up to which hosted partitions match the image.
    reconciled: watch::Sender<i64>,
    /// `config.properties` as a map, built once: config lookups on the produce path use it.
    static_props: HashMap<String, String>,
    /// Kafka's StandardAuthorizer when `authorizer.class.name` names it.
    authorizer: Option<Authorizer>,
}

impl std::fmt::Debug for BrokerCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerCore")
            .field("node_id", &self.config.node_id)
            .finish()
    }
}

impl BrokerCore {
    pub fn new(config: BrokerConfig, metadata: MetadataNode, replicas: ReplicaManager) -> Self {
        let replication_settings = ReplicationSettings::from_properties(
            config.replica_lag_time_max_ms,
            config.producer_id_expiration_ms,
            |name| config.properties.get(name).map(|v| v.to_string()),
        );
        BrokerCore {
            static_props: config
                .properties
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            replication_settings,
            authorizer: config.authorizer.clone().map(Authorizer::new),
            config,
            metadata,
            replicas,
            shutdown: watch::channel(false).0,
            reconciled: watch::channel(-1).0,
        }
    }

    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Tells every task watching [`BrokerCore::shutdown_signal`] to stop.
    pub fn signal_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    pub fn node_id(&self) -> i32 {
        self.config.node_id
    }

    pub fn image(&self) -> Arc<MetadataImage> {
        self.metadata.image()
    }

    /// The authorization checks of a request, against the current image's ACLs.
    pub fn authz<'a>(&'a self, ctx: &'a RequestContext) -> Authz<'a> {
        Authz::new(self.authorizer.as_ref(), &self.image(), ctx)
    }

    /// Whether an authorizer is configured (the ACL APIs answer SECURITY_DISABLED without).
    pub fn has_authorizer(&self) -> bool {
        self.authorizer.is_some()
    }

    /// Records that the hosted partitions match metadata up to `offset`.
    pub fn mark_reconciled(&self, offset: i64) {
        self.reconciled.send_replace(offset);
    }

    /// Waits until the hosted partitions reflect metadata at least as new as `offset`.
    pub async fn wait_reconciled(&self, offset: i64) {
        let mut rx = self.reconciled.subscribe();
        let _ = rx.wait_for(|applied| *applied >= offset).await;
    }

    /// The effective value of a topic-level config name for `topic`.
    pub fn topic_config_value(
        &self,
        image: &MetadataImage,
        topic: &str,
        name: &str,
    ) -> Option<String> {
        // One name resolved, not the whole topic config: acks=all produces ask per partition.
        shale_metadata::config_defs::effective_topic_config(
            image,
            topic,
            name,
            Some(self.config.node_id),
            &self.static_props,
        )
    }

    /// The static broker properties as a plain map (explicit values only).
    pub fn static_props(&self) -> HashMap<String, String> {
        self.static_props.clone()
    }

    /// The advertised endpoint of this broker for a listener name.
    pub fn advertised(&self, listener_name: &str) -> Option<&Listener> {
        self.config
            .advertised_listeners
            .iter()
            .find(|l| l.name == listener_name)
            .or_else(|| self.config.advertised_listeners.first())
    }
}
