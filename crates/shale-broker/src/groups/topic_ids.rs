//! OffsetCommit and OffsetFetch v10 (KIP-848) name topics by id instead of by name. The ids
//! are resolved in the metadata image before the offsets are committed or fetched by name,
//! and the answers name topics by id again, as Kafka 4.4 does: an id this broker does not
//! know is answered UNKNOWN_TOPIC_ID for its partitions, and an OffsetFetch of every topic
//! leaves out the offsets of topics that no longer exist (they have no id to name them by).

use kafka_protocol::messages::offset_commit_request::OffsetCommitRequestTopic;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopics;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use shale_metadata::MetadataImage;

use crate::errors::unknown_topic_id_code;

/// The first version of OffsetCommit and OffsetFetch that names topics by id.
pub const TOPIC_ID_MIN_VERSION: i16 = 10;

/// Gives each topic its name from its id; topics with an unknown id are taken out and
/// answered here.
pub fn resolve_commit_topics(
    image: &MetadataImage,
    topics: Vec<OffsetCommitRequestTopic>,
) -> (
    Vec<OffsetCommitRequestTopic>,
    Vec<OffsetCommitResponseTopic>,
) {
    let mut named = Vec::with_capacity(topics.len());
    let mut unknown = Vec::new();
    for topic in topics {
        match image.topic_by_id(topic.topic_id) {
            Some(found) => {
                let name = TopicName(StrBytes::from_string(found.name.clone()));
                named.push(topic.with_name(name));
            }
            None => unknown.push(
                OffsetCommitResponseTopic::default()
                    .with_topic_id(topic.topic_id)
                    .with_partitions(
                        topic
                            .partitions
                            .iter()
                            .map(|p| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(unknown_topic_id_code())
                            })
                            .collect(),
                    ),
            ),
        }
    }
    (named, unknown)
}

/// Names each answered topic by its id.
pub fn commit_answer_ids(image: &MetadataImage, topics: &mut [OffsetCommitResponseTopic]) {
    for topic in topics {
        if let Some(found) = image.topic(topic.name.0.as_str()) {
            topic.topic_id = found.topic_id;
        }
    }
}

/// Gives each requested topic its name from its id; topics with an unknown id are taken
/// out and answered here.
pub fn resolve_fetch_topics(
    image: &MetadataImage,
    topics: Vec<OffsetFetchRequestTopics>,
) -> (
    Vec<OffsetFetchRequestTopics>,
    Vec<OffsetFetchResponseTopics>,
) {
    let mut named = Vec::with_capacity(topics.len());
    let mut unknown = Vec::new();
    for topic in topics {
        match image.topic_by_id(topic.topic_id) {
            Some(found) => {
                let name = TopicName(StrBytes::from_string(found.name.clone()));
                named.push(topic.with_name(name));
            }
            None => unknown.push(
                OffsetFetchResponseTopics::default()
                    .with_topic_id(topic.topic_id)
                    .with_partitions(
                        topic
                            .partition_indexes
                            .iter()
                            .map(|&p| {
                                OffsetFetchResponsePartitions::default()
                                    .with_partition_index(p)
                                    .with_committed_offset(-1)
                                    .with_committed_leader_epoch(-1)
                                    .with_metadata(Some(StrBytes::from_static_str("")))
                                    .with_error_code(unknown_topic_id_code())
                            })
                            .collect(),
                    ),
            ),
        }
    }
    (named, unknown)
}

/// Names each answered topic by its id; a topic without one (deleted since its offsets were
/// committed) is left out.
pub fn fetch_answer_ids(
    image: &MetadataImage,
    topics: Vec<OffsetFetchResponseTopics>,
) -> Vec<OffsetFetchResponseTopics> {
    topics
        .into_iter()
        .filter_map(|topic| {
            let id = image.topic(topic.name.0.as_str())?.topic_id;
            Some(topic.with_topic_id(id))
        })
        .collect()
}
