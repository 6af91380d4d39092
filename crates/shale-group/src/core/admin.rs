//! DescribeGroups, ListGroups and DeleteGroups.

use super::group::GroupState;
use super::{CoordinatorShard, Effects, RequestToken, Response};
use crate::error::GroupError;
use crate::records::GroupRecord;
use crate::types::{DeleteGroupResult, DescribedGroup, DescribedMember, ListedGroup};

impl CoordinatorShard {
    pub fn describe_group(&self, group_id: &str) -> DescribedGroup {
        // A consumer group is not a classic group: "Group X is not a classic group."
        let classic = self
            .groups
            .get(group_id)
            .filter(|_| !self.consumer_groups.contains_key(group_id));
        let Some(group) = classic else {
            let error = if group_id.is_empty() {
                GroupError::InvalidGroupId
            } else {
                GroupError::GroupIdNotFound
            };
            return DescribedGroup {
                group_id: group_id.to_owned(),
                error: Some(error),
                group_state: GroupState::Dead.kafka_name().to_owned(),
                protocol_type: String::new(),
                protocol_data: String::new(),
                members: Vec::new(),
            };
        };
        let stable = group.state == GroupState::Stable;
        let protocol = group.protocol_name.clone().unwrap_or_default();
        DescribedGroup {
            group_id: group_id.to_owned(),
            error: None,
            group_state: group.state.kafka_name().to_owned(),
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            protocol_data: if stable {
                protocol.clone()
            } else {
                String::new()
            },
            members: group
                .members_in_join_order()
                .into_iter()
                .map(|member| DescribedMember {
                    member_id: member.member_id.clone(),
                    group_instance_id: member.group_instance_id.clone(),
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    member_metadata: if stable {
                        member.metadata_for(&protocol).cloned().unwrap_or_default()
                    } else {
                        Default::default()
                    },
                    member_assignment: if stable {
                        member.assignment.clone()
                    } else {
                        Default::default()
                    },
                })
                .collect(),
        }
    }

    /// Groups of this partition, classic, consumer and share; an empty `states` filter lists all.
    pub fn list_groups(&self, states: &[GroupState]) -> Vec<ListedGroup> {
        let names: Vec<String> = states
            .iter()
            .map(|state| state.kafka_name().to_owned())
            .collect();
        self.list_groups_filtered(&names, &[])
    }

    /// ListGroups v5+: `states` are Kafka's state names and `types` the group types
    /// ("classic", "consumer", "share"), both case-insensitive; an empty filter lets every group through.
    /// A name that is no state (or type) of a group matches nothing, as on Kafka.
    pub fn list_groups_filtered(&self, states: &[String], types: &[String]) -> Vec<ListedGroup> {
        let wants =
            |kind: &str| types.is_empty() || types.iter().any(|t| t.eq_ignore_ascii_case(kind));
        let mut listed = Vec::new();
        if wants("classic") {
            listed.extend(
                self.groups
                    .values()
                    .filter(|group| !self.consumer_groups.contains_key(&group.group_id))
                    .filter(|group| {
                        states.is_empty()
                            || states
                                .iter()
                                .any(|state| state.eq_ignore_ascii_case(group.state.kafka_name()))
                    })
                    .map(|group| ListedGroup {
                        group_id: group.group_id.clone(),
                        protocol_type: group.protocol_type.clone().unwrap_or_default(),
                        group_state: group.state.kafka_name().to_owned(),
                        group_type: "classic".to_owned(),
                    }),
            );
        }
        if wants("consumer") {
            listed.extend(self.list_consumer_groups(states));
        }
        if wants("share") {
            listed.extend(self.list_share_groups(states));
        }
        listed.sort_by(|left, right| left.group_id.cmp(&right.group_id));
        listed
    }

    /// Deletes empty groups: tombstones for their offsets and their metadata.
    pub fn delete_groups(
        &mut self,
        token: RequestToken,
        group_ids: Vec<String>,
        now_ms: i64,
    ) -> Effects {
        self.observe(now_ms);
        let mut effects = Effects::default();
        let mut results = Vec::with_capacity(group_ids.len());
        for group_id in group_ids {
            let error = self.delete_group(&group_id, &mut effects).err();
            results.push(DeleteGroupResult { group_id, error });
        }
        effects.reply(token, Response::DeleteGroups(results));
        effects
    }

    fn delete_group(&self, group_id: &str, effects: &mut Effects) -> Result<(), GroupError> {
        if group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        if let Some(group) = self.consumer_groups.get(group_id) {
            return self.delete_consumer_group(group, &mut effects.records);
        }
        if let Some(group) = self.share_groups.get(group_id) {
            return self.delete_share_group(group, &mut effects.records);
        }
        let group = self
            .groups
            .get(group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        match group.state {
            GroupState::Dead => return Err(GroupError::GroupIdNotFound),
            GroupState::Empty if group.members.is_empty() => {}
            _ => return Err(GroupError::NonEmptyGroup),
        }
        // Pending transactional offsets get a tombstone too (once per partition).
        let partitions: std::collections::BTreeSet<&(String, i32)> = group
            .offsets
            .keys()
            .chain(
                group
                    .pending_transactional_offsets
                    .values()
                    .flat_map(|pending| pending.keys()),
            )
            .collect();
        for (topic, partition) in partitions {
            effects.records.push(GroupRecord::OffsetCommit {
                group_id: group_id.to_owned(),
                topic: topic.clone(),
                partition: *partition,
                value: None,
            });
        }
        effects.records.push(GroupRecord::GroupMetadata {
            group_id: group_id.to_owned(),
            value: None,
        });
        Ok(())
    }
}
