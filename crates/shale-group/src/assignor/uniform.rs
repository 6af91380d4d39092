//! Kafka's `UniformAssignor` (`uniform`, the default server-side assignor).
//!
//! Balanced first, sticky second: when all members subscribe to the same topics every member
//! ends within one partition of every other, and each keeps as much of its current assignment as
//! that allows; otherwise each topic is spread over its own subscribers as evenly as their other
//! topics allow. See [`super::uniform_homogeneous`] and [`super::uniform_heterogeneous`] for the
//! two algorithms, chosen, as Kafka chooses them, by the group's subscription type.

use std::collections::BTreeMap;

use super::{
    uniform_heterogeneous, uniform_homogeneous, AssignmentSpec, AssignorError, MemberAssignment,
    PartitionAssignor, SubscriptionType, TopicsImage,
};

/// Kafka's `UniformAssignor.NAME`.
pub const NAME: &str = "uniform";

#[derive(Debug, Clone, Copy, Default)]
pub struct UniformAssignor;

impl PartitionAssignor for UniformAssignor {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Chooses the algorithm by [`AssignmentSpec::subscription_type`], the topic ids' view.
    fn assign(
        &self,
        spec: &AssignmentSpec,
        topics: &TopicsImage,
    ) -> Result<BTreeMap<String, MemberAssignment>, AssignorError> {
        self.assign_with_subscription_type(spec, topics, spec.subscription_type())
    }

    fn assign_with_subscription_type(
        &self,
        spec: &AssignmentSpec,
        topics: &TopicsImage,
        subscription_type: SubscriptionType,
    ) -> Result<BTreeMap<String, MemberAssignment>, AssignorError> {
        match subscription_type {
            SubscriptionType::Homogeneous => uniform_homogeneous::assign(NAME, spec, topics),
            SubscriptionType::Heterogeneous => uniform_heterogeneous::assign(NAME, spec, topics),
        }
    }
}
