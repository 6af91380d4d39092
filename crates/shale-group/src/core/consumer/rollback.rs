//! Undoing a protocol conversion whose records were not written. Consumer groups change only
//! by replay, but a conversion between protocols installs its result at once (the classic
//! group it makes must rebalance, or park the JoinGroup that made it). Until the conversion's
//! records are replayed, the shard keeps what it replaced; when their append fails, the
//! replaced groups and timers come back, so the shard is again what its log says (Kafka gets
//! the same from reverting its timeline state).

use std::collections::BTreeSet;

use super::group::ConsumerGroup;
use crate::core::group::Group;
use crate::core::timers::TimerKey;
use crate::core::{CoordinatorShard, Effects, Response};
use crate::error::GroupError;
use crate::records::consumer_records::ConsumerRecord;
use crate::records::GroupRecord;

/// What a group id held before a conversion replaced it.
#[derive(Debug, Clone)]
pub(crate) struct Conversion {
    /// The consumer group, as its records built it.
    consumer: Option<ConsumerGroup>,
    /// The classic group map's entry (the holder of the consumer group's offsets).
    classic: Option<Group>,
    /// The consumer members' timers with their deadlines.
    timers: Vec<(TimerKey, i64)>,
}

impl CoordinatorShard {
    /// Saves what `group_id` holds before a conversion changes it (the first save of a batch
    /// wins: it is the state the log has).
    pub(crate) fn save_conversion(&mut self, group_id: &str) {
        if self.conversions.contains_key(group_id) {
            return;
        }
        let consumer = self.consumer_groups.get(group_id).cloned();
        let timers = consumer
            .iter()
            .flat_map(|group| group.members.keys())
            .flat_map(|member_id| self.consumer_member_timers(group_id, member_id))
            .filter_map(|key| {
                self.timers
                    .deadline_ms(&key)
                    .map(|deadline| (key, deadline))
            })
            .collect();
        let conversion = Conversion {
            consumer,
            classic: self.groups.get(group_id).cloned(),
            timers,
        };
        self.conversions.insert(group_id.to_owned(), conversion);
    }

    /// The group's records were written: what the conversion replaced is gone for good.
    pub(crate) fn end_conversion(&mut self, group_id: &str) {
        self.conversions.remove(group_id);
    }

    /// The records of a batch were not written: every conversion among them is undone, and a
    /// consumer group they touched keeps a session timer for each member the log has (a member
    /// fenced by an expired session, or replaced, is fenced again when it expires anew).
    pub(crate) fn roll_back_conversions(
        &mut self,
        records: &[GroupRecord],
        error: &GroupError,
        now_ms: i64,
        effects: &mut Effects,
    ) {
        let group_ids: BTreeSet<&str> = records.iter().map(GroupRecord::group_id).collect();
        for group_id in &group_ids {
            if let Some(conversion) = self.conversions.remove(*group_id) {
                self.restore(group_id, conversion, error, effects);
            }
        }
        self.cancel_orphan_consumer_timers(records);
        for group_id in group_ids {
            self.ensure_consumer_sessions(group_id, now_ms);
        }
    }

    fn restore(
        &mut self,
        group_id: &str,
        conversion: Conversion,
        error: &GroupError,
        effects: &mut Effects,
    ) {
        if let Some(installed) = self.groups.remove(group_id) {
            self.timers.cancel_group(&installed);
            // Requests parked in the group that is undone get the append's error.
            for member in installed.members.values() {
                if let Some(token) = member.awaiting_join {
                    effects.reply(token, Response::Join(Err(error.clone())));
                }
                if let Some(token) = member.awaiting_sync {
                    effects.reply(token, Response::Sync(Err(error.clone())));
                }
            }
        }
        if let Some(installed) = self.consumer_groups.remove(group_id) {
            for member_id in installed.members.keys() {
                for key in self.consumer_member_timers(group_id, member_id) {
                    self.timers.cancel(&key);
                }
            }
        }
        if let Some(classic) = conversion.classic {
            self.groups.insert(group_id.to_owned(), classic);
        }
        if let Some(consumer) = conversion.consumer {
            self.consumer_groups.insert(group_id.to_owned(), consumer);
        }
        for (key, deadline_ms) in conversion.timers {
            self.timers.schedule(key, deadline_ms);
        }
    }

    /// Members the batch would have added (an upgrade's, a new member's) have no group to
    /// time out of.
    fn cancel_orphan_consumer_timers(&mut self, records: &[GroupRecord]) {
        for record in records {
            let GroupRecord::Consumer(ConsumerRecord::MemberMetadata {
                group_id,
                member_id,
                value: Some(_),
            }) = record
            else {
                continue;
            };
            let known = self
                .consumer_groups
                .get(group_id)
                .is_some_and(|group| group.members.contains_key(member_id));
            if !known {
                for key in self.consumer_member_timers(group_id, member_id) {
                    self.timers.cancel(&key);
                }
            }
        }
    }

    fn ensure_consumer_sessions(&mut self, group_id: &str, now_ms: i64) {
        let Some(group) = self.consumer_groups.get(group_id) else {
            return;
        };
        let sessions: Vec<(TimerKey, i64)> = group
            .members
            .values()
            .map(|member| {
                let session_ms = self.consumer_member_session_ms(group_id, member);
                let [session, ..] = self.consumer_member_timers(group_id, &member.member_id);
                (session, now_ms + i64::from(session_ms))
            })
            .collect();
        for (key, deadline_ms) in sessions {
            self.timers.schedule_if_absent(key, deadline_ms);
        }
    }
}
