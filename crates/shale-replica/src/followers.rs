//! The partitions this broker follows: one fetcher per leader (and `num.replica.fetchers`
//! index), kept in line with the metadata image.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use shale_log::TopicPartition;
use shale_metadata::MetadataImage;

use crate::context::ReplicaContext;
use crate::fetcher::{FetcherManager, FollowTarget};

/// The broker's followers' fetchers.
pub struct Followers {
    ctx: Weak<dyn ReplicaContext>,
    fetchers: FetcherManager,
}

impl std::fmt::Debug for Followers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Followers")
            .field("fetchers", &self.fetchers)
            .finish()
    }
}

impl Followers {
    /// `ctx` is the broker this belongs to (a weak reference: the broker owns this).
    pub fn new(ctx: Weak<dyn ReplicaContext>) -> Followers {
        Followers {
            ctx,
            fetchers: FetcherManager::default(),
        }
    }

    /// Follows the leader of every hosted partition this broker does not lead (after the
    /// hosted partitions took the image's roles).
    pub fn reconcile(&self, image: &MetadataImage) {
        let Some(ctx): Option<Arc<dyn ReplicaContext>> = self.ctx.upgrade() else {
            return;
        };
        let node_id = ctx.replicas().node_id();
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
        self.fetchers.reconcile(&ctx, wanted);
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
