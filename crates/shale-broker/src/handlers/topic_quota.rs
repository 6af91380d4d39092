//! The controller-mutation quota (`controller_mutation_rate`, KIP-599) as CreateTopics,
//! CreatePartitions and DeleteTopics apply it: each topic is charged the partitions it
//! creates or deletes before the controller sees it, a topic the controller then refuses is
//! given its credits back, and the answer carries the throttle time. Topics the controller
//! would refuse anyway (one that exists already, an unknown one, a bad name) are not charged,
//! so they get their own error as in Kafka, whose controller charges after those checks.

use std::sync::Arc;

use shale_metadata::MetadataImage;

use crate::broker::Broker;
use crate::errors::{quota_error, QuotaRefusal};
use crate::quotas::{Client, MutationQuota, Strictness};
use crate::request::RequestContext;
use crate::time::now_ms;

pub(crate) struct TopicMutations<'a> {
    quota: MutationQuota<'a>,
    /// `num.partitions`: what a CreateTopics without a count creates.
    default_partitions: usize,
    /// The topics charged and their partitions, until their answers are known.
    charged: Vec<(String, usize)>,
}

impl<'a> TopicMutations<'a> {
    /// The quota of this request: strict from `strict_since` on.
    pub fn new(
        broker: &'a Arc<Broker>,
        image: &MetadataImage,
        ctx: &RequestContext,
        strict_since: i16,
    ) -> TopicMutations<'a> {
        let client = Client::new(&ctx.principal, ctx.header.client_id.as_deref());
        let strictness = Strictness::of_version(ctx.version(), strict_since);
        TopicMutations {
            quota: broker.quotas.mutation_quota(image, &client, strictness),
            default_partitions: usize::try_from(broker.config.num_partitions).unwrap_or(1),
            charged: Vec::new(),
        }
    }

    /// Charges `partitions` for `topic`; `false` when a strict quota is exhausted.
    fn admit(&mut self, topic: &str, partitions: usize) -> bool {
        match self.quota.record(partitions, now_ms()) {
            Ok(()) => {
                self.charged.push((topic.to_string(), partitions));
                true
            }
            Err(_) => false,
        }
    }

    /// A topic to create with `num_partitions` (or as many as its assignments, or the
    /// broker's default). One that exists or has a bad name is the controller's to refuse.
    pub fn admit_creation(
        &mut self,
        image: &MetadataImage,
        topic: &str,
        num_partitions: i32,
        assignments: usize,
    ) -> bool {
        if image.topic(topic).is_some() || shale_metadata::validate_topic_name(topic).is_err() {
            return true;
        }
        let partitions = match (usize::try_from(num_partitions), assignments) {
            (Ok(n @ 1..), _) => n,
            (_, 0) => self.default_partitions,
            (_, assigned) => assigned,
        };
        self.admit(topic, partitions)
    }

    /// A topic to delete: its partitions. An unknown one is the controller's to refuse.
    pub fn admit_deletion(&mut self, image: &MetadataImage, topic: &str) -> bool {
        match image.topic(topic) {
            Some(t) => self.admit(topic, t.partitions.len()),
            None => true,
        }
    }

    /// Partitions to add to `topic` to reach `count`. A count that adds none, or an unknown
    /// topic, is the controller's to refuse.
    pub fn admit_partitions(&mut self, image: &MetadataImage, topic: &str, count: i32) -> bool {
        let Some(current) = image.topic(topic).map(|t| t.partitions.len()) else {
            return true;
        };
        match usize::try_from(count).map(|c| c.saturating_sub(current)) {
            Ok(added @ 1..) => self.admit(topic, added),
            _ => true,
        }
    }

    /// The answers per topic (name, error code): a charged topic not answered with success
    /// takes no credits.
    pub fn settle_answers<'n>(&mut self, answers: impl Iterator<Item = (&'n str, i16)>) {
        let succeeded: Vec<&str> = answers
            .filter(|(_, code)| *code == 0)
            .map(|(name, _)| name)
            .collect();
        let now = now_ms();
        for (topic, partitions) in self.charged.drain(..) {
            if !succeeded.contains(&topic.as_str()) {
                self.quota.refund(partitions, now);
            }
        }
    }

    /// The answer's throttle time.
    pub fn throttle_time_ms(&self) -> i32 {
        i32::try_from(self.quota.throttle_ms(now_ms())).unwrap_or(i32::MAX)
    }

    /// The code and message of a refused topic.
    pub fn refusal() -> (i16, String) {
        quota_error(&QuotaRefusal::ThrottlingQuotaExceeded)
    }
}
