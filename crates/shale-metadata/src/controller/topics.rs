//! CreateTopics, DeleteTopics and CreatePartitions.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use uuid::Uuid;

use super::{
    place_replicas, Batch, Controller, CreatableTopic, CreatePartitionsTopic, CreatedTopic,
    DeleteByIdResults, DeleteByNameResults, PlacementBroker,
};
use crate::config_defs;
use crate::error::MetadataError;
use crate::image::MetadataImage;
use crate::records::{ConfigResource, MetadataRecord};

const TOPIC_NAME_LENGTH_MAX: usize = 249;

/// Kafka's topic name rules (org.apache.kafka.common.internals.Topic.validate).
pub fn validate_topic_name(name: &str) -> Result<(), MetadataError> {
    if name.is_empty() {
        return Err(MetadataError::InvalidTopic(
            "Topic name is illegal, it can't be empty".into(),
        ));
    }
    if name == "." || name == ".." {
        return Err(MetadataError::InvalidTopic(
            "Topic name cannot be \".\" or \"..\"".into(),
        ));
    }
    if name.len() > TOPIC_NAME_LENGTH_MAX {
        return Err(MetadataError::InvalidTopic(format!(
            "Topic name is illegal, it can't be longer than {TOPIC_NAME_LENGTH_MAX} characters, \
             topic name: {name}"
        )));
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-')
    {
        return Err(MetadataError::InvalidTopic(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII \
             alphanumerics, '.', '_' and '-'"
        )));
    }
    Ok(())
}

/// Names that differ only in '.' versus '_' collide in metric names, so Kafka refuses them.
fn colliding_topic<'a>(image: &'a MetadataImage, name: &str) -> Option<&'a str> {
    if !name.contains(['.', '_']) {
        return None;
    }
    let normalized = name.replace('.', "_");
    image
        .topics()
        .map(|t| t.name.as_str())
        .find(|existing| *existing != name && existing.replace('.', "_") == normalized)
}

pub(crate) fn usable_brokers(image: &MetadataImage) -> Vec<PlacementBroker> {
    image
        .brokers()
        .filter(|b| b.is_active())
        .map(|b| PlacementBroker {
            id: b.broker_id,
            rack: b.rack.clone(),
        })
        .collect()
}

/// Checks one manually assigned replica list; returns its ISR (the active replicas).
pub(crate) fn validate_manual_replicas(
    image: &MetadataImage,
    partition: i32,
    replicas: &[i32],
) -> Result<Vec<i32>, MetadataError> {
    if replicas.is_empty() {
        return Err(MetadataError::InvalidReplicaAssignment(
            "The manual partition assignment includes an empty replica list.".into(),
        ));
    }
    // Checked in broker id order, as Kafka does, so the error names the same broker.
    let mut sorted = replicas.to_vec();
    sorted.sort_unstable();
    for (i, &r) in sorted.iter().enumerate() {
        if image.broker(r).is_none() {
            return Err(MetadataError::InvalidReplicaAssignment(format!(
                "The manual partition assignment includes broker {r}, but no such broker is \
                 registered."
            )));
        }
        if i > 0 && sorted[i - 1] == r {
            return Err(MetadataError::InvalidReplicaAssignment(format!(
                "The manual partition assignment includes the broker {r} more than once."
            )));
        }
    }
    let isr: Vec<i32> = replicas
        .iter()
        .copied()
        .filter(|r| image.broker(*r).is_some_and(|b| b.is_active()))
        .collect();
    if isr.is_empty() {
        return Err(MetadataError::InvalidReplicaAssignment(format!(
            "All brokers specified in the manual partition assignment for partition {partition} \
             are fenced or in controlled shutdown."
        )));
    }
    Ok(isr)
}

fn partition_record(
    topic_id: Uuid,
    partition: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
) -> MetadataRecord {
    let leader = isr[0];
    MetadataRecord::Partition {
        topic_id,
        partition,
        replicas,
        isr,
        leader,
        leader_epoch: 0,
        partition_epoch: 0,
        adding_replicas: Vec::new(),
        removing_replicas: Vec::new(),
    }
}

/// A planned topic: partitions as (replicas, isr).
struct TopicPlan {
    partitions: Vec<(Vec<i32>, Vec<i32>)>,
    replication_factor: i16,
    configs: BTreeMap<String, String>,
}

impl Controller {
    pub(crate) fn create_topics(
        &mut self,
        batch: &mut Batch,
        topics: Vec<CreatableTopic>,
        validate_only: bool,
    ) -> Vec<(String, Result<CreatedTopic, MetadataError>)> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for t in &topics {
            *counts.entry(t.name.as_str()).or_default() += 1;
        }
        let duplicates: BTreeSet<String> = counts
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(name, _)| name.to_string())
            .collect();
        let mut partitions_created: i64 = 0;
        let mut results = Vec::with_capacity(topics.len());
        let mut reported_duplicates = HashSet::new();
        for topic in topics {
            if duplicates.contains(&topic.name) {
                if reported_duplicates.insert(topic.name.clone()) {
                    results.push((
                        topic.name.clone(),
                        Err(MetadataError::InvalidRequest(format!(
                            "Duplicate topic name {} in the request.",
                            topic.name
                        ))),
                    ));
                }
                continue;
            }
            let name = topic.name.clone();
            let result =
                self.create_one_topic(batch, topic, validate_only, &mut partitions_created);
            results.push((name, result));
        }
        results
    }

    fn create_one_topic(
        &mut self,
        batch: &mut Batch,
        topic: CreatableTopic,
        validate_only: bool,
        partitions_created: &mut i64,
    ) -> Result<CreatedTopic, MetadataError> {
        validate_topic_name(&topic.name)?;
        if batch.image.topic(&topic.name).is_some() {
            return Err(MetadataError::TopicAlreadyExists(format!(
                "Topic '{}' already exists.",
                topic.name
            )));
        }
        if let Some(existing) = colliding_topic(&batch.image, &topic.name) {
            return Err(MetadataError::InvalidTopic(format!(
                "Topic '{}' collides with existing topic: {existing}",
                topic.name
            )));
        }
        let plan = self.plan_topic(&batch.image, &topic)?;
        *partitions_created += plan.partitions.len() as i64;
        if *partitions_created > self.config.partitions_per_request_max {
            return Err(MetadataError::PolicyViolation(
                "Unable to perform excessively large batch operation.".into(),
            ));
        }
        let num_partitions = plan.partitions.len() as i32;
        if validate_only {
            return Ok(CreatedTopic {
                topic_id: Uuid::nil(),
                num_partitions,
                replication_factor: plan.replication_factor,
            });
        }
        let topic_id = loop {
            let id = self.rng.topic_id();
            if batch.image.topic_by_id(id).is_none() {
                break id;
            }
        };
        batch.push(MetadataRecord::Topic {
            name: topic.name.clone(),
            topic_id,
        });
        for (name, value) in plan.configs {
            batch.push(MetadataRecord::Config {
                resource: ConfigResource::Topic(topic.name.clone()),
                name,
                value: Some(value),
            });
        }
        for (partition, (replicas, isr)) in plan.partitions.into_iter().enumerate() {
            batch.push(partition_record(topic_id, partition as i32, replicas, isr));
        }
        Ok(CreatedTopic {
            topic_id,
            num_partitions,
            replication_factor: plan.replication_factor,
        })
    }

    fn plan_topic(
        &mut self,
        image: &MetadataImage,
        topic: &CreatableTopic,
    ) -> Result<TopicPlan, MetadataError> {
        let null_configs: Vec<&str> = topic
            .configs
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(n, _)| n.as_str())
            .collect();
        if !null_configs.is_empty() {
            return Err(MetadataError::InvalidConfig(format!(
                "Null value not supported for topic configs: {}",
                null_configs.join(",")
            )));
        }
        let mut configs = BTreeMap::new();
        for (name, value) in &topic.configs {
            if let Some(value) = value {
                config_defs::validate_topic_config(name, value)?;
                configs.insert(name.clone(), value.clone());
            }
        }
        let partitions = if topic.assignments.is_empty() {
            if topic.replication_factor < -1 || topic.replication_factor == 0 {
                return Err(MetadataError::InvalidReplicationFactor(
                    "Replication factor must be larger than 0, or -1 to use the default value."
                        .into(),
                ));
            }
            if topic.num_partitions < -1 || topic.num_partitions == 0 {
                return Err(MetadataError::InvalidPartitions(
                    "Number of partitions was set to an invalid non-positive value.".into(),
                ));
            }
            let num_partitions = if topic.num_partitions == -1 {
                self.config.num_partitions
            } else {
                topic.num_partitions
            };
            let replication_factor = if topic.replication_factor == -1 {
                self.config.default_replication_factor
            } else {
                topic.replication_factor
            };
            if i64::from(num_partitions) > self.config.partitions_per_request_max {
                return Err(MetadataError::PolicyViolation(
                    "Unable to perform excessively large batch operation.".into(),
                ));
            }
            place_replicas(
                &usable_brokers(image),
                num_partitions,
                replication_factor,
                0,
                None,
                &mut self.rng,
            )?
            .into_iter()
            .map(|replicas| (replicas.clone(), replicas))
            .collect::<Vec<_>>()
        } else {
            if topic.replication_factor != -1 {
                return Err(MetadataError::InvalidRequest(
                    "A manual partition assignment was specified, but replication factor was not \
                     set to -1."
                        .into(),
                ));
            }
            if topic.num_partitions != -1 {
                return Err(MetadataError::InvalidRequest(
                    "A manual partition assignment was specified, but numPartitions was not set \
                     to -1."
                        .into(),
                ));
            }
            let mut by_partition: BTreeMap<i32, &Vec<i32>> = BTreeMap::new();
            for (partition, replicas) in &topic.assignments {
                if by_partition.insert(*partition, replicas).is_some() {
                    return Err(MetadataError::InvalidReplicaAssignment(format!(
                        "Found multiple manual partition assignments for partition {partition}"
                    )));
                }
            }
            let mut planned = Vec::with_capacity(by_partition.len());
            for (expected, (partition, replicas)) in by_partition.into_iter().enumerate() {
                if partition != expected as i32 {
                    return Err(MetadataError::InvalidReplicaAssignment(
                        "partitions should be a consecutive 0-based integer sequence".into(),
                    ));
                }
                let isr = validate_manual_replicas(image, partition, replicas)?;
                if let Some((first, _)) = planned.first() {
                    let first: &Vec<i32> = first;
                    if first.len() != replicas.len() {
                        return Err(MetadataError::InvalidReplicaAssignment(format!(
                            "The manual partition assignment includes a partition with {} \
                             replica(s), but this is not consistent with previous partitions, \
                             which have {} replica(s).",
                            replicas.len(),
                            first.len()
                        )));
                    }
                }
                planned.push((replicas.clone(), isr));
            }
            planned
        };
        let replication_factor = partitions.first().map_or(0, |(r, _)| r.len() as i16);
        Ok(TopicPlan {
            partitions,
            replication_factor,
            configs,
        })
    }

    pub(crate) fn delete_topics(
        &mut self,
        batch: &mut Batch,
        names: Vec<String>,
        ids: Vec<Uuid>,
    ) -> (DeleteByNameResults, DeleteByIdResults) {
        let mut to_remove: BTreeSet<Uuid> = BTreeSet::new();
        let mut by_name = Vec::with_capacity(names.len());
        let mut seen_names = HashSet::new();
        let duplicate_names: HashSet<String> = names
            .iter()
            .filter(|n| !seen_names.insert(n.as_str()))
            .cloned()
            .collect();
        let mut reported = HashSet::new();
        for name in names {
            if duplicate_names.contains(&name) {
                if reported.insert(name.clone()) {
                    by_name.push((
                        name,
                        Err(MetadataError::InvalidRequest(
                            "Duplicate topic name.".into(),
                        )),
                    ));
                }
                continue;
            }
            let result = if !self.config.delete_topic_enable {
                Err(MetadataError::TopicDeletionDisabled)
            } else {
                match batch.image.topic(&name) {
                    Some(t) => {
                        to_remove.insert(t.topic_id);
                        Ok(t.topic_id)
                    }
                    None => Err(MetadataError::UnknownTopicOrPartition),
                }
            };
            by_name.push((name, result));
        }
        let mut by_id = Vec::with_capacity(ids.len());
        let mut seen_ids = HashSet::new();
        let duplicate_ids: HashSet<Uuid> = ids
            .iter()
            .filter(|i| !seen_ids.insert(**i))
            .copied()
            .collect();
        let mut reported_ids = HashSet::new();
        for id in ids {
            if duplicate_ids.contains(&id) {
                if reported_ids.insert(id) {
                    by_id.push((
                        id,
                        Err(MetadataError::InvalidRequest("Duplicate topic id.".into())),
                    ));
                }
                continue;
            }
            let result = if !self.config.delete_topic_enable {
                Err(MetadataError::TopicDeletionDisabled)
            } else {
                match batch.image.topic_by_id(id) {
                    Some(t) => {
                        to_remove.insert(id);
                        Ok(t.name.clone())
                    }
                    None => Err(MetadataError::UnknownTopicId),
                }
            };
            by_id.push((id, result));
        }
        for topic_id in to_remove {
            batch.push(MetadataRecord::RemoveTopic { topic_id });
        }
        (by_name, by_id)
    }

    pub(crate) fn create_partitions(
        &mut self,
        batch: &mut Batch,
        topics: Vec<CreatePartitionsTopic>,
        validate_only: bool,
    ) -> Vec<(String, Result<(), MetadataError>)> {
        let mut seen = HashSet::new();
        let duplicates: HashSet<String> = topics
            .iter()
            .filter(|t| !seen.insert(t.name.as_str()))
            .map(|t| t.name.clone())
            .collect();
        let mut reported = HashSet::new();
        let mut results = Vec::with_capacity(topics.len());
        for topic in topics {
            if duplicates.contains(&topic.name) {
                if reported.insert(topic.name.clone()) {
                    results.push((
                        topic.name.clone(),
                        Err(MetadataError::InvalidRequest(
                            "Duplicate topic name.".into(),
                        )),
                    ));
                }
                continue;
            }
            let name = topic.name.clone();
            let result = self.create_partitions_one(batch, topic, validate_only);
            results.push((name, result));
        }
        results
    }

    fn create_partitions_one(
        &mut self,
        batch: &mut Batch,
        request: CreatePartitionsTopic,
        validate_only: bool,
    ) -> Result<(), MetadataError> {
        let topic = batch
            .image
            .topic(&request.name)
            .ok_or(MetadataError::UnknownTopicOrPartition)?
            .clone();
        let current = topic.partitions.len() as i32;
        if request.count < current {
            return Err(MetadataError::InvalidPartitions(format!(
                "The topic {} currently has {current} partition(s); {} would not be an increase.",
                request.name, request.count
            )));
        }
        if request.count == current {
            return Err(MetadataError::InvalidPartitions(format!(
                "Topic already has {current} partition(s)."
            )));
        }
        let additional = request.count - current;
        if i64::from(additional) > self.config.partitions_per_request_max {
            return Err(MetadataError::PolicyViolation(
                "Unable to perform excessively large batch operation.".into(),
            ));
        }
        let first_replicas = topic
            .partitions
            .values()
            .next()
            .map(|p| p.replicas.clone())
            .unwrap_or_default();
        let replication_factor = first_replicas.len().max(1) as i16;
        let planned: Vec<(Vec<i32>, Vec<i32>)> = match request.assignments {
            Some(assignments) => {
                if assignments.len() as i32 != additional {
                    return Err(MetadataError::InvalidReplicaAssignment(format!(
                        "Attempted to add {additional} additional partition(s), but only {} \
                         assignment(s) were specified.",
                        assignments.len()
                    )));
                }
                let mut planned = Vec::with_capacity(assignments.len());
                for (i, replicas) in assignments.into_iter().enumerate() {
                    let partition = current + i as i32;
                    let isr = validate_manual_replicas(&batch.image, partition, &replicas)?;
                    if replicas.len() != replication_factor as usize {
                        return Err(MetadataError::InvalidReplicaAssignment(format!(
                            "The manual partition assignment includes a partition with {} \
                             replica(s), but this is not consistent with previous partitions, \
                             which have {replication_factor} replica(s).",
                            replicas.len()
                        )));
                    }
                    planned.push((replicas, isr));
                }
                planned
            }
            None => {
                let brokers = usable_brokers(&batch.image);
                // As Kafka's createPartitions: continue the layout from the broker that holds
                // the first replica of partition 0.
                let mut sorted: Vec<i32> = brokers.iter().map(|b| b.id).collect();
                sorted.sort_unstable();
                let start = first_replicas
                    .first()
                    .and_then(|leader| sorted.iter().position(|id| id >= leader))
                    .unwrap_or(0);
                place_replicas(
                    &brokers,
                    additional,
                    replication_factor,
                    current,
                    Some(start),
                    &mut self.rng,
                )?
                .into_iter()
                .map(|r| (r.clone(), r))
                .collect()
            }
        };
        if validate_only {
            return Ok(());
        }
        for (i, (replicas, isr)) in planned.into_iter().enumerate() {
            batch.push(partition_record(
                topic.topic_id,
                current + i as i32,
                replicas,
                isr,
            ));
        }
        Ok(())
    }
}
