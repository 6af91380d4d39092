//! Replay of the consumer group records, live and at load.

use super::group::ConsumerGroup;
use crate::core::CoordinatorShard;
use crate::records::consumer_records::ConsumerRecord;

impl CoordinatorShard {
    pub(crate) fn replay_consumer(&mut self, record: &ConsumerRecord) {
        let group_id = record.group_id();
        if let ConsumerRecord::GroupMetadata { value: None, .. } = record {
            // The group epoch tombstone is the last record of a deleted group.
            if let Some(group) = self.consumer_groups.remove(group_id) {
                for member_id in group.members.keys() {
                    for key in self.consumer_member_timers(group_id, member_id) {
                        self.timers.cancel(&key);
                    }
                }
            }
            let holder_unused = self.groups.get(group_id).is_some_and(|holder| {
                holder.members.is_empty()
                    && holder.pending_members.is_empty()
                    && holder.protocol_type.is_none()
                    && holder.offsets.is_empty()
                    && holder.pending_transactional_offsets.is_empty()
            });
            if holder_unused {
                self.groups.remove(group_id);
            }
            return;
        }
        let creates = matches!(
            record,
            ConsumerRecord::GroupMetadata { value: Some(_), .. }
                | ConsumerRecord::MemberMetadata { value: Some(_), .. }
                | ConsumerRecord::CurrentMemberAssignment { value: Some(_), .. }
                | ConsumerRecord::TargetAssignmentMember { value: Some(_), .. }
                | ConsumerRecord::TargetAssignmentMetadata { value: Some(_), .. }
                | ConsumerRecord::RegularExpression { value: Some(_), .. }
        );
        if !creates && !self.consumer_groups.contains_key(group_id) {
            return;
        }
        // A removed member's timers are cancelled by the handler that removed it (a static
        // member replaced under the same id keeps the timers its new heartbeat set).
        self.consumer_groups
            .entry(group_id.to_owned())
            .or_insert_with(|| ConsumerGroup::new(group_id))
            .apply(record);
    }
}
