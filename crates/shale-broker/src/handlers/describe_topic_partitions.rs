//! DescribeTopicPartitions (KIP-966): the partitions of topics by name, with their eligible
//! leader replicas and last known ELR, paginated. Topics are answered in name order; a
//! response holds at most `response_partition_limit` partitions (capped by
//! `max.request.partition.size.limit`, Kafka's 2000) and names where the next one starts
//! (`next_cursor`); a request's `cursor` resumes there.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_metadata::image::is_internal_topic;
use shale_metadata::{MetadataImage, PartitionImage, TopicImage};
use uuid::Uuid;

use super::metadata::{offline_replicas, partition_error_code};
use crate::authorization::{AclOperation, ResourceType};
use crate::authorizer::Authz;
use crate::broker::Broker;
use crate::errors::authorization_failed_code;
use crate::request::RequestContext;

/// Kafka's `max.request.partition.size.limit` default.
const PARTITION_LIMIT_DEFAULT: i32 = 2000;

/// Topics the principal may not DESCRIBE are left out of an all-topics answer and answered
/// TOPIC_AUTHORIZATION_FAILED when named, as Kafka does.
pub fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    request: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let configured_limit = broker
        .config
        .properties
        .get("max.request.partition.size.limit")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(PARTITION_LIMIT_DEFAULT);
    let limit = request
        .response_partition_limit
        .min(configured_limit)
        .max(1);
    describe(&broker.image(), &request, limit, &broker.authz(ctx))
}

fn describe(
    image: &MetadataImage,
    request: &DescribeTopicPartitionsRequest,
    limit: i32,
    authz: &Authz<'_>,
) -> DescribeTopicPartitionsResponse {
    let described = |name: &str| authz.allows(AclOperation::Describe, ResourceType::Topic, name);
    let operations = |name: &str| authz.authorized_operations(ResourceType::Topic, name);
    let fetch_all = request.topics.is_empty();
    let cursor = request
        .cursor
        .as_ref()
        .map(|c| (c.topic_name.0.to_string(), c.partition_index.max(0)));
    let cursor_topic = cursor.as_ref().map_or("", |(t, _)| t.as_str());
    let names: BTreeSet<String> = if fetch_all {
        image
            .topics()
            .map(|t| t.name.clone())
            .filter(|n| n.as_str() >= cursor_topic && described(n))
            .collect()
    } else {
        request
            .topics
            .iter()
            .map(|t| t.name.0.to_string())
            .filter(|n| n.as_str() >= cursor_topic)
            .collect()
    };
    if let Some((topic, _)) = &cursor {
        if !fetch_all && !names.contains(topic) {
            return invalid_cursor(request);
        }
    }

    let mut response = DescribeTopicPartitionsResponse::default();
    let mut remaining = limit;
    for name in names {
        if remaining == 0 {
            // Every partition of the earlier topics fit: the next response starts here.
            response.next_cursor = Some(cursor_at(&name, 0));
            break;
        }
        if !described(&name) {
            response.topics.push(refused_topic(name));
            continue;
        }
        let Some(topic) = image.topic(&name) else {
            if !fetch_all {
                let ops = operations(&name);
                response.topics.push(unknown_topic(name, ops));
            }
            continue;
        };
        let start = match &cursor {
            Some((t, index)) if *t == name => *index,
            _ => 0,
        };
        let (entry, next) = topic_entry(image, topic, start, remaining, operations(&name));
        remaining -= entry.partitions.len() as i32;
        response.topics.push(entry);
        if let Some(next) = next {
            response.next_cursor = Some(cursor_at(&name, next));
            break;
        }
    }
    response
}

fn cursor_at(topic: &str, partition_index: i32) -> Cursor {
    Cursor::default()
        .with_topic_name(TopicName(StrBytes::from_string(topic.to_string())))
        .with_partition_index(partition_index)
}

/// A cursor naming a topic outside the requested list: the response schema has no
/// top-level error, so Kafka answers INVALID_REQUEST on every requested topic.
fn invalid_cursor(request: &DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            DescribeTopicPartitionsResponseTopic::default()
                .with_error_code(ResponseError::InvalidRequest.code())
                .with_name(Some(t.name.clone()))
                .with_topic_id(Uuid::nil())
        })
        .collect();
    DescribeTopicPartitionsResponse::default().with_topics(topics)
}

fn refused_topic(name: String) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic::default()
        .with_error_code(authorization_failed_code(ResourceType::Topic))
        .with_name(Some(TopicName(StrBytes::from_string(name))))
        .with_topic_id(Uuid::nil())
}

fn unknown_topic(name: String, operations: i32) -> DescribeTopicPartitionsResponseTopic {
    let code = if shale_metadata::validate_topic_name(&name).is_ok() {
        ResponseError::UnknownTopicOrPartition.code()
    } else {
        ResponseError::InvalidTopicException.code()
    };
    DescribeTopicPartitionsResponseTopic::default()
        .with_error_code(code)
        .with_is_internal(is_internal_topic(&name))
        .with_name(Some(TopicName(StrBytes::from_string(name))))
        .with_topic_id(Uuid::nil())
        .with_topic_authorized_operations(operations)
}

/// The topic's partitions from `start`, at most `max_count` of them, and the index where
/// the rest starts when some did not fit.
fn topic_entry(
    image: &MetadataImage,
    topic: &TopicImage,
    start: i32,
    max_count: i32,
    operations: i32,
) -> (DescribeTopicPartitionsResponseTopic, Option<i32>) {
    let upper = start.saturating_add(max_count);
    let partitions: Vec<DescribeTopicPartitionsResponsePartition> = topic
        .partitions
        .range(start..upper)
        .map(|(_, p)| partition_entry(image, p))
        .collect();
    let next = topic.partitions.range(upper..).next().map(|(i, _)| *i);
    let entry = DescribeTopicPartitionsResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_topic_id(topic.topic_id)
        .with_is_internal(topic.is_internal())
        .with_partitions(partitions)
        .with_topic_authorized_operations(operations);
    (entry, next)
}

fn partition_entry(
    image: &MetadataImage,
    p: &PartitionImage,
) -> DescribeTopicPartitionsResponsePartition {
    let ids = |list: &[i32]| list.iter().map(|r| BrokerId(*r)).collect::<Vec<_>>();
    DescribeTopicPartitionsResponsePartition::default()
        .with_error_code(partition_error_code(p))
        .with_partition_index(p.partition)
        .with_leader_id(BrokerId(p.leader))
        .with_leader_epoch(p.leader_epoch)
        .with_replica_nodes(ids(&p.replicas))
        .with_isr_nodes(ids(&p.isr))
        .with_eligible_leader_replicas(Some(ids(&p.eligible_leader_replicas)))
        .with_last_known_elr(Some(ids(&p.last_known_elr)))
        .with_offline_replicas(ids(&offline_replicas(image, p)))
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::describe_topic_partitions_request::{
        Cursor as RequestCursor, TopicRequest,
    };
    use shale_metadata::MetadataRecord;

    use super::*;

    fn image() -> MetadataImage {
        let mut records = Vec::new();
        for (name, id, count) in [("b", 2u128, 3), ("a", 1, 2)] {
            records.push(MetadataRecord::Topic {
                name: name.into(),
                topic_id: Uuid::from_u128(id),
            });
            for partition in 0..count {
                records.push(MetadataRecord::Partition {
                    topic_id: Uuid::from_u128(id),
                    partition,
                    replicas: vec![1, 2],
                    isr: vec![1],
                    leader: 1,
                    leader_epoch: 4,
                    partition_epoch: 0,
                    adding_replicas: vec![],
                    removing_replicas: vec![],
                });
            }
        }
        records.push(MetadataRecord::PartitionChangeWithElr {
            topic_id: Uuid::from_u128(2),
            partition: 1,
            leader: Some(-1),
            isr: Some(vec![]),
            replicas: None,
            adding_replicas: None,
            removing_replicas: None,
            eligible_leader_replicas: Some(vec![1, 2]),
            last_known_elr: Some(vec![1]),
        });
        MetadataImage::empty("c").apply_entry(&records, 1)
    }

    fn request(topics: &[&str], cursor: Option<(&str, i32)>) -> DescribeTopicPartitionsRequest {
        DescribeTopicPartitionsRequest::default()
            .with_topics(
                topics
                    .iter()
                    .map(|t| {
                        TopicRequest::default()
                            .with_name(TopicName(StrBytes::from_string(t.to_string())))
                    })
                    .collect(),
            )
            .with_cursor(cursor.map(|(t, p)| {
                RequestCursor::default()
                    .with_topic_name(TopicName(StrBytes::from_string(t.to_string())))
                    .with_partition_index(p)
            }))
    }

    fn listed(r: &DescribeTopicPartitionsResponse) -> Vec<(String, Vec<i32>)> {
        r.topics
            .iter()
            .map(|t| {
                (
                    t.name.as_ref().map_or(String::new(), |n| n.0.to_string()),
                    t.partitions.iter().map(|p| p.partition_index).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn pages_through_every_topic_in_name_order() {
        let image = image();
        let first = describe(&image, &request(&[], None), 3, &Authz::allow_all());
        assert_eq!(
            listed(&first),
            vec![("a".into(), vec![0, 1]), ("b".into(), vec![0])]
        );
        let next = first.next_cursor.unwrap();
        assert_eq!((next.topic_name.0.as_str(), next.partition_index), ("b", 1));
        let second = describe(
            &image,
            &request(&[], Some(("b", 1))),
            3,
            &Authz::allow_all(),
        );
        assert_eq!(listed(&second), vec![("b".into(), vec![1, 2])]);
        assert!(second.next_cursor.is_none());
        // A page that ends exactly at a topic's end points at the next topic's start.
        let exact = describe(&image, &request(&[], None), 2, &Authz::allow_all());
        let next = exact.next_cursor.unwrap();
        assert_eq!((next.topic_name.0.as_str(), next.partition_index), ("b", 0));
    }

    #[test]
    fn unknown_topics_and_elr_fields() {
        let image = image();
        let r = describe(
            &image,
            &request(&["missing", "b"], None),
            2000,
            &Authz::allow_all(),
        );
        assert_eq!(
            listed(&r),
            vec![("b".into(), vec![0, 1, 2]), ("missing".into(), vec![])]
        );
        assert_eq!(
            r.topics[1].error_code,
            ResponseError::UnknownTopicOrPartition.code()
        );
        let p1 = &r.topics[0].partitions[1];
        assert_eq!(p1.leader_id, BrokerId(-1));
        assert_eq!(p1.error_code, ResponseError::LeaderNotAvailable.code());
        assert!(p1.isr_nodes.is_empty());
        assert_eq!(
            p1.eligible_leader_replicas,
            Some(vec![BrokerId(1), BrokerId(2)])
        );
        assert_eq!(p1.last_known_elr, Some(vec![BrokerId(1)]));
        assert_eq!(r.topics[0].topic_id, Uuid::from_u128(2));
        assert_eq!(
            r.topics[0].topic_authorized_operations,
            ResourceType::Topic.all_operations_bits()
        );
        // The cursor's topic must be among the requested ones.
        let bad = describe(
            &image,
            &request(&["a"], Some(("b", 0))),
            10,
            &Authz::allow_all(),
        );
        assert_eq!(
            bad.topics[0].error_code,
            ResponseError::InvalidRequest.code()
        );
    }
}
