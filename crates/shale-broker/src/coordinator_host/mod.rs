//! The one host of the broker's coordinators (groups over `__consumer_offsets`, transactions
//! over `__transaction_state`, and the KIP-848 and share coordinators to come), after Kafka's
//! CoordinatorRuntime: it follows leadership of the coordinator's internal topic (load the
//! partitions this broker now leads, unload those it lost), creates the topic once on first
//! use, replays a partition's records into the coordinator's state machine, and appends the
//! records a decision produced so that the answer waits until the in-sync replicas have them.
//! The coordinators keep only their own state and decisions.

mod append;
mod replay;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;
use shale_metadata::MetadataImage;
use shale_replica::{leadership_delta, led_partitions, LeadershipDelta, Partition, ReplicaManager};
use uuid::Uuid;

pub use append::{append_records, CoordinatorAppend, CoordinatorAppendError};
pub use replay::replay_partition;

/// What a coordinator serves of its internal topic, keyed per partition by what it was
/// loaded for (`K`: the topic id, or the topic id and leader epoch when a new epoch must
/// reload).
pub struct CoordinatorHost<K> {
    topic: &'static str,
    served: Mutex<HashMap<i32, K>>,
    /// Serialises creation of the internal topic among concurrent first users.
    creating: tokio::sync::Mutex<()>,
}

impl<K: PartialEq + Clone> CoordinatorHost<K> {
    pub fn new(topic: &'static str) -> CoordinatorHost<K> {
        CoordinatorHost {
            topic,
            served: Mutex::new(HashMap::new()),
            creating: tokio::sync::Mutex::new(()),
        }
    }

    /// Follows leadership of the internal topic in `image` (called once the hosted partitions
    /// match it): `unload` runs for every partition lost, `load` for every partition gained,
    /// all under the served-set lock so that two images never interleave their changes.
    pub fn follow_leadership(
        &self,
        replicas: &ReplicaManager,
        image: &MetadataImage,
        key_of: impl Fn(Uuid, i32) -> K,
        mut unload: impl FnMut(i32),
        mut load: impl FnMut(i32, &K, Arc<Partition>),
    ) {
        let wanted: HashMap<i32, K> = led_partitions(image, self.topic, replicas.node_id())
            .into_iter()
            .map(|(partition, (topic_id, leader_epoch))| {
                (partition, key_of(topic_id, leader_epoch))
            })
            .collect();
        let mut served = self.served.lock();
        let LeadershipDelta { lost, gained } =
            leadership_delta(replicas, self.topic, &mut served, wanted);
        for partition in lost {
            unload(partition);
        }
        for (partition, key, hosted) in gained {
            load(partition, &key, hosted);
            served.insert(partition, key);
        }
    }

    /// Creates the internal topic with `create` unless `exists` (asked again once the
    /// creation lock is held) says it is there: concurrent first users create it once.
    pub async fn ensure_topic<F: Future<Output = ()>>(
        &self,
        exists: impl Fn() -> bool,
        create: impl FnOnce() -> F,
    ) {
        if exists() {
            return;
        }
        let _creating = self.creating.lock().await;
        if exists() {
            return;
        }
        create().await;
    }
}

#[cfg(test)]
mod tests;
