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
    /// The topics charged and their partitions, until settled.
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
            charged: Vec::new(),
        }
    }

    /// Charges `topic`; `false` when a strict quota is exhausted and the topic is refused.
    pub fn admit(&mut self, topic: &str, partitions: usize) -> bool {
        match self.quota.record(partitions, now_ms()) {
            Ok(()) => {
                self.charged.push((topic.to_string(), partitions));
                true
            }
            Err(_) => false,
        }
    }

    /// The controller's outcome for `topic`: a refused topic takes no credits.
    pub fn settle(&mut self, topic: &str, succeeded: bool) {
        if let Some(i) = self.charged.iter().position(|(t, _)| t == topic) {
            let (_, partitions) = self.charged.swap_remove(i);
            if !succeeded {
                self.quota.refund(partitions, now_ms());
            }
        }
    }

    /// Every charged topic failed (the controller call itself did).
    pub fn settle_all_failed(&mut self) {
        let now = now_ms();
        for (_, partitions) in self.charged.drain(..) {
            self.quota.refund(partitions, now);
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
