//! Kafka 4.4's CurrentAssignmentBuilder: moves a member from its current assignment towards its
//! target, revoking partitions before it is given new ones, and never giving it a partition
//! another member still owns. Partitions of topics the member no longer subscribes to (or that
//! were deleted) are revoked at once, even before the target moves.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::group::{ConsumerMember, MemberState};
use crate::assignor::MemberAssignment;
use crate::error::GroupError;
use crate::records::consumer_records::PartitionEpochs;

/// What reconciliation needs to know besides the member.
pub(crate) struct ReconcileInput<'a> {
    pub(crate) target_epoch: i32,
    pub(crate) target: &'a MemberAssignment,
    /// The owner of each owned partition of the group.
    pub(crate) owners: &'a BTreeMap<(Uuid, i32), String>,
    /// The partitions the member reported owning, when it reported them.
    pub(crate) owned: Option<&'a [(Uuid, Vec<i32>)]>,
    /// The existing topics the member subscribes to (by name or regular expression).
    pub(crate) subscribed_topic_ids: &'a BTreeSet<Uuid>,
    /// This heartbeat changed the member's subscription.
    pub(crate) subscription_changed: bool,
}

/// The member after one reconciliation step (the same member when nothing can progress).
pub(crate) fn reconcile(
    member: &ConsumerMember,
    input: &ReconcileInput<'_>,
) -> Result<ConsumerMember, GroupError> {
    Ok(match member.state {
        MemberState::Stable => {
            if member.member_epoch != input.target_epoch {
                next_assignment(member, member.member_epoch, input)
            } else if input.subscription_changed {
                revoke_unsubscribed(member, input)
            } else {
                member.clone()
            }
        }
        MemberState::UnrevokedPartitions => {
            if owns_any(input.owned, &member.pending_revocation) {
                if input.subscription_changed {
                    revoke_unsubscribed(member, input)
                } else {
                    member.clone()
                }
            } else {
                next_assignment(member, member.member_epoch, input)
            }
        }
        MemberState::UnreleasedPartitions => next_assignment(member, member.member_epoch, input),
        MemberState::Unknown => {
            // "The consumer group member is in a unknown state. The member must abandon all
            // its partitions and rejoin."
            if !input.owned.is_some_and(<[_]>::is_empty) {
                return Err(GroupError::FencedMemberEpoch);
            }
            next_assignment(member, input.target_epoch, input)
        }
    })
}

/// Kafka's `updateCurrentAssignment`: the subscription changed at the same epoch, so the
/// partitions of topics no longer subscribed are to be revoked now.
fn revoke_unsubscribed(member: &ConsumerMember, input: &ReconcileInput<'_>) -> ConsumerMember {
    let mut assigned = PartitionEpochs::new();
    let mut pending_revocation = member.pending_revocation.clone();
    let mut changed = false;
    for (topic_id, epochs) in &member.assigned {
        if input.subscribed_topic_ids.contains(topic_id) {
            assigned.insert(*topic_id, epochs.clone());
        } else {
            changed = true;
            pending_revocation
                .entry(*topic_id)
                .or_default()
                .extend(epochs.iter().map(|(partition, epoch)| (*partition, *epoch)));
        }
    }
    if !changed {
        return member.clone();
    }
    let mut next = member.clone();
    next.previous_member_epoch = member.member_epoch;
    next.assigned = assigned;
    if !pending_revocation.is_empty() && owns_any(input.owned, &pending_revocation) {
        next.state = MemberState::UnrevokedPartitions;
        next.pending_revocation = pending_revocation;
    }
    next
}

/// Kafka's `computeNextAssignment`, from the member's assigned partitions (those pending
/// revocation are gone once it stopped reporting them).
fn next_assignment(
    member: &ConsumerMember,
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
        .chain(member.assigned.keys())
        .copied()
        .collect();
    let empty_target = BTreeSet::new();
    let empty_current = BTreeMap::new();
    for topic_id in topic_ids {
        let target = if input.subscribed_topic_ids.contains(&topic_id) {
            input.target.get(&topic_id).unwrap_or(&empty_target)
        } else {
            &empty_target
        };
        let current = member.assigned.get(&topic_id).unwrap_or(&empty_current);
        for (partition, epoch) in current {
            let kept = if target.contains(partition) {
                &mut assigned
            } else {
                &mut pending_revocation
            };
            kept.entry(topic_id).or_default().insert(*partition, *epoch);
        }
        for partition in target {
            if current.contains_key(partition) {
                continue;
            }
            let owner = input.owners.get(&(topic_id, *partition));
            if owner.is_some_and(|owner| *owner != member.member_id) {
                has_unreleased = true;
            } else {
                pending_assignment
                    .entry(topic_id)
                    .or_default()
                    .insert(*partition);
            }
        }
    }
    let mut next = member.clone();
    // Kafka's `updateMemberEpoch`: the previous epoch is the one the member had.
    next.previous_member_epoch = member.member_epoch;
    if !pending_revocation.is_empty() && owns_any(input.owned, &pending_revocation) {
        // Revoke first: the member keeps its epoch until it acknowledges the revocation.
        next.state = MemberState::UnrevokedPartitions;
        next.member_epoch = member_epoch;
        next.assigned = assigned;
        next.pending_revocation = pending_revocation;
        return next;
    }
    for (topic_id, partitions) in pending_assignment {
        let entry = assigned.entry(topic_id).or_default();
        for partition in partitions {
            // The epoch at which the partition was given (KIP-1251's assignment epochs).
            entry.insert(partition, input.target_epoch);
        }
    }
    next.state = if has_unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    next.member_epoch = input.target_epoch;
    next.assigned = assigned;
    next.pending_revocation = PartitionEpochs::new();
    next
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
