//! A working copy of a consumer group: each record a handler makes is applied to the copy at
//! once (by the same code `replay` runs), so later steps see its effect; the shard's own state
//! changes only when the records are replayed after they were written.

use super::group::ConsumerGroup;
use super::subscriptions::metadata_hash;
use crate::assignor::TopicsImage;
use crate::records::consumer_records::{ConsumerGroupMetadataValue, ConsumerRecord};
use crate::records::GroupRecord;

pub(crate) struct Draft {
    pub(crate) group: ConsumerGroup,
    pub(crate) records: Vec<GroupRecord>,
}

impl Draft {
    pub(crate) fn new(group: ConsumerGroup) -> Self {
        Self {
            group,
            records: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, record: ConsumerRecord) {
        self.group.apply(&record);
        self.records.push(GroupRecord::Consumer(record));
    }

    /// Writes the next group epoch with the hash of what the group subscribes to now.
    pub(crate) fn bump_epoch(&mut self, topics: &TopicsImage) {
        let hash = metadata_hash(&self.group.subscribed_topic_names(), topics);
        let epoch = self.group.group_epoch + 1;
        self.push(ConsumerRecord::GroupMetadata {
            group_id: self.group.group_id.clone(),
            value: Some(ConsumerGroupMetadataValue {
                epoch,
                metadata_hash: hash,
            }),
        });
    }

    /// Removes a member: its current assignment, target assignment and subscription, and the
    /// resolution of its regular expression when it was the last to use it (Kafka's order).
    pub(crate) fn remove_member(&mut self, member_id: &str) {
        let group_id = self.group.group_id.clone();
        let regex = self
            .group
            .members
            .get(member_id)
            .and_then(|member| member.subscribed_topic_regex.clone());
        self.push(ConsumerRecord::CurrentMemberAssignment {
            group_id: group_id.clone(),
            member_id: member_id.to_owned(),
            value: None,
        });
        self.push(ConsumerRecord::TargetAssignmentMember {
            group_id: group_id.clone(),
            member_id: member_id.to_owned(),
            value: None,
        });
        self.push(ConsumerRecord::MemberMetadata {
            group_id: group_id.clone(),
            member_id: member_id.to_owned(),
            value: None,
        });
        if let Some(regex) = regex {
            if self.group.regex_subscribers(&regex) == 0 && self.group.regexes.contains_key(&regex)
            {
                self.push(ConsumerRecord::RegularExpression {
                    group_id,
                    regex,
                    value: None,
                });
            }
        }
    }
}
