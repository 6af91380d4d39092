//! Replicated partitions (Kafka's replication protocol): the leader tracks its followers'
//! log end offsets and the ISR, the high watermark follows the ISR, followers copy the
//! leader's batches as they are with Fetch after truncating with OffsetForLeaderEpoch, and
//! ISR changes are committed through the controller (AlterPartition).

pub mod acks;
pub mod admin;
pub mod checkpoint;
pub mod client;
pub mod fetcher;
pub mod isr;
pub mod leader_state;
pub mod serve;
pub mod settings;
pub mod state;
pub mod truncation;

use std::collections::HashMap;
use std::sync::Weak;

use shale_log::TopicPartition;
use shale_metadata::MetadataImage;

use fetcher::{FetcherManager, FollowTarget};

use crate::Broker;

/// The broker's replication machinery: the fetchers of the partitions it follows.
#[derive(Debug)]
pub struct ReplicationService {
    broker: Weak<Broker>,
    fetchers: FetcherManager,
}

impl ReplicationService {
    pub fn new(broker: Weak<Broker>) -> ReplicationService {
        ReplicationService {
            broker,
            fetchers: FetcherManager::default(),
        }
    }

    /// Follows the leader of every hosted partition this broker does not lead (after the
    /// hosted partitions took the image's roles).
    pub fn reconcile(&self, image: &MetadataImage) {
        let Some(broker) = self.broker.upgrade() else {
            return;
        };
        let node_id = broker.node_id();
        let mut wanted = HashMap::new();
        for topic in image.topics() {
            for (&partition, p) in &topic.partitions {
                if !p.replicas.contains(&node_id) || p.leader == node_id || p.leader < 0 {
                    continue;
                }
                wanted.insert(
                    TopicPartition {
                        topic: topic.name.clone(),
                        partition,
                    },
                    FollowTarget {
                        topic_id: topic.topic_id,
                        leader_id: p.leader,
                        leader_epoch: p.leader_epoch,
                    },
                );
            }
        }
        self.fetchers.reconcile(&broker, wanted);
    }

    /// The brokers this one fetches from.
    pub fn fetch_sources(&self) -> Vec<i32> {
        self.fetchers.sources()
    }

    /// How many fetchers (each its own connection) fetch from `source`.
    pub fn fetchers_of(&self, source: i32) -> usize {
        self.fetchers.fetchers_of(source)
    }

    pub fn shutdown(&self) {
        self.fetchers.stop_all();
    }
}
