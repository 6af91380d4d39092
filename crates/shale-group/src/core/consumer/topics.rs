//! A new topics image: regular expressions are resolved again, and a group whose subscribed
//! topics changed (created, deleted, partitions added) moves to a new group epoch, so that its
//! next heartbeat computes a new target assignment.

use std::sync::Arc;

use super::draft::Draft;
use super::subscriptions::{metadata_hash, resolve_regex};
use crate::assignor::TopicsImage;
use crate::core::{CoordinatorShard, Effects};
use crate::records::consumer_records::{ConsumerRecord, RegularExpressionValue};

impl CoordinatorShard {
    /// The cluster's topics as of now. Writes the records of every group it changes.
    pub fn on_topics_image(&mut self, image: Arc<TopicsImage>, now_ms: i64) -> Effects {
        self.observe(now_ms);
        if *image == *self.topics {
            return Effects::default();
        }
        self.topics = image;
        self.topics_version += 1;
        let mut effects = Effects::default();
        for group in self.consumer_groups.values() {
            let mut draft = Draft::new(group.clone());
            for (regex, resolved) in &group.regexes {
                let topics = resolve_regex(regex, &self.topics);
                if topics != resolved.topics {
                    draft.push(ConsumerRecord::RegularExpression {
                        group_id: group.group_id.clone(),
                        regex: regex.clone(),
                        value: Some(RegularExpressionValue {
                            topics,
                            version: self.topics_version,
                            timestamp_ms: now_ms,
                        }),
                    });
                }
            }
            let hash = metadata_hash(&draft.group.subscribed_topic_names(), &self.topics);
            if hash != draft.group.metadata_hash && !draft.group.members.is_empty() {
                draft.bump_epoch(&self.topics);
            }
            effects.records.extend(draft.records);
        }
        // Share groups move to a new epoch at their next heartbeat (as Kafka's); deleted
        // topics leave their share-state metadata now.
        self.cleanup_deleted_share_topics(&mut effects);
        effects
    }

    /// The topics image the shard assigns from.
    pub fn topics_image(&self) -> &Arc<TopicsImage> {
        &self.topics
    }
}
