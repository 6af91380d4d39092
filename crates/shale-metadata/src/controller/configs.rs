//! IncrementalAlterConfigs and the legacy AlterConfigs (which replaces a resource's whole set).

use std::collections::{BTreeMap, HashSet};

use uuid::Uuid;

use super::partitions::{ChangeSpec, Election};
use super::{AlterConfigOp, AlterConfigOpType, Batch, ConfigSet, Controller};
use crate::config_defs::{self, ConfigType};
use crate::error::MetadataError;
use crate::group_config_defs::{self, validate_group_configs};
use crate::image::{MetadataImage, NO_LEADER};
use crate::records::{ConfigResource, MetadataRecord};

type ResourceResults = Vec<(ConfigResource, Result<(), MetadataError>)>;

fn validate_value(resource: &ConfigResource, name: &str, value: &str) -> Result<(), MetadataError> {
    match resource {
        ConfigResource::Topic(_) => config_defs::validate_topic_config(name, value),
        ConfigResource::Broker(_) | ConfigResource::ClusterDefaultBroker => {
            config_defs::validate_broker_config(name, value)
        }
        // A group's keys depend on each other: checked together once planned.
        ConfigResource::Group(_) => Ok(()),
    }
}

fn check_resource(image: &MetadataImage, resource: &ConfigResource) -> Result<(), MetadataError> {
    match resource {
        ConfigResource::Topic(name) => {
            if image.topic(name).is_none() {
                return Err(MetadataError::UnknownTopicOrPartition);
            }
        }
        ConfigResource::Broker(id) => {
            if *id < 0 {
                return Err(MetadataError::InvalidRequest(format!(
                    "Invalid broker name {id}"
                )));
            }
        }
        ConfigResource::ClusterDefaultBroker => {}
        ConfigResource::Group(group_id) => {
            if group_id.is_empty() {
                return Err(MetadataError::InvalidRequest(
                    "Default group resources are not allowed.".into(),
                ));
            }
        }
    }
    Ok(())
}

fn is_list(resource: &ConfigResource, name: &str) -> bool {
    let config_type = match resource {
        ConfigResource::Topic(_) => config_defs::topic_config_def(name).map(|d| d.config_type),
        ConfigResource::Group(_) => {
            group_config_defs::group_config_def(name).map(|d| d.config_type)
        }
        _ => config_defs::topic_config_for_broker_synonym(name).map(|(d, _)| d.config_type),
    };
    config_type == Some(ConfigType::List)
}

fn list_default(resource: &ConfigResource, name: &str) -> String {
    match resource {
        ConfigResource::Topic(_) => config_defs::topic_config_def(name)
            .map(|d| d.default.to_string())
            .unwrap_or_default(),
        ConfigResource::Group(_) => group_config_defs::group_config_def(name)
            .map(|d| d.default.to_string())
            .unwrap_or_default(),
        _ => config_defs::topic_config_for_broker_synonym(name)
            .and_then(|(_, s)| s.default)
            .unwrap_or_default()
            .to_string(),
    }
}

fn duplicate_keys<'a>(names: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = HashSet::new();
    names.into_iter().any(|n| !seen.insert(n))
}

/// The cluster-wide `min.insync.replicas` that KIP-966 keeps while ELR is enabled (Kafka's
/// controller writes it when ELR is enabled and refuses to remove it).
const MIN_ISR: &str = "min.insync.replicas";

fn min_isr_removal_refused() -> MetadataError {
    MetadataError::InvalidConfig(
        "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.".into(),
    )
}

/// Whether `changes` to `resource` would drop the cluster-level `min.insync.replicas` while
/// ELR is enabled.
fn removes_elr_min_isr(
    image: &MetadataImage,
    resource: &ConfigResource,
    changes: &BTreeMap<String, Option<String>>,
) -> bool {
    *resource == ConfigResource::ClusterDefaultBroker
        && image.elr_enabled()
        && changes.get(MIN_ISR).is_some_and(|v| v.is_none())
}

fn null_value(name: &str) -> MetadataError {
    MetadataError::InvalidRequest(format!("Null value not supported for : {name}"))
}

impl Controller {
    pub(crate) fn incremental_alter_configs(
        &mut self,
        batch: &mut Batch,
        resources: Vec<(ConfigResource, Vec<AlterConfigOp>)>,
        validate_only: bool,
    ) -> ResourceResults {
        let mut results = Vec::with_capacity(resources.len());
        for (resource, ops) in resources {
            let result = self
                .plan_incremental(&batch.image, &resource, &ops)
                .map(|changes| {
                    if !validate_only {
                        self.write_config_changes(batch, &resource, changes);
                    }
                });
            results.push((resource, result));
        }
        results
    }

    fn plan_incremental(
        &self,
        image: &MetadataImage,
        resource: &ConfigResource,
        ops: &[AlterConfigOp],
    ) -> Result<BTreeMap<String, Option<String>>, MetadataError> {
        check_resource(image, resource)?;
        if duplicate_keys(ops.iter().map(|o| o.name.as_str())) {
            return Err(MetadataError::InvalidRequest(
                "Error due to duplicate config keys".into(),
            ));
        }
        let current = image.configs(resource);
        let mut changes = BTreeMap::new();
        for op in ops {
            let new_value = match op.op {
                AlterConfigOpType::Set => {
                    let value = op.value.clone().ok_or_else(|| null_value(&op.name))?;
                    validate_value(resource, &op.name, &value)?;
                    Some(value)
                }
                AlterConfigOpType::Delete => {
                    if matches!(resource, ConfigResource::Topic(_))
                        && config_defs::topic_config_def(&op.name).is_none()
                    {
                        return Err(MetadataError::InvalidConfig(format!(
                            "Unknown topic config name: {}",
                            op.name
                        )));
                    }
                    None
                }
                AlterConfigOpType::Append | AlterConfigOpType::Subtract => {
                    if !is_list(resource, &op.name) {
                        if matches!(resource, ConfigResource::Group(_)) {
                            let op_name = if op.op == AlterConfigOpType::Append {
                                "APPEND"
                            } else {
                                "SUBTRACT"
                            };
                            return Err(group_config_defs::not_a_list(op_name, &op.name));
                        }
                        let verb = if op.op == AlterConfigOpType::Append {
                            "append"
                        } else {
                            "subtract"
                        };
                        return Err(MetadataError::InvalidConfig(format!(
                            "Config value {verb} is not allowed for config key: {}",
                            op.name
                        )));
                    }
                    let value = op.value.clone().ok_or_else(|| null_value(&op.name))?;
                    let base = current
                        .get(&op.name)
                        .cloned()
                        .unwrap_or_else(|| list_default(resource, &op.name));
                    let mut items = config_defs::parse_list(&base);
                    let operands = config_defs::parse_list(&value);
                    if op.op == AlterConfigOpType::Append {
                        for item in operands {
                            if !items.contains(&item) {
                                items.push(item);
                            }
                        }
                    } else {
                        items.retain(|i| !operands.contains(i));
                    }
                    let joined = items.join(",");
                    validate_value(resource, &op.name, &joined)?;
                    Some(joined)
                }
            };
            changes.insert(op.name.clone(), new_value);
        }
        if removes_elr_min_isr(image, resource, &changes) {
            return Err(min_isr_removal_refused());
        }
        self.check_group_result(image, resource, &changes)?;
        Ok(changes)
    }

    pub(crate) fn legacy_alter_configs(
        &mut self,
        batch: &mut Batch,
        resources: Vec<(ConfigResource, ConfigSet)>,
        validate_only: bool,
    ) -> ResourceResults {
        let mut results = Vec::with_capacity(resources.len());
        for (resource, configs) in resources {
            let result = self
                .plan_legacy(&batch.image, &resource, &configs)
                .map(|changes| {
                    if !validate_only {
                        self.write_config_changes(batch, &resource, changes);
                    }
                });
            results.push((resource, result));
        }
        results
    }

    fn plan_legacy(
        &self,
        image: &MetadataImage,
        resource: &ConfigResource,
        configs: &[(String, Option<String>)],
    ) -> Result<BTreeMap<String, Option<String>>, MetadataError> {
        check_resource(image, resource)?;
        if duplicate_keys(configs.iter().map(|(n, _)| n.as_str())) {
            return Err(MetadataError::InvalidRequest(
                "Error due to duplicate config keys".into(),
            ));
        }
        let mut changes: BTreeMap<String, Option<String>> = image
            .configs(resource)
            .keys()
            .map(|k| (k.clone(), None))
            .collect();
        for (name, value) in configs {
            let value = value.clone().ok_or_else(|| null_value(name))?;
            validate_value(resource, name, &value)?;
            changes.insert(name.clone(), Some(value));
        }
        if removes_elr_min_isr(image, resource, &changes) {
            return Err(min_isr_removal_refused());
        }
        self.check_group_result(image, resource, &changes)?;
        Ok(changes)
    }

    /// A group's configs as they would be after `changes`, checked as Kafka's GroupConfig
    /// validates them against this node's `group.consumer.*` bounds.
    fn check_group_result(
        &self,
        image: &MetadataImage,
        resource: &ConfigResource,
        changes: &BTreeMap<String, Option<String>>,
    ) -> Result<(), MetadataError> {
        if !matches!(resource, ConfigResource::Group(_)) {
            return Ok(());
        }
        let mut after = image.configs(resource).clone();
        for (name, value) in changes {
            match value {
                Some(v) => after.insert(name.clone(), v.clone()),
                None => after.remove(name),
            };
        }
        validate_group_configs(
            &after,
            &self.config.group_config_bounds,
            &self.config.share_group_config_bounds,
        )
    }

    /// KIP-966, as Kafka's controller does it: while ELR is enabled the cluster carries an
    /// explicit cluster-level `min.insync.replicas` (the controller's own value), written
    /// with the first broker registration that finds none, so every broker and
    /// DescribeConfigs see the minimum the ELR rules use as a dynamic cluster default.
    pub(crate) fn ensure_elr_min_isr(&self, batch: &mut Batch) {
        if batch.image.elr_enabled()
            && !batch
                .image
                .cluster_default_broker_configs()
                .contains_key(MIN_ISR)
        {
            batch.push(MetadataRecord::Config {
                resource: ConfigResource::ClusterDefaultBroker,
                name: MIN_ISR.to_string(),
                value: Some(self.config.min_insync_replicas.to_string()),
            });
        }
    }

    fn write_config_changes(
        &self,
        batch: &mut Batch,
        resource: &ConfigResource,
        changes: BTreeMap<String, Option<String>>,
    ) {
        let current = batch.image.configs(resource).clone();
        let mut unclean_touched = false;
        let mut min_isr_touched = false;
        for (name, value) in changes {
            if current.get(&name) == value.as_ref() {
                continue;
            }
            unclean_touched |= name == "unclean.leader.election.enable";
            min_isr_touched |= name == "min.insync.replicas";
            batch.push(MetadataRecord::Config {
                resource: resource.clone(),
                name,
                value,
            });
        }
        if min_isr_touched {
            clear_elr(batch, resource);
        }
        if unclean_touched {
            self.elect_leaderless(batch, resource);
        }
    }

    /// Enabling unclean election gives leaderless partitions a leader right away.
    fn elect_leaderless(&self, batch: &mut Batch, resource: &ConfigResource) {
        let targets: Vec<(Uuid, i32)> = batch
            .image
            .topics()
            .filter(|t| match resource {
                ConfigResource::Topic(name) => &t.name == name,
                ConfigResource::Group(_) => false,
                _ => true,
            })
            .flat_map(|t| {
                t.partitions
                    .values()
                    .filter(|p| p.leader == NO_LEADER)
                    .map(move |p| (t.topic_id, p.partition))
            })
            .collect();
        for (topic_id, partition) in targets {
            self.change_partition(
                batch,
                topic_id,
                partition,
                ChangeSpec::default(),
                Election::Normal,
            );
        }
    }
}

/// KIP-966: the ELR was computed against the old `min.insync.replicas`, so a change for a
/// topic clears that topic's ELR and last known ELR, and a change of the cluster default
/// clears every partition's (as Kafka does; a single broker's value does not count).
fn clear_elr(batch: &mut Batch, resource: &ConfigResource) {
    let targets: Vec<(Uuid, i32)> = batch
        .image
        .topics()
        .filter(|t| match resource {
            ConfigResource::Topic(name) => &t.name == name,
            ConfigResource::ClusterDefaultBroker => true,
            ConfigResource::Broker(_) | ConfigResource::Group(_) => false,
        })
        .flat_map(|t| {
            t.partitions
                .values()
                .filter(|p| !p.eligible_leader_replicas.is_empty() || !p.last_known_elr.is_empty())
                .map(move |p| (t.topic_id, p.partition))
        })
        .collect();
    for (topic_id, partition) in targets {
        batch.push(MetadataRecord::PartitionChangeWithElr {
            topic_id,
            partition,
            leader: None,
            isr: None,
            replicas: None,
            adding_replicas: None,
            removing_replicas: None,
            eligible_leader_replicas: Some(Vec::new()),
            last_known_elr: Some(Vec::new()),
        });
    }
}
