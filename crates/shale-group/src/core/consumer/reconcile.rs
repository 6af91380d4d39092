//! Kafka's CurrentAssignmentBuilder: moves a member from its current assignment towards its
//! target, revoking partitions before it is given new ones, and never giving it a partition
//! another member still owns.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::group::{ConsumerMember, MemberState};
use crate::assignor::MemberAssignment;
use crate::records::consumer_records::PartitionEpochs;

/// What reconciliation needs to know besides the member.
pub(crate) struct ReconcileInput<'a> {
    pub(crate) target_epoch: i32,
    pub(crate) target: &'a MemberAssignment,
    /// The owner of each owned partition of the group.
    pub(crate) owners: &'a BTreeMap<(Uuid, i32), String>,
    /// The partitions the member reported owning, when it reported them.
    pub(crate) owned: Option<&'a [(Uuid, Vec<i32>)]>,
}

/// The member after one reconciliation step (the same member when nothing can progress).
pub(crate) fn reconcile(member: &ConsumerMember, input: &ReconcileInput<'_>) -> ConsumerMember {
    match member.state {
        MemberState::Stable => {
            if member.member_epoch != input.target_epoch {
                next_assignment(member, member.member_epoch, input)
            } else {
                member.clone()
            }
        }
        MemberState::UnrevokedPartitions => {
            if owns_any(input.owned, &member.pending_revocation) {
                return member.clone();
            }
            let epoch = (member.member_epoch + 1).min(input.target_epoch);
            // The revoked partitions are gone: continue from the assigned ones only.
            let mut progressed = member.clone();
            progressed.pending_revocation.clear();
            next_assignment_from(&progressed, member, epoch, input)
        }
        MemberState::UnreleasedPartitions => next_assignment(member, member.member_epoch, input),
    }
}

fn next_assignment(
    member: &ConsumerMember,
    member_epoch: i32,
    input: &ReconcileInput<'_>,
) -> ConsumerMember {
    next_assignment_from(member, member, member_epoch, input)
}

/// Kafka's `computeNextAssignment`, starting from `current`'s assigned partitions; `original`
/// is the member as stored (whose pending revocations it may still hold).
fn next_assignment_from(
    current: &ConsumerMember,
    original: &ConsumerMember,
    member_epoch: i32,
    input: &ReconcileInput<'_>,
) -> ConsumerMember {
    let mut has_unreleased = false;
    let mut assigned = PartitionEpochs::new();
    let mut pending_revocation = PartitionEpochs::new();
    let mut pending_assignment: BTreeMap<Uuid, BTreeSet<i32>> = BTreeMap::new();
    let topic_ids: BTreeSet<Uuid> = input
        .target
        .keys()
        .chain(current.assigned.keys())
        .copied()
        .collect();
    let empty_target = BTreeSet::new();
    let empty_current = BTreeMap::new();
    for topic_id in topic_ids {
        let target = input.target.get(&topic_id).unwrap_or(&empty_target);
        let current_epochs = current.assigned.get(&topic_id).unwrap_or(&empty_current);
        for (partition, epoch) in current_epochs {
            if target.contains(partition) {
                assigned
                    .entry(topic_id)
                    .or_default()
                    .insert(*partition, *epoch);
            } else {
                pending_revocation
                    .entry(topic_id)
                    .or_default()
                    .insert(*partition, *epoch);
            }
        }
        for partition in target {
            if current_epochs.contains_key(partition) {
                continue;
            }
            let owner = input.owners.get(&(topic_id, *partition));
            if owner.is_some_and(|owner| *owner != original.member_id) {
                has_unreleased = true;
            } else {
                pending_assignment
                    .entry(topic_id)
                    .or_default()
                    .insert(*partition);
            }
        }
    }
    let mut next = current.clone();
    if !pending_revocation.is_empty() && owns_any(input.owned, &pending_revocation) {
        // Revoke first: the member keeps its epoch until it acknowledges the revocation.
        next.state = MemberState::UnrevokedPartitions;
        update_epoch(&mut next, original, member_epoch);
        next.assigned = assigned;
        next.pending_revocation = pending_revocation;
        return next;
    }
    for (topic_id, partitions) in pending_assignment {
        let entry = assigned.entry(topic_id).or_default();
        for partition in partitions {
            entry.insert(partition, input.target_epoch);
        }
    }
    next.state = if has_unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    update_epoch(&mut next, original, input.target_epoch);
    next.assigned = assigned;
    next.pending_revocation = PartitionEpochs::new();
    next
}

/// Kafka's `updateMemberEpoch`: the previous epoch is the one the member had.
fn update_epoch(next: &mut ConsumerMember, original: &ConsumerMember, member_epoch: i32) {
    next.previous_member_epoch = original.member_epoch;
    next.member_epoch = member_epoch;
}

/// Kafka's `ownsRevokedPartitions`: a member that did not report its partitions still owns
/// everything it was given.
fn owns_any(owned: Option<&[(Uuid, Vec<i32>)]>, partitions: &PartitionEpochs) -> bool {
    let Some(owned) = owned else {
        return !partitions.is_empty();
    };
    owned.iter().any(|(topic_id, owned_partitions)| {
        partitions.get(topic_id).is_some_and(|pending| {
            owned_partitions
                .iter()
                .any(|partition| pending.contains_key(partition))
        })
    })
}
