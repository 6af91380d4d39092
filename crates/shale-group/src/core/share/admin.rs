//! ShareGroupDescribe, and share groups in ListGroups and DeleteGroups.

use super::group::ShareGroup;
use crate::assignor::simple;
use crate::core::CoordinatorShard;
use crate::error::GroupError;
use crate::records::share_records::ShareRecord;
use crate::records::GroupRecord;
use crate::share_types::{DescribedShareGroup, DescribedShareMember, DescribedShareTopic};
use crate::types::ListedGroup;

impl CoordinatorShard {
    /// ShareGroupDescribe of one group (Kafka's `shareGroupDescribe`).
    pub fn describe_share_group(&self, group_id: &str) -> DescribedShareGroup {
        if group_id.is_empty() {
            return DescribedShareGroup::failed(group_id, GroupError::InvalidGroupId, None);
        }
        let group = match self.existing_share_group(group_id) {
            Ok(group) => group,
            Err((error, message)) => {
                return DescribedShareGroup::failed(group_id, error, Some(message))
            }
        };
        DescribedShareGroup {
            group_id: group_id.to_owned(),
            error: None,
            error_message: None,
            group_state: group.state().kafka_name().to_owned(),
            group_epoch: group.group_epoch,
            assignment_epoch: group.assignment_epoch,
            assignor_name: simple::NAME.to_owned(),
            members: group
                .members
                .values()
                .map(|member| DescribedShareMember {
                    member_id: member.member_id.clone(),
                    rack_id: member.rack_id.clone(),
                    member_epoch: member.member_epoch,
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    subscribed_topic_names: member.subscribed_topic_names.clone(),
                    assignment: member
                        .assigned
                        .iter()
                        .filter_map(|(topic_id, partitions)| {
                            self.topics
                                .topics
                                .get(topic_id)
                                .map(|topic| DescribedShareTopic {
                                    topic_id: *topic_id,
                                    topic_name: topic.name.clone(),
                                    partitions: partitions.iter().copied().collect(),
                                })
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Share groups for ListGroups, filtered by Kafka's state names (case-insensitive).
    pub(crate) fn list_share_groups(&self, states: &[String]) -> Vec<ListedGroup> {
        self.share_groups
            .values()
            .filter(|group| {
                states.is_empty()
                    || states
                        .iter()
                        .any(|state| state.eq_ignore_ascii_case(group.state().kafka_name()))
            })
            .map(|group| ListedGroup {
                group_id: group.group_id.clone(),
                protocol_type: "share".to_owned(),
                group_state: group.state().kafka_name().to_owned(),
                group_type: "share".to_owned(),
            })
            .collect()
    }

    /// DeleteGroups of a share group: NON_EMPTY_GROUP unless it has no member, else the
    /// tombstones of everything it stored (Kafka's `createGroupTombstoneRecords`).
    pub(crate) fn delete_share_group(
        &self,
        group: &ShareGroup,
        records: &mut Vec<GroupRecord>,
    ) -> Result<(), GroupError> {
        if !group.members.is_empty() {
            return Err(GroupError::NonEmptyGroup);
        }
        let group_id = group.group_id.clone();
        for member_id in group.members.keys() {
            records.push(GroupRecord::Share(ShareRecord::CurrentMemberAssignment {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
                value: None,
            }));
        }
        for member_id in group.members.keys() {
            records.push(GroupRecord::Share(ShareRecord::TargetAssignmentMember {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
                value: None,
            }));
        }
        records.push(GroupRecord::Share(ShareRecord::TargetAssignmentMetadata {
            group_id: group_id.clone(),
            value: None,
        }));
        for member_id in group.members.keys() {
            records.push(GroupRecord::Share(ShareRecord::MemberMetadata {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
                value: None,
            }));
        }
        records.push(GroupRecord::Share(ShareRecord::StatePartitionMetadata {
            group_id: group_id.clone(),
            value: None,
        }));
        records.push(GroupRecord::Share(ShareRecord::GroupMetadata {
            group_id,
            value: None,
        }));
        Ok(())
    }
}
