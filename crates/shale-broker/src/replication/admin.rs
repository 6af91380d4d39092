//! The replication admin APIs, answered through the controller: ElectLeaders (preferred or
//! unclean), AlterPartitionReassignments and ListPartitionReassignments.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ElectLeadersRequest, ElectLeadersResponse, ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use shale_metadata::{
    ControllerRequest, ControllerResponse, ElectionType, MetadataError, ReassignablePartition,
};

use crate::broker::Broker;
use crate::controller_calls::within_timeout_ms;
use crate::errors::metadata_error_code;

/// Kafka's ElectionType: 0 preferred, 1 unclean.
const ELECTION_UNCLEAN: i8 = 1;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn message(text: String) -> Option<StrBytes> {
    Some(StrBytes::from_string(text))
}

pub async fn elect_leaders(
    broker: &Arc<Broker>,
    version: i16,
    request: ElectLeadersRequest,
) -> ElectLeadersResponse {
    let election_type = if version >= 1 && request.election_type == ELECTION_UNCLEAN {
        ElectionType::Unclean
    } else {
        ElectionType::Preferred
    };
    let partitions = request.topic_partitions.map(|topics| {
        topics
            .into_iter()
            .flat_map(|t| {
                let topic = t.topic.0.to_string();
                t.partitions.into_iter().map(move |p| (topic.clone(), p))
            })
            .collect::<Vec<_>>()
    });
    let outcome = within_timeout_ms(
        request.timeout_ms,
        broker.metadata.submit(ControllerRequest::ElectLeaders {
            election_type,
            partitions: partitions.clone(),
        }),
    )
    .await;
    let results = match outcome {
        Ok(ControllerResponse::ElectLeaders(results)) => results,
        Ok(_) => return ElectLeadersResponse::default().with_error_code(unknown_error()),
        Err(e) => {
            // Every asked partition carries the failure, as Kafka's controller answers.
            let Some(list) = partitions else {
                return ElectLeadersResponse::default().with_error_code(metadata_error_code(&e).0);
            };
            list.into_iter().map(|tp| (tp, Err(e.clone()))).collect()
        }
    };
    let mut by_topic: BTreeMap<String, Vec<PartitionResult>> = BTreeMap::new();
    for ((topic, partition), result) in results {
        let (code, text) = match result {
            Ok(()) => (0, None),
            Err(e) => {
                let (code, text) = metadata_error_code(&e);
                (code, message(text))
            }
        };
        by_topic.entry(topic).or_default().push(
            PartitionResult::default()
                .with_partition_id(partition)
                .with_error_code(code)
                .with_error_message(text),
        );
    }
    ElectLeadersResponse::default().with_replica_election_results(
        by_topic
            .into_iter()
            .map(|(topic, partitions)| {
                ReplicaElectionResult::default()
                    .with_topic(name(&topic))
                    .with_partition_result(partitions)
            })
            .collect(),
    )
}

fn unknown_error() -> i16 {
    ResponseError::UnknownServerError.code()
}

pub async fn alter_partition_reassignments(
    broker: &Arc<Broker>,
    version: i16,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let allow_rf_change = version < 1 || request.allow_replication_factor_change;
    let image = broker.image();
    let mut refused: BTreeMap<(String, i32), (i16, String)> = BTreeMap::new();
    let mut wanted = Vec::new();
    let mut order = Vec::new();
    for t in request.topics {
        let topic = t.name.0.to_string();
        for p in t.partitions {
            order.push((topic.clone(), p.partition_index));
            let replicas: Option<Vec<i32>> =
                p.replicas.map(|r| r.into_iter().map(|b| b.0).collect());
            if let (Some(new), false) = (&replicas, allow_rf_change) {
                let current = image
                    .topic(&topic)
                    .and_then(|t| t.partitions.get(&p.partition_index))
                    .map(|p| p.target_replicas().len());
                if current.is_some_and(|n| n != new.len()) {
                    refused.insert(
                        (topic.clone(), p.partition_index),
                        (
                            ResponseError::InvalidReplicationFactor.code(),
                            "The replication factor is changed from the current one, which \
                             allowReplicationFactorChange forbids."
                                .to_string(),
                        ),
                    );
                    continue;
                }
            }
            wanted.push(ReassignablePartition {
                topic: topic.clone(),
                partition: p.partition_index,
                replicas,
            });
        }
    }
    let mut results: BTreeMap<(String, i32), (i16, Option<StrBytes>)> = BTreeMap::new();
    if !wanted.is_empty() {
        let submitted = broker
            .metadata
            .submit(ControllerRequest::AlterPartitionReassignments { partitions: wanted });
        match within_timeout_ms(request.timeout_ms, submitted).await {
            Ok(ControllerResponse::AlterPartitionReassignments(list)) => {
                for (tp, r) in list {
                    let entry = match r {
                        Ok(()) => (0, None),
                        Err(e) => {
                            let (code, text) = metadata_error_code(&e);
                            (code, message(text))
                        }
                    };
                    results.insert(tp, entry);
                }
            }
            other => {
                let e = match other {
                    Err(e) => e,
                    Ok(_) => MetadataError::InvalidRequest("unexpected controller answer".into()),
                };
                let (code, text) = metadata_error_code(&e);
                return AlterPartitionReassignmentsResponse::default()
                    .with_allow_replication_factor_change(allow_rf_change)
                    .with_error_code(code)
                    .with_error_message(message(text));
            }
        }
    }
    for (tp, (code, text)) in refused {
        results.insert(tp, (code, message(text)));
    }
    let responses = group_by_topic(order, |tp| {
        results.get(tp).cloned().unwrap_or((unknown_error(), None))
    });
    AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(allow_rf_change)
        .with_responses(responses)
}

/// Topic responses in first-seen order, partitions in request order.
fn group_by_topic(
    order: Vec<(String, i32)>,
    result: impl Fn(&(String, i32)) -> (i16, Option<StrBytes>),
) -> Vec<ReassignableTopicResponse> {
    let mut topics: Vec<ReassignableTopicResponse> = Vec::new();
    for tp in order {
        let (code, text) = result(&tp);
        let partition = ReassignablePartitionResponse::default()
            .with_partition_index(tp.1)
            .with_error_code(code)
            .with_error_message(text);
        match topics.iter_mut().find(|t| t.name.0.as_str() == tp.0) {
            Some(t) => t.partitions.push(partition),
            None => topics.push(
                ReassignableTopicResponse::default()
                    .with_name(name(&tp.0))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    topics
}

pub fn list_partition_reassignments(
    broker: &Arc<Broker>,
    request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let image = broker.image();
    let wanted: Option<BTreeMap<String, Vec<i32>>> = request.topics.map(|topics| {
        topics
            .into_iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes))
            .collect()
    });
    let mut by_topic: BTreeMap<String, Vec<OngoingPartitionReassignment>> = BTreeMap::new();
    for (topic, p) in image.reassigning_partitions() {
        if let Some(w) = &wanted {
            if !w
                .get(&topic.name)
                .is_some_and(|ps| ps.contains(&p.partition))
            {
                continue;
            }
        }
        let ids = |v: &[i32]| v.iter().map(|r| BrokerId(*r)).collect::<Vec<_>>();
        by_topic.entry(topic.name.clone()).or_default().push(
            OngoingPartitionReassignment::default()
                .with_partition_index(p.partition)
                .with_replicas(ids(&p.replicas))
                .with_adding_replicas(ids(&p.adding_replicas))
                .with_removing_replicas(ids(&p.removing_replicas)),
        );
    }
    ListPartitionReassignmentsResponse::default().with_topics(
        by_topic
            .into_iter()
            .map(|(topic, partitions)| {
                OngoingTopicReassignment::default()
                    .with_name(name(&topic))
                    .with_partitions(partitions)
            })
            .collect(),
    )
}
