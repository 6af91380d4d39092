//! The cluster's topics as the consumer group protocol sees them: ids, names, partition counts
//! and the racks of each partition's replicas (for rack-aware assignors).

use std::collections::{BTreeMap, BTreeSet};

use shale_group::assignor::{TopicMetadata, TopicsImage};
use shale_metadata::MetadataImage;

/// The coordinator's view of `image`. Partitions are numbered 0..n in the metadata, so the
/// partition count is the highest partition number plus one.
pub fn topics_image(image: &MetadataImage) -> TopicsImage {
    let racks: BTreeMap<i32, String> = image
        .brokers()
        .filter_map(|broker| broker.rack.clone().map(|rack| (broker.broker_id, rack)))
        .collect();
    let topics = image
        .topics()
        .map(|topic| {
            let partition_count = topic
                .partitions
                .keys()
                .next_back()
                .map_or(0, |last| usize::try_from(*last + 1).unwrap_or(0));
            let partition_racks = (0..partition_count)
                .map(|index| {
                    i32::try_from(index)
                        .ok()
                        .and_then(|partition| topic.partitions.get(&partition))
                        .map(|partition| {
                            partition
                                .replicas
                                .iter()
                                .filter_map(|replica| racks.get(replica).cloned())
                                .collect::<BTreeSet<String>>()
                        })
                        .unwrap_or_default()
                })
                .collect();
            (
                topic.topic_id,
                TopicMetadata {
                    topic_id: topic.topic_id,
                    name: topic.name.clone(),
                    partition_racks,
                },
            )
        })
        .collect();
    TopicsImage { topics }
}

#[cfg(test)]
mod tests {
    use shale_metadata::MetadataRecord;
    use uuid::Uuid;

    use super::*;

    fn broker(broker_id: i32, rack: Option<&str>) -> MetadataRecord {
        MetadataRecord::RegisterBroker {
            broker_id,
            incarnation_id: Uuid::from_u128(broker_id as u128),
            broker_epoch: 1,
            listeners: vec![],
            rack: rack.map(str::to_string),
            features: vec![],
            fenced: false,
            in_controlled_shutdown: false,
        }
    }

    fn partition(topic_id: Uuid, partition: i32, replicas: Vec<i32>) -> MetadataRecord {
        MetadataRecord::Partition {
            topic_id,
            partition,
            isr: replicas.clone(),
            leader: replicas[0],
            replicas,
            leader_epoch: 0,
            partition_epoch: 0,
            adding_replicas: vec![],
            removing_replicas: vec![],
        }
    }

    #[test]
    fn partitions_carry_the_racks_of_their_replicas() {
        let topic_id = Uuid::from_u128(7);
        let image = MetadataImage::default().apply_entry(
            &[
                broker(1, Some("rack-a")),
                broker(2, Some("rack-b")),
                broker(3, None),
                MetadataRecord::Topic {
                    name: "orders".into(),
                    topic_id,
                },
                partition(topic_id, 0, vec![1, 2]),
                partition(topic_id, 1, vec![3]),
                partition(topic_id, 2, vec![2, 3]),
            ],
            1,
        );
        let topics = topics_image(&image);
        let orders = topics.by_name("orders").unwrap();
        assert_eq!(orders.topic_id, topic_id);
        assert_eq!(orders.partition_count(), 3);
        let racks = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            orders.partition_racks,
            vec![racks(&["rack-a", "rack-b"]), racks(&[]), racks(&["rack-b"])]
        );
    }
}
