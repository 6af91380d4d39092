//! How coordinators follow the leadership of their internal topics' partitions.

use std::collections::HashMap;
use std::sync::Arc;

use shale_log::TopicPartition;
use tracing::warn;
use uuid::Uuid;

use crate::manager::ReplicaManager;
use crate::partition::Partition;

/// The partitions of `topic` that `node_id` leads: partition -> (topic id, leader epoch).
/// Coordinators use it to follow leadership of their internal topics.
pub fn led_partitions(
    image: &shale_metadata::MetadataImage,
    topic: &str,
    node_id: i32,
) -> HashMap<i32, (Uuid, i32)> {
    image
        .topic(topic)
        .map(|t| {
            t.partitions
                .iter()
                .filter(|(_, p)| p.leader == node_id)
                .map(|(&partition, p)| (partition, (t.topic_id, p.leader_epoch)))
                .collect()
        })
        .unwrap_or_default()
}

/// How a coordinator's served partitions of `topic` must change to match `wanted`: the
/// partitions to unload (removed from `served`), and those to load with their hosted log. A
/// wanted partition whose log this broker does not host yet is skipped (with a warning) and
/// retried at the next image.
pub fn leadership_delta<K: PartialEq + Clone>(
    replicas: &ReplicaManager,
    topic: &str,
    served: &mut HashMap<i32, K>,
    wanted: HashMap<i32, K>,
) -> LeadershipDelta<K> {
    let lost: Vec<i32> = served
        .iter()
        .filter(|(p, key)| wanted.get(p) != Some(key))
        .map(|(p, _)| *p)
        .collect();
    for partition in &lost {
        served.remove(partition);
    }
    let mut gained = Vec::new();
    for (partition, key) in wanted {
        if served.contains_key(&partition) {
            continue;
        }
        let tp = TopicPartition {
            topic: topic.to_owned(),
            partition,
        };
        match replicas.get(&tp) {
            Some(hosted) => gained.push((partition, key, hosted)),
            None => warn!(partition, "leader of {topic} partition without its log"),
        }
    }
    LeadershipDelta { lost, gained }
}

/// What [`leadership_delta`] found.
pub struct LeadershipDelta<K> {
    /// Partitions no longer led at the served key: unload them.
    pub lost: Vec<i32>,
    /// Partitions now led, with their key and hosted log: load them.
    pub gained: Vec<(i32, K, Arc<Partition>)>,
}
