//! ConsumerGroupDescribe, ListGroups entries and DeleteGroups of consumer groups.

use std::collections::BTreeSet;

use super::group::{without_epochs, ConsumerGroup, ConsumerGroupState};
use crate::assignor::{MemberAssignment, TopicsImage};
use crate::consumer_types::{
    DescribedConsumerGroup, DescribedConsumerMember, DescribedTopicPartitions,
};
use crate::core::CoordinatorShard;
use crate::error::GroupError;
use crate::records::consumer_records::ConsumerRecord;
use crate::records::GroupRecord;
use crate::types::ListedGroup;

/// The protocol type and group type Kafka lists consumer groups with.
pub(crate) const CONSUMER_GROUP_TYPE: &str = "consumer";

impl CoordinatorShard {
    /// ConsumerGroupDescribe of one group. A classic group, or none, is GROUP_ID_NOT_FOUND
    /// ("Group X is not a consumer group." / "Group X not found.").
    pub fn describe_consumer_group(&self, group_id: &str) -> DescribedConsumerGroup {
        let Some(group) = self.consumer_groups.get(group_id) else {
            let error = if group_id.is_empty() {
                GroupError::InvalidGroupId
            } else if self.groups.contains_key(group_id) || self.is_share_group(group_id) {
                GroupError::NotConsumerGroup
            } else {
                GroupError::GroupIdNotFound
            };
            return failed_consumer_description(group_id, error);
        };
        let default = self
            .config()
            .consumer_assignors
            .first()
            .cloned()
            .unwrap_or_default();
        DescribedConsumerGroup {
            group_id: group_id.to_owned(),
            error: None,
            group_state: group.state().kafka_name().to_owned(),
            group_epoch: group.group_epoch,
            assignment_epoch: group.assignment_epoch,
            assignor_name: group.preferred_assignor(&default),
            members: group
                .members
                .values()
                .map(|member| DescribedConsumerMember {
                    member_id: member.member_id.clone(),
                    instance_id: member.instance_id.clone(),
                    rack_id: member.rack_id.clone(),
                    member_epoch: member.member_epoch,
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    subscribed_topic_names: member.subscribed_topic_names.clone(),
                    subscribed_topic_regex: member.subscribed_topic_regex.clone(),
                    assignment: described(&without_epochs(&member.assigned), &self.topics),
                    target_assignment: described(
                        group
                            .target
                            .get(&member.member_id)
                            .unwrap_or(&Default::default()),
                        &self.topics,
                    ),
                    member_type: if member.classic_member_metadata.is_some() {
                        0
                    } else {
                        1
                    },
                })
                .collect(),
        }
    }

    /// Consumer groups as ListGroups lists them (states compared case-insensitively).
    pub(crate) fn list_consumer_groups(&self, states: &[String]) -> Vec<ListedGroup> {
        self.consumer_groups
            .values()
            .filter(|group| {
                states.is_empty()
                    || states
                        .iter()
                        .any(|state| state.eq_ignore_ascii_case(group.state().kafka_name()))
            })
            .map(|group| ListedGroup {
                group_id: group.group_id.clone(),
                protocol_type: CONSUMER_GROUP_TYPE.to_owned(),
                group_state: group.state().kafka_name().to_owned(),
                group_type: CONSUMER_GROUP_TYPE.to_owned(),
            })
            .collect()
    }

    /// DeleteGroups of a consumer group: it must be empty; its offsets are deleted, then the
    /// group's own records (Kafka's `createGroupTombstoneRecords`).
    pub(crate) fn delete_consumer_group(
        &self,
        group: &ConsumerGroup,
        records: &mut Vec<GroupRecord>,
    ) -> Result<(), GroupError> {
        if group.state() != ConsumerGroupState::Empty {
            return Err(GroupError::NonEmptyGroup);
        }
        if let Some(holder) = self.groups.get(&group.group_id) {
            let partitions: BTreeSet<&(String, i32)> = holder
                .offsets
                .keys()
                .chain(
                    holder
                        .pending_transactional_offsets
                        .values()
                        .flat_map(|pending| pending.keys()),
                )
                .collect();
            for (topic, partition) in partitions {
                records.push(GroupRecord::OffsetCommit {
                    group_id: group.group_id.clone(),
                    topic: topic.clone(),
                    partition: *partition,
                    value: None,
                });
            }
        }
        records.extend(
            group_tombstones(group)
                .into_iter()
                .map(GroupRecord::Consumer),
        );
        Ok(())
    }
}

/// Kafka's `ConsumerGroup.createGroupTombstoneRecords`, in its order.
pub(crate) fn group_tombstones(group: &ConsumerGroup) -> Vec<ConsumerRecord> {
    let group_id = &group.group_id;
    let mut records = Vec::new();
    for member_id in group.members.keys() {
        records.push(ConsumerRecord::CurrentMemberAssignment {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
            value: None,
        });
    }
    for member_id in group.members.keys() {
        records.push(ConsumerRecord::TargetAssignmentMember {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
            value: None,
        });
    }
    records.push(ConsumerRecord::TargetAssignmentMetadata {
        group_id: group_id.clone(),
        value: None,
    });
    for member_id in group.members.keys() {
        records.push(ConsumerRecord::MemberMetadata {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
            value: None,
        });
    }
    for regex in group.regexes.keys() {
        records.push(ConsumerRecord::RegularExpression {
            group_id: group_id.clone(),
            regex: regex.clone(),
            value: None,
        });
    }
    records.push(ConsumerRecord::PartitionMetadata {
        group_id: group_id.clone(),
        value: None,
    });
    records.push(ConsumerRecord::GroupMetadata {
        group_id: group_id.clone(),
        value: None,
    });
    records
}

fn described(assignment: &MemberAssignment, topics: &TopicsImage) -> Vec<DescribedTopicPartitions> {
    assignment
        .iter()
        .filter_map(|(topic_id, partitions)| {
            topics
                .topics
                .get(topic_id)
                .map(|topic| DescribedTopicPartitions {
                    topic_id: *topic_id,
                    topic_name: topic.name.clone(),
                    partitions: partitions.clone(),
                })
        })
        .collect()
}

/// A group answered with an error carries no state and zero epochs, as Kafka 4.4 answers it
/// (measured: an unknown group and one on a partition not served there).
pub(crate) fn failed_consumer_description(
    group_id: &str,
    error: GroupError,
) -> DescribedConsumerGroup {
    DescribedConsumerGroup {
        group_id: group_id.to_owned(),
        error: Some(error),
        group_state: String::new(),
        group_epoch: 0,
        assignment_epoch: 0,
        assignor_name: String::new(),
        members: Vec::new(),
    }
}
