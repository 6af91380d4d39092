//! Partition changes: ISR proposals from leaders (AlterPartition), leader elections and
//! reassignments. Every change goes through [`plan_change`], Kafka's PartitionChangeBuilder:
//! apply the target ISR/replicas, complete a reassignment once its targets are in the ISR,
//! then elect a leader if the current one may no longer lead.

use std::collections::HashSet;

use uuid::Uuid;

use super::{Batch, Controller, ElectionType, ReassignablePartition, TopicPartitionResults};
use crate::error::MetadataError;
use crate::image::{MetadataImage, PartitionImage, NO_LEADER};
use crate::records::{ConfigResource, MetadataRecord};

pub(crate) struct IsrProposal {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub topic_id: Uuid,
    pub partition: i32,
    pub leader_epoch: i32,
    pub new_isr: Vec<i32>,
    pub partition_epoch: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Election {
    /// Keep the leader while it may lead; otherwise the first eligible ISR member, falling
    /// back to an unclean choice when the topic allows it.
    Normal,
    /// Move leadership to the first replica if it is an eligible ISR member.
    Preferred,
    /// As Normal, but an unclean choice is allowed regardless of configuration.
    Unclean,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct ChangeSpec {
    pub isr: Option<Vec<i32>>,
    pub replicas: Option<Vec<i32>>,
    pub adding: Option<Vec<i32>>,
    pub removing: Option<Vec<i32>>,
}

fn is_active(image: &MetadataImage, broker: i32) -> bool {
    image.broker(broker).is_some_and(|b| b.is_active())
}

/// A topic setting the controller decides by: the topic's override, else the cluster-wide
/// default; `None` leaves it to the controller's own configuration.
fn topic_setting<'a>(image: &'a MetadataImage, topic: &str, name: &str) -> Option<&'a String> {
    image.topic_configs(topic).get(name).or_else(|| {
        image
            .configs(&ConfigResource::ClusterDefaultBroker)
            .get(name)
    })
}

/// `unclean.leader.election.enable` for a topic: topic override, cluster default, controller.
pub(crate) fn unclean_allowed(image: &MetadataImage, topic: &str, default: bool) -> bool {
    topic_setting(image, topic, "unclean.leader.election.enable")
        .map_or(default, |v| v.trim().eq_ignore_ascii_case("true"))
}

/// What an election may do beyond the ISR: Kafka's unclean setting and KIP-966's lists.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ElectionPolicy {
    /// `unclean.leader.election.enable` for the topic.
    pub unclean_enabled: bool,
    /// KIP-966 on: the topic's `min.insync.replicas` (capped by the replication factor
    /// below). `None`: no ELR, an ISR never becomes empty by this change's own rules.
    pub elr_min_isr: Option<i32>,
    /// A broker back from an unclean shutdown: it leaves the ELR and may not lead now.
    pub unclean_shutdown: Option<i32>,
}

/// `min.insync.replicas` for a topic: topic override, cluster default, controller.
pub(crate) fn min_insync_replicas(image: &MetadataImage, topic: &str, default: i32) -> i32 {
    topic_setting(image, topic, "min.insync.replicas")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The record moving `current` to the state described by `spec` and `election`, or `None`
/// when nothing changes (Kafka's PartitionChangeBuilder, with its last-known-leader
/// recovery).
pub(crate) fn plan_change(
    image: &MetadataImage,
    topic_id: Uuid,
    current: &PartitionImage,
    spec: ChangeSpec,
    election: Election,
    policy: ElectionPolicy,
) -> Option<MetadataRecord> {
    let mut isr = spec.isr.unwrap_or_else(|| current.isr.clone());
    let mut replicas = spec.replicas.unwrap_or_else(|| current.replicas.clone());
    let mut adding = spec
        .adding
        .unwrap_or_else(|| current.adding_replicas.clone());
    let mut removing = spec
        .removing
        .unwrap_or_else(|| current.removing_replicas.clone());

    // Complete a reassignment once every added replica is in the ISR and some ISR member
    // stays (Kafka's completeReassignmentIfNeeded).
    if !adding.is_empty() || !removing.is_empty() {
        let remaining_isr: Vec<i32> = isr
            .iter()
            .copied()
            .filter(|r| !removing.contains(r))
            .collect();
        let remaining_replicas: Vec<i32> = replicas
            .iter()
            .copied()
            .filter(|r| !removing.contains(r))
            .collect();
        if !remaining_isr.is_empty()
            && !remaining_replicas.is_empty()
            && adding.iter().all(|r| remaining_isr.contains(r))
        {
            isr = remaining_isr;
            replicas = remaining_replicas;
            adding.clear();
            removing.clear();
        }
    }

    // KIP-966: while the ISR is below min ISR the high watermark cannot advance, so every
    // replica that was in the ISR holds every committed record: it joins the ELR. Once the
    // ISR is back at min ISR the ELR is no longer needed.
    let elr_enabled = policy.elr_min_isr.is_some();
    let mut elr: Vec<i32> = Vec::new();
    if let Some(min_isr) = policy.elr_min_isr {
        let min_isr = usize::try_from(min_isr.max(1))
            .unwrap_or(1)
            .min(replicas.len().max(1));
        if isr.len() < min_isr {
            elr = replicas
                .iter()
                .copied()
                .filter(|r| current.eligible_leader_replicas.contains(r) || current.isr.contains(r))
                .filter(|r| !isr.contains(r) && Some(*r) != policy.unclean_shutdown)
                .collect();
        }
    }

    let acceptable = |r: i32| is_active(image, r) && Some(r) != policy.unclean_shutdown;
    let valid = |r: i32, isr: &[i32], elr: &[i32]| {
        (isr.contains(&r) || (isr.is_empty() && elr.contains(&r))) && acceptable(r)
    };
    let leader_may_stay = current.leader != NO_LEADER
        && replicas.contains(&current.leader)
        && valid(current.leader, &isr, &elr);
    let last_known_leader = match current.last_known_elr.as_slice() {
        [r] if elr_enabled
            && isr.is_empty()
            && elr.is_empty()
            && replicas.contains(r)
            && acceptable(*r) =>
        {
            Some(*r)
        }
        _ => None,
    };
    // (leader, whether the choice is unclean: the ISR is then forced to the leader alone)
    let mut choice = (current.leader, false);
    match election {
        Election::Preferred => {
            if let Some(&preferred) = replicas.first() {
                if valid(preferred, &isr, &elr) {
                    choice = (preferred, false);
                } else if !leader_may_stay {
                    choice = match replicas.iter().copied().find(|r| valid(*r, &isr, &elr)) {
                        Some(r) => (r, false),
                        None => last_known_leader.map_or((NO_LEADER, false), |r| (r, true)),
                    };
                }
            }
        }
        Election::Normal | Election::Unclean => {
            if !leader_may_stay {
                choice = match replicas.iter().copied().find(|r| valid(*r, &isr, &elr)) {
                    Some(r) => (r, false),
                    None => match last_known_leader {
                        Some(r) => (r, true),
                        None if election == Election::Unclean || policy.unclean_enabled => replicas
                            .iter()
                            .copied()
                            .find(|r| acceptable(*r))
                            .map_or((NO_LEADER, false), |r| (r, true)),
                        None => (NO_LEADER, false),
                    },
                };
            }
        }
    }
    let (leader, unclean) = choice;
    if leader != current.leader && leader != NO_LEADER {
        if elr.contains(&leader) {
            isr = vec![leader];
            elr.retain(|r| *r != leader);
        } else if unclean {
            isr = vec![leader];
        }
    }
    if unclean || !elr_enabled {
        elr.clear();
    }

    // Kafka's last known leader: set when the ISR first becomes empty, dropped once the
    // partition has a leader again. A replica back from an unclean shutdown is not kept as
    // one: electing it would make the others truncate to its shortened log.
    let mut last_known_elr = current.last_known_elr.clone();
    if elr_enabled {
        if isr.is_empty()
            && !current.isr.is_empty()
            && current.leader != NO_LEADER
            && last_known_elr != [current.leader]
        {
            last_known_elr = vec![current.leader];
        } else if leader != NO_LEADER {
            last_known_elr.clear();
        }
    }
    if let Some(gone) = policy.unclean_shutdown {
        last_known_elr.retain(|r| *r != gone);
    }

    let leader_changed = leader != current.leader;
    let isr_changed = isr != current.isr;
    let replicas_changed = replicas != current.replicas;
    let adding_changed = adding != current.adding_replicas;
    let removing_changed = removing != current.removing_replicas;
    let elr_changed = elr != current.eligible_leader_replicas;
    let last_known_elr_changed = last_known_elr != current.last_known_elr;
    if !(leader_changed
        || isr_changed
        || replicas_changed
        || adding_changed
        || removing_changed
        || elr_changed
        || last_known_elr_changed)
    {
        return None;
    }
    // Dropping a replica bumps the leader epoch even when the leader stays, so the removed
    // replica's fetches are fenced.
    let replica_dropped = !current.replicas.iter().all(|r| replicas.contains(r));
    let leader = (leader_changed || replica_dropped).then_some(leader);
    let isr = isr_changed.then_some(isr);
    let replicas = replicas_changed.then_some(replicas);
    let adding_replicas = adding_changed.then_some(adding);
    let removing_replicas = removing_changed.then_some(removing);
    if !(elr_changed || last_known_elr_changed) {
        return Some(MetadataRecord::PartitionChange {
            topic_id,
            partition: current.partition,
            leader,
            isr,
            replicas,
            adding_replicas,
            removing_replicas,
        });
    }
    Some(MetadataRecord::PartitionChangeWithElr {
        topic_id,
        partition: current.partition,
        leader,
        isr,
        replicas,
        adding_replicas,
        removing_replicas,
        eligible_leader_replicas: elr_changed.then_some(elr),
        last_known_elr: last_known_elr_changed.then_some(last_known_elr),
    })
}

fn unique(list: &[i32]) -> bool {
    let mut seen = HashSet::new();
    list.iter().all(|r| seen.insert(*r))
}

impl Controller {
    /// Applies a change to one partition in the batch; returns whether a record was written.
    pub(crate) fn change_partition(
        &self,
        batch: &mut Batch,
        topic_id: Uuid,
        partition: i32,
        spec: ChangeSpec,
        election: Election,
    ) -> bool {
        self.change_partition_with(batch, topic_id, partition, spec, election, None)
    }

    /// [`Self::change_partition`] for a broker back from an unclean shutdown
    /// (`unclean_shutdown`): it leaves the ELR and may not be elected by this change.
    pub(crate) fn change_partition_with(
        &self,
        batch: &mut Batch,
        topic_id: Uuid,
        partition: i32,
        spec: ChangeSpec,
        election: Election,
        unclean_shutdown: Option<i32>,
    ) -> bool {
        let Some(topic) = batch.image.topic_by_id(topic_id) else {
            return false;
        };
        let Some(current) = topic.partitions.get(&partition) else {
            return false;
        };
        let policy = ElectionPolicy {
            unclean_enabled: unclean_allowed(
                &batch.image,
                &topic.name,
                self.config.unclean_leader_election_enable,
            ),
            elr_min_isr: batch.image.elr_enabled().then(|| {
                min_insync_replicas(&batch.image, &topic.name, self.config.min_insync_replicas)
            }),
            unclean_shutdown,
        };
        match plan_change(&batch.image, topic_id, current, spec, election, policy) {
            Some(record) => {
                batch.push(record);
                true
            }
            None => false,
        }
    }

    pub(crate) fn alter_partition(
        &mut self,
        batch: &mut Batch,
        proposal: IsrProposal,
    ) -> Result<PartitionImage, MetadataError> {
        let broker = batch.image.broker(proposal.broker_id);
        if broker.is_none_or(|b| b.broker_epoch != proposal.broker_epoch) {
            return Err(MetadataError::StaleBrokerEpoch(format!(
                "Expected broker epoch {}, but got {} for broker {}",
                broker.map_or(-1, |b| b.broker_epoch),
                proposal.broker_epoch,
                proposal.broker_id
            )));
        }
        let topic = batch
            .image
            .topic_by_id(proposal.topic_id)
            .ok_or(MetadataError::UnknownTopicId)?;
        let current = topic
            .partitions
            .get(&proposal.partition)
            .ok_or(MetadataError::UnknownTopicOrPartition)?
            .clone();
        let tp = format!("{}-{}", topic.name, proposal.partition);
        // Epochs above ours mean the sender has seen a newer controller than this one.
        if proposal.leader_epoch > current.leader_epoch
            || proposal.partition_epoch > current.partition_epoch
        {
            return Err(MetadataError::NotController);
        }
        if proposal.leader_epoch < current.leader_epoch {
            return Err(MetadataError::FencedLeaderEpoch(format!(
                "The leader epoch {} of {tp} is older than the current leader epoch {}.",
                proposal.leader_epoch, current.leader_epoch
            )));
        }
        if current.leader != proposal.broker_id {
            return Err(MetadataError::InvalidRequest(format!(
                "Broker {} is not the leader of {tp}; the leader is {}.",
                proposal.broker_id, current.leader
            )));
        }
        if proposal.partition_epoch < current.partition_epoch {
            return Err(MetadataError::InvalidUpdateVersion(format!(
                "The partition epoch {} of {tp} is older than the current partition epoch {}.",
                proposal.partition_epoch, current.partition_epoch
            )));
        }
        if !unique(&proposal.new_isr)
            || !proposal
                .new_isr
                .iter()
                .all(|r| current.replicas.contains(r))
        {
            return Err(MetadataError::InvalidRequest(format!(
                "Invalid ISR {:?} for {tp}: members must be distinct replicas.",
                proposal.new_isr
            )));
        }
        if !proposal.new_isr.contains(&proposal.broker_id) {
            return Err(MetadataError::InvalidRequest(format!(
                "Invalid ISR {:?} for {tp}: it does not include the leader.",
                proposal.new_isr
            )));
        }
        for r in &proposal.new_isr {
            let why = match batch.image.broker(*r) {
                None => Some("not registered"),
                Some(b) if b.in_controlled_shutdown => Some("shutting down"),
                Some(b) if b.fenced => Some("fenced"),
                Some(_) => None,
            };
            if let Some(why) = why {
                return Err(MetadataError::IneligibleReplica(format!(
                    "Replica {r} of {tp} is {why} and cannot be in the ISR."
                )));
            }
        }
        self.change_partition(
            batch,
            proposal.topic_id,
            proposal.partition,
            ChangeSpec {
                isr: Some(proposal.new_isr),
                ..Default::default()
            },
            Election::Normal,
        );
        batch
            .image
            .partition(proposal.topic_id, proposal.partition)
            .cloned()
            .ok_or(MetadataError::UnknownTopicOrPartition)
    }

    pub(crate) fn elect_leaders(
        &mut self,
        batch: &mut Batch,
        election_type: ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    ) -> TopicPartitionResults {
        let all = partitions.is_none();
        let targets: Vec<(String, i32)> = match partitions {
            Some(list) => list,
            None => batch
                .image
                .topics()
                .flat_map(|t| t.partitions.keys().map(|p| (t.name.clone(), *p)))
                .collect(),
        };
        let mut results = Vec::with_capacity(targets.len());
        for (topic, partition) in targets {
            let result = self.elect_one(batch, election_type, &topic, partition);
            // With no partition list, Kafka reports only the partitions it acted on.
            if all && matches!(result, Err(MetadataError::ElectionNotNeeded(_))) {
                continue;
            }
            results.push(((topic, partition), result));
        }
        results
    }

    fn elect_one(
        &mut self,
        batch: &mut Batch,
        election_type: ElectionType,
        topic: &str,
        partition: i32,
    ) -> Result<(), MetadataError> {
        let t = batch
            .image
            .topic(topic)
            .ok_or(MetadataError::UnknownTopicOrPartition)?;
        let topic_id = t.topic_id;
        let current = t
            .partitions
            .get(&partition)
            .ok_or(MetadataError::UnknownTopicOrPartition)?
            .clone();
        let not_needed = || {
            MetadataError::ElectionNotNeeded(
                "Leader election not needed for topic partition.".into(),
            )
        };
        match election_type {
            ElectionType::Preferred => {
                let preferred = current.replicas.first().copied().unwrap_or(NO_LEADER);
                if current.leader == preferred {
                    return Err(not_needed());
                }
                if !current.isr.contains(&preferred) || !is_active(&batch.image, preferred) {
                    return Err(MetadataError::PreferredLeaderNotAvailable(format!(
                        "Failed to elect leader for partition {topic}-{partition} under strategy \
                         PreferredReplicaPartitionLeaderElectionStrategy"
                    )));
                }
                self.change_partition(
                    batch,
                    topic_id,
                    partition,
                    ChangeSpec::default(),
                    Election::Preferred,
                );
                Ok(())
            }
            ElectionType::Unclean => {
                if current.leader != NO_LEADER {
                    return Err(not_needed());
                }
                self.change_partition(
                    batch,
                    topic_id,
                    partition,
                    ChangeSpec::default(),
                    Election::Unclean,
                );
                let after = batch.image.partition(topic_id, partition);
                if after.is_some_and(|p| p.leader != NO_LEADER) {
                    Ok(())
                } else {
                    Err(MetadataError::EligibleLeadersNotAvailable(format!(
                        "Failed to elect leader for partition {topic}-{partition} under strategy \
                         UncleanPartitionLeaderElectionStrategy"
                    )))
                }
            }
        }
    }

    pub(crate) fn alter_reassignments(
        &mut self,
        batch: &mut Batch,
        partitions: Vec<ReassignablePartition>,
    ) -> TopicPartitionResults {
        partitions
            .into_iter()
            .map(|p| {
                let key = (p.topic.clone(), p.partition);
                (key, self.reassign_one(batch, p))
            })
            .collect()
    }

    fn reassign_one(
        &mut self,
        batch: &mut Batch,
        request: ReassignablePartition,
    ) -> Result<(), MetadataError> {
        let topic = batch
            .image
            .topic(&request.topic)
            .ok_or(MetadataError::UnknownTopicOrPartition)?;
        let topic_id = topic.topic_id;
        let current = topic
            .partitions
            .get(&request.partition)
            .ok_or(MetadataError::UnknownTopicOrPartition)?
            .clone();
        match request.replicas {
            None => self.cancel_reassignment(batch, &request.topic, topic_id, &current),
            Some(target) => self.change_reassignment(batch, topic_id, &current, target),
        }
    }

    /// Goes back to the replicas before the reassignment (Kafka's PartitionReassignmentRevert).
    fn cancel_reassignment(
        &mut self,
        batch: &mut Batch,
        topic: &str,
        topic_id: Uuid,
        current: &PartitionImage,
    ) -> Result<(), MetadataError> {
        if !current.is_reassigning() {
            return Err(MetadataError::NoReassignmentInProgress(
                "No partition reassignment is in progress.".into(),
            ));
        }
        let original: Vec<i32> = current
            .replicas
            .iter()
            .copied()
            .filter(|r| !current.adding_replicas.contains(r))
            .collect();
        let mut original_isr: Vec<i32> = current
            .isr
            .iter()
            .copied()
            .filter(|r| original.contains(r))
            .collect();
        if original_isr.is_empty() {
            // Only added replicas are in sync: reverting means an unclean choice among the
            // original replicas.
            if !unclean_allowed(
                &batch.image,
                topic,
                self.config.unclean_leader_election_enable,
            ) {
                return Err(MetadataError::InvalidReplicaAssignment(format!(
                    "Unable to revert partition assignment for {topic}:{} because it would \
                     require an unclean leader election.",
                    current.partition
                )));
            }
            original_isr = original.clone();
        }
        self.change_partition(
            batch,
            topic_id,
            current.partition,
            ChangeSpec {
                isr: Some(original_isr),
                replicas: Some(original),
                adding: Some(Vec::new()),
                removing: Some(Vec::new()),
            },
            Election::Normal,
        );
        Ok(())
    }

    /// Starts (or redirects) a reassignment: the replica list becomes the target followed by
    /// the replicas being removed; it completes once the added replicas are in the ISR.
    fn change_reassignment(
        &mut self,
        batch: &mut Batch,
        topic_id: Uuid,
        current: &PartitionImage,
        target: Vec<i32>,
    ) -> Result<(), MetadataError> {
        if target.is_empty() {
            return Err(MetadataError::InvalidReplicaAssignment(
                "The manual partition assignment includes an empty replica list.".into(),
            ));
        }
        let mut sorted = target.clone();
        sorted.sort_unstable();
        for (i, r) in sorted.iter().enumerate() {
            if batch.image.broker(*r).is_none() {
                return Err(MetadataError::InvalidReplicaAssignment(format!(
                    "The manual partition assignment includes broker {r}, but no such broker is \
                     registered."
                )));
            }
            if i > 0 && sorted[i - 1] == *r {
                return Err(MetadataError::InvalidReplicaAssignment(format!(
                    "The manual partition assignment includes the broker {r} more than once."
                )));
            }
        }
        let removing: Vec<i32> = current
            .replicas
            .iter()
            .copied()
            .filter(|r| !target.contains(r))
            .collect();
        let adding: Vec<i32> = target
            .iter()
            .copied()
            .filter(|r| !current.replicas.contains(r))
            .collect();
        let mut merged = target;
        merged.extend(removing.iter().copied());
        self.change_partition(
            batch,
            topic_id,
            current.partition,
            ChangeSpec {
                isr: None,
                replicas: (merged != current.replicas).then_some(merged),
                // Both lists are replaced, so a redirected reassignment drops replicas that
                // an earlier one was still adding.
                adding: Some(adding),
                removing: Some(removing),
            },
            Election::Normal,
        );
        Ok(())
    }
}
